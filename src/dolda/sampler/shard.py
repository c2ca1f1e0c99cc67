"""Shard-local blocks of the DOLDA iteration, shared by the local and the Dask backend.

The documents are split into shards: contiguous document ranges fixed by the
data (:func:`shard_bounds`), never by the number of threads or workers.  A
shard owns its tokens, covariate rows, labels and its part of the chain state
(``z``, ``n_{d,k}`` and, within an iteration, ``a``).  One DOLDA iteration is

=====================  ============================  =================================
block                  where                         what leaves the shard
=====================  ============================  =================================
a-step + statistics    every shard (:func:`utility_step`)   ``U_s^T U_s`` (P x P), ``U_s^T a_s`` (L x P)
eta, tau, lambda       driver (:mod:`.chain`)        --
z-sweep + counts       every shard (:func:`topic_step`)     ``n_{k,w}`` of the shard (sparse), log-likelihood parts
Phi                    driver (:mod:`.chain`)        --
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

from . import lda as topic_kernels
from .likelihood import do_log_likelihood
from .supervised import sweep_supervised, sweep_supervised_mh
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
    """

    tokens: np.ndarray
    doc_ptr: np.ndarray
    X: np.ndarray
    y: np.ndarray
    doc_offset: int
    token_offset: int

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
    phi_wk : float64 (V, K)      ``Phi`` word-major.
    gram_topics : float64 (K, K) ``S = eta_topics^T eta_topics``.
    tables : AliasTables or None alias tables of ``phi_wk`` (``z_sampler="mh"`` only).
    """

    eta: np.ndarray
    phi_wk: np.ndarray
    gram_topics: np.ndarray
    tables: object


class TopicStatistics(NamedTuple):
    """What a shard returns after its z-sweep.

    Attributes
    ----------
    nkw_index : int64 (M,)  flat indices ``k * V + w`` of the non-zero topic-word counts.
    nkw_count : int32 (M,)  the counts (sparse: a shard holds far fewer than K V pairs).
    loglik_do : float       DO-probit log-likelihood of the shard's documents.
    loglik_doc : float      document part of the LDA log-likelihood.
    """

    nkw_index: np.ndarray
    nkw_count: np.ndarray
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


def make_shards(tokens, doc_ptr, X, y, bounds) -> list[Shard]:
    """Cut the corpus into :class:`Shard` s at the document ``bounds`` (views, no copies)."""
    shards = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        t0, t1 = int(doc_ptr[lo]), int(doc_ptr[hi])
        shards.append(Shard(tokens[t0:t1], doc_ptr[lo:hi + 1] - doc_ptr[lo], X[lo:hi], y[lo:hi],
                            int(lo), t0))
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
def _cross_products(Ut, At, gram, rhs):
    """``gram = U^T U`` and ``rhs = A^T U`` from the transposes; ``d`` summed in order."""
    n_cols, n = Ut.shape
    n_classes = At.shape[0]
    for p in prange(n_cols):
        up = Ut[p]
        for q in range(p, n_cols):
            uq = Ut[q]
            acc = 0.0
            for d in range(n):
                acc += up[d] * uq[d]
            gram[p, q] = acc
            gram[q, p] = acc
        for l in range(n_classes):
            al = At[l]
            acc = 0.0
            for d in range(n):
                acc += up[d] * al[d]
            rhs[l, p] = acc


@njit(cache=True, parallel=True)
def _doc_topic_counts(doc_ptr, z, ndk):
    for d in prange(len(doc_ptr) - 1):
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            ndk[d, z[i]] += 1


def row_products(A, B):
    """``A B^T`` (D, L) with a fixed summation order (see the module docstring)."""
    out = np.empty((A.shape[0], B.shape[0]))
    _row_products(np.ascontiguousarray(A, dtype=np.float64),
                  np.ascontiguousarray(B, dtype=np.float64), out)
    return out


def cross_products(U, a):
    """``(U^T U, (U^T a)^T)``: the shard's contribution to the eta-step, shapes (P, P), (L, P)."""
    n_cols = U.shape[1]
    gram = np.empty((n_cols, n_cols))
    rhs = np.empty((a.shape[1], n_cols))
    _cross_products(np.ascontiguousarray(U.T), np.ascontiguousarray(a.T), gram, rhs)
    return gram, rhs


def doc_topic_counts(doc_ptr, z, n_topics):
    """``n_{d,k}`` (D, K) int32 recomputed from ``z``: the only state a shard needs is z."""
    ndk = np.zeros((len(doc_ptr) - 1, int(n_topics)), np.int32)
    _doc_topic_counts(doc_ptr, z, ndk)
    return ndk


def regressors(shard: Shard, ndk):
    """``U_s = [x_d, zbar_d]`` of the shard, zbar_d = n_{d,.} / N_d (zeros for empty documents)."""
    n = np.maximum(np.diff(shard.doc_ptr), 1).astype(np.float64)
    return np.hstack([shard.X, ndk / n[:, None]])


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
    """
    U = regressors(shard, ndk)
    mu = row_products(U, eta)
    a = draw_utilities(mu, shard.y, seed, iteration, np.empty_like(mu), shard.doc_offset)
    gram, rhs = cross_products(U, a)
    return a, gram, rhs


def topic_step(seed: int, iteration: int, shard: Shard, z, ndk, a, glob: TopicGlobals,
               alpha: float, z_sampler: str) -> TopicStatistics:
    """The supervised z-sweep of one shard, then its counts and log-likelihood parts.

    ``z`` and ``ndk`` are updated in place.  ``glob.eta`` is the eta drawn this
    iteration; the DO log-likelihood is evaluated at the new ``zbar``.
    """
    n_x = shard.X.shape[1]
    eta = glob.eta
    eta_topics = np.ascontiguousarray(eta[:, n_x:])
    base = a - row_products(shard.X, eta[:, :n_x])
    n_topics = ndk.shape[1]
    if z_sampler == "mh":
        t = glob.tables
        sweep_supervised_mh(shard.tokens, shard.doc_ptr, z, ndk, glob.phi_wk, t.prob, t.alias,
                            t.mass, alpha, eta_topics, base, seed, iteration, shard.doc_offset)
    else:
        sweep_supervised(shard.tokens, shard.doc_ptr, z, ndk, glob.phi_wk, alpha, eta_topics,
                         base, glob.gram_topics, seed, iteration, np.empty((0, n_topics)),
                         shard.doc_offset)
    nkw = topic_kernels.topic_word_counts(shard.tokens, z, n_topics, glob.phi_wk.shape[0]).ravel()
    index = np.flatnonzero(nkw)
    count = nkw[index]
    mu = row_products(regressors(shard, ndk), eta)
    return TopicStatistics(index, count, float(do_log_likelihood(mu, shard.y)),
                           topic_kernels.lda_doc_log_likelihood(ndk, alpha))
