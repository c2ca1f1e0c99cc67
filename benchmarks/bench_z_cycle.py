"""The cycle-MH z-kernel against the MH z-kernel on 20 Newsgroups: speed per sweep and mixing
per wall-clock second (issue 13).

Corpus, alpha = 0.1, beta = 0.01 and the chain as in ``bench_dolda.py`` (20 Newsgroups
train, a live :class:`bench_dolda.DOLDAContestant`, 2 threads).

``kernel``: a chain is run ``--warm`` iterations with the MH z-step, its state captured
(z, n_dk, Phi, eta, a, the word-bucket alias tables), and from that same state one sweep of
each kernel is timed, alternating, ``--reps`` times (each on fresh copies of z and n_dk;
one untimed sweep of each first, to compile).  Reported: the median seconds per sweep and
the nanoseconds per token and thread.

``cycle`` is the cycle kernel with the linear-scan word step for words without an alias
table (``SCAN_RARE=True``), ``cycle-prior`` the one with the prior proposal there.

``mixing``: for each seed, one chain per z-sampler from the same random start (init seed 1,
chain seed ``--seeds``),
run interleaved iteration by iteration (so both see the same machine load) until each has
spent ``--budget`` seconds in its own steps.  Recorded per iteration: the chain's own elapsed
time, the LDA log-likelihood (paper section 3.3) and the DO log-likelihood; at the end, the
training accuracy of the last state (argmax_l of u_d . eta_l) and the test accuracy of the
plug-in rule from the last draw (topic proportions of the test documents under the last Phi,
20 sweeps with 10 burn-in, :func:`dolda.sampler.predict.predict_topic_proportions`, then
argmax_l of [1, theta_d] . eta_l).

``iteration``: whole DOLDA iterations per z-sampler, the blocks timed as in
``profile_dolda.py time`` (its ``instrument``).

Usage::

    python benchmarks/bench_z_cycle.py kernel --topics 100 1000
    python benchmarks/bench_z_cycle.py iteration --topics 100 1000 --iters 4
    python benchmarks/bench_z_cycle.py mixing --topics 100 --budget 75 --seeds 1 2

Each mode updates its part of ``benchmarks/results/z_cycle.json`` and rewrites
``benchmarks/results/z_cycle.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
OUT = ROOT / "benchmarks" / "results"


def _capture(chain):
    """The kernels' inputs at the chain's current state (the a and eta of its last step)."""
    from dolda.sampler import chain as dolda_chain

    st, data, cfg = chain.state, chain.data, chain.config
    n_x = data.X.shape[1]
    eta = st.probit.eta
    glob = dolda_chain.topic_globals(eta, st.phi, n_x, "mh", chain._table_rows,
                                     alpha=cfg.alpha)
    base = st.probit.a - data.X @ eta[:, :n_x].T
    return dict(z=st.z.copy(), ndk=st.ndk.copy(), phi=st.phi, tables=glob.tables,
                eta_topics=np.ascontiguousarray(eta[:, n_x:]), base=np.ascontiguousarray(base),
                alpha=np.full(cfg.n_topics, float(cfg.alpha)), data=data)


def kernel_mode(args, results):
    from bench_dolda import DOLDAContestant, load_corpus
    from dolda.sampler.cycle import _sweep_supervised_cycle
    from dolda.sampler.supervised import _sweep_supervised_mh
    from dolda.sampler.threads import using_threads

    train, _, corpus = load_corpus(args.data)
    y = train.label.to_numpy()
    rows = []
    for K in args.topics:
        c = DOLDAContestant(corpus, y, K, args.threads, z_sampler="mh")
        c.run(args.warm)
        s = _capture(c.chain)
        t, data = s["tables"], s["data"]
        del c

        def mh(z, ndk, it):
            _sweep_supervised_mh(data.tokens, data.doc_ptr, z, ndk, s["phi"], t.prob, t.alias,
                                 t.mass, t.row, s["alpha"], s["eta_topics"], s["base"], 1, it)

        def cycle(n, scan):
            def run(z, ndk, it):
                _sweep_supervised_cycle(data.tokens, data.doc_ptr, z, ndk, s["phi"], t.prob,
                                        t.alias, t.mass, t.row, s["alpha"], s["eta_topics"],
                                        s["base"], 1, it, 0, n, scan)
            return run

        kernels = {"mh": mh}
        for scan in (True, False):
            for n in args.cycles:
                kernels[f"cycle{'' if scan else '-prior'} n_cycles={n}"] = cycle(n, scan)
        times = {name: [] for name in kernels}
        moved = {name: [] for name in kernels}
        with using_threads(args.threads):
            for rep in range(args.reps + 1):
                for name, fn in kernels.items():
                    z, ndk = s["z"].copy(), s["ndk"].copy()
                    tic = time.perf_counter()
                    fn(z, ndk, 1000 + rep)
                    dt = time.perf_counter() - tic
                    if rep > 0:  # rep 0 compiles
                        times[name].append(dt)
                        moved[name].append(float(np.mean(z != s["z"])))
        n_tok = len(data.tokens)
        for name in kernels:
            med = float(np.median(times[name]))
            rows.append({"K": K, "kernel": name, "seconds_per_sweep": times[name],
                         "median_s": med, "ns_per_token_thread": med * args.threads / n_tok * 1e9,
                         "share_of_tokens_moved": float(np.mean(moved[name]))})
            print(f"K={K} {name:20s} {med:.4f} s/sweep  "
                  f"{rows[-1]['ns_per_token_thread']:.0f} ns/token/thread  "
                  f"moved {rows[-1]['share_of_tokens_moved']:.3f}", flush=True)
    results["kernel"] = {"warm_iterations": args.warm, "threads": args.threads,
                         "reps": args.reps, "load": os.getloadavg()[0], "rows": rows}


def iteration_mode(args, results):
    """Whole DOLDA iterations with the blocks timed by ``profile_dolda.instrument``."""
    from collections import defaultdict

    from bench_dolda import DOLDAContestant, load_corpus
    from dolda.sampler import cycle as cycle_kernel
    from profile_dolda import instrument

    train, _, corpus = load_corpus(args.data)
    y = train.label.to_numpy()
    table = defaultdict(float)
    instrument(table)
    rows = []
    for K in args.topics:
        for name in args.samplers:
            cycle_kernel.SCAN_RARE = name != "cycle-prior"
            c = DOLDAContestant(corpus, y, K, args.threads, z_sampler=name.split("-")[0])
            c.run(2)  # compile / warm up, untimed
            table.clear()
            per_iter = c.run(args.iters)
            blocks = {k.strip(): v / args.iters for k, v in table.items() if v > 0}
            sweep = sum(v for k, v in blocks.items() if k.startswith("z-sweep"))
            rows.append({"K": K, "z_sampler": name, "seconds_per_iter": per_iter,
                         "z_sweep_s": sweep, "blocks_s": blocks, "load": os.getloadavg()[0]})
            print(f"K={K} {name:12s} {per_iter:.3f} s/iteration, z-sweep {sweep:.3f} s, "
                  f"load {rows[-1]['load']:.1f}", flush=True)
            del c
    results["iteration"] = {"threads": args.threads, "iters": args.iters, "rows": rows}


def _plug_in_accuracy(chain, test_tokens, test_ptr, test_y, seed=1):
    """Training accuracy of the state and test accuracy of the last draw's plug-in rule."""
    from dolda.sampler import chain as dolda_chain
    from dolda.sampler.predict import predict_topic_proportions

    st, data, cfg = chain.state, chain.data, chain.config
    U = dolda_chain.regressors(data, st.ndk)
    train_acc = float(np.mean(np.argmax(U @ st.probit.eta.T, axis=1) == data.y))
    theta = predict_topic_proportions(test_tokens, test_ptr, np.ascontiguousarray(st.phi.T),
                                      cfg.alpha, 20, 10, seed)
    U_test = np.hstack([np.ones((len(test_y), 1)), theta])
    test_acc = float(np.mean(np.argmax(U_test @ st.probit.eta.T, axis=1) == test_y))
    return train_acc, test_acc


def newsgroups_with_test(data):
    """``(corpus, y, test_corpus, test_y)``: 20 Newsgroups train as the benchmarks' chains see it
    and the test split in the training vocabulary, its labels as class indices."""
    from bench_dolda import load_corpus
    from dolda.datasets import load_20newsgroups
    from dolda.utils.labels import encode_labels

    train, vocab, corpus = load_corpus(data)
    y = train.label.to_numpy()
    test = load_20newsgroups(data, "test")
    test_corpus = vocab.transform(test.text.tolist())
    classes, _ = encode_labels(y, corpus.n_docs)
    return corpus, y, test_corpus, np.searchsorted(classes, test.label.to_numpy())


def interleaved(chains, budget, before_step=lambda name: None):
    """Step every chain in turn, one iteration each, until each has spent ``budget`` seconds in
    its own steps (so all see the same machine load); ``before_step(name)`` runs untimed before
    each step.  Returns ``{name: [(seconds spent, loglik_lda, loglik_do) per iteration]}``."""
    trace = {name: [] for name in chains}
    spent = {name: 0.0 for name in chains}
    it = 0
    while min(spent.values()) < budget:
        for name, c in chains.items():
            if spent[name] >= budget:
                continue
            before_step(name)
            with c._using(c.threads):
                tic = time.perf_counter()
                _, info = c.chain.step(it)
                spent[name] += time.perf_counter() - tic
            trace[name].append((spent[name], info.loglik_lda, info.loglik_do))
        it += 1
    return trace


def mixing_mode(args, results):
    from bench_dolda import DOLDAContestant
    from dolda.sampler import cycle as cycle_kernel

    corpus, y, test_corpus, test_y = newsgroups_with_test(args.data)
    runs = results.setdefault("mixing", {}).setdefault("runs", [])
    for K in args.topics:
        for seed in args.seeds:
            chains = {}
            for z_sampler in args.samplers:
                c = DOLDAContestant(corpus, y, K, args.threads, z_sampler=z_sampler.split("-")[0])
                c.chain.seed = seed  # the same random start for both (init_state seed 1)
                chains[z_sampler] = c

            def scan_rare(name):  # the cycle kernel reads SCAN_RARE at each step
                cycle_kernel.SCAN_RARE = name != "cycle-prior"

            trace = interleaved(chains, args.budget, scan_rare)
            for name, c in chains.items():
                with c._using(c.threads):
                    train_acc, test_acc = _plug_in_accuracy(c.chain, test_corpus.tokens,
                                                            test_corpus.doc_ptr, test_y)
                tr = np.array(trace[name])
                runs[:] = [r for r in runs if (r["K"], r["seed"], r["z_sampler"])
                           != (K, seed, name)]
                runs.append({"K": K, "seed": seed, "z_sampler": name, "budget_s": args.budget,
                             "iterations": len(tr), "time_s": tr[:, 0].tolist(),
                             "loglik_lda": tr[:, 1].tolist(), "loglik_do": tr[:, 2].tolist(),
                             "train_accuracy": train_acc, "test_accuracy": test_acc,
                             "load": os.getloadavg()[0]})
                print(f"K={K} seed={seed} {name:6s} {len(tr)} it, loglik_lda {tr[-1, 1]:.4g}, "
                      f"train acc {train_acc:.3f}, test acc {test_acc:.3f}", flush=True)
            del chains
    results["mixing"]["threads"] = args.threads


def _loglik_at(run, t):
    """The LDA log-likelihood of ``run`` at its last iteration finished by time ``t``."""
    times = np.asarray(run["time_s"])
    i = np.searchsorted(times, t, side="right") - 1
    return run["loglik_lda"][i] if i >= 0 else float("nan")


def write_markdown(results):
    lines = ["# Cycle-MH against MH z-kernel (20 Newsgroups train, alpha 0.1, beta 0.01)", "",
             "Written by `benchmarks/bench_z_cycle.py` (see its docstring for the method).", ""]
    kern = results.get("kernel")
    if kern:
        lines += [f"## One z-sweep from a captured state ({kern['warm_iterations']} MH "
                  f"iterations), {kern['threads']} threads, median of {kern['reps']}", "",
                  "| K | kernel | s / sweep | ns / token / thread | tokens moved |",
                  "|---|---|---|---|---|"]
        for r in kern["rows"]:
            lines.append(f"| {r['K']} | {r['kernel']} | {r['median_s']:.4f} | "
                         f"{r['ns_per_token_thread']:.0f} | {r['share_of_tokens_moved']:.3f} |")
        lines.append("")
    itr = results.get("iteration")
    if itr:
        lines += [f"## Whole DOLDA iteration ({itr['threads']} threads, mean of {itr['iters']} "
                  "after 2 untimed; blocks timed as `profile_dolda.py time`)", "",
                  "| K | z | s / iteration | z-sweep s | load |", "|---|---|---|---|---|"]
        for r in itr["rows"]:
            lines.append(f"| {r['K']} | {r['z_sampler']} | {r['seconds_per_iter']:.3f} | "
                         f"{r['z_sweep_s']:.3f} | {r['load']:.1f} |")
        lines.append("")
    mix = results.get("mixing")
    if mix and mix.get("runs"):
        lines += [f"## Mixing per wall-clock second ({mix['threads']} threads, chains "
                  "interleaved)", "",
                  "LDA log-likelihood at fractions of the budget (each chain's own step time); "
                  "accuracies of the last state (train: argmax of u_d . eta_l; test: plug-in "
                  "rule of the last draw, 20 sweeps).", "",
                  "| K | seed | z | iterations | ll @ 1/4 | ll @ 1/2 | ll @ end | "
                  "s to reach MH's ll @ 1/2 | train acc | test acc |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        runs = mix["runs"]
        for r in sorted(runs, key=lambda r: (r["K"], r["seed"], r["z_sampler"])):
            b = r["budget_s"]
            mh = [m for m in runs if (m["K"], m["seed"], m["z_sampler"]) == (r["K"], r["seed"],
                                                                              "mh")]
            reach = "-"
            if mh:
                goal = _loglik_at(mh[0], mh[0]["budget_s"] / 2)
                hit = [t for t, ll in zip(r["time_s"], r["loglik_lda"]) if ll >= goal]
                reach = f"{hit[0]:.1f}" if hit else "not reached"
            lines.append(f"| {r['K']} | {r['seed']} | {r['z_sampler']} | {r['iterations']} | "
                         f"{_loglik_at(r, b / 4):.5g} | {_loglik_at(r, b / 2):.5g} | "
                         f"{r['loglik_lda'][-1]:.5g} | {reach} | {r['train_accuracy']:.3f} | "
                         f"{r['test_accuracy']:.3f} |")
        lines.append("")
    if results.get("notes"):
        lines += ["## Reading", "", results["notes"], ""]
    (OUT / "z_cycle.md").write_text("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["kernel", "mixing", "iteration", "notes"],
                        help="notes: set the results' reading (--text) and rewrite the .md")
    parser.add_argument("--text", default="", help="notes mode: the reading paragraph")
    parser.add_argument("--iters", type=int, default=4, help="iteration mode: timed iterations")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warm", type=int, default=20)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cycles", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--budget", type=float, default=75.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--samplers", nargs="+", default=["mh", "cycle", "cycle-prior"],
                        help="cycle: the cycle kernel with SCAN_RARE=True; cycle-prior: False")
    args = parser.parse_args(argv)
    path = OUT / "z_cycle.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    if args.mode == "notes":
        results["notes"] = args.text
    else:
        {"kernel": kernel_mode, "mixing": mixing_mode, "iteration": iteration_mode}[args.mode](
            args, results)
    path.write_text(json.dumps(results, indent=1))
    write_markdown(results)


if __name__ == "__main__":
    main()
