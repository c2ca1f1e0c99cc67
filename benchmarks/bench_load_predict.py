"""Load and predict of a saved 20 Newsgroups model: the package at two commits, interleaved.

A DOLDA model is fitted once at the defaults (``DOLDA(n_topics=20)``, ``--n-iter``
iterations, seed 1, ``--threads`` threads) on the 20 Newsgroups "bydate" training split
and saved.  Then ``--reps`` repetitions alternate *before* (the package at ``--before``,
checked out with ``git worktree`` under ``--workdir``) and *after* (this checkout's
``src``), each in a fresh process with ``PYTHONPATH`` at that version's ``src``:

* ``import dolda`` (timed, not part of the figure);
* ``dolda.load(path)`` -- **load**;
* ``predict_proba`` on ``--docs`` test documents -- **predict** (the first call of the
  process: numba's cache of the prediction kernels is read here);
* ``predict_proba`` on the same documents again -- **predict, warm**;
* ``dolda.load(path)`` again -- **load, warm**: the file alone, the modules the first load
  imported (the estimator, scikit-learn, scipy, pandas) already in memory.

The model is saved by the *after* version; if the *before* version cannot load that file
(a newer format), each version fits and saves its own model with the same settings and seed,
and the result says so.  Every version runs once as a warm-up first (numba compiles the
kernels into its own ``__pycache__`` there), which is not counted.  The figure is the
median over repetitions, and the median of the per-pair ratios after / before.

``--quick``: a simulated corpus, 3 iterations, both sides this checkout (the mechanics
only, no second commit).

Usage (about 5 minutes on 2 cores: two fits of 100 iterations, 2 x (1 + 7) processes)::

    python -m benchmarks.bench_load_predict [--before e9f092a] [--reps 7] [--docs 1000]
        [--n-iter 100] [--workdir /tmp/dolda_load_predict]
    python -m benchmarks.bench_load_predict --quick

Writes ``benchmarks/results/load_predict.json`` and ``.md``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks import harness

ROOT = harness.ROOT

FIT_CODE = r"""
import json, sys, time
from dolda import DOLDA
spec = json.load(open(sys.argv[1]))
train = json.load(open(spec["train"]))
t0 = time.perf_counter()
m = DOLDA(n_topics=spec["topics"], n_iter=spec["n_iter"], random_state=1,
          n_jobs=spec["threads"], progress=False)
m.fit(train["texts"], train["labels"])
fit_s = time.perf_counter() - t0
m.save(spec["path"], overwrite=True)
print(json.dumps({"fit_seconds": fit_s}))
"""

TIME_CODE = r"""
import json, os, sys, time
spec = json.load(open(sys.argv[1]))
test = json.load(open(spec["test"]))["texts"][: spec["docs"]]
t0 = time.perf_counter()
import dolda
t1 = time.perf_counter()
m = dolda.load(spec["path"])
t2 = time.perf_counter()
p = m.predict_proba(test)
t3 = time.perf_counter()
p2 = m.predict_proba(test)
t4 = time.perf_counter()
m2 = dolda.load(spec["path"])
t5 = time.perf_counter()
import resource
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "predict": t3 - t2,
                  "predict_warm": t4 - t3, "load_warm": t5 - t4, "proba_sum": float(p.sum()),
                  "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "dolda_file": dolda.__file__}))
"""


def _env(src: Path, threads: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(src)
    for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[name] = "1"  # BLAS capped; numba's threads follow n_jobs
    env["NUMBA_NUM_THREADS"] = str(threads)
    return env


def _python(code: str, spec: dict, src: Path, threads: int, workdir: Path) -> dict:
    spec_path = workdir / "spec.json"
    spec_path.write_text(json.dumps(spec))
    out = subprocess.run([sys.executable, "-c", code, str(spec_path)], capture_output=True,
                         text=True, env=_env(src, threads), cwd=workdir)
    if out.returncode != 0:
        raise RuntimeError(f"a subprocess at {src} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def worktree(commit: str, where: Path) -> Path:
    """The ``src`` of ``commit`` checked out (detached) at ``where`` (reused if present)."""
    if not (where / "src" / "dolda").is_dir():
        subprocess.run(["git", "worktree", "add", "--detach", str(where), commit], cwd=ROOT,
                       check=True, capture_output=True, text=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True,
                          text=True, check=True).stdout.strip()
    want = subprocess.run(["git", "rev-parse", commit], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout.strip()
    if head != want:
        raise SystemExit(f"{where} holds {head[:10]}, not {commit} ({want[:10]}); remove it "
                         "or pass another --workdir")
    return where / "src"


def corpus_files(args, workdir: Path) -> tuple[Path, Path, dict]:
    """Training and test texts as JSON (read by every version alike), and their sizes."""
    if args.quick:
        texts, y, _ = harness.tiny_corpus(n_docs=200, n_topics=4, vocab_size=300)
        train = {"texts": list(texts[:150]), "labels": [str(v) for v in y[:150]]}
        test = {"texts": list(texts[150:])}
    else:
        from dolda.datasets import load_20newsgroups

        tr = load_20newsgroups(args.data, "train")
        te = load_20newsgroups(args.data, "test")
        keep = np.sort(np.random.default_rng(0).choice(len(te), min(args.docs, len(te)),
                                                       replace=False))
        train = {"texts": tr.text.tolist(), "labels": tr.label.astype(str).tolist()}
        test = {"texts": te.text.iloc[keep].tolist()}
    (workdir / "train.json").write_text(json.dumps(train))
    (workdir / "test.json").write_text(json.dumps(test))
    return workdir / "train.json", workdir / "test.json", {
        "train_docs": len(train["texts"]), "test_docs": len(test["texts"])}


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--before", default="e9f092a", help="the commit compared (a worktree)")
    parser.add_argument("--reps", type=int, default=7, help="repetitions per version")
    parser.add_argument("--docs", type=int, default=1000, help="test documents predicted")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--n-iter", type=int, default=100, help="iterations of the one fit")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="worktree, model files, texts (default a temporary folder; "
                             "/tmp/dolda_load_predict keeps the worktree between runs)")
    parser.add_argument("--reuse-model", action="store_true",
                        help="keep the model files already in --workdir (no fit)")
    args = parser.parse_args(argv)
    run = harness.start("load_predict", args, argv)
    reps = 2 if args.quick else args.reps
    n_iter = 3 if args.quick else args.n_iter
    topics = 4 if args.quick else args.topics
    tmp = None
    if args.workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="dolda_load_predict_")
        workdir = Path(tmp.name)
    else:
        workdir = args.workdir
        workdir.mkdir(parents=True, exist_ok=True)
    after_src = ROOT / "src"
    if args.quick:
        before_src, before_label = after_src, "this checkout"
    else:
        before_src, before_label = worktree(args.before, workdir / "before"), args.before
    srcs = {"before": before_src, "after": after_src}
    train, test, sizes = corpus_files(args, workdir)
    spec = {"train": str(train), "topics": topics, "n_iter": n_iter, "threads": args.threads}

    if args.reuse_model and (workdir / "model_after").is_dir():
        fits = {"after": "reused"}
        run.note(f"the model files in {workdir} were reused (--reuse-model)")
    else:
        fits = {"after": _python(FIT_CODE, {**spec, "path": str(workdir / "model_after")},
                                 after_src, args.threads, workdir)}
    paths = {"after": workdir / "model_after", "before": workdir / "model_after"}
    probe = {"test": str(test), "docs": args.docs, "path": str(paths["before"])}
    try:
        _python(TIME_CODE, probe, before_src, args.threads, workdir)  # also the warm-up
        same_file = True
    except RuntimeError as err:
        same_file = False
        run.note(f"the before version cannot load the after version's file "
                 f"({str(err).strip().splitlines()[-1][:200]}): each version fits and saves "
                 "its own model with the same settings and seed")
        if not (args.reuse_model and (workdir / "model_before").is_dir()):
            fits["before"] = _python(FIT_CODE, {**spec, "path": str(workdir / "model_before")},
                                     before_src, args.threads, workdir)
        paths["before"] = workdir / "model_before"
    probes = {side: {"test": str(test), "docs": args.docs, "path": str(paths[side])}
              for side in srcs}
    for side in srcs:  # warm-up: numba's cache of each version filled (the probe did it
        if side == "before" and same_file:  # for the before version when it could load)
            continue
        _python(TIME_CODE, probes[side], srcs[side], args.threads, workdir)
    rounds = []
    for r in range(reps):
        order = ("before", "after") if r % 2 == 0 else ("after", "before")
        row = {}
        for side in order:
            row[side] = _python(TIME_CODE, probes[side], srcs[side], args.threads, workdir)
        rounds.append(row)
        print(f"round {r}: " + ", ".join(
            f"{s} load {row[s]['load']:.3f} s predict {row[s]['predict']:.3f} s"
            for s in ("before", "after")), flush=True)
    for side in srcs:  # the subprocesses really ran the intended package
        files = {row[side]["dolda_file"] for row in rounds}
        assert all(f.startswith(str(srcs[side])) for f in files), (side, files)
    measures = ("import", "load", "predict", "predict_warm", "load_warm")
    summary = {}
    for m in measures:
        before = np.array([row["before"][m] for row in rounds])
        after = np.array([row["after"][m] for row in rounds])
        summary[m] = {"before_median_s": float(np.median(before)),
                      "after_median_s": float(np.median(after)),
                      "ratio_after_over_before": float(np.median(after / before)),
                      "before_s": before.tolist(), "after_s": after.tolist()}
    both = {s: np.array([row[s]["load"] + row[s]["predict"] for row in rounds]) for s in srcs}
    summary["load + predict"] = {
        "before_median_s": float(np.median(both["before"])),
        "after_median_s": float(np.median(both["after"])),
        "ratio_after_over_before": float(np.median(both["after"] / both["before"])),
        "before_s": both["before"].tolist(), "after_s": both["after"].tolist()}
    size = {s: sum(f.stat().st_size for f in paths[s].rglob("*") if f.is_file())
            for s in srcs}
    proba_same = all(np.isclose(row["before"]["proba_sum"], row["after"]["proba_sum"])
                     for row in rounds)
    result = {"before": before_label, "after": harness.git_commit()["commit"],
              "same_model_file": same_file, "fits": fits, "model_bytes": size,
              "topics": topics, "n_iter": n_iter, "threads": args.threads,
              "repetitions": reps, **sizes, "probabilities_sum_equal": proba_same,
              "peak_rss_bytes": {s: float(np.median([row[s]["peak_rss_bytes"]
                                                     for row in rounds])) for s in srcs},
              "summary": summary, "rounds": rounds}
    lines = [f"`DOLDA(n_topics={topics}, n_iter={n_iter}, random_state=1)` fitted on "
             f"{'a simulated corpus' if args.quick else '20 Newsgroups train'} "
             f"({sizes['train_docs']} documents) and saved "
             f"({'one file, read by both' if same_file else 'by each version'}); then "
             f"{reps} repetitions alternating before (`{before_label}`) and after (this "
             f"checkout), each a fresh process, {args.threads} threads: `dolda.load`, then "
             f"`predict_proba` on {sizes['test_docs']} test documents (first call of the "
             "process), then again (warm). Medians over repetitions; the ratio is the median "
             "of the per-repetition ratios after / before.", "",
             "| step | before (s) | after (s) | after / before |", "|---|---|---|---|"]
    for m in ("load", "predict", "load + predict", "predict_warm", "load_warm", "import"):
        s = summary[m]
        lines.append(f"| {m} | {s['before_median_s']:.3f} | {s['after_median_s']:.3f} | "
                     f"{s['ratio_after_over_before']:.2f}x |")
    lines += ["", f"Model directory: {size['before'] / 1e6:.2f} MB before, "
              f"{size['after'] / 1e6:.2f} MB after; the same probabilities on both sides: "
              f"{proba_same}."]
    run.finish(result, lines, "Load and predict of a saved model, before and after")
    if tmp is not None:
        tmp.cleanup()
    return result


if __name__ == "__main__":
    main()
