"""Shared machinery of the Geweke (2004) joint-distribution tests of the eta / shrinkage blocks.

Used by ``test_probit_geweke.py`` (dense Cholesky eta-step) and
``test_probit_sparse.py`` (BCM and CG eta-steps); the design is explained in
the former's docstring.
"""

import numpy as np

from dolda.sampler import probit_blocks as gibbs

QUANTILES = np.array([0.1, 0.25, 0.5, 0.75, 0.9])
N_CHAINS = 8000
N_STEPS = 15
TOL = 4.5
VARIANCE = 4.0


def prior_draws(rng, horseshoe, shrunk, size):
    """Exact prior draws of (eta, lambda^2, tau^2, nu, xi) for ``size`` chains."""
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
    return sd * rng.standard_normal((size, n_col)), lam2, tau2, nu, xi


def indicators(values, cuts):
    return (values[..., None] < cuts).reshape(len(values), -1)


def geweke_z(U, shrunk, horseshoe, draw_eta, seed, n_steps=N_STEPS):
    """z-scores of the chains' frequencies below the prior quantiles vs the exact ones.

    ``draw_eta(rng, eta, a, prec) -> eta`` is the eta-step under test; every chain
    is a "class" of one problem.  Test functions: indicators of eta (every column)
    and, under the Horseshoe, of tau and of the shrunk columns' lambda below the
    exact half-Cauchy quantiles.
    """
    prior = gibbs.ProbitPrior(horseshoe, shrunk, VARIANCE)
    rng = np.random.default_rng(seed)
    cauchy_q = np.tan(np.pi * QUANTILES / 2)  # exact C+(0, 1) quantiles
    # eta's prior quantiles: a normal scale mixture, taken from 2e6 exact draws
    eta_ref = prior_draws(np.random.default_rng(seed + 1), horseshoe, shrunk, 2_000_000)[0]
    eta_cut = np.quantile(eta_ref, QUANTILES, axis=0).T
    expected = indicators(eta_ref, eta_cut).mean(axis=0)
    if horseshoe:
        expected = np.concatenate([expected, QUANTILES,
                                   np.tile(QUANTILES, int(np.sum(shrunk)))])
    eta, lam2, tau2, nu, xi = prior_draws(rng, horseshoe, shrunk, N_CHAINS)
    for _ in range(n_steps):
        a = U @ eta.T + rng.standard_normal((U.shape[0], N_CHAINS))
        prec = gibbs.prior_precision(prior, lam2, tau2)
        eta = draw_eta(rng, eta, a, prec)
        lam2, tau2, nu, xi = gibbs.draw_shrinkage(rng, prior, eta, lam2, tau2, nu, xi)
    f = [indicators(eta, eta_cut)]
    if horseshoe:
        f += [indicators(np.sqrt(tau2), cauchy_q), indicators(np.sqrt(lam2[:, shrunk]), cauchy_q)]
    observed = np.hstack(f).mean(axis=0)
    se = np.sqrt(expected * (1 - expected) / N_CHAINS)
    return (observed - expected) / se
