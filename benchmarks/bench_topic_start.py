"""Cost of the deterministic topic start (``DOLDA(topic_init="nmf")``, issue 32).

On 20 Newsgroups train (stripped, the chain's own vocabulary: DOLDA's defaults), per K:
the NMF start (:func:`dolda.sampler.topic_start.nmf_topics`: tf-idf, NMF with the nndsvda
start and at most 200 coordinate-descent iterations on one BLAS thread, the argmax read-off)
against one topics-only chain iteration (``n_words=0``, median of a short fit's iterations
after the first), interleaved over rounds.  The ratio (start / one iteration) is the figure.

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_topic_start.py [--topics 20 100]
        [--rounds 2] [--iters 6] [--threads 2] [--max-docs N] [--nmf-max-iter N]
        [--no-chain] [--name topic_start]

Writes ``benchmarks/results/<name>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None):
    import sys

    sys.path.insert(0, str(ROOT))
    from dolda import DOLDA
    from dolda.sampler.topic_start import NMF_MAX_ITER, assign_topics, nmf_factors
    from experiments.newsgroups import load_setting

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, nargs="+", default=[20, 100])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iters", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-docs", type=int, default=None)
    parser.add_argument("--nmf-max-iter", type=int, default=None,
                        help="cap of the NMF iterations (default: topic_start.NMF_MAX_ITER)")
    parser.add_argument("--no-chain", action="store_true",
                        help="time the start only (no chain iterations)")
    parser.add_argument("--name", default="topic_start")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    texts, y, _, _, _, _ = load_setting(args.data, "stripped")
    if args.max_docs:
        texts, y = texts[:args.max_docs], y[:args.max_docs]
    corpus = DOLDA()._make_corpus(texts, fit=True)
    load_before = os.getloadavg()
    runs = {K: {"nmf_s": [], "assign_s": [], "iteration_s": []} for K in args.topics}
    for r in range(args.rounds):
        for K in args.topics:
            t0 = time.perf_counter()
            W, H = nmf_factors(corpus.tokens, corpus.doc_ptr, corpus.n_words, K,
                              args.nmf_max_iter)
            t1 = time.perf_counter()
            assign_topics(corpus.tokens, corpus.doc_ptr, W, H)
            t2 = time.perf_counter()
            it = float("nan")
            if not args.no_chain:
                m = DOLDA(n_topics=K, n_iter=args.iters, n_words=0, n_jobs=args.threads,
                          progress=False, random_state=r, proba="do").fit(corpus, y)
                it = float(np.median(m.timings_["iteration_seconds"][0, 1:]))
            runs[K]["nmf_s"].append(t1 - t0)
            runs[K]["assign_s"].append(t2 - t1)
            runs[K]["iteration_s"].append(it)
            print(f"round {r} K={K}: NMF {t1 - t0:.2f} s, assign {t2 - t1:.2f} s, "
                  f"iteration {it:.3f} s", flush=True)
    rows = []
    for K, v in runs.items():
        start = np.asarray(v["nmf_s"]) + np.asarray(v["assign_s"])
        ratio = start / np.asarray(v["iteration_s"])
        rows.append({"topics": K, "nmf_s": v["nmf_s"], "assign_s": v["assign_s"],
                     "iteration_s": v["iteration_s"],
                     "start_over_iteration": [round(float(x), 1) for x in ratio]})
    out = {"corpus": "20 Newsgroups train, stripped", "n_docs": int(corpus.n_docs),
           "n_tokens": int(len(corpus.tokens)), "n_words": int(corpus.n_words),
           "threads": args.threads, "nmf_max_iter": args.nmf_max_iter or NMF_MAX_ITER,
           "load_before": load_before,
           "load_after": os.getloadavg(), "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = ["# The NMF topic start against one chain iteration", "",
             f"{out['corpus']}: {out['n_docs']:,} documents, {out['n_tokens']:,} tokens, "
             f"{out['n_words']:,} words; NMF capped at {out['nmf_max_iter']} iterations; "
             f"chain topics-only on {args.threads} threads; load "
             f"{load_before[0]:.1f} before, {out['load_after'][0]:.1f} after "
             "(`benchmarks/bench_topic_start.py`).", "",
             "| K | NMF (s) | read-off (s) | one iteration (s) | start / iteration |",
             "|---|---|---|---|---|"]
    for row in rows:
        fmt = lambda xs, d=2: " / ".join(f"{x:.{d}f}" for x in xs)  # noqa: E731
        lines.append(f"| {row['topics']} | {fmt(row['nmf_s'])} | {fmt(row['assign_s'])} | "
                     f"{fmt(row['iteration_s'], 3)} | "
                     f"{' / '.join(str(x) for x in row['start_over_iteration'])} |")
    lines += ["", "One figure per round, rounds interleaved over K."]
    (args.out / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
