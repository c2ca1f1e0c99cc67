"""Do the eta-step's per-class Cholesky draws use the threads they are given?

``dolda.sampler.probit.draw_coefficients`` factors ``Q_l = U^T U + diag(prec_l)`` for every
class ``l`` and shares the classes among ``n_jobs`` threads, one BLAS thread each.  That only
pays if LAPACK runs without the GIL.  This times, interleaved, at the shape of 20 Newsgroups
with K = 1,000 topics (P = 1,002 columns: intercept, a covariate, the topics; L = 20 classes)
and at K = 100 (P = 102):

* ``draw_coefficients`` with ``n_jobs`` = 1 and 2 (LAPACK through
  :mod:`dolda.sampler.lapack_nogil`, no GIL);
* the same draws through scipy's ``scipy.linalg.lapack`` wrappers (f2py, which hold the
  GIL) on 2 threads: the eta-step before this module, as the peer.

BLAS is capped at one thread.  Usage::

    python benchmarks/bench_eta_threads.py [--rounds 5] [--name eta_threads]

writes ``benchmarks/results/<name>.json`` and ``.md``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from concurrent.futures import ThreadPoolExecutor  # noqa: E402
from datetime import date  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
from scipy.linalg import lapack  # noqa: E402

from dolda.sampler import probit  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _scipy_class(gram_f, prec_l, rhs_l, z_l):
    work = gram_f.copy(order="F")
    work.ravel(order="F")[:: work.shape[0] + 1] += prec_l
    chol, _ = lapack.dpotrf(work, lower=1, overwrite_a=1, clean=0)
    return lapack.dpotrs(chol, rhs_l, lower=1)[0] + lapack.dtrtrs(chol, z_l, lower=1,
                                                                  trans=1)[0]


def scipy_draws(gram, rhs, prec, normals, n_jobs):
    """The eta-step through the f2py wrappers, classes shared among ``n_jobs`` threads."""
    gram_f = np.asfortranarray(gram)
    out = np.empty_like(rhs)

    def run(classes):
        for l in classes:
            out[l] = _scipy_class(gram_f, prec[l], rhs[l], normals[l])

    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        list(pool.map(run, [range(j, len(rhs), n_jobs) for j in range(n_jobs)]))
    return out


def problem(n_cols, n_classes=20, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(3 * n_cols, n_cols))
    gram = A.T @ A
    return (gram, rng.normal(size=(n_classes, n_cols)), rng.gamma(2.0, size=(n_classes, n_cols)),
            rng.normal(size=(n_classes, n_cols)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--name", default="eta_threads")
    args = ap.parse_args(argv)
    contestants = {
        "draw_coefficients, n_jobs=1": lambda p: probit.draw_coefficients(*p, 1),
        "draw_coefficients, n_jobs=2": lambda p: probit.draw_coefficients(*p, 2),
        "scipy f2py wrappers, 2 threads (peer)": lambda p: scipy_draws(*p, 2),
    }
    rows = []
    for n_cols in (1002, 102):
        p = problem(n_cols)
        draws = [f(p) for f in contestants.values()]  # warm up, and the same draws
        same = all(np.array_equal(draws[0], d) for d in draws[1:])
        times = {name: [] for name in contestants}
        for _ in range(args.rounds):
            for name, f in contestants.items():
                tic = time.perf_counter()
                f(p)
                times[name].append(time.perf_counter() - tic)
        peer = np.median(times["scipy f2py wrappers, 2 threads (peer)"])
        for name, ts in times.items():
            rows.append({"columns": n_cols, "classes": 20, "contestant": name,
                         "median_ms": 1e3 * float(np.median(ts)),
                         "min_ms": 1e3 * float(np.min(ts)),
                         "speed_vs_peer": float(peer / np.median(ts)),
                         "same_draws": bool(same)})
        print(n_cols, {r["contestant"]: round(r["median_ms"], 1) for r in rows[-3:]}, flush=True)
    meta = {"date": date.today().isoformat(), "rounds": args.rounds,
            "cpus": os.cpu_count(), "load_after": os.getloadavg()[0]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = ["# The eta-step's Cholesky draws on two threads", "",
             f"{meta['date']}; L = 20 classes; {args.rounds} interleaved rounds; BLAS on one "
             f"thread; {meta['cpus']} cpus, load {meta['load_after']:.1f} after.", "",
             "| P | contestant | median ms | best ms | speed / peer | same draws |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['columns']} | {r['contestant']} | {r['median_ms']:.1f} | "
                     f"{r['min_ms']:.1f} | {r['speed_vs_peer']:.2f} | {r['same_draws']} |")
    lines += ["", "Reproduce: `python benchmarks/bench_eta_threads.py`", ""]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
