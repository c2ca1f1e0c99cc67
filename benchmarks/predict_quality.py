"""Prediction: error of the topic proportions against the sweeps they cost, counts vs
Rao-Blackwellised average (paper section 3.3, ``dolda.sampler.predict``).

The prediction sweep estimates the posterior mean of a new document's topic proportions
with Phi fixed.  Two estimators from the *same* draws: the drawn counts ``n_{d,k}`` averaged
over the kept sweeps (``rao_blackwell=False``, the estimator before 2026-11-26) and the
average of the conditionals ``p(z_i = k | z_-i)`` each token is drawn from (the default).
For each K, sweeps (burn-in half) and seed, the mean L1 distance of theta to a long
reference run (a different seed, ``--ref-sweeps`` sweeps) and the seconds of the call are
recorded; the configurations run interleaved, seed by seed, so that the times are
comparable.  Phi: tomotopy's topics as in ``bench_predict.py`` (same cache).

Usage::

    python benchmarks/predict_quality.py [--topics 100 1000] [--docs 1000] [--threads 2]
        [--sweeps 10 20 30 50] [--seeds 3] [--ref-sweeps 2000] [--burn-in-fractions 0.5]

Writes ``benchmarks/results/predict_quality.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

ALPHA = 0.1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--sweeps", type=int, nargs="+", default=[10, 20, 30, 50])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--ref-sweeps", type=int, default=2000)
    parser.add_argument("--burn-in-fractions", type=float, nargs="+", default=[0.5],
                        help="burn-in as a fraction of the sweeps")
    parser.add_argument("--train-iters", type=int, default=100)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/dolda_bench_predict"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)

    from bench_predict import newsgroups_sample, train_topics

    from dolda.sampler.predict import predict_topic_proportions
    from dolda.sampler.threads import using_threads

    words, train_docs, tokens, doc_ptr = newsgroups_sample(args.data, args.docs)
    n_sample = len(doc_ptr) - 1
    load_before = os.getloadavg()
    rows = []
    for K in args.topics:
        phi, _ = train_topics(train_docs, list(words), K, args.threads, args.train_iters,
                              args.cache)
        phi = phi.astype(np.float32)  # the dtype of a fitted DOLDA's phi_
        with using_threads(args.threads):
            tic = time.perf_counter()
            ref = predict_topic_proportions(tokens, doc_ptr, phi, ALPHA, args.ref_sweeps,
                                            args.ref_sweeps // 10, 10_000)
            print(f"K={K}: reference in {time.perf_counter() - tic:.1f} s", flush=True)
            predict_topic_proportions(tokens[:doc_ptr[20]], doc_ptr[:21], phi, ALPHA, 2, 1, 0)
            results = {}
            for seed in range(1, args.seeds + 1):
                for sweeps in args.sweeps:
                    for fraction in args.burn_in_fractions:
                        burn = min(sweeps - 1, int(round(fraction * sweeps)))
                        for rb in (False, True):
                            tic = time.perf_counter()
                            theta = predict_topic_proportions(tokens, doc_ptr, phi, ALPHA,
                                                              sweeps, burn, seed,
                                                              rao_blackwell=rb)
                            secs = time.perf_counter() - tic
                            err = float(np.abs(theta - ref).sum(axis=1).mean())
                            results.setdefault((sweeps, burn, rb), []).append((err, secs))
                            print(f"K={K} seed={seed} sweeps={sweeps} burn={burn} rb={rb}: "
                                  f"L1 {err:.4f} {secs:.3f} s", flush=True)
        for (sweeps, burn, rb), values in results.items():
            errs, secs = np.array(values).T
            rows.append({"K": K, "sweeps": sweeps, "burn_in": burn,
                         "estimator": "rao-blackwell" if rb else "counts",
                         "l1_errors": errs.tolist(), "seconds": secs.tolist(),
                         "mean_l1": float(errs.mean()), "median_seconds": float(np.median(secs)),
                         "docs_per_s": n_sample / float(np.median(secs))})
    result = {"benchmark": "predict_quality.py",
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "load_before": load_before, "load_after": os.getloadavg()},
              "settings": {"threads": args.threads, "documents": n_sample,
                           "tokens": int(len(tokens)), "seeds": args.seeds,
                           "ref_sweeps": args.ref_sweeps, "alpha": ALPHA,
                           "train_iters": args.train_iters},
              "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "predict_quality.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "predict_quality.md").write_text(markdown(result))
    print(markdown(result))


def markdown(result):
    s = result["settings"]
    lines = [
        "# Prediction: error against sweeps, counts vs Rao-Blackwellised average",
        "",
        f"`benchmarks/predict_quality.py`: {s['documents']} 20 Newsgroups test documents "
        f"({s['tokens']:,} tokens), {s['threads']} threads, {s['seeds']} seeds per row, "
        f"alpha = {s['alpha']}, kernel `auto`, Phi from tomotopy "
        f"({s['train_iters']} iterations on the training split, float32).  Error: mean over "
        f"the documents of the L1 distance of theta to a reference run of "
        f"{s['ref_sweeps']} sweeps (another seed).  Load average before/after: "
        f"{result['machine']['load_before'][0]:.1f} / {result['machine']['load_after'][0]:.1f} "
        f"on {result['machine']['cpus']} cores.",
        "",
        "| K | sweeps | burn-in | estimator | mean L1 error | median s | docs/s "
        "| error / counts at 50 | docs/s / counts at 50 |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    base = {r["K"]: r for r in result["rows"]
            if r["sweeps"] == 50 and r["burn_in"] == 25 and r["estimator"] == "counts"}
    for r in sorted(result["rows"],
                    key=lambda r: (r["K"], r["estimator"], r["sweeps"], r["burn_in"])):
        b = base.get(r["K"])
        rel_err = f"{r['mean_l1'] / b['mean_l1']:.2f}" if b else ""
        rel_speed = f"{r['docs_per_s'] / b['docs_per_s']:.2f}x" if b else ""
        lines.append(f"| {r['K']} | {r['sweeps']} | {r['burn_in']} | {r['estimator']} | "
                     f"{r['mean_l1']:.4f} | "
                     f"{r['median_seconds']:.3f} | {r['docs_per_s']:,.0f} | {rel_err} | "
                     f"{rel_speed} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
