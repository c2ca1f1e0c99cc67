"""The DO log-likelihood kernel: value and independence of the thread count."""

import numpy as np
from scipy.special import log_ndtr, logsumexp

from dolda.sampler.likelihood import do_log_likelihood
from dolda.sampler.threads import using_threads


def test_do_log_likelihood_matches_scipy_and_ignores_threads():
    rng = np.random.default_rng(0)
    mu = rng.normal(scale=3.0, size=(50_000, 7))  # 49 blocks of 1024 rows
    mu[:5] = [-45.0, 40.0, 0.0, -3.0, 2.0, 1.0, -1.0]  # far tails stay finite
    y = rng.integers(0, 7, len(mu))
    scores = log_ndtr(mu) - log_ndtr(-mu)
    expected = np.sum(scores[np.arange(len(mu)), y] - logsumexp(scores, axis=1))
    values = []
    for n in (1, 2):
        with using_threads(n):
            values.append(do_log_likelihood(mu, y))
    assert values[0] == values[1]  # bit for bit
    np.testing.assert_allclose(values[0], expected, rtol=1e-10)
