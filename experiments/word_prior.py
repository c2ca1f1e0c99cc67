"""Which prior suits a corpus's words: dense (ridge-like) or sparse (Horseshoe-like) effects.

docs/decisions/word-prior.md: on 20 Newsgroups ``DOLDA(word_prior="normal")`` beats the Horseshoe
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
``both``        DOLDA with the words twice: the default words (log counts of the
                ``n_words="auto"`` most frequent words, Horseshoe with the slab), passed as
                sparse covariates, plus every vocabulary word as tf-idf under
                ``word_prior="normal"`` (``n_words="all"``): a sparse and a dense part of
                each word's effect, their sum the word's coefficient.  The model of
                ``DOLDA(word_prior="both")`` built by hand (how it was first measured);
                docs/decisions/word-prior.md compares the two.

Results: ``experiments/results/word_prior_<command>_<corpus>.json``.  ``--quick`` runs the
command on a small corpus simulated by :func:`dolda.datasets.simulate` instead (``--corpus``
is then not needed) and writes ``word_prior_<command>_quick.json``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

from experiments.accuracy import CORPORA, RESULTS, _tfidf, load_corpus
from dolda import Words

ROOT = Path(__file__).resolve().parents[1]


def _split(data_dir, corpus):
    """The corpus's train/test split; ``corpus=None``: a small simulated one."""
    if corpus is not None:
        return load_corpus(data_dir, corpus)
    from dolda.datasets import simulate

    sim = simulate(n_docs=200, n_topics=4, n_classes=3, vocab_size=300, doc_length=40,
                   random_state=0)
    y = np.asarray(sim.y)
    return sim.texts[:150], y[:150], sim.texts[150:], y[150:], None, None


def _features(data_dir, corpus):
    from dolda.design.corpus import Vocabulary

    tr, ytr, te, yte, _, _ = _split(data_dir, corpus)
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
    out = {"corpus": corpus or "simulated", "n_train": A.shape[0], "n_features": A.shape[1]}
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
    return {"corpus": corpus or "simulated", "prior_variance": variance, "n_iter": n_iter,
            "test_accuracy": float(np.mean(model.predict(B) == yte)),
            "fit_seconds": time.perf_counter() - tic}


def log_count_words(data_dir, corpus):
    """The default word covariates as a sparse matrix: ``log(1 + n_dw)`` of the
    ``n_words="auto"`` most frequent (by document frequency) vocabulary words."""
    from sklearn.feature_extraction.text import CountVectorizer

    from dolda.design.corpus import Vocabulary
    from dolda.design.word_features import resolve_n_words

    tr, ytr, te, yte, _, _ = _split(data_dir, corpus)
    vocab = Vocabulary().fit(tr)
    counter = CountVectorizer(vocabulary={w: i for i, w in enumerate(vocab.words)},
                              token_pattern=vocab.token_pattern, lowercase=True)
    A, B = (counter.transform(t).astype(np.float64).tocsr() for t in (tr, te))
    df = np.bincount(A.indices, minlength=A.shape[1])
    keep = np.sort(np.lexsort((np.arange(len(df)), -df))[:resolve_n_words("auto", len(tr))])
    A, B = A[:, keep].tocsr(), B[:, keep].tocsr()
    A.data, B.data = np.log1p(A.data), np.log1p(B.data)
    return tr, ytr, te, yte, A, B


def both(data_dir, corpus, topics, n_iter, seed, variance, threads) -> dict:
    from dolda import DOLDA

    tr, ytr, te, yte, A, B = log_count_words(data_dir, corpus)
    tic = time.perf_counter()
    model = DOLDA(n_topics=topics, n_iter=n_iter, random_state=seed, n_jobs=threads, progress=False, words=Words(n="all", features="tfidf", prior="normal", prior_variance=variance)).fit(tr, ytr, covariates=A)
    fit_s = time.perf_counter() - tic
    return {"corpus": corpus or "simulated", "topics": topics, "n_iter": n_iter, "seed": seed,
            "prior_variance": variance, "sparse_words": A.shape[1],
            "dense_words": len(model.word_features_.words_),
            "test_accuracy": float(np.mean(model.predict(te, covariates=B) == yte)),
            "fit_seconds": fit_s}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=("surrogates", "probit", "both"))
    parser.add_argument("--corpus", choices=CORPORA, action="append")
    parser.add_argument("--quick", action="store_true",
                        help="a small simulated corpus, few iterations")
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--variance", type=float, default=1.0)
    parser.add_argument("--iterations", type=int, default=60)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if not args.quick and not args.corpus:
        parser.error("--corpus is required (or --quick)")
    if args.quick:
        args.corpus, args.iterations, args.topics = [None], min(args.iterations, 10), 3
    RESULTS.mkdir(parents=True, exist_ok=True)
    results = []
    for corpus in args.corpus:
        if args.quick:
            result = {"surrogates": lambda: surrogates(args.data, None),
                      "probit": lambda: probit(args.data, None, args.variance,
                                               args.iterations, args.threads),
                      "both": lambda: both(args.data, None, args.topics, args.iterations,
                                           args.seed, args.variance, args.threads),
                      }[args.command]()
            result["quick"] = True
            path = RESULTS / f"word_prior_{args.command}_quick.json"
        elif args.command == "surrogates":
            result = surrogates(args.data, corpus)
            path = RESULTS / f"word_prior_surrogates_{corpus}.json"
        elif args.command == "probit":
            result = probit(args.data, corpus, args.variance, args.iterations, args.threads)
            path = RESULTS / f"word_prior_probit_{corpus}_v{args.variance:g}.json"
        else:
            result = both(args.data, corpus, args.topics, args.iterations, args.seed,
                          args.variance, args.threads)
            path = RESULTS / (f"word_prior_both_{corpus}_K{args.topics}_{args.iterations}it_"
                              f"v{args.variance:g}_s{args.seed}.json")
        path.write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(result), flush=True)
        results.append(result)
    return results


if __name__ == "__main__":
    main()
