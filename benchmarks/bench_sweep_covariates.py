"""Sparse covariate columns in the word sweep or in the dense block: the triage task's A/B.

The task of ``bench_triage.py`` (hadoop + hdfs bug reports pooled, 54 components, text plus
reporter / priority / affects_version, the default DOLDA with word covariates) fitted with
``n_iter`` iterations twice per seed, interleaved: the one-hot levels in at most 5% of the
rows swept one coefficient at a time with the words
(``dolda.sampler.word_step.SWEEP_MAX_DENSITY = 0.05``, the default) and every covariate in
the dense block's joint Cholesky draw (``0``, the sampler before).  Records seconds per
iteration (median of the chain's own ``timings_``), test accuracy / log loss / ECE, and
the fit's convergence figures.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_sweep_covariates.py --iterations 150 --seeds 0 1

Writes benchmarks/results/sweep_covariates.json and .md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT.parent / "src"))

from bench_triage import COVARIATES, DEFAULT_DATA, pooled  # noqa: E402


def fit_one(train, test, density, n_iter, seed):
    import dolda
    from dolda.posterior.calibration import calibration_summary
    from dolda.sampler import word_step

    word_step.SWEEP_MAX_DENSITY = density
    cols = COVARIATES.split(",")
    model = dolda.DOLDA(n_iter=n_iter, random_state=seed, progress=False)
    tic = time.perf_counter()
    model.fit(train["text"].tolist(), train["label"].to_numpy(), covariates=train[cols])
    seconds = time.perf_counter() - tic
    proba = model.predict_proba(test["text"].tolist(), covariates=test[cols])
    y = np.searchsorted(model.classes_, test["label"].to_numpy())
    scores = calibration_summary(proba, y)
    per_iter = np.asarray(model.timings_["iteration_seconds"], dtype=float)
    conv = {k: (float(v) if isinstance(v, (int, float, np.floating)) and not isinstance(v, bool) else v)
            for k, v in model.convergence_.items() if not isinstance(v, (list, dict))}
    return {"density": density, "seed": seed, "fit_seconds": seconds,
            "iteration_seconds_median": float(np.median(per_iter[len(per_iter) // 2:])),
            "test": scores, "convergence": conv,
            "swept_columns": int(len(word_step._CACHE[0][2].swept)) if word_step._CACHE else None}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--densities", type=float, nargs="+", default=[0.05, 0.0])
    args = parser.parse_args(argv)
    import warnings

    warnings.simplefilter("ignore")
    train = pooled(args.data, "train", None, 0)
    test = pooled(args.data, "test", None, 0)
    test = test[test["label"].isin(set(train["label"]))]
    runs = []
    for seed in args.seeds:
        for density in (args.densities if seed % 2 == 0 else args.densities[::-1]):
            run = fit_one(train, test, density, args.iterations, seed)
            runs.append(run)
            print(json.dumps({k: run[k] for k in ("density", "seed", "fit_seconds",
                                                  "iteration_seconds_median", "test")}),
                  flush=True)
    out = ROOT / "results"
    result = {"command": "python benchmarks/bench_sweep_covariates.py "
                         + " ".join(argv or []), "train_rows": len(train),
              "test_rows": len(test), "classes": int(train["label"].nunique()),
              "load": os.getloadavg(), "runs": runs}
    (out / "sweep_covariates.json").write_text(json.dumps(result, indent=1))
    lines = ["# Sparse covariates swept with the words vs in the dense block (triage task)", "",
             f"`{result['command']}`: {len(train):,} training reports, {result['classes']} "
             f"classes, {len(test):,} test reports, default DOLDA (K = 20, word covariates) "
             f"with {args.iterations} iterations; load {result['load'][0]:.1f} at the end "
             "(2 cores).", "",
             "| sweep density | seed | fit s | s / iteration | accuracy | log loss | ECE | "
             "loglik R-hat | verdict |", "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        c, t = r["convergence"], r["test"]
        lines.append(f"| {r['density']:g} | {r['seed']} | {r['fit_seconds']:.0f} | "
                     f"{r['iteration_seconds_median']:.3f} | {t['accuracy']:.3f} | "
                     f"{t['log_loss']:.3f} | {t['ece']:.3f} | {c.get('loglik_rhat', float('nan')):.2f} | "
                     f"{c.get('converged')} |")
    (out / "sweep_covariates.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
