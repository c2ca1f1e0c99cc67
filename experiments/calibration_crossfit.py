"""Cross-fitted calibration map against the leave-one-out map (DOProbit).

The leave-one-out map (the default of ``proba="calibrated"``) is fitted on importance-sampled
leave-one-out predictors of the chain's own draws.  The cross-fitted map: K chains, chain k
on the training rows outside fold k (folds stratified by class,
``dolda.posterior.crossfit.stratified_folds``), fold k's predictors ``mu`` under evenly spaced draws of
chain k (equal weights; columns chain k never saw left out), the map fitted on the pooled
out-of-fold draws by ``dolda.posterior.calibration.select_stacking`` (the leave-one-out map's
machinery), then applied with the full-data chain's draws on the test rows.  ::

    python -m experiments.calibration_crossfit films [--iterations 200] [--folds 5 3]
    python -m experiments.calibration_crossfit simulated [--folds 5 3]
    python -m experiments.calibration_crossfit films-estimator --iterations 100 --folds 5

Results: ``experiments/results/calibration_crossfit_simulated.json`` and
``calibration_crossfit_films_<iterations>it.json`` (written after every
chain, ``"partial": true`` until the end).  The fold chains skip their own leave-one-out
map (patched out: it is not used).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
sys.path.insert(0, str(ROOT / "tests"))
import _simulate  # noqa: E402  (the tests' simulator: never calls dolda)

from experiments.calibration import _logistic, _scores, films_split  # noqa: E402

SIMULATED = (("logit", 1.0, 3000, "normal"), ("do", 0.7, 3000, "normal"))


def _fold_chain(make, X, y):
    """A chain on ``X, y`` without its own leave-one-out map (not needed here)."""
    with mock.patch("dolda.models.probit.estimator.fit_proba_stacking", lambda *a, **k: None):
        return make().fit(X, y)


def crossfit_maps(make, X, y_index, classes, folds_list, seed, log=print, variants=True):
    """``{K: {"zeroed": stacking, "raw": stacking, ...}}``: the cross-fitted maps.

    ``make(random_state)`` builds an unfitted DOProbit; ``X`` (D, P) the training rows
    (without intercept), ``y_index`` their class columns.  ``"zeroed"`` leaves out of a
    held-out row's predictor the columns the fold chain never saw (the design);
    ``"raw"`` keeps their prior-drawn coefficients (for comparison).
    """
    from dolda.posterior import crossfit as _crossfit, calibration
    from dolda.sampler.rng import chain_seed

    n_classes = len(classes)
    n_keep = calibration.map_draw_count(X.shape[0], n_classes)
    out = {}
    for n_folds in folds_list:
        fold = _crossfit.stratified_folds(y_index, n_folds, _crossfit.fold_seed(seed, n_folds))
        mus = {"zeroed": [], "raw": []}
        seconds = []
        for k in range(n_folds):
            inside, held = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
            tic = time.perf_counter()
            chain = _fold_chain(lambda: make(chain_seed(seed, 1000 * n_folds + k + 1)),
                                X[inside], classes[y_index[inside]])
            seconds.append(time.perf_counter() - tic)
            assert list(chain.classes_) == list(classes)
            U_in, U_held = chain._design(X[inside]), chain._design(X[held])
            mus["zeroed"].append(_crossfit.out_of_fold_mu(U_held, U_in, chain.eta_draws_, n_keep))
            if variants:
                draws = chain.eta_draws_[calibration.kept_draws(len(chain.eta_draws_), n_keep)]
                mus["raw"].append(np.concatenate(list(calibration._draw_chunks(U_held, draws))))
            del chain
            log(f"  K={n_folds} fold {k}: {len(inside)} rows, {seconds[-1]:.0f} s")
        maps = {"seconds": seconds, "fold_sizes": np.bincount(fold).tolist()}
        for name, blocks in mus.items():
            if blocks:
                pooled = _crossfit.pooled_draws(blocks, fold)
                maps[name] = calibration.select_stacking(pooled, y_index, n_classes)
                maps[name + "_mu_only"] = calibration.select_stacking(pooled, y_index, n_classes,
                                                                      maps=("mu",))
        out[n_folds] = maps
    return out


def _score_maps(fit, U_test, y_test, maps):
    from dolda.posterior import calibration

    row = {}
    for n_folds, entry in maps.items():
        for name in ("zeroed", "raw", "zeroed_mu_only"):
            if name in entry:
                proba = calibration.class_probabilities(U_test, fit.eta_draws_, "calibrated",
                                                        entry[name])
                label = f"crossfit_K{n_folds}" + ("" if name == "zeroed" else "_" + name)
                row[label] = _scores(proba, y_test)
                row[label]["calibration_map"] = calibration.stacking_map(entry[name])
        row[f"crossfit_K{n_folds}_fold_seconds"] = entry["seconds"]
        row[f"crossfit_K{n_folds}_fold_sizes"] = entry["fold_sizes"]
    return row


def _write(part, result):
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"calibration_crossfit_{part}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path


def _line(name, s):
    return (f"  {name:28s} acc={s['accuracy']:.3f} logloss={s['log_loss']:.4f} "
            f"ece={s['ece']:.4f} slope={s['slope']:.3f}")


def films(data_dir, iterations, folds_list, seed=0, threads=2):
    """Films genre, fold 0 of 5 (``experiments.calibration.films``' protocol)."""
    from dolda.posterior import calibration

    y, train_idx, test_idx, Xtr, Xte = films_split(data_dir, seed)  # puts ROOT on sys.path
    from benchmarks import films_genre
    result = {"experiment": "calibration_crossfit_films", "iterations": iterations,
              "seed": seed, "n_train": len(train_idx), "n_test": len(test_idx),
              "n_columns": int(Xtr.shape[1]), "partial": True}

    def make(random_state):
        from dolda import DOProbit

        return DOProbit(prior="horseshoe", n_iter=iterations, burn_in=iterations // 2,
                        random_state=random_state, prior_variance=100.0, n_jobs=threads)

    tic = time.perf_counter()
    fit = make(seed).fit(Xtr, y[train_idx])
    result["full_chain_seconds"] = time.perf_counter() - tic
    classes = fit.classes_
    y_te = np.searchsorted(classes, y[test_idx])
    y_tr = np.searchsorted(classes, y[train_idx])
    U_te = fit._design(Xte)
    for rule in ("calibrated", "ovr", "do"):
        fit.set_params(proba=rule)
        result[rule + ("_loo" if rule == "calibrated" else "")] = _scores(fit.predict_proba(Xte),
                                                                          y_te)
    fit.set_params(proba="calibrated")
    result["calibrated_loo"]["calibration_map"] = calibration.stacking_map(fit.stacking_)
    lr, _, _ = films_genre.fit_logistic(Xtr, y[train_idx], [1.0], seed)
    assert list(lr.classes_) == list(classes)
    result["logistic_regression"] = _scores(lr.predict_proba(Xte), y_te)
    for name in ("logistic_regression", "calibrated_loo", "ovr", "do"):
        print(_line(name, result[name]), flush=True)
    _write(f"films_{iterations}it", result)
    for n_folds in folds_list:
        maps = crossfit_maps(make, Xtr, y_tr, classes, [n_folds], seed,
                             log=lambda m: print(m, flush=True))
        result.update(_score_maps(fit, U_te, y_te, maps))
        for name, s in result.items():
            if name.startswith(f"crossfit_K{n_folds}") and isinstance(s, dict):
                print(_line(name, s), flush=True)
        _write(f"films_{iterations}it", result)
    result["partial"] = False
    return result


def films_estimator(data_dir, iterations, n_folds, seed=0, threads=2):
    """The same through the estimator: ``DOProbit(calibration_folds=n_folds)`` on films
    fold 0 (its own fold seeds and chain seeds), test scores of its calibrated map."""
    from dolda import DOProbit
    from dolda.posterior import calibration

    y, train_idx, test_idx, Xtr, Xte = films_split(data_dir, seed)
    tic = time.perf_counter()
    fit = DOProbit(prior="horseshoe", n_iter=iterations, burn_in=iterations // 2,
                   random_state=seed, prior_variance=100.0, n_jobs=threads,
                   calibration_folds=n_folds).fit(Xtr, y[train_idx])
    seconds = time.perf_counter() - tic
    y_te = np.searchsorted(fit.classes_, y[test_idx])
    label = f"estimator_calibration_folds_{n_folds}"
    result = {"experiment": "calibration_crossfit_films_estimator", "iterations": iterations,
              "seed": seed, "fit_seconds": seconds, "describe_proba":
              calibration.describe_proba(fit), label: _scores(fit.predict_proba(Xte), y_te)}
    result[label]["calibration_map"] = calibration.stacking_map(fit.stacking_)
    print(_line(label, result[label]), flush=True)
    return result


def simulated(seeds, folds_list, n_iter=600, burn_in=200):
    """The two simulated regimes where the leave-one-out map is already good."""
    from dolda import DOProbit
    from dolda.posterior import calibration

    rows = []
    for seed, (model_name, scale, n_train, prior) in [(s, r) for s in seeds for r in SIMULATED]:
        tr = _simulate.simulate_labelled(n_train, model=model_name, scale=scale, seed=seed)
        te = _simulate.simulate_labelled(5000, model=model_name, seed=100 + seed, coef=tr.coef)

        def make(random_state):
            return DOProbit(prior=prior, n_iter=n_iter, burn_in=burn_in,
                            random_state=random_state, n_jobs=1)

        fit = make(seed).fit(tr.X, tr.y)
        y_tr = np.searchsorted(fit.classes_, tr.y)
        row = {"label_model": model_name, "scale": scale, "n_train": n_train, "prior": prior,
               "seed": seed, "truth": _scores(te.proba, te.y),
               "logistic_regression": _scores(_logistic(tr.X, tr.y).predict_proba(te.X), te.y),
               "calibrated_loo": _scores(fit.predict_proba(te.X), te.y)}
        row["calibrated_loo"]["calibration_map"] = calibration.stacking_map(fit.stacking_)
        maps = crossfit_maps(make, tr.X, y_tr, fit.classes_, folds_list, seed,
                             log=lambda m: None, variants=False)
        row.update(_score_maps(fit, fit._design(te.X), te.y, maps))
        print(f"{model_name} x{scale}, {n_train}, {prior}, seed {seed}", flush=True)
        for name, s in row.items():
            if isinstance(s, dict) and "log_loss" in s:
                rel = 100 * (s["log_loss"] / row["truth"]["log_loss"] - 1)
                print(_line(name, s) + f" vs truth {rel:+.1f}%", flush=True)
        rows.append(row)
        _write("simulated", {"experiment": "calibration_crossfit_simulated", "partial": True,
                             "n_iter": n_iter, "burn_in": burn_in, "rows": rows})
    return {"experiment": "calibration_crossfit_simulated", "n_iter": n_iter, "burn_in": burn_in,
            "n_test": 5000, "rows": rows}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("films", "films-estimator", "simulated"))
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--n-iter", type=int, default=600, help="simulated: iterations")
    parser.add_argument("--folds", type=int, nargs="+", default=[5, 3])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    if args.part == "films-estimator":
        result = films_estimator(args.data_dir, args.iterations, args.folds[0],
                                 threads=args.threads)
        print(_write(f"films_{args.iterations}it_estimator_K{args.folds[0]}", result))
        return
    if args.part == "films":
        result = films(args.data_dir, args.iterations, args.folds, threads=args.threads)
    else:
        result = simulated(tuple(args.seeds), args.folds, args.n_iter, args.n_iter // 3)
    print(_write("simulated" if args.part == "simulated" else
                 f"films_{args.iterations}it", result))


if __name__ == "__main__":
    main()
