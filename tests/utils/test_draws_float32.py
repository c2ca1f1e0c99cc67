"""Kept draws are stored in float32, the chains run in float64 (issue 13, memory).

The draws are the float32 rounding of the chain's float64 state at the kept
iterations; model files and checkpoints hold them as float32, files with float64
draws (written before) still load and predict; every consumer computes in float64.
"""

import numpy as np
import pytest

from dolda import DOLDA, DOProbit, io, load
from dolda.posterior import calibration
from dolda.utils.draws import DRAW_DTYPE, draw_mean, draw_quantiles
from dolda.datasets import simulate
from _recording import record_probit_states
from dolda.evaluate.diagnostics import convergence_table, pointwise_do_loglik
from dolda.posterior.scores import coefficient_prior_sd
from _flat import flat_dolda

F32 = np.dtype(np.float32)
KW = dict(n_topics=3, alpha=0.1, random_state=4, progress=False, n_jobs=1, rare_share=0.0)


@pytest.fixture(scope="module")
def xy():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(90, 5))
    y = np.array(["a", "b", "c"])[(X[:, 0] > 0.4).astype(int) + (X[:, 1] > 0).astype(int)]
    return X, y


@pytest.fixture(scope="module")
def probit(xy):
    return DOProbit(n_iter=60, random_state=3, n_jobs=1).fit(*xy)


@pytest.fixture(scope="module")
def corpus():
    return simulate(n_docs=100, n_topics=3, n_classes=3, vocab_size=70, doc_length=25,
                    random_state=4)


@pytest.fixture(scope="module")
def dolda_model(corpus):
    # word covariates: a sparse design, and lambda over words and topics
    return flat_dolda(n_iter=16, burn_in=6, n_words=12, **KW).fit(corpus.texts, corpus.y)


def _records(monkeypatch, module, name, pick):
    """Wrap ``module.name`` (a Gibbs step); ``pick(result)`` -> the state arrays recorded."""
    real = getattr(module, name)
    seen = {}

    def step(seed, it, *args, **kw):
        out = real(seed, it, *args, **kw)
        seen[it] = [np.array(a, dtype=np.float64) for a in pick(out)]
        return out

    monkeypatch.setattr(module, name, step)
    return seen


# ------------------------------------------------------------------ storage
def test_probit_draws_are_the_float32_rounding_of_the_chain_state(xy, monkeypatch):
    from dolda.sampler import probit_blocks as gibbs

    seen = _records(monkeypatch, gibbs, "gibbs_step", lambda s: (s.eta, s.tau2, s.lam2))
    m = DOProbit(n_iter=30, burn_in=10, thin=3, random_state=1, n_jobs=1).fit(*xy)
    keep = np.arange(10, 30)[::3]
    assert m.eta_draws_.dtype == F32 and m.tau_draws_.dtype == F32
    assert m.lambda_draws_.dtype == F32 and len(m.eta_draws_) == len(keep)
    for slot, it in enumerate(keep):
        eta, tau2, lam2 = seen[it]
        np.testing.assert_array_equal(m.eta_draws_[slot], eta.astype(np.float32))
        np.testing.assert_array_equal(m.tau_draws_[slot], np.sqrt(tau2).astype(np.float32))
        np.testing.assert_array_equal(m.lambda_draws_[slot],
                                      np.sqrt(lam2[:, 1:]).astype(np.float32))
    # what the chain computes from its state stays float64
    assert m.loglik_.dtype == np.float64 and m.coef_.dtype == np.float64


def test_dolda_draws_and_checkpoint_are_float32_roundings_of_the_state(corpus, tmp_path,
                                                                        monkeypatch):
    seen = record_probit_states(monkeypatch)
    ckpt = tmp_path / "ck"
    m = flat_dolda(n_iter=10, burn_in=4, n_words=12, checkpoint=ckpt, **KW).fit(corpus.texts,
                                                                          corpus.y)
    assert {m.eta_draws_.dtype, m.tau_draws_.dtype, m.lambda_draws_.dtype} == {F32}
    # the word columns are kept in float16 and their lambda as summaries (issue 33,
    # test_word_block_storage.py): the other columns' draws are the float32 roundings
    e = m.eta_draws_
    rest = np.r_[0:e.start, e.stop:e.shape[2]]
    for slot, it in enumerate(range(4, 10)):
        eta, tau2, lam2 = seen[it]
        np.testing.assert_array_equal(e.rest[slot], eta[:, rest].astype(np.float32))
        np.testing.assert_array_equal(m.tau_draws_[slot], np.sqrt(tau2).astype(np.float32))
        np.testing.assert_array_equal(m.lambda_draws_[slot],
                                      np.sqrt(lam2[:, rest]).astype(np.float32))
    # the checkpoint: the chain's final state in float64, the draws in float32, the last
    # draw the final state rounded
    meta, arr = io.load_checkpoint(ckpt)
    assert meta["next_iteration"] == 10
    assert arr["eta"].dtype == np.float64 and arr["tau2"].dtype == np.float64
    for name in ("eta_draws", "tau_draws", "lambda_draws"):
        assert arr[name].dtype == F32
        assert io.read_header(ckpt)["arrays"][name]["dtype"] == "<f4"
    np.testing.assert_array_equal(arr["eta_draws"], e.rest)
    np.testing.assert_array_equal(e.rest[-1], arr["eta"][:, rest].astype(np.float32))
    np.testing.assert_array_equal(m.tau_draws_[-1], np.sqrt(arr["tau2"]).astype(np.float32))
    np.testing.assert_array_equal(m.lambda_draws_[-1],
                                  np.sqrt(arr["lam2"][:, rest]).astype(np.float32))


def test_chains_pool_in_float32(corpus):
    two = flat_dolda(n_iter=8, burn_in=4, n_words=12, n_chains=2, **KW).fit(corpus.texts, corpus.y)
    assert {two.eta_draws_.dtype, two.tau_draws_.dtype, two.lambda_draws_.dtype} == {F32}
    assert two.eta_draws_.rest.flags.owndata and two.eta_draws_.shape[0] == 8
    p = DOProbit(n_iter=20, n_chains=2, random_state=2, n_jobs=1).fit(
        np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2)
    assert {p.eta_draws_.dtype, p.tau_draws_.dtype, p.lambda_draws_.dtype} == {F32}


def test_resuming_an_old_float64_checkpoint_gives_the_float32_chain(corpus, tmp_path,
                                                                   monkeypatch):
    """A checkpoint written when draws were float64 resumes to the uninterrupted chain."""
    from dolda.sampler import gibbs_iteration as chain

    kw = dict(n_iter=12, burn_in=4, n_words=12, **KW)
    full = flat_dolda(**kw).fit(corpus.texts, corpus.y)
    real_step = chain.dolda_step

    def crash_at_9(seed, it, *args):
        if it == 9:
            raise RuntimeError("the machine went down")
        return real_step(seed, it, *args)

    monkeypatch.setattr(chain, "dolda_step", crash_at_9)
    ckpt = tmp_path / "ck"
    with pytest.raises(RuntimeError, match="went down"):
        flat_dolda(checkpoint=ckpt, checkpoint_every=4, **kw).fit(corpus.texts, corpus.y)
    monkeypatch.setattr(chain, "dolda_step", real_step)
    meta, arr = io.load_checkpoint(ckpt)
    assert meta["next_iteration"] == 8 and arr["eta_draws"].dtype == F32
    # what the code before float32 draws wrote: the same checkpoint with float64 draws
    draws = ("eta_draws", "tau_draws", "lambda_draws")
    io.save_checkpoint(ckpt, meta, {k: v.astype(np.float64) if k in draws else v
                                    for k, v in arr.items()})
    assert io.read_header(ckpt)["arrays"]["eta_draws"]["dtype"] == "<f8"
    resumed = flat_dolda(checkpoint=ckpt, **kw).fit(corpus.texts, corpus.y, resume=ckpt)
    for name in ("eta_draws_", "tau_draws_", "lambda_draws_"):
        assert getattr(resumed, name).dtype == F32
        np.testing.assert_array_equal(getattr(resumed, name), getattr(full, name))
    assert io.load_checkpoint(ckpt)[1]["eta_draws"].dtype == F32


def test_extending_an_old_float64_checkpoint_gives_the_float32_chain(corpus, tmp_path):
    kw = dict(burn_in=4, n_words=12, phi_draws=3, **KW)
    longer = flat_dolda(n_iter=14, **kw).fit(corpus.texts, corpus.y)
    ckpt = tmp_path / "ck"
    flat_dolda(n_iter=10, checkpoint=ckpt, **kw).fit(corpus.texts, corpus.y)  # finished
    meta, arr = io.load_checkpoint(ckpt)
    draws = ("eta_draws", "tau_draws", "lambda_draws")
    io.save_checkpoint(ckpt, meta, {k: v.astype(np.float64) if k in draws else v
                                    for k, v in arr.items()})
    extended = flat_dolda(n_iter=14, checkpoint=ckpt, **kw).fit(corpus.texts, corpus.y,
                                                           resume=ckpt)
    for name in ("eta_draws_", "tau_draws_", "lambda_draws_"):
        assert getattr(extended, name).dtype == F32
        np.testing.assert_array_equal(getattr(extended, name), getattr(longer, name))


# ------------------------------------------------------------------ model files
@pytest.mark.parametrize("kind", ["probit", "dolda"])
def test_model_file_round_trips_float32_draws(kind, probit, dolda_model, xy, corpus,
                                              tmp_path):
    model = probit if kind == "probit" else dolda_model
    X = xy[0] if kind == "probit" else corpus.texts[:20]
    model.save(tmp_path / "m")
    manifest = io.read_header(tmp_path / "m")["arrays"]
    loaded = load(tmp_path / "m")
    for name in ("eta_draws", "tau_draws", "lambda_draws"):
        assert manifest[name]["dtype"] == "<f4"
        assert getattr(loaded, name + "_").dtype == F32
        np.testing.assert_array_equal(getattr(loaded, name + "_"), getattr(model, name + "_"))
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))


@pytest.mark.parametrize("kind", ["probit", "dolda"])
def test_old_float64_model_file_loads_and_predicts(kind, probit, dolda_model, xy, corpus,
                                                   tmp_path):
    """A file written when draws were float64 loads with its draws as saved, and predicts
    as the float32 model whose draws are these values rounded."""
    import copy

    model = probit if kind == "probit" else dolda_model
    X = xy[0] if kind == "probit" else corpus.texts[:20]
    old = copy.copy(model)
    rng = np.random.default_rng(0)
    for name in ("eta_draws_", "tau_draws_", "lambda_draws_"):
        # float64 values that are not float32 numbers, as the old code stored them
        a = np.asarray(getattr(model, name)).astype(np.float64)
        if name == "lambda_draws_" and kind == "dolda":  # every column, as before issue 33
            e = model.eta_draws_
            a = np.concatenate([a[:, :, :e.start], np.ones(e.words.shape), a[:, :, e.start:]],
                               axis=2)
        setattr(old, name, a * (1 + 1e-9 * rng.uniform(-1, 1, a.shape)))
    if kind == "dolda":
        old.lambda_word_stats_ = None
    old.save(tmp_path / "old")
    manifest = io.read_header(tmp_path / "old")["arrays"]
    assert {manifest[n]["dtype"] for n in ("eta_draws", "tau_draws", "lambda_draws")} == {"<f8"}
    loaded = load(tmp_path / "old")
    for name in ("eta_draws_", "tau_draws_", "lambda_draws_"):
        assert getattr(loaded, name).dtype == np.float64
        np.testing.assert_array_equal(getattr(loaded, name), getattr(old, name))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    np.testing.assert_allclose(loaded.predict_proba(X), model.predict_proba(X), rtol=0,
                               atol=1e-6)
    # saved again, it stays float64
    loaded.save(tmp_path / "again")
    assert io.read_header(tmp_path / "again")["arrays"]["eta_draws"]["dtype"] == "<f8"


# ------------------------------------------------------------------ consumers in float64
@pytest.mark.parametrize("rule", ["calibrated", "ovr", "do"])
@pytest.mark.parametrize("rows", [1, 90])
def test_probit_predict_proba_from_float32_equals_float64_upcast(probit, xy, rule, rows):
    import copy

    X = xy[0][:rows]
    m32 = copy.copy(probit).set_params(proba=rule)
    m64 = copy.copy(m32)
    m64.eta_draws_ = m32.eta_draws_.astype(np.float64)
    got, want = m32.predict_proba(X), m64.predict_proba(X)
    assert got.dtype == np.float64
    # the same float64 computation on the same values: equal to the last bits (a float32
    # computation of mu differs by ~1e-7, which ~1e-6 would not always see)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("rule", ["calibrated", "ovr", "do"])
def test_dolda_predict_proba_from_float32_equals_float64_upcast(dolda_model, corpus, rule):
    from dolda.design.regressors import SparseDenseDesign

    U = dolda_model._regressors(corpus.texts[:40])
    assert isinstance(U, SparseDenseDesign)  # word covariates: the sparse-and-dense path
    draws = dolda_model.eta_draws_
    stacking = dolda_model.stacking_
    got = calibration.class_probabilities(U, draws, rule, stacking)
    want = calibration.class_probabilities(U, draws.astype(np.float64), rule, stacking)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    dense = calibration.class_probabilities(U.toarray(), draws, rule, stacking)
    np.testing.assert_allclose(dense, want, rtol=1e-12, atol=1e-15)


def test_linear_predictors_are_float64_and_chunks_bounded():
    rng = np.random.default_rng(1)
    U = rng.normal(size=(3, 50))
    draws = rng.normal(size=(40, 4, 50)).astype(np.float32)
    chunks = list(calibration._draw_chunks(U, draws, max_elements=1000))
    # a few rows: slices of at most max_elements draw values (4 * 50 per draw)
    assert [len(c) for c in chunks] == [5] * 8
    mu = np.concatenate(chunks)
    assert mu.dtype == np.float64
    np.testing.assert_allclose(mu, np.einsum("dp,slp->sdl", U, draws.astype(np.float64)),
                               rtol=1e-13, atol=1e-13)


def test_summaries_accumulate_in_float64(probit, dolda_model):
    for draws in (probit.eta_draws_, dolda_model.eta_draws_):
        exact = draws.astype(np.float64)
        np.testing.assert_allclose(draw_mean(draws), exact.mean(axis=0), rtol=1e-13, atol=0)
        # float64 interpolation (one ulp apart at most: numpy's SIMD loops differ by layout;
        # interpolating in float32 is ~1e-8 off)
        np.testing.assert_allclose(draw_quantiles(draws, [0.05, 0.5, 0.95]),
                                   np.quantile(exact, [0.05, 0.5, 0.95], axis=0),
                                   rtol=1e-14, atol=1e-15)
    exact = probit.eta_draws_.astype(np.float64)
    np.testing.assert_allclose(probit.coef_, exact.mean(axis=0)[:, 1:], rtol=1e-13, atol=0)
    np.testing.assert_allclose(probit.intercept_, exact.mean(axis=0)[:, 0], rtol=1e-13)
    summary = probit.coef_summary(level=0.9)
    lo, hi = np.quantile(exact[:, :, 1:], [0.05, 0.95], axis=0)
    np.testing.assert_allclose(summary["lower"], lo.ravel(), rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(summary["upper"], hi.ravel(), rtol=1e-14, atol=1e-15)
    exact = dolda_model.eta_draws_.astype(np.float64)
    np.testing.assert_allclose(dolda_model.coef_.to_numpy(), exact.mean(axis=0), rtol=1e-13,
                               atol=0)
    lo, hi = dolda_model.coef_interval(0.9)
    np.testing.assert_allclose(lo.to_numpy(), np.quantile(exact, 0.05, axis=0), rtol=1e-14,
                               atol=1e-15)
    np.testing.assert_allclose(hi.to_numpy(), np.quantile(exact, 0.95, axis=0), rtol=1e-14,
                               atol=1e-15)


def test_prior_sd_is_the_float64_product_of_the_draws(probit):
    prior_sd = coefficient_prior_sd(probit.tau_draws_, probit.lambda_draws_, 100.0, 1)
    cols = np.arange(6)
    got = prior_sd(slice(3, 9), cols)
    assert got.dtype == np.float64
    tau = probit.tau_draws_[3:9].astype(np.float64)
    lam = probit.lambda_draws_[3:9].astype(np.float64)
    np.testing.assert_array_equal(got[:, :, 1:], tau[:, :, None] * lam)
    np.testing.assert_array_equal(got[:, :, 0], 10.0)


def test_diagnostics_read_float32_draws_without_a_float64_copy(probit, xy):
    idata = probit.to_inference_data()
    eta = idata.posterior["eta"].values
    assert eta.dtype == F32 and np.shares_memory(eta, probit.eta_draws_)
    assert np.shares_memory(idata.posterior["lambda"].values, probit.lambda_draws_)
    table = convergence_table(idata)
    exact = probit.eta_draws_.astype(np.float64)
    np.testing.assert_allclose(table["mean"].to_numpy(), exact.mean(axis=0).ravel(),
                               rtol=1e-13, atol=0)
    np.testing.assert_allclose(table["sd"].to_numpy(), exact.std(axis=0, ddof=1).ravel(),
                               rtol=1e-10, atol=0)
    U = probit._design(xy[0])
    y_index = np.searchsorted(probit.classes_, xy[1])
    np.testing.assert_allclose(pointwise_do_loglik(U, probit.eta_draws_, y_index, 2000),
                               pointwise_do_loglik(U, exact, y_index, 2000),
                               rtol=1e-13, atol=1e-13)


def test_draw_dtype_is_float32():
    assert DRAW_DTYPE == F32
