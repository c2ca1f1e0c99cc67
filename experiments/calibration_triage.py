"""Calibration of DOLDA on a bug-triage corpus with filing-time metadata (issue 14 follow-up).

DOLDA (K = 20, topics + one-hot reporter / priority / affects_version, no word covariates)
on a JIRA corpus's chronological split; test ECE, log loss and slope of the three
``proba`` rules beside multinomial logistic regression (C by 3-fold CV) on the same
regressors.  Test reports of classes absent from training are left out.  ::

    python -m experiments.calibration_triage jira_hadoop_meta --min-count 1 --iterations 150

Prints the table and writes ``results/calibration_triage_<corpus>.json``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"


def run(corpus, data_dir, min_count, iterations, seed=1):
    from sklearn.linear_model import LogisticRegressionCV

    from dolda import DOLDA, calibration
    from experiments.accuracy import load_corpus

    tr, ytr, te, yte, Xtr, Xte = load_corpus(data_dir, corpus)
    keep = np.isin(yte, np.unique(ytr))
    te = [t for t, k in zip(te, keep) if k]
    yte, Xte = yte[keep], Xte[keep]
    tic = time.perf_counter()
    model = DOLDA(n_topics=20, n_iter=iterations, random_state=seed, n_jobs=2, progress=False,
                  covariate_min_count=min_count, n_words=0).fit(tr, ytr, X=Xtr)
    out = {"corpus": corpus, "min_count": min_count, "iterations": iterations, "seed": seed,
           "fit_seconds": time.perf_counter() - tic,
           "calibration_map": calibration.stacking_map(model.stacking_),
           "n_columns": len(model.feature_names_), "convergence": model.convergence_["message"]}
    y = np.searchsorted(model.classes_, yte)
    for rule in calibration.PROBA_RULES:
        model.set_params(proba=rule)
        out[rule] = calibration.calibration_summary(model.predict_proba(te, X=Xte), y)
    model.set_params(proba="calibrated")
    A, B = model._regressors(tr, Xtr), model._regressors(te, Xte)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegressionCV(Cs=[0.1, 0.3, 1, 3, 10], cv=3, max_iter=3000).fit(
            A, np.searchsorted(model.classes_, ytr))
    proba = np.zeros((len(y), len(model.classes_)))
    proba[:, lr.classes_] = lr.predict_proba(B)
    out["logistic_regression"] = calibration.calibration_summary(proba, y)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--min-count", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=150)
    args = parser.parse_args(argv)
    out = run(args.corpus, args.data_dir, args.min_count, args.iterations)
    for name in ("calibrated", "ovr", "do", "logistic_regression"):
        s = out[name]
        print(f"{name:20s} acc={s['accuracy']:.3f} logloss={s['log_loss']:.3f} "
              f"ece={s['ece']:.3f} slope={s['slope']:.2f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"calibration_triage_{args.corpus}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(path)


if __name__ == "__main__":
    main()
