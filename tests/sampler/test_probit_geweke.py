"""Geweke (2004) joint-distribution test of the DO-probit eta / shrinkage blocks.

As DESIGN.md section 2 explains, the eta/tau/lambda blocks see the data only
through the utilities ``a``, with ``a | eta ~ N(U eta, I)``.  The
successive-conditional simulator alternates ``a ~ p(a | theta)`` with one
Gibbs update of ``theta = (eta, lambda, tau)`` given ``a``.  If the update
leaves the posterior invariant, a chain started from an exact prior draw is
distributed as the prior after *every* step.

Rather than one long chain (whose batch-means error bars are unreliable for
the Horseshoe's Cauchy tails, which a Gibbs chain visits slowly) we run
``M`` independent chains side by side, ``T`` steps each, starting from
independent prior draws (the marginal-conditional simulator).  The chains are
the "classes" of one problem: classes are independent in the sampler, so the
library's own blocks update all chains at once.  At step ``T`` the chains'
frequencies of ``eta``, ``log tau``, ``log lambda`` falling below their prior
quantiles are compared with the exact prior probabilities; the draws are
independent, so the standard error is binomial.  Tolerance: |z| < 4.5 for
every test function (30 of them for the Horseshoe, so a correct sampler fails
with probability < 1e-3).  The same statistic on the paper's printed eta
covariance (prior variance where the precision belongs) exceeds 8.
"""

import numpy as np
import pytest

from dolda.sampler import probit_blocks as gibbs

from _geweke import N_STEPS, TOL, geweke_z as _geweke_z


def _problem():
    rng = np.random.default_rng(20260101)
    n = 12
    U = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    shrunk = np.array([False, True, True])
    return U, shrunk


def geweke_z(horseshoe, seed=7, slip=False, n_steps=N_STEPS):
    """z-scores of chain vs exact prior frequencies, one per test function."""
    U, shrunk = _problem()
    gram = U.T @ U

    def draw(rng, eta, a, prec):
        if slip:  # the paper's printed covariance: prior variance in place of precision
            prec = np.where(shrunk, 1.0 / prec, prec)
        return gibbs.draw_coefficients(gram, (U.T @ a).T, prec,
                                       rng.standard_normal(eta.shape), n_jobs=2)

    return _geweke_z(U, shrunk, horseshoe, draw, seed, n_steps)


@pytest.mark.slow
@pytest.mark.parametrize("horseshoe", [True, False], ids=["horseshoe", "normal"])
def test_geweke_joint_distribution(horseshoe):
    z = geweke_z(horseshoe)
    assert len(z) == (30 if horseshoe else 15)
    worst = np.max(np.abs(z))
    assert worst < TOL, f"Geweke test failed: max |z| = {worst:.2f} over {len(z)} functions"


@pytest.mark.slow
def test_geweke_detects_the_printed_covariance_slip():
    z = geweke_z(True, slip=True, n_steps=5)
    assert np.max(np.abs(z)) > 8.0, "the Geweke test lacks power against a wrong eta covariance"


# ------------------------------------------------------------ per-block global scales
def _block_problem():
    """U = [1, 2 covariates, 3 "words", 2 "topics"]: three blocks of shrunk columns."""
    rng = np.random.default_rng(20260103)
    n = 12
    U = np.column_stack([np.ones(n), rng.normal(size=(n, 2)),
                         np.log1p(rng.poisson(0.8, (n, 3))), rng.dirichlet(np.ones(2), n)])
    shrunk = np.r_[False, np.ones(7, bool)]
    blocks = np.array([-1, 0, 0, 1, 1, 1, 2, 2])
    return U, shrunk, blocks


#: ``ProbitPrior.gaussian`` of the block tests: the "words" block under a fixed N(0, 0.7).
GAUSSIAN = (1, 0.7)


def block_geweke_z(seed=13, n_steps=N_STEPS, slip=False, gaussian=None):
    """As :func:`_geweke.geweke_z`, with a global scale per class and block: the test
    functions are eta (every column), every block's tau and every shrunk lambda.

    ``gaussian``: :attr:`ProbitPrior.gaussian` (block ``g`` under the fixed ``N(0, v)``);
    that block's tau and lambdas are then constants, not test functions.  Its slips:
    ``"free_tau"``, the block's tau drawn as a Horseshoe scale after the start;
    ``"free_lambda"``, its lambdas drawn (tau kept at ``v``)."""
    from _geweke import N_CHAINS, QUANTILES, VARIANCE, indicators

    U, shrunk, blocks = _block_problem()
    prior = gibbs.ProbitPrior(True, shrunk, VARIANCE, blocks, gaussian=gaussian)
    n_blocks = prior.n_blocks
    fixed = np.zeros(len(blocks), bool) if gaussian is None else blocks == gaussian[0]
    free_blocks = [g for g in range(n_blocks) if gaussian is None or g != gaussian[0]]
    gram = U.T @ U

    def draws(rng, size):
        n_col = len(shrunk)
        nu = 1.0 / rng.standard_gamma(0.5, (size, n_col))
        lam2 = (1.0 / nu) / rng.standard_gamma(0.5, (size, n_col))
        xi = 1.0 / rng.standard_gamma(0.5, (size, n_blocks))
        tau2 = (1.0 / xi) / rng.standard_gamma(0.5, (size, n_blocks))
        if gaussian is not None:
            lam2[:, fixed] = 1.0
            tau2[:, gaussian[0]] = gaussian[1]
        sd = np.where(shrunk, np.sqrt(tau2[:, np.maximum(blocks, 0)] * lam2), np.sqrt(VARIANCE))
        return sd * rng.standard_normal((size, n_col)), lam2, tau2, nu, xi

    rng = np.random.default_rng(seed)
    cauchy_q = np.tan(np.pi * QUANTILES / 2)
    eta_ref = draws(np.random.default_rng(seed + 1), 2_000_000)[0]
    eta_cut = np.quantile(eta_ref, QUANTILES, axis=0).T
    expected = np.concatenate([indicators(eta_ref, eta_cut).mean(axis=0),
                               np.tile(QUANTILES, len(free_blocks) + int((shrunk & ~fixed).sum()))])
    eta, lam2, tau2, nu, xi = draws(rng, N_CHAINS)
    for _ in range(n_steps):
        a = U @ eta.T + rng.standard_normal((U.shape[0], N_CHAINS))
        prec = gibbs.prior_precision(prior, lam2, tau2)
        if slip is True:  # one shared scale's shape on every block's tau (P_s + 1)/2: wrong
            prec = gibbs.prior_precision(prior._replace(blocks=np.where(blocks >= 0, 0, -1)),
                                         lam2, tau2[:, :1])
        eta = gibbs.draw_coefficients(gram, (U.T @ a).T, prec, rng.standard_normal(eta.shape),
                                      n_jobs=2)
        step_prior = prior
        if slip == "free_tau":
            step_prior = prior._replace(gaussian=None)
        lam2, tau2, nu, xi = gibbs.draw_shrinkage(rng, step_prior, eta, lam2, tau2, nu, xi)
        if slip == "free_lambda":  # the lambdas' draws kept, tau put back to v
            scale = 1.0 / nu[:, fixed] + eta[:, fixed] ** 2 / (2.0 * gaussian[1])
            lam2[:, fixed] = scale / rng.standard_gamma(1.0, scale.shape)
    f = [indicators(eta, eta_cut)] + [indicators(np.sqrt(tau2[:, g]), cauchy_q)
                                      for g in free_blocks]
    f += [indicators(np.sqrt(lam2[:, shrunk & ~fixed]), cauchy_q)]
    observed = np.hstack(f).mean(axis=0)
    return (observed - expected) / np.sqrt(expected * (1 - expected) / N_CHAINS)


@pytest.mark.slow
def test_geweke_per_block_global_scales():
    z = block_geweke_z()
    assert len(z) == 8 * 5 + 3 * 5 + 7 * 5
    worst = np.max(np.abs(z))
    assert worst < TOL, f"Geweke test of per-block scales failed: max |z| = {worst:.2f}"


@pytest.mark.slow
def test_geweke_fixed_gaussian_block():
    """A block under the fixed N(0, v) (DOLDA's ``word_prior="normal"``) beside Horseshoe
    blocks: eta, the other blocks' taus and the Horseshoe lambdas keep the prior."""
    z = block_geweke_z(seed=29, gaussian=GAUSSIAN)
    assert len(z) == 8 * 5 + 2 * 5 + 4 * 5
    worst = np.max(np.abs(z))
    assert worst < TOL, f"Geweke test of the fixed Gaussian block failed: max |z| = {worst:.2f}"


@pytest.mark.slow
@pytest.mark.parametrize("slip", ["free_tau", "free_lambda"])
def test_geweke_fixed_gaussian_block_detects_drawn_scales(slip):
    z = block_geweke_z(seed=29, gaussian=GAUSSIAN, slip=slip, n_steps=10)
    assert np.max(np.abs(z)) > 8.0, f"the Gaussian-block Geweke test lacks power ({slip})"


@pytest.mark.slow
def test_geweke_per_block_detects_one_scale_used_for_every_block():
    z = block_geweke_z(slip=True, n_steps=5)
    assert np.max(np.abs(z)) > 8.0, "the block Geweke test lacks power against a shared scale"


# ------------------------------------------------------------------ Gaussian slab
SLAB = 1.5  # s^2: small enough that the slab changes every marginal visibly
#: The per-column slab (``DOLDA(slab_blocks=...)``): on the first shrunk column only.
PARTIAL_SLAB = np.array([np.inf, SLAB, np.inf])


def _slab_prior_draws(rng, shrunk, size, slab=SLAB):
    """Exact draws of (eta, lambda^2, tau^2, nu, xi) from the slab prior
    ``N(eta; 0, tau^2 lambda^2) N(eta; 0, s_j^2) p(lambda) p(tau)`` (``slab``: ``s^2`` or
    per column, ``inf`` for none): integrating eta out tilts the Horseshoe's (lambda, tau)
    by ``prod_j sqrt(s_j^2 / (tau^2 lambda_j^2 + s_j^2))`` (at most 1), so Horseshoe draws
    are accepted with that probability (rejection), then
    eta ~ N(0, 1 / (1 / (tau^2 lambda^2) + 1 / s_j^2)) on the shrunk columns."""
    from _geweke import VARIANCE

    n_col = len(shrunk)
    slab = np.broadcast_to(np.asarray(slab, dtype=float), (n_col,))
    has = shrunk & np.isfinite(slab)
    s2 = np.where(has, slab, 1.0)
    parts, have = [], 0
    while have < size:
        m = 2 * (size - have) + 1000
        nu = 1.0 / rng.standard_gamma(0.5, (m, n_col))
        lam2 = (1.0 / nu) / rng.standard_gamma(0.5, (m, n_col))
        xi = 1.0 / rng.standard_gamma(0.5, m)
        tau2 = (1.0 / xi) / rng.standard_gamma(0.5, m)
        var = tau2[:, None] * lam2
        accept = np.prod(np.where(has, np.sqrt(s2 / (var + s2)), 1.0), axis=1)
        keep = rng.random(m) < accept
        parts.append((nu[keep], lam2[keep], xi[keep], tau2[keep], var[keep]))
        have += int(keep.sum())
    nu, lam2, xi, tau2, var = (np.concatenate(p)[:size] for p in zip(*parts))
    shrunk_sd = np.sqrt(1.0 / (1.0 / var + np.where(has, 1.0 / s2, 0.0)))
    sd = np.where(shrunk, shrunk_sd, np.sqrt(VARIANCE))
    return sd * rng.standard_normal((size, n_col)), lam2, tau2, nu, xi


def slab_geweke_z(seed=17, n_steps=N_STEPS, slip=None, slab=SLAB):
    """As :func:`_geweke.geweke_z` under the slab prior (``slab``: ``s^2`` or per column):
    eta (every column), tau and every shrunk lambda against the quantiles of 2e6 exact prior
    draws (the tilted (lambda, tau) are no longer half-Cauchy).  ``slip``: "none", the
    eta-step without the slab's precision (the plain Horseshoe's conditional); "all", the
    slab's precision on every shrunk column where only some have it."""
    from _geweke import N_CHAINS, QUANTILES, VARIANCE, indicators

    U, shrunk = _problem()
    gram = U.T @ U
    prior = gibbs.ProbitPrior(True, shrunk, VARIANCE, None, slab)
    sampled = {None: prior, "none": prior._replace(slab=None),
               "all": prior._replace(slab=SLAB)}[slip]
    ref = _slab_prior_draws(np.random.default_rng(seed + 1), shrunk, 2_000_000, slab)
    funcs = lambda eta, lam2, tau2: np.hstack([  # noqa: E731
        eta, np.sqrt(tau2)[:, None], np.sqrt(lam2[:, shrunk])])
    ref_f = funcs(ref[0], ref[1], ref[2])
    cuts = np.quantile(ref_f, QUANTILES, axis=0).T
    expected = indicators(ref_f, cuts).mean(axis=0)
    rng = np.random.default_rng(seed)
    eta, lam2, tau2, nu, xi = _slab_prior_draws(rng, shrunk, N_CHAINS, slab)
    for _ in range(n_steps):
        a = U @ eta.T + rng.standard_normal((U.shape[0], N_CHAINS))
        prec = gibbs.prior_precision(sampled, lam2, tau2)
        eta = gibbs.draw_coefficients(gram, (U.T @ a).T, prec, rng.standard_normal(eta.shape),
                                      n_jobs=2)
        lam2, tau2, nu, xi = gibbs.draw_shrinkage(rng, prior, eta, lam2, tau2, nu, xi)
    observed = indicators(funcs(eta, lam2, tau2), cuts).mean(axis=0)
    return (observed - expected) / np.sqrt(expected * (1 - expected) / N_CHAINS)


@pytest.mark.slow
@pytest.mark.parametrize("slab", [SLAB, PARTIAL_SLAB], ids=["every-column", "per-column"])
def test_geweke_horseshoe_with_a_gaussian_slab(slab):
    z = slab_geweke_z(slab=slab)
    assert len(z) == 6 * 5  # eta (3), tau, 2 lambdas; 5 quantiles each
    worst = np.max(np.abs(z))
    assert worst < TOL, f"Geweke test of the slab prior failed: max |z| = {worst:.2f}"


@pytest.mark.slow
def test_geweke_slab_detects_the_horseshoe_conditional_under_the_slab_prior():
    z = slab_geweke_z(slip="none")
    assert np.max(np.abs(z)) > 8.0, "the slab Geweke test lacks power against a missing slab"


@pytest.mark.slow
def test_geweke_per_column_slab_detects_the_slab_on_every_column():
    z = slab_geweke_z(slip="all", slab=PARTIAL_SLAB)
    assert np.max(np.abs(z)) > 8.0, "the slab Geweke test lacks power against a misplaced slab"
