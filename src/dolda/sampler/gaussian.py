"""Exact Gaussian draws for the eta-step when there are many (sparse) columns.

Every class ``l`` of the DO probit needs one draw

    eta_l ~ N(Q_l^{-1} b_l, Q_l^{-1}),   Q_l = U^T U + diag(prec_l),   b_l = U^T a_l,

with ``U`` the (D x P) regressors, ``a_l`` the (D,) utilities of class ``l``
and ``prec_l`` the (P,) prior precisions.  The dense path
(:func:`dolda.sampler.probit_blocks.draw_coefficients`) factors the P x P matrix
``Q_l``: O(P^3) per class, hopeless for tens of thousands of one-hot columns.
This module holds two exact alternatives that never form ``Q_l``:

* :func:`draw_bcm` -- Bhattacharya, Chakraborty & Mallick (2016, Biometrika
  103(4)), for ``P >> D``.  With ``Dl = diag(1 / prec_l)``::

      u ~ N(0, Dl),  delta ~ N(0, I_D),  v = U u + delta,
      solve (U Dl U^T + I_D) w = a_l - v,   eta_l = u + Dl U^T w.

  ``eta_l`` is then exactly ``N(Q_l^{-1} b_l, Q_l^{-1})`` (Woodbury).  Cost: a
  D x D Cholesky per class, O(D^3 + D^2 P) dense or O(D^3 + nnz D) sparse.
  ``Dl`` is used as is, so prior variances of 1e-100 (a Horseshoe coefficient
  shrunk to nothing) are harmless.

* :func:`draw_pcg` -- perturbation-optimisation (Papandreou & Yuille 2010;
  Orieux, Feron & Giovannelli 2012): the solution of

      Q_l eta_l = U^T (a_l + e1) + prec_l^{1/2} * e2,   e1 ~ N(0, I_D),  e2 ~ N(0, I_P),

  is an exact draw, because the right-hand side has mean ``b_l`` and
  covariance ``U^T U + diag(prec_l) = Q_l``.  The system is solved by conjugate
  gradients with a Jacobi (diagonal) preconditioner and sparse mat-vecs
  (``Q_l x = U^T (U x) + prec_l * x``), warm-started at the previous draw.  A
  CG iteration costs O(nnz(U) + P).  The draw is exact up to the solver
  tolerance :data:`CG_TOL` on the Jacobi-scaled relative residual
  ``||r||_{D^-1} / ||c||_{D^-1}`` (``D = diag(Q_l)``), checked on the true
  residual ``c - Q_l x`` before a solution is returned; the Geweke tests in
  ``tests/sampler/test_probit_sparse.py`` and ``tests/sampler/test_sparse_eta.py`` show the
  remaining error is invisible.  Jacobi scaling also tames huge precisions
  (1e100): in scaled coordinates such a column is an identity row.

  *Block preconditioner.*  In DOLDA, ``U = [1, x, zbar]`` and the topic
  proportions of a document sum to one, so ``U (e_0 - sum_k e_k) = 0``: along
  "intercept minus all topics" only the prior bends ``Q_l``, whose Jacobi-scaled
  condition number is then ~ D / (prior precision), and Jacobi-PCG needs
  hundreds to thousands of iterations.  A :class:`SparseDesign` may name a
  small set of dense columns (``block``: the intercept and the topics) whose
  block ``G_B = U_B^T U_B`` is formed once per draw; the preconditioner is then
  ``M_l = blockdiag(G_B + diag(prec_{l,B}), diag(Q_l) elsewhere)``, factored
  once per class (a |B| x |B| Cholesky of the Jacobi-scaled block).  The
  collinear direction lies inside the block, where ``M_l`` equals ``Q_l``
  exactly.  Likewise the columns with a single non-zero (one-hot levels seen
  in one row), numerous when ``P > D``: those of one row form the block
  ``diag(prec) + u u^T`` of ``Q_l``, inverted exactly by Sherman-Morrison; with
  the Horseshoe leaving many of them barely shrunk, they gave ``Q_l``'s
  Jacobi-scaled spectrum its many small eigenvalues.  On the benchmark's
  25,000 one-hot columns + 100 topics the two halve the CG iterations
  (``benchmarks/results/eta_dolda.md``).  A preconditioner changes only how fast CG reaches the tolerance,
  never what it converges to, and the stopping rule does not depend on it, so
  the draw stays the same exact perturbation-optimisation sample.

Both samplers take all their randomness as arguments (standard normal arrays
drawn serially by the caller), and classes are processed independently, so
the draws do not depend on the number of threads.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numba import njit, prange
from scipy.linalg import cho_solve, cholesky

from .cg import CG_MAX_RESTARTS, _csr_matvec, _precondition
from .preconditioner import block_factors, block_gram

logger = logging.getLogger(__name__)

#: CG stops when the Jacobi-scaled relative residual
#: ``sqrt(r^T D^{-1} r) / sqrt(c^T D^{-1} c)`` (``D = diag(Q)``, ``c`` the
#: right-hand side, ``r = c - Q x``) falls below this value, whatever the
#: preconditioner.  Errors of this size in a draw are
#: far below its Monte Carlo spread (the Geweke test cannot see them).
CG_TOL = 1e-8

#: Hard cap on CG iterations per class and draw; reaching it is logged.
CG_MAX_ITER = 5000

#: BCM densifies a sparse ``U`` with at most this many entries (D * P): the
#: D x D products are then plain BLAS.
BCM_DENSIFY_MAX = 4_000_000

#: BCM handles all classes in one batched numpy factorisation when D is at most
#: this (many tiny problems, e.g. the Geweke test's thousands of chains); larger
#: D goes class by class through LAPACK's Cholesky and triangular solves.
BCM_BATCH_MAX_ROWS = 64


class SparseDesign(NamedTuple):
    """The regressors in the two layouts the CG kernel reads.

    Attributes
    ----------
    csr : scipy.sparse.csr_matrix (D, P)
        ``U`` by rows (for ``U x``).
    csr_t : scipy.sparse.csr_matrix (P, D)
        ``U^T`` by rows (for ``U^T w``).
    col_sq : ndarray (P,)
        ``sum_d U_dp^2``, the diagonal of ``U^T U`` (for the preconditioner).
    block : int64 ndarray (B,)
        Columns preconditioned by their exact block of ``Q_l`` (empty: Jacobi only).
    block_gram : ndarray (B, B)
        ``U_B^T U_B``, the Gram block of those columns.
    group_ptr, group_cols, group_vals : int64 (G + 1,), int64 (S,), float (S,)
        The *row-singleton* columns (non-zero in one row only, e.g. a one-hot
        level seen once), grouped by that row: group ``g`` holds the columns
        ``group_cols[group_ptr[g]:group_ptr[g + 1]]`` with their values in the
        row.  Within a group ``Q_l`` is exactly ``diag(prec) + u u^T``, which
        the preconditioner inverts by Sherman-Morrison (empty: not used).
    """

    csr: sp.csr_matrix
    csr_t: sp.csr_matrix
    col_sq: np.ndarray
    block: np.ndarray = np.empty(0, dtype=np.int64)
    block_gram: np.ndarray = np.empty((0, 0))
    group_ptr: np.ndarray = np.zeros(1, dtype=np.int64)
    group_cols: np.ndarray = np.empty(0, dtype=np.int64)
    group_vals: np.ndarray = np.empty(0)


#: Most columns a :class:`SparseDesign` block may have: its per-class factorisation
#: costs O(B^3) and every CG iteration O(B^2) per class.
BLOCK_MAX_COLUMNS = 1024


def _row_singletons(csr, csr_t, exclude):
    """Group the columns with exactly one non-zero by their row (see :class:`SparseDesign`)."""
    nnz_col = np.diff(csr_t.indptr)
    single = nnz_col == 1
    single[exclude] = False
    cols = np.flatnonzero(single)
    rows = csr_t.indices[csr_t.indptr[cols]]
    vals = csr_t.data[csr_t.indptr[cols]]
    order = np.lexsort((cols, rows))
    cols, rows, vals = cols[order], rows[order], vals[order]
    if len(rows) == 0:
        return np.zeros(1, np.int64), np.empty(0, np.int64), np.empty(0)
    same = rows[1:] == rows[:-1]
    keep = np.r_[same, False] | np.r_[False, same]          # groups of one are Jacobi already
    cols, rows, vals = cols[keep], rows[keep], vals[keep]
    if len(rows) == 0:
        return np.zeros(1, np.int64), np.empty(0, np.int64), np.empty(0)
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    ptr = np.r_[starts, len(rows)].astype(np.int64)
    return ptr, cols.astype(np.int64), vals.astype(np.float64)


def sparse_design(U, block=None, singletons: bool = False) -> SparseDesign:
    """Build a :class:`SparseDesign` from a dense array or any scipy sparse matrix, shape (D, P).

    Parameters
    ----------
    U : (D, P) ndarray or scipy.sparse matrix
    block : int array (B,) or None
        Columns for the block preconditioner (see the module doc), e.g. DOLDA's
        intercept and topic columns; None or empty: Jacobi only.
    singletons : bool
        Also precondition the row-singleton columns by their exact within-row
        blocks (rare one-hot levels; see :class:`SparseDesign`).
    """
    csr = sp.csr_matrix(U, dtype=np.float64)
    csr.sum_duplicates()
    csr.sort_indices()
    csr_t = csr.T.tocsr()
    csr_t.sort_indices()
    col_sq = np.asarray(csr.multiply(csr).sum(axis=0)).ravel()
    groups = ()
    if singletons:
        groups = _row_singletons(csr, csr_t, np.empty(0, np.int64) if block is None
                                 else np.asarray(block, dtype=np.int64))
    if block is None or len(block) == 0:
        return SparseDesign(csr, csr_t, col_sq, *((np.empty(0, np.int64), np.empty((0, 0)))
                                                  + groups if groups else ()))
    block = np.asarray(block, dtype=np.int64)
    if (len(block) > BLOCK_MAX_COLUMNS or len(np.unique(block)) != len(block)
            or block.min() < 0 or block.max() >= csr.shape[1]):
        raise ValueError(f"block must be at most {BLOCK_MAX_COLUMNS} distinct column indices "
                         f"in [0, {csr.shape[1]}), got {len(block)} (min {block.min()}, "
                         f"max {block.max()})")
    position = np.full(csr.shape[1], -1, np.int64)
    position[block] = np.arange(len(block))
    gram = block_gram(csr.indptr, csr.indices, csr.data, position, len(block))
    return SparseDesign(csr, csr_t, col_sq, block, gram, *groups)


# --------------------------------------------------------------------- BCM
def _bcm_one(U, a_l, prec_l, u_l, delta_l):
    """One class of :func:`draw_bcm`; ``u_l``, ``delta_l`` standard normal (P,), (D,)."""
    var = 1.0 / prec_l
    u = np.sqrt(var) * u_l
    v = U @ u + delta_l
    if sp.issparse(U):
        m = (U @ sp.diags(var) @ U.T).toarray()
    else:
        m = (U * var) @ U.T
    m[np.diag_indices_from(m)] += 1.0
    chol = cholesky(m, lower=True, check_finite=False)
    w = cho_solve((chol, True), a_l - v, check_finite=False)
    return u + var * (U.T @ w)


def _bcm_batched(U, a, prec, u_normals, delta_normals):
    """All classes of :func:`draw_bcm` at once (small D): batched D x D Cholesky."""
    var = 1.0 / prec                                              # (L, P)
    u = np.sqrt(var) * u_normals                                  # (L, P)
    v = u @ U.T + delta_normals                                   # (L, D)
    m = np.matmul(U[None] * var[:, None, :], U.T)                # (L, D, D)
    m[:, np.arange(U.shape[0]), np.arange(U.shape[0])] += 1.0
    chol = np.linalg.cholesky(m)
    rhs = (a.T - v)[:, :, None]
    w = np.linalg.solve(np.swapaxes(chol, 1, 2), np.linalg.solve(chol, rhs))[:, :, 0]
    return u + var * (w @ U)


def draw_bcm(U, a, prec, u_normals, delta_normals, n_jobs: int = 1):
    """Bhattacharya-Chakraborty-Mallick draw of every ``eta_l``.

    Parameters
    ----------
    U : (D, P) ndarray or scipy.sparse CSR matrix
        Regressors ``U``.
    a : (D, L) ndarray
        Utilities ``a``; column ``l`` is the "response" of class ``l`` (noise variance 1).
    prec : (L, P) ndarray
        Prior precisions ``1 / v_{lp}`` (finite, > 0).
    u_normals : (L, P) ndarray
        Standard normals for ``u ~ N(0, Dl)``.
    delta_normals : (L, D) ndarray
        Standard normals for ``delta ~ N(0, I_D)``.
    n_jobs : int
        Threads over classes; the result does not depend on it.  The BLAS products run
        side by side; the D x D factorisation goes through scipy's LAPACK wrapper, which
        holds the GIL (:mod:`dolda.sampler.lapack_nogil`), so those run one at a time.

    Returns
    -------
    eta : (L, P) ndarray
        ``eta_l ~ N(Q_l^{-1} U^T a_l, Q_l^{-1})`` exactly.
    """
    n_classes, n_columns = prec.shape
    n_samples = U.shape[0]
    if sp.issparse(U) and n_samples * n_columns <= BCM_DENSIFY_MAX:
        U = U.toarray()
    if not sp.issparse(U) and n_samples <= BCM_BATCH_MAX_ROWS:
        return _bcm_batched(U, a, prec, u_normals, delta_normals)

    def one(l):
        return _bcm_one(U, a[:, l], prec[l], u_normals[l], delta_normals[l])

    from threadpoolctl import threadpool_limits

    # Classes in n_jobs threads, each with one BLAS thread (classes in turn: at
    # most n_jobs BLAS threads).  Nested BLAS threads oversubscribe the cores:
    # measured on 2 loaded cores, D = 200, P = 501, L = 20: 1.3-6.9 s with the
    # default BLAS threads, 0.03-0.06 s with one (D = 1000, P = 5001: 13-27 s vs 4.7 s).
    if n_jobs > 1 and n_classes > 1:
        with threadpool_limits(limits=1, user_api="blas"), \
                ThreadPoolExecutor(max_workers=n_jobs) as pool:
            rows = list(pool.map(one, range(n_classes)))
    else:
        with threadpool_limits(limits=max(1, n_jobs), user_api="blas"):
            rows = [one(l) for l in range(n_classes)]
    return np.stack(rows)


# --------------------------------------------------------------------- PCG
@njit(cache=True)
def _q_matvec(indptr, indices, data, t_indptr, t_indices, t_data, prec, x, tmp, out):
    """``out = U^T (U x) + prec * x``; ``tmp`` is (D,) scratch."""
    _csr_matvec(indptr, indices, data, x, tmp)
    _csr_matvec(t_indptr, t_indices, t_data, tmp, out)
    for j in range(len(x)):
        out[j] += prec[j] * x[j]


@njit(cache=True)
def _pcg_one(indptr, indices, data, t_indptr, t_indices, t_data, col_sq,
             prec, rhs_d, e2, x, tol, max_iter, block, block_chol, block_scale, pc_inv, g_ptr,
             g_cols, g_vals):
    """Block-diagonal PCG for one class; ``x`` (P,) is the start and receives the solution.

    ``rhs_d`` (D,) is ``a_l + e1``; the right-hand side is
    ``c = U^T rhs_d + sqrt(prec) * e2``.  ``block_chol`` (B (B + 1) / 2,) and
    ``block_scale`` (B,) factor ``Q_l`` restricted to the ``block`` columns
    (:func:`dolda.sampler.preconditioner.block_factors`; B = 0: Jacobi).  CG stops when the
    Jacobi-scaled residual ``sum_j r_j^2 / Q_jj`` is at most ``tol^2`` times that of
    ``c``, and a solution is returned only after the *true* residual ``c - Q x``
    passed that test.  Returns the number of iterations, or ``-1`` when
    ``max_iter`` iterations or ``CG_MAX_RESTARTS`` restarts did not get there.
    """
    n_col = len(x)
    n_row = len(rhs_d)
    c = np.empty(n_col)
    _csr_matvec(t_indptr, t_indices, t_data, rhs_d, c)
    inv_diag = np.empty(n_col)
    c_norm2 = 0.0
    for j in range(n_col):
        c[j] += np.sqrt(prec[j]) * e2[j]
        inv_diag[j] = 1.0 / (col_sq[j] + prec[j])
        c_norm2 += c[j] * c[j] * inv_diag[j]
    if c_norm2 == 0.0:
        for j in range(n_col):
            x[j] = 0.0
        return 0
    stop2 = tol * tol * c_norm2
    tmp = np.empty(n_row)
    r = np.empty(n_col)
    z = np.empty(n_col)
    p = np.empty(n_col)
    q = np.empty(n_col)
    rb = np.empty(len(block))
    done = 0
    for _restart in range(CG_MAX_RESTARTS + 1):
        # true residual r = c - Q x (at the start, and again after CG claims convergence)
        _q_matvec(indptr, indices, data, t_indptr, t_indices, t_data, prec, x, tmp, q)
        res2 = 0.0
        for j in range(n_col):
            r[j] = c[j] - q[j]
            res2 += r[j] * r[j] * inv_diag[j]
        if res2 <= stop2:
            return done
        if done >= max_iter or _restart == CG_MAX_RESTARTS:
            return -1
        _precondition(r, pc_inv, block, block_chol, block_scale, rb, z, g_ptr, g_cols, g_vals,
                      prec)
        rz = 0.0
        for j in range(n_col):
            p[j] = z[j]
            rz += r[j] * z[j]
        while done < max_iter:
            _q_matvec(indptr, indices, data, t_indptr, t_indices, t_data, prec, p, tmp, q)
            pq = 0.0
            for j in range(n_col):
                pq += p[j] * q[j]
            alpha = rz / pq
            res2 = 0.0
            for j in range(n_col):
                x[j] += alpha * p[j]
                r[j] -= alpha * q[j]
                res2 += r[j] * r[j] * inv_diag[j]
            done += 1
            if res2 <= stop2:
                break
            _precondition(r, pc_inv, block, block_chol, block_scale, rb, z, g_ptr, g_cols,
                          g_vals, prec)
            rz_new = 0.0
            for j in range(n_col):
                rz_new += r[j] * z[j]
            beta = rz_new / rz
            rz = rz_new
            for j in range(n_col):
                p[j] = z[j] + beta * p[j]
    return -1


def apply_preconditioner(design: SparseDesign, prec_l, r):
    """``M_l^{-1} r`` for one class (``prec_l`` (P,), ``r`` (P,)): what CG's preconditioner does.

    ``M_l`` is ``diag(Q_l)`` except on the block columns and the row-singleton
    groups, where it is ``Q_l``'s own sub-block (see :class:`SparseDesign`).
    """
    prec_l = np.ascontiguousarray(prec_l, dtype=np.float64)
    chol, scale = block_factors(design, prec_l[None])
    z = np.empty(len(prec_l))
    _precondition(np.ascontiguousarray(r, dtype=np.float64), 1.0 / (design.col_sq + prec_l),
                  np.ascontiguousarray(design.block, dtype=np.int64), chol[0], scale[0],
                  np.empty(len(design.block)), z, design.group_ptr, design.group_cols,
                  design.group_vals, prec_l)
    return z


@njit(cache=True, parallel=True)
def _pcg_classes(indptr, indices, data, t_indptr, t_indices, t_data, col_sq,
                 prec, rhs_d, e2, x, tol, max_iter, iterations, block, block_chol,
                 block_scale, pc_inv, g_ptr, g_cols, g_vals):
    """All classes in parallel; class ``l`` reads row ``l`` of ``prec``, ``rhs_d``, ``e2``,
    ``x``, ``block_chol``, ``block_scale``."""
    for l in prange(prec.shape[0]):
        iterations[l] = _pcg_one(indptr, indices, data, t_indptr, t_indices, t_data, col_sq,
                                 prec[l], rhs_d[l], e2[l], x[l], tol, max_iter, block,
                                 block_chol[l], block_scale[l], pc_inv[l], g_ptr, g_cols,
                                 g_vals)


def draw_pcg(design: SparseDesign, a, prec, e1, e2, start=None, tol: float = CG_TOL,
             max_iter: int = CG_MAX_ITER, diagonal: str = "jacobi", lockstep: bool = True):
    """Perturbation-optimisation draw of every ``eta_l`` by (block-)Jacobi-preconditioned CG.

    Parameters
    ----------
    design : SparseDesign
        ``U`` (D, P) in CSR and transposed-CSR form (:func:`sparse_design`), with
        the columns of the block preconditioner if any.
    a : (D, L) ndarray
        Utilities ``a``.
    prec : (L, P) ndarray
        Prior precisions (finite, > 0).
    e1 : (L, D) ndarray
        Standard normals, the data perturbation.
    e2 : (L, P) ndarray
        Standard normals, the prior perturbation.
    start : (L, P) ndarray or None
        Warm start (the previous draw); None starts at zero.  It changes the
        result only within the solver tolerance.
    tol : float
        Jacobi-scaled relative residual at which CG stops (:data:`CG_TOL`).
    max_iter : int
        Iteration cap per class (:data:`CG_MAX_ITER`); reaching it is logged.
    diagonal : {"jacobi", "prior"}
        The preconditioner outside the block and singleton groups: ``diag(Q_l)``
        (default) or the prior precision alone (Nishimura & Suchard's prior
        preconditioner; 4.5x more iterations on the benchmark's state, kept for
        comparison).  The stopping rule is the same for both.
    lockstep : bool
        Advance all classes together, one pass over ``U`` per round for all of
        them (:mod:`dolda.sampler.cg_lockstep`, default), or class by class
        (:func:`_pcg_one`, in parallel over classes).  The results are bitwise
        the same; lockstep reads ``U`` once per round instead of once per class.

    Returns
    -------
    eta : (L, P) ndarray
        The solutions of ``Q_l eta_l = U^T (a_l + e1_l) + prec_l^{1/2} e2_l``.
    iterations : (L,) int ndarray
        CG iterations per class (-1: not converged within ``max_iter``).
    """
    n_classes, n_col = prec.shape
    prec = np.ascontiguousarray(prec, dtype=np.float64)
    block_chol, block_scale = block_factors(design, prec)
    if diagonal == "jacobi":
        pc_inv = 1.0 / (design.col_sq[None, :] + prec)
    elif diagonal == "prior":
        pc_inv = 1.0 / prec
    else:
        raise ValueError(f"diagonal must be 'jacobi' or 'prior', got {diagonal!r}")
    x = np.zeros((n_classes, n_col)) if start is None else np.array(start, dtype=np.float64)
    rhs_d = np.ascontiguousarray(a.T) + e1
    iterations = np.empty(n_classes, dtype=np.int64)
    csr, csr_t = design.csr, design.csr_t
    if lockstep:
        from .cg_lockstep import pcg_lockstep as solve
    else:
        solve = _pcg_classes
    solve(csr.indptr, csr.indices, csr.data, csr_t.indptr, csr_t.indices, csr_t.data,
          design.col_sq, prec, rhs_d, np.ascontiguousarray(e2), x, float(tol),
          int(max_iter), iterations, np.ascontiguousarray(design.block, dtype=np.int64),
          block_chol, block_scale, np.ascontiguousarray(pc_inv), design.group_ptr, design.group_cols,
          design.group_vals)
    if np.any(iterations < 0):
        logger.warning("CG did not reach tolerance %.1e within %d iterations for %d of %d "
                       "classes", tol, max_iter, int(np.sum(iterations < 0)), n_classes)
    return x, iterations
