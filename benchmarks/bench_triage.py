"""A first model on a real triage task: hadoop + hdfs bug reports pooled, default `dolda fit`.

The task of issue 36: route the bug reports of Hadoop Common and HDFS (``apache_jira_bugs``
under ``--data``, their training splits pooled: about 5,300 reports, 54 components, the
label written "project/component") to their component, from the text and the filing-time
metadata (reporter, priority, lowest affected version).  Runs ``dolda -v fit`` as a new user
would (a subprocess, the CLI's defaults unless flags say otherwise) and times every phase from
its log records (``DOLDA: <step>: done in X s``, :mod:`dolda.utils.phases`): the compile of a
first run, the chain, and each post-sampling step with its share of the total.  Then scores
the saved model on the pooled test splits (accuracy, log loss, ECE, slope).

    python benchmarks/bench_triage.py                          # the full task (lead's run)
    python benchmarks/bench_triage.py --docs 600 --iterations 20 --topics 10   # a small run

Writes benchmarks/results/triage[_<tag>].json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent
RESULTS = ROOT / "results"
DEFAULT_DATA = Path("/work/shared/data/apache_jira_bugs")
PROJECTS = ("hadoop", "hdfs")
COVARIATES = "reporter,priority,affects_version"
PHASE = re.compile(r"DOLDA: (?P<what>.+?): done in (?P<seconds>[0-9.]+) s")
COMPILED = re.compile(r"DOLDA: kernels compiled: start and first iteration (?P<s>[0-9.]+) s")


def pooled(data, split, docs, seed):
    """The projects' ``split`` (train/test) tables pooled, labels "project/component"; with
    ``docs``, a stratified-ish sample of that many rows per project (every class kept)."""
    frames = []
    for project in PROJECTS:
        frame = pd.read_csv(data / project / f"{split}_meta.csv.gz", dtype=str)
        frame["label"] = project + "/" + frame["label"]
        if docs:
            rng = np.random.default_rng(seed)
            keep = rng.permutation(len(frame))[:docs]
            frame = frame.iloc[np.sort(keep)]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def score_model(model_dir, test, covariates):
    """Accuracy, log loss, ECE and calibration slope of the saved model on ``test``."""
    sys.path.insert(0, str(ROOT.parent / "src"))
    import dolda
    from dolda.posterior.calibration import calibration_summary

    model = dolda.load(model_dir)
    X = test[COVARIATES.split(",")] if covariates else None
    proba = model.predict_proba(test["text"].tolist(), covariates=X)
    y = np.searchsorted(model.classes_, test["label"].to_numpy())
    return calibration_summary(proba, y)


def run(cmd, env):
    tic = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - tic
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-3000:])
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode})")
    return proc, seconds


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--docs", type=int, default=None,
                        help="training reports per project (default: all); test rows "
                             "a quarter of that")
    parser.add_argument("--iterations", type=int, default=None,
                        help="--iterations of dolda fit (default: the CLI's)")
    parser.add_argument("--topics", type=int, default=None,
                        help="--topics of dolda fit (default: the CLI's)")
    parser.add_argument("--extra", default="", help="more dolda fit options, one string")
    parser.add_argument("--no-covariates", action="store_true",
                        help="text only (no reporter, priority, affects_version)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tag", default=None, help="results/triage_<tag>.json")
    args = parser.parse_args(argv)
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent / "src")
           + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        train = pooled(args.data, "train", args.docs, args.seed)
        test = pooled(args.data, "test", None if args.docs is None else max(50, args.docs // 4),
                      args.seed)
        test = test[test["label"].isin(set(train["label"]))]
        train.to_csv(tmp / "train.csv.gz", index=False)
        test.to_csv(tmp / "test.csv.gz", index=False)
        fit = [sys.executable, "-m", "dolda.cli", "-v", "fit", str(tmp / "train.csv.gz"),
               "--text", "text", "--label", "label", "--out", str(tmp / "model"), "--quiet"]
        if not args.no_covariates:
            fit += ["--covariates", COVARIATES]
        if args.iterations is not None:
            fit += ["--iterations", str(args.iterations)]
        if args.topics is not None:
            fit += ["--topics", str(args.topics)]
        fit += args.extra.split()
        load_before = os.getloadavg()[0]
        proc, total = run(fit, env)
        log = proc.stderr
        phases = [{"step": m["what"], "seconds": float(m["seconds"])}
                  for m in PHASE.finditer(log)]
        compiled = COMPILED.search(log)
        tic = time.perf_counter()
        test_scores = score_model(tmp / "model", test, not args.no_covariates)
        score_seconds = time.perf_counter() - tic
        load_after = os.getloadavg()[0]
    sampling = next((p["seconds"] for p in phases if p["step"].startswith("sampling")), None)
    post = [p for p in phases if not p["step"].startswith(("sampling", "reading"))]
    result = {
        "command": "python benchmarks/bench_triage.py " + " ".join(argv or []),
        "fit_command": " ".join(fit[1:]), "train_rows": len(train),
        "classes": int(train["label"].nunique()), "test_rows": len(test),
        "load_before": load_before, "load_after": load_after,
        "fit_wall_seconds": total, "compile_seconds": float(compiled["s"]) if compiled else None,
        "sampling_seconds": sampling, "phases": phases,
        "post_sampling_seconds": sum(p["seconds"] for p in post),
        "post_sampling_share": sum(p["seconds"] for p in post) / total,
        "score_wall_seconds": score_seconds, "test": test_scores,
        "fit_summary": proc.stdout,
    }
    RESULTS.mkdir(exist_ok=True)
    name = "triage" + (f"_{args.tag}" if args.tag else "")
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1))
    lines = [f"# {name}", "", f"`{result['command']}`: {len(train):,} training reports, "
             f"{result['classes']} classes, {len(test):,} test reports; load average "
             f"{load_before:.1f} before, {load_after:.1f} after (2 cores).", "",
             f"Fit wall time {total:.1f} s (compile of a first run: "
             + (f"{result['compile_seconds']:.1f} s" if compiled else "none, cached")
             + f"); post-sampling steps {result['post_sampling_seconds']:.1f} s = "
             f"{result['post_sampling_share']:.1%} of the fit.", "",
             "| step | seconds | share of the fit |", "|---|---|---|"]
    for p in phases:
        lines.append(f"| {p['step']} | {p['seconds']:.1f} | {p['seconds'] / total:.1%} |")
    lines += ["", "Test: " + ", ".join(f"{k} {v:.3f}" for k, v in test_scores.items()
                                       if isinstance(v, float))]
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
