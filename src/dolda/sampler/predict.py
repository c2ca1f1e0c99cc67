"""Topic proportions of new documents with Phi fixed (paper section 3.3): unsupervised z-sweeps,
averaged after a burn-in.

Two kernels draw from the same conditional
``p(z_{d,i} = k) ∝ phibar_{k,w} (n_{d,k}^{-i} + alpha_k)`` (``alpha`` float64 (K,) in the
kernels, a float or (K,) in :func:`predict_topic_proportions`):

* ``_predict`` (dense): O(K) per token, a cumulative sum over every topic;
* ``_predict_sparse`` (:mod:`dolda.sampler.predict_sparse`): O(K_d) per token (``K_d`` the
  topics present in the document), a document bucket over the document's non-zero topics read
  from a document-local copy of Phi, and a word bucket ``alpha_k phibar_{k,w}``.

Both average either the drawn counts ``n_{d,k}`` over the kept sweeps or, by default, the
conditional probabilities each token is drawn from (a Rao-Blackwellised estimate of the same
posterior mean: same draws, smaller variance).

Phi is fixed, so the per-call set-up is only the columns of ``phibar`` of the words in the
batch (word-major, renumbered), never the whole V x K matrix: predicting one document at a time
costs O(unique words x K) set-up.  Documents run in parallel, document ``d`` on the stream
``stream(seed, STEP_PREDICT, d)``: any thread count gives the same result.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..utils.validation import check_doc_ptr, check_phi_columns
from . import predict_sparse
from .alpha import as_alpha
from .predict_sparse import BLOCK, _predict_sparse, _predict_sparse_serial, write_proportions
from .rng import STEP_PREDICT, stream, uniform
from .sweeps import WEIGHT_BLOCK, fill_weights, search_weights

#: ``method="auto"`` uses the sparse kernel from this many topics on.  Measured with the
#: Rao-Blackwellised estimate, the blocked dense kernel and the sparse kernel on a local copy
#: of Phi (``benchmarks/predict_kernels.py``, 20 sweeps, 2 threads): sparse/dense time on
#: 20 Newsgroups (alpha = 0.1) 1.11 at K = 20, 0.89 at 50, 0.71 at 100, 0.28 at 1000; on
#: broad simulated documents (alpha = 0.5) 1.15 at 100, 1.04 at 200, 0.52 at 1000.  Real
#: documents use few topics, so sparse from 100 on.
SPARSE_PREDICT_MIN_TOPICS = 100

METHODS = ("auto", "dense", "sparse")

#: Batches of at most this many tokens run on one thread (same result: per-document streams).
SERIAL_MAX_TOKENS = 1000


# ------------------------------------------------------------------ dense
@njit(cache=True)
def _dense_document(tokens, start, stop, phi_wk, alpha, n_sweeps, burn_in, seed, d, out,
                    doc_offset, rao_blackwell):
    """Topic proportions of document ``d`` (tokens ``start:stop``) into ``out[d]``, dense;
    the stream is that of document ``doc_offset + d``."""
    n_topics = out.shape[1]
    n_d = stop - start
    if n_d == 0:
        for k in range(n_topics):
            out[d, k] = 1.0 / n_topics
        return
    state = stream(seed, STEP_PREDICT, doc_offset + d)
    ndk_row = np.zeros(n_topics)  # float64 counts: no conversion per topic and token
    prob = np.empty(n_topics)
    block_sums = np.empty((n_topics + WEIGHT_BLOCK - 1) // WEIGHT_BLOCK)
    z = np.empty(n_d, np.int32)
    # initialise sequentially from p(k) ∝ phi_{k,w} (n_{d,k} + alpha_k)
    for i in range(n_d):
        total = fill_weights(phi_wk[tokens[start + i]], ndk_row, alpha, prob, block_sums)
        u, state = uniform(state)
        k = search_weights(prob, block_sums, u * total)
        z[i] = k
        ndk_row[k] += 1.0
    acc = np.zeros(n_topics)
    for s in range(n_sweeps):
        kept_sweep = s >= burn_in
        for i in range(n_d):
            k0 = z[i]
            ndk_row[k0] -= 1.0
            total = fill_weights(phi_wk[tokens[start + i]], ndk_row, alpha, prob, block_sums)
            if kept_sweep and rao_blackwell:
                # the conditional itself: acc[k] += p(z_i = k | z_-i)
                inv = 1.0 / total
                for k in range(n_topics):
                    acc[k] += prob[k] * inv
            u, state = uniform(state)
            k1 = search_weights(prob, block_sums, u * total)
            z[i] = k1
            ndk_row[k1] += 1.0
        if kept_sweep and not rao_blackwell:
            for k in range(n_topics):
                acc[k] += ndk_row[k]
    write_proportions(out, d, acc, alpha, n_sweeps, burn_in, n_d)


@njit(cache=True, parallel=True)
def _predict(tokens, doc_ptr, phi_wk, alpha, n_sweeps, burn_in, seed, out, doc_offset=0,
             rao_blackwell=False):
    for d in prange(out.shape[0]):  # d as int64, as the serial loop's: one signature
        _dense_document(tokens, doc_ptr[d], doc_ptr[d + 1], phi_wk, alpha, n_sweeps, burn_in,
                        seed, np.int64(d), out, doc_offset, rao_blackwell)


@njit(cache=True)
def _predict_serial(tokens, doc_ptr, phi_wk, alpha, n_sweeps, burn_in, seed, out, doc_offset=0,
                    rao_blackwell=False):
    for d in range(out.shape[0]):
        _dense_document(tokens, doc_ptr[d], doc_ptr[d + 1], phi_wk, alpha, n_sweeps, burn_in,
                        seed, d, out, doc_offset, rao_blackwell)


# ---------------------------------------------------------------- driver
def resolve_predict_method(method: str, n_topics: int) -> str:
    """``"auto"`` -> ``"sparse"`` from :data:`SPARSE_PREDICT_MIN_TOPICS` topics on, else dense."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "auto":
        return "sparse" if n_topics >= SPARSE_PREDICT_MIN_TOPICS else "dense"
    return method


def local_topics(tokens, phi):
    """The batch's words renumbered 0..V_b-1 and their columns of ``phi``, word-major.

    Returns
    -------
    local : int32 (N,)         ``tokens`` renumbered.
    phi_wk : float (V_b, K)    ``phi[:, words].T``, contiguous, float32 or float64 as ``phi``.
    """
    tokens = np.asarray(tokens)
    words, local = np.unique(tokens, return_inverse=True)
    if len(words) and (words[0] < 0 or words[-1] >= phi.shape[1]):
        raise ValueError(f"token ids must lie in [0, {phi.shape[1]}), got {words[0]} .. "
                         f"{words[-1]}")
    phi = np.asarray(phi)
    if phi.dtype not in (np.float32, np.float64):
        phi = phi.astype(np.float64)
    # only the batch's columns, in Phi's own float type: a float32 Phi (DOLDA's phi_) is never
    # widened to a K x V float64 copy
    phi_wk = np.ascontiguousarray(phi.T[words])
    return local.astype(np.int32).reshape(-1), phi_wk


#: At most this many entries (distinct words x K) of Phi are copied word-major at once.
CHUNK_ENTRIES = 1 << 22


@njit(cache=True)
def _chunk_bounds(tokens, doc_ptr, n_words, max_words):
    """Document bounds of consecutive chunks with at most ``max_words`` distinct words
    each (a single document with more is a chunk of its own)."""
    n_docs = len(doc_ptr) - 1
    seen = np.full(n_words, -1, np.int64)
    bounds = np.empty(n_docs + 1, np.int64)
    bounds[0] = 0
    n_chunks = 0
    distinct = 0
    for d in range(n_docs):
        new = 0
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w = tokens[i]
            if seen[w] != n_chunks:
                seen[w] = n_chunks
                new += 1
        if distinct > 0 and distinct + new > max_words:
            n_chunks += 1
            bounds[n_chunks] = d
            distinct = 0
            for i in range(doc_ptr[d], doc_ptr[d + 1]):  # recount for the new chunk
                w = tokens[i]
                if seen[w] != n_chunks:
                    seen[w] = n_chunks
                    distinct += 1
        else:
            distinct += new
    n_chunks += 1
    bounds[n_chunks] = n_docs
    return bounds[:n_chunks + 1].copy()


def chunk_bounds(tokens, doc_ptr, n_words, max_words):
    """:func:`_chunk_bounds` (int64 (C + 1,)); one chunk when the whole batch fits."""
    n_docs = len(doc_ptr) - 1
    if len(tokens) <= max_words or n_docs <= 1:
        return np.array([0, n_docs], np.int64)
    return _chunk_bounds(tokens, doc_ptr, int(n_words), int(max_words))


#: Rows of ``phi_wk`` whose ``alpha_k phi_{k,w}`` are formed at once by
#: :func:`word_bucket_blocks` (a float64 temporary of rows x K, not V_chunk x K).
_BUCKET_ROWS_ENTRIES = 1 << 18


def word_bucket_blocks(phi_wk, alpha):
    """The word bucket ``alpha_k phi_{k,w}`` summed by blocks of ``BLOCK`` topics (V', B).

    Formed a slice of rows at a time, so the float64 products never exist for all
    rows at once (32 MB at K = 1000 for a full chunk); each row's values are the
    same as from one whole-array expression.
    """
    n_rows, n_topics = phi_wk.shape
    starts = np.arange(0, n_topics, BLOCK)
    out = np.empty((n_rows, len(starts)), np.float64)
    step = max(1, _BUCKET_ROWS_ENTRIES // max(1, n_topics))
    for lo in range(0, n_rows, step):
        out[lo:lo + step] = np.add.reduceat(phi_wk[lo:lo + step] * alpha, starts, axis=1,
                                            dtype=np.float64)
    return out


def _predict_chunk(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed, method, out,
                   doc_offset, rao_blackwell):
    """Documents ``doc_offset ...`` (their ``tokens``, ``doc_ptr`` from 0) into ``out``."""
    n_topics = phi.shape[0]
    alpha = as_alpha(alpha, n_topics)
    local, phi_wk = local_topics(tokens, phi)
    # a small batch runs serially: waking the worker threads would cost more than it saves
    # (documents are the parallel tasks; one document is one task anyway)
    serial = len(local) <= SERIAL_MAX_TOKENS
    if method == "dense":
        kernel = _predict_serial if serial else _predict
        kernel(local, doc_ptr, phi_wk, alpha, n_sweeps, burn_in, np.int64(seed), out,
               np.int64(doc_offset), bool(rao_blackwell))
    else:
        blocks = word_bucket_blocks(phi_wk, alpha)
        mass = blocks.sum(axis=1)
        kernel = _predict_sparse_serial if serial else _predict_sparse
        kernel(local, doc_ptr, phi_wk, np.ascontiguousarray(blocks), mass,
               alpha, n_sweeps, burn_in, np.int64(seed), out, np.int64(doc_offset),
               bool(rao_blackwell), np.int64(predict_sparse.LOCAL_MAX_ENTRIES))


def predict_topic_proportions(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed,
                              method="auto", out=None, rao_blackwell=True):
    """Topic proportions of documents with Phi fixed (paper section 3.3).

    The indicators are drawn from ``p(z = k) ∝ phi_{k,w} (n_{d,k}^{-i} + alpha_k)``
    (first sequentially, then ``n_sweeps`` Gibbs sweeps), and
    ``(E[n_{d,k}] + alpha_k) / (N_d + sum_j alpha_j)`` is returned, ``E[n_{d,k}]`` averaged
    over the sweeps after ``burn_in``: with ``rao_blackwell`` (the default) as the sum over the
    tokens of the conditional probabilities ``p(z_i = k | z_-i)`` each token was drawn from,
    else as the counts ``n_{d,k}`` of the draws.  Both estimate the same posterior mean; the
    Rao-Blackwellised one with a smaller Monte Carlo error at no extra draw (on 20 Newsgroups,
    20 sweeps of it are as close to a long run as 50 sweeps of the counts at K = 100, 10 at
    K = 1000: ``benchmarks/results/predict_quality.md``).  It does not shorten the burn-in:
    downstream accuracy still rises from 20 to 50 sweeps
    (``experiments/results/predict_estimator.json``).
    Document ``d`` uses the single stream ``stream(seed, STEP_PREDICT, d)``, documents run in
    parallel on the current numba threads; the result is the same for any thread count.

    Parameters
    ----------
    tokens : int (N,), doc_ptr : int64 (D+1,)
        The documents (CSR).
    phi : float (K, V)
        ``Phi``, e.g. the posterior mean of the kept draws.
    alpha : float or float (K,)
        The Dirichlet prior of theta (symmetric or per topic).
    n_sweeps, burn_in : int
        ``0 <= burn_in < n_sweeps``.
    seed : int
    method : {"auto", "dense", "sparse"}
        The kernel (same conditional): dense O(K) or sparse O(K_d) per token; ``"auto"``
        picks by K (:data:`SPARSE_PREDICT_MIN_TOPICS`).
    out : float64 (D, K) or None
        Where to write theta (e.g. the topic columns of a regressor matrix, a strided
        view: each chunk of documents is then drawn into a small buffer and copied);
        None: a new array.
    rao_blackwell : bool, default=True
        Average the conditional probabilities (True) or the drawn counts (False).  The draws
        themselves, hence the random stream, are the same either way.

    Returns
    -------
    theta : float64 (D, K)
        Rows sum to one; an empty document gets ``1/K`` everywhere.  ``out`` when given.
    """
    n_sweeps, burn_in = int(n_sweeps), int(burn_in)
    if not 0 <= burn_in < n_sweeps:
        raise ValueError(f"need 0 <= burn_in < n_sweeps, got burn_in={burn_in}, "
                         f"n_sweeps={n_sweeps}")
    n_topics = phi.shape[0]
    alpha = as_alpha(alpha, n_topics)
    method = resolve_predict_method(method, n_topics)
    tokens = np.asarray(tokens)
    doc_ptr = check_doc_ptr(doc_ptr, len(tokens))
    check_phi_columns(phi, tokens)  # token ids in range, the words' columns not 0/0
    shape = (len(doc_ptr) - 1, n_topics)
    if out is None:
        out = np.empty(shape, np.float64)
    elif out.shape != shape or out.dtype != np.float64:
        raise ValueError(f"out must be float64 {shape}, got {out.dtype} {out.shape}")
    direct = out.flags.c_contiguous  # a row block of it is then contiguous too
    # the batch's Phi columns are copied word-major; a large batch is cut into chunks of
    # documents whose distinct words fit CHUNK_ENTRIES, so the copy stays bounded
    bounds = chunk_bounds(np.ascontiguousarray(tokens, dtype=np.int64), doc_ptr, phi.shape[1],
                          max(1, CHUNK_ENTRIES // n_topics))
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        t0, t1 = int(doc_ptr[lo]), int(doc_ptr[hi])
        target = out[lo:hi] if direct else np.empty((hi - lo, n_topics), np.float64)
        _predict_chunk(tokens[t0:t1], doc_ptr[lo:hi + 1] - t0, phi, alpha, n_sweeps, burn_in,
                       seed, method, target, int(lo), rao_blackwell)
        if not direct:
            out[lo:hi] = target
    return out

