"""How cost grows with D and K: simulated corpora, DOLDA beside tomotopy, one process per cell.

Corpora: :func:`dolda.datasets.simulate` (the DOLDA generative model), ``--true-topics``
disjoint topics over ``--vocab`` words, ``--doc-length`` tokens per document on average,
``--classes`` classes.  A corpus of D documents is drawn in chunks of 10,000 documents
(chunk ``c`` with seed ``c``: the topics keep their blocks of words and the classes their
signal topics, so the chunks come from one model up to the word weights inside a block) and
cached under ``--cache``.  The first chunk, the same for every D, begins with the
``--predict-docs`` test documents.  The same corpus serves every K.

Each cell (D, K) runs in a fresh process (its memory its own) and measures, in order
(after a fit of 300 documents that compiles or loads the kernels):

1. ``DOLDA(n_topics=K, n_iter=--fit-iters)`` fitted with every default (word covariates,
   the calibration map, ...): wall time, the peak resident set size over the fit (the
   kernel's high-water mark, reset before the fit through ``/proc/self/clear_refs``, less
   the resident size before it), the saved model directory's size;
2. seconds per iteration, interleaved: a live DOLDA chain at the defaults built as ``fit``
   builds it (:class:`benchmarks.bench_dolda.DOLDAContestant`, alpha = 0.1, beta = 0.01 as
   tomotopy's) and tomotopy ``LDAModel`` (``optim_interval=0``), each warmed up by
   ``--warmup`` iterations, then ``--rounds`` rounds of ``--round-iters`` iterations each,
   A B A B ...; tomotopy's memory (set-up and two iterations, less the corpus) is measured
   in a second process of its own;
3. prediction throughput, interleaved: ``predict_proba`` of the fitted model (its defaults:
   50 sweeps) on the test documents, its ``transform`` (the topic proportions alone: the
   rest of ``predict_proba`` is the word covariates, the regressors and the calibration
   map), and tomotopy's ``infer`` with ``--sweeps`` sweeps.

Cells whose memory, estimated beforehand (:func:`estimate_bytes`, checked against the
measured cells in the result), exceeds ``--memory-limit`` GB are not run but listed with
the estimate.  ``--dask`` adds one cell (the smallest D and K) fitted on a Dask
``LocalCluster`` of 2 single-threaded workers beside the local fit.  The plot (``--plot``)
shows time per iteration and memory against D, a line per K, tomotopy dashed.

Usage (the full grid; see the estimate printed at the start)::

    python -m benchmarks.bench_scaling [--docs 10000 100000 1000000] [--topics 20 100 1000]
        [--warmup 5] [--rounds 3] [--fit-iters 4] [--dask] [--plot docs/img/scaling.png]
    python -m benchmarks.bench_scaling --quick

Writes ``benchmarks/results/scaling.json`` and ``.md``.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks import harness

ROOT = harness.ROOT
CHUNK = 10_000
GB = 1e9


# ------------------------------------------------------------------ memory
def rss_bytes(field="VmRSS"):
    """The process's resident size (``VmRSS``) or its high-water mark (``VmHWM``), bytes."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def reset_peak():
    """Reset the kernel's high-water mark of this process (False where it cannot be)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


class Peak:
    """``with Peak() as p: ...``; then ``p.peak``: the process's peak resident size inside
    the block (its whole life's where the mark cannot be reset), ``p.bytes``: that less the
    resident size at the block's start."""

    def __enter__(self):
        gc.collect()
        self.exact = reset_peak()
        self.start = rss_bytes()
        return self

    def __exit__(self, *exc):
        self.peak = rss_bytes("VmHWM")
        self.bytes = self.peak - (self.start if self.exact else 0)
        return False


def estimate_bytes(D, K, N, V, L, n_words=5000):
    """A first-order estimate of DOLDA's peak resident bytes at the defaults.

    Per token: the word id and the topic (int32 each) of the chain, the corpus's copy of the
    word ids, and the MH step's proposal per token: 16 bytes.  Per document and topic: the
    counts n_dk (int32) and the regressors u_d = [1, words, zbar_d] of the a- and eta-steps
    (float64) with a copy while they are formed: 20 bytes.  Per word and topic: Phi (float32),
    its counts and running mean, the alias tables: 24 bytes.  Per document and class: the
    utilities a and mu (float64): 16 bytes.  The word covariates are sparse (about 40 of a
    document's words, 12 bytes each).  Plus the corpus as the benchmark holds it (4 bytes a
    token) and 300 MB of interpreter, numba and libraries.
    """
    return int(3e8 + 20 * N + 20 * D * K + 24 * V * K + 16 * D * L
               + 12 * D * min(40, n_words) + 8 * (L * (1 + n_words + K)) * 4)


def estimate_tomotopy_bytes(D, K, N, V):
    """tomotopy LDAModel: per token word and topic (4 + 2 bytes, its weights 4), per document
    a dense K vector of counts (4 bytes), per word and topic a count (4 bytes) per worker
    copy (2), and the Python word lists given to ``add_doc`` (8 bytes a token, freed after)."""
    return int(2e8 + 18 * N + 4 * D * K + 3 * 4 * V * K)


# ------------------------------------------------------------------ corpora
def _chunk(seed, n_docs, args):
    from dolda.datasets import simulate

    sim = simulate(n_docs=n_docs, n_topics=args.true_topics, n_classes=args.classes,
                   vocab_size=args.vocab, doc_length=args.doc_length, random_state=seed)
    return sim.words.astype(np.int32), np.diff(sim.doc_ptr), np.asarray(sim.y)


def corpus_arrays(D, args):
    """``(tokens, lengths, labels)`` of ``D + predict_docs`` documents, cached as .npy."""
    total = D + args.predict_docs
    key = (f"sim_V{args.vocab}_T{args.true_topics}_L{args.classes}_N{args.doc_length}"
           f"_D{total}")
    cache = Path(args.cache)
    files = [cache / f"{key}_{part}.npy" for part in ("tokens", "lengths", "labels")]
    if all(f.is_file() for f in files):
        return tuple(np.load(f, allow_pickle=False) for f in files)
    tokens, lengths, labels = [], [], []
    # the test documents first: the same test set for every D (chunk 0 is the same)
    for c, start in enumerate(range(0, total, CHUNK)):
        t, n, y = _chunk(c, min(CHUNK, total - start), args)
        tokens.append(t), lengths.append(n), labels.append(y)
    out = (np.concatenate(tokens), np.concatenate(lengths).astype(np.int64),
           np.concatenate(labels).astype(str))
    cache.mkdir(parents=True, exist_ok=True)
    for f, a in zip(files, out):
        np.save(f, a, allow_pickle=False)
    return out


def make_corpora(D, args):
    """(train Corpus, test Corpus, train labels, vocabulary words)."""
    from dolda.design.corpus import Corpus, Vocabulary

    tokens, lengths, labels = corpus_arrays(D, args)
    words = [f"w{v:0{max(4, len(str(args.vocab - 1)))}d}" for v in range(args.vocab)]
    vocab = Vocabulary(stop_words=None, rare_share=0.0)
    vocab.fit_transform([" ".join(words)])
    order = np.array([vocab.words.index(w) for w in words]) if list(vocab.words) != words \
        else None
    if order is not None:
        tokens = order[tokens].astype(np.int32)
    ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    P = args.predict_docs
    test = Corpus.from_arrays(tokens[:ptr[P]], ptr[:P + 1], vocab, warn_empty=False)
    train = Corpus.from_arrays(tokens[ptr[P]:], ptr[P:] - ptr[P], vocab, warn_empty=False)
    return train, test, labels[P:], list(vocab.words)


# ------------------------------------------------------------------ one cell
def word_lists(corpus, words):
    w = np.asarray(words, dtype=object)
    return [list(w[corpus.tokens[a:b]]) for a, b in zip(corpus.doc_ptr[:-1], corpus.doc_ptr[1:])]


def run_cell(D, K, args):
    """Every figure of one cell, measured in this process."""
    from dolda import DOLDA
    from dolda.sampler.threads import using_threads

    from benchmarks.bench_dolda import DOLDAContestant, TomotopyContestant

    out = {"D": D, "K": K}
    tic = time.perf_counter()
    train, test, y, words = make_corpora(D, args)
    out.update(N=int(train.n_tokens), V=int(train.n_words), L=int(len(set(y))),
               corpus_seconds=time.perf_counter() - tic, rss_after_corpus=rss_bytes())
    tp = None if args.no_tomotopy else harness.optional("tomotopy")

    # 0. the kernels compiled (or read from numba's cache) on a few documents, so that the
    # figures below leave compilation out
    tic = time.perf_counter()
    small = min(300, train.n_docs)
    from dolda.design.corpus import Corpus

    head = Corpus.from_arrays(train.tokens[:train.doc_ptr[small]], train.doc_ptr[:small + 1],
                              train.vocabulary, warn_empty=False)
    DOLDA(n_topics=K, n_iter=2, random_state=1, n_jobs=args.threads,
          progress=False).fit(head, y[:small]).predict_proba(test)
    out["compile_seconds"] = time.perf_counter() - tic

    # 1. the fit at the defaults: time, memory, file size
    with Peak() as peak:
        model = DOLDA(n_topics=K, n_iter=args.fit_iters, random_state=1, n_jobs=args.threads,
                      progress=False)
        tic = time.perf_counter()
        model.fit(train, y)
        fit_s = time.perf_counter() - tic
    its = np.asarray(model.timings_["iteration_seconds"], dtype=float).ravel()
    with tempfile.TemporaryDirectory() as tmp:
        model.save(Path(tmp) / "model")
        size = sum(f.stat().st_size for f in (Path(tmp) / "model").rglob("*") if f.is_file())
    out["fit"] = {"seconds": fit_s, "n_iter": args.fit_iters,
                  "iteration_seconds": its.tolist(), "peak_bytes": peak.peak,
                  "increment_bytes": peak.bytes, "peak_exact": peak.exact,
                  "model_bytes": size,
                  "n_word_covariates": len(model.feature_names_) - 1 - K}
    print(f"D={D} K={K}: fit {fit_s:.1f} s, peak {peak.peak / GB:.2f} GB, "
          f"model {size / 1e6:.1f} MB", flush=True)

    # 2. seconds per iteration, interleaved with tomotopy
    contestants = {}
    with Peak() as pk:
        contestants["DOLDA defaults"] = DOLDAContestant(train, y, K, args.threads,
                                                        n_words="auto")
        contestants["DOLDA defaults"].run(1)
    out["chain_peak_bytes"] = pk.bytes
    tomo = None
    if tp is not None:
        docs = word_lists(train, words)
        labels = np.unique(y, return_inverse=True)[1]
        tomo = TomotopyContestant(docs, labels, K, args.threads, supervised=False)
        del docs
        contestants["tomotopy LDAModel"] = tomo
    for c in contestants.values():
        c.run(max(args.warmup - 1, 0) or 1)
    times = harness.interleave({n: (lambda c=c: c.run(args.round_iters))
                                for n, c in contestants.items()}, args.rounds, warmup=0)
    ref = "tomotopy LDAModel" if tomo is not None else "DOLDA defaults"
    out["iteration"] = harness.summarise(times, ref)
    out["iteration"]["warmup"] = args.warmup
    del contestants["DOLDA defaults"]
    gc.collect()

    # 3. prediction throughput, interleaved with tomotopy's infer
    pred = {"DOLDA predict_proba": lambda: (model.predict_proba(test), None)[1],
            "DOLDA transform": lambda: (model.transform(test), None)[1]}  # the topics alone
    if tomo is not None:
        tdocs = [tomo.model.make_doc(d) for d in word_lists(test, words)]
        pred["tomotopy infer"] = lambda: (tomo.model.infer(tdocs, iterations=args.sweeps,
                                                           workers=args.threads), None)[1]
    with using_threads(args.threads):
        ptimes = harness.interleave(pred, args.rounds, warmup=1)
    psum = harness.summarise(ptimes, "tomotopy infer" if tomo is not None else None)
    for s in psum.values():
        s["docs_per_s"] = test.n_docs / s["median_seconds"]
    out["predict"] = psum
    out["predict_docs"] = int(test.n_docs)
    out["process_peak_bytes"] = rss_bytes("VmHWM")
    n_words = out["fit"]["n_word_covariates"] or 5000
    out["estimate_bytes"] = estimate_bytes(D, K, out["N"], out["V"], out["L"], n_words)
    out["tomotopy_estimate_bytes"] = estimate_tomotopy_bytes(D, K, out["N"], out["V"])
    return out


def tomotopy_memory(D, K, args):
    """tomotopy's peak resident size over its set-up (the word lists included) and two
    iterations, less the resident size with the corpus loaded: in a process of its own, as
    in-process the memory DOLDA freed is reused and hides it."""
    from benchmarks.bench_dolda import TomotopyContestant

    train, _, y, words = make_corpora(D, args)
    with Peak() as pk:
        docs = word_lists(train, words)
        tomo = TomotopyContestant(docs, np.unique(y, return_inverse=True)[1], K,
                                  args.threads, supervised=False)
        del docs
        tomo.run(2)
    return {"tomotopy_peak_bytes": pk.bytes, "tomotopy_process_peak_bytes": pk.peak}


def _cell_main(args):
    if args.tomotopy_memory:
        result = tomotopy_memory(args.cell[0], args.cell[1], args)
        Path(args.cell_out).write_text(json.dumps(result))
        return None
    result = run_cell(args.cell[0], args.cell[1], args)
    Path(args.cell_out).write_text(json.dumps(result, default=harness._plain))


def dask_cell(D, K, args):
    """One fit of the defaults on a LocalCluster of 2 single-threaded workers, and locally."""
    from dask.distributed import Client, LocalCluster

    from dolda import DOLDA
    from dolda.models.dolda.options import Dask

    train, _, y, _ = make_corpora(D, args)
    out = {"D": D, "K": K, "workers": 2}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        for name, backend in (("local", "local"), ("dask", Dask(client))):
            m = DOLDA(n_topics=K, n_iter=args.fit_iters + 2, random_state=1,
                      n_jobs=args.threads, progress=False, backend=backend)
            tic = time.perf_counter()
            m.fit(train, y)
            its = np.asarray(m.timings_["iteration_seconds"], dtype=float).ravel()
            out[name] = {"fit_seconds": time.perf_counter() - tic,
                         "iteration_seconds": its.tolist(),
                         "late_iteration_seconds": float(np.median(its[2:]))}
    out["dask_over_local"] = out["dask"]["late_iteration_seconds"] / \
        out["local"]["late_iteration_seconds"]
    return out


# ------------------------------------------------------------------ the parent
def run_subprocess_cell(D, K, args, argv, tomotopy_memory=False):
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "cell.json"
        cmd = [sys.executable, "-m", "benchmarks.bench_scaling", *argv,
               "--cell", str(D), str(K), "--cell-out", str(target)] + (
            ["--tomotopy-memory"] if tomotopy_memory else [])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH")) if p)}
        proc = subprocess.run(cmd, cwd=ROOT, env=env, text=True, capture_output=True)
        sys.stdout.write(proc.stdout)
        if proc.returncode != 0:
            return {"D": D, "K": K, "error": proc.stderr.strip().splitlines()[-1][:300]
                    if proc.stderr.strip() else f"exit {proc.returncode}"}
        return json.loads(target.read_text())


def plot(cells, path, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    done = [c for c in cells if "iteration" in c]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    for i, K in enumerate(sorted({c["K"] for c in cells})):
        color = f"C{i}"
        mine = sorted((c for c in done if c["K"] == K), key=lambda c: c["D"])
        if not all("tomotopy_peak_bytes" in c for c in mine):
            pass  # tomotopy's memory line is drawn only where every cell has it
        if mine:
            D = [c["D"] for c in mine]
            ax1.plot(D, [c["iteration"]["DOLDA defaults"]["median_seconds"] for c in mine],
                     "o-", color=color, label=f"DOLDA defaults, K = {K}")
            if all("tomotopy LDAModel" in c["iteration"] for c in mine):
                ax1.plot(D, [c["iteration"]["tomotopy LDAModel"]["median_seconds"]
                             for c in mine], "s--", color=color, label=f"tomotopy, K = {K}")
            ax2.plot(D, [c["fit"]["peak_bytes"] / GB for c in mine], "o-", color=color,
                     label=f"DOLDA fit (process peak), K = {K}")
            if all("tomotopy_peak_bytes" in c for c in mine):
                ax2.plot(D, [c["tomotopy_peak_bytes"] / GB for c in mine], "s--",
                         color=color, label=f"tomotopy (its increment), K = {K}")
        grid = np.logspace(np.log10(min(c["D"] for c in cells)),
                           max(6.0, np.log10(max(c["D"] for c in cells))), 20)
        ax2.plot(grid, [estimate_bytes(d, K, d * args.doc_length, args.vocab, args.classes)
                        / GB for d in grid], ":", color=color,
                 label=f"DOLDA estimate, K = {K}")
    ax2.axhline(24, color="grey", lw=0.8)
    ax2.text(ax2.get_xlim()[0], 25, "24 GB", color="grey", fontsize=8)
    for ax, title in ((ax1, "seconds per iteration (2 threads)"),
                      (ax2, "peak resident memory (GB)")):
        ax.set_xscale("log"), ax.set_yscale("log"), ax.set_xlabel("documents D (~100 tokens each)")
        ax.set_title(title), ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _gb(b):
    return f"{b / GB:.2f}"


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--docs", type=int, nargs="+", default=None,
                        help="D values (default 10000 100000 1000000)")
    parser.add_argument("--topics", type=int, nargs="+", default=None,
                        help="K values (default 20 100 1000)")
    parser.add_argument("--vocab", type=int, default=20_000)
    parser.add_argument("--true-topics", type=int, default=50)
    parser.add_argument("--classes", type=int, default=5)
    parser.add_argument("--doc-length", type=int, default=100)
    parser.add_argument("--predict-docs", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=5, help="iterations before the rounds")
    parser.add_argument("--round-iters", type=int, default=1)
    parser.add_argument("--fit-iters", type=int, default=4)
    parser.add_argument("--sweeps", type=int, default=50, help="tomotopy infer's iterations")
    parser.add_argument("--memory-limit", type=float, default=20.0,
                        help="GB: cells estimated above it are listed, not run")
    parser.add_argument("--no-tomotopy", action="store_true")
    parser.add_argument("--dask", action="store_true", help="one LocalCluster cell")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "dolda_scaling"),
                        help="folder of the simulated corpora")
    parser.add_argument("--plot", type=Path, default=None,
                        help="write the figure here (default docs/img/scaling.png, none "
                             "with --quick)")
    parser.add_argument("--cell", type=int, nargs=2, default=None, help=argparse_hidden())
    parser.add_argument("--cell-out", default=None, help=argparse_hidden())
    parser.add_argument("--tomotopy-memory", action="store_true", help=argparse_hidden())
    args = parser.parse_args(argv)
    if args.quick:
        args.vocab, args.true_topics, args.classes, args.doc_length = 300, 4, 3, 30
        args.predict_docs, args.warmup, args.fit_iters, args.sweeps = 40, 1, 2, 10
        args.rounds = args.rounds or 2
    args.rounds = args.rounds or 3
    if args.cell is not None:
        return _cell_main(args)
    run = harness.start("scaling", args, argv)
    docs = args.docs or ([200, 400] if args.quick else [10_000, 100_000, 1_000_000])
    topics = args.topics or ([4] if args.quick else [20, 100, 1000])
    passed = list(argv if argv is not None else sys.argv[1:])
    if harness.optional("tomotopy") is None and not args.no_tomotopy:
        run.note("tomotopy is not importable: its columns are empty and the ratios are to "
                 "DOLDA defaults")
    cells = []
    for D in docs:
        for K in topics:
            N = D * args.doc_length
            est = estimate_bytes(D, K, N, args.vocab, args.classes)
            if est > args.memory_limit * GB:
                cells.append({"D": D, "K": K, "N": N, "skipped": "estimate over the limit",
                              "estimate_bytes": est,
                              "tomotopy_estimate_bytes": estimate_tomotopy_bytes(
                                  D, K, N, args.vocab)})
                run.note(f"D={D} K={K} not run: estimated {est / GB:.1f} GB > "
                         f"{args.memory_limit} GB")
                continue
            tic = time.perf_counter()
            cell = run_subprocess_cell(D, K, args, passed)
            cell["cell_seconds"] = time.perf_counter() - tic
            cell.setdefault("N", N)
            cell.setdefault("estimate_bytes", est)
            cell.setdefault("tomotopy_estimate_bytes", estimate_tomotopy_bytes(D, K, N,
                                                                               args.vocab))
            if "error" not in cell and "tomotopy LDAModel" in cell["iteration"]:
                cell.update(run_subprocess_cell(D, K, args, passed, tomotopy_memory=True))
            cells.append(cell)
            if "error" in cell:
                run.note(f"D={D} K={K} failed: {cell['error']}")
    dask = None
    if args.dask:
        try:
            dask = dask_cell(docs[0], topics[0], args)
        except ImportError as err:
            run.note(f"the Dask cell is skipped: {err}")
        except Exception as err:  # noqa: BLE001 - the grid's figures are kept all the same
            run.note(f"the Dask cell failed: {type(err).__name__}: {err}")
    path = None
    if not args.quick or args.plot is not None:
        path = args.plot or ROOT / "docs" / "img" / "scaling.png"
        run.note(f"figure: {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    lines = [f"Simulated corpora (`dolda.datasets.simulate`, {args.true_topics} true topics, "
             f"V = {args.vocab}, ~{args.doc_length} tokens per document, {args.classes} "
             f"classes); {args.threads} threads; per cell a fresh process: a default fit of "
             f"{args.fit_iters} iterations (peak memory, model size), then the chains "
             f"interleaved ({args.warmup} warm-up iterations, {args.rounds} rounds of "
             f"{args.round_iters}), then predict_proba of {args.predict_docs} documents "
             f"against tomotopy infer ({args.sweeps} sweeps).", "",
             "| D | K | tokens | DOLDA s/iter | tomotopy s/iter | DOLDA speed vs tomotopy | "
             "DOLDA fit peak GB (estimate) | tomotopy GB (estimate) | model MB | "
             "predict docs/s | infer docs/s | predict speed vs infer |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in cells:
        if "iteration" not in c:
            why = c.get("skipped") or c.get("error")
            lines.append(f"| {c['D']:,} | {c['K']} | {c.get('N', 0):,} | {why} | | | "
                         f"({_gb(c['estimate_bytes'])}) | "
                         f"({_gb(c.get('tomotopy_estimate_bytes', 0))}) | | | | |")
            continue
        it, pr = c["iteration"], c["predict"]
        d_it = it["DOLDA defaults"]
        t_it = it.get("tomotopy LDAModel")
        t_pr = pr.get("tomotopy infer")
        lines.append(
            f"| {c['D']:,} | {c['K']} | {c['N']:,} | {d_it['median_seconds']:.3g} | "
            f"{t_it['median_seconds'] if t_it else float('nan'):.3g} | "
            f"{(1 / d_it['median_ratio']) if t_it else float('nan'):.2f}x | "
            f"{_gb(c['fit']['peak_bytes'])} ({_gb(c['estimate_bytes'])}) | "
            f"{_gb(c.get('tomotopy_peak_bytes', float('nan')))} "
            f"({_gb(c['tomotopy_estimate_bytes'])}) | {c['fit']['model_bytes'] / 1e6:.1f} | "
            f"{pr['DOLDA predict_proba']['docs_per_s']:.0f} | "
            f"{t_pr['docs_per_s'] if t_pr else float('nan'):.0f} | "
            f"{pr['DOLDA predict_proba']['speed_ratio'] if t_pr else float('nan'):.1f}x |")
    if dask is not None:
        lines += ["", f"Dask LocalCluster (2 single-threaded workers) at D = {dask['D']:,}, "
                  f"K = {dask['K']}: {dask['dask']['late_iteration_seconds']:.3g} s per "
                  f"iteration against {dask['local']['late_iteration_seconds']:.3g} s locally "
                  f"({dask['dask_over_local']:.2f}x)."]
    lines += ["", "Speed ratios are per round (tomotopy's time over DOLDA's in the same round), "
              "their median. DOLDA's memory: the process's peak resident size during the "
              "fit (interpreter and corpus arrays included); tomotopy's: the peak over its "
              "set-up and two iterations in a process of its own, less the resident size "
              "with the corpus loaded; the estimates are `estimate_bytes` and "
              "`estimate_tomotopy_bytes` in the script."]
    run.finish({"settings": {k: (str(v) if isinstance(v, Path) else v)
                             for k, v in vars(args).items() if k not in ("cell", "cell_out")},
                "cells": cells, "dask": dask}, lines, "How cost grows with D and K")
    if path is not None:  # after the results are written: a failed plot loses no figure
        plot(cells, path, args)
    return cells


def argparse_hidden():
    import argparse

    return argparse.SUPPRESS


if __name__ == "__main__":
    main()
