"""Prediction throughput: topic proportions of new documents with Phi fixed (paper section 3.3).

Corpus: 20 Newsgroups "bydate"; the vocabulary (:class:`dolda.design.corpus.Vocabulary`, stop list,
rarest 1% of tokens removed) is fitted on the training split, the test split is predicted.
Phi: one topic model per K trained on the training split by tomotopy's ``LDAModel``
(alpha = 0.1, beta = 0.01, ``--train-iters`` iterations), so that dolda and tomotopy predict
with the *same* topics; its topic-word distributions (K x V) are dolda's ``phi``.

Contenders, each with ``--sweeps`` sweeps (dolda: burn-in half of them, as ``DOLDA.transform``):

* ``today``: the code path before this benchmark was written: the whole ``phi`` copied
  word-major (``word_major(phi)``) and the dense O(K) kernel averaging the drawn counts
  (frozen in ``_predict_baseline.py``);
* ``auto``: :func:`predict_topic_proportions`, the default kernel (sparse from
  ``SPARSE_PREDICT_MIN_TOPICS`` topics on) and estimator (Rao-Blackwellised); ``auto f32``
  the same with Phi in float32, the dtype of a fitted ``DOLDA.phi_`` (what
  ``DOLDA.transform`` / ``predict`` pass);
* ``tomotopy``: ``LDAModel.infer(docs, iterations=sweeps, workers=threads)``.

Two workloads: the whole test split in one call (``batch``), and ``--single`` documents
predicted one call each (``single``, the service's pattern).  Rounds are interleaved
(every contender once per round, in turn); the tables give the median and the minimum
seconds and documents/s from them, and ratios of medians.

Usage::

    python benchmarks/bench_predict.py [--data ../shared/data] [--topics 100 1000]
        [--threads 2] [--rounds 3] [--sweeps 50] [--train-iters 100] [--single 200]
        [--docs 0]

Writes ``benchmarks/results/predict.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ALPHA, BETA = 0.1, 0.01


def train_topics(docs, words, K, threads, iters, cache):
    """``(phi (K, V) in dolda's word order, tomotopy model)`` trained on ``docs``."""
    import tomotopy as tp

    model = tp.LDAModel(k=K, alpha=ALPHA, eta=BETA, seed=1)
    for doc in docs:
        if doc:
            model.add_doc(doc)
    path = cache / f"tomotopy_20ng_K{K}_it{iters}.bin"
    if path.exists():
        model = tp.LDAModel.load(str(path))
    else:
        model.train(iters, workers=threads)
        model.save(str(path))
    column = {w: j for j, w in enumerate(model.used_vocabs)}
    order = np.array([column[w] for w in words])
    phi = np.stack([np.asarray(model.get_topic_word_dist(k), np.float64) for k in range(K)])
    phi = phi[:, order]
    return phi / phi.sum(axis=1, keepdims=True), model


def newsgroups_sample(data_dir, n_docs=0, seed=1):
    """20 Newsgroups as these benchmarks use it: the vocabulary fitted on the training split,
    ``n_docs`` test documents drawn at random (0: all), in their order.

    Returns ``(words, train_docs, tokens, doc_ptr)``: the vocabulary's words (object array),
    the training documents as word lists (for tomotopy), the sample's token ids (int32) and
    its CSR pointers (int64).
    """
    from dolda.design.corpus import Vocabulary
    from dolda.datasets import load_20newsgroups

    train = load_20newsgroups(data_dir, "train")
    test = load_20newsgroups(data_dir, "test")
    vocab = Vocabulary()
    corpus = vocab.fit_transform(train.text.tolist())
    new = vocab.transform(test.text.tolist())
    words = np.asarray(corpus.words, dtype=object)
    tokens, doc_ptr = new.tokens, new.doc_ptr
    if n_docs:
        keep = np.sort(np.random.default_rng(seed).choice(new.n_docs, size=min(n_docs,
                                                          new.n_docs), replace=False))
        parts = [tokens[doc_ptr[d]:doc_ptr[d + 1]] for d in keep]
        tokens = np.concatenate(parts).astype(np.int32)
        doc_ptr = np.concatenate([[0], np.cumsum([len(p) for p in parts])]).astype(np.int64)
    train_docs = [list(words[corpus.tokens[a:b]])
                  for a, b in zip(corpus.doc_ptr[:-1], corpus.doc_ptr[1:])]
    return words, train_docs, tokens, doc_ptr


def run_today(tokens, doc_ptr, phi, sweeps, seed):
    from _predict_baseline import predict_today

    return predict_today(tokens, doc_ptr, phi, ALPHA, sweeps, sweeps // 2, seed)


def run_dolda(tokens, doc_ptr, phi, sweeps, seed, method):
    from dolda.sampler.predict import predict_topic_proportions

    return predict_topic_proportions(tokens, doc_ptr, phi, ALPHA, sweeps, sweeps // 2, seed,
                                     method=method)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sweeps", type=int, default=50)
    parser.add_argument("--train-iters", type=int, default=100)
    parser.add_argument("--docs", type=int, default=0,
                        help="predict a fixed random subset of this many test documents "
                             "(0: all)")
    parser.add_argument("--single", type=int, default=200,
                        help="documents predicted one call each (0: skip)")
    parser.add_argument("--no-tomotopy", action="store_true",
                        help="time dolda only (tomotopy's infer is slow on a loaded machine)")
    parser.add_argument("--append", action="store_true",
                        help="keep the rows of other K from an existing predict.json")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/dolda_bench_predict"))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    args.cache.mkdir(parents=True, exist_ok=True)

    import tomotopy as tp

    from dolda.sampler.predict import SPARSE_PREDICT_MIN_TOPICS
    from dolda.sampler.threads import using_threads

    words, train_docs, tokens, doc_ptr = newsgroups_sample(args.data, args.docs)

    def as_words(tokens, doc_ptr):
        return [list(words[tokens[a:b]]) for a, b in zip(doc_ptr[:-1], doc_ptr[1:])]

    test_docs = as_words(tokens, doc_ptr)
    n_docs = len(doc_ptr) - 1
    single = np.random.default_rng(0).choice(n_docs, size=min(args.single, n_docs),
                                             replace=False)
    load_before = os.getloadavg()
    rows = []
    for K in args.topics:
        print(f"K={K}: training / loading the topics", flush=True)
        phi, tm = train_topics(train_docs, list(words), K, args.threads, args.train_iters,
                               args.cache)
        phi32 = phi.astype(np.float32)  # the dtype of a fitted DOLDA's phi_
        tdocs = [tm.make_doc(d) for d in test_docs]

        def tomotopy_batch(docs=tdocs):
            tm.infer(docs, iterations=args.sweeps, workers=args.threads)

        def tomotopy_single(idx=single):
            for d in idx:
                tm.infer(tdocs[d], iterations=args.sweeps, workers=args.threads)

        def dolda_single(fn, idx=single):
            for d in idx:
                a, b = doc_ptr[d], doc_ptr[d + 1]
                fn(tokens[a:b], np.array([0, b - a], np.int64))

        contenders = {
            ("batch", "today"): lambda: run_today(tokens, doc_ptr, phi, args.sweeps, 1),
            ("batch", "auto"): lambda: run_dolda(tokens, doc_ptr, phi, args.sweeps, 2, "auto"),
            ("batch", "auto f32"): lambda: run_dolda(tokens, doc_ptr, phi32, args.sweeps, 2,
                                                     "auto"),
            ("batch", "tomotopy"): tomotopy_batch,
        }
        if args.no_tomotopy:
            del contenders[("batch", "tomotopy")]
        if len(single):
            contenders.update({
                ("single", "today"): lambda: dolda_single(
                    lambda t, p: run_today(t, p, phi, args.sweeps, 1)),
                ("single", "auto"): lambda: dolda_single(
                    lambda t, p: run_dolda(t, p, phi, args.sweeps, 1, "auto")),
                ("single", "auto f32"): lambda: dolda_single(
                    lambda t, p: run_dolda(t, p, phi32, args.sweeps, 1, "auto")),
                ("single", "tomotopy"): tomotopy_single,
            })
            if args.no_tomotopy:
                del contenders[("single", "tomotopy")]
        with using_threads(args.threads):
            # compile (or load the numba cache): a batch (parallel kernels) and one document
            # (the serial kernels of small batches)
            for n in (min(40, n_docs), 1):
                for method in ("dense", "sparse"):
                    run_dolda(tokens[:doc_ptr[n]], doc_ptr[:n + 1], phi, 2, 1, method)
                    run_dolda(tokens[:doc_ptr[n]], doc_ptr[:n + 1], phi32, 2, 1, method)
                run_today(tokens[:doc_ptr[n]], doc_ptr[:n + 1], phi, 2, 1)
            times = {key: [] for key in contenders}
            first = {}
            for r in range(args.rounds):
                for key, fn in contenders.items():
                    tic = time.perf_counter()
                    value = fn()
                    times[key].append(time.perf_counter() - tic)
                    first.setdefault(key, value)
                    print(f"K={K} round {r} {key}: {times[key][-1]:.2f} s", flush=True)
        # the kernels agree in law: the mean topic proportions of the batch, dense vs auto
        a, b = first[("batch", "today")].mean(axis=0), first[("batch", "auto")].mean(axis=0)
        for (work, name), secs in times.items():
            docs = n_docs if work == "batch" else len(single)
            med, low = float(np.median(secs)), float(np.min(secs))
            rows.append({"K": K, "workload": work, "contender": name, "seconds": secs,
                         "median_seconds": med, "min_seconds": low, "documents": docs,
                         "docs_per_s_median": docs / med, "docs_per_s_best": docs / low,
                         "max_abs_mean_theta_diff_today_vs_auto": float(np.abs(a - b).max())})
    result = {
        "benchmark": "bench_predict.py",
        "commit": _commit(),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "load_before": load_before, "load_after": os.getloadavg()},
        "settings": {"threads": args.threads, "rounds": args.rounds, "sweeps": args.sweeps,
                     "burn_in": args.sweeps // 2, "alpha": ALPHA, "beta": BETA,
                     "train_iters": args.train_iters, "tomotopy": tp.__version__,
                     "sparse_from_topics": SPARSE_PREDICT_MIN_TOPICS,
                     "test_documents": n_docs, "test_tokens": int(len(tokens)),
                     "single_documents": int(len(single))},
        "rows": rows,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "predict.json"
    if args.append and path.exists():  # keep the other K's rows of an earlier run
        old = json.loads(path.read_text())
        result["rows"] = [r for r in old["rows"] if r["K"] not in args.topics] + rows
        result["earlier_runs"] = old.get("earlier_runs", []) + [
            {k: old[k] for k in ("machine", "settings")}]
    path.write_text(json.dumps(result, indent=1) + "\n")
    (args.out / "predict.md").write_text(markdown(result))
    print(markdown(result))


def _commit():
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def markdown(result):
    s = result["settings"]
    lines = [
        "# Prediction throughput (20 Newsgroups test split)",
        "",
        f"`benchmarks/bench_predict.py`: {s['test_documents']} documents "
        f"({s['test_tokens']:,} tokens), {s['sweeps']} sweeps (burn-in {s['burn_in']}), "
        f"{s['threads']} threads, {s['rounds']} interleaved rounds, alpha={s['alpha']}, "
        f"Phi from tomotopy {s['tomotopy']} ({s['train_iters']} iterations on the training "
        f"split); `single`: {s['single_documents']} documents, one call each.  Load average "
        f"before/after: {result['machine']['load_before'][0]:.1f} / "
        f"{result['machine']['load_after'][0]:.1f} on {result['machine']['cpus']} cores.",
        "",
        "| K | workload | contender | median s | min s | docs/s (median) | docs/s (best) "
        "| vs today | vs tomotopy |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    by = {(r["K"], r["workload"], r["contender"]): r for r in result["rows"]}
    for (K, work, name), r in by.items():
        today = by.get((K, work, "today"))
        tomo = by.get((K, work, "tomotopy"))
        ratio = lambda ref: (f"{ref['median_seconds'] / r['median_seconds']:.2f}x"  # noqa: E731
                             if ref else "")
        lines.append(f"| {K} | {work} | {name} | {r['median_seconds']:.3g} | "
                     f"{r['min_seconds']:.3g} | {r['docs_per_s_median']:,.0f} | "
                     f"{r['docs_per_s_best']:,.0f} | {ratio(today)} | {ratio(tomo)} |")
    lines += ["", "Ratios: median documents/s of the row over the reference's (higher is "
              "faster).  `today` is the dense kernel reading a word-major copy of the whole "
              "Phi made on every call (the code path before the sparse kernel, frozen in "
              "`benchmarks/_predict_baseline.py`); `auto f32` is `auto` with Phi in float32, "
              "as a fitted DOLDA's `phi_`."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
