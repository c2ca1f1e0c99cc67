"""Which prior suits a corpus's words: dense (ridge-like) or sparse (Horseshoe-like) effects.

README "Word priors": on 20 Newsgroups ``DOLDA(word_prior="normal")`` beats the Horseshoe
on the words, on the bug-report corpora it loses.  This script measures the same split
without DOLDA, on the linear SVM baseline's features (sublinear tf-idf of DOLDA's
vocabulary, unit rows; ``experiments.accuracy``), in seconds per corpus:

``surrogates``  scikit-learn's least-squares ridge classifier (``alpha`` 0.3, 1, 3; the
                point estimate of a Gaussian prior of variance ``1 / alpha``), the
                L1-penalised linear SVM (a sparse estimate) and the SVM itself, trained on
                the training split and scored on the test split.
``probit``      the Gaussian-prior DO probit on the words alone
                (``DOProbit(prior="normal", prior_variance=v)``), to separate the prior from
                the likelihood: on 20 Newsgroups raw it stays below the ridge.

Results: ``experiments/results/word_prior_<command>_<corpus>.json``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from experiments.accuracy import CORPORA, RESULTS, _tfidf, load_corpus

ROOT = Path(__file__).resolve().parents[1]


def _features(data_dir, corpus):
    from dolda.design.corpus import Vocabulary

    tr, ytr, te, yte, _, _ = load_corpus(data_dir, corpus)
    A, B = _tfidf(Vocabulary().fit(tr), tr, te)
    return A, ytr, B, yte


def surrogates(data_dir, corpus) -> dict:
    from sklearn.linear_model import RidgeClassifier
    from sklearn.svm import LinearSVC

    A, ytr, B, yte = _features(data_dir, corpus)
    models = {f"ridge_alpha_{a:g}": RidgeClassifier(alpha=a, solver="sparse_cg")
              for a in (0.3, 1.0, 3.0)}
    models["l1_svm_C_1"] = LinearSVC(penalty="l1", dual=False, C=1.0)
    models["l1_svm_C_3"] = LinearSVC(penalty="l1", dual=False, C=3.0)
    models["svm"] = LinearSVC(C=1.0)
    out = {"corpus": corpus, "n_train": A.shape[0], "n_features": A.shape[1]}
    for name, est in models.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(A, ytr)
        out[name] = float(np.mean(est.predict(B) == yte))
    return out


def probit(data_dir, corpus, variance, n_iter, threads) -> dict:
    from dolda import DOProbit

    A, ytr, B, yte = _features(data_dir, corpus)
    tic = time.perf_counter()
    model = DOProbit(prior="normal", prior_variance=variance, n_iter=n_iter, random_state=1,
                     n_jobs=threads, proba="ovr").fit(A, ytr)
    return {"corpus": corpus, "prior_variance": variance, "n_iter": n_iter,
            "test_accuracy": float(np.mean(model.predict(B) == yte)),
            "fit_seconds": time.perf_counter() - tic}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("surrogates", "probit"))
    parser.add_argument("--corpus", choices=CORPORA, action="append", required=True)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--variance", type=float, default=1.0)
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    RESULTS.mkdir(parents=True, exist_ok=True)
    for corpus in args.corpus:
        if args.command == "surrogates":
            result = surrogates(args.data, corpus)
            path = RESULTS / f"word_prior_surrogates_{corpus}.json"
        else:
            result = probit(args.data, corpus, args.variance, args.iterations, args.threads)
            path = RESULTS / f"word_prior_probit_{corpus}_v{args.variance:g}.json"
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
