"""The convergence verdict judges what a fit reports (class levels, topic contrasts), not the
direction of eta the data cannot see (:func:`dolda.evaluate.convergence.identified`)."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from dolda.evaluate.convergence import chain_convergence, identified


def _model(eta, K):
    S = len(eta)
    rng = np.random.default_rng(1)
    ll = rng.normal(-1000.0, 1.0, size=2 * S)  # a stable log-likelihood, burn-in first
    loglik = pd.DataFrame({"do": ll / 2, "lda": ll / 2, "total": ll})
    return SimpleNamespace(n_chains_=1, n_iter_=2 * S, eta_draws_=eta.astype(np.float32),
                           phi_=np.full((K, 5), 0.2), loglik_=loglik, thin=1)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_drift_along_the_unidentified_line_is_not_non_convergence(seed):
    """Intercept + c_t and every topic - c_t (c_t a random walk) predict the same, since the
    topic proportions sum to one: judged on the raw coefficients the chain "drifts", judged on
    what is reported it is stationary."""
    rng = np.random.default_rng(seed)
    S, L, K = 400, 3, 6
    base = np.zeros((L, 1 + K))
    base[:, 0] = -1.0
    base[np.arange(L), 1 + np.arange(L)] = 2.0  # one signal topic per class
    noise = rng.normal(0, 0.1, size=(S, L, 1 + K))
    c = np.cumsum(rng.normal(0, 0.3, size=S))[:, None]  # the unidentified walk
    eta = base + noise
    eta[:, :, 0] += c
    eta[:, :, 1:] -= c[:, :, None]
    out = chain_convergence(_model(eta, K))
    assert out["signal_share_rhat_above"] <= 0.05, out["summary"]
    assert out["converged"], out["summary"]
    # the same walk in a signal's contrast is a real drift, and is reported
    eta[:, 0, 1] += c[:, 0]
    drift = chain_convergence(_model(eta, K))
    assert not drift["converged"]


def test_identified_levels_and_contrasts_by_hand():
    eta = np.array([[[1.0, 0.0, 3.0, 1.0]]])  # intercept, covariate, 2 topics
    out = identified(eta, 2)
    np.testing.assert_allclose(out, [[[1.0 + 2.0, 0.0, 1.0, -1.0]]])
