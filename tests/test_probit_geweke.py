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

from dolda.sampler import probit as gibbs

QUANTILES = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
N_CHAINS = 8000
N_STEPS = 15
TOL = 4.5
VARIANCE = 4.0


def _problem():
    rng = np.random.default_rng(20260101)
    n = 12
    U = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    shrunk = np.array([False, True, True])
    return U, shrunk


def _prior_draws(rng, horseshoe, shrunk, size):
    """Exact prior draws of (eta, tau, lambda^2 auxiliaries) for ``size`` chains."""
    n_col = len(shrunk)
    if horseshoe:
        # lambda^2 | nu ~ IG(1/2, 1/nu), nu ~ IG(1/2, 1)  gives lambda ~ C+(0, 1)
        nu = 1.0 / rng.standard_gamma(0.5, (size, n_col))
        lam2 = (1.0 / nu) / rng.standard_gamma(0.5, (size, n_col))
        xi = 1.0 / rng.standard_gamma(0.5, size)
        tau2 = (1.0 / xi) / rng.standard_gamma(0.5, size)
        sd = np.where(shrunk, np.sqrt(tau2[:, None] * lam2), np.sqrt(VARIANCE))
    else:
        nu, lam2 = np.ones((size, n_col)), np.ones((size, n_col))
        xi, tau2 = np.ones(size), np.ones(size)
        sd = np.full((size, n_col), np.sqrt(VARIANCE))
    eta = sd * rng.standard_normal((size, n_col))
    return eta, lam2, tau2, nu, xi


def _indicators(values, cuts):
    return (values[..., None] < cuts).reshape(len(values), -1)


def geweke_z(horseshoe, seed=7, slip=False, n_steps=N_STEPS):
    """z-scores of chain vs exact prior frequencies, one per test function."""
    U, shrunk = _problem()
    prior = gibbs.ProbitPrior(horseshoe, shrunk, VARIANCE)
    rng = np.random.default_rng(seed)
    cauchy_q = np.tan(np.pi * QUANTILES / 2)  # exact C+(0, 1) quantiles
    # eta's prior quantiles: a normal scale mixture, taken from 2e6 exact draws
    eta_ref = _prior_draws(np.random.default_rng(seed + 1), horseshoe, shrunk, 2_000_000)[0]
    eta_cut = np.quantile(eta_ref, QUANTILES, axis=0).T
    expected = _indicators(eta_ref, eta_cut).mean(axis=0)
    if horseshoe:
        expected = np.concatenate([expected, QUANTILES, np.tile(QUANTILES, 2)])

    eta, lam2, tau2, nu, xi = _prior_draws(rng, horseshoe, shrunk, N_CHAINS)
    gram = U.T @ U
    for _ in range(n_steps):
        a = U @ eta.T + rng.standard_normal((U.shape[0], N_CHAINS))
        prec = gibbs.prior_precision(prior, lam2, tau2)
        if slip:  # the paper's printed covariance: prior variance in place of precision
            prec = np.where(shrunk, 1.0 / prec, prec)
        eta = gibbs.draw_coefficients(gram, (U.T @ a).T, prec,
                                      rng.standard_normal(eta.shape), n_jobs=2)
        lam2, tau2, nu, xi = gibbs.draw_shrinkage(rng, prior, eta, lam2, tau2, nu, xi)

    f = [_indicators(eta, eta_cut)]
    if horseshoe:
        f += [_indicators(np.sqrt(tau2), cauchy_q), _indicators(np.sqrt(lam2[:, 1:]), cauchy_q)]
    observed = np.hstack(f).mean(axis=0)
    se = np.sqrt(expected * (1 - expected) / N_CHAINS)
    return (observed - expected) / se


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
