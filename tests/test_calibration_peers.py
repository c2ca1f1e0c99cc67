"""``python -m experiments.calibration_peers run --quick``: the peers' comparison end to end on
a small cut of one JIRA tracker (every 8th report, 40 iterations)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))


@pytest.mark.data
@pytest.mark.skipif(not (DATA / "apache_jira_bugs").is_dir(), reason="shared data not found")
def test_quick_run_scores_every_model_on_the_same_rows(tmp_path, monkeypatch):
    from experiments import calibration_peers as cp

    monkeypatch.setattr(cp, "RESULTS", tmp_path)
    done, path = cp.run(["jira_storm"], seeds=(1,), quick=True, data=DATA)
    r = json.loads(path.read_text())["jira_storm"]
    names = {"logreg", "svc_platt"} | {f"dolda_{v}_seed1" for v in cp.VARIANTS}
    assert set(r["models"]) == names
    for s in r["models"].values():
        assert 0 <= s["ece"] <= 1 and s["ece_mass_low"] <= s["ece_mass_high"]
        assert 0 <= s["brier"] <= 2 and s["log_loss"] > 0
        assert sum(s["curve"]["count"]) == r["n_test"]
    m = r["models"]
    # the same chain: every variant of DOLDA has today's predicted classes where the map only
    # rescales all classes alike (a temperature alone keeps the argmax)
    assert m["dolda_temperature_all_seed1"]["accuracy"] == m["dolda_today_seed1"]["accuracy"]
    assert r["dolda"]["seed1"][0]["bcts_latest"]["seconds"] < 0.1 * r["dolda"]["seed1"][0][
        "fit_seconds"]
    md = cp.write_table(quick=True)
    text = md.read_text()
    assert "| jira_storm |" in text and "LinearSVC + Platt" in text
    assert np.isfinite(r["models"]["logreg"]["accuracy"])
