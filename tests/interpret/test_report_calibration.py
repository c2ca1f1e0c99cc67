"""``dolda score`` and the HTML report show the same calibration figures (issue 48): Brier,
15-bin and equal-mass ECE with its interval, the plain sentence; the report's diagram names
the method and draws other models' curves when given."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from dolda.datasets import simulate
from dolda.posterior import reliability
from _flat import flat_dolda


@pytest.fixture(scope="module")
def fitted():
    sim = simulate(n_docs=160, n_topics=3, n_classes=3, vocab_size=80, doc_length=30,
                   random_state=4)
    model = flat_dolda(n_topics=3, n_iter=40, n_words=0, progress=False, n_jobs=1,
                       random_state=3, calibration_holdout="time").fit(sim.texts[:120],
                                                                       sim.y[:120])
    return model, sim.texts[120:], np.asarray(sim.y[120:])


def test_score_prints_and_writes_the_figures(fitted, tmp_path):
    from click.testing import CliRunner

    from dolda.cli import main

    model, texts, y = fitted
    model.save(tmp_path / "m")
    data = tmp_path / "test.csv"
    pd.DataFrame({"text": texts, "label": y}).to_csv(data, index=False)
    out = tmp_path / "scores.json"
    result = CliRunner().invoke(main, ["score", str(tmp_path / "m"), str(data), "--text",
                                       "text", "--label", "label", "--out", str(out)])
    assert result.exit_code == 0, result.output
    scores = json.loads(out.read_text())
    proba = model.predict_proba(texts)
    cols = np.searchsorted(model.classes_, y)
    expect = reliability.calibration_figures(proba, cols)
    assert scores["brier"] == pytest.approx(expect["brier"], abs=1e-9)
    assert scores["ece"] == pytest.approx(expect["ece"], abs=1e-9)
    assert scores["ece_equal_mass"] == pytest.approx(expect["ece_equal_mass"], abs=1e-9)
    assert scores["ece_equal_mass_interval"] == pytest.approx(
        [expect["ece_equal_mass_low"], expect["ece_equal_mass_high"]], abs=1e-9)
    assert f"Brier     {expect['brier']:.3f}" in result.output
    assert "When the model says about" in result.output
    assert scores["calibration_sentence"].startswith("When the model says about")


def test_report_shows_the_figures_the_method_and_the_peers(fitted, tmp_path):
    from dolda.interpret.report import make_report

    model, texts, y = fitted
    rng = np.random.default_rng(0)
    other = rng.dirichlet(np.ones(len(model.classes_)), size=len(y))
    page = tmp_path / "r.html"
    make_report(model, page, texts=texts, y=y, reference_proba={"a peer model": other})
    html = page.read_text()
    assert "When the model says about" in html
    assert "equal-mass bins; bootstrap 90%" in html and "Brier score" in html
    assert "a peer model" in html                         # the peer's curve in the legend
    assert "calibrated for drift, latest 20%" in html      # the method named
    plain = tmp_path / "plain.html"
    make_report(model, plain, texts=texts, y=y)
    assert "a peer model" not in plain.read_text()
