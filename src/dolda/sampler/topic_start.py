"""A deterministic, data-determined start of the topic indicators (``DOLDA(topic_init="nmf")``).

Issue 32: LDA topics land in a different mode for every seed, and a Gibbs chain does not leave
its mode within any budget we can afford, so two seeds explain a class with different topics.
This start removes the seed from where the chain begins: probabilistic LSA (Hofmann 1999)
fitted to the training corpus's document-word counts ``n_{d,w}`` by :data:`NMF_MAX_ITER` EM
steps from the SVD-based NNDSVDa start (Boutsidis & Gallopoulos 2008), which is non-negative matrix factorisation under the
Kullback-Leibler divergence (Gaussier & Goutte 2005; Ding, Li & Peng 2008) -- hence the
option's name -- gives ``n ~ W H`` with ``W[d, k] = p(k | d)`` and ``H[k, w] = p(w | k)``.
PLSA's likelihood is LDA's multinomial one without the Dirichlet priors, so the start lies
near a mode of the LDA part of the posterior.  Every token of word ``w`` in document ``d``
starts in topic ``argmax_k W[d, k] H[k, w]``, its most probable topic under PLSA (ties to
the lowest ``k``; a pair whose scores are all zero takes the word's largest ``H[k, w]``, then
the document's largest ``W[d, k]``, then topic 0).  ``n_{d,k}`` is counted from that ``z``.
The EM steps are one serial compiled sweep each, so the start is the same for any thread
count.

Why the counts and not tf-idf (the first version of this start, scikit-learn's least-squares
NMF of the tf-idf matrix): tf-idf weighs rare, distinctive words up, and its topics lead to
another mode than LDA's.  On the storm tracker with metadata that mode lost 0.046 accuracy
against the random start (mean of 4 seeds: 0.649 against 0.695); this start is level with it
(0.695).  Why the SVD point and not a random one: from a fixed random point the EM fell, on
the paper's rare-topic simulation, into a mode 0.26 behind the two-step model at one seed
(``docs/decisions/chains-and-start.md``).

What this promises, and what not: the start is a function of the corpus (tokens, vocabulary)
and ``K`` only -- the same for every seed, chain and ``n_jobs`` -- so chains of different seeds differ
only by Monte Carlo noise *within the mode this start leads to*.  It does not make that mode
the posterior's best one or its only one, and identical starts weaken a cross-chain R-hat
(Gelman and Rubin want over-dispersed starts): chains that agree may agree because they
started together.  The sampler's stationary distribution is unchanged; only the start moves.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit

#: The values of ``DOLDA(topic_init=...)``.
TOPIC_INITS = ("random", "nmf")
#: EM steps of PLSA before the assignment is read off (each costs O(nnz K) on the sparse
#: counts, about one z-sweep of the chain; they are not run to convergence: the start only has
#: to lead the chain into a mode, and the chain's own iterations take it from there).
NMF_MAX_ITER = 100
#: Tokens scored at once when z is read off (bounds the (chunk, K) scratch array).
_CHUNK = 1 << 16


def count_matrix(tokens, doc_ptr, n_words) -> sp.csr_matrix:
    """``n_{d,w}`` (D, V) float64 CSR from the flat token arrays (duplicates summed)."""
    n_docs = len(doc_ptr) - 1
    rows = np.repeat(np.arange(n_docs), np.diff(doc_ptr))
    return sp.coo_matrix((np.ones(len(tokens)), (rows, np.asarray(tokens))),
                         shape=(n_docs, int(n_words))).tocsr()


@njit(cache=True)
def _em_sweep(doc_ptr, words, counts, W, Ht, W_new, Ht_new):
    """One EM step of probabilistic LSA (= a KL-NMF step) over the sparse counts, serially
    (so the sums, and the start, do not depend on a thread count): every nonzero
    ``n_{d,w}`` shares itself among the topics in proportion to ``W[d, k] Ht[w, k]``, and the
    shares, summed, are the unnormalised new ``W`` and ``Ht``."""
    K = W.shape[1]
    q = np.empty(K)
    for d in range(W.shape[0]):
        for j in range(doc_ptr[d], doc_ptr[d + 1]):
            w = words[j]
            s = 0.0
            for k in range(K):
                q[k] = W[d, k] * Ht[w, k]
                s += q[k]
            if s <= 0.0:
                continue
            f = counts[j] / s
            for k in range(K):
                r = q[k] * f
                W_new[d, k] += r
                Ht_new[w, k] += r


def _normalised(A, axis):
    total = A.sum(axis=axis, keepdims=True)
    return np.divide(A, total, out=np.zeros_like(A), where=total > 0)


def _svd_start(counts, K):
    """``(W, Ht)`` from the SVD-based NNDSVDa start of the counts (scikit-learn's
    :class:`~sklearn.decomposition.NMF`, ``init="nndsvda"``, one multiplicative KL update, on
    one BLAS thread so that it does not depend on ``n_jobs``), normalised as PLSA's
    ``p(k | d)`` and ``p(w | k)``; None where the SVD has fewer than K components."""
    import warnings

    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning
    from threadpoolctl import threadpool_limits

    if K > min(counts.shape):
        return None
    nmf = NMF(n_components=K, init="nndsvda", solver="mu", beta_loss="kullback-leibler",
              max_iter=1, random_state=0)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        W = nmf.fit_transform(counts)
    tiny = 1e-12  # NNDSVD leaves exact zeros, which EM could never leave
    return _normalised(W + tiny, 1), _normalised(nmf.components_.T + tiny, 0)


def nmf_factors(tokens, doc_ptr, n_words, n_topics, max_iter=None):
    """``(W, H)``: probabilistic LSA's fit of the corpus's counts, ``p(k | d)`` (D, K) and
    ``p(w | k)`` (K, V), by :data:`NMF_MAX_ITER` EM steps (``max_iter`` None: read at the
    call) from the SVD-based start of :func:`_svd_start`, or, where K exceeds the documents
    or the words, from the fixed stream ``default_rng(0)``: ``p(k | d)`` uniform times noise
    in [0.5, 1.5), ``p(w | k)`` the corpus's word frequencies times such noise.  The result
    is a function of the corpus and ``K`` only."""
    counts = count_matrix(tokens, doc_ptr, n_words)
    D, V, K = counts.shape[0], counts.shape[1], int(n_topics)
    start = _svd_start(counts, K)
    if start is None:
        rng = np.random.default_rng(0)
        W = _normalised(rng.uniform(0.5, 1.5, size=(D, K)), 1)
        freq = np.asarray(counts.sum(axis=0), dtype=np.float64).ravel() + 1e-12
        Ht = _normalised(freq[:, None] * rng.uniform(0.5, 1.5, size=(V, K)), 0)
    else:
        W, Ht = start
    W, Ht = np.ascontiguousarray(W), np.ascontiguousarray(Ht)
    ptr = counts.indptr.astype(np.int64)
    words = counts.indices.astype(np.int64)
    values = counts.data.astype(np.float64)
    for _ in range(NMF_MAX_ITER if max_iter is None else int(max_iter)):
        W_new, Ht_new = np.zeros_like(W), np.zeros_like(Ht)
        _em_sweep(ptr, words, values, W, Ht, W_new, Ht_new)
        W, Ht = _normalised(W_new, 1), _normalised(Ht_new, 0)
    return W, np.ascontiguousarray(Ht.T)


def assign_topics(tokens, doc_ptr, W, H):
    """``(z, ndk)``: every token to ``argmax_k W[d, k] H[k, w]`` (see the module doc)."""
    n_docs, K = W.shape
    tokens = np.asarray(tokens)
    docs = np.repeat(np.arange(n_docs), np.diff(doc_ptr))
    z = np.empty(len(tokens), np.int32)
    for lo in range(0, len(tokens), _CHUNK):
        d, w = docs[lo:lo + _CHUNK], tokens[lo:lo + _CHUNK]
        score = W[d] * H[:, w].T
        k = np.argmax(score, axis=1)  # the first maximum: ties to the lowest topic
        flat = score[np.arange(len(k)), k] <= 0
        if flat.any():
            k[flat] = np.argmax(H[:, w[flat]].T, axis=1)
            flat2 = flat.copy()
            flat2[flat] = H[k[flat], w[flat]] <= 0
            k[flat2] = np.argmax(W[d[flat2]], axis=1)
        z[lo:lo + len(k)] = k
    ndk = np.bincount(docs * K + z, minlength=n_docs * K).reshape(n_docs, K).astype(np.int32)
    return z, ndk


def nmf_topics(tokens, doc_ptr, n_words, n_topics, max_iter=None):
    """``(z, ndk)`` (int32 (N,), int32 (D, K)) of the NMF start, the same for every seed."""
    W, H = nmf_factors(tokens, doc_ptr, n_words, n_topics, max_iter)
    return assign_topics(tokens, doc_ptr, W, H)


def start_topics(topic_init: str, tokens, doc_ptr, n_words, n_topics):
    """``(z, ndk)`` of ``topic_init`` (None for "random": the chain's own random start)."""
    if topic_init == "random":
        return None
    return nmf_topics(tokens, doc_ptr, n_words, n_topics)
