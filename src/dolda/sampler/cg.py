"""What the sparse eta-step's two CG solvers share: the CSR matrix-vector product, the
preconditioner's application and the restart cap.

:func:`dolda.sampler.gaussian._pcg_one` (class by class) and
:func:`dolda.sampler.cg_lockstep.pcg_lockstep` (all classes at once) both import these,
so neither imports the other's module: ``gaussian`` dispatches to ``cg_lockstep`` and
``cg_lockstep`` sits below it.
"""

from __future__ import annotations

from numba import njit

from .preconditioner import block_solve


@njit(cache=True, inline="always")
def _csr_matvec(indptr, indices, data, x, out):
    for i in range(len(indptr) - 1):
        s = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            s += data[k] * x[indices[k]]
        out[i] = s


@njit(cache=True, inline="always")
def _precondition(r, pc_inv, block, block_chol, block_scale, rb, z, g_ptr, g_cols, g_vals,
                  prec):
    """``z = M^{-1} r``: diagonal ``pc_inv`` everywhere, then the exact inverse on the block
    (from its factor, :func:`dolda.sampler.preconditioner.block_factors`) and, by Sherman-Morrison, on every
    row-singleton group (``diag(prec) + u u^T``)."""
    for j in range(len(r)):
        z[j] = r[j] * pc_inv[j]
    for g in range(len(g_ptr) - 1):
        s1 = 0.0
        s2 = 0.0
        for k in range(g_ptr[g], g_ptr[g + 1]):
            j = g_cols[k]
            w = g_vals[k] / prec[j]
            s1 += w * r[j]
            s2 += w * g_vals[k]
        f = s1 / (1.0 + s2)
        for k in range(g_ptr[g], g_ptr[g + 1]):
            j = g_cols[k]
            z[j] = (r[j] - g_vals[k] * f) / prec[j]
    block_solve(block_chol, block_scale, r, block, rb, z)


#: CG restarts from the true residual at most this many times before giving up.
CG_MAX_RESTARTS = 4
