"""IMDb films of the DOLDA paper: genre from metadata, and DOLDA on the 118 plots.

(a) Genre from the metadata covariates alone (about 25,000 one-hot columns),
    DOProbit with the Horseshoe and the normal prior beside multinomial logistic
    regression, 5-fold cross-validation.  The protocol and code are those of
    ``experiments/films_genre.py`` (built with the high-dimensional covariates);
    this entry point runs it with its results under ``experiments/results/``::

        python -m experiments.films covariates [--iterations 350] [--quick]

(b) DOLDA on the 118 films that have a plot text, with and without covariates,
    as a small worked example of interpretation::

        python -m experiments.films plots [--topics 8] [--iterations 1000] [--quick]

    Genres with fewer than 5 of the 118 films are pooled into "Other" (7 classes).
    Covariates: ``Year`` (in decades from the median year) and ``Company`` (companies with fewer than
    3 films pooled); directors, writers and composers are almost all unique
    among 118 films and carry no shared signal.  Accuracy by 5-fold stratified
    cross-validation (seed 0) for DOLDA without and with covariates, the majority
    class and logistic regression on tf-idf (+ covariates); then a full-data fit
    per variant, read back as signal topics with their top words, covariate
    coefficients and one film's explanation.  Writes
    ``experiments/results/films_plots.json`` (``*_quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from dolda import Prior, Text, Words

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
MIN_GENRE = 5
MIN_COMPANY = 3


def _data_default():
    return os.environ.get("DOLDA_DATA", str(ROOT.parent / "shared" / "data"))


# --------------------------------------------------------------------- (a)
def covariates(data, iterations, quick=False, threads=2):
    """Run the films_genre protocol, results in ``experiments/results/films_covariates``."""
    from experiments import films_genre

    out = RESULTS / ("films_covariates_quick" if quick else "films_covariates")
    argv = ["--data", str(data), "--n-iter", str(iterations), "--threads", str(threads),
            "--out", str(out)]
    if quick:
        argv += ["--subsample", "15", "--folds", "2", "--max-folds", "1", "--skip-full"]
    films_genre.main(argv)
    return out / "films_genre.json"


# --------------------------------------------------------------------- (b)
def load_plots(data, quick=False):
    from dolda.datasets import load_films

    films = load_films(data, with_plots=True)
    counts = films["Genre"].value_counts()
    films["label"] = films["Genre"].where(films["Genre"].map(counts) >= MIN_GENRE, "Other")
    comp = films["Company"].fillna("none").astype(str)
    ccount = comp.value_counts()
    films["company"] = comp.where(comp.map(ccount) >= MIN_COMPANY, "other")
    films["year"] = pd.to_numeric(films["Year"], errors="coerce")
    films["year"] = films["year"].fillna(films["year"].median())
    # decades from the median year: a coefficient per decade, readable beside the topics
    films["year"] = (films["year"] - films["year"].median()) / 10.0
    if quick:
        films = films[films["label"].isin(["Comedy", "Drama", "Action"])].reset_index(drop=True)
    return films


def _model(topics, iterations, seed, prior="horseshoe"):
    from dolda import DOLDA

    # every word counts in 118 short plots: no rare-word pruning
    return DOLDA(n_topics=topics, n_iter=iterations, random_state=seed, n_jobs=1, progress=False, alpha=0.1, prior=Prior(kind=prior), text=Text(rare_share=0.0), words=Words(n=0))


def _tfidf_lr(train, test, with_cov):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import OneHotEncoder

    vec = TfidfVectorizer(stop_words="english", token_pattern=r"(?u)\b[^\W\d_][^\W_]+\b")
    A, B = vec.fit_transform(train.text).toarray(), vec.transform(test.text).toarray()
    if with_cov:
        enc = OneHotEncoder(handle_unknown="ignore").fit(train[["company"]])
        mu, sd = train.year.mean(), train.year.std() or 1.0
        A = np.hstack([A, enc.transform(train[["company"]]).toarray(),
                       ((train.year - mu) / sd).to_numpy()[:, None]])
        B = np.hstack([B, enc.transform(test[["company"]]).toarray(),
                       ((test.year - mu) / sd).to_numpy()[:, None]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lr = LogisticRegression(C=10.0, max_iter=3000).fit(A, train.label)
    return float(np.mean(lr.predict(B) == test.label.to_numpy()))


def plots(data, topics=8, iterations=1000, seed=1, quick=False, folds=5):
    from sklearn.model_selection import StratifiedKFold

    films = load_plots(data, quick)
    if quick:
        topics, iterations, folds = 4, 30, 2
    y = films["label"].to_numpy()
    cov = films[["year", "company"]]
    variants = {"dolda_text": False, "dolda_text_covariates": True}
    acc = {k: [] for k in [*variants, "lr_tfidf", "lr_tfidf_covariates", "majority"]}
    tic = time.perf_counter()
    splitter = StratifiedKFold(folds, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # unseen company levels, empty docs
        for f, (tr, te) in enumerate(splitter.split(films, y)):
            train, test = films.iloc[tr], films.iloc[te]
            for name, with_cov in variants.items():
                m = _model(topics, iterations, seed + f)
                m.fit(train.text.tolist(), y[tr], covariates=cov.iloc[tr] if with_cov else None)
                pred = m.predict(test.text.tolist(), covariates=cov.iloc[te] if with_cov else None)
                acc[name].append(float(np.mean(pred == y[te])))
            acc["lr_tfidf"].append(_tfidf_lr(train, test, False))
            acc["lr_tfidf_covariates"].append(_tfidf_lr(train, test, True))
            majority = pd.Series(y[tr]).value_counts().index[0]
            acc["majority"].append(float(np.mean(y[te] == majority)))
    cv_seconds = time.perf_counter() - tic

    full = {}
    example = int(np.flatnonzero(films["label"].to_numpy() == "Action")[0]) \
        if "Action" in set(y) else 0
    for name, with_cov in variants.items():
        m = _model(topics, iterations, seed)
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            m.fit(films.text.tolist(), y, covariates=cov if with_cov else None)
        seconds = time.perf_counter() - t0
        top = m.top_words(8).apply(" ".join, axis=1)
        signal = {}
        for label in m.classes_:
            s = m.signal_topics(label)
            signal[str(label)] = [
                {"topic": str(idx), "coef": float(r["coef"]), "lower": float(r["lower"]),
                 "upper": float(r["upper"]), "words": str(r["top_words"])}
                for idx, r in s.iterrows()]
        coef = m.coef_
        lo, hi = m.coef_interval(0.95)
        tcols = [c for c in coef.columns if c.startswith("topic ")]
        strongest = {}
        for label in m.classes_:
            order = coef.loc[label, tcols].abs().sort_values(ascending=False).index[:2]
            strongest[str(label)] = [
                {"topic": t, "coef": float(coef.loc[label, t]),
                 "lower": float(lo.loc[label, t]), "upper": float(hi.loc[label, t]),
                 "words": top[t]} for t in order]
        cov_cols = [c for c in coef.columns if c.startswith(("year", "company"))]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            expl = m.explain(films.text.iloc[example],
                             X_row=cov.iloc[[example]] if with_cov else None)
        pred_class = m.predict([films.text.iloc[example]],
                               covariates=cov.iloc[[example]] if with_cov else None)[0]
        expl_rows = expl[expl["class"] == pred_class]
        full[name] = {
            "fit_seconds": seconds, "train_accuracy": float(m.score(
                films.text.tolist(), y, covariates=cov if with_cov else None)),
            "top_words": top.tolist(), "signal_topics": signal,
            "strongest_topics": strongest,
            "covariate_coef": {c: {str(k): float(v) for k, v in coef[c].items()}
                               for c in cov_cols},
            "loglik_total": m.loglik_["total"].tolist(),
            "example": {"film": str(films.Name.iloc[example]),
                        "genre": str(y[example]), "predicted": str(pred_class),
                        "proba": {str(k): float(v) for k, v in expl.attrs["proba"].items()},
                        "explanation": expl_rows.head(6).to_dict(orient="records")},
        }
    result = {
        "experiment": "films_plots", "quick": quick, "n_films": int(len(films)),
        "classes": {str(k): int(v) for k, v in films["label"].value_counts().items()},
        "topics": topics, "iterations": iterations, "burn_in": iterations // 2, "seed": seed,
        "folds": folds, "covariates": ["year (decades from the median year)",
                                       f"company (>= {MIN_COMPANY} films, else 'other')"],
        "n_companies": int(films["company"].nunique()),
        "accuracy": {k: {"mean": float(np.mean(v)), "sd": float(np.std(v)), "folds": v}
                     for k, v in acc.items()},
        "cv_seconds": cv_seconds, "full": full,
        "command": "python -m experiments.films plots" + (" --quick" if quick else ""),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"films_plots{'_quick' if quick else ''}.json"
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    return result, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("covariates", help="(a) genre from ~25,000 metadata columns")
    a.add_argument("--data", default=_data_default())
    a.add_argument("--iterations", type=int, default=350)
    a.add_argument("--threads", type=int, default=2)
    a.add_argument("--quick", action="store_true")
    b = sub.add_parser("plots", help="(b) DOLDA on the 118 films with plots")
    b.add_argument("--data", default=_data_default())
    b.add_argument("--topics", type=int, default=8)
    b.add_argument("--iterations", type=int, default=1000)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    if args.command == "covariates":
        print(covariates(args.data, args.iterations, args.quick, args.threads))
    else:
        result, out = plots(args.data, args.topics, args.iterations, args.seed, args.quick)
        for k, v in result["accuracy"].items():
            print(f"{k:22s} {v['mean']:.3f} +- {v['sd']:.3f}")
        print(out)


if __name__ == "__main__":
    main()
