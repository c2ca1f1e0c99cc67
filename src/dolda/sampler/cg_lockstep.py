"""The preconditioned CG of the sparse eta-step for all classes in lockstep.

:func:`dolda.sampler.gaussian._pcg_one` solves ``Q_l x_l = c_l``,
``Q_l = U^T U + diag(prec_l)``, one class at a time: every CG iteration of
every class reads all of ``U`` and ``U^T`` for one matrix-vector product.
The L systems share ``U``, so here they advance together: each round every
unfinished class needs exactly one product ``Q_l v_l`` (``v_l`` its search
direction, or its iterate when it checks its true residual), and all of them
are computed in one pass over ``U`` and one over ``U^T`` (a sparse matrix
times an L-column block), which reads the matrix once instead of L times and
vectorises over classes.

Each class keeps its own state machine and does exactly what ``_pcg_one``
does, in the same order: the same iterates, restarts, stopping rule and
iteration counts.  The block product accumulates every class's entries in the
order of the single-vector product (``0.0 + u_1 v_1 + u_2 v_2 + ...`` along a
row), so the solutions are bitwise those of ``_pcg_one`` whatever the number
of threads (rows and classes are split among threads, never a sum).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .cg import CG_MAX_RESTARTS, _csr_matvec, _precondition

#: Phases of a class in :func:`pcg_lockstep`.
_TRUE_RESIDUAL = 0  # its next product is Q x: the true residual
_ITERATING = 1      # its next product is Q p: a CG step
_FINISHED = 2


@njit(cache=True, inline="always")
def _preconditioned_dot(r, pc_inv, block, block_chol, block_scale, rb, z, g_ptr, g_cols,
                        g_vals, prec):
    """``z = M^{-1} r`` (:func:`dolda.sampler.cg._precondition`); returns ``r . z``."""
    _precondition(r, pc_inv, block, block_chol, block_scale, rb, z, g_ptr, g_cols, g_vals,
                  prec)
    s = 0.0
    for col in range(len(r)):
        s += r[col] * z[col]
    return s


@njit(cache=True, parallel=True)
def _block_product(indptr, indices, data, vt, n_act, out):
    """``out[i, :n_act] = sum_k data[k] * vt[indices[k], :n_act]`` over the CSR row ``i``."""
    for i in prange(len(indptr) - 1):
        for j in range(n_act):
            out[i, j] = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            u = data[k]
            row = vt[indices[k]]
            for j in range(n_act):
                out[i, j] += u * row[j]


@njit(cache=True, parallel=True)
def _gather(active, n_act, phase, x, p, vt):
    """``vt[:, j] = x_l`` or ``p_l`` (by the phase of class ``l = active[j]``)."""
    n_col = vt.shape[0]
    for c in prange(n_col):
        for j in range(n_act):
            l = active[j]
            vt[c, j] = x[l, c] if phase[l] == _TRUE_RESIDUAL else p[l, c]


@njit(cache=True, parallel=True)
def pcg_lockstep(indptr, indices, data, t_indptr, t_indices, t_data, col_sq,
                 prec, rhs_d, e2, x, tol, max_iter, iterations, block, block_chol,
                 block_scale, pc_inv, g_ptr, g_cols, g_vals):
    """All classes' block-preconditioned CG in lockstep; arguments as
    :func:`dolda.sampler.gaussian._pcg_classes` (row ``l`` of ``prec``, ``rhs_d``,
    ``e2``, ``x``, ``block_chol``, ``block_scale``, ``pc_inv`` is class ``l``; ``x`` holds the starts
    and receives the solutions; ``iterations[l]`` receives ``_pcg_one``'s return)."""
    n_classes, n_col = prec.shape
    n_row = rhs_d.shape[1]
    n_block = len(block)
    c = np.empty((n_classes, n_col))
    inv_diag = np.empty((n_classes, n_col))
    stop2 = np.empty(n_classes)
    r = np.empty((n_classes, n_col))
    z = np.empty((n_classes, n_col))
    p = np.empty((n_classes, n_col))
    q = np.empty((n_classes, n_col))
    rb = np.empty((n_classes, n_block))
    rz = np.zeros(n_classes)
    done = np.zeros(n_classes, np.int64)
    evaluations = np.zeros(n_classes, np.int64)  # true residuals computed so far
    phase = np.full(n_classes, _TRUE_RESIDUAL, np.int64)
    for l in prange(n_classes):
        _csr_matvec(t_indptr, t_indices, t_data, rhs_d[l], c[l])
        c_norm2 = 0.0
        for j in range(n_col):
            c[l, j] += np.sqrt(prec[l, j]) * e2[l, j]
            inv_diag[l, j] = 1.0 / (col_sq[j] + prec[l, j])
            c_norm2 += c[l, j] * c[l, j] * inv_diag[l, j]
        if c_norm2 == 0.0:
            for j in range(n_col):
                x[l, j] = 0.0
            iterations[l] = 0
            phase[l] = _FINISHED
        stop2[l] = tol * tol * c_norm2
    active = np.empty(n_classes, np.int64)
    vt = np.empty((n_col, n_classes))
    tmp = np.empty((n_row, n_classes))
    qt = np.empty((n_col, n_classes))
    while True:
        n_act = 0
        for l in range(n_classes):
            if phase[l] != _FINISHED:
                active[n_act] = l
                n_act += 1
        if n_act == 0:
            break
        # one product Q_l v_l for every unfinished class: U^T (U V) in two passes
        _gather(active, n_act, phase, x, p, vt)
        _block_product(indptr, indices, data, vt, n_act, tmp)
        _block_product(t_indptr, t_indices, t_data, tmp, n_act, qt)
        for j in prange(n_act):
            l = active[j]
            v = x[l] if phase[l] == _TRUE_RESIDUAL else p[l]
            for col in range(n_col):
                q[l, col] = qt[col, j] + prec[l, col] * v[col]
            if phase[l] == _TRUE_RESIDUAL:
                res2 = 0.0
                for col in range(n_col):
                    r[l, col] = c[l, col] - q[l, col]
                    res2 += r[l, col] * r[l, col] * inv_diag[l, col]
                evaluation = evaluations[l]
                evaluations[l] += 1
                if res2 <= stop2[l]:
                    iterations[l] = done[l]
                    phase[l] = _FINISHED
                elif done[l] >= max_iter or evaluation == CG_MAX_RESTARTS:
                    iterations[l] = -1
                    phase[l] = _FINISHED
                else:
                    rz[l] = _preconditioned_dot(r[l], pc_inv[l], block, block_chol[l],
                                                block_scale[l], rb[l], z[l], g_ptr, g_cols,
                                                g_vals, prec[l])
                    for col in range(n_col):
                        p[l, col] = z[l, col]
                    phase[l] = _ITERATING if done[l] < max_iter else _TRUE_RESIDUAL
            else:
                pq = 0.0
                for col in range(n_col):
                    pq += p[l, col] * q[l, col]
                alpha = rz[l] / pq
                res2 = 0.0
                for col in range(n_col):
                    x[l, col] += alpha * p[l, col]
                    r[l, col] -= alpha * q[l, col]
                    res2 += r[l, col] * r[l, col] * inv_diag[l, col]
                done[l] += 1
                if res2 <= stop2[l]:
                    phase[l] = _TRUE_RESIDUAL
                else:
                    rz_new = _preconditioned_dot(r[l], pc_inv[l], block, block_chol[l],
                                                 block_scale[l], rb[l], z[l], g_ptr, g_cols,
                                                 g_vals, prec[l])
                    beta = rz_new / rz[l]
                    rz[l] = rz_new
                    for col in range(n_col):
                        p[l, col] = z[l, col] + beta * p[l, col]
                    if done[l] >= max_iter:
                        phase[l] = _TRUE_RESIDUAL
