"""Tokens per second of a full DOLDA iteration beside tomotopy, interleaved in one run.

Corpus: the 20 Newsgroups "bydate" training split, preprocessed once by
:class:`dolda.design.corpus.Vocabulary` (stop list, rarest 1% of tokens removed); every
sampler gets exactly the same tokens, alpha = 0.1, beta = 0.01.

Contestants, each a live chain that every round continues by ``--round-iters``
iterations (so the rounds of all contestants alternate in time and share the
machine's load alike), after ``--warmup`` iterations each (the working regime: the
issue's 200 at K = 100 and 80 at K = 1000, one value per ``--topics``):

* ``DOLDA defaults`` -- the model users get: ``DOLDA(n_topics=K)``'s word covariates
  (``n_words="auto"``: 2,000-5,000 log-count words) and its default samplers (the
  blocked-Gibbs eta-step, :mod:`dolda.sampler.word_step`), built as ``fit`` builds it;
* ``DOLDA topics only`` -- the same with ``n_words=0`` (the paper's model);
* with ``--grid``, ``DOLDA phi=... z=...`` (topics only) -- a full iteration of the joint sampler (a-step,
  eta, Horseshoe scales, supervised z-sweep, Phi draw and both log-likelihood
  parts) with the Pólya-urn or the exact Dirichlet Phi step and the MH or the
  exact Gibbs z-kernel (the latter at K <= 200 only), run through the chain
  the estimator runs (:func:`dolda.backends.make_chain`), timed around every
  ``step``;
* tomotopy ``LDAModel`` with ``optim_interval=0`` (no alpha re-estimation, so
  it does the same work as an unsupervised iteration: z-sweep and counts);
* tomotopy ``SLDAModel`` (one binary response per class) for reference.

Per contestant the table gives the median and the best (minimum time) round,
and the ratios DOLDA / tomotopy LDAModel of both, from the same run.  The
machine is shared: the load average is recorded before and after.

``--memory`` runs, in a fresh process each, ``DOLDA(n_topics=K, n_words=0).fit`` on the
train split and ``predict`` on the test split and records the peak resident
set size (``resource.getrusage``).

Usage::

    python benchmarks/bench_dolda.py [--data ../shared/data] [--topics 100 1000]
        [--warmup 200 80] [--threads 2] [--rounds 5] [--round-iters 2] [--memory]
    # a small run (shared machine): a subset of the documents, small K, few warm-up iterations
    python benchmarks/bench_dolda.py --topics 20 --warmup 5 --max-docs 1000 --rounds 3 \
        --no-slda --name dolda_throughput_small

Writes ``benchmarks/results/<name>.json`` and ``.md`` (``--name``, default
``dolda_throughput``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ALPHA, BETA = 0.1, 0.01


def load_corpus(data, max_docs=None):
    from dolda.design.corpus import Vocabulary
    from dolda.datasets import load_20newsgroups

    train = load_20newsgroups(data, "train")
    if max_docs is not None and max_docs < len(train):  # a fixed random subset (small runs)
        keep = np.sort(np.random.default_rng(0).choice(len(train), max_docs, replace=False))
        train = train.iloc[keep].reset_index(drop=True)
    vocab = Vocabulary()
    corpus = vocab.fit_transform(train.text.tolist())
    return train, vocab, corpus


class DOLDAContestant:
    """A live DOLDA chain built as :meth:`dolda.DOLDA.fit` builds it.

    ``params`` are DOLDA parameters (``n_words``, ``eta_sampler``, ``z_sampler``, ...);
    ``n_words=0`` is the topics-only model, the default ``n_words="auto"`` the model users
    get: ``[1, words]`` chosen, transformed and laid out by the estimator's own
    input methods (``_add_word_features``, ``_design``) and its prior
    (:func:`dolda.models.dolda.inputs.chain_prior`: the Horseshoe with the slab on the
    words, the Gaussian words of ``word_prior``).
    """

    def __init__(self, corpus, y, K, threads, seed=1, **params):
        from dolda import DOLDA
        from dolda.backends import make_chain
        from dolda.utils.labels import encode_labels
        from dolda.sampler import chain as dolda_chain
        from dolda.models.dolda.inputs import chain_prior
        from dolda.sampler.threads import using_threads

        params = {"n_words": 0, **params}
        model = DOLDA(n_topics=K, alpha=ALPHA, beta=BETA, random_state=seed, n_jobs=threads,
                      progress=False, **params)
        p = model._check_params()
        classes, y_index = encode_labels(y, corpus.n_docs)
        Xd, names = model._covariates(None, corpus.n_docs, fit=True)
        Xd, names = model._add_word_features(corpus, Xd, names, p, y_index)
        n_word_columns = Xd.shape[1] - 1
        Xd, eta_sampler = model._design(Xd, K, p, False)
        self.params = {"z_sampler": model._resolved_z_sampler(K),
                       "phi_sampler": model.phi_sampler, "loglik_every": model.loglik_every,
                       "n_words": n_word_columns, "eta_sampler": eta_sampler,
                       "word_prior": model.word_prior}
        self.n_x = Xd.shape[1]
        wf = model.word_features_
        prior, _ = chain_prior(model, p, self.n_x, n_word_columns, K,
                               0 if wf is None else wf.n_dense_)
        self.data = dolda_chain.TopicData(corpus.tokens, corpus.doc_ptr, corpus.n_words, Xd,
                                          y_index, len(classes))
        config = dolda_chain.DOLDAConfig(K, ALPHA, BETA, prior, self.params["z_sampler"],
                                         threads, eta_sampler, self.params["phi_sampler"],
                                         self.params["loglik_every"], n_word_columns)
        self.threads = threads
        self._using = using_threads
        with using_threads(threads):
            self.state = dolda_chain.init_state(seed, self.data, config)
        self.chain = make_chain("local", seed, self.state, self.data, config)
        self.it = 0

    def run(self, n, record=None):
        """``n`` iterations; seconds per iteration.  ``record(state, info, seconds)`` after
        each iteration (outside the timing) if given."""
        total = 0.0
        with self._using(self.threads):
            for _ in range(n):
                tic = time.perf_counter()
                self.state, info = self.chain.step(self.it)
                sec = time.perf_counter() - tic
                total += sec
                self.it += 1
                if record is not None:
                    record(self.state, info, sec)
            return total / n


class TomotopyContestant:
    def __init__(self, docs, labels, K, threads, supervised):
        import tomotopy as tp

        if supervised:
            n_classes = int(labels.max()) + 1
            self.model = tp.SLDAModel(k=K, vars="b" * n_classes, alpha=ALPHA, eta=BETA, seed=1)
            for doc, lab in zip(docs, labels):
                if doc:
                    self.model.add_doc(doc, y=[float(lab == c) for c in range(n_classes)])
        else:
            self.model = tp.LDAModel(k=K, alpha=ALPHA, eta=BETA, seed=1)
            for doc in docs:
                if doc:
                    self.model.add_doc(doc)
        self.model.optim_interval = 0
        self.threads = threads
        self.model.train(0, workers=threads)  # initialise

    def run(self, n):
        tic = time.perf_counter()
        self.model.train(n, workers=self.threads)
        return (time.perf_counter() - tic) / n


def measure_memory(data, K, threads, n_iter, src=ROOT / "src"):
    """Peak RSS (bytes) of fit on train + predict on test, in a fresh process.

    ``src``: the package source to import (another checkout's ``src`` for a before/after).
    """
    code = f"""
import resource, sys
sys.path.insert(0, {str(src)!r})
from dolda import DOLDA
from dolda.datasets import load_20newsgroups
tr = load_20newsgroups({str(data)!r}, "train"); te = load_20newsgroups({str(data)!r}, "test")
m = DOLDA(n_topics={K}, alpha={ALPHA}, beta={BETA}, n_iter={n_iter}, random_state=1,
          n_jobs={threads}, progress=False, predict_sweeps=10, n_words=0).fit(tr.text.tolist(), tr.label)
acc = float((m.predict(te.text.tolist()) == te.label.to_numpy()).mean())
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, acc)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(src)})
    rss, acc = out.stdout.split()[-2:]
    return {"peak_rss_bytes": int(rss), "n_iter": n_iter, "test_accuracy": float(acc)}


def summarise(times, n_tokens):
    t = np.asarray(times)
    return {"seconds_per_iter_rounds": t.tolist(), "median_tokens_per_s": n_tokens / np.median(t),
            "best_tokens_per_s": n_tokens / t.min()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, nargs="+", default=[200, 80],
                        help="iterations before the rounds, one per --topics (or one for all)")
    parser.add_argument("--max-docs", type=int, default=None,
                        help="a random subset of this many training documents (small runs)")
    parser.add_argument("--grid", action="store_true",
                        help="also the topics-only phi/z sampler variants")
    parser.add_argument("--name", default="dolda_throughput", help="result file name")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--round-iters", type=int, default=2)
    parser.add_argument("--no-slda", action="store_true", help="skip tomotopy's SLDAModel")
    parser.add_argument("--word-priors", action="store_true",
                        help="also time DOLDA(word_prior='both') (the default words plus every "
                             "word's tf-idf under a Gaussian)")
    parser.add_argument("--memory", action="store_true", help="also measure peak RSS")
    parser.add_argument("--memory-iters", type=int, default=20)
    parser.add_argument("--memory-only", action="store_true",
                        help="only the peak RSS, written to dolda_memory.{json,md} (the "
                             "throughput files are left alone)")
    parser.add_argument("--memory-baseline", type=Path, default=None,
                        help="also measure this package source (e.g. ../main/src), "
                             "alternating with this one, for a before/after")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)

    if args.memory_only:
        return memory_only(args)
    from dolda import DOLDA

    warmups = args.warmup * len(args.topics) if len(args.warmup) == 1 else args.warmup
    if len(warmups) != len(args.topics):
        parser.error("--warmup takes one value, or one per --topics")
    train, vocab, corpus = load_corpus(args.data, args.max_docs)
    y = train.label.to_numpy()
    labels = np.unique(y, return_inverse=True)[1]
    words = np.asarray(corpus.words, dtype=object)
    docs = [list(words[corpus.tokens[a:b]])
            for a, b in zip(corpus.doc_ptr[:-1], corpus.doc_ptr[1:])]
    n_tokens = corpus.n_tokens
    load_before = os.getloadavg()
    rows = []
    for K, warmup in zip(args.topics, warmups):
        contestants = {
            "DOLDA defaults": DOLDAContestant(corpus, y, K, args.threads, n_words="auto"),
            "DOLDA topics only": DOLDAContestant(corpus, y, K, args.threads, n_words=0)}
        if args.word_priors:
            contestants["DOLDA word_prior=both"] = DOLDAContestant(
                corpus, y, K, args.threads, n_words="auto", word_prior="both")
        for phi_sampler, z_sampler in (("polya", "mh"), ("exact", "mh"), ("exact", "exact")):
            if not args.grid or (z_sampler == "exact" and K > 200):
                continue  # O(K) per token: not a contender at large K
            contestants[f"DOLDA phi={phi_sampler} z={z_sampler}"] = DOLDAContestant(
                corpus, y, K, args.threads, phi_sampler=phi_sampler, z_sampler=z_sampler)
        default = {"z_sampler": DOLDA()._resolved_z_sampler(K),
                   "phi_sampler": DOLDA().phi_sampler}
        contestants["tomotopy LDAModel"] = TomotopyContestant(docs, labels, K, args.threads,
                                                              False)
        if not args.no_slda:
            contestants["tomotopy SLDAModel"] = TomotopyContestant(docs, labels, K,
                                                                   args.threads, True)
        for c in contestants.values():
            c.run(warmup)
        times = {name: [] for name in contestants}
        for _ in range(args.rounds):
            for name, c in contestants.items():
                times[name].append(c.run(args.round_iters))
        row = {"K": K, "threads": args.threads, "rounds": args.rounds, "warmup": warmup,
               "iterations_per_round": args.round_iters,
               "dolda_defaults": default,
               "contestants": {name: summarise(t, n_tokens) for name, t in times.items()}}
        for name, c in contestants.items():
            if isinstance(c, DOLDAContestant):
                row["contestants"][name]["params"] = c.params
        ref = row["contestants"]["tomotopy LDAModel"]
        for name, r in row["contestants"].items():
            r["median_over_tomotopy_lda"] = r["median_tokens_per_s"] / ref["median_tokens_per_s"]
            r["best_over_tomotopy_lda"] = r["best_tokens_per_s"] / ref["best_tokens_per_s"]
        rows.append(row)
        for name, r in row["contestants"].items():
            print(f"K={K} {name:20s} median {r['median_tokens_per_s']:.3g} tok/s "
                  f"({r['median_over_tomotopy_lda']:.2f}x), best {r['best_tokens_per_s']:.3g} "
                  f"({r['best_over_tomotopy_lda']:.2f}x)", flush=True)
        del contestants
    load_after = os.getloadavg()
    memory = {}
    if args.memory:
        for K in args.topics:
            memory[K] = measure_memory(args.data, K, args.threads, args.memory_iters)
            print(f"K={K} peak RSS fit+predict {memory[K]['peak_rss_bytes'] / 1e9:.2f} GB",
                  flush=True)
    result = {
        "corpus": {"name": "20 Newsgroups bydate train", "n_docs": corpus.n_docs,
                   "n_tokens": n_tokens, "n_words": corpus.n_words,
                   "n_classes": int(len(set(y)))},
        "alpha": ALPHA, "beta": BETA, "warmup_iterations": warmups,
        "max_docs": args.max_docs,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "load_average_before": load_before,
                    "load_average_after": load_after},
        "results": rows, "memory": {str(k): v for k, v in memory.items()},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"{args.name}.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# A full DOLDA iteration beside tomotopy (20 Newsgroups train)", "",
             f"D = {corpus.n_docs}, N = {n_tokens} tokens, V = {corpus.n_words}, "
             f"L = {result['corpus']['n_classes']} classes; alpha = {ALPHA}, beta = {BETA}; "
             f"{args.threads} threads; {'/'.join(map(str, warmups))} warm-up iterations (per "
             f"K), then {args.rounds} "
             f"interleaved rounds of {args.round_iters} iterations per contestant; load "
             f"average {load_before[0]:.1f} before, {load_after[0]:.1f} after (2 cores, shared).",
             "", "| K | contestant | settings | median ms / iteration | median tok/s | "
             "/ tomotopy LDA | best tok/s | / tomotopy LDA |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        for name, c in r["contestants"].items():
            settings = ", ".join(f"{k}={v}" for k, v in c.get("params", {}).items())
            if name.startswith("tomotopy"):
                settings = "optim_interval=0"
            ms = 1e3 * float(np.median(c["seconds_per_iter_rounds"]))
            lines.append(f"| {r['K']} | {name} | {settings} | {ms:.0f} | "
                         f"{c['median_tokens_per_s']:.3g} | "
                         f"{c['median_over_tomotopy_lda']:.2f} | {c['best_tokens_per_s']:.3g} | "
                         f"{c['best_over_tomotopy_lda']:.2f} |")
    if memory:
        lines += ["", "Peak RSS of `DOLDA(n_topics=K, n_words=0).fit` (train, "
                  f"{args.memory_iters} iterations) + `predict` (test) in a fresh process:", ""]
        for k, v in memory.items():
            lines.append(f"- K = {k}: {v['peak_rss_bytes'] / 1e9:.2f} GB "
                         f"(test accuracy {v['test_accuracy']:.3f})")
    lines += ["", "Targets (issue 33): DOLDA defaults >= 0.8x tomotopy LDAModel at K = 100, "
              ">= 1.0x at K = 1000; topics only >= 1.0x at both.", "",
              f"Reproduce: `python benchmarks/bench_dolda.py --topics "
              f"{' '.join(map(str, args.topics))} --warmup {' '.join(map(str, warmups))} "
              f"--threads {args.threads} --rounds {args.rounds} --round-iters {args.round_iters}"
              + (f" --max-docs {args.max_docs}" if args.max_docs else "")
              + (" --grid" if args.grid else "") + (" --no-slda" if args.no_slda else "")
              + (" --word-priors" if args.word_priors else "")
              + (" --memory" if args.memory else "")
              + (f" --name {args.name}" if args.name != "dolda_throughput" else "") + "`"]
    (args.out / f"{args.name}.md").write_text("\n".join(lines) + "\n")


def memory_only(args):
    """Peak RSS of fit + predict per K (and of ``--memory-baseline``), to dolda_memory.*."""
    load_before = os.getloadavg()
    sources = {"this": ROOT / "src"}
    if args.memory_baseline is not None:
        sources = {"baseline": args.memory_baseline.resolve(), **sources}
    rows = []
    for K in args.topics:
        for name, src in sources.items():
            m = measure_memory(args.data, K, args.threads, args.memory_iters, src)
            rows.append({"K": K, "source": name, "path": str(src), **m})
            print(f"K={K} {name}: peak RSS fit+predict {m['peak_rss_bytes'] / 1e9:.2f} GB",
                  flush=True)
    result = {"threads": args.threads, "memory_iters": args.memory_iters,
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                          "load_average_before": load_before,
                          "load_average_after": os.getloadavg()},
              "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "dolda_memory.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = ["# Peak memory of DOLDA fit + predict (20 Newsgroups)", "",
             f"`DOLDA(n_topics=K, n_iter={args.memory_iters}, predict_sweeps=10, n_words=0)` fitted on the "
             "train split (defaults otherwise, so the fit includes the calibration map's "
             "transform of the training documents), then `predict` on the test split, in a "
             f"fresh process each; peak RSS from `getrusage`; {args.threads} threads; load "
             f"average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after.", "",
             "| K | source | peak RSS (GB) | test accuracy |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['K']} | {r['source']} (`{r['path']}`) | "
                     f"{r['peak_rss_bytes'] / 1e9:.2f} | {r['test_accuracy']:.3f} |")
    lines += ["", "Target (issue 13): <= 1 GB at K = 1000.", "",
              f"Reproduce: `python benchmarks/bench_dolda.py --memory-only --topics "
              f"{' '.join(map(str, args.topics))} --threads {args.threads} --memory-iters "
              f"{args.memory_iters}"
              + (f" --memory-baseline {args.memory_baseline}`" if args.memory_baseline
                 else "`")]
    (args.out / "dolda_memory.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
