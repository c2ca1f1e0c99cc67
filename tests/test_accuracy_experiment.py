"""``experiments/accuracy.py --quick`` end to end (issue 12's accuracy study), and its helpers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

pytestmark = [
    pytest.mark.data,
    pytest.mark.skipif(not (DATA / "apache_jira_bugs" / "storm").is_dir(),
                       reason=f"shared data not found at {DATA}"),
]


def test_prediction_spread_finds_the_swallowing_class():
    from experiments.accuracy import prediction_spread

    y = np.array(["a"] * 6 + ["b"] * 3 + ["c"])
    pred = np.array(["a", "a", "c", "c", "c", "c", "c", "b", "b", "c"])
    out = prediction_spread(y, pred)
    assert out["max_overpredicted_class"] == "c" and out["max_overprediction"] == 6.0
    assert out["its_true_count"] == 1 and out["distinct_predicted"] == 3


def test_accuracy_quick(tmp_path, monkeypatch):
    from experiments import accuracy

    monkeypatch.setattr(accuracy, "RESULTS", tmp_path)
    accuracy.main(["run", "--corpus", "jira_storm_meta", "--model", "dolda_words", "--topics",
                   "3", "--iterations", "12", "--words", "50", "--quick", "--data", str(DATA),
                   "--param", "alpha=\"auto\""])
    accuracy.main(["run", "--corpus", "jira_storm_meta", "--model", "svm", "--quick",
                   "--data", str(DATA)])
    [words] = tmp_path.glob("accuracy_jira_storm_meta_dolda_words_K3_12it_quick.json")
    [svm] = tmp_path.glob("accuracy_jira_storm_meta_svm_quick.json")
    w, s = json.loads(words.read_text()), json.loads(svm.read_text())
    assert w["n_words"] == 50 and w["params"] == {"alpha": "auto"}
    assert w["n_covariate_columns"] == 3 and w["n_train"] == len(range(0, 825, 8))
    assert len(w["loglik_total"]) == 12
    for r in (w, s):
        assert 0 <= r["test_accuracy"] <= 1 and 0 <= r["macro_f1"] <= r["test_accuracy"] + 1
        assert r["max_overprediction"] >= 1
    # storm's majority class is 0.40 of the test set: the SVM does better than chance
    assert s["test_accuracy"] > 1 / s["n_classes"]
