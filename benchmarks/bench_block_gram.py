"""The CG block preconditioner's ``G_B = U_B^T U_B``: dolda's kernel against scipy's product.

``gaussian.sparse_design`` forms the intercept-and-topics block of DOLDA's sparse design in
every eta-step (the default with word covariates).  Inputs of 20 Newsgroups' shape at
K = 1000: D = 11,314 rows, an intercept, 5,000 word columns (90 non-zeros a row) and the
training zbar (about 60 topics a document).  Interleaved rounds, same process, 2 numba
threads, BLAS capped at 1.  ``python benchmarks/bench_block_gram.py --rounds 5`` writes
``results/block_gram.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from dolda.sampler import preconditioner, sparse_eta  # noqa: E402

HERE = Path(__file__).resolve().parent


def inputs(seed=0, D=11314, V=5000, K=1000, words_per_row=90, topics_per_doc=60):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(D), words_per_row)
    X = sp.hstack([sp.csr_matrix(np.ones((D, 1))),
                   sp.csr_matrix((np.ones(D * words_per_row),
                                  (rows, rng.integers(0, V, D * words_per_row))),
                                 shape=(D, V))], format="csr")
    ndk = np.zeros((D, K), np.int32)
    for d in range(D):
        np.add.at(ndk[d], rng.integers(0, K, topics_per_doc), 1)
    doc_ptr = np.r_[0, np.cumsum(ndk.sum(axis=1))]
    U = sparse_eta.design(X, [sparse_eta.zbar_csr(doc_ptr, ndk)])
    return U, sparse_eta.block_columns(X.shape[1], K)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    U, block = inputs()
    csr_t = U.T.tocsr()
    position = np.full(U.shape[1], -1, np.int64)
    position[block] = np.arange(len(block))
    preconditioner.block_gram(U.indptr, U.indices, U.data, position, len(block))  # compile
    load_before = os.getloadavg()[0]
    times = {"dolda block_gram": [], "scipy U_B^T U_B": []}
    for _ in range(args.rounds):
        tic = time.perf_counter()
        mine = preconditioner.block_gram(U.indptr, U.indices, U.data, position, len(block))
        times["dolda block_gram"].append(time.perf_counter() - tic)
        tic = time.perf_counter()
        u_b = csr_t[block]
        theirs = np.asarray((u_b @ u_b.T).toarray())
        times["scipy U_B^T U_B"].append(time.perf_counter() - tic)
    diff = float(np.abs(mine - theirs).max())
    result = {"nnz": int(U.nnz), "block": len(block), "times": times,
              "max_abs_difference": diff, "load_before": load_before,
              "load_after": os.getloadavg()[0]}
    (HERE / "results" / "block_gram.json").write_text(json.dumps(result, indent=1))
    med = {k: float(np.median(v)) for k, v in times.items()}
    lines = ["# The CG block preconditioner's Gram block (20 Newsgroups shape, K = 1000)", "",
             f"`python benchmarks/bench_block_gram.py --rounds {args.rounds}`: U with "
             f"{U.nnz:,} non-zeros, a block of {len(block):,} columns; {args.rounds} "
             f"interleaved rounds, 2 numba threads; load average {load_before:.1f} before, "
             f"{result['load_after']:.1f} after.", "",
             "| kernel | median s | min s | scipy / this |", "|---|---|---|---|"]
    for k, v in times.items():
        lines.append(f"| {k} | {med[k]:.3f} | {min(v):.3f} | "
                     f"{med['scipy U_B^T U_B'] / med[k]:.2f} |")
    lines += ["", f"Largest difference between the two: {diff:.3g}."]
    (HERE / "results" / "block_gram.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
