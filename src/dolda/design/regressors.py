"""DOLDA's regressor rows ``u_d = [1, x_d, words_d, zbar_d]`` as two blocks.

With word covariates (or a sparse one-hot encoding) the left block is a sparse CSR matrix
while the topic proportions ``zbar`` are dense: the Rao-Blackwellised estimate gives every
topic some mass in every document.  Stacking them into one CSR matrix stores each dense
value with a column index (12 bytes instead of 8) beside the dense array it was built from,
and multiplies them by the slow sparse product.  :class:`SparseDenseDesign` keeps the two
blocks as they are and multiplies the dense one with BLAS.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


class SparseDenseDesign:
    """``U = [left | right]`` (D, P): ``left`` scipy.sparse (D, P_s), ``right`` dense (D, P_d).

    Supports what the calibration and prediction code asks of a design: ``shape``,
    ``U @ B`` for a dense ``B`` (P, m) or (P,), :meth:`column_nonzero_counts`,
    :meth:`columns` and :meth:`toarray` (tests).
    """

    def __init__(self, left, right):
        self.left = sp.csr_matrix(left)
        self.right = np.asarray(right, dtype=np.float64)
        if self.right.ndim != 2 or self.right.shape[0] != self.left.shape[0]:
            raise ValueError(f"SparseDenseDesign: {self.left.shape[0]} rows on the left, "
                             f"right block of shape {self.right.shape}")

    @property
    def shape(self):
        return self.left.shape[0], self.left.shape[1] + self.right.shape[1]

    @property
    def n_left(self):
        return self.left.shape[1]

    def __matmul__(self, B):
        B = np.asarray(B)
        if B.shape[0] != self.shape[1]:
            raise ValueError(f"SparseDenseDesign @ B: {self.shape[1]} columns, B has "
                             f"{B.shape[0]} rows")
        p = self.n_left
        return np.asarray(self.left @ B[:p]) + self.right @ B[p:]

    def column_nonzero_counts(self):
        """Non-zero rows per column, (P,)."""
        left = np.asarray((self.left != 0).sum(axis=0)).ravel()  # explicit zeros do not count
        return np.concatenate([left, np.count_nonzero(self.right, axis=0)])

    def columns(self, index):
        """Columns ``index`` (sorted ints) as a CSR matrix (D, len(index))."""
        index = np.asarray(index, dtype=np.int64)
        p = self.n_left
        left, right = index[index < p], index[index >= p] - p
        return sp.hstack([self.left[:, left], sp.csr_matrix(self.right[:, right])],
                         format="csr")

    def toarray(self):
        return np.hstack([self.left.toarray(), self.right])
