"""The blocked-Gibbs eta-step for word covariates: exact, O(nnz(W)) per class and iteration.

With word covariates ``U = [X_A, W, zbar]`` (D x P): ``X_A`` the intercept and the
dense covariates, ``W`` the thousands of sparse word columns
(:mod:`dolda.design.word_features`) and the sparse covariate columns (a one-hot level
in at most :data:`SWEEP_MAX_DENSITY` of the rows: a reporter, a director), ``zbar`` the
K topic proportions.  The eta-step's
conditional is ``eta_l ~ N(Q_l^{-1} U^T a_l, Q_l^{-1})``, ``Q_l = U^T U + diag(prec_l)``
(:mod:`dolda.sampler.probit_blocks`).  Drawing it jointly costs a CG solve (tens to hundreds
of passes over ``U``, :mod:`dolda.sampler.gaussian`).  Here the eta-step is instead
one scan of a blocked Gibbs sampler of that same Gaussian, starting from the
chain's current eta:

1. the dense block ``A`` (intercept, dense covariates, topics) from its exact
   conditional given the swept coefficients: with ``r_l = a_l - W eta_{W,l}``,
   ``eta_{A,l} ~ N(Q_A^{-1} U_A^T r_l, Q_A^{-1})``, ``Q_A = U_A^T U_A + diag(prec_{A,l})``
   (one dense Cholesky per class, :func:`dolda.sampler.probit_blocks.draw_coefficients`);
2. every swept coefficient (sparse covariates, then words) in turn from its exact
   conditional given all the others,
   with the residual ``r_l = a_l - U eta_l`` kept up to date: for word ``j`` with
   column ``w_j``, ``q = ||w_j||^2 + prec_{lj}``,
   ``eta_{lj} ~ N(w_j^T (r_l + w_j eta_{lj}) / q, 1 / q)``, then
   ``r_l -= w_j (eta_new - eta_old)``: O(nnz(w_j)) per word.

Each update is a draw from a full conditional of the Gaussian, so the scan leaves
``N(Q_l^{-1} U^T a_l, Q_l^{-1})`` invariant: within the DOLDA Gibbs iteration it is a
valid (exact, not approximate) update of eta given everything else, as the a-, z-
and Phi-steps are.  It is not an independent draw of eta: how fast the chain
forgets its previous eta is the price, measured against CG in
``benchmarks/results/word_step.md``.

Groups of four classes run in parallel (numba ``prange``; a group reads each word's
column once for its four classes, :data:`CLASS_GROUP`); class ``l``'s word sweep draws from its
own counter-based stream ``rng.stream(seed, iteration * 16 + STEP_WORDS, l)`` and the
dense block's normals come from the serial ``STEP_ETA`` numpy stream, so the chain is
bit-identical for any thread count.  Costs per iteration: O(nnz(W) L) for the
residuals and the sweep, ``U_A^T U_A`` once and an O(P_A^3) Cholesky per class.

Why sparse covariates are swept too: with a reporter column per reporter (1,162 one-hot
columns on the pooled hadoop + hdfs bug reports) the dense block's Cholesky, O(P_A^3) per
class, was 89% of an iteration at 54 classes (``benchmarks/results/triage_full.md``).  A
column in a few percent of the rows is nearly orthogonal to the intercept (correlation
at most ``sqrt(density)``) and to the other levels of its variable (disjoint rows), the
situation in which single-site Gibbs mixes as well as a joint draw; dense columns (a
level most reports share, a numeric covariate) stay in the joint block.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from . import probit_blocks as probit_blocks
from .linear_predictors import as_csr_arrays, csr_draw_products
from .rng import STEP_ETA, STEP_WORDS, normal, numpy_generator, stream


#: A covariate column (not a word, not the intercept) nonzero in at most this share of
#: the rows is swept one coefficient at a time with the words rather than drawn in the
#: dense block.
SWEEP_MAX_DENSITY = 0.05


class WordColumns(NamedTuple):
    """The fixed parts of ``U = [X_A, W, zbar]`` the blocked step reads.

    Attributes
    ----------
    x_dense : CSR (D, P_XA)      ``X_A``: the columns ``dense`` of ``X``.
    ptr, rows, vals :            ``W``, the columns ``swept`` of ``X``, by column (CSC
                                 arrays, int64 / int64 / float64).
    col_sq : float64 (P_W,)      ``||w_j||^2``.
    dense : int64 (P_XA,)        the columns of ``X`` in the dense block (0 first).
    swept : int64 (P_W,)         the columns of ``X`` swept, ascending (the sparse
                                 covariates, then the words).
    x_rows : tuple               ``X`` itself as CSR arrays (indptr, indices, data): the
                                 words' part of the residual is formed row by row from it.
    """

    x_dense: sp.csr_matrix
    ptr: np.ndarray
    rows: np.ndarray
    vals: np.ndarray
    col_sq: np.ndarray
    dense: np.ndarray
    swept: np.ndarray
    x_rows: tuple


def word_columns(X, n_word_columns: int, sweep_density: float | None = None) -> WordColumns:
    """Split CSR ``X`` (D, P_x) into ``X_A`` and the swept columns ``W``: the last
    ``n_word_columns`` (the words) and every other column but the first (the intercept)
    nonzero in at most ``sweep_density`` of the rows (None: :data:`SWEEP_MAX_DENSITY`;
    0: the words only)."""
    if sweep_density is None:
        sweep_density = SWEEP_MAX_DENSITY
    X = sp.csr_matrix(X, dtype=np.float64)
    n_rows, n_x = X.shape
    n_word_columns = int(n_word_columns)
    if not 0 <= n_word_columns < n_x:
        raise ValueError(f"n_word_columns must be in [0, {n_x}) for X with {n_x} columns "
                         f"(the intercept is never a word), got {n_word_columns}")
    start = n_x - n_word_columns
    covariates = np.arange(1, start)
    if sweep_density > 0 and len(covariates):
        nnz = X.getnnz(axis=0)[1:start]
        sparse = covariates[nnz <= sweep_density * n_rows]
    else:
        sparse = covariates[:0]
    swept = np.r_[sparse, np.arange(start, n_x)].astype(np.int64)
    dense = np.setdiff1d(np.arange(n_x), swept).astype(np.int64)
    W = X[:, swept].tocsc()
    W.sum_duplicates()
    W.sort_indices()
    x_dense = X[:, dense].tocsr()
    x_dense.sort_indices()
    col_sq = np.asarray(W.multiply(W).sum(axis=0), dtype=np.float64).ravel()
    return WordColumns(x_dense, W.indptr.astype(np.int64), W.indices.astype(np.int64),
                       W.data.astype(np.float64), col_sq, dense, swept, as_csr_arrays(X))


_CACHE: list = []


def cached_word_columns(X, n_word_columns: int) -> WordColumns:
    """:func:`word_columns` of the chain's fixed ``X``, computed once per ``X`` object."""
    if _CACHE and _CACHE[0][0] is X and _CACHE[0][1] == n_word_columns:
        return _CACHE[0][2]
    wc = word_columns(X, n_word_columns)
    _CACHE[:] = [(X, n_word_columns, wc)]
    return wc


def words_residual(wc: WordColumns, eta_w, a):
    """``a - W eta_w`` as (L, D): the residual of the words alone, formed row by row from
    ``X`` (:func:`subtract_row_products` with the dense-block rows of the coefficients zero).
    Column by column, as the sweep reads ``W``, the same sum scatters into the residual:
    2.4x slower on 20 Newsgroups' 5,000 words."""
    eta_t = np.zeros((len(wc.dense) + len(wc.swept), eta_w.shape[0]))  # (P_x, L)
    eta_t[wc.swept] = eta_w.T
    resid = np.array(np.asarray(a, dtype=np.float64).T, order="C")
    subtract_row_products(*wc.x_rows, eta_t, resid)
    return resid


#: Row ranges whose partial ``U_A^T U_A`` are formed in parallel and added in order (a fixed
#: number, so the sum does not depend on the thread count).
GRAM_PARTS = 2


@njit(cache=True, parallel=True)
def _dense_block_statistics(indptr, indices, data, resid, n_cols, n_parts):
    """``(U_A^T U_A, (U_A^T resid^T)^T)`` for CSR ``U_A`` (D, P_A), column indices ascending
    within a row, and ``resid`` (L, D): the Gram matrix's upper triangle as ``n_parts``
    partial sums over fixed row ranges, added in order, then mirrored; the
    right-hand sides class by class in parallel, rows in order."""
    n_rows = len(indptr) - 1
    parts = np.zeros((n_parts, n_cols, n_cols))
    for p in prange(n_parts):
        g = parts[p]
        for d in range(p * n_rows // n_parts, (p + 1) * n_rows // n_parts):
            for k1 in range(indptr[d], indptr[d + 1]):
                v = data[k1]
                row = g[indices[k1]]
                for k2 in range(k1, indptr[d + 1]):  # the upper triangle (indices ascend)
                    row[indices[k2]] += v * data[k2]
    gram = parts[0].copy()
    for p in range(1, n_parts):
        gram += parts[p]
    for i in range(n_cols):
        for j in range(i + 1, n_cols):
            gram[j, i] = gram[i, j]
    n_classes = resid.shape[0]
    rhs = np.zeros((n_classes, n_cols))
    for l in prange(n_classes):
        r, out = resid[l], rhs[l]
        for d in range(n_rows):
            x = r[d]
            for k in range(indptr[d], indptr[d + 1]):
                out[indices[k]] += data[k] * x
    return gram, rhs


def subtract_row_products(indptr, indices, data, eta_t, resid):
    """``resid[l] -= U eta_t[:, l]`` for CSR ``U`` and ``eta_t`` (P, L): the products by
    :func:`dolda.sampler.linear_predictors.csr_draw_products` (rows in parallel, each
    ``(d, l)`` its row's nonzeros in stored order, whole L-long coefficient rows at a
    time), so the result does not depend on the thread count."""
    products = np.empty((1, len(indptr) - 1, eta_t.shape[1]))
    csr_draw_products(indptr, indices, data, np.ascontiguousarray(eta_t)[None], products)
    resid -= products[0].T


#: Classes swept together: a word's column is read once for a group of this many classes,
#: whose residuals sit side by side (``resid_g[t, d]``, 32 bytes of one cache line), so
#: one gather serves four classes.  20 Newsgroups, 5,000 words, 20 classes, 2 threads,
#: kernel alone: 29-35 ms against 55-65 ms class by class, the same draws bit for bit.
#: Four classes' residuals of a 11,314-document corpus (362 KB) stay in a 512 KB L2;
#: all of a thread's ten did not (slower than class by class).  :func:`_scan_four` is
#: written out for four: change both together.
CLASS_GROUP = 4


@njit(cache=True, inline="always")
def _scan_one(ptr, rows, vals, col_sq, prec_w, eta_w, r, c, l, state):
    """One single-site scan of class ``l``'s words, its residual the column ``c`` of
    ``r`` (D, CLASS_GROUP)."""
    for j in range(len(ptr) - 1):
        s = 0.0
        for k in range(ptr[j], ptr[j + 1]):
            s += vals[k] * r[rows[k], c]
        old = eta_w[l, j]
        q = col_sq[j] + prec_w[l, j]
        z, state = normal(state)
        new = (s + col_sq[j] * old) / q + z / np.sqrt(q)
        d = new - old
        for k in range(ptr[j], ptr[j + 1]):
            r[rows[k], c] -= vals[k] * d
        eta_w[l, j] = new
    return state


@njit(cache=True, inline="always")
def _scan_four(ptr, rows, vals, col_sq, prec_w, eta_w, r, l0, s0, s1, s2, s3):
    """:func:`_scan_one` of classes ``l0 .. l0 + 3`` at once: each word's column is read
    once for all four, and every class does exactly the arithmetic of its own scan."""
    l1, l2, l3 = l0 + 1, l0 + 2, l0 + 3
    for j in range(len(ptr) - 1):
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        for k in range(ptr[j], ptr[j + 1]):
            v = vals[k]
            row = rows[k]
            a0 += v * r[row, 0]
            a1 += v * r[row, 1]
            a2 += v * r[row, 2]
            a3 += v * r[row, 3]
        cs = col_sq[j]
        o0, o1, o2, o3 = eta_w[l0, j], eta_w[l1, j], eta_w[l2, j], eta_w[l3, j]
        q0, q1 = cs + prec_w[l0, j], cs + prec_w[l1, j]
        q2, q3 = cs + prec_w[l2, j], cs + prec_w[l3, j]
        z0, s0 = normal(s0)
        z1, s1 = normal(s1)
        z2, s2 = normal(s2)
        z3, s3 = normal(s3)
        n0 = (a0 + cs * o0) / q0 + z0 / np.sqrt(q0)
        n1 = (a1 + cs * o1) / q1 + z1 / np.sqrt(q1)
        n2 = (a2 + cs * o2) / q2 + z2 / np.sqrt(q2)
        n3 = (a3 + cs * o3) / q3 + z3 / np.sqrt(q3)
        d0, d1, d2, d3 = n0 - o0, n1 - o1, n2 - o2, n3 - o3
        for k in range(ptr[j], ptr[j + 1]):
            v = vals[k]
            row = rows[k]
            r[row, 0] -= v * d0
            r[row, 1] -= v * d1
            r[row, 2] -= v * d2
            r[row, 3] -= v * d3
        eta_w[l0, j], eta_w[l1, j], eta_w[l2, j], eta_w[l3, j] = n0, n1, n2, n3
    return s0, s1, s2, s3


@njit(cache=True, parallel=True)
def word_sweeps(ptr, rows, vals, col_sq, prec_w, eta_w, resid_g, seed, step, n_sweeps):
    """Single-site Gibbs over the word coefficients of every class, in place.

    ``resid_g`` (ceil(L / CLASS_GROUP), D, CLASS_GROUP): class ``l``'s residual is
    ``resid_g[l // CLASS_GROUP, :, l % CLASS_GROUP]`` (:func:`grouped_residuals`); it must
    be ``a_l - U eta_l`` on entry and is kept so.  Word ``j`` of class ``l``: ``q = col_sq[j]
    + prec_w[l, j]``, mean ``(w_j^T resid_l + col_sq[j] eta_w[l, j]) / q`` (the residual with
    word ``j``'s own part added back), variance ``1 / q``.  Class ``l`` draws its normals
    from ``stream(seed, step, l)``.  The groups run in parallel; a full group sweeps its four
    classes together, the classes of the last, short group one after the other: the same
    draws either way.
    """
    n_classes = eta_w.shape[0]
    for t in prange(resid_g.shape[0]):
        r = resid_g[t]
        l0 = t * CLASS_GROUP
        size = min(CLASS_GROUP, n_classes - l0)
        if size == 4:
            s0, s1 = stream(seed, step, l0), stream(seed, step, l0 + 1)
            s2, s3 = stream(seed, step, l0 + 2), stream(seed, step, l0 + 3)
            for _sweep in range(n_sweeps):
                s0, s1, s2, s3 = _scan_four(ptr, rows, vals, col_sq, prec_w, eta_w, r, l0,
                                            s0, s1, s2, s3)
        else:
            for c in range(size):
                state = stream(seed, step, l0 + c)
                for _sweep in range(n_sweeps):
                    state = _scan_one(ptr, rows, vals, col_sq, prec_w, eta_w, r, c, l0 + c,
                                      state)


def grouped_residuals(resid):
    """``resid`` (L, D) in :func:`word_sweeps`' layout (ceil(L / CLASS_GROUP), D,
    CLASS_GROUP), the columns past the last class zero."""
    n_classes, n_rows = resid.shape
    n_groups = -(-n_classes // CLASS_GROUP)
    out = np.zeros((n_groups * CLASS_GROUP, n_rows))
    out[:n_classes] = resid
    return np.ascontiguousarray(out.reshape(n_groups, CLASS_GROUP, n_rows).transpose(0, 2, 1))


def draw_blocked(seed: int, iteration: int, wc: WordColumns, zbar, a, prec, eta,
                 n_jobs: int = 1, n_sweeps: int = 1):
    """One blocked-Gibbs scan of every class's eta: dense block, then the words.

    Parameters
    ----------
    seed, iteration : int
        The chain's; the dense block draws from ``numpy_generator(seed, iteration * 16 +
        STEP_ETA)``, class ``l``'s words from ``stream(seed, iteration * 16 + STEP_WORDS, l)``.
    wc : WordColumns
        ``X`` split by :func:`word_columns`.
    zbar : CSR (D, K)
        The topic proportions.
    a : (D, L) utilities.
    prec : (L, P) prior precisions, columns in the order of ``U = [X, zbar]``.
    eta : (L, P) the current coefficients (the scan's start).
    n_jobs : int
        Threads of the dense block's Cholesky (the draw does not depend on it).
    n_sweeps : int
        Single-site sweeps over the words after the dense block (1: the default scan).

    Returns
    -------
    eta : (L, P) new array.
    """
    n_classes, n_cols = prec.shape
    n_x = wc.x_dense.shape[1] + len(wc.swept)
    dense_cols = np.r_[wc.dense, np.arange(n_x, n_cols)]
    UA = sp.hstack([wc.x_dense, sp.csr_matrix(zbar, dtype=np.float64)], format="csr")
    UA.sort_indices()
    eta = np.array(eta, dtype=np.float64)
    eta_w = np.ascontiguousarray(eta[:, wc.swept])
    prec_w = np.ascontiguousarray(prec[:, wc.swept], dtype=np.float64)
    resid = words_residual(wc, eta_w, a)                                 # (L, D)
    ua = as_csr_arrays(UA)
    gram, rhs = _dense_block_statistics(*ua, resid, UA.shape[1], GRAM_PARTS)  # rhs (L, P_A)
    rng = numpy_generator(seed, iteration * 16 + STEP_ETA)
    normals = rng.standard_normal((n_classes, len(dense_cols)))
    eta_a = probit_blocks.draw_coefficients(gram, rhs, prec[:, dense_cols], normals, n_jobs)
    subtract_row_products(*ua, np.ascontiguousarray(np.asarray(eta_a).T), resid)
    word_sweeps(wc.ptr, wc.rows, wc.vals, wc.col_sq, prec_w, eta_w, grouped_residuals(resid),
                int(seed), int(iteration) * 16 + STEP_WORDS, int(n_sweeps))
    eta[:, dense_cols] = eta_a
    eta[:, wc.swept] = eta_w
    return eta
