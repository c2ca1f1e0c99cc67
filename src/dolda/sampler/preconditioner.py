"""The block preconditioner of the sparse eta-step's CG (:mod:`dolda.sampler.gaussian`).

On the columns ``B`` of a :class:`dolda.sampler.gaussian.SparseDesign`'s block (DOLDA's
intercept and topics) the preconditioner of class ``l`` is ``Q_l``'s own block
``G_B + diag(prec_{l,B})``, ``G_B = U_B^T U_B``: :func:`block_gram` forms ``G_B`` once
per draw, :func:`block_factors` factors every class's block, and :func:`block_solve`
applies its inverse inside CG.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from scipy.linalg import cholesky

#: Output row bands of :func:`block_gram`, one parallel task each: a constant, so the sums
#: (over rows of U, in order) are the same for every thread count.
GRAM_BANDS = 8


@njit(cache=True, parallel=True)
def block_gram(indptr, indices, data, position, n_block):
    """``G_B = U_B^T U_B`` (B, B) of the columns with ``position[j] >= 0`` (their index in
    the block, increasing with ``j``), from CSR ``U`` with sorted indices.

    Each row adds the outer product of its block entries (the upper triangle, mirrored at
    the end); the output rows are split into :data:`GRAM_BANDS` bands computed in
    parallel, each summing over the rows of ``U`` in order, so the result does not depend
    on the thread count.  O(sum_d nnz_B(d)^2 / 2); scipy's sparse ``U_B^T U_B`` builds a
    sparse result of the dense block's size: 3.7x this kernel's time at 20 Newsgroups'
    B = 1,001 (``benchmarks/bench_block_gram.py``, ``results/block_gram.md``)."""
    gram = np.zeros((n_block, n_block))
    width = (n_block + GRAM_BANDS - 1) // GRAM_BANDS
    for band in prange(GRAM_BANDS):
        lo, hi = band * width, min(n_block, (band + 1) * width)
        pos = np.empty(n_block, np.int64)
        val = np.empty(n_block)
        for d in range(len(indptr) - 1):
            n = 0
            for t in range(indptr[d], indptr[d + 1]):
                b = position[indices[t]]
                if b >= 0:
                    pos[n] = b
                    val[n] = data[t]
                    n += 1
            for i in range(n):
                bi = pos[i]
                if bi < lo or bi >= hi:
                    continue
                vi = val[i]
                for j in range(i, n):
                    gram[bi, pos[j]] += vi * val[j]
    for i in range(n_block):
        for j in range(i):
            gram[i, j] = gram[j, i]
    return gram


def block_factors(design, prec):
    """The block preconditioner of every class as Cholesky factors: ``(chol, scale)``.

    ``A_l = S_l (G_B + diag(prec_{l,B})) S_l`` is the Jacobi-scaled block (unit diagonal,
    ``S_l = diag(scale[l])``, so precisions of 1e100 or 1e-10 do not spoil the Cholesky),
    and ``chol[l]`` is its lower factor ``C_l`` (``A_l = C_l C_l^T``) packed by rows: row
    ``i`` of ``C_l`` is ``chol[l, i (i + 1) / 2 : (i + 1) (i + 2) / 2]``.  The block's
    inverse is ``S_l C_l^{-T} C_l^{-1} S_l`` (applied by :func:`block_solve`): half the
    memory of explicit (B, B) inverses (80 MB instead of 160 MB for 20 classes at
    B = 1,001, 20 Newsgroups at K = 1000) and as many multiply-adds per application.  A
    class whose scaled block is not numerically positive definite gets the identity
    factor, i.e. the Jacobi block ``diag(scale^2)``: the preconditioner only steers CG,
    its stopping rule and answer do not depend on it.

    Returns
    -------
    chol : ndarray (L, B (B + 1) / 2)
    scale : ndarray (L, B)
    """
    block = design.block
    n_classes, n_block = prec.shape[0], len(block)
    chol = np.empty((n_classes, n_block * (n_block + 1) // 2))
    scale = np.empty((n_classes, n_block))
    if n_block == 0:  # Jacobi only: nothing to factor
        return chol, scale
    lower = np.tril_indices(n_block)
    for l in range(n_classes):
        a = np.diag(prec[l, block])
        a += design.block_gram
        s = 1.0 / np.sqrt(np.diag(a))
        a *= s[:, None]
        a *= s[None, :]
        try:
            factor = cholesky(a, lower=True, check_finite=False, overwrite_a=True)
        except np.linalg.LinAlgError:
            factor = np.eye(n_block)
        del a
        chol[l] = factor[lower]
        scale[l] = s
    return chol, scale


@njit(cache=True, inline="always")
def block_solve(chol, scale, r, block, rb, z):
    """``z[block] = S C^{-T} C^{-1} S r[block]`` (:func:`block_factors`): a forward and a
    back substitution on the packed factor, B^2 multiply-adds in all; ``rb`` is (B,) scratch."""
    nb = len(block)
    for i in range(nb):  # C y = S r_B, row by row
        row = i * (i + 1) // 2
        s = scale[i] * r[block[i]]
        for k in range(i):
            s -= chol[row + k] * rb[k]
        rb[i] = s / chol[row + i]
    for i in range(nb - 1, -1, -1):  # C^T x = y: column i of C^T is row i of C
        row = i * (i + 1) // 2
        x = rb[i] / chol[row + i]
        rb[i] = x
        for k in range(i):
            rb[k] -= chol[row + k] * x
    for i in range(nb):
        z[block[i]] = scale[i] * rb[i]
