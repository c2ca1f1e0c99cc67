"""Shard-local blocks of the DOLDA iteration, shared by the local and the Dask backend.

The documents are split into shards: contiguous document ranges fixed by the
data (:func:`shard_bounds`), never by the number of threads or workers.  A
shard owns its tokens, covariate rows, labels and its part of the chain state
(``z``, ``n_{d,k}`` and, within an iteration, ``a``).  One DOLDA iteration is

=====================  ============================  =================================
block                  where                         what leaves the shard
=====================  ============================  =================================
a-step + statistics    every shard (:func:`utility_step`)   ``U_s^T U_s`` (P x P), ``U_s^T a_s`` (L x P)
eta, tau, lambda       driver (:mod:`.gibbs_iteration`) --
z-sweep + counts       every shard (:func:`topic_step`)     ``n_{k,w}`` of the shard (sparse), log-likelihood parts
Phi                    driver (:mod:`.gibbs_iteration`) --
=====================  ============================  =================================

Every random draw of a shard is keyed by the global document index
(``doc_offset + d``), and the floating-point statistics are computed by the
fixed-order kernels below and summed over shards in shard order, so the chain
is the same for any number of threads or workers.  The dense products are
numba loops instead of BLAS on purpose: a BLAS call may change its summation
order with its thread count or CPU kernel, a plain loop does not.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

import scipy.sparse as sp

from . import lda as topic_kernels
from . import sparse_eta
from .likelihood import do_log_likelihood
from . import polya
from .alpha import as_alpha
from . import cycle as cycle_kernel
from .supervised import (CACHE_MAX_SHIFT, _sweep_supervised, _sweep_supervised_mh,
                         _sweep_supervised_mh_sparse)
from .truncnorm import draw_utilities

#: Tokens per shard when the number of shards is not given.  A shard is the
#: unit of distribution and of recovery; about a million tokens keeps the
#: per-iteration overhead of a shard (its statistics, one task) below 1% of its
#: sweep time while leaving enough shards to spread 10^8 tokens over hundreds of cores.
DEFAULT_SHARD_TOKENS = 1 << 20


class Shard(NamedTuple):
    """The fixed data of one shard: documents ``[doc_offset, doc_offset + D_s)``.

    Attributes
    ----------
    tokens : int32 (N_s,)       word ids of the shard's tokens.
    doc_ptr : int64 (D_s + 1,)  document pointer rebased to the shard (starts at 0).
    X : float64 (D_s, P_x)      covariate rows ``x_d``.
    y : int64 (D_s,)            class indices.
    doc_offset : int            global index of the shard's first document.
    token_offset : int          global index of the shard's first token.
    word_ptr, order : int64     the shard's tokens grouped by word
                                (:func:`dolda.sampler.lda.word_index`), for its
                                sparse ``n_{k,w}`` in O(N_s + V + K).
    """

    tokens: np.ndarray
    doc_ptr: np.ndarray
    X: np.ndarray
    y: np.ndarray
    doc_offset: int
    token_offset: int
    word_ptr: np.ndarray
    order: np.ndarray

    @property
    def n_docs(self) -> int:
        return len(self.doc_ptr) - 1

    @property
    def docs(self) -> slice:
        """The shard's rows of a global (D, .) array."""
        return slice(self.doc_offset, self.doc_offset + self.n_docs)

    @property
    def token_range(self) -> slice:
        """The shard's part of a global (N,) array."""
        return slice(self.token_offset, self.token_offset + len(self.tokens))


class TopicGlobals(NamedTuple):
    """What the driver sends to every shard before the z-sweep.

    Attributes
    ----------
    eta : float64 (L, P_x + K)   the new ``eta``.
    phi_wk : float32 (V, K)      ``Phi`` word-major (the chain's own layout).
    gram_topics : float64 (K, K) ``S = eta_topics^T eta_topics``.
    tables : AliasTables or SparsePhi or None
                                 the word-bucket alias tables of ``alpha_k phi_{k,w}``, with
                                 ``mass[w] = sum_k alpha_k phi_{k,w}``, for the alpha the
                                 shards are given (``z_sampler="mh"`` or ``"cycle"`` only;
                                 :func:`dolda.sampler.gibbs_iteration.topic_globals`).
    """

    eta: np.ndarray
    phi_wk: np.ndarray
    gram_topics: np.ndarray
    tables: object


class TopicStatistics(NamedTuple):
    """What a shard returns after its z-sweep.

    Attributes
    ----------
    nkw : SparseCounts      the shard's non-zero topic-word counts ``n_{k,w}`` by topic
                            (sparse: a shard holds far fewer than K V pairs).
    loglik_do : float       DO-probit log-likelihood of the shard's documents.
    loglik_doc : float      document part of the LDA log-likelihood.
    """

    nkw: topic_kernels.SparseCounts
    loglik_do: float
    loglik_doc: float


def shard_bounds(doc_ptr, n_shards=None):
    """Document boundaries of ``n_shards`` contiguous shards of about equal token counts.

    Parameters
    ----------
    doc_ptr : int64 (D + 1,)
    n_shards : int or None
        None: ``ceil(N / DEFAULT_SHARD_TOKENS)``, a function of the data alone.

    Returns
    -------
    bounds : int64 (S + 1,)
        Shard ``s`` holds documents ``bounds[s]:bounds[s + 1]``; no shard is empty.
    """
    n_docs = len(doc_ptr) - 1
    n_tokens = int(doc_ptr[-1])
    if n_shards is None:
        n_shards = max(1, -(-n_tokens // DEFAULT_SHARD_TOKENS))
    n_shards = max(1, min(int(n_shards), n_docs))
    targets = (np.arange(1, n_shards) * n_tokens) // n_shards
    inner = np.searchsorted(doc_ptr, targets, side="left")
    bounds = np.unique(np.concatenate([[0], np.clip(inner, 1, n_docs - 1), [n_docs]]))
    if len(bounds) - 1 < n_shards:  # tiny corpora: fall back to equal document counts
        bounds = np.unique(np.linspace(0, n_docs, n_shards + 1).round().astype(np.int64))
    return bounds.astype(np.int64)


def make_shards(tokens, doc_ptr, X, y, bounds, n_words) -> list[Shard]:
    """Cut the corpus into :class:`Shard` s at the document ``bounds`` (token arrays are views)."""
    shards = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        t0, t1 = int(doc_ptr[lo]), int(doc_ptr[hi])
        word_ptr, order = topic_kernels.word_index(tokens[t0:t1], n_words)
        shards.append(Shard(tokens[t0:t1], doc_ptr[lo:hi + 1] - doc_ptr[lo], X[lo:hi], y[lo:hi],
                            int(lo), t0, word_ptr, order))
    return shards


# ------------------------------------------------------------------ kernels
@njit(cache=True, parallel=True)
def _row_products(A, B, out):
    """``out[d, l] = sum_p A[d, p] B[l, p]``, ``p`` in order (rows in parallel)."""
    n, n_cols = A.shape
    n_out = B.shape[0]
    for d in prange(n):
        for l in range(n_out):
            acc = 0.0
            for p in range(n_cols):
                acc += A[d, p] * B[l, p]
            out[d, l] = acc


@njit(cache=True, parallel=True)
def _doc_topic_counts(doc_ptr, z, ndk):
    for d in prange(len(doc_ptr) - 1):
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            ndk[d, z[i]] += 1


@njit(cache=True)
def _csc_of_csr(rptr, ridx, rval, n_topics):
    """The CSC copy ``(ptr, doc, value)`` of a CSR ``zbar``, documents increasing per topic."""
    n_docs = len(rptr) - 1
    cptr = np.zeros(n_topics + 1, np.int64)
    for t in range(rptr[n_docs]):
        cptr[ridx[t] + 1] += 1
    for k in range(n_topics):
        cptr[k + 1] += cptr[k]
    cdoc = np.empty(rptr[n_docs], np.int64)
    cval = np.empty(rptr[n_docs])
    fill = cptr[:-1].copy()
    for d in range(n_docs):
        for t in range(rptr[d], rptr[d + 1]):
            k = ridx[t]
            cdoc[fill[k]] = d
            cval[fill[k]] = rval[t]
            fill[k] += 1
    return cptr, cdoc, cval


def _topic_csr(doc_ptr, ndk):
    """``zbar = n_{d,.} / N_d`` as CSR (ptr, topic, value), rows on all threads
    (:func:`dolda.sampler.sparse_eta.zbar_arrays`, the same numbers as the sparse path's),
    and its CSC (ptr, doc, value) copy; d and k increasing."""
    rptr, ridx, rval = _zbar_rows(doc_ptr, ndk)
    return (rptr, ridx, rval) + _csc_of_csr(rptr, ridx, rval, ndk.shape[1])


def _zbar_rows(doc_ptr, ndk):
    """``zbar`` as CSR arrays (ptr, topic, value): :func:`sparse_eta.zbar_arrays`."""
    return sparse_eta.zbar_arrays(np.asarray(doc_ptr, dtype=np.int64), np.ascontiguousarray(ndk))


@njit(cache=True, parallel=True)
def _sparse_row_products(X, rptr, ridx, rval, Bt, out):
    """``out = [X, zbar] B^T`` from ``Bt = B^T`` (P, L).

    Per (d, l) the covariates, then the topics in increasing order; the L sums of a
    document run side by side over the contiguous rows ``Bt[p]`` (a row of ``B``
    would be read at scattered columns, once per class).
    """
    n, n_x = X.shape
    n_out = Bt.shape[1]
    for d in prange(n):
        acc = np.zeros(n_out)
        for p in range(n_x):
            xp = X[d, p]
            for l in range(n_out):
                acc[l] += xp * Bt[p, l]
        for t in range(rptr[d], rptr[d + 1]):
            v = rval[t]
            k = n_x + ridx[t]
            for l in range(n_out):
                acc[l] += v * Bt[k, l]
        for l in range(n_out):
            out[d, l] = acc[l]


@njit(cache=True)
def _cross_row(p, X, rptr, ridx, rval, cptr, cdoc, cval, A, gram, rhs):
    """Row ``p`` of ``gram = U^T U`` up to the diagonal (``q <= p``), written to row and
    column ``p`` (the mirror image: one parallel region, no second pass), and ``rhs[:, p]``.

    Documents are visited in increasing order, so entry ``(p, q)`` adds the products
    ``u_dp u_dq`` in the order the full row ``q`` would add ``u_dq u_dp``; a
    document's topics come in increasing order, so the scan of its row stops at
    topic ``k = p - P_x``.
    """
    n, n_x = X.shape
    n_classes = A.shape[1]
    row = np.zeros(p + 1)
    rl = np.zeros(n_classes)
    if p < n_x:
        for d in range(n):
            xp = X[d, p]
            for q in range(p + 1):
                row[q] += xp * X[d, q]
            for l in range(n_classes):
                rl[l] += xp * A[d, l]
    else:
        k = p - n_x
        for t in range(cptr[k], cptr[k + 1]):
            d = cdoc[t]
            v = cval[t]
            for q in range(n_x):
                row[q] += v * X[d, q]
            for s in range(rptr[d], rptr[d + 1]):
                j = ridx[s]
                if j > k:
                    break
                row[n_x + j] += v * rval[s]
            for l in range(n_classes):
                rl[l] += v * A[d, l]
    for q in range(p + 1):
        gram[p, q] = row[q]
        gram[q, p] = row[q]
    for l in range(n_classes):
        rhs[l, p] = rl[l]


@njit(cache=True, parallel=True)
def _sparse_cross_products(X, rptr, ridx, rval, cptr, cdoc, cval, A, gram, rhs):
    """``gram = U^T U``, ``rhs = A^T U`` for ``U = [X, zbar]`` with zbar sparse.

    The lower triangle is computed row by row (:func:`_cross_row`), each row
    summed over documents in increasing order by one thread, and mirrored: ``gram``
    is exactly symmetric, entry ``(p, q)`` is the sum the full row ``q`` would give,
    and nothing depends on the thread count.  Row ``p`` costs about ``p / P`` of a
    full row, so task ``i`` takes rows ``i`` and ``P - 1 - i`` (even loads under
    a static schedule).  Cost O(D P_x^2 + P_x nnz + sum_d K_d^2 / 2) instead of O(D P^2).
    """
    n_x = X.shape[1]
    n_cols = n_x + len(cptr) - 1
    for i in prange((n_cols + 1) // 2):
        first = np.int64(i)
        _cross_row(first, X, rptr, ridx, rval, cptr, cdoc, cval, A, gram, rhs)
        last = n_cols - 1 - first
        if last != first:
            _cross_row(last, X, rptr, ridx, rval, cptr, cdoc, cval, A, gram, rhs)


class TopicRegressors(NamedTuple):
    """``U_s = [X, zbar]`` with ``zbar`` held sparse (CSR and CSC): documents use few topics."""

    X: np.ndarray
    rptr: np.ndarray
    ridx: np.ndarray
    rval: np.ndarray
    cptr: np.ndarray
    cdoc: np.ndarray
    cval: np.ndarray

    @property
    def n_columns(self) -> int:
        return self.X.shape[1] + len(self.cptr) - 1

    def dense(self):
        """``U_s`` as a dense (D_s, P) array (for tests and small problems)."""
        zbar = np.zeros((self.X.shape[0], len(self.cptr) - 1))
        for d in range(self.X.shape[0]):
            sl = slice(self.rptr[d], self.rptr[d + 1])
            zbar[d, self.ridx[sl]] = self.rval[sl]
        return np.hstack([self.X, zbar])


def topic_regressors(shard: Shard, ndk) -> TopicRegressors:
    """``U_s = [x_d, zbar_d]`` with zbar sparse (zeros for empty documents)."""
    X = np.ascontiguousarray(shard.X, dtype=np.float64)
    return TopicRegressors(X, *_topic_csr(shard.doc_ptr, np.ascontiguousarray(ndk)))


def sparse_row_products(U: TopicRegressors, B):
    """``U B^T`` (D, L) in a fixed summation order."""
    return _rows_times(U.X, (U.rptr, U.ridx, U.rval), B)


def _rows_times(X, zbar_rows, B):
    """``[X, zbar] B^T`` (D, L) from ``X`` and zbar's CSR arrays (the rows of
    :class:`TopicRegressors` without its CSC copy)."""
    out = np.empty((X.shape[0], B.shape[0]))
    _sparse_row_products(X, *zbar_rows, np.ascontiguousarray(np.asarray(B, dtype=np.float64).T),
                         out)
    return out


def sparse_cross_products(U: TopicRegressors, a):
    """``(U^T U, (U^T a)^T)`` of :class:`TopicRegressors`, shapes (P, P), (L, P)."""
    n_cols = U.n_columns
    gram = np.empty((n_cols, n_cols))
    rhs = np.empty((a.shape[1], n_cols))
    _sparse_cross_products(U.X, U.rptr, U.ridx, U.rval, U.cptr, U.cdoc, U.cval,
                           np.ascontiguousarray(a, dtype=np.float64), gram, rhs)
    return gram, rhs


def row_products(A, B):
    """``A B^T`` (D, L) with a fixed summation order (see the module docstring)."""
    out = np.empty((A.shape[0], B.shape[0]))
    _row_products(np.ascontiguousarray(A, dtype=np.float64),
                  np.ascontiguousarray(B, dtype=np.float64), out)
    return out


def doc_topic_counts(doc_ptr, z, n_topics):
    """``n_{d,k}`` (D, K) int32 recomputed from ``z``: the only state a shard needs is z."""
    ndk = np.zeros((len(doc_ptr) - 1, int(n_topics)), np.int32)
    _doc_topic_counts(doc_ptr, z, ndk)
    return ndk


# ------------------------------------------------------------ mu from one block to the next
#: ``mu = [X, zbar] eta^T`` of each shard as :func:`topic_step` last evaluated the
#: log-likelihood at it.  The next :func:`utility_step` needs the very same product: eta is
#: not redrawn and z not resampled in between.  It takes it from here when the shard's
#: ``X`` (the same object), ``eta`` and ``zbar`` (compared in full) are those it was formed
#: from, so it gets the same array bit for bit without a second O(nnz(X) L + nnz(zbar) L)
#: product (two of the three such products of a default iteration; 7-8 ms of 310 at
#: K = 100 on 20 Newsgroups).  Anything else (another chain, a resumed one, an iteration
#: without the log-likelihood) misses and recomputes.  An entry is used once.
_MU_MEMO: dict = {}


def _memo_key(shard: Shard):
    return (shard.doc_offset, shard.token_offset, shard.n_docs)


def _remember_mu(shard: Shard, eta, zbar_arrays, mu):
    _MU_MEMO[_memo_key(shard)] = (shard.X, np.array(eta, copy=True), zbar_arrays, mu)


def forget_mu(shards) -> None:
    """Drop what :func:`topic_step` remembered for ``shards`` (a chain's end: the entry of
    its last iteration would otherwise keep its ``mu`` and ``X`` alive)."""
    for shard in shards:
        _MU_MEMO.pop(_memo_key(shard), None)


def _recall_mu(shard: Shard, eta, zbar_arrays):
    """The remembered ``mu`` of ``shard`` if it was formed from this ``X``, ``eta`` and
    ``zbar`` (CSR arrays), else None."""
    entry = _MU_MEMO.pop(_memo_key(shard), None)
    if entry is None:
        return None
    X, eta0, zbar0, mu = entry
    eta = np.asarray(eta)
    if X is not shard.X or eta0.shape != eta.shape or not np.array_equal(eta0, eta):
        return None
    for old, new in zip(zbar0, zbar_arrays):
        if old.shape != new.shape or not np.array_equal(old, new):
            return None
    return mu


# ------------------------------------------------------------ shard blocks
def utility_step(seed: int, iteration: int, shard: Shard, ndk, eta):
    """The a-step of one shard and its statistics for the eta-step.

    Parameters
    ----------
    seed, iteration : int
    shard : Shard
    ndk : int32 (D_s, K)   the shard's ``n_{d,k}`` (from the previous z).
    eta : (L, P)           the previous ``eta``.

    Returns
    -------
    a : (D_s, L)       new utilities; row ``d`` uses the stream of global row ``doc_offset + d``.
    gram : (P, P)      ``U_s^T U_s``.
    rhs : (L, P)       ``(U_s^T a_s)^T``.

    With a sparse ``shard.X`` (the CG/BCM eta-step, :mod:`dolda.sampler.sparse_eta`)
    the statistics are ``(zbar_s as CSR, a_s)`` instead of ``(gram, rhs)``.
    """
    if sp.issparse(shard.X):
        zbar = sparse_eta.zbar_csr(shard.doc_ptr, ndk)
        mu = _recall_mu(shard, eta, (zbar.indptr, zbar.indices, zbar.data))
        if mu is None:
            mu = np.ascontiguousarray(sparse_eta.regressor_products(shard.X, shard.doc_ptr, ndk,
                                                                     eta, zbar=zbar))
        a = draw_utilities(mu, shard.y, seed, iteration, np.empty_like(mu), shard.doc_offset)
        return a, zbar, a
    U = topic_regressors(shard, ndk)
    mu = _recall_mu(shard, eta, (U.rptr, U.ridx, U.rval))
    if mu is None:
        mu = sparse_row_products(U, eta)
    if not np.isfinite(mu).all():  # O(D L), beside the O(D L P) products above
        raise ValueError(
            f"the linear predictors u_d . eta_l became non-finite at iteration {iteration}; "
            "a covariate of extreme scale makes the sampler's sums overflow: rescale it")
    a = draw_utilities(mu, shard.y, seed, iteration, np.empty_like(mu), shard.doc_offset)
    gram, rhs = sparse_cross_products(U, a)
    return a, gram, rhs


def topic_step(seed: int, iteration: int, shard: Shard, z, ndk, a, glob: TopicGlobals,
               alpha, z_sampler: str, word_major: bool = False,
               with_loglik: bool = True) -> TopicStatistics:
    """The supervised z-sweep of one shard, then its counts and log-likelihood parts.

    ``z`` and ``ndk`` are updated in place.  ``glob.eta`` is the eta drawn this
    iteration; the DO log-likelihood is evaluated at the new ``zbar``.
    ``word_major``: return ``n_{k,w}`` as :class:`dolda.sampler.polya.WordCounts`
    (for the Pólya-urn Phi step) instead of by topic.  ``with_loglik=False``
    skips the log-likelihood parts (NaN).  With ``glob.tables`` a
    :class:`dolda.sampler.polya.SparsePhi`, the MH sweep reads the sparse
    Phi (:func:`dolda.sampler.supervised.sweep_supervised_mh_sparse`); ``z_sampler="cycle"``
    runs the cycle kernel (:mod:`dolda.sampler.cycle`) on the word-bucket tables given
    (exact Phi only).  ``alpha``: a float or float (K,), the one ``glob.tables`` were
    built with.
    """
    n_x = shard.X.shape[1]
    eta = glob.eta
    eta_topics = np.ascontiguousarray(eta[:, n_x:])
    sparse_x = sp.issparse(shard.X)
    x_products = (sparse_eta.covariate_products(shard.X, eta[:, :n_x]) if sparse_x
                  else row_products(shard.X, eta[:, :n_x]))
    base = a - x_products
    n_topics = ndk.shape[1]
    alpha = as_alpha(alpha, n_topics)
    if z_sampler == "mh" and isinstance(glob.tables, polya.SparsePhi):
        t = glob.tables
        _sweep_supervised_mh_sparse(shard.tokens, shard.doc_ptr, z, ndk, glob.phi_wk, t.ptr,
                                    t.topics, t.prob, t.alias, t.mass, alpha, eta_topics, base,
                                    seed, iteration, shard.doc_offset)
    elif z_sampler == "cycle":  # exact Phi only: topic_globals refuses the Pólya-urn one
        t = glob.tables
        cycle_kernel._sweep_supervised_cycle(
            shard.tokens, shard.doc_ptr, z, ndk, glob.phi_wk, t.prob, t.alias, t.mass, t.row,
            alpha, eta_topics, base, seed, iteration, shard.doc_offset, cycle_kernel.N_CYCLES,
            cycle_kernel.SCAN_RARE)
    elif z_sampler == "mh":
        t = glob.tables
        _sweep_supervised_mh(shard.tokens, shard.doc_ptr, z, ndk, glob.phi_wk, t.prob, t.alias,
                             t.mass, t.row, alpha, eta_topics, base, seed, iteration,
                             shard.doc_offset)
    else:  # every argument given, as the wrapper gives them: one compiled signature
        _sweep_supervised(shard.tokens, shard.doc_ptr, z, ndk, glob.phi_wk, alpha, eta_topics,
                          base, glob.gram_topics, seed, iteration, np.empty((0, n_topics)),
                          shard.doc_offset, CACHE_MAX_SHIFT)
    if word_major:
        nkw = polya.word_counts(shard.word_ptr, shard.order, z, n_topics)
    else:
        nkw = topic_kernels.sparse_topic_word_counts(shard.word_ptr, shard.order, z, n_topics)
    if not with_loglik:
        return TopicStatistics(nkw, np.nan, np.nan)
    if sparse_x:
        zbar = sparse_eta.zbar_csr(shard.doc_ptr, ndk)
        mu = np.ascontiguousarray(sparse_eta.regressor_products(
            shard.X, shard.doc_ptr, ndk, eta, zbar=zbar, x_products=x_products))
        _remember_mu(shard, eta, (zbar.indptr, zbar.indices, zbar.data), mu)
    else:  # zbar's rows only: the CSC copy of topic_regressors is for the cross products
        rows = _zbar_rows(shard.doc_ptr, ndk)
        mu = _rows_times(np.ascontiguousarray(shard.X, dtype=np.float64), rows, eta)
        _remember_mu(shard, eta, rows, mu)
    return TopicStatistics(nkw, float(do_log_likelihood(mu, shard.y)),
                           topic_kernels.lda_doc_log_likelihood(ndk, alpha))
