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


def _logistic_scores(model, train, y_train, X_train, test, X_test, y_index):
    """Test scores of multinomial logistic regression (C by 3-fold CV) on ``model``'s
    regressors of the same training and test rows (``y_index``: the test rows' class
    columns in ``model.classes_``)."""
    from sklearn.linear_model import LogisticRegressionCV

    from dolda.posterior import calibration

    A, B = model._regressors(train, X_train), model._regressors(test, X_test)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegressionCV(Cs=[0.1, 0.3, 1, 3, 10], cv=3, max_iter=3000).fit(
            A, np.searchsorted(model.classes_, y_train))
    proba = np.zeros((len(y_index), len(model.classes_)))
    proba[:, lr.classes_] = lr.predict_proba(B)
    return calibration.calibration_summary(proba, y_index)


def run(corpus, data_dir, min_count, iterations, seed=1):
    from dolda import DOLDA
    from dolda.posterior import calibration
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
    out["logistic_regression"] = _logistic_scores(model, tr, ytr, Xtr, te, Xte, y)
    return out


def run_holdout(corpus, data_dir, min_count, iterations, fraction=0.2, seed=1):
    """The chain fitted on the earliest ``1 - fraction`` of the (time-ordered) training
    reports; its calibration map either fitted as ``fit`` does (leave-one-out on those
    reports) or on the latest ``fraction``, which the chain never saw: out-of-sample and
    out-of-time, as the test reports are.  Test scores of both, and of LR on the same
    earliest reports."""
    from dolda import DOLDA
    from dolda.posterior import calibration
    from dolda.posterior.holdout import holdout_stacking
    from experiments.accuracy import load_corpus

    tr, ytr, te, yte, Xtr, Xte = load_corpus(data_dir, corpus)
    known_full = np.isin(yte, np.unique(ytr))
    cut = int(round(len(tr) * (1 - fraction)))
    tr1, y1, X1 = tr[:cut], ytr[:cut], Xtr.iloc[:cut]
    hold, yh, Xh = tr[cut:], ytr[cut:], Xtr.iloc[cut:].reset_index(drop=True)
    keep_te = np.isin(yte, np.unique(y1))
    n_test_lost = int((known_full & ~keep_te).sum())  # predictable with all rows only
    te = [t for t, k in zip(te, keep_te) if k]
    yte, Xte = yte[keep_te], Xte[keep_te].reset_index(drop=True)
    keep_h = np.isin(yh, np.unique(y1))
    hold = [t for t, k in zip(hold, keep_h) if k]
    yh, Xh = yh[keep_h], Xh[keep_h].reset_index(drop=True)
    tic = time.perf_counter()
    model = DOLDA(n_topics=20, n_iter=iterations, random_state=seed, n_jobs=2, progress=False,
                  covariate_min_count=min_count, n_words=0).fit(tr1, y1, X=X1)
    out = {"corpus": corpus, "mode": "holdout", "holdout_fraction": fraction,
           "n_fit": len(tr1), "n_holdout": len(hold), "n_test": len(te),
           "n_test_of_classes_only_in_the_holdout": n_test_lost,
           "min_count": min_count, "iterations": iterations, "seed": seed,
           "fit_seconds": time.perf_counter() - tic,
           "convergence": model.convergence_["message"]}
    y = np.searchsorted(model.classes_, yte)
    loo_map = model.stacking_
    out["calibration_map_loo"] = calibration.stacking_map(loo_map)
    for rule in calibration.PROBA_RULES:
        model.set_params(proba=rule)
        out[rule] = calibration.calibration_summary(model.predict_proba(te, X=Xte), y)
    model.set_params(proba="calibrated")
    # the held-out rows' own map: what fit(calibration_holdout=fraction) keeps (same chain)
    own = holdout_stacking(model, hold, yh, Xh)
    out["calibration_map_holdout"] = calibration.stacking_map(own)
    model.stacking_ = own
    out["calibrated_holdout_map"] = calibration.calibration_summary(
        model.predict_proba(te, X=Xte), y)
    model.stacking_ = loo_map
    out["logistic_regression"] = _logistic_scores(model, tr1, y1, X1, te, Xte, y)
    # the default: the chain on every training row, the leave-one-out map; scored on the
    # same test rows (its extra classes' probabilities are renormalised away, in its favour)
    tic = time.perf_counter()
    full = DOLDA(n_topics=20, n_iter=iterations, random_state=seed, n_jobs=2, progress=False,
                 covariate_min_count=min_count, n_words=0).fit(tr, ytr, X=Xtr)
    out["full_fit_seconds"] = time.perf_counter() - tic
    columns = np.searchsorted(full.classes_, model.classes_)
    proba = full.predict_proba(te, X=Xte)[:, columns]
    out["full_rows_loo_map"] = calibration.calibration_summary(
        proba / proba.sum(axis=1, keepdims=True), y)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--min-count", type=int, default=1)
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--holdout", type=float, default=0.0,
                        help="fit the chain on the earliest 1 - HOLDOUT of the training "
                             "reports and compare the map fitted on the latest HOLDOUT")
    args = parser.parse_args(argv)
    if args.holdout:
        out = run_holdout(args.corpus, args.data_dir, args.min_count, args.iterations,
                          args.holdout)
    else:
        out = run(args.corpus, args.data_dir, args.min_count, args.iterations)
    names = ["calibrated", "ovr", "do", "logistic_regression"]
    if args.holdout:
        names.insert(1, "calibrated_holdout_map")
        names.append("full_rows_loo_map")
    for name in names:
        s = out[name]
        print(f"{name:20s} acc={s['accuracy']:.3f} logloss={s['log_loss']:.3f} "
              f"ece={s['ece']:.3f} slope={s['slope']:.2f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = f"_holdout{args.holdout:g}" if args.holdout else ""
    path = RESULTS / f"calibration_triage_{args.corpus}{suffix}.json"
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(path)


if __name__ == "__main__":
    main()
