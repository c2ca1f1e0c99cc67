"""``DOLDA(calibration_holdout=f)``: the calibration map fitted on the latest training rows,
held out of the chain (:mod:`dolda.posterior.holdout`)."""

import logging

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import dolda
from dolda import DOLDA
from dolda.posterior.holdout import check_holdout, holdout_stacking, split_latest
from dolda.posterior.calibration import LooDraws, loo_log_score, select_stacking, stacking_map
from dolda.design.corpus import Vocabulary
from dolda.datasets import simulate
from _flat import flat_dolda

SMALL = dict(n_topics=3, n_iter=40, n_words=0, progress=False, n_jobs=1, random_state=5)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=150, n_topics=3, n_classes=3, vocab_size=90, doc_length=30,
                    covariates=True, random_state=2)


@pytest.mark.parametrize("bad", [0, 0.0, -0.1, 0.51, 1, "0.2", True, np.nan])
def test_a_bad_share_is_named_before_any_work(bad, sim):
    with pytest.raises(ValueError, match="calibration_holdout"):
        check_holdout(bad)
    with pytest.raises(ValueError, match="calibration_holdout"):
        flat_dolda(calibration_holdout=bad, **SMALL).fit(sim.texts, sim.y)


@pytest.mark.parametrize("good", [None, 0.5, 0.2, np.float32(0.1)])
def test_good_shares_pass(good):
    assert check_holdout(good) == (None if good is None else float(good))


def test_split_keeps_order_and_every_input_kind():
    texts = [f"doc{i} w{i}" for i in range(10)]
    y = np.array(list("ababababab"))
    frame = pd.DataFrame({"r": list("xyzxyzxyzx")}, index=range(100, 110))
    (t1, y1, c1), (t2, y2, c2) = split_latest(texts, y, frame, 0.3)
    assert t1 == texts[:7] and t2 == texts[7:]
    np.testing.assert_array_equal(y1, y[:7])
    np.testing.assert_array_equal(y2, y[7:])
    assert list(c1.r) == list("xyzxyzx") and list(c2.r) == list("yzx")
    assert list(c2.index) == [0, 1, 2]  # row positions, as a fresh frame
    # a Series of texts, sparse covariates, a generator of texts
    (s1, _, m1), (s2, _, m2) = split_latest(pd.Series(texts, index=range(50, 60)), y,
                                            sp.csr_matrix(np.arange(20.).reshape(10, 2)), 0.2)
    assert list(s2) == texts[8:] and list(s2.index) == [0, 1]
    np.testing.assert_array_equal(m2.toarray(), [[16., 17.], [18., 19.]])
    assert m1.shape == (8, 2)
    (g1, _, _), (g2, _, _) = split_latest((t for t in texts), y, None, 0.1)
    assert list(g2) == texts[9:] and len(g1) == 9
    # a Corpus becomes token lists
    corpus = Vocabulary(stop_words=None).fit_transform(texts)
    (_, _, _), (k2, _, _) = split_latest(corpus, y, None, 0.2)
    assert k2 == [corpus.document(8), corpus.document(9)]


def test_split_checks_labels_and_sizes():
    texts = ["a b"] * 5
    with pytest.raises(ValueError, match="leaves 1 for the chain"):
        split_latest(texts[:2], ["x", "y"], None, 0.5)
    with pytest.raises(ValueError, match="1 for the calibration map|0 for the calibration map"):
        split_latest(texts[:2], ["x", "y"], None, 0.2)
    with pytest.raises(ValueError):
        split_latest(texts, ["x", "y", "x"], None, 0.2)  # 5 documents, 3 labels


@pytest.mark.parametrize("drift", [False, True])
def test_the_map_is_fitted_on_the_latest_rows_and_the_chain_on_the_others(sim, drift):
    # holding out the last 30% gives the chain of a plain fit on the first 70% (same seed,
    # same rows), and the map of the held-out rows' out-of-sample predictors under it, not
    # the leave-one-out map of the 70%.  With drift (the latest labels drawn at random,
    # unrelated to the documents) that map is much flatter than the leave-one-out one.
    n = len(sim.y)
    cut = n - int(round(0.3 * n))
    frame = sim.X
    y = sim.y.copy()
    if drift:
        y[cut:] = np.random.default_rng(0).choice(np.unique(sim.y), n - cut)
    held = flat_dolda(calibration_holdout=0.3, **SMALL).fit(sim.texts, y, covariates=frame)
    plain = flat_dolda(**SMALL).fit(sim.texts[:cut], y[:cut], covariates=frame.iloc[:cut])
    np.testing.assert_array_equal(held.eta_draws_, plain.eta_draws_)
    assert held.vocabulary_.words == plain.vocabulary_.words
    want = holdout_stacking(plain, sim.texts[cut:], y[cut:],
                            frame.iloc[cut:].reset_index(drop=True))
    np.testing.assert_allclose(held.stacking_, want, rtol=1e-10, atol=1e-12)
    # the same map from the held-out rows' predictors under every kept draw (20 here, all
    # of which the map keeps), computed here without dolda.posterior.holdout
    U = plain._regressors(sim.texts[cut:], frame.iloc[cut:].reset_index(drop=True))
    draws = plain.eta_draws_.astype(np.float64)
    assert len(draws) == 20
    mu = np.einsum("dp,slp->sdl", U, draws)
    y_index = np.searchsorted(plain.classes_, y[cut:])
    out_of_sample = LooDraws(mu.mean(axis=0), mu, np.full(mu.shape[:2], 1 / 20))
    direct = select_stacking(out_of_sample, y_index, len(plain.classes_))
    np.testing.assert_allclose(held.stacking_, direct, rtol=1e-6, atol=1e-8)
    own = loo_log_score(direct, mu, out_of_sample.w, y_index)
    loo = loo_log_score(plain.stacking_, mu, out_of_sample.w, y_index)
    if drift:  # the leave-one-out map is overconfident on the drifted rows
        assert own > loo + 20
        assert np.abs(held.stacking_[:, 1:]).max() < np.abs(plain.stacking_[:, 1:]).max()
    assert stacking_map(held.stacking_) in ("mu", "mu, log F(mu)")
    proba = held.predict_proba(sim.texts[:5], covariates=frame.iloc[:5])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_held_out_rows_of_an_unseen_class_are_left_out_with_a_warning(sim, caplog):
    y = sim.y.astype(object)
    y[-3:] = "brand-new"  # a class only among the latest rows
    with caplog.at_level(logging.WARNING, logger="dolda.posterior.holdout"):
        model = flat_dolda(calibration_holdout=0.2, **SMALL).fit(sim.texts, y)
    assert "brand-new" not in model.classes_
    assert "3 of 30 held-out rows" in caplog.text and "brand-new" in caplog.text
    y[-30:] = "brand-new"
    with pytest.raises(ValueError, match="none of the latest 30 rows has a class"):
        split_latest(sim.texts, y, None, 0.2)  # refused before the chain runs
    with pytest.raises(ValueError, match="none of the latest 30 rows has a class"):
        flat_dolda(calibration_holdout=0.2, **SMALL).fit(sim.texts, y)


def test_the_parameter_survives_save_and_load(sim, tmp_path):
    model = flat_dolda(calibration_holdout=0.25, **SMALL).fit(sim.texts, sim.y)
    model.save(tmp_path / "m")
    back = dolda.load(tmp_path / "m")
    assert back.calibration_holdout == 0.25
    np.testing.assert_array_equal(back.stacking_, model.stacking_)
    np.testing.assert_allclose(back.predict_proba(sim.texts[:4]),
                               model.predict_proba(sim.texts[:4]), rtol=1e-12)


def test_cli_fit_holds_out_the_latest_rows(sim, tmp_path):
    from click.testing import CliRunner

    from dolda.cli import main

    data = tmp_path / "train.csv"
    pd.DataFrame({"text": sim.texts, "label": sim.y}).to_csv(data, index=False)
    out = tmp_path / "model"
    result = CliRunner().invoke(main, [
        "fit", str(data), "--text", "text", "--label", "label", "--topics", "3",
        "--iterations", "30", "--words", "0", "--quiet", "--threads", "1",
        "--calibration-holdout", "0.2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "latest 20% of the training rows" in result.output
    assert "training accuracy" in result.output
    assert dolda.load(out).calibration_holdout == 0.2
    bad = CliRunner().invoke(main, ["fit", str(data), "--text", "text", "--label", "label",
                                    "--calibration-holdout", "0.7", "--out",
                                    str(tmp_path / "m2")])
    assert bad.exit_code != 0 and "calibration-holdout" in bad.output

