"""LDA throughput: dolda's partially collapsed sampler beside tomotopy's LDAModel.

Corpus: the 20 Newsgroups "bydate" training split (``train.jsonl.gz``, one JSON
object with a ``text`` field per line), preprocessed once by
:class:`dolda.design.corpus.Vocabulary` (stop list, rarest 1% of tokens removed); both
libraries get exactly the same tokens.  For every K and thread count both are
warmed up (numba compiled / tomotopy initialised), then timed on the same
number of full iterations (z-sweep + Phi draw for dolda; one ``train`` step for
tomotopy).  Figures: tokens per second per full iteration.

Rounds are interleaved (dolda, tomotopy, dolda, ...); the ratio of a round is dolda's
seconds per iteration over tomotopy's.  Without tomotopy the peer is skipped, with a note.

Usage::

    python -m benchmarks.bench_lda [--iters 20] [--topics 20 100 1000] [--thread-counts 1 2]
    python -m benchmarks.bench_lda --quick

Writes ``benchmarks/results/lda_throughput.json`` and ``.md``.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

from benchmarks import harness


def load_texts(data: Path) -> list[str]:
    path = data / "20newsgroups_bydate" / "train.jsonl.gz"
    if not path.is_file():
        sys.exit(f"{path} not found: pass --data pointing at the folder holding 20newsgroups_bydate")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


def time_dolda(corpus, K, n_threads, n_iter, sampler="auto"):
    from dolda.models.lda import LDA

    def run(iters):
        model = LDA(n_topics=K, alpha=0.1, beta=0.01, n_iter=iters, burn_in=0,
                    sampler=sampler, random_state=1, n_jobs=n_threads, progress=False)
        model.fit(corpus)
        return model

    cpu0 = time.process_time()
    model = run(n_iter)
    cpu = time.process_time() - cpu0
    seconds = model.timings_["z_sweep"] + model.timings_["phi_draw"]
    return {"tokens_per_s": corpus.n_tokens * n_iter / seconds,
            "tokens_per_cpu_s": corpus.n_tokens * n_iter / cpu,
            "seconds_per_iter": seconds / n_iter,
            "z_sweep_s_per_iter": model.timings_["z_sweep"] / n_iter,
            "phi_draw_s_per_iter": model.timings_["phi_draw"] / n_iter,
            "sampler": model.sampler_, "final_loglik": float(model.loglik_[-1])}


def time_tomotopy(docs, K, n_threads, n_iter):
    import tomotopy as tp

    model = tp.LDAModel(k=K, alpha=0.1, eta=0.01, seed=1)
    model.optim_interval = 0  # keep alpha fixed, as dolda does
    for doc in docs:
        if doc:
            model.add_doc(doc)
    model.train(2, workers=n_threads)  # initialise, touch memory
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    model.train(n_iter, workers=n_threads)
    seconds = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    n_tokens = sum(len(d) for d in docs)
    return {"tokens_per_s": n_tokens * n_iter / seconds, "seconds_per_iter": seconds / n_iter,
            "tokens_per_cpu_s": n_tokens * n_iter / cpu,
            "ll_per_word": float(model.ll_per_word), "version": tp.__version__,
            "isa": tp.isa}


COMPILE_SNIPPET = textwrap.dedent("""
    import time
    t0 = time.perf_counter()
    from dolda.models.lda import LDA
    docs = [["apple", "banana", "cherry"], ["dog", "apple", "fish"]] * 20
    for sampler in ("dense", "sparse"):
        LDA(n_topics=3, n_iter=3, sampler=sampler, random_state=0, progress=False,
            rare_share=0).fit(docs).transform(docs[:2])
    print(time.perf_counter() - t0)
""")


def compile_times():
    """Seconds for import + a tiny fit with an empty numba cache, then with it filled."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        out = []
        for _ in range(2):
            res = subprocess.run([sys.executable, "-c", COMPILE_SNIPPET], env=env,
                                 capture_output=True, text=True, check=True)
            out.append(float(res.stdout.strip().splitlines()[-1]))
    return {"first_run_s": out[0], "cached_s": out[1]}


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--iters-large", type=int, default=5,
                        help="timed iterations for K >= 1000")
    parser.add_argument("--topics", type=int, nargs="+", default=None,
                        help="default 20 100 1000 (4 with --quick)")
    parser.add_argument("--thread-counts", type=int, nargs="+", default=None,
                        help="n_jobs values to time (default 1 and --threads)")
    parser.add_argument("--also-dense", action="store_true",
                        help="also time the dense and the sparse sweep beside auto")
    args = parser.parse_args(argv)
    run = harness.start("lda_throughput", args, argv)
    n_rounds = harness.rounds(args, full=3, quick=2)
    topics = args.topics or ([4] if args.quick else [20, 100, 1000])
    thread_counts = args.thread_counts or sorted({1, args.threads})
    iters = 3 if args.quick else args.iters
    from dolda.design.corpus import Vocabulary

    tomotopy = harness.optional("tomotopy")
    if tomotopy is None:
        run.note("tomotopy is not importable: its LDAModel is skipped (dolda alone is timed)")
    compile_info = None if args.quick else compile_times()
    texts = harness.tiny_corpus(n_docs=150)[0] if args.quick else load_texts(args.data)
    t0 = time.perf_counter()
    corpus = Vocabulary().fit_transform(texts)
    prep_s = time.perf_counter() - t0
    words = np.asarray(corpus.words, dtype=object)
    docs = [list(words[corpus.tokens[a:b]]) for a, b in zip(corpus.doc_ptr[:-1],
                                                            corpus.doc_ptr[1:])]
    rows = []
    for K in topics:
        n_iter = args.iters_large if K >= 1000 and not args.quick else iters
        for n in thread_counts:
            last = {}

            def contestant(key, fn):
                def call():
                    last[key] = fn()
                    return last[key]["seconds_per_iter"]
                return call

            contestants = {"dolda LDA": contestant("dolda", lambda: time_dolda(
                corpus, K, n, n_iter))}
            if args.also_dense:  # both sweeps beside auto, for its threshold
                for sweep in ("dense", "sparse"):
                    contestants[f"dolda LDA {sweep}"] = contestant(sweep, lambda s=sweep: (
                        time_dolda(corpus, K, n, n_iter, sampler=s)))
            if tomotopy is not None:
                contestants["tomotopy LDAModel"] = contestant("tomotopy", lambda: time_tomotopy(
                    docs, K, n, n_iter))
            times = run.interleave(contestants, n_rounds, warmup=1)
            ref = "tomotopy LDAModel" if tomotopy is not None else "dolda LDA"
            summary = harness.summarise(times, ref)
            row = {"K": K, "threads": n, "iterations_timed": n_iter, "reference": ref,
                   "contestants": summary, "dolda": last["dolda"]}
            if tomotopy is not None:
                row["tomotopy"] = last["tomotopy"]
                row["ratio_dolda_over_tomotopy"] = summary["dolda LDA"]["speed_ratio"]
            rows.append(row)
            print(f"K={K:5d} threads={n}: dolda {last['dolda']['tokens_per_s']:.3g} tok/s, "
                  f"speed {summary['dolda LDA']['speed_ratio']:.2f}x {ref}", flush=True)
    result = {"corpus": {"name": "simulated (quick)" if args.quick else
                         "20 Newsgroups bydate train", "n_docs": corpus.n_docs,
                         "n_tokens": corpus.n_tokens, "n_words": corpus.n_words,
                         "preprocessing_s": prep_s},
              "alpha": 0.1, "beta": 0.01, "rounds": n_rounds, "numba_compile": compile_info,
              "results": rows}
    lines = [f"D = {corpus.n_docs}, N = {corpus.n_tokens} tokens, V = {corpus.n_words}; "
             f"alpha = 0.1, beta = 0.01; per round each contestant runs {iters} iterations "
             f"({args.iters_large} for K >= 1000) from a random start, after one warm-up "
             f"call; {n_rounds} interleaved rounds.", ""]
    for r in rows:
        lines += [f"## K = {r['K']}, {r['threads']} thread(s), dolda sampler "
                  f"`{r['dolda']['sampler']}`", ""]
        lines += harness.table(r["contestants"], unit="s / iteration") + [""]
    if compile_info:
        lines += [f"numba compile (import + tiny fit, both samplers): first run "
                  f"{compile_info['first_run_s']:.1f} s, with the cache "
                  f"{compile_info['cached_s']:.1f} s."]
    run.finish(result, lines, "LDA throughput: dolda vs tomotopy")
    return result


if __name__ == "__main__":
    main()
