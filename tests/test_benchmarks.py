"""The benchmark harness, and every benchmark's ``--quick`` path on tiny simulated data.

The harness is tested for what its figures rest on: the order of the calls (warm-up, then
rounds A B A B ...), the per-round ratios and their medians, and the two files it writes.
Each benchmark then runs in this process (``main(argv)``) with ``--quick`` into a temporary
folder, and its JSON is checked for the fields the Markdown and the docs read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks import harness  # noqa: E402


# ------------------------------------------------------------------ harness
def test_interleave_warms_up_then_alternates_the_contestants():
    log = []
    times = harness.interleave({"A": lambda: 0.5, "B": lambda: None}, rounds=3, warmup=2,
                               log=log)
    assert log[:4] == [("warmup", "A"), ("warmup", "A"), ("warmup", "B"), ("warmup", "B")]
    assert [name for phase, name in log[4:]] == ["A", "B"] * 3
    assert all(phase == "round" for phase, _ in log[4:])
    assert times["A"] == [0.5, 0.5, 0.5]  # a float returned is the contestant's own timing
    assert len(times["B"]) == 3 and all(0 <= t < 0.5 for t in times["B"])  # None: timed


def test_interleave_times_a_call_that_returns_an_array():
    times = harness.interleave({"A": lambda: np.ones(3)}, rounds=1, warmup=0)
    assert 0 <= times["A"][0] < 1


def test_interleave_refuses_no_rounds():
    with pytest.raises(ValueError, match="rounds must be >= 1"):
        harness.interleave({"A": lambda: None}, rounds=0)


def test_summarise_ratios_are_per_round_and_their_median():
    s = harness.summarise({"ref": [1.0, 2.0, 4.0], "x": [2.0, 2.0, 2.0]})
    assert s["x"]["reference"] == "ref"
    assert s["x"]["ratio_rounds"] == [2.0, 1.0, 0.5]
    assert s["x"]["median_ratio"] == 1.0  # not median(x) / median(ref) = 1.0 by chance:
    s = harness.summarise({"ref": [1.0, 1.0, 10.0], "x": [3.0, 3.0, 3.0]})
    assert s["x"]["median_ratio"] == 3.0 and s["x"]["ratio_rounds"][2] == pytest.approx(0.3)
    assert s["x"]["speed_ratio"] == pytest.approx(1 / 3)
    assert s["x"]["median_seconds"] == 3.0 and s["x"]["best_seconds"] == 3.0
    assert s["ref"]["median_ratio"] == 1.0


def test_summarise_names_a_missing_reference():
    with pytest.raises(ValueError, match="reference 'z' is not a contestant"):
        harness.summarise({"a": [1.0]}, "z")


def test_run_writes_json_and_markdown_with_the_machine(tmp_path):
    args = harness.parser("x").parse_args(["--quick", "--out", str(tmp_path),
                                           "--blas-threads", "1"])
    run = harness.start("unit", args, ["--quick"])
    run.note("peer skipped")
    times = run.interleave({"A": lambda: 1.0, "B": lambda: 2.0}, rounds=2, warmup=0)
    summary = harness.summarise(times)
    run.finish({"contestants": summary}, harness.table(summary), "A title")
    data = json.loads((tmp_path / "unit.json").read_text())
    assert data["benchmark"] == "unit" and data["quick"] is True
    assert data["command"] == f"python -m {__name__} --quick"
    m = data["machine"]
    for key in ("platform", "cpu_count", "affinity", "load_average", "versions", "commit",
                "blas_threads_cap", "thread_pools"):
        assert key in m
    assert m["blas_threads_cap"] == 1 and set(m["versions"]) >= {"numpy", "numba"}
    assert data["notes"] == ["peer skipped"]
    assert data["result"]["contestants"]["B"]["ratio_rounds"] == [2.0, 2.0]
    md = (tmp_path / "unit.md").read_text()
    assert md.startswith("# A title\n") and "quick smoke run" in md
    assert "| B | 2 | 2 | 2.00, 2.00 | 2.00x | 0.50x |" in md
    assert "Note: peer skipped" in md and "Reproduce: `python -m" in md


def test_rounds_default_and_refusal():
    p = harness.parser("x")
    assert harness.rounds(p.parse_args([]), full=5, quick=2) == 5
    assert harness.rounds(p.parse_args(["--quick"]), full=5, quick=2) == 2
    assert harness.rounds(p.parse_args(["--rounds", "3"]), full=5) == 3
    with pytest.raises(SystemExit, match="--rounds must be >= 1"):
        harness.rounds(p.parse_args(["--rounds", "0"]), full=5)


# ------------------------------------------------------------------ the benchmarks
def quick(module, tmp_path, *extra, name=None):
    """Run ``benchmarks.<module>`` with ``--quick`` into ``tmp_path``; its JSON."""
    import importlib

    mod = importlib.import_module(f"benchmarks.{module}")
    mod.main(["--quick", "--threads", "1", "--out", str(tmp_path), *extra])
    data = json.loads((tmp_path / f"{name or module.removeprefix('bench_')}.json").read_text())
    assert data["quick"] is True and data["benchmark"] == (name or module.removeprefix("bench_"))
    assert (tmp_path / f"{name or module.removeprefix('bench_')}.md").is_file()
    return data


def test_bench_dolda_quick_measures_the_defaults_first(tmp_path):
    data = quick("bench_dolda", tmp_path, name="dolda_throughput")
    [row] = data["result"]["results"]
    names = list(row["contestants"])
    assert names[:2] == ["DOLDA defaults", "DOLDA topics only"]
    assert row["contestants"]["DOLDA defaults"]["params"]["n_words"] > 0
    assert row["contestants"]["DOLDA topics only"]["params"]["n_words"] == 0
    for c in row["contestants"].values():
        assert len(c["seconds"]) == 2 and c["median_tokens_per_s"] > 0
    if harness.optional("tomotopy") is None:
        assert row["reference"] == "DOLDA defaults" and "tomotopy" in data["notes"][0]
    else:
        assert "tomotopy LDAModel" in names


def test_bench_lda_quick(tmp_path):
    data = quick("bench_lda", tmp_path, "--thread-counts", "1", name="lda_throughput")
    [row] = data["result"]["results"]
    assert row["dolda"]["tokens_per_s"] > 0 and row["dolda"]["sampler"] in ("dense", "sparse")
    assert len(row["contestants"]["dolda LDA"]["seconds"]) == 2


def test_bench_predict_quick(tmp_path):
    data = quick("bench_predict", tmp_path, "--single", "5", name="predict")
    rows = data["result"]["rows"]
    assert [r["workload"] for r in rows] == ["batch", "single"]
    for r in rows:
        assert list(r["contestants"])[:2] == ["auto f32", "auto"]
        assert r["contestants"]["auto f32"]["docs_per_s_median"] > 0
    assert rows[1]["contestants"]["auto"]["documents"] == 5


def test_bench_startup_quick_times_the_imports(tmp_path):
    data = quick("bench_startup", tmp_path, name="startup")
    summary = data["result"]["summary"]
    assert set(summary) == {"import dolda", "import dolda.cli"}
    assert all(s["wall_median"] > 0 for s in summary.values())


def test_bench_report_quick(tmp_path):
    data = quick("bench_report", tmp_path, name="report_sim")
    r = data["result"]
    assert 0 < r["size_mb"] < r["budget"]["size_mb"] and r["classes"] == 3
    assert list(r["contestants"]) == ["predict_proba", "make_report"]
    assert r["ratio_to_predict_proba"] > 0


def test_bench_serve_quick_answers_every_request(tmp_path):
    data = quick("bench_serve", tmp_path, name="serve")
    r = data["result"]
    assert r["requests"] == 40 and r["errors"] == 0 and r["statuses"] == {"200": 40}
    assert 0 < r["latency_ms"]["p50"] <= r["latency_ms"]["p99"] <= r["latency_ms"]["max"]


def test_bench_triage_quick(tmp_path):
    data = quick("bench_triage", tmp_path, name="triage")
    r = data["result"]
    assert r["classes"] == 3 and r["train_rows"] == 150
    assert any(p["step"].startswith("sampling") for p in r["phases"])
    assert 0 <= r["test"]["accuracy"] <= 1 and 0 <= r["post_sampling_share"] <= 1


def test_bench_calibration_scaling_quick(tmp_path):
    data = quick("bench_calibration_scaling", tmp_path, name="calibration_scaling")
    [row] = data["result"]["rows"]
    assert (row["classes"], row["rows"], row["draws"]) == (3, 200, 10)
    for method in ("per_class", "full"):
        assert row[method]["seconds"] > 0 and 0 <= row[method]["ece"] <= 1


def test_bench_chains_quick(tmp_path):
    data = quick("bench_chains", tmp_path, name="chains_cost")
    summary = data["result"]["summary"]
    assert [s["config"] for s in summary] == ["1x40", "2x20"]
    assert summary[0]["ratio_to_defaults"] == 1.0 and summary[1]["ratio_to_defaults"] > 0


def test_bench_dask_quick_runs_the_same_chain(tmp_path):
    pytest.importorskip("distributed")
    data = quick("bench_dask", tmp_path, name="dask")
    r = data["result"]
    assert r["same_chain"] is True and r["model"]["n_topics"] == 4
    assert r["dask"]["bytes_sent_per_iter"] > 0 and len(r["rounds"]) == 1


def test_bench_scaling_quick_measures_every_cell(tmp_path):
    data = quick("bench_scaling", tmp_path, "--cache", str(tmp_path / "corpora"),
                 "--plot", str(tmp_path / "scaling.png"), name="scaling")
    cells = data["result"]["cells"]
    assert [(c["D"], c["K"]) for c in cells] == [(200, 4), (400, 4)]
    for c in cells:
        assert "error" not in c, c.get("error")
        assert c["fit"]["peak_bytes"] > 0 and c["fit"]["model_bytes"] > 0
        assert c["iteration"]["DOLDA defaults"]["median_seconds"] > 0
        assert c["predict"]["DOLDA predict_proba"]["docs_per_s"] > 0
        assert c["estimate_bytes"] > 0
        if harness.optional("tomotopy") is not None:
            assert "tomotopy LDAModel" in c["iteration"] and "tomotopy infer" in c["predict"]
    assert (tmp_path / "scaling.png").stat().st_size > 0
    assert len(list((tmp_path / "corpora").glob("*_tokens.npy"))) == 2  # one cached per D

