"""``DOLDA(calibration_holdout="time")``: the leave-one-out map rescaled by a temperature and
per-class biases on the latest training rows (:mod:`dolda.posterior.drift`)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from dolda.datasets import simulate
from dolda.posterior import calibration, drift
from dolda.posterior.holdout import TIME_ORDER, check_holdout, holds_out
from dolda.posterior.predictors import LooDraws
from _flat import flat_dolda

SMALL = dict(n_topics=3, n_iter=40, n_words=0, progress=False, n_jobs=1, random_state=5)


def _labels(rng, z):
    p = special.softmax(z, axis=-1)
    return np.array([rng.choice(p.shape[1], p=row) for row in p])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("true_t", [0.5, 2.0])
def test_the_temperature_of_sharpened_or_flattened_scores_is_recovered(seed, true_t):
    rng = np.random.default_rng(seed)
    n, L = 3000, 4
    z = rng.normal(size=(n, L)) * 1.5
    y = _labels(rng, true_t * z)  # the labels follow T z: the scores z are off by 1 / T
    t, c = drift.fit_temperature_biases(z[None], np.ones((1, n)), y, biases=False)
    assert t == pytest.approx(true_t, rel=0.12)
    assert np.all(c == 0)


def test_biases_recover_a_shift_of_the_class_prior():
    rng = np.random.default_rng(4)
    n, L = 4000, 3
    z = rng.normal(size=(n, L))
    shift = np.array([1.0, 0.0, -1.0])
    y = _labels(rng, z + shift)
    t, c = drift.fit_temperature_biases(z[None], np.ones((1, n)), y, bias_variance=100.0)
    assert t == pytest.approx(1.0, abs=0.12)
    assert (c - c.mean()) == pytest.approx(shift - shift.mean(), abs=0.15)


def test_a_class_absent_from_the_latest_rows_keeps_a_finite_score():
    rng = np.random.default_rng(6)
    n, L = 300, 3
    z = rng.normal(size=(2, n, L))
    y = rng.integers(0, 2, n)  # class 2 never occurs
    w = np.full((2, n), 0.5)
    t, c = drift.fit_temperature_biases(z, w, y)  # the default penalty, variance 1
    assert np.isfinite(c).all() and c[2] > -4.0  # pulled down, not lost
    stacking = np.hstack([np.zeros((L, 1)), np.eye(L)])
    mapped = drift.rescaled_map(stacking, t, c)
    proba = calibration.stacked_probabilities(rng.normal(size=(50, L)), mapped)
    assert proba[:, 2].min() > 1e-3


def test_the_gradient_is_the_objectives():
    # the fitted point is a stationary point of the penalised objective, checked by finite
    # differences of the objective computed here independently
    rng = np.random.default_rng(8)
    n, L, s = 200, 3, 2
    z = rng.normal(size=(s, n, L)) * 2
    w = rng.dirichlet(np.ones(s), size=n).T
    y = _labels(rng, 0.6 * z[0] + 0.5)  # informative labels: T inside its bounds
    t, c = drift.fit_temperature_biases(z, w, y)
    assert 0.1 < t < 10

    def value(log_t, bias):
        p = special.softmax(np.exp(log_t) * z + bias, axis=-1)[:, np.arange(n), y]
        return -np.log((w * p).sum(axis=0)).sum() + 0.5 * np.sum(bias ** 2)

    h = 1e-5
    base = np.log(t)
    assert abs(value(base + h, c) - value(base - h, c)) / (2 * h) < 1e-2
    for l in range(L):
        e = np.eye(L)[l] * h
        assert abs(value(base, c + e) - value(base, c - e)) / (2 * h) < 1e-2


def test_the_rescaled_map_is_the_temperature_and_biases_on_the_maps_scores():
    rng = np.random.default_rng(9)
    L = 4
    stacking = np.column_stack([rng.normal(size=L), rng.normal(size=(L, 2 * L))])
    stacking[3, 0] = -np.inf  # a class without training rows
    stacking[3, 1:] = 0.0
    mu = rng.normal(size=(5, 7, L))
    t, c = 1.7, rng.normal(size=L)
    expect = special.softmax(t * drift.map_scores(stacking, mu) + c, axis=-1)
    got = calibration.stacked_probabilities(mu, drift.rescaled_map(stacking, t, c))
    assert got == pytest.approx(expect, abs=1e-12)
    assert got[..., 3].max() == 0.0


def test_latest_rows():
    assert drift.latest_rows(1000).tolist() == list(range(800, 1000))
    assert drift.latest_rows(100).tolist() == list(range(50, 100))  # at least 50 rows
    assert drift.latest_rows(30).tolist() == list(range(30))


@pytest.mark.parametrize("good", [None, "time", 0.2])
def test_time_is_a_value_of_calibration_holdout(good):
    assert check_holdout(good) == good
    assert holds_out(good) == isinstance(good, float)


@pytest.mark.parametrize("bad", ["times", "Time", "latest"])
def test_other_strings_are_refused(bad):
    with pytest.raises(ValueError, match="'time'"):
        check_holdout(bad)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=200, n_topics=3, n_classes=3, vocab_size=90, doc_length=30,
                    random_state=3)


def test_the_estimator_rescales_the_same_chains_map(sim, monkeypatch):
    seen = {}
    original = calibration.select_stacking

    def capture(loo, y, n_classes, *args, **kwargs):
        seen.update(loo=loo, y=np.asarray(y))
        return original(loo, y, n_classes, *args, **kwargs)

    monkeypatch.setattr(calibration, "select_stacking", capture)
    plain = flat_dolda(**SMALL).fit(sim.texts, sim.y)
    timed = flat_dolda(calibration_holdout=TIME_ORDER, **SMALL).fit(sim.texts, sim.y)
    # the chain is the same: every row in it, the same seed
    np.testing.assert_array_equal(plain.eta_draws_, timed.eta_draws_)
    assert plain.doc_topic_counts_.shape[0] == len(sim.y) == timed.doc_topic_counts_.shape[0]
    expect, t, c = drift.drift_map(plain.stacking_, seen["loo"], seen["y"])
    np.testing.assert_allclose(timed.stacking_, expect, atol=1e-10)
    assert not np.allclose(timed.stacking_, plain.stacking_)
    assert "latest 20%" in calibration.describe_proba(timed)
    assert list(timed.classes_) == list(plain.classes_)


def test_the_value_survives_save_and_load(sim, tmp_path):
    import dolda

    model = flat_dolda(calibration_holdout="time", **SMALL).fit(sim.texts, sim.y)
    model.save(tmp_path / "m")
    back = dolda.load(tmp_path / "m")
    assert back.calibration_holdout == "time"
    np.testing.assert_array_equal(back.stacking_, model.stacking_)
    np.testing.assert_allclose(back.predict_proba(sim.texts[:20]),
                               model.predict_proba(sim.texts[:20]), atol=1e-12)


def test_cli_time_column_sorts_the_rows_and_calibrates_for_drift(sim, tmp_path):
    import pandas as pd
    from click.testing import CliRunner

    import dolda
    from dolda.cli import main

    rng = np.random.default_rng(0)
    days = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.permutation(len(sim.y)), "D")
    frame = pd.DataFrame({"text": sim.texts, "label": sim.y,
                          "created": days.strftime("%Y-%m-%d")})
    data = tmp_path / "train.csv"
    frame.to_csv(data, index=False)
    out = tmp_path / "model"
    args = ["fit", str(data), "--text", "text", "--label", "label", "--topics", "3",
            "--iterations", "40", "--words", "0", "--quiet", "--threads", "1", "--seed", "5"]
    result = CliRunner().invoke(main, args + ["--time-column", "created", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "latest 20% of the training rows, given in time order" in result.output
    model = dolda.load(out)
    assert model.calibration_holdout == "time"
    # the same fit through the library on the rows sorted by date
    order = np.argsort(days.to_numpy(), kind="stable")
    lib = flat_dolda(calibration_holdout="time", n_topics=3, n_iter=40, n_words=0,
                     progress=False, n_jobs=1, random_state=5).fit(
        [sim.texts[i] for i in order], np.asarray(sim.y)[order])
    np.testing.assert_allclose(model.stacking_, lib.stacking_, atol=1e-10)
    bad = CliRunner().invoke(main, args + ["--time-column", "nope", "--out",
                                           str(tmp_path / "m2")])
    assert bad.exit_code != 0 and "nope" in bad.output
    frame.loc[3, "created"] = "not a date"
    frame.to_csv(tmp_path / "bad.csv", index=False)
    bad = CliRunner().invoke(main, ["fit", str(tmp_path / "bad.csv")] + args[2:]
                             + ["--time-column", "created", "--out", str(tmp_path / "m3")])
    assert bad.exit_code != 0 and "time-column" in bad.output
