"""Seconds per eta-step of DOLDA with sparse covariates: 25,000 one-hot columns + 100 topics.

What is timed, per Gibbs iteration, is everything DOLDA's eta block costs:
the shard part (:func:`dolda.sampler.shard.utility_step`: ``mu = U_s eta^T``,
the utilities ``a``, the shard's ``zbar_s`` in CSR) and the driver part
(:func:`dolda.sampler.sparse_eta.eta_step`: stacking ``U = [X, zbar]``, the
CG draw of eta for all classes, the Horseshoe scales).  The topic counts are
a fixed random ``n_{d,k}`` (documents of 60-200 tokens on about 10 of the
K = 100 topics, Dirichlet(0.05) proportions) -- the z-sweep is not timed.

Design: the films-like one-hot covariates of ``benchmarks/bench_eta.py``
(D = 10,810 rows, intercept + 5 Zipf-distributed fields, L = 20 classes,
labels from sparse true effects), with P_x = 25,000 one-hot columns.

Peer, interleaved iteration by iteration in the same run: the dense path DOLDA
used before (reduced ``U_s^T U_s`` on the shards, a Cholesky per class,
:func:`dolda.sampler.chain.eta_step`) on the same rows with P_x = 1,000 one-hot
columns, the most it accepted without a warning; and the sparse path on that
same P_x = 1,000 design.  The chains are first warmed up (``--warmup``
iterations, untimed) so that the Horseshoe scales and the CG warm start are
those of a running chain.

    nice python benchmarks/bench_eta_dolda.py [--threads 2] [--repeats 5]

writes ``benchmarks/results/eta_dolda.json`` and ``eta_dolda.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from bench_eta import FILMS_ROWS, N_CLASSES, labels, one_hot_design  # noqa: E402

from dolda.sampler import chain as dolda_chain  # noqa: E402
from dolda.sampler import probit as gibbs  # noqa: E402
from dolda.sampler import shard as shard_blocks  # noqa: E402
from dolda.sampler import sparse_eta  # noqa: E402
from dolda.sampler.threads import using_threads  # noqa: E402

N_TOPICS = 100


def topic_counts(n_docs, rng):
    """Random ``n_{d,k}`` (D, K) and the matching document pointer (tokens are not needed)."""
    lengths = rng.integers(60, 200, n_docs)
    theta = rng.dirichlet(np.full(N_TOPICS, 0.05), n_docs)
    ndk = np.stack([rng.multinomial(n, p) for n, p in zip(lengths, theta)]).astype(np.int32)
    return ndk, np.r_[0, np.cumsum(lengths)].astype(np.int64)


class Path_:
    """One eta path (sparse or dense) with its own chain state."""

    def __init__(self, name, X, y, ndk, doc_ptr, sparse, threads):
        self.name, self.sparse, self.threads = name, sparse, threads
        n_cols = X.shape[1] + N_TOPICS
        shrunk = np.r_[False, np.ones(n_cols - 1, bool)]
        self.prior = gibbs.ProbitPrior(True, shrunk, 100.0)
        Xc = X.tocsr() if sparse else X.toarray()
        tokens = np.zeros(int(doc_ptr[-1]), np.int32)
        self.data = dolda_chain.TopicData(tokens, doc_ptr, 1, Xc, y, N_CLASSES)
        self.config = dolda_chain.DOLDAConfig(N_TOPICS, 0.1, 0.01, self.prior, "exact",
                                              threads, "cg" if sparse else "cholesky")
        self.shards = dolda_chain.whole_corpus_shards(self.data, 1)
        self.ndk = ndk
        self.probit = gibbs.initial_state(len(y), N_CLASSES, n_cols)
        self.n_cols = n_cols

    def step(self, it):
        t0 = time.perf_counter()
        parts = [shard_blocks.utility_step(1, it, sh, self.ndk[sh.docs], self.probit.eta)
                 for sh in self.shards]
        t1 = time.perf_counter()
        self.probit = dolda_chain.global_eta_step(1, it, self.probit, parts, self.data,
                                                  self.config)
        t2 = time.perf_counter()
        return t1 - t0, t2 - t1


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=15)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--columns", type=int, default=25_000)
    parser.add_argument("--peer-columns", type=int, default=1_000)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "eta_dolda"))
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    X = one_hot_design(FILMS_ROWS, args.columns, rng)
    X_peer = one_hot_design(FILMS_ROWS, args.peer_columns, np.random.default_rng(1))
    y = labels(X, rng)
    ndk, doc_ptr = topic_counts(FILMS_ROWS, rng)
    paths = [Path_(f"sparse CG, P_x = {X.shape[1]:,}", X, y, ndk, doc_ptr, True, args.threads),
             Path_(f"sparse CG, P_x = {X_peer.shape[1]:,}", X_peer, y, ndk, doc_ptr, True,
                   args.threads),
             Path_(f"dense Cholesky, P_x = {X_peer.shape[1]:,}", X_peer, y, ndk, doc_ptr,
                   False, args.threads)]
    times = {p.name: [] for p in paths}
    with using_threads(args.threads):
        for it in range(args.warmup + args.repeats):
            for p in paths:  # interleaved: every path sees the same machine load
                shard_s, driver_s = p.step(it)
                if it >= args.warmup:
                    times[p.name].append((shard_s, driver_s))
    rows = []
    for p in paths:
        t = np.array(times[p.name])
        total = t.sum(axis=1)
        rows.append({"path": p.name, "D": FILMS_ROWS, "columns": p.n_cols,
                     "nnz_X": int(p.data.X.nnz if p.sparse else np.count_nonzero(p.data.X)),
                     "median_seconds": float(np.median(total)),
                     "median_shard_seconds": float(np.median(t[:, 0])),
                     "median_driver_seconds": float(np.median(t[:, 1])),
                     "all_seconds": total.tolist()})
    big, small_sparse, small_dense = (r["median_seconds"] for r in rows)
    result = {"benchmark": "eta_dolda", "threads": args.threads, "classes": N_CLASSES,
              "load_average_1min_at_end": os.getloadavg()[0],
              "topics": N_TOPICS, "warmup": args.warmup, "repeats": args.repeats,
              "rows": rows,
              "ratio_dense_peer_over_sparse_same_size": small_dense / small_sparse,
              "ratio_sparse_big_over_dense_peer": big / small_dense}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n")
    lines = ["# DOLDA eta-step with sparse covariates", "",
             f"`python benchmarks/bench_eta_dolda.py --threads {args.threads}` (D = {FILMS_ROWS:,},"
             f" L = {N_CLASSES}, K = {N_TOPICS}, Horseshoe, {args.warmup} warm-up iterations, "
             f"median of {args.repeats}; shard part + driver part per iteration).", "",
             "| path | columns P | median s / eta-step | shard s | driver s |",
             "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['path']} | {r['columns']:,} | {r['median_seconds']:.3f} | "
                     f"{r['median_shard_seconds']:.3f} | {r['median_driver_seconds']:.3f} |")
    lines += ["", f"At P_x = {X_peer.shape[1]:,} the dense Cholesky path takes "
              f"{result['ratio_dense_peer_over_sparse_same_size']:.1f}x the sparse CG path's "
              f"time; the sparse path at P_x = {X.shape[1]:,} takes "
              f"{result['ratio_sparse_big_over_dense_peer']:.2f}x the dense path at "
              f"{X_peer.shape[1]:,}."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
