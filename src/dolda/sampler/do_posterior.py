"""The DO likelihood itself: an exact eta-step for ``DOProbit(likelihood="do")``.

The Gibbs blocks of :mod:`dolda.sampler.probit_blocks` target the product of ``L`` one-vs-rest
binary probits (DESIGN.md section 2): the DO normaliser
``Z(mu) = sum_s F(mu_s) prod_{j != s} F(-mu_j)`` never enters.  This module samples
the posterior of the Diagonal Orthant model proper,

    p(eta | y) ∝ prod_l N(eta_l; 0, diag(1 / prec_l)) prod_d P(y_d | mu_d),
    P(y = l | mu) = F(mu_l) prod_{j != l} F(-mu_j) / Z(mu) = exp(s_l - logsumexp(s)),
    s_l = g(mu_l) = log F(mu_l) - log F(-mu_l),                     mu_d = eta u_d,

by Metropolis-adjusted Langevin moves (MALA) preconditioned by a fixed metric: ``M = I +
diag(prec)``, with ``I`` the Fisher information of the likelihood at the posterior mode
under the chain's first prior precisions (found once per chain by Newton's method, where
the chain starts) and ``prec`` the current prior precisions.  A move proposes
``N(eta + eps^2/2 M^{-1} grad log pi(eta), eps^2 M^{-1})`` and is accepted by the usual
ratio with the reverse move's density.  ``M`` depends on the data and the prior only,
never on ``eta``, so the step is exact whatever the metric's quality, which sets only the
acceptance rate.

Two other kernels were tried and left (``docs/CALIBRATION.md``, "The DO likelihood"):
independence Metropolis-Hastings from the Laplace approximation at the mode accepted 9-41%
with 45 coefficients but 0.4% with 420, and stalled under the Horseshoe (the common shift
of the intercepts is weakly identified and the posterior bends along it); a
simplified-manifold MALA with the metric taken at every point worked under the Horseshoe
but rebuilt an ``O(D (L P)^2)`` information matrix for every move.

The data augmentation that works for the one-vs-rest probits does not carry over: the
normaliser couples the classes, and augmenting by the rejected draws of the DO model's
rejection sampler (Rao, Lin & Dunson 2016) is exact but mixed far too slowly on a strong
signal (measured: mean 30 rejected draws per row, test log loss 40-65% above the truth
after 600 iterations, where this sampler is 6-7%).

Derivatives, per row (``p = softmax(s)``, ``e`` the one-hot label, ``F``/``f`` the
normal CDF/density)::

    g'(x)  = f(x) / (F(x) F(-x))
    g''(x) = -g'(x) (x + g'(x) (F(-x) - F(x)))
    d log P / d mu_l          = g'_l (e_l - p_l)
    Fisher information  W_d   = diag(g'^2 p) - (g' p)(g' p)^T            (PSD)
    observed information      = W_d - diag(g'' (e - p))

and in ``eta`` the information is ``sum_d W_d (x) u_d u_d^T`` plus the prior precisions.
Newton uses the observed information when it is positive definite and the Fisher
information otherwise (the log-likelihood is not concave: ``g`` is convex for positive
arguments).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cholesky, solve_triangular
from scipy.special import log_ndtr, ndtr

#: ``likelihood="do"`` builds an (L P) x (L P) information matrix once per chain
#: (O(D (L P)^2), Newton needs several) and factorises it for every new set of prior
#: precisions (every iteration under the Horseshoe, O((L P)^3)): beyond this many
#: coefficients (classes x columns) the estimator refuses.
MAX_COEFFICIENTS = 2000

#: Metropolis-adjusted Langevin moves per iteration (:func:`mala_eta_step`).  Each costs
#: one gradient of the log posterior (O(D L P)) and two triangular solves (O((L P)^2)).
MALA_STEPS = 4

#: The moves' step size is ``STEP_SCALE (L P)^(-1/6)`` in the metric's units (the MALA
#: scaling of Roberts & Rosenthal 1998).  Measured acceptance 0.67-0.81 with 45
#: coefficients (simulated regimes, both priors) and 0.54 with 420 (20 Newsgroups topic
#: proportions, 20 classes); 1.8 accepted nothing there.
STEP_SCALE = 1.2

#: Newton stops when the predicted increase of the log posterior (half the Newton
#: decrement squared) falls below this, relative to ``1 + |log posterior|``.
NEWTON_TOL = 1e-12
NEWTON_MAX_ITER = 200

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


def _logsumexp(s, axis=-1, keepdims=False):
    """``log sum exp(s)`` along ``axis`` for finite ``s`` (the DO log scores always are).
    scipy's ``logsumexp`` computes the same but spends ~0.3 ms a call on its array-API
    dispatch, most of a Newton step or a Langevin move at these sizes."""
    top = np.max(s, axis=axis, keepdims=True)
    out = top + np.log(np.sum(np.exp(s - top), axis=axis, keepdims=True))
    return out if keepdims else np.squeeze(out, axis=axis)


class DoTerms(NamedTuple):
    """The DO log-likelihood of rows ``mu`` (D, L) with labels ``y`` and its derivatives."""
    loglik: float        # sum_d log P(y_d | mu_d)
    grad: np.ndarray     # (D, L) d loglik / d mu
    g1: np.ndarray       # (D, L) g'(mu)
    g2: np.ndarray       # (D, L) g''(mu)
    p: np.ndarray        # (D, L) P(y = l | mu_d)
    onehot: np.ndarray   # (D, L) e


def do_row_log_likelihood(mu, y):
    """``log P(y_d | mu_d)`` (..., D) under the DO model, for ``mu`` (..., D, L): the DO
    class scores (:func:`dolda.sampler.probit_blocks.do_log_scores`) normalised."""
    from .probit_blocks import do_log_scores

    s = do_log_scores(mu)
    y_index = np.broadcast_to(np.asarray(y)[:, None], s.shape[:-1] + (1,))
    return np.take_along_axis(s, y_index, axis=-1)[..., 0] - _logsumexp(s, axis=-1)


def do_terms(mu, y) -> DoTerms:
    """:class:`DoTerms` of linear predictors ``mu`` (D, L) and class columns ``y`` (D,)."""
    log_pos, log_neg = log_ndtr(mu), log_ndtr(-mu)
    s = log_pos - log_neg
    lse = _logsumexp(s, axis=1, keepdims=True)
    p = np.exp(s - lse)
    rows = np.arange(len(y))
    onehot = np.zeros_like(mu)
    onehot[rows, y] = 1.0
    log_f = -0.5 * mu * mu - _LOG_SQRT_2PI
    g1 = np.exp(log_f - log_pos) + np.exp(log_f - log_neg)   # f/F(x) + f/F(-x)
    g2 = -g1 * (mu + g1 * (ndtr(-mu) - ndtr(mu)))
    loglik = float((s[rows, y] - lse[:, 0]).sum())
    return DoTerms(loglik, g1 * (onehot - p), g1, g2, p, onehot)


def log_posterior(eta, U, y, prec) -> float:
    """``sum_d log P(y_d | U_d eta^T) - sum prec eta^2 / 2`` (up to a constant)."""
    mu = np.asarray(U @ eta.T)
    return float(do_row_log_likelihood(mu, y).sum() - 0.5 * np.sum(prec * eta * eta))


def _weighted_gram(U, w):
    """``U^T diag(w) U`` (P, P) dense, for dense or sparse ``U``."""
    if sp.issparse(U):
        return np.asarray((U.T @ U.multiply(w[:, None])).todense())
    return (U * w[:, None]).T @ U


def _fisher(U, terms: DoTerms):
    """Fisher information of the likelihood in ``eta`` (row-major ``(l, p)``), (LP, LP)."""
    n_classes = terms.p.shape[1]
    n_columns = U.shape[1]
    gp = terms.g1 * terms.p
    info = np.empty((n_classes * n_columns, n_classes * n_columns))
    for l in range(n_classes):
        rows = slice(l * n_columns, (l + 1) * n_columns)
        for j in range(l, n_classes):
            w = -gp[:, l] * gp[:, j]
            if j == l:
                w = w + terms.g1[:, l] * gp[:, l]
            block = _weighted_gram(U, w)
            cols = slice(j * n_columns, (j + 1) * n_columns)
            info[rows, cols] = block
            if j != l:
                info[cols, rows] = block.T
    return info


def _add_observed(info, U, terms: DoTerms):
    """Add to ``info`` (in place) what the observed information has beyond the Fisher
    one: the class-diagonal blocks ``U^T diag(-g'' (e - p)) U``."""
    n_columns = U.shape[1]
    extra = -terms.g2 * (terms.onehot - terms.p)
    for l in range(terms.p.shape[1]):
        at = slice(l * n_columns, (l + 1) * n_columns)
        info[at, at] += _weighted_gram(U, extra[:, l])
    return info


def information(U, terms: DoTerms, prec, observed=True):
    """Negative Hessian of the log posterior in ``eta`` (row-major ``(l, p)``), (LP, LP).

    ``observed=False`` gives the Fisher information (positive semi-definite) plus the
    prior precisions.
    """
    info = _fisher(U, terms)
    if observed:
        _add_observed(info, U, terms)
    info[np.diag_indices_from(info)] += np.ravel(prec)
    return info


def _factor(U, terms, prec):
    """Lower Cholesky factor of the observed information, or of the Fisher information
    where the observed one is not positive definite (the Fisher blocks built once)."""
    fisher = _fisher(U, terms)
    fisher[np.diag_indices_from(fisher)] += np.ravel(prec)
    try:
        return cholesky(_add_observed(fisher.copy(), U, terms), lower=True,
                        check_finite=False)
    except LinAlgError:
        return cholesky(fisher, lower=True, check_finite=False)


def _solve(chol, v):
    """``(C C^T)^{-1} v`` for a lower Cholesky factor ``C``."""
    return solve_triangular(chol, solve_triangular(chol, v, lower=True, check_finite=False),
                            lower=True, trans="T", check_finite=False)


def posterior_mode(U, y, prec, start):
    """Mode of the DO log posterior given the prior precisions ``prec`` (L, P).

    Damped Newton from ``start`` (L, P), to :data:`NEWTON_TOL`.  Returns
    ``(mode, iterations)``.  Raises FloatingPointError when it does not converge in
    :data:`NEWTON_MAX_ITER` steps (the posterior is proper, so this means data the
    model cannot fit, e.g. a separable class under a very weak prior).
    """
    eta = np.array(start, dtype=np.float64)
    n_classes, n_columns = eta.shape
    f = log_posterior(eta, U, y, prec)
    for it in range(1, NEWTON_MAX_ITER + 1):
        terms = do_terms(np.asarray(U @ eta.T), y)
        grad = np.asarray(terms.grad.T @ U) - prec * eta
        chol = _factor(U, terms, prec)
        step = _solve(chol, grad.ravel())
        gain = 0.5 * float(grad.ravel() @ step)
        if gain <= NEWTON_TOL * (1.0 + abs(f)):
            return eta, it
        step = step.reshape(n_classes, n_columns)
        t = 1.0
        while True:
            new = eta + t * step
            f_new = log_posterior(new, U, y, prec)
            if f_new >= f:
                break
            t *= 0.5
            if t < 1e-10:  # no step length helps: as close to the mode as rounding allows
                return eta, it
        eta, f = new, f_new
    raise FloatingPointError(f"the DO posterior's mode was not found in {NEWTON_MAX_ITER} "
                             "Newton steps")


class Reference(NamedTuple):
    """Where the metric of the Langevin moves is taken, once per chain."""
    mode: np.ndarray   # (L, P) the posterior mode under the chain's first prior precisions
    info: np.ndarray   # (LP, LP) Fisher information of the likelihood alone there (PSD)


def reference_point(U, y, prec, start) -> Reference:
    """:class:`Reference` at the mode for prior precisions ``prec``, Newton from ``start``."""
    mode, _ = posterior_mode(U, y, prec, start)
    terms = do_terms(np.asarray(U @ mode.T), y)
    return Reference(mode, information(U, terms, np.zeros_like(prec), observed=False))


class Metric(NamedTuple):
    """``M = info + diag(prec)``, the preconditioner of the moves, and its factor."""
    chol: np.ndarray   # (LP, LP) lower Cholesky factor of M
    prec: np.ndarray   # (L, P) the prior precisions it was built for


def metric(reference: Reference, prec) -> Metric:
    """:class:`Metric` for this iteration's prior precisions."""
    m = reference.info.copy()
    m[np.diag_indices_from(m)] += np.ravel(prec)
    return Metric(cholesky(m, lower=True, check_finite=False), np.array(prec, copy=True))


def step_size(n_coefficients: int) -> float:
    """``STEP_SCALE (L P)^(-1/6)``."""
    return STEP_SCALE * n_coefficients ** (-1.0 / 6.0)


class _Point(NamedTuple):
    eta: np.ndarray
    log_post: float
    mean: np.ndarray   # eta + eps^2 / 2 M^{-1} grad: where the move from eta is centred


def _point(U, y, prec, eta, met: Metric, eps) -> _Point:
    terms = do_terms(np.asarray(U @ eta.T), y)
    grad = np.asarray(terms.grad.T @ U) - prec * eta
    drift = _solve(met.chol, grad.ravel()).reshape(eta.shape)
    log_post = terms.loglik - 0.5 * float(np.sum(prec * eta * eta))
    return _Point(eta, log_post, eta + 0.5 * eps * eps * drift)


def move_log_density(met: Metric, point: _Point, x, eps) -> float:
    """``log q(x | point)`` of a move, up to a constant (the metric does not depend on the
    point, so its determinant cancels in the ratio)."""
    v = met.chol.T @ (x - point.mean).ravel() / eps
    return -0.5 * float(v @ v)


def mala_eta_step(rng, U, y, prec, eta, met: Metric, n_steps=MALA_STEPS):
    """``n_steps`` Metropolis-adjusted Langevin moves of ``eta`` targeting the DO posterior.

    Proposal ``N(eta + eps^2/2 M^{-1} grad log pi(eta), eps^2 M^{-1})`` with the fixed
    metric ``met`` (a function of the data and the prior precisions, never of ``eta``),
    accepted with ``pi(new) q(eta | new) / (pi(eta) q(new | eta))``.

    Returns ``(eta, accepted)``.  Draws per move: ``P L`` normals, then one uniform.
    """
    eps = step_size(eta.size)
    here = _point(U, y, prec, eta, met, eps)
    accepted = 0
    for _ in range(n_steps):
        z = rng.standard_normal(eta.size)
        new = here.mean + eps * solve_triangular(met.chol, z, lower=True, trans="T",
                                                 check_finite=False).reshape(eta.shape)
        there = _point(U, y, prec, new, met, eps)
        log_ratio = (there.log_post - here.log_post
                     + move_log_density(met, there, here.eta, eps)
                     - move_log_density(met, here, new, eps))
        if np.log(rng.random()) < log_ratio:
            here = there
            accepted += 1
    return here.eta, accepted


class Cache(NamedTuple):
    """What :func:`do_step` keeps between iterations."""
    reference: Reference
    metric: Metric


def do_step(seed: int, iteration: int, state, U, y, prior, cache: Cache | None):
    """One iteration ``eta -> (lambda, tau)`` of the chain on the DO likelihood.

    Parameters
    ----------
    seed, iteration : int
        Fix every draw, as in :func:`dolda.sampler.probit_blocks.gibbs_step`.
    state : dolda.sampler.probit_blocks.ProbitState
        ``a`` is not used (no augmentation) and is passed through.
    U, y, prior
        As for :func:`dolda.sampler.probit_blocks.gibbs_step`.
    cache : Cache or None
        None at the first iteration: the reference point is then the posterior mode
        under the state's prior precisions, and the chain starts there.  The metric is
        refactored whenever the prior precisions change (every iteration under the
        Horseshoe, never under the normal prior).

    Returns
    -------
    (state, cache, accepted)
    """
    from .probit_blocks import ProbitState, draw_shrinkage, prior_precision
    from .rng import STEP_ETA, STEP_SHRINK, numpy_generator

    prec = prior_precision(prior, state.lam2, state.tau2)
    eta = state.eta
    if cache is None:
        reference = reference_point(U, y, prec, state.eta)
        cache = Cache(reference, metric(reference, prec))
        eta = reference.mode
    elif not np.array_equal(cache.metric.prec, prec):
        cache = Cache(cache.reference, metric(cache.reference, prec))
    rng_eta = numpy_generator(seed, iteration * 16 + STEP_ETA)
    eta, accepted = mala_eta_step(rng_eta, U, y, prec, eta, cache.metric)
    rng_shrink = numpy_generator(seed, iteration * 16 + STEP_SHRINK)
    lam2, tau2, nu, xi = draw_shrinkage(rng_shrink, prior, eta, state.lam2, state.tau2,
                                        state.nu, state.xi)
    return ProbitState(state.a, eta, lam2, tau2, nu, xi), cache, accepted
