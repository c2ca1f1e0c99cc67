"""Stacking weights of several chains (``dolda.posterior.chain_stacking``), checked against a
brute-force search of the simplex, and PSIS-LOO against exact leave-one-out where the
importance weights are exact."""

import itertools

import numpy as np
import pytest
from scipy.special import logsumexp

from dolda.posterior import chain_stacking as cs


def _grid(C, step):
    """Every point of the simplex in C dimensions on a grid of ``step``."""
    n = int(round(1 / step))
    for head in itertools.product(range(n + 1), repeat=C - 1):
        if sum(head) <= n:
            yield np.array(list(head) + [n - sum(head)], np.float64) / n


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("C,step", [(2, 1e-3), (3, 1e-2)])
def test_weights_match_a_brute_force_search_of_the_simplex(seed, C, step):
    rng = np.random.default_rng(seed)
    # chains that each predict some observations better than the others do
    lpd = rng.normal(-1.0, 0.6, size=(120, C)) + rng.normal(0, 0.3, size=C)
    w = cs.stacking_weights(lpd)
    assert w.shape == (C,) and np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    best = max(_grid(C, step), key=lambda v: cs.stacking_objective(v, lpd))
    # the optimum found is at least as good as the best grid point, and next to it
    assert cs.stacking_objective(w, lpd) >= cs.stacking_objective(best, lpd) - 1e-9
    assert np.abs(w - best).max() <= 1.5 * step


def test_a_chain_that_is_better_everywhere_takes_all_the_weight():
    rng = np.random.default_rng(3)
    base = rng.normal(-2.0, 0.5, size=200)
    lpd = np.stack([base + 0.5, base, base - 1.0], axis=1)
    w = cs.stacking_weights(lpd)
    np.testing.assert_allclose(w, [1.0, 0.0, 0.0], atol=1e-6)
    assert cs.effective_chains(w) == pytest.approx(1.0)


def test_identical_chains_keep_an_optimal_weighting_and_two_modes_share():
    lpd = np.tile(np.random.default_rng(4).normal(-1, 0.5, size=(50, 1)), (1, 2))
    w = cs.stacking_weights(lpd)  # the objective is flat: any w is optimal
    assert cs.stacking_objective(w, lpd) == pytest.approx(cs.stacking_objective([1, 0], lpd))
    # two chains, each right on its half of the data: stacking mixes them equally
    half = np.r_[np.zeros(50), np.full(50, -5.0)]
    w = cs.stacking_weights(np.stack([half, half[::-1]], axis=1))
    np.testing.assert_allclose(w, [0.5, 0.5], atol=1e-6)
    assert cs.effective_chains(w) == pytest.approx(2.0)


def test_one_chain_weighs_one_and_bad_input_is_refused():
    np.testing.assert_array_equal(cs.stacking_weights(np.zeros((5, 1))), [1.0])
    with pytest.raises(ValueError, match="finite"):
        cs.stacking_weights(np.array([[0.0, np.nan]]))
    with pytest.raises(ValueError, match="draws"):
        cs.loo_pointwise(np.zeros((1, 4)))


def test_psis_loo_is_exact_leave_one_out_when_the_weights_are_exact():
    # draws from the full-data posterior of a normal mean; the importance-sampling identity
    # E_post[1 / p(y_i | theta)]^-1 = p(y_i | y_-i) holds for any draws; with many draws
    # and light tails the PSIS estimate agrees with the exact LOO density
    rng = np.random.default_rng(5)
    y = rng.normal(0.3, 1.0, size=20)
    n, s2 = len(y), 1.0  # known variance, flat prior: theta | y ~ N(mean, 1/n)
    theta = rng.normal(y.mean(), np.sqrt(s2 / n), size=40000)
    ll = -0.5 * np.log(2 * np.pi) - 0.5 * (y[None, :] - theta[:, None]) ** 2
    lpd, k = cs.loo_pointwise(ll)
    mean_i = (y.sum() - y) / (n - 1)  # theta | y_-i ~ N(mean_i, 1/(n-1))
    var = 1.0 + 1.0 / (n - 1)
    exact = -0.5 * np.log(2 * np.pi * var) - 0.5 * (y - mean_i) ** 2 / var
    np.testing.assert_allclose(lpd, exact, atol=0.01)
    assert np.all(k < cs.K_OK)
    counts = cs.pareto_k_counts(np.array([0.1, 0.6, 0.8, np.nan]))
    assert counts == {"good": 1, "ok": 1, "bad": 2}


def test_chain_stacking_reports_weights_effective_chains_and_k():
    rng = np.random.default_rng(6)
    y = rng.normal(size=30)
    theta_a = rng.normal(0.0, 0.2, size=(500, 1))
    theta_b = rng.normal(3.0, 0.2, size=(500, 1))  # a mode far from the data
    lls = [-0.5 * (y[None, :] - t) ** 2 for t in (theta_a, theta_b)]
    out = cs.chain_stacking(lls)
    assert out["weights"][0] > 0.99 and out["effective_chains"] < 1.02
    assert out["elpd_loo"][0] > out["elpd_loo"][1]
    assert out["stacked_elpd_loo"] >= out["elpd_loo"].max() - 1e-9
    assert len(out["pareto_k"]) == 2 and sum(out["pareto_k"][0].values()) == 30
    assert logsumexp([0.0]) == 0.0
