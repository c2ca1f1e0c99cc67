"""A deterministic, data-determined start of the topic indicators (``DOLDA(topic_init="nmf")``).

Issue 32: LDA topics land in a different mode for every seed, and a Gibbs chain does not leave
its mode within any budget we can afford, so two seeds explain a class with different topics.
This start removes the seed from where the chain begins: non-negative matrix factorisation of
the training corpus's tf-idf matrix (scikit-learn's :class:`~sklearn.decomposition.NMF`,
``init="nndsvda"``, an SVD-based start with a fixed ``random_state``, coordinate descent,
at most :data:`NMF_MAX_ITER` iterations, on one BLAS thread) gives ``tfidf ~ W H``, and every
token of word ``w`` in document ``d`` starts in topic ``argmax_k W[d, k] H[k, w]`` (ties to the
lowest ``k``; a pair whose scores are all zero takes the word's largest ``H[k, w]``, then the
document's largest ``W[d, k]``, then topic 0).  ``n_{d,k}`` is counted from that ``z``.

What this promises, and what not: the start is a function of the corpus (tokens, vocabulary)
and ``K`` only -- the same for every seed, chain and ``n_jobs`` on one installation (BLAS and
scikit-learn versions may round differently elsewhere) -- so chains of different seeds differ
only by Monte Carlo noise *within the mode this start leads to*.  It does not make that mode
the posterior's best one or its only one, and identical starts weaken a cross-chain R-hat
(Gelman and Rubin want over-dispersed starts): chains that agree may agree because they
started together.  The sampler's stationary distribution is unchanged; only the start moves.
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.sparse as sp

#: The values of ``DOLDA(topic_init=...)``.
TOPIC_INITS = ("random", "nmf")
#: Iterations of the NMF (coordinate descent) before the assignment is read off.  On 20
#: Newsgroups train (11,314 documents, one BLAS thread, a loaded machine) 50 take 6 s at
#: K = 20 and 71 s at K = 100, against 27 s and 420-510 s for 200 (45x and 520-920x one
#: topics-only chain iteration), with the same seed-to-seed agreement on 20NG-5
#: (``benchmarks/results/topic_start*.md``, ``experiments/results/interpret_stability_*``).
NMF_MAX_ITER = 50
#: Tokens scored at once when z is read off (bounds the (chunk, K) scratch array).
_CHUNK = 1 << 16


def count_matrix(tokens, doc_ptr, n_words) -> sp.csr_matrix:
    """``n_{d,w}`` (D, V) float64 CSR from the flat token arrays (duplicates summed)."""
    n_docs = len(doc_ptr) - 1
    rows = np.repeat(np.arange(n_docs), np.diff(doc_ptr))
    return sp.coo_matrix((np.ones(len(tokens)), (rows, np.asarray(tokens))),
                         shape=(n_docs, int(n_words))).tocsr()


def check_nmf_start(n_docs: int, n_words: int, n_topics: int):
    """One-line error where the SVD-based start cannot give ``n_topics`` components."""
    if n_topics > min(n_docs, n_words):
        raise ValueError(f'topic_init="nmf" needs n_topics <= min(documents, vocabulary '
                         f'words) = {min(n_docs, n_words)}, got n_topics={n_topics}; use '
                         'topic_init="random"')


def nmf_factors(tokens, doc_ptr, n_words, n_topics, max_iter=None):
    """``(W, H)``: the NMF of the corpus's tf-idf matrix, (D, K) and (K, V), deterministic
    (``max_iter`` None: :data:`NMF_MAX_ITER`, read at the call)."""
    from sklearn.decomposition import NMF
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import TfidfTransformer
    from threadpoolctl import threadpool_limits

    check_nmf_start(len(doc_ptr) - 1, int(n_words), int(n_topics))
    tfidf = TfidfTransformer().fit_transform(count_matrix(tokens, doc_ptr, n_words))
    max_iter = NMF_MAX_ITER if max_iter is None else max_iter
    nmf = NMF(n_components=int(n_topics), init="nndsvda", solver="cd", max_iter=int(max_iter),
              random_state=0)
    # one BLAS thread: a product split over threads may round differently, and the start
    # must not depend on n_jobs; the iteration cap is deliberate (no convergence warning)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        W = nmf.fit_transform(tfidf)
    return W, nmf.components_


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
