"""MCMC diagnostics: R-hat across aligned chains, ArviZ export, pyLDAvis inputs."""

import arviz as az
import numpy as np
import pytest

from dolda import DOLDA, DOProbit
from dolda.datasets import simulate
from dolda.evaluate.diagnostics import convergence_table, export_pyldavis, worst_rhat
from _flat import flat_dolda

KW = dict(n_topics=3, alpha=0.5, beta=0.1, random_state=3, progress=False, n_jobs=1,
          n_words=0)  # shapes of the topics-only model


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=150, n_topics=3, n_classes=2, vocab_size=90, doc_length=30,
                    n_signal=1, random_state=1)


@pytest.fixture(scope="module")
def two_chains(sim):
    # 2 x 3000 iterations take about 10 s on one thread.
    return flat_dolda(n_iter=3000, n_chains=2, **KW).fit(sim.texts, sim.y)


def test_aligned_chains_converge(two_chains):
    # Measured: worst R-hat 1.021 over all eta coefficients (topic coefficients
    # 1.002-1.021).  The intercept and the topic coefficients are only identified
    # up to a shared shift (the topic proportions sum to 1), which makes mixing
    # slow; 3000 iterations bring every R-hat below the usual 1.05.
    table = convergence_table(two_chains)
    assert table.shape == (2 * 4, 5)
    assert not table.attrs["split_single_chain"]
    assert table["r_hat"].max() < 1.05
    assert worst_rhat(two_chains) < 1.05
    assert table["ess_bulk"].min() > 100
    assert two_chains.topic_alignment_.shape == (2, 3)
    assert sorted(two_chains.topic_alignment_[1]) == [0, 1, 2]


def test_unconverged_chains_have_large_rhat(sim):
    # n_iter=6, burn_in=1: five draws per chain from two different starts.
    # Measured: worst topic R-hat about 2-3 (all coefficients above 1.2).
    model = flat_dolda(n_iter=6, burn_in=1, n_chains=2, **KW).fit(sim.texts, sim.y)
    assert worst_rhat(model) > 1.2


def test_inference_data_dims_and_coords(two_chains):
    idata = two_chains.to_inference_data()
    post = idata.posterior
    n_draws = two_chains.eta_draws_.shape[0] // 2
    assert post["eta"].dims == ("chain", "draw", "class", "feature")
    assert post["eta"].shape == (2, n_draws, 2, 4)
    assert list(post["class"].values) == list(two_chains.classes_)
    assert list(post["feature"].values) == ["(intercept)", "topic 0", "topic 1", "topic 2"]
    assert post["tau"].dims == ("chain", "draw", "class")
    assert post["lambda"].dims == ("chain", "draw", "class", "shrunk_feature")
    assert list(post["shrunk_feature"].values) == ["topic 0", "topic 1", "topic 2"]
    # chain 1 is the second half of the pooled draws
    np.testing.assert_array_equal(post["eta"].values[1], two_chains.eta_draws_[n_draws:])
    stats = idata.sample_stats
    assert stats["loglik_trace"].shape == (2, 3000)  # burn-in included
    total = two_chains.loglik_["total"].to_numpy().reshape(2, 3000)
    np.testing.assert_allclose(stats["loglik_trace"].values, total)
    np.testing.assert_allclose(stats["loglik"].values, total[:, 1500:])
    summary = az.summary(idata, var_names=["eta"])
    assert {"r_hat", "ess_bulk", "ess_tail"} <= set(summary.columns)
    assert np.isfinite(summary["r_hat"]).all()


def test_single_chain_uses_split_halves(sim):
    model = flat_dolda(n_iter=40, **KW).fit(sim.texts, sim.y)
    table = convergence_table(model)
    assert table.attrs["split_single_chain"]
    assert np.isfinite(table["r_hat"]).all()
    assert model.to_inference_data().posterior.sizes["chain"] == 1


def test_probit_chains_and_inference_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    y = np.where(X[:, 0] > 0, "a", "b")
    kw = dict(n_iter=200, random_state=5, n_jobs=1)
    one = DOProbit(**kw).fit(X, y)
    two = DOProbit(n_chains=2, **kw).fit(X, y)
    assert two.n_chains_ == 2 and one.n_chains_ == 1
    assert two.eta_draws_.shape == (200, 2, 4) and two.loglik_.shape == (400,)
    np.testing.assert_array_equal(two.eta_draws_[:100], one.eta_draws_)  # chain 0 = one chain
    assert not np.array_equal(two.eta_draws_[100:], one.eta_draws_)
    # the mean of the float32 draws, accumulated in float64
    np.testing.assert_allclose(two.coef_, two.eta_draws_.mean(axis=0, dtype=np.float64)[:, 1:],
                               rtol=1e-12)
    idata = two.to_inference_data(feature_names=["u", "v", "w"])
    assert idata.posterior["eta"].shape == (2, 100, 2, 4)
    assert list(idata.posterior["feature"].values) == ["(intercept)", "u", "v", "w"]
    assert idata.posterior["lambda"].shape == (2, 100, 2, 3)
    assert idata.sample_stats["loglik_trace"].shape == (2, 200)


def test_pyldavis_inputs(two_chains, sim):
    vis = export_pyldavis(two_chains)
    K, V = two_chains.phi_.shape
    D = len(sim.texts)
    assert vis["topic_term_dists"].shape == (K, V)
    assert vis["doc_topic_dists"].shape == (D, K)
    assert vis["doc_lengths"].shape == (D,) and vis["term_frequency"].shape == (V,)
    assert len(vis["vocab"]) == V
    np.testing.assert_allclose(vis["topic_term_dists"].sum(axis=1), 1.0)
    np.testing.assert_allclose(vis["doc_topic_dists"].sum(axis=1), 1.0)
    assert vis["doc_lengths"].sum() == two_chains.n_tokens_
    np.testing.assert_allclose(vis["term_frequency"].sum(), two_chains.n_tokens_)
    # with texts: exact counts of the model's vocabulary
    vis2 = export_pyldavis(two_chains, texts=sim.texts[:20])
    assert vis2["doc_topic_dists"].shape == (20, K)
    np.testing.assert_allclose(vis2["doc_topic_dists"].sum(axis=1), 1.0)
    assert vis2["term_frequency"].sum() == vis2["doc_lengths"].sum()


def test_inference_data_without_arguments_has_the_training_log_likelihood(sim, tmp_path):
    """``to_inference_data()`` alone carries the pointwise log-likelihood ``az.loo`` needs
    (kept at fit, also with word covariates, and in model files); on a topics-only model
    it is the one ``to_inference_data(y=...)`` computes from the same topic counts."""
    import dolda

    plain = flat_dolda(n_iter=30, **KW).fit(sim.texts, sim.y)
    stored = plain.to_inference_data().log_likelihood["y"].values
    given = plain.to_inference_data(y=sim.y).log_likelihood["y"].values
    assert stored.shape == given.shape == (1, 15, len(sim.y))
    np.testing.assert_allclose(stored, given, rtol=1e-5)
    words = flat_dolda(n_iter=30, **{**KW, "n_words": 20}).fit(sim.texts, sim.y)
    loo = az.loo(words.to_inference_data())
    assert np.isfinite(loo.elpd_loo) and loo.n_data_points == len(sim.y)
    words.save(tmp_path / "m")
    back = dolda.load(tmp_path / "m")
    np.testing.assert_array_equal(back.training_loglik_, words.training_loglik_)
    assert az.loo(back.to_inference_data()).elpd_loo == pytest.approx(loo.elpd_loo)
