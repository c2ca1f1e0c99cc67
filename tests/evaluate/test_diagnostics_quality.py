"""Pointwise log-likelihood in the ArviZ export (az.loo / az.waic / az.compare) and
pyLDAvis inputs for LDA and DOLDA."""

import arviz as az
import numpy as np
import pytest
from scipy.stats import norm

from dolda import DOLDA, LDA, DOProbit
from dolda.datasets import simulate
from dolda.evaluate.diagnostics import export_pyldavis, pointwise_do_loglik
from _flat import flat_dolda

pytestmark = pytest.mark.quality

# topics only: the pointwise log-likelihood is checked against the training topic counts
KW = dict(n_topics=3, alpha=0.5, beta=0.1, random_state=3, progress=False, n_jobs=1,
          n_words=0)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=120, n_topics=3, n_classes=3, vocab_size=90, doc_length=30,
                    n_signal=1, random_state=1)


@pytest.fixture(scope="module")
def dolda_model(sim):
    return flat_dolda(n_iter=200, n_chains=2, **KW).fit(sim.texts, sim.y)


def brute_do_loglik(u, eta, y):
    """log P(y | u, eta) from the DO formula written out: F(mu_y) prod_{j!=y} F(-mu_j) / Z."""
    mu = eta @ u
    L = len(mu)
    terms = [norm.cdf(mu[l]) * np.prod([norm.cdf(-mu[j]) for j in range(L) if j != l])
             for l in range(L)]
    return np.log(terms[y] / sum(terms))


def test_pointwise_do_loglik_matches_the_formula():
    rng = np.random.default_rng(0)
    U = rng.normal(size=(7, 4))
    eta = rng.normal(scale=2.0, size=(5, 3, 4))
    y = rng.integers(0, 3, 7)
    got = pointwise_do_loglik(U, eta, y, max_block=10)  # several blocks of draws
    want = np.array([[brute_do_loglik(U[d], eta[s], y[d]) for d in range(7)] for s in range(5)])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)  # brute force: log(1 - tiny)
    # far tails stay finite
    assert np.isfinite(pointwise_do_loglik(U * 50, eta, y)).all()


def test_doprobit_loo_and_waic():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(150, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=150) > 0, "a", "b")
    model = DOProbit(n_iter=200, random_state=0, progress=False, n_chains=2).fit(X, y)
    idata = model.to_inference_data(X=X, y=y)
    ll = idata.log_likelihood["y"]
    assert ll.dims == ("chain", "draw", "document") and ll.shape == (2, 100, 150)
    # summed over documents it is the DO log-likelihood of the kept draws, exactly ...
    from dolda.sampler.probit_blocks import do_log_likelihood

    U = np.column_stack([np.ones(len(X)), X])
    y_index = (y == "b").astype(np.int64)
    for c, s in ((0, 0), (0, 57), (1, 99)):
        eta = model.eta_draws_[c * 100 + s].astype(np.float64)
        assert float(ll.values[c, s].sum()) == pytest.approx(
            do_log_likelihood(U @ eta.T, y_index), rel=1e-9)
    # ... and the trace (of the chain's float64 state) up to the draws' float32 rounding
    np.testing.assert_allclose(ll.sum("document").values, idata.sample_stats["loglik"].values,
                               rtol=1e-6)
    loo = az.loo(idata)
    waic = az.waic(idata)
    assert np.isfinite(loo.elpd_loo) and np.isfinite(waic.elpd_waic)
    # far better than guessing (150 log 0.5 = -104)
    assert -60 < loo.elpd_loo < 0
    assert list(idata.observed_data["y"].values[:3]) == list(y[:3])
    with pytest.raises(ValueError, match="both X and y"):
        model.to_inference_data(X=X)


def test_dolda_loo_waic_and_compare(dolda_model, sim):
    idata = dolda_model.to_inference_data(y=sim.y)
    n_draws = dolda_model.eta_draws_.shape[0] // 2
    assert idata.log_likelihood["y"].shape == (2, n_draws, len(sim.y))
    # one cell against the formula: final zbar of the training documents, a pooled draw
    counts = dolda_model.doc_topic_counts_
    d, s = 5, n_draws + 3  # chain 1, draw 3
    u = np.concatenate([[1.0], counts[d] / counts[d].sum()])
    y_index = list(dolda_model.classes_).index(sim.y[d])
    assert idata.log_likelihood["y"].values[1, 3, d] == pytest.approx(
        brute_do_loglik(u, dolda_model.eta_draws_[s], y_index), rel=1e-9)
    loo = az.loo(idata)
    assert np.isfinite(loo.elpd_loo) and np.isfinite(az.waic(idata).elpd_waic)
    # the topics carry the class signal: better than the base rate
    base = sum(np.log(np.mean(sim.y == c)) for c in sim.y)
    assert loo.elpd_loo > base
    # a model without the topic signal (labels permuted) compares worse
    rng = np.random.default_rng(0)
    y_perm = rng.permutation(sim.y)
    noise = flat_dolda(n_iter=200, **KW).fit(sim.texts, y_perm)
    table = az.compare({"dolda": idata, "noise": noise.to_inference_data(y=y_perm)})
    assert table.index[0] == "dolda"
    with pytest.raises(ValueError, match="not a class"):
        dolda_model.to_inference_data(y=np.array(["nope"] * len(sim.y)))
    # no y: the training documents' pointwise log-likelihood kept at fit (issue 36), the
    # same values as with the training labels given
    plain = dolda_model.to_inference_data()
    np.testing.assert_allclose(plain.log_likelihood["y"].values,
                               idata.log_likelihood["y"].values, rtol=1e-5)


def test_dolda_with_covariates_needs_them(sim):
    X = np.random.default_rng(2).normal(size=(len(sim.y), 2))
    model = flat_dolda(n_iter=60, **KW).fit(sim.texts, sim.y, X=X)
    idata = model.to_inference_data(y=sim.y, X=X)
    assert idata.log_likelihood["y"].shape[2] == len(sim.y)
    with pytest.raises(ValueError, match="covariates"):
        model.to_inference_data(y=sim.y)


def check_pyldavis_inputs(vis, K, V, D):
    assert set(vis) == {"topic_term_dists", "doc_topic_dists", "doc_lengths", "vocab",
                        "term_frequency"}
    assert vis["topic_term_dists"].shape == (K, V)
    assert vis["doc_topic_dists"].shape == (D, K)
    assert vis["doc_lengths"].shape == (D,) and vis["term_frequency"].shape == (V,)
    assert len(vis["vocab"]) == V
    np.testing.assert_allclose(vis["topic_term_dists"].sum(axis=1), 1.0)
    np.testing.assert_allclose(vis["doc_topic_dists"].sum(axis=1), 1.0)
    assert (vis["term_frequency"] >= 0).all()


@pytest.mark.parametrize("kind", ["lda", "dolda"])
def test_pyldavis_for_lda_and_dolda(kind, sim, dolda_model):
    if kind == "lda":
        model = LDA(n_topics=3, n_iter=60, random_state=0, progress=False).fit(sim.texts)
    else:
        model = dolda_model
    K, V = model.phi_.shape
    vis = export_pyldavis(model)
    check_pyldavis_inputs(vis, K, V, len(sim.texts))
    vis_texts = export_pyldavis(model, texts=sim.texts[:25])
    check_pyldavis_inputs(vis_texts, K, V, 25)
    assert vis_texts["term_frequency"].sum() == vis_texts["doc_lengths"].sum()
    # theta of new texts is what transform computes (LDA: theta; DOLDA: from zbar)
    if kind == "lda":
        np.testing.assert_allclose(vis_texts["doc_topic_dists"], model.transform(sim.texts[:25]))
    pyLDAvis = pytest.importorskip("pyLDAvis")
    prepared = pyLDAvis.prepare(**vis_texts, sort_topics=False, n_jobs=1)
    assert len(prepared.topic_coordinates) == K


def test_dolda_loo_with_word_covariates_needs_the_texts(sim):
    model = flat_dolda(n_iter=40, **{**KW, "n_words": 20}).fit(sim.texts, sim.y)
    with pytest.raises(ValueError, match="word covariates"):
        model.to_inference_data(y=sim.y)
    idata = model.to_inference_data(y=sim.y, texts=sim.texts)
    # one cell against the formula on u = [1, words, zbar], the order of feature_names_
    d, s = 4, 2
    words = model.word_features_.transform(model._make_corpus(sim.texts[d:d + 1], fit=False))
    u = np.concatenate([[1.0], words.toarray()[0], model.transform(sim.texts)[d]])
    assert len(u) == model.eta_draws_.shape[2]
    y_index = list(model.classes_).index(sim.y[d])
    assert idata.log_likelihood["y"].values[0, s, d] == pytest.approx(
        brute_do_loglik(u, model.eta_draws_[s], y_index), rel=1e-9)
