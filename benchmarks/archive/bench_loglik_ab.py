"""The monitoring log-likelihoods, old source tree against new, alternating (issue 13).

A synthetic state shaped like 20 Newsgroups train: D = 11,314 documents of 163 tokens drawn
from Dirichlet(0.05) topic proportions, V = 83,488 words, topic-word counts negative-binomial
with the corpus's 1.84 M tokens in all (non-zeros only, as ``SparseCounts``), K = 100 and
1000, alpha = 0.1, beta = 0.01, 2 threads.  Each tree runs in its own process (its own numba
cache), ``--repeats`` times in turn; each process reports the median of 7 calls of
``lda_doc_log_likelihood`` (the LDA document part), ``_topic_part_sparse`` (its topic part)
and the DO probit's ``do_log_likelihood`` (on ``mu`` (D, 20) drawn N(0, 2^2), one class
per document) after one untimed call.

Usage::

    python benchmarks/archive/bench_loglik_ab.py --old /tmp/old/src --new src --repeats 2

Writes ``benchmarks/results/loglik_table.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "results"

WORKER = r"""
import json, sys, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from numba import set_num_threads
from dolda.sampler.topic_likelihood import lda_doc_log_likelihood, _topic_part_sparse
from dolda.sampler.likelihood import do_log_likelihood
set_num_threads(2)
rng = np.random.default_rng(0)
res = {}
for K in (100, 1000):
    D, V = 11314, 83488
    theta = rng.dirichlet(np.full(K, 0.05), size=D)
    ndk = np.array([rng.multinomial(163, t) for t in theta], np.int32)
    nkw = rng.negative_binomial(0.02, 0.02 / (0.02 + 1843000 / (K * V)), size=(K, V)).astype(np.int32)
    ptr = np.concatenate([[0], np.cumsum((nkw > 0).sum(1))]).astype(np.int64)
    cnt = nkw[nkw > 0].astype(np.int32)
    part = np.empty(K)
    doc = lda_doc_log_likelihood(ndk, 0.1)
    _topic_part_sparse(ptr, cnt, V, 0.01, part)
    mu = rng.normal(scale=2.0, size=(D, 20))
    y = rng.integers(0, 20, D)
    do = do_log_likelihood(mu, y)
    td, tt, tdo = [], [], []
    for r in range(7):
        t = time.perf_counter(); lda_doc_log_likelihood(ndk, 0.1); td.append(time.perf_counter() - t)
        t = time.perf_counter(); _topic_part_sparse(ptr, cnt, V, 0.01, part); tt.append(time.perf_counter() - t)
        t = time.perf_counter(); do_log_likelihood(mu, y); tdo.append(time.perf_counter() - t)
    res[K] = {"doc_s": float(np.median(td)), "topic_s": float(np.median(tt)),
              "do_s": float(np.median(tdo)), "doc_value": doc, "topic_value": float(part.sum()),
              "do_value": float(do), "nnz": int(len(cnt))}
print(json.dumps(res))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--old", required=True)
    parser.add_argument("--new", default=str(ROOT / "src"))
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args(argv)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    runs = {"old": [], "new": []}
    load_before = os.getloadavg()
    for _ in range(args.repeats):
        for name in ("old", "new"):
            out = subprocess.run([sys.executable, "-c", WORKER, getattr(args, name)], env=env,
                                 check=True, capture_output=True, text=True).stdout
            runs[name].append(json.loads(out.strip().splitlines()[-1]))
    load_after = os.getloadavg()
    rows = []
    for K in ("100", "1000"):
        row = {"K": int(K)}
        for part in ("doc_s", "topic_s", "do_s"):
            for name in ("old", "new"):
                row[f"{name}_{part}"] = float(np.median([r[K][part] for r in runs[name]]))
        row["same_values"] = all(r[K]["doc_value"] == runs["old"][0][K]["doc_value"]
                                 and r[K]["topic_value"] == runs["old"][0][K]["topic_value"]
                                 for name in ("old", "new") for r in runs[name])
        dos = [r[K]["do_value"] for name in ("old", "new") for r in runs[name]]
        row["do_max_relative_difference"] = float((max(dos) - min(dos)) / abs(dos[0]))
        rows.append(row)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "loglik_table.json").write_text(json.dumps(
        {"old": args.old, "new": args.new, "repeats": args.repeats, "runs": runs, "rows": rows,
         "load_average_before": load_before, "load_average_after": load_after}, indent=2) + "\n")
    lines = ["# The monitoring log-likelihoods, old tree against new (synthetic 20 Newsgroups "
             "shapes)", "", "`same values`: the LDA parts bit for bit; the DO probit's is computed "
             "another way (one erfc per entry), so its spread over both trees is given.", "", f"`python benchmarks/archive/bench_loglik_ab.py --old {args.old} --new "
             f"{args.new} --repeats {args.repeats}`; 2 threads, medians over the processes' "
             f"medians; load {load_before[0]:.1f} before, {load_after[0]:.1f} after.", "",
             "| K | document part old ms | new ms | old / new | topic part old ms | new ms | "
             "old / new | same values | DO probit old ms | new ms | old / new | DO values' "
             "relative spread |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['K']} | {r['old_doc_s'] * 1e3:.2f} | {r['new_doc_s'] * 1e3:.2f} | "
                     f"{r['old_doc_s'] / r['new_doc_s']:.2f}x | {r['old_topic_s'] * 1e3:.2f} | "
                     f"{r['new_topic_s'] * 1e3:.2f} | {r['old_topic_s'] / r['new_topic_s']:.1f}x "
                     f"| {r['same_values']} | {r['old_do_s'] * 1e3:.2f} | "
                     f"{r['new_do_s'] * 1e3:.2f} | {r['old_do_s'] / r['new_do_s']:.2f}x | "
                     f"{r['do_max_relative_difference']:.1e} |")
    (OUT / "loglik_table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
