"""Prediction sweeps: what the Rao-Blackwellised average of the topic proportions buys
downstream (20 Newsgroups, DOLDA's classification).

One DOLDA fit (topics only, ``n_words=0``) on the "stripped" 20 Newsgroups training split.
Then, for each prediction setting -- the estimator (drawn counts, as before 2026-11-26, or the
Rao-Blackwellised average of the conditionals) and the number of sweeps (burn-in half) -- and
each prediction seed, the calibration map is refitted on the training documents' regressors
recomputed with that setting (as ``fit`` does) and the test split is scored: accuracy, log
loss, expected calibration error, and the seconds of the test split's topic proportions.

Usage::

    python -m experiments.predict_estimator [--topics 50] [--iterations 200]
        [--sweeps 10 20 50] [--seeds 3]

Writes ``experiments/results/predict_estimator.json``.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def run(data_dir, topics, iterations, sweeps_list, seeds, fit_seed=1, burn_fractions=(0.5,),
        estimators=(False, True)):
    import dolda.sampler.lda as kernels
    from dolda import DOLDA
    from dolda.posterior.scores import fit_proba_stacking
    from dolda.posterior.scores import coefficient_prior_sd
    from dolda.posterior.calibration import calibration_summary
    from experiments.calibration import _map_of
    from experiments.newsgroups import load_setting

    tr_texts, ytr, te_texts, yte, _, _ = load_setting(data_dir, "stripped", False)
    tic = time.perf_counter()
    fit = DOLDA(n_topics=topics, n_iter=iterations, random_state=fit_seed, progress=False,
                n_words=0)
    fit.fit(tr_texts, ytr)
    fit_s = time.perf_counter() - tic
    print(f"fit in {fit_s:.0f} s", flush=True)
    classes = list(fit.classes_)
    y_tr = np.array([classes.index(v) for v in ytr])
    y_te = np.array([classes.index(v) for v in yte])
    prior_sd = coefficient_prior_sd(fit.tau_draws_, fit.lambda_draws_, fit.prior_variance)
    original = kernels.predict_topic_proportions
    rows = []
    try:
        for seed in range(1, seeds + 1):
            fit.seed_ = seed  # the prediction streams
            for sweeps, fraction, rb in itertools.product(sweeps_list, burn_fractions,
                                                          estimators):
                kernels.predict_topic_proportions = functools.partial(original,
                                                                      rao_blackwell=rb)
                burn_in = min(sweeps - 1, int(round(fraction * sweeps)))
                fit.predict_sweeps, fit.predict_burn_in = sweeps, burn_in
                U_tr = fit._regressors(tr_texts)
                fit.stacking_ = fit_proba_stacking(U_tr, fit.eta_draws_, y_tr, len(classes),
                                                   prior_sd)
                tic = time.perf_counter()
                U_te = fit._regressors(te_texts)
                secs = time.perf_counter() - tic
                proba = fit._class_probabilities(U_te)
                row = {"seed": seed, "sweeps": sweeps, "burn_in": burn_in,
                       "estimator": "rao-blackwell" if rb else "counts",
                       "test_regressor_seconds": secs, "calibration_map": _map_of(fit),
                       **calibration_summary(proba, y_te)}
                rows.append(row)
                print({k: (round(v, 4) if isinstance(v, float) else v)
                       for k, v in row.items()}, flush=True)
    finally:
        kernels.predict_topic_proportions = original
    return {"experiment": "predict_estimator", "setting": "stripped", "topics": topics,
            "iterations": iterations, "fit_seed": fit_seed, "fit_seconds": fit_s,
            "n_train": len(tr_texts), "n_test": len(te_texts), "rows": rows,
            "summary": summary(rows)}


def summary(rows):
    """Mean and spread over the prediction seeds, per (estimator, sweeps)."""
    out = []
    keys = sorted({(r["estimator"], r["sweeps"], r["burn_in"]) for r in rows})
    for est, sweeps, burn_in in keys:
        sel = [r for r in rows
               if (r["estimator"], r["sweeps"], r["burn_in"]) == (est, sweeps, burn_in)]
        entry = {"estimator": est, "sweeps": sweeps, "burn_in": burn_in, "n_seeds": len(sel)}
        for metric in ("accuracy", "log_loss", "ece", "slope", "test_regressor_seconds"):
            vals = np.array([r[metric] for r in sel])
            entry[metric] = float(vals.mean())
            entry[metric + "_sd"] = float(vals.std(ddof=1)) if len(vals) > 1 else 0.0
        out.append(entry)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--sweeps", type=int, nargs="+", default=[10, 20, 50])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--burn-in-fractions", type=float, nargs="+", default=[0.5],
                        help="burn-in as a fraction of the sweeps (0.5: the default)")
    parser.add_argument("--estimators", nargs="+", default=["counts", "rao-blackwell"],
                        choices=["counts", "rao-blackwell"])
    parser.add_argument("--out", default="predict_estimator.json",
                        help="file name under experiments/results/")
    args = parser.parse_args(argv)
    result = run(args.data, args.topics, args.iterations, args.sweeps, args.seeds,
                 burn_fractions=args.burn_in_fractions,
                 estimators=[e == "rao-blackwell" for e in args.estimators])
    out = ROOT / "experiments" / "results" / args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    for entry in result["summary"]:
        print(entry)


if __name__ == "__main__":
    main()
