"""Where a DOLDA iteration spends its time, and where fit + predict peak in memory.

``time`` mode: a live chain on 20 Newsgroups train (as ``bench_dolda.py`` builds it); the
blocks of :func:`dolda.sampler.chain.dolda_step` and :func:`dolda.sampler.shard.topic_step`
are wrapped with timers (by replacing the module attributes they call, so the code timed is
the code that runs), and the seconds per iteration of every block are printed.  Blocks nest
(``topic_step`` contains the sweep and the counts), so the inclusive times of the outer
blocks are listed beside those of their parts.

Both modes fit the model users get (``n_words="auto"``) unless ``--words`` says otherwise
(``--words 0``: topics only).

``memory`` mode: ``DOLDA(n_topics=K, n_words=W).fit`` (``--words``) on train
and ``predict`` on test in this process,
with the resident set size sampled every 10 ms from ``/proc/self/statm`` and attributed to
the stage running at that moment (the chain's start, its iterations, the combination of the
draws, the stacking fit on the training documents, ``predict``).

Usage::

    python benchmarks/profile_dolda.py time --topics 100 1000 [--iters 2] [--warmup 1] [--phi exact]
        [--z exact|mh|cycle]
    python benchmarks/profile_dolda.py memory --topics 1000 [--iters 3]

Prints only (the figures that go into the results come from ``bench_dolda.py``).
"""

from __future__ import annotations

import argparse
import functools
import os
import threading
import time
from collections import defaultdict
from pathlib import Path


ROOT = Path(__file__).resolve().parents[1]


#: The RSS sampler of memory mode (None in time mode): the wrapped blocks set its stage.
SAMPLER = None


def _wrap(module, name, label, table):
    fn = getattr(module, name)

    @functools.wraps(fn)
    def timed(*args, **kwargs):
        tic = time.perf_counter()
        before = SAMPLER.stage if SAMPLER is not None else None
        if SAMPLER is not None:
            SAMPLER.stage = "chain: " + label.strip()
        try:
            return fn(*args, **kwargs)
        finally:
            table[label] += time.perf_counter() - tic
            if SAMPLER is not None:
                SAMPLER.stage = before

    setattr(module, name, timed)


def instrument(table):
    """Timers around the blocks of one DOLDA iteration (module attributes replaced)."""
    from dolda.sampler import chain, cycle, polya, probit, shard, sparse_eta, supervised, word_step
    from dolda.sampler import lda as topic_kernels

    for module, name, label in [
        (shard, "utility_step", "a-step + U^T U (utility_step)"),
        (shard, "topic_regressors", "    U = [X, zbar] (CSR + CSC)"),
        (shard, "draw_utilities", "    utilities a (truncated normals)"),
        (shard, "sparse_cross_products", "    U^T U, U^T a (dense X)"),
        (chain, "global_eta_step", "eta + shrinkage (global_eta_step)"),
        (sparse_eta, "covariate_products", "    X eta_x (sparse X)"),
        (word_step, "words_residual", "    words: a - W eta_w"),
        (word_step, "_dense_block_statistics", "    words: U_A^T U_A, U_A^T r"),
        (probit, "draw_coefficients", "    dense-block Cholesky draws"),
        (word_step, "subtract_row_products", "    words: X eta_w, U_A eta_A products"),
        (word_step, "word_sweeps", "    words: single-site sweep"),
        (probit, "draw_shrinkage", "    Horseshoe scales"),
        (chain, "alias_table_rows", "alias rows"),
        (chain, "topic_globals", "topic globals (S, alias tables)"),
        (shard, "topic_step", "topic_step (sweep + counts + loglik)"),
        (shard, "_sweep_supervised", "  z-sweep exact"),
        (shard, "_sweep_supervised_mh", "  z-sweep MH"),
        (shard, "_sweep_supervised_mh_sparse", "  z-sweep MH sparse"),
        (cycle, "_sweep_supervised_cycle", "  z-sweep cycle"),
        (shard, "row_products", "  X eta_x"),
        (polya, "word_counts", "  counts by word"),
        (topic_kernels, "sparse_topic_word_counts", "  counts by topic"),
        (shard, "sparse_row_products", "  mu for loglik"),
        (shard, "do_log_likelihood", "  DO loglik"),
        (topic_kernels, "lda_doc_log_likelihood", "  LDA doc loglik"),
        (chain, "phi_step", "phi_step (merge + draw + topic loglik)"),
        (chain, "polya_phi_step", "polya_phi_step"),
        (chain, "reduce_counts", "  merge counts"),
        (topic_kernels, "draw_phi_word_major", "  Phi draw (Dirichlet)"),
        (chain, "topic_log_likelihood", "  topic loglik"),
        (polya, "merge_word_counts", "  merge word counts"),
        (polya, "polya_phi", "  Pólya draw"),
        (polya, "write_dense", "  write dense"),
        (polya, "topic_log_likelihood_words", "  topic loglik (words)"),
    ]:
        _wrap(module, name, label, table)
    del supervised


def time_mode(args):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_dolda import DOLDAContestant, load_corpus

    train, _, corpus = load_corpus(args.data)
    y = train.label.to_numpy()
    if args.cycle_prior:
        from dolda.sampler import cycle

        cycle.SCAN_RARE = False
    table = defaultdict(float)
    instrument(table)
    for K in args.topics:
        c = DOLDAContestant(corpus, y, K, args.threads, phi_sampler=args.phi,
                            n_words=args.words,
                            **({"z_sampler": args.z} if args.z else {}))
        c.run(max(1, args.warmup))  # compile / warm up (the chain ages), untimed
        table.clear()
        total = c.run(args.iters) * args.iters
        print(f"\nK={K} {c.params}: {total / args.iters:.3f} s/iteration "
              f"({corpus.n_tokens * args.iters / total:.3g} tok/s), load "
              f"{os.getloadavg()[0]:.1f}")
        for label, sec in table.items():
            print(f"  {label:42s} {sec / args.iters:8.3f} s  {100 * sec / total:5.1f}%")
        del c


class RSSSampler:
    """Peak RSS per stage, sampled from /proc/self/statm."""

    def __init__(self):
        self.stage = "start"
        self.peaks = defaultdict(int)
        self.page = os.sysconf("SC_PAGE_SIZE")
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _rss(self):
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def _run(self):
        while not self._stop:
            rss = self._rss()
            if rss > self.peaks[self.stage]:
                self.peaks[self.stage] = rss
            time.sleep(0.01)

    def stop(self):
        self._stop = True
        self.thread.join()


def memory_mode(args):
    import resource

    from dolda import DOLDA
    from dolda.models.dolda import estimator as model_module
    from dolda.datasets import load_20newsgroups

    global SAMPLER
    sampler = SAMPLER = RSSSampler()
    instrument(defaultdict(float))

    def staged(obj, name, label):
        fn = getattr(obj, name)

        @functools.wraps(fn)
        def run(*a, **k):
            before = sampler.stage
            sampler.stage = label
            try:
                return fn(*a, **k)
            finally:
                sampler.stage = before

        setattr(obj, name, run)

    from dolda.models.dolda import chain as dolda_chain_module
    from dolda.models.dolda import inputs as inputs_module
    from dolda.models.dolda import summary as summary_module

    staged(inputs_module, "make_corpus", "corpus (tokenise)")
    staged(model_module.DOLDA, "transform", "transform (stacking or predict)")
    from dolda.sampler import chain as chain_module
    staged(chain_module, "init_state", "chain: init_state")
    staged(dolda_chain_module, "run_chain", "chain (init + iterations)")
    staged(summary_module, "report_convergence", "convergence report")
    staged(summary_module, "combine_chains", "combine draws (phi_)")
    staged(summary_module, "fit_calibration_map", "stacking (transform of train)")
    sampler.stage = "load data"
    tr = load_20newsgroups(args.data, "train")
    te = load_20newsgroups(args.data, "test")
    for K in args.topics:
        sampler.stage = "fit (other)"
        m = DOLDA(n_topics=K, alpha=0.1, beta=0.01, n_iter=args.iters, random_state=1,
                  n_jobs=args.threads, progress=False, predict_sweeps=10,
                  phi_sampler=args.phi, n_words=args.words)
        m.fit(tr.text.tolist(), tr.label)
        sampler.stage = "predict (test)"
        acc = float((m.predict(te.text.tolist()) == te.label.to_numpy()).mean())
        sampler.stage = "done"
        time.sleep(0.05)
        print(f"K={K}: test accuracy {acc:.3f}; peak RSS by stage (GB):")
        for stage, peak in sampler.peaks.items():
            print(f"  {stage:34s} {peak / 1e9:6.3f}")
        print(f"  ru_maxrss {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9:.3f}")
    sampler.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["time", "memory"])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=1,
                        help="time mode: untimed iterations first (a chain's later iterations "
                             "are cheaper than its first ones)")
    parser.add_argument("--phi", default="exact", choices=["exact", "polya"])
    parser.add_argument("--words", type=lambda v: v if v == "auto" else int(v),
                        default="auto",
                        help="DOLDA's n_words: the default auto (the model users get), 0 for "
                             "topics only")
    parser.add_argument("--z", default=None, choices=["exact", "mh", "cycle"])
    parser.add_argument("--cycle-prior", action="store_true",
                        help="the cycle kernel with SCAN_RARE=False (prior proposal for the "
                             "words without an alias table)")
    args = parser.parse_args(argv)
    (time_mode if args.mode == "time" else memory_mode)(args)


if __name__ == "__main__":
    main()
