"""The a-step's truncated-normal draws: exact in the bulk and far in the tails."""

import numpy as np
import pytest
from scipy import stats

from dolda.sampler.truncnorm import draw_utilities


def _draws(mu_value, positive, n=20_000, seed=3):
    mu = np.full((n, 1), float(mu_value))
    y = np.zeros(n, dtype=np.int64) if positive else np.ones(n, dtype=np.int64)
    return draw_utilities(mu, y, seed, 0, np.empty_like(mu))[:, 0]


@pytest.mark.parametrize("mu", [-40.0, -30.0, -8.0, 8.0, 30.0, 40.0, 1e6, -1e6])
@pytest.mark.parametrize("positive", [True, False])
def test_extreme_means_give_finite_draws_on_the_right_side(mu, positive):
    a = _draws(mu, positive, n=2000)
    assert np.all(np.isfinite(a))
    assert np.all(a > 0) if positive else np.all(a < 0)


@pytest.mark.parametrize("mu", [-6.0, -2.0, -0.3, 0.0, 0.7, 3.0])
@pytest.mark.parametrize("positive", [True, False])
def test_matches_scipy_truncnorm(mu, positive):
    """Kolmogorov-Smirnov against scipy's truncated normal; p > 1e-3 at a fixed seed."""
    a = _draws(mu, positive)
    lo, hi = ((-mu, np.inf) if positive else (-np.inf, -mu))
    ref = stats.truncnorm(lo, hi, loc=mu, scale=1.0)
    assert stats.kstest(a, ref.cdf).pvalue > 1e-3
    # mean within 5 Monte Carlo standard errors
    assert abs(a.mean() - ref.mean()) < 5 * ref.std() / np.sqrt(len(a))


def test_far_tail_mean_matches_mills_ratio():
    """At mu = -30 the positive draw is ~ 30 + Exp: mean = mu + phi(mu)/Phi(-mu) ~ 1/30."""
    a = _draws(-30.0, True)
    exact = -30.0 + np.exp(stats.norm.logpdf(30.0) - stats.norm.logsf(30.0))
    assert abs(a.mean() - exact) < 5 * a.std() / np.sqrt(len(a))


def test_rows_have_independent_streams_and_thread_count_does_not_matter():
    import numba

    rng = np.random.default_rng(0)
    mu = rng.normal(size=(500, 4))
    y = rng.integers(0, 4, 500)
    old = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = draw_utilities(mu, y, 11, 5, np.empty_like(mu))
        numba.set_num_threads(min(2, numba.config.NUMBA_NUM_THREADS))
        two = draw_utilities(mu, y, 11, 5, np.empty_like(mu))
    finally:
        numba.set_num_threads(old)
    np.testing.assert_array_equal(one, two)
    other = draw_utilities(mu, y, 11, 6, np.empty_like(mu))
    assert not np.array_equal(one, other)
    # the observed class is the single positive utility
    assert np.all((one > 0) == (np.arange(4)[None, :] == y[:, None]))
