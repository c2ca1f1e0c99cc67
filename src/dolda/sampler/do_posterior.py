"""The DO likelihood itself: an exact eta-step for ``DOProbit(likelihood="do")``.

The Gibbs blocks of :mod:`dolda.sampler.probit` target the product of ``L`` one-vs-rest
binary probits (DESIGN.md section 2): the DO normaliser
``Z(mu) = sum_s F(mu_s) prod_{j != s} F(-mu_j)`` never enters.  This module samples
the posterior of the Diagonal Orthant model proper,

    p(eta | y) ∝ prod_l N(eta_l; 0, diag(1 / prec_l)) prod_d P(y_d | mu_d),
    P(y = l | mu) = F(mu_l) prod_{j != l} F(-mu_j) / Z(mu) = exp(s_l - logsumexp(s)),
    s_l = g(mu_l) = log F(mu_l) - log F(-mu_l),                     mu_d = eta u_d,

by independence Metropolis-Hastings from its Laplace approximation: the proposal is
``N(m, H^{-1})`` with ``m`` the mode of the log posterior given the prior precisions
(Newton's method to convergence) and ``H`` the negative Hessian there.  The proposal
depends on the data and the prior precisions only, never on the current ``eta``, so the
accept/reject ratio ``[pi(new) q(old)] / [pi(old) q(new)]`` makes the step exact whatever
the quality of the approximation (which only sets the acceptance rate).

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
arguments).  The cost of one information matrix is ``O(D (L P)^2)``, hence
:data:`MAX_COEFFICIENTS`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError, cholesky, solve_triangular
from scipy.special import log_ndtr, logsumexp, ndtr

#: ``likelihood="do"`` builds an (L P) x (L P) information matrix and its Cholesky
#: factor for every new set of prior precisions: beyond this many coefficients
#: (classes x columns) that is minutes per iteration, and the estimator refuses.
MAX_COEFFICIENTS = 2000

#: Independence Metropolis-Hastings proposals per iteration.  Each costs one evaluation
#: of the log posterior (O(D L)); measured acceptance 0.1-0.4 per proposal on the
#: simulated regimes of ``experiments/calibration.py``, so four make a move likely.
MH_STEPS = 4

#: Newton stops when the predicted increase of the log posterior (half the Newton
#: decrement squared) falls below this, relative to ``1 + |log posterior|``.
NEWTON_TOL = 1e-12
NEWTON_MAX_ITER = 200

_LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


class DoTerms(NamedTuple):
    """The DO log-likelihood of rows ``mu`` (D, L) with labels ``y`` and its derivatives."""
    loglik: float        # sum_d log P(y_d | mu_d)
    grad: np.ndarray     # (D, L) d loglik / d mu
    g1: np.ndarray       # (D, L) g'(mu)
    g2: np.ndarray       # (D, L) g''(mu)
    p: np.ndarray        # (D, L) P(y = l | mu_d)
    onehot: np.ndarray   # (D, L) e


def do_row_log_likelihood(mu, y):
    """``log P(y_d | mu_d)`` (D,) under the DO model."""
    s = log_ndtr(mu) - log_ndtr(-mu)
    return s[np.arange(len(y)), y] - logsumexp(s, axis=1)


def do_terms(mu, y) -> DoTerms:
    """:class:`DoTerms` of linear predictors ``mu`` (D, L) and class columns ``y`` (D,)."""
    log_pos, log_neg = log_ndtr(mu), log_ndtr(-mu)
    s = log_pos - log_neg
    lse = logsumexp(s, axis=1, keepdims=True)
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


def information(U, terms: DoTerms, prec, observed=True):
    """Negative Hessian of the log posterior in ``eta`` (row-major ``(l, p)``), (LP, LP).

    ``observed=False`` gives the Fisher information (positive semi-definite) plus the
    prior precisions.
    """
    n_classes = terms.p.shape[1]
    n_columns = U.shape[1]
    gp = terms.g1 * terms.p
    diag = terms.g1 * gp
    if observed:
        diag = diag - terms.g2 * (terms.onehot - terms.p)
    info = np.empty((n_classes * n_columns, n_classes * n_columns))
    for l in range(n_classes):
        rows = slice(l * n_columns, (l + 1) * n_columns)
        for j in range(l, n_classes):
            w = -gp[:, l] * gp[:, j]
            if j == l:
                w = w + diag[:, l]
            block = _weighted_gram(U, w)
            cols = slice(j * n_columns, (j + 1) * n_columns)
            info[rows, cols] = block
            if j != l:
                info[cols, rows] = block.T
    info[np.diag_indices_from(info)] += np.ravel(prec)
    return info


def _factor(U, terms, prec):
    """Lower Cholesky factor of the observed information, or of the Fisher information
    where the observed one is not positive definite."""
    try:
        return cholesky(information(U, terms, prec, observed=True), lower=True,
                        check_finite=False)
    except LinAlgError:
        return cholesky(information(U, terms, prec, observed=False), lower=True,
                        check_finite=False)


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
            if f_new >= f or t < 1e-10:
                break
            t *= 0.5
        eta, f = new, f_new
    raise FloatingPointError(f"the DO posterior's mode was not found in {NEWTON_MAX_ITER} "
                             "Newton steps")


class Proposal(NamedTuple):
    """The Laplace approximation ``N(mode, (C C^T)^{-1})`` used as proposal."""
    mode: np.ndarray   # (L, P)
    chol: np.ndarray   # (LP, LP) lower Cholesky factor of the information at the mode
    prec: np.ndarray   # (L, P) the prior precisions it was built for


def laplace_proposal(U, y, prec, start) -> Proposal:
    """:class:`Proposal` for prior precisions ``prec``, Newton started at ``start``."""
    mode, _ = posterior_mode(U, y, prec, start)
    terms = do_terms(np.asarray(U @ mode.T), y)
    return Proposal(mode, _factor(U, terms, prec), np.array(prec, copy=True))


def proposal_log_density(proposal: Proposal, eta) -> float:
    """``log q(eta)`` up to the constant, which cancels in the MH ratio."""
    v = proposal.chol.T @ (eta - proposal.mode).ravel()
    return -0.5 * float(v @ v)


def draw_proposal(rng, proposal: Proposal):
    """One draw ``mode + C^{-T} z`` from the proposal."""
    z = rng.standard_normal(proposal.mode.size)
    return proposal.mode + solve_triangular(proposal.chol, z, lower=True, trans="T",
                                            check_finite=False).reshape(proposal.mode.shape)


def mh_eta_step(rng, U, y, prec, eta, proposal: Proposal, n_steps=MH_STEPS):
    """``n_steps`` independence MH moves of ``eta`` targeting the DO posterior.

    Returns ``(eta, accepted)``.  Draws per proposal: ``P L`` normals, then one uniform.
    """
    f_old = log_posterior(eta, U, y, prec)
    q_old = proposal_log_density(proposal, eta)
    accepted = 0
    for _ in range(n_steps):
        new = draw_proposal(rng, proposal)
        f_new = log_posterior(new, U, y, prec)
        q_new = proposal_log_density(proposal, new)
        if np.log(rng.random()) < (f_new - f_old) - (q_new - q_old):
            eta, f_old, q_old = new, f_new, q_new
            accepted += 1
    return eta, accepted


#: Under the Horseshoe the conditional posterior of eta given the scales bends along the
#: weakly identified common shift of the intercepts, and the independence proposal alone
#: stalled (0.2% accepted).  Each iteration then adds this many simplified-manifold MALA
#: moves (Girolami & Calderhead 2011) with the local information as metric.
LOCAL_STEPS = 4

#: Their step size ``eps``: proposal ``N(eta + eps^2/2 H^{-1} g, eps^2 H^{-1})`` at the
#: current ``eta``.  Measured acceptance 0.40-0.46 at 0.5 and 0.22-0.23 at 0.8 (45
#: coefficients; multinomial-logit and DO labels).
LOCAL_STEP_SIZE = 0.5


class LocalPoint(NamedTuple):
    """The log posterior at ``eta`` and the smMALA proposal from it."""
    eta: np.ndarray
    log_post: float
    mean: np.ndarray   # (L, P) eta + eps^2 / 2 H^{-1} g
    chol: np.ndarray   # (LP, LP) lower Cholesky factor of H at eta


def local_point(U, y, prec, eta, step_size=LOCAL_STEP_SIZE) -> LocalPoint:
    """:class:`LocalPoint` at ``eta`` (observed information, Fisher where not PD)."""
    terms = do_terms(np.asarray(U @ eta.T), y)
    grad = np.asarray(terms.grad.T @ U) - prec * eta
    chol = _factor(U, terms, prec)
    drift = _solve(chol, grad.ravel()).reshape(eta.shape)
    log_post = terms.loglik - 0.5 * float(np.sum(prec * eta * eta))
    return LocalPoint(eta, log_post, eta + 0.5 * step_size ** 2 * drift, chol)


def local_log_density(point: LocalPoint, x, step_size=LOCAL_STEP_SIZE) -> float:
    """``log q(x | point)`` of the smMALA proposal, normalising constant included (it
    depends on the point's metric, so it does not cancel)."""
    v = point.chol.T @ (x - point.mean).ravel() / step_size
    return -0.5 * float(v @ v) + float(np.log(np.diag(point.chol)).sum())


def local_eta_step(rng, U, y, prec, eta, n_steps=LOCAL_STEPS, step_size=LOCAL_STEP_SIZE):
    """``n_steps`` simplified-manifold MALA moves of ``eta`` targeting the DO posterior.

    Returns ``(eta, accepted)``.  Draws per move: ``P L`` normals, then one uniform.
    """
    here = local_point(U, y, prec, eta, step_size)
    accepted = 0
    for _ in range(n_steps):
        z = rng.standard_normal(eta.size)
        new = here.mean + step_size * solve_triangular(
            here.chol, z, lower=True, trans="T", check_finite=False).reshape(eta.shape)
        there = local_point(U, y, prec, new, step_size)
        log_ratio = (there.log_post - here.log_post
                     + local_log_density(there, here.eta, step_size)
                     - local_log_density(here, new, step_size))
        if np.log(rng.random()) < log_ratio:
            here = there
            accepted += 1
    return here.eta, accepted


def moves_per_iteration(horseshoe: bool) -> int:
    """Metropolis-Hastings moves :func:`do_step` proposes per iteration."""
    return MH_STEPS + (LOCAL_STEPS if horseshoe else 0)


def do_step(seed: int, iteration: int, state, U, y, prior, proposal: Proposal | None):
    """One iteration ``eta -> (lambda, tau)`` of the chain on the DO likelihood.

    Parameters
    ----------
    seed, iteration : int
        Fix every draw, as in :func:`dolda.sampler.probit.gibbs_step`.
    state : dolda.sampler.probit.ProbitState
        ``a`` is not used (no augmentation) and is passed through.
    U, y, prior
        As for :func:`dolda.sampler.probit.gibbs_step`.
    proposal : Proposal or None
        The previous iteration's; rebuilt whenever the prior precisions changed
        (every iteration under the Horseshoe, once under the normal prior), Newton
        started from its mode.  None at the first iteration, where the chain starts at
        the mode.

    Under the Horseshoe, :data:`LOCAL_STEPS` smMALA moves follow the independence
    moves (same random stream, after them).

    Returns
    -------
    (state, proposal, accepted)
        ``accepted`` counts the accepted moves of both kinds (:func:`moves_per_iteration`).
    """
    from .probit import ProbitState, draw_shrinkage, prior_precision
    from .rng import STEP_ETA, STEP_SHRINK, numpy_generator

    prec = prior_precision(prior, state.lam2, state.tau2)
    eta = state.eta
    if proposal is None or not np.array_equal(proposal.prec, prec):
        start = state.eta if proposal is None else proposal.mode
        proposal = laplace_proposal(U, y, prec, start)
        if iteration == 0:
            eta = proposal.mode
    rng_eta = numpy_generator(seed, iteration * 16 + STEP_ETA)
    eta, accepted = mh_eta_step(rng_eta, U, y, prec, eta, proposal)
    if prior.horseshoe:
        eta, moved = local_eta_step(rng_eta, U, y, prec, eta)
        accepted += moved
    rng_shrink = numpy_generator(seed, iteration * 16 + STEP_SHRINK)
    lam2, tau2, nu, xi = draw_shrinkage(rng_shrink, prior, eta, state.lam2, state.tau2,
                                        state.nu, state.xi)
    return ProbitState(state.a, eta, lam2, tau2, nu, xi), proposal, accepted
