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

When tomotopy is not importable its contestants are skipped (a note in the result
says so) and the ratios are to ``DOLDA defaults``.

``--memory`` instead measures, in a fresh process each, the peak resident set size
(``resource.getrusage``) of ``fit`` on the train split and ``predict`` on the test split,
at the defaults and with ``n_words=0`` beside them (``dolda_memory.json`` / ``.md``).

Usage::

    python -m benchmarks.bench_dolda [--topics 100 1000] [--warmup 200 80] [--threads 2]
        [--rounds 5] [--round-iters 2] [--grid] [--word-priors] [--no-slda]
    python -m benchmarks.bench_dolda --memory [--topics 100 1000] [--memory-iters 20]
    python -m benchmarks.bench_dolda --quick          # a smoke run on a simulated corpus

Writes ``benchmarks/results/dolda_throughput.json`` and ``.md``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np

from benchmarks import harness

ROOT = harness.ROOT
ALPHA, BETA = 0.1, 0.01


def load_corpus(data, max_docs=None, quick=False):
    import pandas as pd

    from dolda.design.corpus import Vocabulary
    from dolda.datasets import load_20newsgroups

    if quick:
        texts, y, _ = harness.tiny_corpus(n_docs=150, n_topics=4, vocab_size=300)
        train = pd.DataFrame({"text": texts, "label": y})
    else:
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
    (:func:`dolda.models.dolda.design_stage.chain_prior`: the Horseshoe with the slab on the
    words, the Gaussian words of ``word_prior``).
    """

    def __init__(self, corpus, y, K, threads, seed=1, **params):
        from dolda import DOLDA
        from dolda.backends import make_chain
        from dolda.utils.labels import encode_labels
        from dolda.sampler import gibbs_iteration as dolda_chain
        from dolda.models.dolda.design_stage import chain_prior
        from dolda.sampler.threads import using_threads

        params = {"n_words": 0, **params}
        from dolda.models.dolda.options import from_flat

        model = from_flat(DOLDA, dict(n_topics=K, alpha=ALPHA, beta=BETA, random_state=seed,
                                      n_jobs=threads, progress=False, **params))
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


MEMORY_CODE = """
import resource, sys
from dolda import DOLDA
K, n_iter, threads, n_words, quick, data = {K}, {n_iter}, {threads}, {n_words!r}, {quick}, {data!r}
if quick:
    from dolda.datasets import simulate
    sim = simulate(n_docs=200, n_topics=4, vocab_size=300, doc_length=40, random_state=0)
    tr_x, tr_y, te_x, te_y = sim.texts[:150], sim.y[:150], sim.texts[150:], sim.y[150:]
else:
    from dolda.datasets import load_20newsgroups
    tr = load_20newsgroups(data, "train"); te = load_20newsgroups(data, "test")
    tr_x, tr_y, te_x, te_y = tr.text.tolist(), tr.label, te.text.tolist(), te.label.to_numpy()
m = DOLDA(n_topics=K, n_iter=n_iter, random_state=1, n_jobs=threads, progress=False)
m.set_params(alpha={alpha}, beta={beta}, prediction__sweeps=10, words__n=n_words)
m.fit(tr_x, tr_y)
acc = float((m.predict(te_x) == te_y).mean())
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, acc)
"""


def measure_memory(data, K, threads, n_iter, n_words="auto", quick=False):
    """Peak RSS (bytes) of fit on train + predict on test, in a fresh process."""
    code = MEMORY_CODE.format(K=K, n_iter=n_iter, threads=threads, n_words=n_words,
                              quick=quick, data=str(data), alpha=ALPHA, beta=BETA)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             p for p in (str(ROOT / "src"), os.environ.get("PYTHONPATH"))
                             if p)})
    rss, acc = out.stdout.split()[-2:]
    return {"peak_rss_bytes": int(rss), "n_iter": n_iter, "n_words": n_words,
            "test_accuracy": float(acc)}


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--topics", type=int, nargs="+", default=None,
                        help="default 100 1000 (4 with --quick)")
    parser.add_argument("--warmup", type=int, nargs="+", default=None,
                        help="iterations before the rounds, one per --topics (or one for all);"
                             " default 200 80")
    parser.add_argument("--max-docs", type=int, default=None,
                        help="a random subset of this many training documents (small runs)")
    parser.add_argument("--grid", action="store_true",
                        help="also the topics-only phi/z sampler variants")
    parser.add_argument("--round-iters", type=int, default=2)
    parser.add_argument("--no-slda", action="store_true", help="skip tomotopy's SLDAModel")
    parser.add_argument("--word-priors", action="store_true",
                        help="also time DOLDA(word_prior='both') (the default words plus every "
                             "word's tf-idf under a Gaussian)")
    parser.add_argument("--memory", action="store_true",
                        help="peak RSS of fit + predict instead (dolda_memory.*)")
    parser.add_argument("--memory-iters", type=int, default=20)
    args = parser.parse_args(argv)
    topics = args.topics or ([4] if args.quick else [100, 1000])
    warmups = args.warmup or ([2] if args.quick else [200, 80])
    warmups = warmups * len(topics) if len(warmups) == 1 else warmups
    if len(warmups) != len(topics):
        parser.error("--warmup takes one value, or one per --topics")
    if args.memory:
        return memory(args, topics)
    run = harness.start("dolda_throughput", args, argv)
    n_rounds = harness.rounds(args, full=5, quick=2)
    from dolda import DOLDA

    tomotopy = harness.optional("tomotopy")
    if tomotopy is None:
        run.note("tomotopy is not importable: its contestants are skipped and the ratios "
                 "are to DOLDA defaults")
    train, vocab, corpus = load_corpus(args.data, args.max_docs, args.quick)
    y = train.label.to_numpy()
    labels = np.unique(y, return_inverse=True)[1]
    words = np.asarray(corpus.words, dtype=object)
    docs = [list(words[corpus.tokens[a:b]])
            for a, b in zip(corpus.doc_ptr[:-1], corpus.doc_ptr[1:])]
    n_tokens = corpus.n_tokens
    rows = []
    for K, warmup in zip(topics, warmups):
        # the defaults first: the model users get, then what is measured beside it
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
        reference = "DOLDA defaults"
        if tomotopy is not None:
            reference = "tomotopy LDAModel"
            contestants[reference] = TomotopyContestant(docs, labels, K, args.threads, False)
            if not args.no_slda:
                contestants["tomotopy SLDAModel"] = TomotopyContestant(docs, labels, K,
                                                                       args.threads, True)
        for c in contestants.values():
            c.run(warmup)
        times = run.interleave({name: (lambda c=c: c.run(args.round_iters))
                                for name, c in contestants.items()}, n_rounds, warmup=0)
        summary = harness.summarise(times, reference)
        for name, c in contestants.items():
            s = summary[name]
            s["median_tokens_per_s"] = n_tokens / s["median_seconds"]
            s["best_tokens_per_s"] = n_tokens / s["best_seconds"]
            s["params"] = getattr(c, "params", {"optim_interval": 0})
        rows.append({"K": K, "threads": args.threads, "rounds": n_rounds, "warmup": warmup,
                     "iterations_per_round": args.round_iters, "dolda_defaults": default,
                     "reference": reference, "contestants": summary})
        for name, r in summary.items():
            print(f"K={K} {name:20s} median {r['median_tokens_per_s']:.3g} tok/s, speed "
                  f"{r['speed_ratio']:.2f}x {reference}", flush=True)
        del contestants
    result = {"corpus": {"name": "simulated (quick)" if args.quick else
                         "20 Newsgroups bydate train", "n_docs": corpus.n_docs,
                         "n_tokens": n_tokens, "n_words": corpus.n_words,
                         "n_classes": int(len(set(y)))},
              "alpha": ALPHA, "beta": BETA, "warmup_iterations": warmups,
              "max_docs": args.max_docs, "results": rows}
    lines = [f"D = {corpus.n_docs}, N = {n_tokens} tokens, V = {corpus.n_words}, "
             f"L = {result['corpus']['n_classes']} classes ({result['corpus']['name']}); "
             f"alpha = {ALPHA}, beta = {BETA}; {args.threads} threads; "
             f"{'/'.join(map(str, warmups))} warm-up iterations (per K), then {n_rounds} "
             f"interleaved rounds of {args.round_iters} iterations per contestant. A ratio "
             "is seconds per iteration over the reference's in the same round.", ""]
    for r in rows:
        lines += [f"## K = {r['K']} (reference: {r['reference']})", ""]
        lines += harness.table(r["contestants"], unit="ms / iteration", scale=1e3)
        lines += [""] + [f"- {name}: {', '.join(f'{k}={v}' for k, v in c['params'].items())}, "
                         f"median {c['median_tokens_per_s']:.3g} tokens/s"
                         for name, c in r["contestants"].items()] + [""]
    lines += ["Targets: DOLDA defaults >= 0.8x tomotopy LDAModel's speed at K = 100, >= 1.0x "
              "at K = 1000; topics only >= 1.0x at both."]
    run.finish(result, lines, "A full DOLDA iteration beside tomotopy")
    return result


def memory(args, topics):
    """Peak RSS of fit + predict per K, the defaults and topics only, to dolda_memory.*."""
    run = harness.start("dolda_memory", args)
    n_iter = 3 if args.quick else args.memory_iters
    rows = []
    for K in topics:
        for label, n_words in (("defaults", "auto"), ("topics only", 0)):
            m = measure_memory(args.data, K, args.threads, n_iter, n_words, args.quick)
            rows.append({"K": K, "model": label, **m})
            print(f"K={K} {label}: peak RSS {m['peak_rss_bytes'] / 1e9:.2f} GB", flush=True)
    lines = [f"`DOLDA(n_topics=K, n_iter={n_iter})` fitted on "
             f"{'a simulated corpus' if args.quick else 'the 20 Newsgroups train split'} "
             "(the calibration map's pass included), then `predict` on the test part, in a "
             f"fresh process each; peak RSS from `getrusage`; {args.threads} threads.", "",
             "| K | model | peak RSS (GB) | test accuracy |", "|---|---|---|---|"]
    lines += [f"| {r['K']} | {r['model']} | {r['peak_rss_bytes'] / 1e9:.3f} | "
              f"{r['test_accuracy']:.3f} |" for r in rows]
    lines += ["", "Target: <= 1 GB at K = 1000."]
    run.finish({"n_iter": n_iter, "threads": args.threads, "rows": rows}, lines,
               "Peak memory of DOLDA fit + predict")
    return rows


if __name__ == "__main__":
    main()
