"""LDA throughput: dolda's partially collapsed sampler beside tomotopy's LDAModel.

Corpus: the 20 Newsgroups "bydate" training split (``train.jsonl.gz``, one JSON
object with a ``text`` field per line), preprocessed once by
:class:`dolda.design.corpus.Vocabulary` (stop list, rarest 1% of tokens removed); both
libraries get exactly the same tokens.  For every K and thread count both are
warmed up (numba compiled / tomotopy initialised), then timed on the same
number of full iterations (z-sweep + Phi draw for dolda; one ``train`` step for
tomotopy).  Figures: tokens per second per full iteration.

Usage::

    python benchmarks/bench_lda.py [--data ../shared/data] [--iters 20] [--topics 20 100 1000]

Writes ``benchmarks/results/lda_throughput.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


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

    run(2)  # warm-up: compile (or load the cache), touch memory
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
    model.train(2, workers=n_threads)  # warm-up
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--iters-large", type=int, default=5,
                        help="timed iterations for K >= 1000")
    parser.add_argument("--topics", type=int, nargs="+", default=[20, 100, 1000])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--also-dense", action="store_true",
                        help="also time the dense sweep where auto picks sparse (and vice versa)")
    args = parser.parse_args(argv)

    from dolda.design.corpus import Vocabulary

    compile_info = compile_times()
    texts = load_texts(args.data)
    t0 = time.perf_counter()
    corpus = Vocabulary().fit_transform(texts)
    prep_s = time.perf_counter() - t0
    words = np.asarray(corpus.words, dtype=object)
    docs = [list(words[corpus.tokens[a:b]]) for a, b in zip(corpus.doc_ptr[:-1], corpus.doc_ptr[1:])]
    rows = []
    load_before = os.getloadavg()
    for K in args.topics:
        iters = args.iters_large if K >= 1000 else args.iters
        for n in args.threads:
            dol = time_dolda(corpus, K, n, iters)
            row = {"K": K, "threads": n, "dolda": dol}
            if args.also_dense:
                other = "dense" if dol["sampler"] == "sparse" else "sparse"
                row["dolda_" + other] = time_dolda(corpus, K, n, iters, sampler=other)
            tomo = time_tomotopy(docs, K, n, iters)
            row["iterations_timed"] = iters
            row["tomotopy"] = tomo
            row["ratio_dolda_over_tomotopy"] = dol["tokens_per_s"] / tomo["tokens_per_s"]
            row["cpu_ratio_dolda_over_tomotopy"] = (dol["tokens_per_cpu_s"]
                                                    / tomo["tokens_per_cpu_s"])
            rows.append(row)
            print(f"K={K:5d} threads={n}: dolda {dol['tokens_per_s']:.3g} tok/s "
                  f"({dol['sampler']}: z {dol['z_sweep_s_per_iter']:.3f}s, "
                  f"phi {dol['phi_draw_s_per_iter']:.3f}s), tomotopy "
                  f"{tomo['tokens_per_s']:.3g} tok/s, ratio {row['ratio_dolda_over_tomotopy']:.2f}"
                  f" (per CPU second {row['cpu_ratio_dolda_over_tomotopy']:.2f})",
                  flush=True)
    result = {
        "corpus": {"name": "20 Newsgroups bydate train", "n_docs": corpus.n_docs,
                   "n_tokens": corpus.n_tokens, "n_words": corpus.n_words,
                   "preprocessing_s": prep_s},
        "iterations_timed": {"K<1000": args.iters, "K>=1000": args.iters_large},
        "alpha": 0.1, "beta": 0.01,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(),
                    "load_average_before": load_before, "load_average_after": os.getloadavg()},
        "numba_compile": compile_info,
        "results": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lda_throughput.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# LDA throughput: dolda vs tomotopy (20 Newsgroups train)", "",
             f"D = {corpus.n_docs}, N = {corpus.n_tokens} tokens, V = {corpus.n_words}; "
             f"alpha = 0.1, beta = 0.01; {args.iters} timed iterations ({args.iters_large} for "
             f"K >= 1000) after a 2-iteration warm-up, from a random start; "
             f"{os.cpu_count()} cores, load average {load_before[0]:.1f} before the run "
             "(other jobs shared the machine: compare the ratios, measured side by side, "
             "more than the absolute figures).", "",
             "| K | threads | dolda sampler | dolda tok/s (z / Phi s per it) | tomotopy tok/s "
             "| ratio (wall) | ratio (per CPU s) |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        d = r["dolda"]
        lines.append(f"| {r['K']} | {r['threads']} | {d['sampler']} | "
                     f"{d['tokens_per_s']:.3g} ({d['z_sweep_s_per_iter']:.2f} / "
                     f"{d['phi_draw_s_per_iter']:.2f}) | {r['tomotopy']['tokens_per_s']:.3g} | "
                     f"{r['ratio_dolda_over_tomotopy']:.2f} | "
                     f"{r['cpu_ratio_dolda_over_tomotopy']:.2f} |")
    if args.also_dense:
        lines += ["", "Other z-sweep (for the `auto` threshold):", "",
                  "| K | threads | sampler | tok/s | z-sweep s per it |", "|---|---|---|---|---|"]
        for r in rows:
            for key in ("dolda_dense", "dolda_sparse"):
                if key in r:
                    o = r[key]
                    lines.append(f"| {r['K']} | {r['threads']} | {o['sampler']} | "
                                 f"{o['tokens_per_s']:.3g} | {o['z_sweep_s_per_iter']:.2f} |")
    lines += ["", f"numba compile (import + tiny fit, both samplers): first run "
              f"{compile_info['first_run_s']:.1f} s, with the cache {compile_info['cached_s']:.1f} s.",
              "", "Reproduce: `python benchmarks/bench_lda.py --iters "
              f"{args.iters} --iters-large {args.iters_large}"
              + (" --also-dense" if args.also_dense else "") + "`"]
    (args.out / "lda_throughput.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
