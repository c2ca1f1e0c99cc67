"""Full against per-class calibration maps on real bug-report corpora, same chain's draws.

Isolates the map (issue 36): a DOProbit on dense text features (tf-idf -> 50 SVD components,
fitted on the training split) of ``apache_jira_bugs`` corpora, one chain; its leave-one-out
draws (:func:`dolda.models.probit.estimator.proba_stacking_draws`) get the full maps (``per_class=False``,
the method before issue 36) and the per-class maps (``per_class=True``) of
:func:`dolda.posterior.calibration.select_stacking`, each timed, and both are scored on the test split
(accuracy, log loss, ECE, slope) with the same draws.

    python benchmarks/calibration_per_class.py --corpora storm hadoop --iterations 300
    python benchmarks/calibration_per_class.py --corpora hadoop+hdfs --no-full   # 54 classes

Writes benchmarks/results/calibration_per_class.json and .md (``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "src"))

from dolda.posterior import calibration as cal  # noqa: E402
from dolda.models.probit.estimator import DOProbit
from dolda.posterior.scores import proba_stacking_draws  # noqa: E402

DATA = Path("/work/shared/data/apache_jira_bugs")
RESULTS = ROOT / "results"


def load(corpus, split):
    frames = []
    for project in corpus.split("+"):
        frame = pd.read_json(DATA / project / f"{split}.jsonl.gz", lines=True)
        frame["label"] = project + "/" + frame["label"].astype(str)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def features(train, test, n_components, seed):
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.preprocessing import StandardScaler

    vec = TfidfVectorizer(stop_words="english", min_df=2, sublinear_tf=True)
    svd = TruncatedSVD(n_components, random_state=seed)
    scale = StandardScaler()
    A = scale.fit_transform(svd.fit_transform(vec.fit_transform(train["text"])))
    B = scale.transform(svd.transform(vec.transform(test["text"])))
    return A, B


def run(corpus, iterations, n_components, seed, full):
    train, test = load(corpus, "train"), load(corpus, "test")
    test = test[test["label"].isin(set(train["label"]))].reset_index(drop=True)
    A, B = features(train, test, n_components, seed)
    tic = time.perf_counter()
    model = DOProbit(n_iter=iterations, random_state=seed, proba="ovr").fit(A, train["label"])
    chain_seconds = time.perf_counter() - tic
    y_index = np.searchsorted(model.classes_, train["label"].to_numpy())
    y_test = np.searchsorted(model.classes_, test["label"].to_numpy())
    L = len(model.classes_)
    U, U_test = model._design(A), model._design(B)
    tic = time.perf_counter()
    loo = proba_stacking_draws(U, model.eta_draws_, y_index, L, model._prior_sd(100.0))
    loo_seconds = time.perf_counter() - tic
    row = {"corpus": corpus, "classes": L, "train": len(train), "test": len(test),
           "iterations": iterations, "draws": int(loo.mu.shape[0]),
           "chain_seconds": chain_seconds, "loo_seconds": loo_seconds}
    for name, per_class in [("per_class", True)] + ([("full", False)] if full else []):
        tic = time.perf_counter()
        stacking = cal.select_stacking(loo, y_index, L, per_class=per_class)
        seconds = time.perf_counter() - tic
        proba = cal.class_probabilities(U_test, model.eta_draws_, "calibrated", stacking)
        row[name] = {"seconds": seconds, "map": cal.stacking_map(stacking),
                     **cal.calibration_summary(proba, y_test)}
        print(corpus, name, row[name], flush=True)
    for rule in ("do", "ovr"):
        proba = cal.class_probabilities(U_test, model.eta_draws_, rule)
        row[rule] = cal.calibration_summary(proba, y_test)
    return row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="+", default=["storm", "hadoop"])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--components", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-full", action="store_true", help="per-class maps only")
    parser.add_argument("--out", default="calibration_per_class")
    args = parser.parse_args(argv)
    rows = [run(c, args.iterations, args.components, args.seed, not args.no_full)
            for c in args.corpora]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(
        {"command": "python benchmarks/calibration_per_class.py " + " ".join(argv or []),
         "load": os.getloadavg()[0], "rows": rows}, indent=1))

    def cell(r, k):
        return "-" if k not in r else (f"{r[k]['ece']:.3f} / {r[k]['log_loss']:.3f} / "
                                       f"{r[k]['accuracy']:.3f}")

    lines = ["| corpus | classes | train / test | map fit s: full / per-class | "
             "test ECE / log loss / accuracy: full | per-class | DO formula | OvR |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        full_s = f"{r['full']['seconds']:.1f}" if "full" in r else "-"
        lines.append(f"| {r['corpus']} | {r['classes']} | {r['train']} / {r['test']} | "
                     f"{full_s} / {r['per_class']['seconds']:.1f} | {cell(r, 'full')} | "
                     f"{cell(r, 'per_class')} | {cell(r, 'do')} | {cell(r, 'ovr')} |")
    (RESULTS / f"{args.out}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1:])
