"""The compact word block of the kept draws (issue 33, "All words").

With word covariates a DOLDA fit keeps the word columns' coefficient draws in float16
(the float32 rounding of the chain's state, rounded again) beside the other columns in
float32, and the word columns' local scales only as summaries over the window of
``phi_``; model files (format version 2) and checkpoints hold that layout, older files
and checkpoints still load; predictions, intervals, explanations work on it.
"""

import json

import numpy as np
import scipy.sparse as sp
import pytest

import dolda
from dolda import DOLDA, io
from dolda.datasets import simulate
from _recording import record_probit_states
from dolda.posterior import calibration
from dolda.utils.draws import (BlockDraws, WORD_DRAW_DTYPE, as_word_draws, draw_mean,
                               draw_quantiles, split_columns)
from _flat import flat_dolda

KW = dict(n_topics=3, alpha=0.1, random_state=4, progress=False, n_jobs=1, rare_share=0.0)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


@pytest.fixture(scope="module")
def corpus():
    return simulate(n_docs=100, n_topics=3, n_classes=3, vocab_size=70, doc_length=25,
                    random_state=4)


@pytest.fixture(scope="module")
def fitted(corpus):
    return flat_dolda(n_iter=16, burn_in=6, n_words=12, phi_draws=4, **KW).fit(corpus.texts,
                                                                          corpus.y)




# ------------------------------------------------------------------ BlockDraws
def test_block_draws_index_like_the_float32_array():
    rng = np.random.default_rng(0)
    full = rng.normal(size=(7, 3, 11)).astype(np.float32)
    rest, words = split_columns(full, 4, 9)
    b = BlockDraws(rest, words, 4)
    ref = np.concatenate([full[:, :, :4], words.astype(np.float32), full[:, :, 9:]], axis=2)
    assert b.shape == ref.shape and len(b) == 7 and b.dtype == F32
    assert b.nbytes == rest.nbytes + words.nbytes < full.nbytes
    np.testing.assert_array_equal(np.asarray(b), ref)
    for key in [slice(None), slice(2, 5), 3, [0, 6, 2], np.array([1, 1]),
                (slice(None), 1), (slice(None), slice(0, 2), [0, 5, 10, 8]),
                (Ellipsis, slice(8, 11)), (Ellipsis, 0), (Ellipsis, 6), (2, 1, 5),
                (slice(1, 4), 2, slice(3, 10, 2)), (slice(None), slice(None), -1)]:
        np.testing.assert_array_equal(b[key], ref[key], err_msg=str(key))
    np.testing.assert_array_equal(draw_mean(b), np.mean(ref, axis=0, dtype=np.float64))
    np.testing.assert_array_equal(draw_quantiles(b, [0.1, 0.9]),
                                  draw_quantiles(ref, [0.1, 0.9]))
    both = BlockDraws.concatenate([b, b.take_draws(slice(0, 2))])
    np.testing.assert_array_equal(np.asarray(both), np.concatenate([ref, ref[:2]]))


def test_word_draws_round_through_float32_and_clip():
    x = np.array([1.0 + 2.0**-12 + 2.0**-30, -3e5, 7e-9, 0.1])
    out = as_word_draws(x)
    assert out.dtype == WORD_DRAW_DTYPE
    np.testing.assert_array_equal(out, x.astype(np.float32).clip(-65504, 65504).astype(
        np.float16))
    assert out[1] == -65504 and abs(out[2] - 7e-9) < 3e-8
    np.testing.assert_array_equal(as_word_draws(x.astype(np.float32)), out)


# ------------------------------------------------------------------ what a fit keeps
def test_fit_keeps_the_word_block_compact(corpus, monkeypatch):
    seen = record_probit_states(monkeypatch)
    m = flat_dolda(n_iter=12, burn_in=4, n_words=12, phi_draws=3, **KW).fit(corpus.texts,
                                                                        corpus.y)
    eta = m.eta_draws_
    n_w = len(m.word_features_.words_)
    start = m.feature_names_.index("word=" + m.word_features_.words_[0])
    assert isinstance(eta, BlockDraws) and (eta.start, eta.stop) == (start, start + n_w)
    assert eta.words.dtype == F16 and eta.rest.dtype == F32
    assert m.lambda_draws_.shape == eta.rest.shape and m.lambda_draws_.dtype == F32
    rest = np.r_[0:start, start + n_w:eta.shape[2]]
    for slot, it in enumerate(range(4, 12)):
        e, tau2, lam2 = seen[it]
        np.testing.assert_array_equal(eta.rest[slot], e[:, rest].astype(np.float32))
        np.testing.assert_array_equal(eta.words[slot], as_word_draws(e[:, start:start + n_w]))
        np.testing.assert_array_equal(m.lambda_draws_[slot],
                                      np.sqrt(lam2[:, rest]).astype(np.float32))
    # the word columns' lambda: mean and root mean square over the last phi_draws iterations
    lam = np.stack([np.sqrt(seen[it][2][:, start:start + n_w]) for it in range(9, 12)])
    np.testing.assert_allclose(m.lambda_word_stats_[0], lam.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(m.lambda_word_stats_[1], np.sqrt((lam**2).mean(axis=0)),
                               rtol=1e-12)
    # coef_ is the float64 mean of what is kept
    np.testing.assert_array_equal(m.coef_.to_numpy(), draw_mean(eta))


def test_interpretation_reads_the_compact_draws(fitted, corpus):
    m = fitted
    full = np.asarray(m.eta_draws_)
    lo, hi = m.coef_interval(0.9)
    # one ulp at most (numpy's SIMD loops differ by memory layout)
    np.testing.assert_allclose(lo.to_numpy(), draw_quantiles(full, [0.05, 0.95])[0], rtol=1e-14,
                               atol=1e-15)
    label = m.classes_[0]
    assert set(m.signal_covariates(label, level=0.5).index) <= set(m.feature_names_)
    table = m.explain(corpus.texts[0])
    assert len(table) and np.isfinite(table["contribution"]).all()
    idata = m.to_inference_data()
    assert idata.posterior["eta"].shape[-1] == len(m.feature_names_)
    assert idata.posterior["lambda"].shape[-1] == m.lambda_draws_.shape[2] - 1
    # predictions from the block layout equal those from the assembled float32 array
    U = m._regressors(corpus.texts[:30])
    np.testing.assert_array_equal(
        calibration.class_probabilities(U, m.eta_draws_, m.proba, m.stacking_),
        calibration.class_probabilities(U, full, m.proba, m.stacking_))


# ------------------------------------------------------------------ model files
def test_model_file_round_trips_the_compact_block(fitted, corpus, tmp_path):
    path = fitted.save(tmp_path / "m")
    header = json.loads((path / "model.json").read_text())
    assert header["format_version"] == io.FORMAT_VERSION == 2
    arrays = header["arrays"]
    assert arrays["eta_word_draws"]["dtype"] == "<f2"
    assert arrays["lambda_word_stats"]["dtype"] == "<f8"
    loaded = dolda.load(path)
    assert isinstance(loaded.eta_draws_, BlockDraws)
    np.testing.assert_array_equal(loaded.eta_draws_.words, fitted.eta_draws_.words)
    np.testing.assert_array_equal(loaded.eta_draws_.rest, fitted.eta_draws_.rest)
    assert loaded.eta_draws_.start == fitted.eta_draws_.start
    np.testing.assert_array_equal(loaded.lambda_word_stats_, fitted.lambda_word_stats_)
    X = corpus.texts[:25]
    np.testing.assert_array_equal(loaded.predict_proba(X), fitted.predict_proba(X))
    np.testing.assert_array_equal(loaded.coef_.to_numpy(), fitted.coef_.to_numpy())


def test_files_without_words_stay_version_1(corpus, tmp_path):
    m = flat_dolda(n_iter=8, n_words=0, **KW).fit(corpus.texts, corpus.y)
    assert isinstance(m.eta_draws_, np.ndarray) and m.lambda_word_stats_ is None
    path = m.save(tmp_path / "m")
    header = json.loads((path / "model.json").read_text())
    assert header["format_version"] == io.FORMAT_VERSION_PLAIN == 1
    assert "eta_word_draws" not in header["arrays"]


def _write_version_1(model, path):
    """``model`` written as dolda before the compact word block wrote it: format version 1,
    every column in eta_draws (float32) and lambda_draws, no word summaries."""
    meta, arrays = model._to_state()
    eta = model.eta_draws_
    arrays["eta_draws"] = np.asarray(eta)
    n_w = eta.words.shape[2]
    word_lam = np.broadcast_to(model.lambda_word_stats_[1].astype(np.float32),
                               (len(eta), eta.shape[1], n_w))
    lam = model.lambda_draws_
    arrays["lambda_draws"] = np.concatenate(
        [lam[:, :, :eta.start], word_lam, lam[:, :, eta.start:]], axis=2)
    arrays["eta_word_draws"] = arrays["lambda_word_stats"] = None
    header = io._base_header("dolda.DOLDA")
    header["meta"] = meta
    assert header["format_version"] == 1
    return io._write_directory(path, header, arrays, overwrite=False, compress=False)


def test_a_version_1_file_with_words_loads_and_predicts(fitted, corpus, tmp_path):
    path = _write_version_1(fitted, tmp_path / "old")
    old = dolda.load(path)
    assert isinstance(old.eta_draws_, np.ndarray) and old.eta_draws_.dtype == F32
    assert old.lambda_draws_.shape == old.eta_draws_.shape
    assert old.lambda_word_stats_ is None
    np.testing.assert_array_equal(old.eta_draws_, np.asarray(fitted.eta_draws_))
    X = corpus.texts[:25]
    np.testing.assert_array_equal(old.predict_proba(X), fitted.predict_proba(X))
    # it saves again in its own layout
    again = dolda.load(old.save(tmp_path / "again"))
    np.testing.assert_array_equal(again.eta_draws_, old.eta_draws_)


@pytest.mark.parametrize("change, message", [
    (lambda a: a.__setitem__("eta_word_draws", a["eta_word_draws"].astype(np.float32)),
     "eta_word_draws.*float16"),
    (lambda a: a.__setitem__("eta_word_draws", a["eta_word_draws"][:, :, 1:]),
     "eta_word_draws.*shape"),
    (lambda a: a.__setitem__("lambda_word_stats", a["lambda_word_stats"][:1]),
     "lambda_word_stats.*shape"),
    (lambda a: a.__setitem__("lambda_word_stats", a["lambda_word_stats"].astype(np.float32)),
     "lambda_word_stats.*float64"),
    (lambda a: a.pop("lambda_word_stats"), "lambda_word_stats.*missing"),
    (lambda a: a.__setitem__("eta_draws", np.asarray(a["eta_draws"])[:, :, 1:]),
     "eta_draws.*shape"),
    (lambda a: a["eta_word_draws"].__setitem__((0, 0, 0), np.inf), "eta_word_draws.*infinite"),
    (lambda a: a["lambda_word_stats"].__setitem__((0, 0, 0), -1.0), "lambda_word_stats.*< 0"),
])
def test_schema_refuses_a_bad_word_block(fitted, tmp_path, change, message):
    meta, arrays = fitted._to_state()
    arrays = {k: (None if v is None else np.array(v)) for k, v in arrays.items()}
    change(arrays)
    header = io._base_header("dolda.DOLDA", arrays)
    header["meta"] = meta
    path = io._write_directory(tmp_path / "bad", header, arrays, overwrite=False,
                               compress=False)
    with pytest.raises(io.ModelFormatError, match=message):
        dolda.load(path)


def test_schema_refuses_a_word_block_without_word_features(fitted, tmp_path):
    meta, arrays = fitted._to_state()
    names = [n for n in meta["feature_names"] if not n.startswith("word=")]
    meta = dict(meta, word_features=None, feature_names=names)
    header = io._base_header("dolda.DOLDA", arrays)
    header["meta"] = meta
    path = io._write_directory(tmp_path / "bad", header, arrays, overwrite=False,
                               compress=False)
    with pytest.raises(io.ModelFormatError, match="eta_word_draws.*no word covariates"):
        dolda.load(path)


# ------------------------------------------------------------------ chains
def test_resumed_and_pooled_chains_keep_the_word_summaries_exactly(corpus, tmp_path,
                                                                   monkeypatch):
    from dolda.sampler import gibbs_iteration as chain

    kw = dict(n_iter=12, burn_in=4, n_words="all", phi_draws=5, **KW)
    full = flat_dolda(**kw).fit(corpus.texts, corpus.y)
    real_step = chain.dolda_step

    def crash_at_10(seed, it, *args):  # inside the window (iterations 7 .. 11)
        if it == 10:
            raise RuntimeError("the machine went down")
        return real_step(seed, it, *args)

    monkeypatch.setattr(chain, "dolda_step", crash_at_10)
    ckpt = tmp_path / "ck"
    with pytest.raises(RuntimeError, match="went down"):
        flat_dolda(checkpoint=ckpt, checkpoint_every=3, **kw).fit(corpus.texts, corpus.y)
    monkeypatch.setattr(chain, "dolda_step", real_step)
    meta, arr = io.load_checkpoint(ckpt)
    assert meta["next_iteration"] == 9 and arr["eta_word_draws"].dtype == F16
    assert arr["lambda_word_sums"].shape == (2,) + full.lambda_word_stats_.shape[1:]
    assert io.read_header(ckpt)["format_version"] == 2
    resumed = flat_dolda(checkpoint=ckpt, **kw).fit(corpus.texts, corpus.y, resume=ckpt)
    np.testing.assert_array_equal(resumed.eta_draws_.rest, full.eta_draws_.rest)
    np.testing.assert_array_equal(resumed.eta_draws_.words, full.eta_draws_.words)
    np.testing.assert_array_equal(resumed.lambda_draws_, full.lambda_draws_)
    np.testing.assert_array_equal(resumed.lambda_word_stats_, full.lambda_word_stats_)
    assert full.lambda_word_rows_.shape[1] >= 1  # some rows hold a word of their own
    np.testing.assert_array_equal(resumed.lambda_word_rows_, full.lambda_word_rows_)
    # extended: the window lies after the old end, so the summaries are exact too
    longer = flat_dolda(**dict(kw, n_iter=20)).fit(corpus.texts, corpus.y)
    extended = flat_dolda(**dict(kw, n_iter=20)).fit(corpus.texts, corpus.y, resume=ckpt)
    np.testing.assert_array_equal(np.asarray(extended.eta_draws_),
                                  np.asarray(longer.eta_draws_))
    np.testing.assert_array_equal(extended.lambda_word_stats_, longer.lambda_word_stats_)
    np.testing.assert_array_equal(extended.lambda_word_rows_, longer.lambda_word_rows_)
    np.testing.assert_array_equal(extended.stacking_, longer.stacking_)
    # two chains: the word block pooled, the summaries over both windows
    two = flat_dolda(**dict(kw, n_chains=2)).fit(corpus.texts, corpus.y)
    assert isinstance(two.eta_draws_, BlockDraws) and len(two.eta_draws_) == 16
    np.testing.assert_array_equal(two.eta_draws_.words[:8], full.eta_draws_.words)


def test_an_old_layout_checkpoint_resumes_before_the_window_only(corpus, tmp_path,
                                                                 monkeypatch):
    from dolda.sampler import gibbs_iteration as chain

    kw = dict(n_iter=12, burn_in=4, n_words=12, phi_draws=3, **KW)
    full = flat_dolda(**kw).fit(corpus.texts, corpus.y)
    real_step = chain.dolda_step

    def crash_at_7(seed, it, *args):
        if it == 7:
            raise RuntimeError("the machine went down")
        return real_step(seed, it, *args)

    monkeypatch.setattr(chain, "dolda_step", crash_at_7)
    ckpt = tmp_path / "ck"
    with pytest.raises(RuntimeError, match="went down"):
        flat_dolda(checkpoint=ckpt, checkpoint_every=6, **kw).fit(corpus.texts, corpus.y)
    monkeypatch.setattr(chain, "dolda_step", real_step)
    meta, arr = io.load_checkpoint(ckpt)
    assert meta["next_iteration"] == 6  # before the window (iterations 9 .. 11)
    # the layout before the compact block: every column in eta_draws / lambda_draws, with
    # the float32 draws the older code kept (the word block's float32 values, here the
    # float16 ones, which round to themselves)
    start = full.eta_draws_.start
    old = {k: v for k, v in arr.items() if k not in ("eta_word_draws", "lambda_word_sums")}
    words = arr["eta_word_draws"].astype(np.float32)
    old["eta_draws"] = np.concatenate([arr["eta_draws"][:, :, :start], words,
                                       arr["eta_draws"][:, :, start:]], axis=2)
    lam_w = np.sqrt(arr["lam2"][:, start:start + words.shape[2]]).astype(np.float32)
    lam_w = np.broadcast_to(lam_w, words.shape) * (np.arange(len(words)) < 2)[:, None, None]
    old["lambda_draws"] = np.concatenate([arr["lambda_draws"][:, :, :start], lam_w,
                                          arr["lambda_draws"][:, :, start:]], axis=2)
    io.save_checkpoint(ckpt, meta, old)
    assert io.read_header(ckpt)["format_version"] == 1
    resumed = flat_dolda(checkpoint=ckpt, **kw).fit(corpus.texts, corpus.y, resume=ckpt)
    np.testing.assert_array_equal(np.asarray(resumed.eta_draws_), np.asarray(full.eta_draws_))
    np.testing.assert_array_equal(resumed.lambda_word_stats_, full.lambda_word_stats_)
    # the same checkpoint stopped inside the window cannot be rebuilt: refused in one line
    io.save_checkpoint(ckpt, dict(meta, next_iteration=10), old)
    with pytest.raises(ValueError, match="older dolda.*refit") as err:
        flat_dolda(checkpoint=ckpt, **kw).fit(corpus.texts, corpus.y, resume=ckpt)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------ n_words="all"
def test_all_words(corpus):
    m = flat_dolda(n_iter=6, n_words="all", **KW).fit(corpus.texts, corpus.y)
    assert m.word_features_.words_ == list(m.vocabulary_.words)
    assert m.get_params()["words__n"] == "all"
    with pytest.raises(ValueError, match="n_words.*'all'") as err:
        flat_dolda(n_words="every", **KW).fit(corpus.texts, corpus.y)
    assert "\n" not in str(err.value)


# ------------------------------------------------------------------ the calibration map
def test_leave_one_out_reads_the_kept_rows_as_every_word_lambda(corpus, monkeypatch):
    """Words only one training row holds: their lambda is kept per row and draw, and the
    leave-one-out pass gives what it gave from every draw of every word lambda."""
    from dolda.posterior.scores import coefficient_prior_sd

    texts = [t + (f" hapax{d}x" if d % 3 == 0 else "") for d, t in enumerate(corpus.texts)]
    seen = record_probit_states(monkeypatch)
    m = flat_dolda(n_iter=12, burn_in=4, n_words="all", **KW).fit(texts, corpus.y)
    eta = m.eta_draws_
    names = m.feature_names_[eta.start:eta.stop]
    hapax = [j for j, n in enumerate(names) if n.startswith("word=hapax")]
    assert len(hapax) == 34
    U = m._regressors(texts)
    single = np.flatnonzero(calibration.singleton_columns(U)[eta.start:eta.stop])
    assert set(hapax) <= set(single)
    rows = np.unique(sp.csc_matrix(U.toarray()[:, eta.start + single]).indices)
    np.testing.assert_array_equal(m.lambda_word_row_ids_, rows)
    assert set(range(0, 100, 3)) <= set(rows)
    assert m.lambda_word_rows_.shape == (8, len(rows), 3) and m.lambda_word_rows_.dtype == F32
    lam = np.stack([np.sqrt(seen[it][2]) for it in range(4, 12)]).astype(np.float32)
    y = np.searchsorted(m.classes_, corpus.y)
    before = coefficient_prior_sd(m.tau_draws_, lam, m.prior_variance)  # every lambda
    now = coefficient_prior_sd(m.tau_draws_, m.lambda_draws_, m.prior_variance,
                               word_block=(eta.start, eta.stop, m.lambda_word_row_ids_,
                                           m.lambda_word_rows_))
    a = calibration.loo_draws(U, eta, y, prior_sd=before, n_keep=4)
    b = calibration.loo_draws(U, eta, y, prior_sd=now, n_keep=4)
    # float32 rounding of the row sums instead of the lambdas: 1e-7 relative
    np.testing.assert_allclose(b.mean, a.mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b.w, a.w, rtol=1e-4, atol=1e-7)
    # without the rows' variance (a bug that drops it) the weights move
    now.row_variance = lambda draws, n: np.zeros((len(range(*draws.indices(8))), n, 3))
    c = calibration.loo_draws(U, eta, y, prior_sd=now, n_keep=4)
    assert np.abs(c.w - a.w).max() > 1e-3
