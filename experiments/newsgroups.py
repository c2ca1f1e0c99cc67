"""20 Newsgroups (bydate split): DOLDA test accuracy beside a linear SVM on tf-idf.

    python -m experiments.newsgroups [--data ../shared/data] [--topics 100]
        [--iterations 300] [--prior horseshoe] [--remove] [--two-step] [--quick]
        [--save-model DIR]

Writes ``experiments/results/newsgroups_<setting>_K<k>_<model>.json`` with the test
accuracy, the SVM's on the same split and preprocessing, iterations, seed, wall
time and the log-likelihood trace.  ``--quick`` runs a small subset (a test uses it).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"


def svm_accuracy(train_texts, y_train, test_texts, y_test, vocabulary):
    """Linear SVM on tf-idf of the same tokens DOLDA sees (same vocabulary)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.svm import LinearSVC

    vec = TfidfVectorizer(vocabulary={w: i for i, w in enumerate(vocabulary.words)},
                          token_pattern=vocabulary.token_pattern, lowercase=True)
    Xtr = vec.fit_transform(train_texts)
    Xte = vec.transform(test_texts)
    return float(LinearSVC(C=1.0).fit(Xtr, y_train).score(Xte, y_test))


def run(data_dir, topics, iterations, prior, remove, two_step, seed, quick, threads,
        save_model=None):
    from dolda import DOLDA
    from dolda.datasets import load_20newsgroups

    strip = ("headers", "footers", "quotes") if remove else ()
    train = load_20newsgroups(data_dir, "train", remove=strip)
    test = load_20newsgroups(data_dir, "test", remove=strip)
    if quick:
        groups = sorted(train.label.unique())[:4]
        train = train[train.label.isin(groups)].iloc[::4]
        test = test[test.label.isin(groups)].iloc[::4]
    model = DOLDA(n_topics=topics, prior=prior, n_iter=iterations, two_step=two_step,
                  random_state=seed, n_jobs=threads, progress=not quick)
    tic = time.perf_counter()
    model.fit(train.text.tolist(), train.label.to_numpy())
    fit_s = time.perf_counter() - tic
    tic = time.perf_counter()
    acc = model.score(test.text.tolist(), test.label.to_numpy())
    predict_s = time.perf_counter() - tic
    svm = svm_accuracy(train.text.tolist(), train.label.to_numpy(), test.text.tolist(),
                       test.label.to_numpy(), model.vocabulary_)
    setting = "stripped" if remove else "raw"
    name = "two_step" if two_step else f"dolda_{prior}"
    result = {
        "experiment": "newsgroups", "setting": setting, "model": name, "topics": topics,
        "iterations": iterations, "burn_in": model.get_params()["burn_in"] or iterations // 2,
        "seed": seed, "quick": quick, "n_train": len(train), "n_test": len(test),
        "n_tokens": model.n_tokens_, "vocabulary": len(model.vocabulary_),
        "test_accuracy": acc, "svm_tfidf_accuracy": svm,
        "fit_seconds": fit_s, "predict_seconds": predict_s,
        "loglik_total": model.loglik_["total"].tolist(),
        "top_words": model.top_words(10).apply(" ".join, axis=1).tolist(),
    }
    if save_model:
        model.save(save_model, overwrite=True)
        result["model_dir"] = str(save_model)
    RESULTS.mkdir(parents=True, exist_ok=True)
    suffix = "_quick" if quick else ""
    out = RESULTS / f"newsgroups_{setting}_K{topics}_{name}{suffix}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result, out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--prior", default="horseshoe", choices=["horseshoe", "normal"])
    parser.add_argument("--remove", action="store_true",
                        help="strip headers, signatures and quoted replies")
    parser.add_argument("--two-step", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--save-model", default=None,
                        help="also save the fitted model here (for `dolda report`)")
    args = parser.parse_args(argv)
    result, out = run(args.data, args.topics, args.iterations, args.prior, args.remove,
                      args.two_step, args.seed, args.quick, args.threads, args.save_model)
    print(f"{result['model']} K={args.topics}: test accuracy {result['test_accuracy']:.4f}, "
          f"SVM {result['svm_tfidf_accuracy']:.4f}, fit {result['fit_seconds']:.0f} s -> {out}")


if __name__ == "__main__":
    main()
