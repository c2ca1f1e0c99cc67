"""20 Newsgroups (bydate split): DOLDA, the two-step model and baselines as K grows.

One run::

    python -m experiments.newsgroups run --setting stripped --topics 100 \\
        --model dolda_horseshoe [--iterations 200] [--seed 1] [--save-model DIR]

The whole grid (K in 20, 50, 100, 200; Horseshoe DOLDA, normal DOLDA and the
two-step model; the three settings), skipping runs whose result file exists::

    python -m experiments.newsgroups sweep [--iterations 200] [--topics 20 50 100 200]

Settings
--------
``raw``       the messages as given (headers, signatures and quotes kept).
``stripped``  headers, signatures and quoted replies removed (the heuristics of
              scikit-learn's ``remove=("headers", "footers", "quotes")``).
``metadata``  the stripped text plus covariates taken out of the header: the
              sender's top-level domain (``From:``), the ``Organization:`` line
              (levels with fewer than 20 training messages pooled into "other"),
              the log of the body's length in words and the share of quoted
              lines, the way a user with text plus metadata would give them.
              The ``Newsgroups:`` line is not in the corpus (it is the label).

Baselines on the same preprocessing and split, once per setting
(``newsgroups_<setting>_baselines.json``): a linear SVM on tf-idf of the
vocabulary DOLDA sees (plus the covariates in the metadata setting).  The
two-step run also fits LDA + logistic regression: multinomial logistic
regression (C chosen by 3-fold CV on the training split) on the topic
proportions of the two-step model's LDA, for train and test computed alike.

Every run writes ``experiments/results/newsgroups_<setting>_K<k>_<model>.json``
with test accuracy, iterations, burn-in, seed, wall times and the log-likelihood
trace.  ``--quick`` runs a small subset (4 groups, every 8th message, few
iterations) and writes ``*_quick.json`` files; a test uses it.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
SETTINGS = ("raw", "stripped", "metadata")
MODELS = ("dolda_horseshoe", "dolda_normal", "two_step")
TOPICS = (20, 50, 100, 200)
STRIP = ("headers", "footers", "quotes")
ORG_MIN_COUNT = 20
TLD_MIN_COUNT = 10

_EMAIL = re.compile(r"[\w.+-]+@([\w-]+(?:\.[\w-]+)+)")
_QUOTED = re.compile(r"^\s*(>|\|)")


def header_covariates(raw_texts, stripped_texts) -> pd.DataFrame:
    """Covariates from each message's header and body shape (see module doc)."""
    rows = []
    for raw, body in zip(raw_texts, stripped_texts):
        head = raw.partition("\n\n")[0]
        fields = {}
        for line in head.split("\n"):
            key, sep, value = line.partition(":")
            if sep and key and " " not in key:
                fields.setdefault(key.strip().lower(), value.strip())
        match = _EMAIL.search(fields.get("from", ""))
        tld = match.group(1).rsplit(".", 1)[-1].lower() if match else "none"
        org = re.sub(r"\s+", " ", fields.get("organization", "none")).strip().lower()
        after_header = raw.partition("\n\n")[2]
        lines = [ln for ln in after_header.split("\n") if ln.strip()]
        quoted = sum(bool(_QUOTED.match(ln)) for ln in lines) / max(len(lines), 1)
        rows.append({"tld": tld, "organization": org[:60],
                     "log_words": math.log1p(len(body.split())), "quoted_share": quoted})
    return pd.DataFrame(rows)


def _pool(train: pd.Series, test: pd.Series, min_count: int):
    counts = train.value_counts()
    keep = set(counts.index[counts >= min_count])
    return (train.where(train.isin(keep), "other").astype(str),
            test.where(test.isin(keep), "other").astype(str))


def load_setting(data_dir, setting, quick=False):
    """Train/test texts, labels and covariates (None unless ``metadata``)."""
    from dolda.datasets import load_20newsgroups, strip_message

    if setting not in SETTINGS:
        raise ValueError(f"setting must be one of {SETTINGS}, got {setting!r}")
    strip = () if setting == "raw" else STRIP
    frames = {}
    for subset in ("train", "test"):
        df = load_20newsgroups(data_dir, subset)
        if quick:
            groups = sorted(df.label.unique())[:4]
            df = df[df.label.isin(groups)].iloc[::8].reset_index(drop=True)
        raw = df.text.tolist()
        if strip:
            df["text"] = [strip_message(t, strip) for t in raw]
        frames[subset] = (df, raw)
    (tr, tr_raw), (te, te_raw) = frames["train"], frames["test"]
    Xtr = Xte = None
    if setting == "metadata":
        Xtr = header_covariates(tr_raw, tr.text)
        Xte = header_covariates(te_raw, te.text)
        Xtr["tld"], Xte["tld"] = _pool(Xtr.tld, Xte.tld, TLD_MIN_COUNT)
        Xtr["organization"], Xte["organization"] = _pool(Xtr.organization, Xte.organization,
                                                         ORG_MIN_COUNT)
    return (tr.text.tolist(), tr.label.to_numpy(), te.text.tolist(), te.label.to_numpy(),
            Xtr, Xte)


def _covariate_matrix(Xtr, Xte):
    """One-hot + standardised numeric covariates for the scikit-learn baselines."""
    from dolda.design.covariates import CovariateEncoder

    enc = CovariateEncoder(standardize=True)
    A, B = enc.fit_transform(Xtr), enc.transform(Xte)
    to_dense = (lambda M: M.toarray() if hasattr(M, "toarray") else np.asarray(M))
    return to_dense(A), to_dense(B)


def baselines(data_dir, setting, quick=False, seed=1):
    """Linear SVM on tf-idf of DOLDA's vocabulary (+ covariates); cached per setting."""
    import scipy.sparse as sp
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC

    from dolda.design.corpus import Corpus

    out = RESULTS / f"newsgroups_{setting}_baselines{'_quick' if quick else ''}.json"
    if out.is_file():
        return json.loads(out.read_text())
    tr_texts, ytr, te_texts, yte, Xtr, Xte = load_setting(data_dir, setting, quick)
    tic = time.perf_counter()
    vocab = Corpus(tr_texts).vocabulary  # the preprocessing DOLDA's default fit uses
    vec = TfidfVectorizer(vocabulary={w: i for i, w in enumerate(vocab.words)},
                          token_pattern=vocab.token_pattern, lowercase=True)
    A, B = vec.fit_transform(tr_texts), vec.transform(te_texts)
    if Xtr is not None:
        ca, cb = _covariate_matrix(Xtr, Xte)
        A, B = sp.hstack([A, sp.csr_matrix(ca)]).tocsr(), sp.hstack([B, sp.csr_matrix(cb)]).tocsr()
    svm = float(LinearSVC(C=1.0, random_state=seed).fit(A, ytr).score(B, yte))
    result = {"experiment": "newsgroups", "setting": setting, "quick": quick,
              "svm_tfidf_accuracy": svm, "svm_C": 1.0, "n_features": int(A.shape[1]),
              "n_train": len(tr_texts), "n_test": len(te_texts),
              "seconds": time.perf_counter() - tic}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result


def _lda_lr(model, tr_texts, ytr, te_texts, yte, Xtr, Xte, seed):
    """Multinomial logistic regression on the two-step LDA's topic proportions."""
    from sklearn.linear_model import LogisticRegressionCV

    A, B = model.transform(tr_texts), model.transform(te_texts)
    if Xtr is not None:
        ca, cb = _covariate_matrix(Xtr, Xte)
        A, B = np.hstack([ca, A]), np.hstack([cb, B])
    with warnings.catch_warnings():  # scikit-learn's notices of changing defaults
        warnings.simplefilter("ignore", FutureWarning)
        lr = LogisticRegressionCV(Cs=[0.1, 1.0, 10.0, 100.0, 1000.0], cv=3, max_iter=2000,
                                  random_state=seed).fit(A, ytr)
    return float(lr.score(B, yte)), float(np.atleast_1d(lr.C_)[0])


def result_path(setting, topics, model, quick=False, tag=None):
    tag = f"_{tag}" if tag else ""
    return RESULTS / (f"newsgroups_{setting}_K{topics}_{model}{tag}"
                      f"{'_quick' if quick else ''}.json")


def run(data_dir, setting, topics, model_name, iterations, seed=1, quick=False, threads=None,
        save_model=None, tag=None):
    """Fit one model of the grid, write its JSON, return (result, path)."""
    from dolda import DOLDA

    if model_name not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model_name!r}")
    tr_texts, ytr, te_texts, yte, Xtr, Xte = load_setting(data_dir, setting, quick)
    prior = "normal" if model_name == "dolda_normal" else "horseshoe"
    from dolda import Prior, TwoStepDOLDA, Words

    cls = TwoStepDOLDA if model_name == "two_step" else DOLDA
    model = cls(n_topics=topics, prior=Prior(kind=prior), n_iter=iterations,
                random_state=seed, n_jobs=threads, progress=not quick,
                words=Words(n=0))  # the paper's model: topics only
    tic = time.perf_counter()
    model.fit(tr_texts, ytr, covariates=Xtr)
    fit_s = time.perf_counter() - tic
    tic = time.perf_counter()
    acc = model.score(te_texts, yte, covariates=Xte)
    predict_s = time.perf_counter() - tic
    ll = model.loglik_
    result = {
        "experiment": "newsgroups", "setting": setting, "model": model_name,
        "topics": topics, "iterations": iterations,
        "burn_in": model.get_params()["burn_in"] or iterations // 2, "seed": seed,
        "quick": quick, "n_train": len(tr_texts), "n_test": len(te_texts),
        "n_tokens": int(model.n_tokens_), "vocabulary": len(model.vocabulary_),
        "n_covariates": len(model.feature_names_) - topics - 1,
        "z_sampler": model._resolved_z_sampler(topics) if model_name != "two_step" else "lda",
        "test_accuracy": acc, "fit_seconds": fit_s, "predict_seconds": predict_s,
        "seconds_per_iteration": fit_s / iterations,
        "loglik_total": np.asarray(ll["total"], dtype=float).tolist(),
        "loglik_do": np.asarray(ll["do"], dtype=float).tolist(),
        "loglik_lda": np.asarray(ll["lda"], dtype=float).tolist(),
        "top_words": model.top_words(10).apply(" ".join, axis=1).tolist(),
        "coef_abs_mean": float(np.abs(model.coef_.to_numpy()[:, 1:]).mean()),
    }
    if model_name == "two_step":
        tic = time.perf_counter()
        result["lda_lr_accuracy"], result["lda_lr_C"] = _lda_lr(
            model, tr_texts, ytr, te_texts, yte, Xtr, Xte, seed)
        result["lda_lr_seconds"] = time.perf_counter() - tic
    if save_model:
        model.save(save_model, overwrite=True)
        result["model_dir"] = str(save_model)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = result_path(setting, topics, model_name, quick, tag)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result, out


def sweep(data_dir, topics=TOPICS, settings=SETTINGS, models=MODELS, iterations=200, seed=1,
          quick=False, threads=None, save_models=None):
    """The grid, K outermost (so an interrupted sweep has whole small-K rows)."""
    done = []
    for setting in settings:
        baselines(data_dir, setting, quick, seed)
    for k in topics:
        for setting in settings:
            for name in models:
                out = result_path(setting, k, name, quick)
                if out.is_file():
                    continue
                save = None
                if save_models and setting == "stripped" and name != "two_step":
                    save = Path(save_models) / f"newsgroups_{setting}_K{k}_{name}"
                result, out = run(data_dir, setting, k, name, iterations, seed, quick,
                                  threads, save)
                print(f"{setting:9s} K={k:<4d} {name:16s} acc {result['test_accuracy']:.4f} "
                      f"fit {result['fit_seconds']:.0f} s", flush=True)
                done.append(out)
    return done


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "sweep"):
        p = sub.add_parser(name)
        p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
        p.add_argument("--iterations", type=int, default=200)
        p.add_argument("--seed", type=int, default=1)
        p.add_argument("--threads", type=int, default=None)
        p.add_argument("--quick", action="store_true",
                       help="4 groups, every 8th message (for the test suite)")
        if name == "run":
            p.add_argument("--setting", choices=SETTINGS, default="stripped")
            p.add_argument("--topics", type=int, default=100)
            p.add_argument("--model", choices=MODELS, default="dolda_horseshoe")
            p.add_argument("--save-model", default=None)
            p.add_argument("--tag", default=None,
                           help="result file suffix, e.g. 1000it for a longer chain beside "
                                "the sweep's")
        else:
            p.add_argument("--topics", type=int, nargs="+", default=list(TOPICS))
            p.add_argument("--settings", nargs="+", choices=SETTINGS, default=list(SETTINGS))
            p.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
            p.add_argument("--save-models", default=None,
                           help="save the stripped-setting DOLDA models under this folder")
    args = parser.parse_args(argv)
    if args.command == "run":
        baselines(args.data, args.setting, args.quick, args.seed)
        result, out = run(args.data, args.setting, args.topics, args.model, args.iterations,
                          args.seed, args.quick, args.threads, args.save_model, args.tag)
        print(f"{result['model']} K={args.topics}: test accuracy "
              f"{result['test_accuracy']:.4f}, fit {result['fit_seconds']:.0f} s -> {out}")
    else:
        sweep(args.data, args.topics, args.settings, args.models, args.iterations, args.seed,
              args.quick, args.threads, args.save_models)


if __name__ == "__main__":
    main()
