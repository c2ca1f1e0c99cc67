"""Seconds per DO-probit Gibbs iteration: dolda vs a plain numpy reference, same run.

Problem (issue 2): D = 15,000 rows, 120 columns (intercept + 119 covariates),
L = 20 classes, Horseshoe prior.  Both implementations do the same iteration
(a -> eta -> shrinkage); the reference draws the truncated normals by the
inverse CDF (scipy.special) and loops over classes with numpy's Cholesky.

    python benchmarks/bench_probit.py [--iterations 30] [--threads 2]

writes benchmarks/results/probit_iteration.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy.special import ndtr, ndtri

from dolda.sampler import probit as gibbs
from dolda.sampler.threads import using_threads

RESULTS = Path(__file__).parent / "results"


def make_problem(n=15_000, n_cov=119, n_classes=20, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_cov))
    U = np.column_stack([np.ones(n), X])
    eta = np.zeros((n_classes, n_cov + 1))
    eta[:, 1:6] = rng.normal(scale=1.0, size=(n_classes, 5))
    mu = U @ eta.T
    y = np.argmax(mu + rng.normal(size=mu.shape), axis=1)
    return U, y, n_classes


def numpy_iteration(rng, state, U, gram, y, prior):
    """The same Gibbs iteration in plain numpy (the reference)."""
    mu = U @ state.eta.T
    positive = np.arange(mu.shape[1])[None, :] == y[:, None]
    # a > 0 for the observed class, a < 0 otherwise, by the inverse CDF
    lo = np.where(positive, ndtr(-mu), 0.0)
    hi = np.where(positive, 1.0, ndtr(-mu))
    u = lo + rng.random(mu.shape) * (hi - lo)
    a = mu + ndtri(np.clip(u, 1e-300, 1 - 1e-16))
    prec = gibbs.prior_precision(prior, state.lam2, state.tau2)
    rhs = (U.T @ a).T
    eta = np.empty_like(state.eta)
    for l in range(len(eta)):
        q = gram + np.diag(prec[l])
        c = np.linalg.cholesky(q)
        mean = np.linalg.solve(c.T, np.linalg.solve(c, rhs[l]))
        eta[l] = mean + np.linalg.solve(c.T, rng.standard_normal(len(mean)))
    lam2, tau2, nu, xi = gibbs.draw_shrinkage(rng, prior, eta, state.lam2, state.tau2,
                                              state.nu, state.xi)
    return gibbs.ProbitState(a, eta, lam2, tau2, nu, xi)


def time_it(fn, n_iter):
    fn(0)  # warm-up (numba compile, thread pool)
    start = time.perf_counter()
    for it in range(1, n_iter + 1):
        fn(it)
    return (time.perf_counter() - start) / n_iter


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    U, y, n_classes = make_problem()
    shrunk = np.ones(U.shape[1], dtype=bool)
    shrunk[0] = False
    prior = gibbs.ProbitPrior(True, shrunk, 100.0)
    gram = U.T @ U
    rows = {}

    from threadpoolctl import threadpool_limits

    load_before = os.getloadavg()
    for threads in sorted({1, args.threads}):
        # numba threads and BLAS threads both capped at `threads`: on a shared 2-core
        # machine uncapped BLAS threads oversubscribe the cores and dominate the timing
        with using_threads(threads), threadpool_limits(limits=threads, user_api="blas"):
            state = [gibbs.initial_state(len(U), n_classes, U.shape[1])]

            def step(it):
                state[0] = gibbs.gibbs_step(12345, it, state[0], U, gram, y, prior, threads)

            rows[f"dolda_{threads}_threads"] = time_it(step, args.iterations)

    rng = np.random.default_rng(1)
    ref_state = [gibbs.initial_state(len(U), n_classes, U.shape[1])]

    def ref_step(it):
        ref_state[0] = numpy_iteration(rng, ref_state[0], U, gram, y, prior)

    with threadpool_limits(limits=1, user_api="blas"):
        rows["numpy_reference"] = time_it(ref_step, args.iterations)
    result = {
        "problem": {"rows": len(U), "columns": U.shape[1], "classes": n_classes,
                    "prior": "horseshoe"},
        "iterations_timed": args.iterations,
        "seconds_per_iteration": rows,
        "speedup_vs_numpy": {k: rows["numpy_reference"] / v for k, v in rows.items()
                             if k != "numpy_reference"},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "note": "U^T U is fixed in DOProbit and computed once per fit, as in both timings. "
                "The numpy reference runs with BLAS on 1 thread; dolda with numba and BLAS "
                "capped at the stated thread count.",
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "probit_iteration.json").write_text(json.dumps(result, indent=2) + "\n")
    for k, v in rows.items():
        print(f"{k:22s} {v * 1e3:8.1f} ms/iteration")
    for k, v in result["speedup_vs_numpy"].items():
        print(f"speed-up {k}: {v:.2f}x vs numpy reference")


if __name__ == "__main__":
    main()
