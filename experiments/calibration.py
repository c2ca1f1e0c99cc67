"""Calibration of ``predict_proba``: which prediction rule to trust (issue 14).

Three rules turn DOProbit's / DOLDA's one-vs-rest linear predictors into class
probabilities (``docs/CALIBRATION.md``): ``calibrated`` (the default: a
multinomial-logit map fitted on leave-one-out training predictors), ``ovr``
(normalised one-vs-rest probabilities) and ``do`` (the paper's DO formula).
Each is scored beside the truth (simulated data) and multinomial logistic
regression on the same features: accuracy, log loss, top-label ECE (15 bins)
and the logit calibration slope.  ::

    python -m experiments.calibration simulated     # DOProbit, 8 Gaussian covariates
    python -m experiments.calibration simulated --likelihood do --out simulated_do
    python -m experiments.calibration corpus        # DOLDA on a simulated corpus
    python -m experiments.calibration newsgroups    # DOLDA on 20 Newsgroups (K=20)
    python -m experiments.calibration newsgroups_probit  # DOProbit, both likelihoods, LDA topics
    python -m experiments.calibration films         # DOProbit, films genre from metadata
    python -m experiments.calibration figures       # docs/calibration_reliability.png
    python -m experiments.calibration table         # the table of docs/CALIBRATION.md

Results: ``experiments/results/calibration_<part>.json``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
from dolda import Prior, Text, Words

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
DOCS = ROOT / "docs"
RULES = ("calibrated", "ovr", "do")

# (label model, coefficient scale, training rows, prior): the regime is
# ("logit", 1.0, 3000, "normal"); the others vary the label model and the signal.
REGIMES = (
    ("logit", 1.0, 3000, "normal"),
    ("logit", 0.5, 3000, "normal"),
    ("logit", 1.0, 1000, "horseshoe"),
    ("do", 0.7, 3000, "normal"),
    ("do", 1.5, 3000, "normal"),
    ("ovr", 0.5, 3000, "normal"),
)


def _scores(proba, y):
    from dolda.posterior import calibration

    out = calibration.calibration_summary(proba, y)
    curve = calibration.reliability_curve(proba, y)
    out["curve"] = {"confidence": curve.confidence.tolist(), "accuracy": curve.accuracy.tolist(),
                    "count": curve.count.tolist()}
    return out


def _logistic(A, y):
    from sklearn.linear_model import LogisticRegressionCV

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return LogisticRegressionCV(Cs=[0.01, 0.1, 1.0, 10.0, 100.0], cv=3,
                                    max_iter=3000).fit(A, y)


def _map_of(fit):
    """Which calibration map the fit chose (``dolda.posterior.calibration.STACKING_MAPS``)."""
    from dolda.posterior import calibration

    return calibration.stacking_map(fit.stacking_)


def _map_on_mu_alone(fit, U_train, y_train, prior_sd, predict):
    """Test probabilities of the calibrated rule with the map restricted to ``mu`` (the map
    before ``fit`` chose between two), fitted the way ``fit`` fits its map."""
    from dolda.posterior.scores import fit_proba_stacking

    y_index = np.searchsorted(fit.classes_, y_train)
    chosen = fit.stacking_
    fit.stacking_ = fit_proba_stacking(U_train, fit.eta_draws_, y_index, len(fit.classes_),
                                       prior_sd, maps=("mu",))
    try:
        return predict()
    finally:
        fit.stacking_ = chosen


def _rules(model, predict):
    out = {}
    for rule in RULES:
        model.set_params(proba=rule)
        tic = time.perf_counter()
        out[rule] = predict()
        out[rule + "_seconds"] = time.perf_counter() - tic
    model.set_params(proba="calibrated")
    return out


def simulated(seeds=(1, 2), regimes=REGIMES, part="simulated", likelihood="ovr",
              n_test=5000, n_iter=600, burn_in=200):
    """DOProbit on 8 Gaussian covariates, 5 classes, scored on ``n_test`` fresh rows.

    ``likelihood="do"`` fits ``DOProbit(likelihood="do")`` (the DO likelihood itself)."""
    from dolda import DOProbit
    from dolda.datasets import simulate_labels

    rows = []
    for seed, (model_name, scale, n_train, prior) in [(s, r) for s in seeds for r in regimes]:
        tr = simulate_labels(n_train, model=model_name, scale=scale, random_state=seed)
        te = simulate_labels(n_test, model=model_name, random_state=100 + seed, coef=tr.coef)
        tic = time.perf_counter()
        fit = DOProbit(prior=prior, n_iter=n_iter, burn_in=burn_in, random_state=seed,
                       n_jobs=1, likelihood=likelihood).fit(tr.X, tr.y)
        fit_s = time.perf_counter() - tic
        probas = _rules(fit, lambda: fit.predict_proba(te.X))
        lr = _logistic(tr.X, tr.y)
        row = {"label_model": model_name, "scale": scale, "n_train": n_train,
               "prior": prior, "seed": seed, "fit_seconds": fit_s,
               "likelihood": likelihood, "calibration_map": _map_of(fit),
               "truth": _scores(te.proba, te.y),
               "logistic_regression": _scores(lr.predict_proba(te.X), te.y)}
        for rule in RULES:
            row[rule] = _scores(probas[rule], te.y)
        rows.append(row)
        print(_line(row), flush=True)
        _write(part, {"experiment": "calibration_simulated", "partial": True,
                      "rows": rows})
    return {"experiment": "calibration_simulated", "n_test": n_test, "n_features": 8,
            "n_classes": 5, "n_iter": n_iter, "burn_in": burn_in, "likelihood": likelihood,
            "rows": rows}


def corpus(seeds=(1, 2)):
    """DOLDA on corpora from its generative model: 3000 documents, 1000 to train."""
    from dolda import DOLDA
    from dolda.datasets import simulate

    rows = []
    for seed in seeds:
        sim = simulate(3000, n_topics=4, n_classes=3, vocab_size=200, doc_length=60,
                       effect=4.0, random_state=seed)
        texts = np.asarray(sim.texts, dtype=object)
        y = np.searchsorted(sim.classes, sim.y)  # int labels, the order of proba's columns
        tr, te = slice(0, 1000), slice(1000, 3000)
        tic = time.perf_counter()
        fit = DOLDA(n_topics=4, alpha=0.3, beta=0.05, n_iter=300, random_state=seed, progress=False, prior=Prior(kind="normal"), text=Text(rare_share=0.0), words=Words(n=0))
        fit.fit(texts[tr], y[tr])
        fit_s = time.perf_counter() - tic
        probas = _rules(fit, lambda: fit.predict_proba(texts[te]))
        A, B = fit.transform(texts[tr]), fit.transform(texts[te])
        lr = _logistic(A, y[tr])
        row = {"label_model": "do", "seed": seed, "fit_seconds": fit_s,
               "calibration_map": _map_of(fit),
               "truth": _scores(sim.proba[te], y[te]),
               "logistic_regression": _scores(lr.predict_proba(B), y[te])}
        for rule in RULES:
            row[rule] = _scores(probas[rule], y[te])
        rows.append(row)
        print(_line(row), flush=True)
    return {"experiment": "calibration_corpus", "n_docs": 3000, "n_train": 1000,
            "n_topics": 4, "n_classes": 3, "n_iter": 300, "rows": rows}


def newsgroups(data_dir, topics=20, iterations=200, seed=1):
    """DOLDA (Horseshoe) on 20 Newsgroups, stripped setting; LR on the same topic proportions."""
    from dolda import DOLDA
    from experiments.newsgroups import load_setting

    tr_texts, ytr, te_texts, yte, _, _ = load_setting(data_dir, "stripped", False)
    tic = time.perf_counter()
    fit = DOLDA(n_topics=topics, n_iter=iterations, random_state=seed, progress=False, words=Words(n=0))
    fit.fit(tr_texts, ytr)
    fit_s = time.perf_counter() - tic
    classes = list(fit.classes_)
    y_te = np.array([classes.index(v) for v in yte])
    y_tr = np.array([classes.index(v) for v in ytr])
    probas = _rules(fit, lambda: fit.predict_proba(te_texts))
    A, B = fit.transform(tr_texts), fit.transform(te_texts)
    lr = _logistic(A, y_tr)
    row = {"topics": topics, "iterations": iterations, "seed": seed, "fit_seconds": fit_s,
           "calibration_map": _map_of(fit),
           "logistic_regression": _scores(lr.predict_proba(B), y_te),
           "logistic_regression_C": float(np.atleast_1d(lr.C_)[0])}
    for rule in RULES:
        row[rule] = _scores(probas[rule], y_te)
        row[rule + "_seconds"] = probas[rule + "_seconds"]
    if _map_of(fit) != "mu":
        from dolda.posterior.scores import coefficient_prior_sd

        prior_sd = coefficient_prior_sd(fit.tau_draws_, fit.lambda_draws_, fit.prior_variance)
        row["calibrated_map_on_mu"] = _scores(_map_on_mu_alone(
            fit, fit._regressors(tr_texts), ytr, prior_sd,
            lambda: fit.predict_proba(te_texts)), y_te)
    print(_line(row), flush=True)
    return {"experiment": "calibration_newsgroups", "setting": "stripped",
            "n_train": len(tr_texts), "n_test": len(te_texts), "rows": [row]}


def newsgroups_probit(data_dir, topics=20, iterations=200, seed=1):
    """DOProbit (normal prior) on 20 Newsgroups topic proportions, both likelihoods.

    The features are the topic proportions of an unsupervised ``dolda.LDA`` fitted on the
    training split (``transform`` for both splits); DOProbit with ``likelihood="ovr"``
    and ``"do"`` (20 classes x 21 columns = 420 coefficients), beside multinomial LR on
    the same features.  Does the DO likelihood help on real labels?
    """
    from dolda import LDA, DOProbit
    from experiments.newsgroups import load_setting

    tr_texts, ytr, te_texts, yte, _, _ = load_setting(data_dir, "stripped", False)
    lda = LDA(n_topics=topics, n_iter=iterations, random_state=seed).fit(tr_texts)
    A, B = lda.transform(tr_texts), lda.transform(te_texts)
    classes = sorted(set(ytr))
    y_tr = np.array([classes.index(v) for v in ytr])
    y_te = np.array([classes.index(v) for v in yte])
    lr = _logistic(A, y_tr)
    row = {"topics": topics, "iterations": iterations, "seed": seed,
           "logistic_regression": _scores(lr.predict_proba(B), y_te)}
    for likelihood in ("ovr", "do"):
        tic = time.perf_counter()
        fit = DOProbit(prior="normal", n_iter=600, burn_in=200, random_state=seed,
                       likelihood=likelihood).fit(A, y_tr)
        row[f"fit_seconds_{likelihood}"] = time.perf_counter() - tic
        row[f"calibration_map_{likelihood}"] = _map_of(fit)
        row[f"calibrated_{likelihood}"] = _scores(fit.predict_proba(B), y_te)
        fit.set_params(proba="do")
        row[f"do_{likelihood}"] = _scores(fit.predict_proba(B), y_te)
    for name in ("logistic_regression", "calibrated_ovr", "do_ovr", "calibrated_do", "do_do"):
        sc = row[name]
        print(f"  {name:20s} acc={sc['accuracy']:.3f} logloss={sc['log_loss']:.4f} "
              f"ece={sc['ece']:.4f} slope={sc['slope']:.3f}", flush=True)
    return {"experiment": "calibration_newsgroups_probit", "setting": "stripped",
            "n_train": len(tr_texts), "n_test": len(te_texts), "rows": [row]}


def films_split(data_dir, seed=0):
    """The films' genre labels, fold ``seed``'s first stratified 80/20 split of 5 and the
    encoded metadata columns of its two parts (``experiments/films_genre.py``'s loader and
    encoder): ``(y, train_idx, test_idx, X_train, X_test)``."""
    from sklearn.model_selection import StratifiedKFold

    from experiments import films_genre

    data = films_genre.load(data_dir)
    y = data["Genre"].astype(str).to_numpy()
    train_idx, test_idx = next(StratifiedKFold(5, shuffle=True, random_state=seed)
                               .split(np.zeros(len(y)), y))
    _, Xtr, Xte, _ = films_genre.encode(data.iloc[train_idx], data.iloc[test_idx])
    return y, train_idx, test_idx, Xtr, Xte


def films(data_dir, iterations=200, seed=0):
    """DOProbit (Horseshoe) on the films' ~25,000 metadata columns: genre, one 80/20 split.

    The protocol of ``experiments/films_genre.py`` (same loader and encoder, the
    first of its stratified folds); multinomial logistic regression (L2, C = 1,
    as there) on the same sparse columns.
    """
    from experiments import films_genre

    y, train_idx, test_idx, Xtr, Xte = films_split(data_dir, seed)
    fit, fit_s = films_genre.fit_doprobit("horseshoe", Xtr, y[train_idx], iterations, seed, 2,
                                          1.0)
    probas = _rules(fit, lambda: fit.predict_proba(Xte))
    lr, _, _ = films_genre.fit_logistic(Xtr, y[train_idx], [1.0], seed)
    classes = list(fit.classes_)
    assert classes == list(lr.classes_)
    y_te = np.array([classes.index(v) for v in y[test_idx]])
    row = {"iterations": iterations, "seed": seed, "fit_seconds": fit_s,
           "calibration_map": _map_of(fit),
           "n_columns": int(Xtr.shape[1]),
           "logistic_regression": _scores(lr.predict_proba(Xte), y_te)}
    for rule in RULES:
        row[rule] = _scores(probas[rule], y_te)
        row[rule + "_seconds"] = probas[rule + "_seconds"]
    if _map_of(fit) != "mu":
        row["calibrated_map_on_mu"] = _scores(_map_on_mu_alone(
            fit, fit._design(Xtr), y[train_idx], fit._prior_sd(fit.prior_variance),
            lambda: fit.predict_proba(Xte)), y_te)
    print(_line(row), flush=True)
    return {"experiment": "calibration_films", "n_train": len(train_idx),
            "n_test": len(test_idx), "n_classes": len(classes), "rows": [row]}


def _write(part, result):
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"calibration_{part}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    return path


def _line(row):
    head = ", ".join(f"{k}={row[k]}" for k in ("label_model", "scale", "n_train", "prior",
                                                "topics", "seed") if k in row)
    parts = [head]
    for name in ("truth", "logistic_regression") + RULES + ("calibrated_map_on_mu",):
        if name in row:
            s = row[name]
            parts.append(f"  {name:20s} acc={s['accuracy']:.3f} logloss={s['log_loss']:.4f} "
                         f"ece={s['ece']:.4f} slope={s['slope']:.3f}")
    return "\n".join(parts)


def figures():
    """Reliability curves of the first seed of every run, one panel each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dolda.posterior.calibration import Reliability, plot_reliability

    panels = []
    for part in ("simulated", "corpus", "newsgroups", "films"):
        path = RESULTS / f"calibration_{part}.json"
        if not path.is_file():
            continue
        seen = set()
        for row in json.loads(path.read_text())["rows"]:
            key = (part, row.get("label_model"), row.get("scale"), row.get("n_train"),
                   row.get("prior"))
            if key in seen:
                continue
            seen.add(key)
            title = {"simulated": f"{row.get('label_model')} labels, scale {row.get('scale')}, "
                                  f"{row.get('n_train')} rows, {row.get('prior')}",
                     "corpus": "DOLDA, simulated corpus (DO labels)",
                     "newsgroups": f"DOLDA K={row.get('topics')}, 20 Newsgroups test",
                     "films": "DOProbit, films genre (metadata), test fold"}[part]
            panels.append((title, row))
    n = len(panels)
    cols = min(4, n)
    rows_n = int(np.ceil(n / cols))
    fig, axes = plt.subplots(rows_n, cols, figsize=(3.6 * cols, 3.6 * rows_n), squeeze=False)
    for ax, (title, row) in zip(axes.ravel(), panels):
        curves = {}
        for name in ("truth", "logistic_regression") + RULES + ("calibrated_map_on_mu",):
            if name in row:
                c = row[name]["curve"]
                label = {"logistic_regression": "multinomial LR"}.get(name, name)
                curves[f"{label} (ECE {row[name]['ece']:.3f})"] = Reliability(
                    np.array(c["confidence"]), np.array(c["accuracy"]), np.array(c["count"]),
                    np.linspace(0, 1, 16))
        plot_reliability(curves, ax=ax)
        ax.set_title(title, fontsize=8)
        ax.legend(fontsize=6, loc="upper left")
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    fig.tight_layout()
    DOCS.mkdir(exist_ok=True)
    out = DOCS / "calibration_reliability.png"
    fig.savefig(out, dpi=110)
    return out


def table():
    """Markdown table of every run: log loss relative to the truth (or LR), slope, ECE."""
    lines = ["| data | rule | accuracy | log loss | vs truth | ECE | slope |",
             "|---|---|---|---|---|---|---|"]
    for part in ("simulated", "corpus", "newsgroups", "films"):
        path = RESULTS / f"calibration_{part}.json"
        if not path.is_file():
            continue
        for row in json.loads(path.read_text())["rows"]:
            name = {"simulated": f"{row.get('label_model')} x{row.get('scale')}, "
                                 f"{row.get('n_train')} rows, {row.get('prior')}, "
                                 f"seed {row.get('seed')}",
                    "corpus": f"DOLDA corpus, seed {row.get('seed')}",
                    "newsgroups": f"20NG test, K={row.get('topics')}",
                    "films": "films genre (metadata), test fold"}[part]
            ref = row.get("truth")
            for rule in ("truth", "logistic_regression") + RULES:
                if rule not in row:
                    continue
                s = row[rule]
                rel = (f"{100 * (s['log_loss'] / ref['log_loss'] - 1):+.1f}%"
                       if ref is not None else "")
                label = {"logistic_regression": "multinomial LR"}.get(rule, rule)
                lines.append(f"| {name} | {label} | {s['accuracy']:.3f} | {s['log_loss']:.4f} "
                             f"| {rel} | {s['ece']:.4f} | {s['slope']:.3f} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=("simulated", "corpus", "newsgroups",
                                           "newsgroups_probit", "films", "figures", "table"))
    parser.add_argument("--data-dir", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--regimes", type=int, nargs="+", default=None,
                        help="simulated: indices into REGIMES (default: all)")
    parser.add_argument("--likelihood", choices=("ovr", "do"), default="ovr",
                        help="simulated: DOProbit's likelihood")
    parser.add_argument("--out", default=None,
                        help="results name: calibration_<out>.json (default: the part's name)")
    parser.add_argument("--quick", action="store_true",
                        help="simulated only: one small regime, few iterations, written to "
                             "calibration_simulated_quick.json")
    args = parser.parse_args(argv)
    if args.quick:
        if args.part != "simulated":
            parser.error("--quick runs the simulated part only")
        result = simulated((1,), (("logit", 1.0, 300, "normal"),), "simulated_quick",
                           args.likelihood, n_test=500, n_iter=60, burn_in=20)
        result["quick"] = True
        print(_write("simulated_quick", result))
        return result
    if args.part == "figures":
        print(figures())
        return
    if args.part == "table":
        print(table())
        return
    if args.part == "simulated":
        regimes = REGIMES if args.regimes is None else tuple(REGIMES[i] for i in args.regimes)
        result = simulated(tuple(args.seeds), regimes, args.out or "simulated", args.likelihood)
    elif args.part == "corpus":
        result = corpus(tuple(args.seeds))
    elif args.part == "films":
        result = films(args.data_dir, args.iterations)
    elif args.part == "newsgroups_probit":
        result = newsgroups_probit(args.data_dir, args.topics, args.iterations)
    else:
        result = newsgroups(args.data_dir, args.topics, args.iterations)
    print(_write(args.out or args.part, result))


if __name__ == "__main__":
    main()
