"""Learned Dirichlet hyperparameters (``alpha="auto"``, ``beta="auto"``; issue 12).

* Minka's histogram fixed point equals a direct numerical maximisation of the
  Dirichlet-multinomial likelihood, and recovers the concentration the counts
  were simulated with (2,000 documents: tolerance 10%, several seeds).
* DOLDA learns alpha and beta during the burn-in only, keeps them in saved
  models, and a chain interrupted after an update resumes exactly (the learned
  values are in the checkpoint); ``--alpha auto`` works from the CLI.
"""

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy.optimize import minimize_scalar
from scipy.special import gammaln

import dolda
from dolda import DOLDA
from dolda.cli import main
from dolda.datasets import simulate
from dolda.sampler import hyper
from _flat import flat_dolda


def _counts(a, n_groups, dim, length, seed):
    rng = np.random.default_rng(seed)
    theta = rng.dirichlet(np.full(dim, a), n_groups)
    return np.stack([rng.multinomial(length, t) for t in theta])


def _loglik(a, counts):
    dim = counts.shape[1]
    n = counts.sum(axis=1)
    return float(np.sum(gammaln(dim * a) - gammaln(n + dim * a))
                 + np.sum(gammaln(counts + a) - gammaln(a)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fixed_point_is_the_likelihood_maximum_and_recovers_the_truth(seed):
    true = [0.05, 0.3, 2.0][seed]
    counts = _counts(true, 2000, 10, 50, seed)
    got = hyper.symmetric_dirichlet(1.0, hyper.histogram(counts),
                                    hyper.histogram(counts.sum(axis=1)), 10)
    best = minimize_scalar(lambda t: -_loglik(np.exp(t), counts), bounds=(-8, 5),
                           method="bounded", options={"xatol": 1e-9})
    assert got == pytest.approx(np.exp(best.x), rel=1e-4)
    assert got == pytest.approx(true, rel=0.10)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=150, n_topics=3, n_classes=2, vocab_size=100, doc_length=40,
                    alpha=0.5, random_state=3)


KW = dict(n_topics=3, n_iter=40, random_state=2, progress=False, rare_share=0.0)


def test_dolda_learns_alpha_and_beta_in_the_burn_in(sim, tmp_path):
    model = flat_dolda(alpha="auto_symmetric", beta="auto", **KW).fit(sim.texts, sim.y)
    assert model.alpha_ != 0.1 and model.beta_ != 0.01
    assert 0.05 < model.alpha_ < 5  # simulated with alpha = 0.5
    fixed = flat_dolda(**KW).fit(sim.texts, sim.y)
    assert fixed.alpha_ == 0.01 and fixed.beta_ == 0.01
    model.save(tmp_path / "m")
    again = dolda.load(tmp_path / "m")
    assert again.alpha_ == model.alpha_ and again.beta_ == model.beta_
    np.testing.assert_array_equal(again.transform(sim.texts[:5]), model.transform(sim.texts[:5]))


def test_interrupted_auto_chain_resumes_exactly(sim, tmp_path, monkeypatch):
    from dolda.models.dolda import chain_stage as chain_module
    from dolda.models.dolda import estimator as model_module

    straight = flat_dolda(alpha="auto", beta="auto", **KW).fit(sim.texts, sim.y)
    ckpt = tmp_path / "ck"
    calls = {"n": 0}
    real = chain_module._DeferredInterrupt

    class StopAt15(real):  # Ctrl-C during iteration 15 (after the update at 10)
        @property
        def requested(self):
            calls["n"] += 1
            return calls["n"] == 15

        @requested.setter
        def requested(self, value):
            pass

    monkeypatch.setattr(chain_module, "_DeferredInterrupt", StopAt15)
    with pytest.raises(model_module.FitInterrupted):
        flat_dolda(alpha="auto", beta="auto", checkpoint=ckpt, **KW).fit(sim.texts, sim.y)
    monkeypatch.setattr(chain_module, "_DeferredInterrupt", real)
    resumed = flat_dolda(alpha="auto", beta="auto", checkpoint=ckpt, **KW).fit(sim.texts, sim.y,
                                                                          resume=ckpt)
    assert resumed.alpha_.shape == (3,)  # alpha="auto": one value per topic
    np.testing.assert_array_equal(resumed.alpha_, straight.alpha_)
    np.testing.assert_array_equal(resumed.eta_draws_, straight.eta_draws_)
    np.testing.assert_array_equal(resumed.phi_, straight.phi_)


def test_cli_alpha_auto(sim, tmp_path):
    data = tmp_path / "d.csv"
    pd.DataFrame({"text": sim.texts, "y": sim.y}).to_csv(data, index=False)
    result = CliRunner().invoke(main, ["fit", str(data), "--text", "text", "--label", "y",
                                       "--topics", "3", "--iterations", "30", "--quiet",
                                       "--alpha", "auto", "--beta", "auto", "--out",
                                       str(tmp_path / "m")])
    assert result.exit_code == 0, result.output
    assert np.all(dolda.load(tmp_path / "m").alpha_ > 0)
    bad = CliRunner().invoke(main, ["fit", str(data), "--text", "text", "--label", "y",
                                    "--alpha", "often", "--out", str(tmp_path / "m2")])
    assert bad.exit_code != 0 and "neither a number nor 'auto'" in bad.output
