"""Accuracy study: DOLDA (topics, words, topics + words) beside linear baselines.

One run writes ``experiments/results/accuracy_<corpus>_<model>[_K<k>_<it>it][_<tag>][_quick].json``::

    python -m experiments.accuracy run --corpus jira_hadoop --model dolda_words \\
        --topics 20 --iterations 200 [--words 2000] [--seed 1] [--quick]

Corpora
-------
``newsgroups_raw``, ``newsgroups_stripped``
    20 Newsgroups bydate (see :mod:`experiments.newsgroups`).
``debian_sections``
    Debian package descriptions -> archive section, 23 sections (see
    :mod:`experiments.debian`; files under ``<data>/debian``).
``jira_<project>``, ``jira_<project>_meta``
    The Apache JIRA bug reports of ``../shared/data/apache_jira_bugs`` (hadoop,
    hdfs, mapreduce, activemq, yarn, storm): summary + description -> component,
    chronological split; ``_meta`` adds the filing-time covariates reporter,
    priority and affected version (levels seen fewer than 3 times pooled).

Models
------
``dolda``          ``DOLDA(n_topics=K, n_words=0)``: topics (and covariates) only.
``dolda_words``    ``DOLDA(n_topics=K, n_words=W)``: topics + the W most frequent words
                   (``--words auto``: DOLDA's default number).
``words_probit``   Horseshoe ``DOProbit`` on l2-normalised sublinear tf-idf of the W
                   most frequent words (no topics), + covariates.
``svm``            ``LinearSVC(C=1)`` on tf-idf of DOLDA's whole vocabulary (+ covariates).
``svm_words``      the same SVM on only the W most frequent words (DOLDA's word covariates
                   with ``--words W``): how much of the SVM's lead is its vocabulary.
``logreg``         ``LogisticRegression(C=10)`` on the same features.

All models use the vocabulary DOLDA's default preprocessing builds on the
training texts.  Every result has test accuracy, macro-F1, fit seconds,
seconds per iteration and, to follow how predictions spread over the classes
(issue 12, point 6), ``max_overprediction``: the largest ratio of a class's
predicted to its true test count, and the class it belongs to.
``--quick`` uses every 8th document of a small corpus and few iterations
(``tests/test_experiments.py`` runs it).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
JIRA_PROJECTS = ("hadoop", "hdfs", "mapreduce", "activemq", "yarn", "storm")
CORPORA = (("newsgroups_raw", "newsgroups_stripped", "debian_sections")
           + tuple(f"jira_{p}" for p in JIRA_PROJECTS)
           + tuple(f"jira_{p}_meta" for p in JIRA_PROJECTS))
MODELS = ("dolda", "dolda_words", "words_probit", "svm", "svm_words", "logreg")
META_COLUMNS = ("reporter", "priority", "affects_version")
META_MIN_COUNT = 3


def load_corpus(data_dir, corpus, quick=False):
    """``(train_texts, y_train, test_texts, y_test, X_train, X_test)`` (X None without metadata)."""
    if corpus not in CORPORA:
        raise ValueError(f"corpus must be one of {CORPORA}, got {corpus!r}")
    data_dir = Path(data_dir)
    if corpus.startswith("newsgroups_"):
        from experiments.newsgroups import load_setting

        return load_setting(data_dir, corpus.split("_", 1)[1], quick)
    if corpus == "debian_sections":
        from experiments.debian import load_split

        return load_split(data_dir / "debian", quick)
    project = corpus.split("_")[1]
    folder = data_dir / "apache_jira_bugs" / project
    meta = corpus.endswith("_meta")
    frames = []
    for subset in ("train", "test"):
        df = pd.read_csv(folder / f"{subset}_meta.csv.gz", keep_default_na=False)
        if quick:
            df = df.iloc[::8].reset_index(drop=True)
        frames.append(df)
    tr, te = frames
    Xtr = Xte = None
    if meta:
        Xtr = tr[list(META_COLUMNS)].astype(str)
        Xte = te[list(META_COLUMNS)].astype(str)
    return (tr.text.tolist(), tr.label.to_numpy(), te.text.tolist(), te.label.to_numpy(),
            Xtr, Xte)


def _tfidf(vocab, tr_texts, te_texts, n_words=None):
    """Sublinear, l2-normalised tf-idf on ``vocab`` (or its ``n_words`` most frequent words)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(vocabulary={w: i for i, w in enumerate(vocab.words)},
                          token_pattern=vocab.token_pattern, lowercase=True, sublinear_tf=True)
    A, B = vec.fit_transform(tr_texts), vec.transform(te_texts)
    if n_words is not None and n_words < A.shape[1]:
        df = np.bincount(A.indices, minlength=A.shape[1])
        keep = np.sort(np.lexsort((np.arange(len(df)), -df))[:n_words])
        A, B = A[:, keep], B[:, keep]
        from sklearn.preprocessing import normalize

        A, B = normalize(A), normalize(B)
    return A.tocsr(), B.tocsr()


def _with_covariates(A, B, Xtr, Xte):
    import scipy.sparse as sp

    from dolda.design.covariates import CovariateEncoder

    if Xtr is None:
        return A, B
    enc = CovariateEncoder(min_count=META_MIN_COUNT)
    ca, cb = enc.fit_transform(Xtr), enc.transform(Xte)
    return (sp.hstack([A, sp.csr_matrix(ca)]).tocsr(), sp.hstack([B, sp.csr_matrix(cb)]).tocsr())


def prediction_spread(y_true, y_pred) -> dict:
    """The most over-predicted class: predicted / true test count (true count at least 1)."""
    true = pd.Series(y_true).value_counts()
    pred = pd.Series(y_pred).value_counts()
    ratio = (pred / true.reindex(pred.index).fillna(0).clip(lower=1)).sort_values()
    top = ratio.index[-1]
    return {"max_overprediction": float(ratio.iloc[-1]), "max_overpredicted_class": str(top),
            "max_overpredicted_count": int(pred[top]), "its_true_count": int(true.get(top, 0)),
            "distinct_predicted": len(pred), "distinct_true": len(true)}


def result_path(corpus, model, topics=None, iterations=None, quick=False, tag=None):
    parts = [f"accuracy_{corpus}_{model}"]
    if model.startswith("dolda"):
        parts.append(f"K{topics}_{iterations}it")
    if tag:
        parts.append(tag)
    if quick:
        parts.append("quick")
    return RESULTS / ("_".join(parts) + ".json")


def run(data_dir, corpus, model_name, topics=20, iterations=200, n_words=2000, seed=1,
        quick=False, threads=None, tag=None, extra=None):
    """Fit one model on one corpus, write its JSON, return ``(result, path)``."""
    from sklearn.metrics import f1_score

    from dolda import DOLDA, DOProbit
    from dolda.design.corpus import Vocabulary

    if model_name not in MODELS:
        raise ValueError(f"model must be one of {MODELS}, got {model_name!r}")
    tr, ytr, te, yte, Xtr, Xte = load_corpus(data_dir, corpus, quick)
    extra = dict(extra or {})
    result = {"experiment": "accuracy", "corpus": corpus, "model": model_name, "seed": seed,
              "quick": quick, "n_train": len(tr), "n_test": len(te),
              "n_classes": len(np.unique(ytr)),
              "n_covariate_columns": 0 if Xtr is None else len(Xtr.columns)}
    tic = time.perf_counter()
    if model_name.startswith("dolda"):
        words = n_words if model_name == "dolda_words" else 0
        from dolda.models.dolda.options import from_flat

        model = from_flat(DOLDA, dict(n_topics=topics, n_iter=iterations, random_state=seed,
                                      n_jobs=threads, progress=False,
                                      covariate_min_count=META_MIN_COUNT, n_words=words,
                                      **extra))
        model.fit(tr, ytr, X=Xtr)
        fit_s = time.perf_counter() - tic
        pred = model.predict(te, X=Xte)
        from dolda.evaluate.heldout import heldout_log_likelihood

        held = heldout_log_likelihood(model, te)  # document completion on the test texts
        alpha = np.atleast_1d(np.asarray(model.alpha_, dtype=float))
        result.update(heldout_loglik_per_token=float(held.loglik.sum() / held.n_tokens.sum()),
                      alpha_learned={"sum": float(alpha.sum() if alpha.size > 1
                                                  else alpha[0] * topics),
                                     "min": float(alpha.min()), "max": float(alpha.max())})
        ll = model.loglik_["total"].to_numpy()
        q = max(1, iterations // 4)
        wf = getattr(model, "word_features_", None)
        result.update(topics=topics, iterations=iterations,
                      n_words=0 if wf is None else len(wf.words_), words_param=words,
                      params={k: v for k, v in extra.items()},
                      seconds_per_iteration=fit_s / iterations,
                      vocabulary=len(model.vocabulary_), n_tokens=int(model.n_tokens_),
                      loglik_last_quarter_rise=float(np.mean(ll[-q:]) - np.mean(ll[-2 * q:-q])),
                      loglik_total=ll.tolist())
    else:
        vocab = Vocabulary().fit(tr)
        if model_name == "words_probit":
            A, B = _tfidf(vocab, tr, te, n_words)
            A, B = _with_covariates(A, B, Xtr, Xte)
            model = DOProbit(n_iter=iterations, random_state=seed, n_jobs=threads).fit(A, ytr)
            result.update(iterations=iterations, n_words=n_words)
        else:
            from sklearn.linear_model import LogisticRegression
            from sklearn.svm import LinearSVC

            restrict = None
            if model_name == "svm_words":
                from dolda.design.word_features import resolve_n_words

                restrict = resolve_n_words(n_words, len(tr))
            A, B = _with_covariates(*_tfidf(vocab, tr, te, restrict), Xtr, Xte)
            if restrict is not None:
                result["n_words"] = int(min(restrict, A.shape[1]))
            est = (LinearSVC(C=1.0, random_state=seed) if model_name.startswith("svm")
                   else LogisticRegression(C=10.0, max_iter=2000))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model = est.fit(A, ytr)
        fit_s = time.perf_counter() - tic
        pred = model.predict(B)
        result["n_features"] = int(A.shape[1])
    result.update(test_accuracy=float(np.mean(pred == yte)),
                  macro_f1=float(f1_score(yte, pred, average="macro")),
                  fit_seconds=fit_s, **prediction_spread(yte, pred))
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = result_path(corpus, model_name, topics, iterations, quick, tag)
    out.write_text(json.dumps(result, indent=1) + "\n")
    return result, out


def _summary(runs) -> list:
    """Per corpus: the baselines, the best run of each DOLDA variant, and its gap to the SVM."""
    by = {}
    for r in runs:
        key = r["model"]
        if key == "dolda_words" and (r.get("params") or {}).get("alpha") == "auto":
            key = "dolda_words_auto"
        cell = by.setdefault(r["corpus"], {})
        if key not in cell or r["test_accuracy"] > cell[key]["test_accuracy"]:
            cell[key] = r
    cols = [("svm", "LinearSVC"), ("svm_words", "LinearSVC, W words"),
            ("logreg", "logistic reg."), ("dolda", "DOLDA topics"),
            ("words_probit", "DOProbit words"), ("dolda_words", "DOLDA topics + words"),
            ("dolda_words_auto", "same, alpha/beta auto")]
    lines = ["Summary: the best run of each model per corpus (test accuracy; in brackets K "
             "and the number of word covariates), and the best DOLDA's gap to the SVM.\n",
             "| corpus | " + " | ".join(c[1] for c in cols) + " | best DOLDA - SVM |",
             "|---" * (len(cols) + 2) + "|"]
    for corpus in sorted(by):
        cell = by[corpus]
        parts = []
        for key, _ in cols:
            r = cell.get(key)
            if r is None:
                parts.append("-")
                continue
            detail = ""
            if key == "svm_words":
                detail = f" ({r.get('n_words')}w)"
            if key.startswith("dolda"):
                detail = f" (K={r.get('topics')}" + (f", {r.get('n_words')}w" if r.get(
                    "n_words") else "") + ")"
            parts.append(f"{r['test_accuracy']:.3f}{detail}")
        doldas = [cell[k]["test_accuracy"] for k in cell if k.startswith("dolda")]
        gap = (f"{max(doldas) - cell['svm']['test_accuracy']:+.3f}"
               if doldas and "svm" in cell else "-")
        lines.append(f"| {corpus} | " + " | ".join(parts) + f" | {gap} |")
    return lines + [""]


def markdown_table(results_dir=RESULTS, quick=False) -> list:
    """The accuracy study's results as markdown lines (for ``experiments/report.py``)."""
    files = sorted(Path(results_dir).glob("accuracy_*.json"))
    runs = [json.loads(f.read_text()) for f in files]
    runs = [r for r in runs if bool(r.get("quick")) == quick]
    if not runs:
        return []
    out = ["## Accuracy study: topics, words, topics + words, linear baselines (issue 12)\n",
           "Command: `python -m experiments.accuracy run --corpus C --model M [--topics K "
           "--iterations N --words W]` (seed 1; DOLDA's default preprocessing for every model; "
           "`max over-prediction` = the largest ratio of a class's predicted to true test "
           "count). Times are wall-clock on the shared 2-core machine, often under heavy "
           "load from other jobs: compare them only within a row's corpus and run date.\n",
           "| corpus | model | K | iterations | words | params | accuracy | macro-F1 | fit s "
           "| s/it | max over-prediction |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    out = out[:2] + _summary(runs) + out[2:]
    for r in sorted(runs, key=lambda r: (r["corpus"], r["model"], r.get("topics") or 0)):
        spi = r.get("seconds_per_iteration")
        out.append(
            f"| {r['corpus']} | {r['model']} | {r.get('topics', '-')} | "
            f"{r.get('iterations', '-')} | {r.get('n_words', '-')} | "
            f"{' '.join(f'{k}={v}' for k, v in (r.get('params') or {}).items()) or '-'} | "
            f"{r['test_accuracy']:.3f} | {r['macro_f1']:.3f} | {r['fit_seconds']:.0f} | "
            f"{'-' if spi is None else f'{spi:.2f}'} | {r['max_overprediction']:.1f}x "
            f"({r['max_overpredicted_class']}) |")
    return out + [""]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run")
    p.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    p.add_argument("--corpus", choices=CORPORA, required=True)
    p.add_argument("--model", choices=MODELS, required=True)
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--words", type=lambda v: v if v in ("auto", "all") else int(v),
                   default=2000, help="word covariates of dolda_words (an int, 'auto' (DOLDA's "
                                      "default) or 'all')")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--tag", default=None)
    p.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                   help="extra DOLDA parameter (JSON value), e.g. --param word_features='\"binary\"'")
    p.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    extra = {}
    for item in args.param:
        name, _, value = item.partition("=")
        try:
            extra[name] = json.loads(value)
        except json.JSONDecodeError:
            extra[name] = value
    result, out = run(args.data, args.corpus, args.model, args.topics, args.iterations,
                      args.words, args.seed, args.quick, args.threads, args.tag, extra)
    print(f"{args.corpus} {args.model}: accuracy {result['test_accuracy']:.4f} "
          f"macro-F1 {result['macro_f1']:.4f} fit {result['fit_seconds']:.0f} s "
          f"max over-prediction {result['max_overprediction']:.1f}x "
          f"({result['max_overpredicted_class']}) -> {out}", flush=True)


if __name__ == "__main__":
    main()
