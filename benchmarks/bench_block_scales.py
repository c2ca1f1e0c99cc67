"""Per-block Horseshoe global scales against one shared scale (issue 32, item 4).

DOLDA at its defaults (word covariates, ``n_words="auto"``; the blocked-Gibbs eta-step)
on bug-report projects of ``../shared/data/apache_jira_bugs`` (chronological train/test
split), ``global_scales="shared"`` (one tau per class, the paper's) and ``"block"`` (one
per class and block: topics, words), with the same seeds.  Per fit: test accuracy, and
per class the mean number of signal topics and signal words (95% interval of the
coefficient excludes 0, as ``signal_topics`` / ``signal_covariates``).

Usage::

    python benchmarks/bench_block_scales.py [--projects storm yarn] [--seeds 0 1]
        [--topics 20] [--iters 150] [--threads 2]

Writes ``benchmarks/results/block_scales.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def signals(model):
    """Mean signal topics and signal words per class."""
    from dolda.utils.draws import draw_quantiles

    q = draw_quantiles(model.eta_draws_, [0.025, 0.975])
    excl = (q[0] > 0) | (q[1] < 0)                                   # (L, P)
    names = np.asarray(model.feature_names_)
    topics = np.char.startswith(names.astype(str), "topic ")
    words = np.char.startswith(names.astype(str), "word=")
    return float(excl[:, topics].sum(axis=1).mean()), float(excl[:, words].sum(axis=1).mean())


def main(argv=None):
    import pandas as pd

    from dolda import DOLDA

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--projects", nargs="+", default=["storm", "yarn"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--iters", type=int, default=150)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    rows = []
    load_before = os.getloadavg()
    for project in args.projects:
        base = args.data / "apache_jira_bugs" / project
        tr = pd.read_json(base / "train.jsonl.gz", lines=True)
        te = pd.read_json(base / "test.jsonl.gz", lines=True)
        for seed in args.seeds:
            for scales in ("shared", "block"):
                tic = time.perf_counter()
                m = DOLDA(n_topics=args.topics, n_iter=args.iters, random_state=seed,
                          n_jobs=args.threads, progress=False, global_scales=scales)
                m.fit(tr.text, tr.label)
                acc = float((m.predict(te.text) == te.label.to_numpy()).mean())
                n_topics, n_words = signals(m)
                tau = np.asarray(m.tau_draws_, dtype=np.float64)
                row = {"project": project, "seed": seed, "global_scales": scales,
                       "accuracy": acc, "signal_topics_per_class": n_topics,
                       "signal_words_per_class": n_words,
                       "median_tau": (np.median(tau, axis=(0, 1)).tolist() if tau.ndim == 3
                                      else float(np.median(tau))),
                       "scale_blocks": m.scale_blocks_,
                       "seconds": time.perf_counter() - tic}
                rows.append(row)
                print(row, flush=True)
    write_results(args, rows, load_before)


def write_results(args, rows, load_before, note=""):
    """``block_scales.json`` and ``.md`` from the fits' ``rows``."""
    result = {"topics": args.topics, "iters": args.iters, "threads": args.threads,
              "load_average_before": load_before, "load_average_after": os.getloadavg(),
              "rows": rows, "note": note}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "block_scales.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Horseshoe global scales: one per class vs one per class and block", "",
             f"DOLDA defaults (word covariates, blocked-Gibbs eta-step), K = {args.topics}, "
             f"{args.iters} iterations (burn-in half), {args.threads} threads; bug-report "
             "projects, chronological split; signal = 95% interval excludes 0; load average "
             f"{load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after. {note}", "",
             "| project | seed | global_scales | accuracy | signal topics / class | "
             "signal words / class | median tau (blocks) |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        tau = r["median_tau"]
        tau = (", ".join(f"{b} {t:.3g}" for b, t in zip(r["scale_blocks"], tau))
               if isinstance(tau, list) else f"{tau:.3g}")
        lines.append(f"| {r['project']} | {r['seed']} | {r['global_scales']} | "
                     f"{r['accuracy']:.3f} | {r['signal_topics_per_class']:.2f} | "
                     f"{r['signal_words_per_class']:.2f} | {tau} |")
    lines += ["", f"Reproduce: `python benchmarks/bench_block_scales.py --projects "
              f"{' '.join(args.projects)} --seeds {' '.join(map(str, args.seeds))} --topics "
              f"{args.topics} --iters {args.iters} --threads {args.threads}`"]
    (args.out / "block_scales.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
