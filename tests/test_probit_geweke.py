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
