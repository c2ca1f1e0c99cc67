"""Choosing K on 20 Newsgroups with dolda.tuning, and what relevance ranking does to the
topic listings.  Writes experiments/results/choose_k_20newsgroups.{csv,json} and the figure
docs/choosing_k_20newsgroups.png used by docs/CHOOSING_K.md.

    python -m experiments.choose_k [--docs 1600] [--groups 6] [--topics 3,6,12,24] [--folds 2]
                                   [--iterations 150]

Needs ../shared/data/20newsgroups_bydate (or DOLDA_DATA).  About 10 minutes on 2 idle cores.
``--quick``: the K grid alone on a small corpus from :func:`dolda.datasets.simulate`,
written to ``experiments/results/choose_k_quick.json`` (no figure, no relevance part).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from dolda import LDA
from dolda.datasets import load_20newsgroups, simulate
from dolda.tuning import best_topics, plot_tuning, tune_topics

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
#: Words of the message headers that raw-text topics fill up with.
HEADER_WORDS = {"subject", "organization", "lines", "writes", "article", "edu", "com",
                "university", "posting", "host", "nntp", "distribution", "reply", "re",
                "news", "cs", "netcom", "uk", "ca", "apr", "gmt"}

#: Six newsgroups from six different hierarchies (the default subset).
GROUPS = ["comp.graphics", "rec.autos", "rec.sport.hockey", "sci.med", "sci.space",
          "talk.politics.guns"]


def header_words(model, relevance, n=10):
    """Mean number of header words among the top n words of a topic."""
    top = model.top_words(n, relevance=relevance)
    return float(np.mean([len(HEADER_WORDS & set(row)) for row in top]))


def quick(args):
    """tune_topics on a simulated corpus of 4 true topics."""
    sim = simulate(n_docs=160, n_topics=4, n_classes=3, vocab_size=200, doc_length=40,
                   random_state=0)
    grid = [2, 4]
    table = tune_topics(sim.texts, np.asarray(sim.y), topics=grid, folds=2, measure="c_v",
                        n_iter=10, n_jobs=args.threads)
    out = ROOT / "experiments" / "results"
    out.mkdir(parents=True, exist_ok=True)
    summary = {"quick": True, "docs": len(sim.texts), "folds": 2, "iterations": 10,
               "grid": grid, "best": best_topics(table),
               "table": table.reset_index().to_dict(orient="records")}
    (out / "choose_k_quick.json").write_text(json.dumps(summary, indent=2, default=float)
                                             + "\n")
    return summary


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1600)
    parser.add_argument("--groups", type=int, default=6,
                        help="newsgroups used (of GROUPS, in order); 20 for all")
    parser.add_argument("--topics", default="3,6,12,24")
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="a simulated corpus, seconds")
    args = parser.parse_args(argv)
    if args.quick:
        return quick(args)
    rng = np.random.default_rng(0)

    # 1. Relevance on raw messages (headers kept): a small LDA, as in issue 16.
    raw = load_20newsgroups(DATA, "train")
    raw = raw.iloc[rng.choice(len(raw), 2000, replace=False)]
    lda = LDA(n_topics=8, n_iter=100, random_state=0, progress=False,
              n_jobs=args.threads).fit(raw["text"].tolist())
    relevance = {str(lam): header_words(lda, lam) for lam in (1.0, 0.6, 0.3)}
    examples = {"raw": [" ".join(r) for r in lda.top_words(8, relevance=1.0)],
                "relevance_0.6": [" ".join(r) for r in lda.top_words(8, relevance=0.6)],
                "labels": lda.topic_labels()}
    print("header words among a topic's top 10 (raw 20NG, LDA K=8):", relevance)

    # 2. K grid on stripped messages, DOLDA, cross-validated.
    frame = load_20newsgroups(DATA, "train", remove=("headers", "footers", "quotes"))
    frame = frame[frame["text"].str.split().str.len() >= 10]
    if args.groups < 20:
        frame = frame[frame["label"].isin(GROUPS[:args.groups])]
    frame = frame.iloc[rng.choice(len(frame), min(args.docs, len(frame)), replace=False)]
    grid = [int(k) for k in args.topics.split(",")]
    tic = time.perf_counter()
    table = tune_topics(frame["text"].tolist(), frame["label"].to_numpy(), topics=grid,
                        folds=args.folds, measure="c_v", n_iter=args.iterations,
                        n_jobs=args.threads, progress=print)
    seconds = time.perf_counter() - tic
    print(table.to_string())
    out = ROOT / "experiments" / "results"
    out.mkdir(parents=True, exist_ok=True)
    table.reset_index().to_csv(out / "choose_k_20newsgroups.csv", index=False)
    plot_tuning(table, ROOT / "docs" / "choosing_k_20newsgroups.png",
                title=f"DOLDA on {len(frame)} messages of {frame['label'].nunique()} "
                      f"newsgroups, {args.folds}-fold CV")
    summary = {"docs": len(frame), "groups": sorted(frame["label"].unique()), "folds": args.folds, "iterations": args.iterations,
               "grid": grid, "seconds": seconds, "best": best_topics(table),
               "table": table.reset_index().to_dict(orient="records"),
               "header_words_top10": relevance, "raw_topics": examples}
    (out / "choose_k_20newsgroups.json").write_text(json.dumps(summary, indent=2) + "\n")


if __name__ == "__main__":
    main()
