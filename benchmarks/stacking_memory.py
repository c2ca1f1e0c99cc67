"""Peak memory and time of the calibration map's fit on DOLDA's design, before and after.

The map's fit (``dolda.models.probit.estimator.fit_proba_stacking``: the leave-one-out draws, then the
map) is where ``DOLDA(n_topics=1000)`` at its defaults peaked on 20 Newsgroups
(``results/dolda_memory.md``).  This runs it on inputs of that shape without a chain:
D = 11,314 rows, K = 1,000 dense topic proportions (Dirichlet, every entry non-zero, as the
Rao-Blackwellised estimate gives), an intercept and 5,000 sparse word columns (about 90
non-zeros a row), L = 20 classes, S = 250 float32 draws.  Each variant runs in a fresh
process (peak RSS from ``getrusage`` minus the RSS after the inputs exist), in interleaved
rounds:

* ``before``: ``U`` one CSR matrix (the dense block copied into it), leave-one-out slices
  of 2e7 values (the code before 2026-11-26);
* ``design``: ``U`` a :class:`dolda.design.regressors.SparseDenseDesign`, slices of 2e7;
* ``after``: the design and slices of 2e6 (the code now).

``python benchmarks/stacking_memory.py --rounds 2`` writes
``results/stacking_memory.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
VARIANTS = ("before", "design", "after")


def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def inputs(seed=0, D=11314, K=1000, V=5000, L=20, S=250, per_row=90):
    import numpy as np
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    zbar = rng.dirichlet(np.full(K, 0.05), size=D)
    rows = np.repeat(np.arange(D), per_row)
    cols = rng.integers(0, V, size=D * per_row)
    words = sp.csr_matrix((np.log1p(rng.poisson(1.0, D * per_row) + 1.0), (rows, cols)),
                          shape=(D, V))
    left = sp.hstack([sp.csr_matrix(np.ones((D, 1))), words], format="csr")
    y = rng.integers(0, L, size=D)
    draws = (rng.normal(size=(S, L, 1 + V + K)) * 0.3).astype(np.float32)
    return left, zbar, y, draws


def one(variant):
    """Run one variant in this process; print a JSON line."""
    import numpy as np
    import scipy.sparse as sp

    from dolda.posterior import calibration
    from dolda.design.regressors import SparseDenseDesign
    from dolda.posterior.scores import fit_proba_stacking

    left, zbar, y, draws = inputs()
    base = rss()
    tic = time.perf_counter()
    if variant == "before":
        U = sp.hstack([left, sp.csr_matrix(zbar)], format="csr")
    else:
        U = SparseDenseDesign(left, zbar)
    max_elements = 2e6 if variant == "after" else 2e7
    loo_draws = calibration.loo_draws
    calibration.loo_draws = (lambda *a, **k: loo_draws(*a, **k, max_elements=max_elements))
    stacking = fit_proba_stacking(U, draws, y, draws.shape[1])
    seconds = time.perf_counter() - tic
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"variant": variant, "peak_above_inputs_gb": (peak - base) / 1e9,
                      "seconds": seconds, "stacking_sum": float(np.abs(stacking).sum())}))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--one", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        return one(args.one)
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="2")
    rows = []
    load_before = os.getloadavg()[0]
    for r in range(args.rounds):
        for variant in VARIANTS:
            out = subprocess.run([sys.executable, __file__, "--one", variant], env=env,
                                 check=True, capture_output=True, text=True).stdout
            row = json.loads(out.strip().splitlines()[-1])
            row["round"] = r
            rows.append(row)
            print(row, flush=True)
    result = {"rows": rows, "load_before": load_before, "load_after": os.getloadavg()[0]}
    (HERE / "results" / "stacking_memory.json").write_text(json.dumps(result, indent=1))
    lines = ["# Calibration map's fit on DOLDA's design (K = 1000, 5,000 word columns, 250 draws)",
             "", f"`python benchmarks/stacking_memory.py --rounds {args.rounds}`; one fresh "
             f"process per variant and round, interleaved; load average {load_before:.1f} "
             f"before, {result['load_after']:.1f} after.", "",
             "| variant | round | peak above the inputs (GB) | seconds | sum of abs(map) |",
             "|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['variant']} | {row['round']} | {row['peak_above_inputs_gb']:.3f} "
                     f"| {row['seconds']:.1f} | {row['stacking_sum']:.6f} |")
    (HERE / "results" / "stacking_memory.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
