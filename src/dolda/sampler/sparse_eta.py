"""DOLDA's eta-step with sparse, high-dimensional covariates (CG or BCM instead of Cholesky).

The default eta-step (:func:`dolda.sampler.gibbs_iteration.eta_step`) reduces every
shard's ``U_s^T U_s`` to a dense P x P matrix and factors ``Q_l`` per class:
O(D P_x^2) statistics and O(P^3) per class, fine for tens or hundreds of
covariates, hopeless for thousands of word or one-hot columns.

When the chain's covariates ``X`` are a scipy CSR matrix
(:class:`dolda.sampler.gibbs_iteration.TopicData`; DOLDA does so for ``eta_sampler="cg"``
or ``"bcm"``) they stay sparse end to end and the eta-step is
DOProbit's own exact sampler (:func:`dolda.sampler.probit_blocks.draw_eta`) on

    U = [X, zbar]  (D x (P_x + K), CSR),

where ``zbar`` is sparse too (a document uses few topics).  Each shard returns
its utilities ``a_s`` and its ``zbar_s`` in CSR (O(nnz) instead of P^2
numbers); the driver stacks them in shard order and draws eta with the same
random stream (``STEP_ETA``) as the Cholesky path.  CG is preconditioned by the
exact block of ``Q_l`` on the first column (the intercept) and the ``K`` topic
columns (the topic proportions sum to one like the intercept), by the exact
within-row blocks of the columns seen in one row only (rare one-hot levels),
and by the diagonal elsewhere (:mod:`dolda.sampler.gaussian`,
``benchmarks/results/eta_dolda.md``).  The shards are fixed by the
data, so the local and the Dask backend build the same ``U`` and the same
chain.  The shard-side products ``U_s eta^T`` use scipy's serial CSR product
(a fixed summation order, whatever the thread count).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numba import njit, prange

from . import gaussian
from . import probit_blocks as probit_blocks
from .linear_predictors import as_csr_arrays, csr_draw_products
from .rng import STEP_ETA, STEP_SHRINK, numpy_generator


@njit(cache=True, parallel=True)
def _zbar_parts(fill, n_parts, doc_ptr, ndk, indptr, indices, data):
    """Rows of ``zbar`` in ``n_parts`` parallel tasks of consecutive documents: their
    non-zero counts into ``indptr[d + 1]`` (``fill`` false), or their columns and values
    from ``indptr[d]`` on (``fill`` true).  One kernel for both passes: numba builds one
    parallel region instead of two (each costs about a second of the first run's compile)."""
    n_docs, n_topics = ndk.shape
    for part_ in prange(n_parts):
        part = np.int64(part_)
        for d in range(part * n_docs // n_parts, (part + 1) * n_docs // n_parts):
            if not fill:
                c = 0
                for k in range(n_topics):
                    if ndk[d, k] != 0:
                        c += 1
                indptr[d + 1] = c
            else:
                n = np.float64(max(doc_ptr[d + 1] - doc_ptr[d], 1))
                q = indptr[d]
                for k in range(n_topics):
                    if ndk[d, k] != 0:
                        indices[q] = k
                        data[q] = ndk[d, k] / n
                        q += 1


#: Parallel tasks of :func:`_zbar_parts` (at most; one per document below that).
_ZBAR_PARTS = 64


def zbar_arrays(doc_ptr, ndk):
    """CSR arrays ``(indptr, indices, data)`` of ``zbar = n_{d,.} / max(N_d, 1)``, rows in
    parallel (counted, then filled), columns ascending within a row."""
    n_docs = ndk.shape[0]
    n_parts = np.int64(max(1, min(n_docs, _ZBAR_PARTS)))
    indptr = np.zeros(n_docs + 1, np.int64)
    empty_i, empty_f = np.empty(0, np.int64), np.empty(0, np.float64)
    _zbar_parts(False, n_parts, doc_ptr, ndk, indptr, empty_i, empty_f)
    np.cumsum(indptr, out=indptr)
    indices = np.empty(indptr[n_docs], np.int64)
    data = np.empty(indptr[n_docs], np.float64)
    _zbar_parts(True, n_parts, doc_ptr, ndk, indptr, indices, data)
    return indptr, indices, data


def zbar_csr(doc_ptr, ndk) -> sp.csr_matrix:
    """``zbar_d = n_{d,.} / N_d`` of a shard as CSR (D_s, K), int64 indices; empty documents
    are zero rows."""
    ndk = np.asarray(ndk)
    indptr, indices, data = zbar_arrays(np.asarray(doc_ptr, dtype=np.int64), ndk)
    return sp.csr_matrix((data, indices, indptr), shape=ndk.shape)


def csr_products(A, B):
    """``A B^T`` (D, L) for CSR ``A`` (D, P) and ``B`` (L, P), rows on all threads.

    Each output element sums its row's nonzeros in stored order, as scipy's serial product
    does, so the result does not depend on the number of threads
    (:func:`dolda.sampler.linear_predictors.csr_draw_products`)."""
    indptr, indices, data = as_csr_arrays(A)
    right = np.ascontiguousarray(np.asarray(B, dtype=np.float64).T)[None]
    out = np.empty((1, A.shape[0], right.shape[2]))
    csr_draw_products(indptr, indices, data, right, out)
    return out[0]


def covariate_products(X, B):
    """``X B^T`` (D, L) for CSR ``X`` (D, P_x) and ``B`` (L, P_x) (:func:`csr_products`)."""
    return csr_products(X, B)


def regressor_products(X, doc_ptr, ndk, eta, zbar=None, x_products=None):
    """``mu = [X, zbar] eta^T`` (D_s, L) for sparse ``X``.  ``zbar`` (CSR, from
    :func:`zbar_csr`) and ``x_products`` (``X eta_x^T``) are reused when given."""
    n_x = X.shape[1]
    if x_products is None:
        x_products = covariate_products(X, eta[:, :n_x])
    if zbar is None:
        zbar = zbar_csr(doc_ptr, ndk)
    return x_products + csr_products(zbar, eta[:, n_x:])


def design(X, zbar_parts) -> sp.csr_matrix:
    """``U = [X, zbar]`` (D, P_x + K) CSR from the covariates and the shards' zbar, in order."""
    zbar = sp.vstack(zbar_parts, format="csr") if len(zbar_parts) > 1 else zbar_parts[0]
    U = sp.hstack([X, zbar], format="csr")
    U.sort_indices()
    return U


#: Preconditioners :func:`eta_step` knows for ``method="cg"``.
PRECONDITIONERS = ("block", "jacobi")


def block_columns(n_x: int, n_topics: int) -> np.ndarray:
    """The columns of ``U = [X, zbar]`` the CG block preconditioner takes exactly:
    column 0 (the intercept) and the ``n_topics`` topic columns after the ``n_x`` of ``X``."""
    return np.r_[0, np.arange(n_x, n_x + n_topics)].astype(np.int64)


def eta_step(seed: int, iteration: int, probit: probit_blocks.ProbitState, X, zbar_parts,
             a_parts, prior: probit_blocks.ProbitPrior, method: str,
             n_jobs: int, preconditioner: str = "block",
             info: dict | None = None, n_word_columns: int = 0) -> probit_blocks.ProbitState:
    """The global DO-probit block with sparse ``U``: eta by ``method``, then the Horseshoe scales.

    Parameters
    ----------
    X : CSR (D, P_x)              covariates ``[1, x_d]`` (intercept first).
    zbar_parts : list of CSR      every shard's ``zbar_s`` (D_s, K), in shard order.
    a_parts : list of (D_s, L)    every shard's new utilities, in shard order.
    method : {"gibbs", "cg", "bcm", "cholesky"}
        ``"gibbs"``: one blocked-Gibbs scan from the current eta, the dense block then the
        last ``n_word_columns`` columns of ``X`` one by one
        (:mod:`dolda.sampler.word_step`); the others: an independent draw by
        :func:`dolda.sampler.probit_blocks.draw_eta` ("cholesky" factors ``U^T U`` formed from
        sparse ``U``).
    preconditioner : {"block", "jacobi"}
        For ``"cg"``: the exact intercept-and-topics block and row-singleton blocks
        (default), or Jacobi only (the sampler before; kept as the benchmark's peer).  The draw is the same to the solver
        tolerance either way.
    info : dict or None
        Receives :func:`dolda.sampler.probit_blocks.draw_eta`'s ``info`` (CG iterations per class).

    Returns
    -------
    ProbitState without utilities (``a`` stays with the shards).
    """
    if preconditioner not in PRECONDITIONERS:
        raise ValueError(f"preconditioner must be one of {PRECONDITIONERS}, got {preconditioner!r}")
    a = np.concatenate(a_parts) if len(a_parts) > 1 else a_parts[0]
    prec = probit_blocks.prior_precision(prior, probit.lam2, probit.tau2)
    if method == "gibbs":
        from . import word_step

        zbar = (sp.vstack(zbar_parts, format="csr") if len(zbar_parts) > 1
                else zbar_parts[0])
        eta = word_step.draw_blocked(seed, iteration, word_step.cached_word_columns(
            X, n_word_columns), zbar, a, prec, probit.eta, n_jobs)
        return _with_scales(seed, iteration, prior, probit, eta)
    U = design(X, zbar_parts)
    rng_eta = numpy_generator(seed, iteration * 16 + STEP_ETA)
    cg_design = None
    if method == "cg":
        block = (block_columns(X.shape[1], U.shape[1] - X.shape[1])
                 if preconditioner == "block" else None)
        cg_design = gaussian.sparse_design(U, block, singletons=preconditioner == "block")
    eta, step_info = probit_blocks.draw_eta(rng_eta, method, U, None, np.ascontiguousarray(a),
                                            prec, start=probit.eta, design=cg_design,
                                            n_jobs=n_jobs)
    if info is not None:
        info.update(step_info)
    return _with_scales(seed, iteration, prior, probit, eta)


def _with_scales(seed, iteration, prior, probit, eta):
    """The Horseshoe step after the new ``eta``; the state without utilities."""
    rng_shrink = numpy_generator(seed, iteration * 16 + STEP_SHRINK)
    lam2, tau2, nu, xi = probit_blocks.draw_shrinkage(rng_shrink, prior, eta, probit.lam2,
                                                      probit.tau2, probit.nu, probit.xi)
    return probit_blocks.ProbitState(np.empty((0, eta.shape[0])), eta, lam2, tau2, nu, xi)
