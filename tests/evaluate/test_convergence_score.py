"""The verdict judges what the fit reports: the training labels' predictive score (not the
joint log-likelihood, whose LDA part no prediction shows), and names the chains' modes."""

import types

import numpy as np
import pandas as pd
import pytest

from dolda.evaluate.convergence import RHAT_MAX, chain_convergence


def _model(n_chains, S, eta, joint, pointwise, weights=None):
    n_iter = joint.shape[1]
    loglik = pd.DataFrame({"total": joint.reshape(-1)},
                          index=pd.MultiIndex.from_product([range(n_chains), range(n_iter)],
                                                           names=["chain", "iteration"]))
    return types.SimpleNamespace(n_chains_=n_chains, n_iter_=n_iter, eta_draws_=eta,
                                 loglik_=loglik, training_loglik_=pointwise,
                                 chain_weights_=weights, burn_in=None, thin=1)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_drifting_joint_loglik_with_stable_predictions_is_not_a_problem(seed):
    rng = np.random.default_rng(seed)
    S, D = 200, 30
    eta = 3.0 + rng.normal(size=(S, 2, 4))  # signals that mix
    joint = np.linspace(-900, -500, S)[None, :]  # the LDA part still refines the topics
    stable = rng.normal(-1.0, 0.1, size=(S, D))
    out = chain_convergence(_model(1, S, eta, joint, stable))
    assert out["loglik_rhat"] > RHAT_MAX  # reported ...
    assert out["score_rhat"] <= RHAT_MAX  # ... but the judged score is stable
    assert out["verdict"] == "converged", out["problems"]
    drifting = stable + np.linspace(-1, 0, S)[:, None]
    out = chain_convergence(_model(1, S, eta, joint, drifting))
    assert out["verdict"] == "not converged"
    assert any("predictive score still drifts" in p for p in out["problems"])


def test_without_a_pointwise_loglik_the_joint_one_is_judged():
    rng = np.random.default_rng(2)
    S = 200
    eta = 3.0 + rng.normal(size=(S, 2, 4))
    out = chain_convergence(_model(1, S, eta, np.linspace(-900, -500, S)[None, :], None))
    assert any(p.startswith("the log-likelihood still drifts") for p in out["problems"])


def test_several_chains_name_their_modes():
    rng = np.random.default_rng(3)
    S, D = 100, 20
    eta = 3.0 + rng.normal(size=(2 * S, 2, 4))
    joint = rng.normal(-700, 1, size=(2, S))
    pointwise = rng.normal(-1.0, 0.1, size=(2 * S, D))
    pointwise[S:] -= 0.5  # the second chain predicts worse: another mode
    out = chain_convergence(_model(2, S, eta, joint, pointwise, np.array([0.8, 0.2])))
    assert out["chain_weights"] == [0.8, 0.2]
    assert out["effective_chains"] == pytest.approx(1 / (0.64 + 0.04))
    assert out["verdict"] == "not converged"  # the chains' scores disagree
    assert "stacking weights 0.80/0.20 (1.5 effective chains)" in out["summary"]


def test_a_chain_too_short_to_judge_is_told_to_run_longer_not_to_split():
    rng = np.random.default_rng(4)
    S = 2
    out = chain_convergence(_model(1, S, rng.normal(size=(S, 2, 4)),
                                   rng.normal(size=(1, 4)), None))
    assert out["verdict"] == "too short to judge"
    assert "--chains" not in out["message"] and "--iterations" in out["message"]
