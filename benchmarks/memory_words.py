"""Peak RSS of DOLDA fit + predict with word covariates, 5,000 words and every kept word.

Issue 33 ("All words"): 20 Newsgroups train with every kept vocabulary word as a covariate
must fit and predict test within a peak RSS of 2 GB at the defaults (K = 20, 500
iterations: 250 kept draws).  Every configuration runs in a fresh Python process of its
own (``ru_maxrss`` is a process's high-water mark), one after the other, and reports

* the peak RSS after ``fit`` and after ``predict`` (the test split), in GB;
* the kept draws' sizes: what the model holds (``eta_draws_`` / ``lambda_draws_`` /
  ``lambda_word_stats_`` / ``lambda_word_rows_`` ``nbytes``) and what the float32 layout
  before issue 33 would hold (S x L x P x 4 bytes, twice), its shapes, and the test
  accuracy and the seconds taken.

Usage (the full run, alone on an idle machine: two fits of 500 iterations)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 \\
        python benchmarks/memory_words.py --words 5000 all

Development on a slice: ``--max-docs 600 --n-iter 20 --name memory_words_small``.  Writes
``benchmarks/results/<name>.json`` and ``.md`` (default name ``memory_words``).  The same
script runs against older code (``PYTHONPATH=/path/to/old/src``; an older dolda has no
``n_words="all"``: it is then passed as the vocabulary size) for a before/after pair.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

DATA = Path(os.environ.get("DOLDA_DATA",
                           Path(__file__).resolve().parents[2] / "shared" / "data"))
RESULTS = Path(__file__).resolve().parent / "results"


def _peak_gb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9


def _nbytes(a):
    return 0 if a is None else int(a.nbytes)


def one(args):
    """Fit + predict one configuration in this process; print one JSON line."""
    import numpy as np

    from dolda import DOLDA
    from dolda.datasets import load_20newsgroups

    tr = load_20newsgroups(DATA, "train")
    te = load_20newsgroups(DATA, "test")
    if args.max_docs:
        rng = np.random.default_rng(0)
        tr = tr.iloc[np.sort(rng.choice(len(tr), min(args.max_docs, len(tr)), replace=False))]
        te = te.iloc[np.sort(rng.choice(len(te), min(args.max_docs // 2, len(te)),
                                        replace=False))]
    n_words = args.one if args.one == "auto" else (
        "all" if args.one == "all" else int(args.one))
    params = dict(n_topics=args.topics, random_state=1, n_jobs=args.jobs, progress=False)
    if args.n_iter:
        params["n_iter"] = args.n_iter
    if n_words == "all":
        try:
            from dolda.design.word_features import check_n_words

            check_n_words("all")
        except (ImportError, ValueError):  # older code: every word as a number
            n_words = 10**7
    base = _peak_gb()
    tic = time.perf_counter()
    m = DOLDA(n_words=n_words, **params).fit(tr.text.tolist(), tr.label)
    fit_s = time.perf_counter() - tic
    fit_peak = _peak_gb()
    tic = time.perf_counter()
    pred = m.predict(te.text.tolist())
    predict_s = time.perf_counter() - tic
    eta = m.eta_draws_
    S, L, P = eta.shape
    n_w = 0 if m.word_features_ is None else len(m.word_features_.words_)
    lam = getattr(m, "lambda_draws_", None)
    stats = getattr(m, "lambda_word_stats_", None)
    rows = getattr(m, "lambda_word_rows_", None)
    print(json.dumps({
        "n_words": args.one, "word_columns": n_w, "S": S, "L": L, "P": P,
        "train_docs": len(tr), "test_docs": len(te), "vocabulary": len(m.vocabulary_.words),
        "eta_sampler": m.eta_sampler_, "layout": type(eta).__name__,
        "eta_draws_bytes": _nbytes(eta), "lambda_draws_bytes": _nbytes(lam),
        "lambda_word_stats_bytes": _nbytes(stats), "lambda_word_rows_bytes": _nbytes(rows),
        "float32_layout_bytes": 2 * S * L * P * 4,
        "rss_after_import_gb": round(base, 3), "peak_after_fit_gb": round(fit_peak, 3),
        "peak_after_predict_gb": round(_peak_gb(), 3),
        "fit_seconds": round(fit_s, 1), "predict_seconds": round(predict_s, 1),
        "test_accuracy": round(float((pred == te.label.to_numpy()).mean()), 4)}))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--words", nargs="+", default=["5000", "all"],
                    help="n_words of each run: numbers, 'auto' or 'all'")
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--n-iter", type=int, default=None, help="default: DOLDA's (500)")
    ap.add_argument("--max-docs", type=int, default=None, help="a random slice of train "
                    "(and half as many test documents), for development")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--name", default="memory_words")
    ap.add_argument("--one", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one is not None:
        return one(args)
    runs = []
    for words in args.words:
        cmd = [sys.executable, __file__, "--one", words, "--topics", str(args.topics),
               "--jobs", str(args.jobs)]
        if args.n_iter:
            cmd += ["--n-iter", str(args.n_iter)]
        if args.max_docs:
            cmd += ["--max-docs", str(args.max_docs)]
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode:
            sys.exit(f"n_words={words} failed:\n{out.stderr[-3000:]}")
        row = json.loads(out.stdout.strip().splitlines()[-1])
        print(row, flush=True)
        runs.append(row)
    load = os.getloadavg()
    result = {"what": "peak RSS of DOLDA fit + predict with word covariates (issue 33)",
              "command": " ".join([Path(sys.executable).name] + sys.argv),
              "topics": args.topics, "n_iter": args.n_iter or 500, "max_docs": args.max_docs,
              "jobs": args.jobs, "load_average_end": [round(v, 2) for v in load],
              "machine": platform.platform(), "cpus": os.cpu_count(), "runs": runs}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [f"# Peak memory of DOLDA fit + predict with word covariates ({args.name})", "",
             f"`{result['command']}`: K = {args.topics}, n_iter = {result['n_iter']}, "
             f"n_jobs = {args.jobs}, each configuration in a fresh process; "
             f"{'all' if not args.max_docs else args.max_docs} training documents; load "
             f"average at the end {result['load_average_end']}.", "",
             "| n_words | word columns | draws S x L x P | layout | eta + lambda held (GB) | "
             "float32 layout (GB) | peak after fit (GB) | peak after predict (GB) | "
             "fit s | test accuracy |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        held = (r["eta_draws_bytes"] + r["lambda_draws_bytes"] + r["lambda_word_stats_bytes"]
                + r.get("lambda_word_rows_bytes", 0)) / 1e9
        lines.append(f"| {r['n_words']} | {r['word_columns']:,} | {r['S']} x {r['L']} x "
                     f"{r['P']:,} | {r['layout']} | {held:.3f} | "
                     f"{r['float32_layout_bytes'] / 1e9:.3f} | {r['peak_after_fit_gb']:.3f} | "
                     f"{r['peak_after_predict_gb']:.3f} | {r['fit_seconds']:.0f} | "
                     f"{r['test_accuracy']:.4f} |")
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
