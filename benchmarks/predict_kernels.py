"""Prediction kernels: dense O(K) against sparse O(K_d) per token, by K (the measurement behind
``dolda.sampler.predict.SPARSE_PREDICT_MIN_TOPICS``).

Both kernels draw from the same conditional and, by default, average the same
Rao-Blackwellised estimate; only their cost differs, and it depends on K and on how many
topics a document uses.  Two corpora:

* 20 Newsgroups test documents with tomotopy's topics (alpha = 0.1, as ``bench_predict.py``,
  same cache);
* simulated documents (``dolda.datasets.simulate``-like: theta ~ Dirichlet(alpha = 0.5),
  120 tokens, Phi ~ Dirichlet(0.05)), the broad-document case.

Interleaved rounds, ``--sweeps`` sweeps (burn-in half), 2 threads; the ratio is
sparse seconds / dense seconds (below 1: sparse faster).

Usage::

    python benchmarks/predict_kernels.py [--topics 50 100 200 300 500 1000] [--rounds 3]

Writes ``benchmarks/results/predict_kernels.json`` and ``.md``.
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


def simulated(K, n_docs=1000, length=120, n_words=5000, alpha=0.5, seed=0):
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, 0.05), size=K)
    theta = rng.dirichlet(np.full(K, alpha), size=n_docs)
    tokens = []
    for d in range(n_docs):
        z = rng.choice(K, size=length, p=theta[d])
        tokens.append([rng.choice(n_words, p=phi[k]) for k in z])
    tokens = np.concatenate(tokens).astype(np.int32)
    doc_ptr = np.arange(n_docs + 1, dtype=np.int64) * length
    return tokens, doc_ptr, phi.astype(np.float32), alpha


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, nargs="+", default=[50, 100, 200, 300, 500, 1000])
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sweeps", type=int, default=20)
    parser.add_argument("--train-iters", type=int, default=100)
    parser.add_argument("--cache", type=Path, default=Path("/tmp/dolda_bench_predict"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)

    from bench_predict import newsgroups_sample, train_topics

    from dolda.sampler.predict import predict_topic_proportions
    from dolda.sampler.threads import using_threads

    words, train_docs, ng_tokens, ng_ptr = newsgroups_sample(args.data, args.docs)
    n_sample = len(ng_ptr) - 1
    load_before = os.getloadavg()
    rows = []
    for K in args.topics:
        phi, _ = train_topics(train_docs, list(words), K, args.threads, args.train_iters,
                              args.cache)
        workloads = {"20newsgroups": (ng_tokens, ng_ptr, phi.astype(np.float32), 0.1),
                     "simulated": simulated(K)}
        for name, (tokens, doc_ptr, phi_w, alpha) in workloads.items():
            with using_threads(args.threads):
                for method in ("dense", "sparse"):  # compile / warm
                    predict_topic_proportions(tokens[:doc_ptr[20]], doc_ptr[:21], phi_w, alpha,
                                              2, 1, 0, method=method)
                times = {"dense": [], "sparse": []}
                for _ in range(args.rounds):
                    for method in times:
                        tic = time.perf_counter()
                        predict_topic_proportions(tokens, doc_ptr, phi_w, alpha, args.sweeps,
                                                  args.sweeps // 2, 1, method=method)
                        times[method].append(time.perf_counter() - tic)
            dense, sparse = float(np.median(times["dense"])), float(np.median(times["sparse"]))
            rows.append({"K": K, "corpus": name, "alpha": alpha, "dense_seconds": times["dense"],
                         "sparse_seconds": times["sparse"], "dense_median": dense,
                         "sparse_median": sparse, "sparse_over_dense": sparse / dense})
            print(rows[-1]["K"], name, f"dense {dense:.3f} s sparse {sparse:.3f} s "
                  f"ratio {sparse / dense:.2f}", flush=True)
    result = {"benchmark": "predict_kernels.py",
              "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                          "load_before": load_before, "load_after": os.getloadavg()},
              "settings": {"threads": args.threads, "rounds": args.rounds,
                           "sweeps": args.sweeps, "documents": n_sample},
              "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "predict_kernels.json").write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "predict_kernels.md").write_text(markdown(result))
    print(markdown(result))


def markdown(result):
    s = result["settings"]
    lines = ["# Prediction kernels: dense against sparse, by K", "",
             f"`benchmarks/predict_kernels.py`: {s['documents']} documents per corpus, "
             f"{s['sweeps']} sweeps (burn-in half), Rao-Blackwellised estimate, "
             f"{s['threads']} threads, {s['rounds']} interleaved rounds (medians).  Load "
             f"average before/after: {result['machine']['load_before'][0]:.1f} / "
             f"{result['machine']['load_after'][0]:.1f} on {result['machine']['cpus']} cores.",
             "", "| K | corpus | alpha | dense s | sparse s | sparse / dense |",
             "|---|---|---|---|---|---|"]
    for r in result["rows"]:
        lines.append(f"| {r['K']} | {r['corpus']} | {r['alpha']} | {r['dense_median']:.3f} | "
                     f"{r['sparse_median']:.3f} | {r['sparse_over_dense']:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
