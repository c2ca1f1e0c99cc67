"""A first model on a real triage task: hadoop + hdfs bug reports pooled, default `dolda fit`.

The task of issue 36: route the bug reports of Hadoop Common and HDFS (``apache_jira_bugs``
under ``--data``, their training splits pooled: about 5,300 reports, 54 components, the
label written "project/component") to their component, from the text and the filing-time
metadata (reporter, priority, lowest affected version).  Runs ``dolda -v fit`` as a new user
would (a subprocess, the CLI's defaults unless flags say otherwise) and times every phase from
its log records (``DOLDA: <step>: done in X s``, :mod:`dolda.utils.phases`): the compile of a
first run, the chain, and each post-sampling step with its share of the total.  Then scores
the saved model on the pooled test splits (accuracy, log loss, ECE, slope).

    python -m benchmarks.bench_triage                          # the full task
    python -m benchmarks.bench_triage --docs 600 --iterations 20 --topics 10   # a small run
    python -m benchmarks.bench_triage --quick      # a simulated corpus, text only, seconds

Writes benchmarks/results/triage[_<tag>].json and .md.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks import harness

ROOT = harness.ROOT
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


def simulated_split(tmp):
    """Train and test tables of a small simulated corpus (no metadata columns)."""
    texts, y, _ = harness.tiny_corpus(n_docs=200, n_topics=4, n_classes=3, vocab_size=300)
    frame = pd.DataFrame({"text": texts, "label": y})
    return frame.iloc[:150].reset_index(drop=True), frame.iloc[150:].reset_index(drop=True)


def main(argv=None):
    parser = harness.parser(__doc__)
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
    name = "triage" + (f"_{args.tag}" if args.tag else "")
    run_ = harness.start(name, args, argv)
    covariates = not (args.no_covariates or args.quick)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")
           + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.quick:
            train, test = simulated_split(tmp)
        else:
            data = args.data / "apache_jira_bugs"
            train = pooled(data, "train", args.docs, args.seed)
            test = pooled(data, "test", None if args.docs is None else max(50, args.docs // 4),
                          args.seed)
        test = test[test["label"].isin(set(train["label"]))]
        train.to_csv(tmp / "train.csv.gz", index=False)
        test.to_csv(tmp / "test.csv.gz", index=False)
        fit = [sys.executable, "-m", "dolda.cli", "-v", "fit", str(tmp / "train.csv.gz"),
               "--text", "text", "--label", "label", "--out", str(tmp / "model"), "--quiet",
               "--threads", str(args.threads)]
        if covariates:
            fit += ["--covariates", COVARIATES]
        iterations = 20 if args.quick and args.iterations is None else args.iterations
        topics = 4 if args.quick and args.topics is None else args.topics
        if iterations is not None:
            fit += ["--iterations", str(iterations)]
        if topics is not None:
            fit += ["--topics", str(topics)]
        fit += args.extra.split()
        proc, total = run(fit, env)
        log = proc.stderr
        phases = [{"step": m["what"], "seconds": float(m["seconds"])}
                  for m in PHASE.finditer(log)]
        compiled = COMPILED.search(log)
        tic = time.perf_counter()
        test_scores = score_model(tmp / "model", test, covariates)
        score_seconds = time.perf_counter() - tic
    sampling = next((p["seconds"] for p in phases if p["step"].startswith("sampling")), None)
    post = [p for p in phases if not p["step"].startswith(("sampling", "reading"))]
    result = {
        "fit_command": " ".join(fit[1:]), "train_rows": len(train),
        "classes": int(train["label"].nunique()), "test_rows": len(test),
        "fit_wall_seconds": total, "compile_seconds": float(compiled["s"]) if compiled else None,
        "sampling_seconds": sampling, "phases": phases,
        "post_sampling_seconds": sum(p["seconds"] for p in post),
        "post_sampling_share": sum(p["seconds"] for p in post) / total,
        "score_wall_seconds": score_seconds, "test": test_scores,
        "fit_summary": proc.stdout,
    }
    lines = [f"{len(train):,} training reports, {result['classes']} classes, {len(test):,} "
             f"test reports; `dolda {' '.join(fit[3:])}` (temporary paths).", "",
             f"Fit wall time {total:.1f} s (compile of a first run: "
             + (f"{result['compile_seconds']:.1f} s" if compiled else "none, cached")
             + f"); post-sampling steps {result['post_sampling_seconds']:.1f} s = "
             f"{result['post_sampling_share']:.1%} of the fit.", "",
             "| step | seconds | share of the fit |", "|---|---|---|"]
    for p in phases:
        lines.append(f"| {p['step']} | {p['seconds']:.1f} | {p['seconds'] / total:.1%} |")
    lines += ["", "Test: " + ", ".join(f"{k} {v:.3f}" for k, v in test_scores.items()
                                       if isinstance(v, float))]
    run_.finish(result, lines, "Bug triage end to end: `dolda fit` at its defaults")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
