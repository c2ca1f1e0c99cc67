"""Calibration judged against peers on the same split (issue 48).

On every corpus of ``../shared/data`` with its natural split, one run fits DOLDA at its
defaults (K = 20, two seeds, ``n_jobs=1``) and, on the same rows, multinomial logistic
regression (tf-idf, C = 10) and LinearSVC + Platt scaling (``CalibratedClassifierCV(method=
"sigmoid", cv=5)``), and scores every model's test probabilities: ECE over 15 equal-width
bins, ECE over 15 equal-mass bins with a bootstrap 90% interval, log loss, Brier score and
accuracy.  For DOLDA it scores today's map (``calibration_holdout=None``) and the
drift-aware candidates computed from the *same* chain (:mod:`dolda.posterior.drift`: a
temperature, or a temperature plus per-class biases, fitted on the leave-one-out scores of
the latest training rows on top of today's map; and, as a control, the same fitted on every
row), so that only the calibration differs.  ``calibration_holdout="time"`` is the second
of them (``bcts_latest``)::

    python -m experiments.calibration_peers run [--corpus jira_storm ...] [--seeds 1 2]
    python -m experiments.calibration_peers table     # experiments/results/calibration_peers.md
    python -m experiments.calibration_peers run --quick   # seconds; tests/test_calibration_peers.py

Corpora and splits: ``newsgroups5`` (five groups of 20 Newsgroups, stripped, the first 240
training messages of each, bydate test split: :mod:`experiments.interpret`'s corpus),
``films_plots`` (the 118 IMDb films with a plot, year and company covariates, genres under 5
films pooled: :mod:`experiments.films`; 5-fold stratified cross-validation, seed 0, the
out-of-fold probabilities pooled), ``jira_<project>`` (six Apache JIRA trackers, summary +
description -> component, chronological split: :mod:`experiments.accuracy`; the training
rows are in filing order).  Results: ``experiments/results/calibration_peers.json``
(``calibration_peers_quick.json`` with ``--quick``), one entry per corpus, rewritten as
corpora finish.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
DATA = ROOT.parent / "shared" / "data"
JIRA = tuple(f"jira_{p}" for p in ("storm", "yarn", "mapreduce", "activemq", "hdfs", "hadoop"))
CORPORA = ("newsgroups5", "films_plots") + JIRA
#: DOLDA's calibrations scored, all from one chain: today's map, and the candidates.
VARIANTS = ("today", "temperature_latest", "bcts_latest", "temperature_latest10",
            "bcts_latest10", "temperature_all", "bcts_all")
EXCHANGEABLE = ("newsgroups5", "films_plots")


# ------------------------------------------------------------------ data
def load(corpus, quick=False, data=DATA):
    """``[(train_texts, y_train, test_texts, y_test, X_train, X_test), ...]``: one split, or
    the 5 folds of ``films_plots``."""
    if corpus == "newsgroups5":
        from experiments.interpret import load_stability_corpus

        tr, ytr, te, yte = load_stability_corpus("newsgroups5", data)
        if quick:
            tr, ytr = tr[::6], ytr[::6]
            te, yte = te[::12], yte[::12]
        return [(tr, ytr, te, yte, None, None)]
    if corpus == "films_plots":
        from sklearn.model_selection import StratifiedKFold

        from experiments.films import load_plots

        films = load_plots(str(data))
        y = films["label"].to_numpy()
        cov = films[["year", "company"]].reset_index(drop=True)
        out = []
        folds = StratifiedKFold(5, shuffle=True, random_state=0).split(films, y)
        for tr, te in folds:
            out.append(([films.text.iloc[i] for i in tr], y[tr],
                        [films.text.iloc[i] for i in te], y[te],
                        cov.iloc[tr].reset_index(drop=True), cov.iloc[te].reset_index(drop=True)))
        return out[:1] if quick else out
    from experiments.accuracy import load_corpus

    tr, ytr, te, yte, _, _ = load_corpus(data, corpus, quick)
    return [(tr, ytr, te, yte, None, None)]


# ------------------------------------------------------------------ scores
def scores(proba, y):
    """Every figure of one model's test probabilities ``proba`` (D, L) and class columns
    ``y``."""
    from dolda.posterior import reliability as r

    ece_m, low, high = r.ece_interval(proba, y, n_bins=15, n_boot=200, level=0.9, seed=0)
    curve = r.reliability_curve(proba, y, 15)
    return {"ece": r.expected_calibration_error(proba, y, 15), "ece_mass": ece_m,
            "ece_mass_low": low, "ece_mass_high": high, "log_loss": r.log_loss(proba, y),
            "brier": r.brier_score(proba, y),
            "accuracy": float(np.mean(np.argmax(proba, axis=1) == y)),
            "curve": {"confidence": curve.confidence.tolist(),
                      "accuracy": curve.accuracy.tolist(), "count": curve.count.tolist()}}


def _columns(y, classes):
    """Class columns of labels ``y`` in ``classes`` (-1: not a class)."""
    lookup = {c: i for i, c in enumerate(classes)}
    return np.array([lookup.get(v, -1) for v in y])


def _full(proba, classes, all_classes):
    """``proba`` (D, len(classes)) spread onto the columns of ``all_classes`` (0 elsewhere)."""
    out = np.zeros((len(proba), len(all_classes)))
    out[:, _columns(classes, all_classes)] = proba
    return out


# ------------------------------------------------------------------ peers
def peers(tr, ytr, te, Xtr=None, Xte=None, seed=1):
    """``{name: (classes, test probabilities)}`` of the two peers on DOLDA's vocabulary."""
    import scipy.sparse as sp
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.linear_model import LogisticRegression
    from sklearn.svm import LinearSVC

    from dolda.design.corpus import Vocabulary
    from experiments.accuracy import _tfidf

    A, B = _tfidf(Vocabulary().fit(tr), tr, te)
    if Xtr is not None:
        from dolda.design.covariates import CovariateEncoder

        enc = CovariateEncoder(standardize=True)
        ca, cb = enc.fit_transform(Xtr), enc.transform(Xte)
        A = sp.hstack([A, sp.csr_matrix(ca)]).tocsr()
        B = sp.hstack([B, sp.csr_matrix(cb)]).tocsr()
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegression(C=10.0, max_iter=3000).fit(A, ytr)
        out["logreg"] = (lr.classes_, lr.predict_proba(B))
        n_min = int(np.min(np.unique(ytr, return_counts=True)[1]))
        svc = CalibratedClassifierCV(LinearSVC(C=1.0, random_state=seed), method="sigmoid",
                                     cv=min(5, max(2, n_min))).fit(A, ytr)
        out["svc_platt"] = (svc.classes_, svc.predict_proba(B))
    return out


# ------------------------------------------------------------------ DOLDA
@contextmanager
def _captured_loo():
    """The leave-one-out draws and labels the fit's calibration map is fitted on (the map's
    own inputs, so that the candidates below are fitted on exactly what the fit saw)."""
    from dolda.posterior import calibration

    seen = {}
    original = calibration.select_stacking

    def capture(loo, y, n_classes, *args, **kwargs):
        seen.update(loo=loo, y=np.asarray(y))
        return original(loo, y, n_classes, *args, **kwargs)

    calibration.select_stacking = capture
    try:
        yield seen
    finally:
        calibration.select_stacking = original


def dolda_variants(tr, ytr, te, Xtr=None, Xte=None, seed=1, quick=False):
    """``(classes, {variant: test probabilities}, info)`` of one DOLDA fit at the defaults:
    today's map and the candidates of :mod:`dolda.posterior.drift` on the same chain."""
    from dolda import DOLDA
    from dolda.posterior import calibration, drift

    params = dict(n_topics=20, random_state=seed, n_jobs=1, progress=False)
    if quick:
        params.update(n_topics=5, n_iter=40)
    model = DOLDA(**params)
    tic = time.perf_counter()
    with _captured_loo() as seen, warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model.fit(tr, ytr, covariates=Xtr)
    fit_s = time.perf_counter() - tic
    today = np.asarray(model.stacking_)
    maps, info = {"today": today}, {"fit_seconds": fit_s, "n_iter": model.n_iter}
    for name, share, biases in (("temperature_latest", drift.DRIFT_SHARE, False),
                                ("bcts_latest", drift.DRIFT_SHARE, True),
                                ("temperature_latest10", 0.1, False),
                                ("bcts_latest10", 0.1, True),
                                ("temperature_all", 1.0, False), ("bcts_all", 1.0, True)):
        t0 = time.perf_counter()
        maps[name], t, c = drift.drift_map(today, seen["loo"], seen["y"], share, biases)
        info[name] = {"temperature": t, "bias_abs_max": float(np.max(np.abs(c))),
                      "seconds": time.perf_counter() - t0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        U = model._regressors(te, Xte)
    probs = {name: calibration.class_probabilities(U, model.eta_draws_, "calibrated", m)
             for name, m in maps.items()}
    return model.classes_, probs, info


# ------------------------------------------------------------------ one corpus
def run_corpus(corpus, seeds=(1, 2), quick=False, data=DATA):
    """Every model's scores on ``corpus`` (a dict; out-of-fold probabilities pooled)."""
    splits = load(corpus, quick, data)
    all_classes = np.unique(np.concatenate([np.concatenate([s[1], s[3]]) for s in splits]))
    y_all = np.concatenate([_columns(s[3], all_classes) for s in splits])
    pooled, infos = {}, {}
    for tr, ytr, te, yte, Xtr, Xte in splits:
        for name, (cls, p) in peers(tr, ytr, te, Xtr, Xte).items():
            pooled.setdefault(name, []).append(_full(p, cls, all_classes))
        for seed in seeds:
            cls, probs, info = dolda_variants(tr, ytr, te, Xtr, Xte, seed, quick)
            infos.setdefault(f"seed{seed}", []).append(info)
            for name, p in probs.items():
                pooled.setdefault(f"dolda_{name}_seed{seed}", []).append(
                    _full(p, cls, all_classes))
    models = {name: scores(np.vstack(parts), y_all) for name, parts in pooled.items()}
    return {"corpus": corpus, "n_train": int(sum(len(s[1]) for s in splits)) // len(splits),
            "n_test": int(len(y_all)), "n_classes": int(len(np.unique(splits[0][1]))),
            "splits": len(splits), "exchangeable": corpus in EXCHANGEABLE,
            "seeds": list(seeds), "quick": quick, "models": models, "dolda": infos}


def result_path(quick=False):
    return RESULTS / ("calibration_peers_quick.json" if quick else "calibration_peers.json")


def run(corpora=CORPORA, seeds=(1, 2), quick=False, data=DATA):
    """Run ``corpora`` one after another, each written into the results file as it ends."""
    path = result_path(quick)
    done = json.loads(path.read_text()) if path.exists() else {}
    for corpus in corpora:
        tic = time.perf_counter()
        done[corpus] = run_corpus(corpus, seeds, quick, data)
        done[corpus]["seconds"] = time.perf_counter() - tic
        RESULTS.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(done, indent=1) + "\n")
        print(f"{corpus}: {done[corpus]['seconds']:.0f} s", flush=True)
        for line in table_lines({corpus: done[corpus]})[4:]:
            print(line, flush=True)
    return done, path


# ------------------------------------------------------------------ tables
NAMES = {"today": "DOLDA, today's map", "temperature_latest": "DOLDA, temperature (latest 20%)",
         "bcts_latest": "DOLDA, `calibration_holdout=\"time\"` (BCTS, latest 20%)",
         "temperature_latest10": "DOLDA, temperature (latest 10%)",
         "bcts_latest10": "DOLDA, BCTS (latest 10%)",
         "temperature_all": "DOLDA, temperature (all rows)", "bcts_all": "DOLDA, BCTS (all rows)",
         "logreg": "logistic regression (tf-idf, C = 10)",
         "svc_platt": "LinearSVC + Platt (sigmoid, 5-fold)"}


def _row(label, s):
    return (f"| {label} | {s['ece']:.3f} | {s['ece_mass']:.3f} [{s['ece_mass_low']:.3f}, "
            f"{s['ece_mass_high']:.3f}] | {s['log_loss']:.3f} | {s['brier']:.3f} | "
            f"{s['accuracy']:.3f} |")


def _seed_mean(models, variant, key):
    vals = [s[key] for name, s in models.items() if name.startswith(f"dolda_{variant}_seed")]
    return float(np.mean(vals)) if vals else float("nan")


def table_lines(results, variants=("today", "bcts_latest")):
    """The measured table (markdown lines): per corpus, DOLDA's variants (each seed) and the
    two peers."""
    head = ["| corpus (split, rows train / test, classes) | model | ECE (15 equal-width) | "
            "ECE equal-mass [90% bootstrap] | log loss | Brier | accuracy |",
            "|---|---|---|---|---|---|---|"]
    body = []
    for corpus, r in results.items():
        split = "5-fold CV" if r["splits"] > 1 else (
            "chronological" if corpus.startswith("jira") else "bydate")
        first = f"{corpus} ({split}, {r['n_train']} / {r['n_test']}, {r['n_classes']})"
        m = r["models"]
        for v in variants:
            for seed in r["seeds"]:
                body.append(_row(f"{first} | {NAMES[v]}, seed {seed}",
                                 m[f"dolda_{v}_seed{seed}"]))
                first = ""
        for peer in ("logreg", "svc_platt"):
            body.append(_row(f" | {NAMES[peer]}", m[peer]))
    return head + body


def target_lines(results, variant="bcts_latest"):
    """The issue's targets per corpus (means of the seeds): the calibration a user should pass
    (``variant`` on the chronological splits; today's map on the exchangeable ones, whose rows
    are not in time order: ``newsgroups5``'s are sorted by class) against the better peer's ECE
    + 0.01 (and 0.03 on exchangeable splits), with log loss and accuracy against today's."""
    out = ["| corpus | better peer ECE | today ECE | used | its ECE | target | missed by | "
           "log loss today / used | accuracy today / used |", "|---|---|---|---|---|---|---|---|---|"]
    for corpus, r in results.items():
        m = r["models"]
        peer = min(m["logreg"]["ece"], m["svc_platt"]["ece"])
        target = peer + 0.01
        used = "today" if r["exchangeable"] else variant
        if r["exchangeable"]:
            target = min(target, 0.03)
        today, new = _seed_mean(m, "today", "ece"), _seed_mean(m, used, "ece")
        miss = new - target
        out.append(f"| {corpus} | {peer:.3f} | {today:.3f} | "
                   f"{'default' if used == 'today' else 'time'} | {new:.3f} | {target:.3f} | "
                   f"{'met' if miss <= 0 else f'{miss:+.3f}'} | "
                   f"{_seed_mean(m, 'today', 'log_loss'):.3f} / "
                   f"{_seed_mean(m, used, 'log_loss'):.3f} | "
                   f"{_seed_mean(m, 'today', 'accuracy'):.3f} / "
                   f"{_seed_mean(m, used, 'accuracy'):.3f} |")
    return out


def candidates_lines(results):
    """Every DOLDA candidate, seed means: ECE / log loss."""
    out = ["| corpus | " + " | ".join(NAMES[v] for v in VARIANTS) + " |",
           "|---" * (len(VARIANTS) + 1) + "|"]
    for corpus, r in results.items():
        m = r["models"]
        cells = [f"{_seed_mean(m, v, 'ece'):.3f} / {_seed_mean(m, v, 'log_loss'):.3f}"
                 for v in VARIANTS]
        out.append(f"| {corpus} | " + " | ".join(cells) + " |")
    return out


def write_table(quick=False):
    results = json.loads(result_path(quick).read_text())
    lines = ["# Calibration against peers on the same split (issue 48)", "",
             "`python -m experiments.calibration_peers run` (then `table`); DOLDA at its "
             "defaults (K = 20, 500 iterations, `n_jobs=1`), seeds 1 and 2; the drift-aware "
             "map is `calibration_holdout=\"time\"` computed on the same chain as today's.", "",
             "## Targets", "", *target_lines(results), "",
             "## Every figure", "", *table_lines(results), "",
             "## Candidates (ECE / log loss, mean of the seeds)", "",
             *candidates_lines(results), ""]
    out = result_path(quick).with_suffix(".md")
    out.write_text("\n".join(lines))
    return out


def main(argv=None):
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run")
    p.add_argument("--corpus", nargs="+", choices=CORPORA, default=list(CORPORA))
    p.add_argument("--seeds", nargs="+", type=int, default=[1, 2])
    p.add_argument("--data", default=str(DATA))
    p.add_argument("--quick", action="store_true")
    t = sub.add_parser("table")
    t.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        if args.command == "run":
            corpora = (["jira_storm"] if args.corpus == list(CORPORA) else args.corpus) \
                if args.quick else args.corpus
            _, path = run(corpora, tuple(args.seeds[:1] if args.quick else args.seeds),
                          args.quick, Path(args.data))
            print(path)
        print(write_table(args.quick))


if __name__ == "__main__":
    main()
