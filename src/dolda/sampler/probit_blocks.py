"""Gibbs blocks of the Diagonal Orthant probit regression (paper section 3.1, steps 1-4).

The sampler targets, as DESIGN.md section 2 explains, the product of ``L``
independent one-vs-rest binary probit likelihoods times the prior; the DO
normaliser only enters at prediction.  Given the regressors ``U`` (D x P) one
iteration is

1. ``a``      -- truncated-normal utilities (:func:`dolda.sampler.truncnorm.draw_utilities`);
2. ``eta``    -- ``eta_l ~ N(m_l, Q_l^{-1})`` with the prior *precision* on the
   diagonal, ``Q_l = U^T U + diag(1 / v_l)`` and ``m_l = Q_l^{-1} U^T a_l``
   (the paper prints ``(U^T U + tau^2 Lambda)^{-1}``, which puts the prior
   variance where its inverse belongs);
3. shrinkage -- the Horseshoe scales by the auxiliary inverse-gamma scheme of
   Makalic & Schmidt (2016):

   * ``lambda_{lp}^2 | . ~ IG(1, 1/nu_{lp} + eta_{lp}^2 / (2 tau_l^2))``
   * ``tau_l^2 | .       ~ IG((P_s + 1)/2, 1/xi_l + sum_p eta_{lp}^2 / (2 lambda_{lp}^2))``
   * ``nu_{lp} | .       ~ IG(1, 1 + 1/lambda_{lp}^2)``
   * ``xi_l | .          ~ IG(1, 1 + 1/tau_l^2)``

   where ``P_s`` is the number of shrunk coefficients (the intercept and any
   other unshrunk column keep a N(0, c) prior).  With ``nu ~ IG(1/2, 1)`` and
   ``lambda^2 | nu ~ IG(1/2, 1/nu)`` the marginal of ``lambda`` is C+(0, 1),
   and likewise for ``tau``; the Geweke test in ``tests/`` is the proof.

Each block is a plain function of arrays; :func:`gibbs_step` chains them and
returns a new :class:`ProbitState`.

The eta-step has three exact samplers (:func:`draw_eta`): the dense Cholesky
factorisation of every ``Q_l`` (small ``P``), and for many columns the
Bhattacharya-Chakraborty-Mallick sampler and perturbation-optimisation by
preconditioned conjugate gradients (:mod:`dolda.sampler.gaussian`), whose cost
grows with ``nnz(U)`` instead of ``P^3``.  :func:`choose_eta_sampler` picks one
by shape.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, lapack
from scipy.special import log_ndtr

from . import gaussian, lapack_nogil
from .rng import STEP_ETA, STEP_SHRINK, numpy_generator
from .threads import blas_threads
from .likelihood import do_log_likelihood as _do_log_likelihood
from .truncnorm import draw_utilities

#: Smallest prior variance tau^2 lambda^2 used in the eta precision.  Below it the
#: coefficient is zero to machine precision anyway; the floor keeps Q_l finite.
MIN_PRIOR_VARIANCE = 1e-100

#: Below this many columns a class's Cholesky takes microseconds and a thread
#: pool costs more than it saves (measured: 120 columns, 20 classes, 2 threads
#: took 5.1 ms against 1.9 ms serially), so the classes are solved in turn.
PARALLEL_MIN_COLUMNS = 256

#: The eta samplers :func:`draw_eta` knows.
ETA_SAMPLERS = ("cholesky", "bcm", "cg")
#: The coefficients' priors (``prior`` of DOLDA and DOProbit): the Horseshoe, or normal.
PRIORS = ("horseshoe", "normal")

#: ``eta_sampler="auto"`` keeps the dense Cholesky for a dense ``U`` up to this
#: many columns whatever the number of rows (see :func:`choose_eta_sampler`
#: and ``benchmarks/results/eta_scaling.md``).  DOLDA warns above it.
CHOLESKY_MAX_COLUMNS = 1000

#: ... and for a sparse ``U`` up to this many columns (CG beyond).  Measured on
#: films-like one-hot covariates (D = 10,810, 6 non-zeros per row, L = 20,
#: Horseshoe): Cholesky 2.6x faster than CG at P = 301, CG 2.3x faster at 601
#: and 6.9x at 1,001.
CHOLESKY_MAX_COLUMNS_SPARSE = 500

#: A dense ``U`` too wide for BCM keeps the Cholesky up to this many columns:
#: CG pays O(D P) per iteration there.  Measured at D = 10,810 (20 classes):
#: Cholesky 6.5 s vs CG 31 s at P = 3,001 and 24 s vs 65 s at P = 5,001; from
#: this ratio's growth CG would catch up between P ~ 8,000 (ratio ~ P^2) and
#: ~13,000 (ratio ~ P) -- extrapolated, not measured -- and when P > D CG needs
#: hundreds to thousands of iterations.  The conservative end is kept.
CHOLESKY_MAX_COLUMNS_DENSE = 8000

#: ``"auto"`` picks BCM for a dense ``U`` with more than CHOLESKY_MAX_COLUMNS
#: columns, at most this many rows and at least twice as many columns as rows
#: (measured at P = 5,001: BCM 2.3 s at D = 1,000 and 19 s at D = 2,000 against
#: 22 s for Cholesky and ~200 s for CG, which needs 350-1,600 iterations when
#: P > D).
BCM_MAX_ROWS = 2000


class ProbitPrior(NamedTuple):
    """What the prior says about each of the ``P`` columns of ``U``.

    Attributes
    ----------
    horseshoe : bool
        True for the Horseshoe prior, False for N(0, c) on every coefficient.
    shrunk : bool array (P,)
        Which columns get the Horseshoe (False: N(0, c), e.g. the intercept).
    variance : float
        ``c``, the variance of the normal prior.
    blocks : int array (P,) or None
        None: one global scale ``tau_l`` per class over all shrunk columns.  Otherwise
        the block ``0 .. G-1`` of every column (read on the shrunk columns only; e.g.
        DOLDA's covariates, words, topics): each class has one global scale per block,
        ``tau_{lg}``, each with its own half-Cauchy prior and auxiliary ``xi_{lg}``, so
        thousands of word columns do not set the scale of the K topic columns
        ``tau2`` and ``xi`` are then (L, G).
    slab : float, float array (P,) or None
        None: the Horseshoe as the paper has it.  Otherwise ``s^2``, the variance of a
        Gaussian slab multiplying the Horseshoe on every shrunk column, or per column
        (``inf``: no slab there; e.g. DOLDA's ``slab_blocks``): the joint prior is
        ``p(eta, lambda, tau) ∝ N(eta; 0, tau^2 lambda^2) N(eta; 0, s^2) p(lambda) p(tau)``
        (the "shrunken shoulders" of Nishimura & Suchard 2022, a Gibbs-friendly form of
        the regularised Horseshoe of Piironen & Vehtari 2017): small coefficients are
        shrunk as before, large ones get Gaussian tails of scale ``s``, which bounds the
        drift of a coefficient the data do not pin down (a word seen in a few documents of
        one class).  In the Gibbs sampler only eta's conditional changes (precision
        ``1 / (tau^2 lambda^2) + 1 / s^2``); lambda's and tau's are the Horseshoe's.
    gaussian : (int, float) or None
        ``(g, v)``: the columns of block ``g`` (needs ``blocks``) get the fixed Gaussian
        prior ``N(0, v)`` instead of the Horseshoe (DOLDA's ``word_prior="normal"``): their
        local scales stay ``lambda = 1`` and their block's global scale stays
        ``tau_{lg}^2 = v`` (set once by :func:`fixed_scales` at the chain's start and not
        drawn), so every reader of ``tau`` and ``lambda`` (the eta-steps, the calibration
        map's prior sd) sees that prior unchanged.  The other blocks' scales are drawn as
        before.
    """

    horseshoe: bool
    shrunk: np.ndarray
    variance: float
    blocks: object = None
    slab: object = None
    gaussian: object = None

    @property
    def n_blocks(self) -> int:
        """G, the global scales per class (1 without ``blocks``)."""
        return 1 if self.blocks is None else int(np.max(self.blocks[self.shrunk])) + 1


class ProbitState(NamedTuple):
    """One state of the DO-probit chain.

    Attributes
    ----------
    a : (D, L) latent utilities.
    eta : (L, P) coefficients ``eta_l``.
    lam2 : (L, P) local scales ``lambda_{lp}^2`` (1 where unshrunk).
    tau2 : (L,) global scales ``tau_l^2``; (L, G) with per-block scales
           (:attr:`ProbitPrior.blocks`).
    nu : (L, P) auxiliaries of ``lambda^2``.
    xi : (L,) auxiliaries of ``tau^2``; (L, G) with per-block scales.
    """

    a: np.ndarray
    eta: np.ndarray
    lam2: np.ndarray
    tau2: np.ndarray
    nu: np.ndarray
    xi: np.ndarray


def inverse_gamma(rng: np.random.Generator, shape, scale):
    """``IG(shape, scale)`` draws (density ∝ x^{-shape-1} exp(-scale/x)), elementwise."""
    return scale / rng.standard_gamma(shape, size=np.shape(scale))


def initial_state(n_samples: int, n_classes: int, n_columns: int,
                  n_blocks: int | None = None) -> ProbitState:
    """Start at eta = 0 with unit scales; ``a`` is drawn by the first step.

    ``n_blocks``: None for one global scale per class (``tau2`` (L,)), G for per-block
    scales (``tau2`` (L, G), :attr:`ProbitPrior.blocks`)."""
    scale_shape = (n_classes,) if n_blocks is None else (n_classes, int(n_blocks))
    return ProbitState(
        a=np.zeros((n_samples, n_classes)),
        eta=np.zeros((n_classes, n_columns)),
        lam2=np.ones((n_classes, n_columns)),
        tau2=np.ones(scale_shape),
        nu=np.ones((n_classes, n_columns)),
        xi=np.ones(scale_shape),
    )


def fixed_scales(prior: ProbitPrior, state: ProbitState) -> ProbitState:
    """``state`` with the scales of :attr:`ProbitPrior.gaussian`'s block set to its fixed
    prior (``lambda^2 = 1``, ``tau^2 = v``; the chain's start, before the first eta-step)."""
    if prior.gaussian is None:
        return state
    g, v = prior.gaussian
    lam2, tau2 = state.lam2.copy(), state.tau2.copy()
    lam2[:, np.asarray(prior.blocks) == g] = 1.0
    tau2[:, g] = v
    return state._replace(lam2=lam2, tau2=tau2)


def column_tau2(prior: ProbitPrior, tau2: np.ndarray) -> np.ndarray:
    """The global scale of every column, (L, P) (broadcastable): ``tau_l^2`` or
    ``tau_{l, block(p)}^2``."""
    if prior.blocks is None:
        return tau2[:, None]
    return tau2[:, np.maximum(np.asarray(prior.blocks), 0)]


def prior_precision(prior: ProbitPrior, lam2: np.ndarray, tau2: np.ndarray) -> np.ndarray:
    """Diagonal of the prior precision of every ``eta_l``, shape (L, P)."""
    n_classes, n_columns = lam2.shape
    prec = np.full((n_classes, n_columns), 1.0 / prior.variance)
    if prior.horseshoe:
        var = np.maximum(column_tau2(prior, tau2) * lam2, MIN_PRIOR_VARIANCE)
        prec[:, prior.shrunk] = 1.0 / var[:, prior.shrunk]
        if prior.slab is not None:
            slab_prec = 1.0 / np.asarray(prior.slab, dtype=float)
            prec[:, prior.shrunk] += slab_prec if slab_prec.ndim == 0 else slab_prec[prior.shrunk]
    return prec


def _draw_one_class(gram_f, prec_l, rhs_l, z_l, work, nogil=False):
    """``eta_l`` from the factor of ``Q_l = gram + diag(prec_l)``, factored in place in ``work``.

    ``gram_f`` is the Gram matrix in Fortran order and ``work`` a Fortran-ordered
    (P, P) scratch array, so LAPACK reads and overwrites it without the transposing
    copy (and the clearing of the upper triangle) that ``scipy.linalg.cholesky``
    makes of a C-ordered matrix: the same ``dpotrf``, ``dpotrs`` and ``dtrtrs``
    calls on the same numbers as ``cholesky`` + ``cho_solve`` + ``solve_triangular``,
    hence the same bits (``tests/sampler/test_eta_factor.py``).  With ``nogil`` they are called
    through :mod:`dolda.sampler.lapack_nogil`, without the GIL, so that the threads of
    :func:`draw_coefficients` factor their classes at the same time (scipy's f2py
    wrappers hold it); without, through those wrappers, whose calls cost less (20 classes
    at P = 102: 2.6 ms against 3.7, ``benchmarks/results/eta_threads.md``).  On 20 Newsgroups at P = 1,001
    (L = 20, 2 threads) the eta-step took 0.157 s instead of 0.190 s, at P = 101 0.001 s
    instead of 0.002 s (``benchmarks/results/eta_k1000.md``).
    """
    np.copyto(work, gram_f)
    work.ravel(order="F")[:: work.shape[0] + 1] += prec_l  # a view: ``work`` is F-ordered
    if not nogil:
        chol, info = lapack.dpotrf(work, lower=1, overwrite_a=1, clean=0)
        if info != 0:
            raise LinAlgError(f"Q_l is not positive definite (dpotrf info {info})")
        mean, info = lapack.dpotrs(chol, rhs_l, lower=1)
        if info != 0:
            raise ValueError(f"dpotrs info {info}")
        noise, info = lapack.dtrtrs(chol, z_l, lower=1, trans=1)
        if info != 0:
            raise LinAlgError(f"singular Cholesky factor (dtrtrs info {info})")
        return mean + noise
    info = lapack_nogil.potrf_lower(work)
    if info != 0:
        raise LinAlgError(f"Q_l is not positive definite (dpotrf info {info})")
    return (lapack_nogil.potrs_lower(work, rhs_l)
            + lapack_nogil.trtrs_lower_transposed(work, z_l))


def _draw_classes(gram_f, prec, rhs, normals, classes, out, nogil=False):
    """Rows ``classes`` of the eta-step into ``out``, reusing one P x P scratch array."""
    work = np.empty(gram_f.shape, order="F")
    for l in classes:
        out[l] = _draw_one_class(gram_f, prec[l], rhs[l], normals[l], work, nogil)


def draw_coefficients(gram, rhs, prec, normals, n_jobs: int = 1):
    """The eta-step: ``eta_l ~ N(Q_l^{-1} b_l, Q_l^{-1})``, ``Q_l = gram + diag(prec_l)``.

    Parameters
    ----------
    gram : (P, P) ``U^T U``, computed once per iteration for all classes.
    rhs : (L, P) ``b_l = U^T a_l``.
    prec : (L, P) prior precisions.
    normals : (L, P) standard normal draws (the only randomness).
    n_jobs : int
        Classes are independent and solved on this many threads (LAPACK called
        without the GIL, :mod:`dolda.sampler.lapack_nogil`), class ``l`` on thread
        ``l mod n_jobs``.  The result
        does not depend on it: every class is factored on one BLAS thread.

    Returns
    -------
    eta : (L, P)
        With ``Q_l = C C^T`` (Cholesky), ``eta_l = C^{-T} C^{-1} b_l + C^{-T} z_l``.

    The lower triangle of ``gram`` is read (as ``scipy.linalg.cholesky(lower=True)``
    reads it).  ``gram`` is put in Fortran order once for all classes; each class
    then factors a copy of it in a scratch array its thread reuses.
    """
    n_classes, n_columns = rhs.shape
    gram_f = np.asfortranarray(gram, dtype=np.float64)
    rhs = np.asarray(rhs, dtype=np.float64)
    normals = np.asarray(normals, dtype=np.float64)
    out = np.empty((n_classes, n_columns))
    # classes in turn below PARALLEL_MIN_COLUMNS (a thread pool costs more than it saves)
    n_threads = (1 if n_columns < PARALLEL_MIN_COLUMNS or not lapack_nogil.available()
                 else max(1, min(int(n_jobs), n_classes)))
    # one BLAS thread per class at every size: n_jobs classes at once on n_jobs cores, instead
    # of n_jobs x (BLAS threads) threads fighting for them (measured on 2 cores, P = 1001,
    # L = 20: 0.8 s with the limit, 4-11 s without under load), and a multi-threaded dpotrf
    # rounds differently (OpenBLAS threads it from about 200 columns on when uncapped): the
    # draws must not depend on the thread count.  The cached controller (no scan of the
    # loaded libraries per call) and the calling thread taking the first share of the
    # classes save milliseconds per eta-step.
    with blas_threads(1):
        if n_threads == 1:
            _draw_classes(gram_f, prec, rhs, normals, range(n_classes), out)
        else:
            with ThreadPoolExecutor(max_workers=n_threads - 1) as pool:
                jobs = [pool.submit(_draw_classes, gram_f, prec, rhs, normals,
                                    range(j, n_classes, n_threads), out, True)
                        for j in range(1, n_threads)]
                _draw_classes(gram_f, prec, rhs, normals, range(0, n_classes, n_threads), out,
                              True)
                for job in jobs:
                    job.result()
    return out


def choose_eta_sampler(n_samples: int, n_columns: int, sparse: bool) -> str:
    """The eta sampler ``"auto"`` resolves to, from the shape of ``U`` (D x P).

    Sparse ``U`` (scipy.sparse):

    * ``P <= CHOLESKY_MAX_COLUMNS_SPARSE``: ``"cholesky"`` (dense ``Q_l``, O(P^3) per class);
    * otherwise ``"cg"`` (O(nnz(U)) per CG iteration; BCM's D x D factorisation
      lost to CG on every sparse shape measured).

    Dense ``U``:

    * ``P <= CHOLESKY_MAX_COLUMNS``: ``"cholesky"``;
    * ``D <= BCM_MAX_ROWS`` and ``P >= 2 D``: ``"bcm"`` (O(D^2 P));
    * ``P <= CHOLESKY_MAX_COLUMNS_DENSE``: ``"cholesky"``;
    * otherwise ``"cg"``.

    The thresholds come from ``benchmarks/bench_eta.py``
    (``benchmarks/results/eta_scaling.md``).
    """
    if sparse:
        return "cholesky" if n_columns <= CHOLESKY_MAX_COLUMNS_SPARSE else "cg"
    if n_columns <= CHOLESKY_MAX_COLUMNS:
        return "cholesky"
    if n_samples <= BCM_MAX_ROWS and n_columns >= 2 * n_samples:
        return "bcm"
    if n_columns <= CHOLESKY_MAX_COLUMNS_DENSE:
        return "cholesky"
    return "cg"


def draw_eta(rng, method: str, U, gram, a, prec, start=None, design=None, n_jobs: int = 1):
    """The eta-step with the chosen sampler: ``eta_l ~ N(Q_l^{-1} U^T a_l, Q_l^{-1})``.

    Parameters
    ----------
    rng : numpy.random.Generator
        Source of all standard normals (drawn serially: thread count never matters).
    method : {"cholesky", "bcm", "cg"}
    U : (D, P) ndarray or scipy.sparse matrix
        Regressors.
    gram : (P, P) ndarray or None
        ``U^T U`` (dense); needed by ``"cholesky"`` only.
    a : (D, L) ndarray
        Utilities.
    prec : (L, P) ndarray
        Prior precisions (:func:`prior_precision`).
    start : (L, P) ndarray or None
        The previous eta, the CG warm start.
    design : gaussian.SparseDesign or None
        ``U`` prepared for CG; built from ``U`` when None.
    n_jobs : int
        Threads over classes.

    Returns
    -------
    eta : (L, P) ndarray
    info : dict
        ``{"cg_iterations": (L,) ints}`` for CG, else empty.
    """
    n_classes, n_columns = prec.shape
    n_samples = U.shape[0]
    if method == "cholesky":
        normals = rng.standard_normal((n_classes, n_columns))
        if gram is None:
            gram = U.T @ U
            gram = gram.toarray() if sp.issparse(gram) else gram
        rhs = np.asarray((U.T @ a).T)
        return draw_coefficients(gram, rhs, prec, normals, n_jobs), {}
    if method == "bcm":
        u_normals = rng.standard_normal((n_classes, n_columns))
        delta = rng.standard_normal((n_classes, n_samples))
        return gaussian.draw_bcm(U, a, prec, u_normals, delta, n_jobs), {}
    if method == "cg":
        e2 = rng.standard_normal((n_classes, n_columns))
        e1 = rng.standard_normal((n_classes, n_samples))
        design = gaussian.sparse_design(U) if design is None else design
        eta, iterations = gaussian.draw_pcg(design, a, prec, e1, e2, start)
        return eta, {"cg_iterations": iterations}
    raise ValueError(f"eta sampler must be one of {ETA_SAMPLERS}; got {method!r}")


def draw_shrinkage(rng, prior: ProbitPrior, eta, lam2, tau2, nu, xi):
    """The Horseshoe step: new ``(lam2, tau2, nu, xi)`` given ``eta`` (Makalic & Schmidt 2016)."""
    if not prior.horseshoe:
        return lam2, tau2, nu, xi
    if prior.blocks is not None:
        return _draw_block_shrinkage(rng, prior, eta, lam2, tau2, nu, xi)
    if prior.gaussian is not None:
        raise ValueError("ProbitPrior.gaussian needs blocks")
    s = prior.shrunk
    eta2 = eta[:, s] ** 2
    lam2 = lam2.copy()
    nu = nu.copy()
    new_lam2 = inverse_gamma(rng, 1.0, 1.0 / nu[:, s] + eta2 / (2.0 * tau2[:, None]))
    lam2[:, s] = new_lam2
    n_shrunk = int(s.sum())
    tau2 = inverse_gamma(
        rng, 0.5 * (n_shrunk + 1), 1.0 / xi + (eta2 / (2.0 * new_lam2)).sum(axis=1)
    )
    nu[:, s] = inverse_gamma(rng, 1.0, 1.0 + 1.0 / new_lam2)
    xi = inverse_gamma(rng, 1.0, 1.0 + 1.0 / tau2)
    return lam2, tau2, nu, xi


def _draw_block_shrinkage(rng, prior: ProbitPrior, eta, lam2, tau2, nu, xi):
    """:func:`draw_shrinkage` with one global scale per class and block (same scheme):

    * ``lambda_{lp}^2 | . ~ IG(1, 1/nu_{lp} + eta_{lp}^2 / (2 tau_{l,g(p)}^2))``
    * ``tau_{lg}^2 | .    ~ IG((P_g + 1)/2, 1/xi_{lg} + sum_{p in g} eta_{lp}^2 / (2 lambda_{lp}^2))``
    * ``nu_{lp} | .       ~ IG(1, 1 + 1/lambda_{lp}^2)``,  ``xi_{lg} | . ~ IG(1, 1 + 1/tau_{lg}^2)``

    with ``P_g`` the shrunk columns of block ``g``.  The block of :attr:`ProbitPrior.gaussian`
    is left out: its lambdas keep the 1 :func:`fixed_scales` set, and its tau is held at
    ``v`` (with ``word_prior="both"`` that block is every vocabulary word, most of the
    columns, so nothing is drawn for it).
    """
    s = prior.shrunk
    if prior.gaussian is not None:
        s = s & (np.asarray(prior.blocks) != prior.gaussian[0])
    block = np.asarray(prior.blocks)[s]
    n_blocks = tau2.shape[1]
    member = np.zeros((len(block), n_blocks))
    member[np.arange(len(block)), block] = 1.0
    eta2 = eta[:, s] ** 2
    lam2 = lam2.copy()
    nu = nu.copy()
    new_lam2 = inverse_gamma(rng, 1.0, 1.0 / nu[:, s] + eta2 / (2.0 * tau2[:, block]))
    lam2[:, s] = new_lam2
    shape = 0.5 * (member.sum(axis=0) + 1.0)                        # (G,)
    scale = 1.0 / xi + (eta2 / (2.0 * new_lam2)) @ member             # (L, G)
    tau2 = scale / rng.standard_gamma(np.broadcast_to(shape, scale.shape))
    if prior.gaussian is not None:  # drawn from its prior above (no columns), held at v
        tau2[:, prior.gaussian[0]] = prior.gaussian[1]
    nu[:, s] = inverse_gamma(rng, 1.0, 1.0 + 1.0 / new_lam2)
    xi = inverse_gamma(rng, 1.0, 1.0 + 1.0 / tau2)
    return lam2, tau2, nu, xi


def gibbs_step(seed: int, iteration: int, state: ProbitState, U, gram, y, prior: ProbitPrior,
               n_jobs: int = 1, eta_sampler: str = "cholesky", design=None) -> ProbitState:
    """One full iteration ``a -> eta -> (lambda, tau)`` of the DO-probit chain.

    Parameters
    ----------
    seed, iteration : int
        The chain seed and the iteration number; together they fix every draw.
    state : ProbitState
    U : (D, P) float64 regressors, ndarray or scipy.sparse CSR.
    gram : (P, P) ``U^T U`` (fixed in DOProbit; recomputed each iteration in DOLDA).
        Only the ``"cholesky"`` sampler reads it; None is allowed for the others.
    y : (D,) int class indices.
    prior : ProbitPrior
    n_jobs : int
    eta_sampler : {"cholesky", "bcm", "cg"}
        See :func:`draw_eta`.
    design : gaussian.SparseDesign or None
        ``U`` prepared once for ``"cg"`` (built on the fly when None).
    """
    mu = np.ascontiguousarray(U @ state.eta.T)
    a = draw_utilities(mu, y, seed, iteration, np.empty_like(mu))
    rng_eta = numpy_generator(seed, iteration * 16 + STEP_ETA)
    prec = prior_precision(prior, state.lam2, state.tau2)
    eta, _ = draw_eta(rng_eta, eta_sampler, U, gram, a, prec, start=state.eta, design=design,
                      n_jobs=n_jobs)
    rng_shrink = numpy_generator(seed, iteration * 16 + STEP_SHRINK)
    lam2, tau2, nu, xi = draw_shrinkage(rng_shrink, prior, eta, state.lam2, state.tau2,
                                        state.nu, state.xi)
    return ProbitState(a, eta, lam2, tau2, nu, xi)


def do_log_scores(mu):
    """Log of the unnormalised DO class probabilities.

    ``P(y = l) ∝ F(mu_l) prod_{j != l} F(-mu_j) ∝ F(mu_l) / F(-mu_l)``, so the
    log score is ``log F(mu_l) - log F(-mu_l)`` (the common factor
    ``prod_j F(-mu_j)`` cancels in the normalisation).  Shape as ``mu``.
    """
    return log_ndtr(mu) - log_ndtr(-mu)


def do_probabilities(mu):
    """DO class probabilities (DESIGN.md section 1) from linear predictors ``mu`` (..., L)."""
    s = do_log_scores(mu)
    s -= s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return p


def do_log_likelihood(mu, y) -> float:
    """DO probit log-likelihood ``sum_d log P(y_d | mu_d)`` (paper section 3.3)."""
    return float(_do_log_likelihood(np.ascontiguousarray(mu, dtype=np.float64),
                                    np.ascontiguousarray(y, dtype=np.int64)))
