"""Several supervised z-sweeps per Phi draw (S = 1, 2, 3) on 20 Newsgroups: mixing per
wall-clock second (issue 13, "exact levers").

Each DOLDA iteration runs the a-step, the eta-step, the shrinkage, one supervised MH z-sweep
given Phi and the Phi draw.  Running the z-sweep S times per iteration keeps the sampler
exact: every sweep leaves p(z | Phi, eta, a) invariant, so their composition does too.  It
costs S - 1 more sweeps per iteration and amortises everything else over S sweeps.

How the extra sweeps are run (the library is not changed): :class:`ExtraSweeps` replaces the
module attribute ``dolda.sampler.shard.topic_step`` (which :func:`dolda.sampler.chain.dolda_step`
calls) by a wrapper that, for a shard, first runs ``S - 1`` extra
:func:`dolda.sampler.supervised._sweep_supervised_mh` sweeps with the iteration's eta, a and
Phi tables, then calls the library's ``topic_step``, whose own sweep is the last one and
whose counts, DO and LDA log-likelihood parts are therefore taken after the last sweep.
Extra sweep ``j`` (1 <= j < S) draws from ``stream(seed + j * 2**40, iteration * 16 + STEP_Z,
d)``: the library keys all its streams by the chain seed itself (< 2**40 here), so its streams
and the extra ones never share a starting state (up to a 64-bit hash collision).  With S = 1
the wrapper only calls the library's function: ``check`` mode asserts that a chain through the
wrapper at S = 1 has the same z and Phi as a chain with the library's ``topic_step`` after a
few iterations (and that S = 2 differs); ``mixing`` runs that check first, which also
compiles the kernels before any timing.

Corpus, alpha = 0.1, beta = 0.01 and the chain as in ``bench_dolda.py`` (20 Newsgroups train,
a live :class:`bench_dolda.DOLDAContestant` with the default exact Phi and ``z_sampler="mh"``,
2 threads).  ``mixing`` mode works as ``bench_z_cycle.py mixing``: for each seed, one chain
per S from the same random start (init seed 1, chain seed ``--seeds``), run interleaved
iteration by iteration (so every arm sees the same machine load) until each arm has spent
``--budget`` seconds in its own steps.  Recorded per iteration: the arm's own elapsed time,
the LDA log-likelihood (paper section 3.3) and the DO log-likelihood; at the end the training
accuracy of the last state and the test accuracy of the plug-in rule of the last draw
(``bench_z_cycle._plug_in_accuracy``).  The load average is recorded before and after each
(K, seed) block.

Usage::

    python benchmarks/bench_z_sweeps.py check --topics 100
    python benchmarks/bench_z_sweeps.py mixing --topics 100 --budget 60 --seeds 1 2
    python benchmarks/bench_z_sweeps.py mixing --topics 1000 --budget 90 --seeds 1 2
    python benchmarks/bench_z_sweeps.py notes --text "..."

Each mode updates ``benchmarks/results/z_sweeps.json`` and rewrites
``benchmarks/results/z_sweeps.md``.
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

#: Extra sweep ``j`` of chain ``seed`` draws from the streams of seed ``seed + j << SEED_SHIFT``.
SEED_SHIFT = 40
FRACTIONS = (0.25, 0.5, 0.75, 1.0)


def sweep_seed(seed: int, j: int) -> int:
    """The stream seed of extra sweep ``j >= 1`` of chain ``seed`` (never a chain seed here)."""
    if not 0 <= seed < (1 << SEED_SHIFT) or j < 1:
        raise ValueError("chain seed must be below 2**40 and j >= 1")
    return seed + (j << SEED_SHIFT)


class ExtraSweeps:
    """``dolda.sampler.shard.topic_step`` with ``n_sweeps - 1`` extra MH z-sweeps first.

    Installed with :meth:`install` (module attribute replaced, restored by :meth:`remove`);
    ``n_sweeps`` is read at every call, so interleaved chains set it before their step.
    """

    def __init__(self):
        from dolda.sampler import shard

        self.shard = shard
        self.library = shard.topic_step
        self.n_sweeps = 1

    def install(self):
        self.shard.topic_step = self
        return self

    def remove(self):
        self.shard.topic_step = self.library

    def __call__(self, seed, iteration, sh, z, ndk, a, glob, alpha, z_sampler, **kw):
        if self.n_sweeps > 1:
            self.extra(seed, iteration, sh, z, ndk, a, glob, alpha, z_sampler)
        return self.library(seed, iteration, sh, z, ndk, a, glob, alpha, z_sampler, **kw)

    def extra(self, seed, iteration, sh, z, ndk, a, glob, alpha, z_sampler):
        """The extra sweeps, with the eta, a and Phi tables the library's sweep gets."""
        from dolda.sampler import polya
        from dolda.sampler.alpha import as_alpha
        from dolda.sampler.supervised import _sweep_supervised_mh

        if z_sampler != "mh" or isinstance(glob.tables, polya.SparsePhi):
            raise ValueError("extra sweeps: the MH z-sampler with the exact Phi only")
        n_x = sh.X.shape[1]
        eta_topics = np.ascontiguousarray(glob.eta[:, n_x:])
        base = a - self.shard.row_products(sh.X, glob.eta[:, :n_x])  # as topic_step forms it
        alpha_k = as_alpha(alpha, ndk.shape[1])
        t = glob.tables
        for j in range(1, self.n_sweeps):
            _sweep_supervised_mh(sh.tokens, sh.doc_ptr, z, ndk, glob.phi_wk, t.prob, t.alias,
                                 t.mass, t.row, alpha_k, eta_topics, base, sweep_seed(seed, j),
                                 iteration, sh.doc_offset)


def _chain(corpus, y, K, threads, seed):
    from bench_dolda import DOLDAContestant

    c = DOLDAContestant(corpus, y, K, threads, z_sampler="mh")  # default exact Phi
    assert c.params["phi_sampler"] == "exact" and c.params["z_sampler"] == "mh"
    assert c.params["loglik_every"] == 1
    c.chain.seed = seed  # the same random start for every arm (init_state seed 1)
    return c


def check(corpus, y, K, threads, iters, seed=1):
    """Assert S = 1 through the wrapper is the library's chain and S = 2 is not."""
    patch = ExtraSweeps()
    ref = _chain(corpus, y, K, threads, seed)
    ref.run(iters)  # the library's topic_step
    out = {}
    patch.install()
    try:
        for S in (1, 2):
            patch.n_sweeps = S
            c = _chain(corpus, y, K, threads, seed)
            c.run(iters)
            out[S] = (np.array_equal(c.chain.state.z, ref.chain.state.z),
                      np.array_equal(c.chain.state.phi, ref.chain.state.phi),
                      float(np.mean(c.chain.state.z != ref.chain.state.z)))
            del c
    finally:
        patch.remove()
    assert out[1][0] and out[1][1], f"S=1 differs from the library's chain at K={K}"
    assert not out[2][0], f"S=2 gave the library's z at K={K}: the extra sweeps did nothing"
    print(f"check K={K}: after {iters} iterations S=1 z and Phi identical to the library's "
          f"chain; S=2 differs in {out[2][2]:.3f} of z", flush=True)
    return {"K": K, "iterations": iters, "seed": seed, "s1_same_z": out[1][0],
            "s1_same_phi": out[1][1], "s2_share_of_z_differing": out[2][2]}


def check_mode(args, results):
    from bench_dolda import load_corpus

    train, _, corpus = load_corpus(args.data)
    y = train.label.to_numpy()
    checks = results.setdefault("checks", [])
    for K in args.topics:
        row = check(corpus, y, K, args.threads, args.check_iters)
        checks[:] = [r for r in checks if r["K"] != K] + [row]


def mixing_mode(args, results):
    from bench_z_cycle import _plug_in_accuracy, interleaved, newsgroups_with_test

    corpus, y, test_corpus, test_y = newsgroups_with_test(args.data)
    mix = results.setdefault("mixing", {})
    runs = mix.setdefault("runs", [])
    blocks = mix.setdefault("blocks", [])
    checks = results.setdefault("checks", [])
    for K in args.topics:
        row = check(corpus, y, K, args.threads, args.check_iters)  # also compiles, untimed
        checks[:] = [r for r in checks if r["K"] != K] + [row]
        for seed in args.seeds:
            load_before = os.getloadavg()
            wall = time.perf_counter()
            chains = {S: _chain(corpus, y, K, args.threads, seed) for S in args.sweeps}
            patch = ExtraSweeps().install()
            try:
                trace = interleaved(chains, args.budget,
                                    lambda S: setattr(patch, "n_sweeps", S))
            finally:
                patch.remove()
            for S, c in chains.items():
                with c._using(c.threads):
                    train_acc, test_acc = _plug_in_accuracy(c.chain, test_corpus.tokens,
                                                            test_corpus.doc_ptr, test_y)
                tr = np.array(trace[S])
                runs[:] = [r for r in runs if (r["K"], r["seed"], r["sweeps"]) != (K, seed, S)]
                runs.append({"K": K, "seed": seed, "sweeps": S, "budget_s": args.budget,
                             "iterations": len(tr), "time_s": tr[:, 0].tolist(),
                             "loglik_lda": tr[:, 1].tolist(), "loglik_do": tr[:, 2].tolist(),
                             "train_accuracy": train_acc, "test_accuracy": test_acc})
                print(f"K={K} seed={seed} S={S} {len(tr)} it, loglik_lda {tr[-1, 1]:.6g}, "
                      f"loglik_do {tr[-1, 2]:.6g}, train acc {train_acc:.3f}, "
                      f"test acc {test_acc:.3f}", flush=True)
            load_after = os.getloadavg()
            blocks[:] = [b for b in blocks if (b["K"], b["seed"]) != (K, seed)]
            blocks.append({"K": K, "seed": seed, "load_before": list(load_before),
                           "load_after": list(load_after),
                           "wall_s": time.perf_counter() - wall})
            print(f"K={K} seed={seed} load before {load_before}, after {load_after}",
                  flush=True)
            del chains
    mix["threads"] = args.threads
    mix["commands"] = sorted(set(mix.get("commands", [])) | {" ".join(sys.argv)})


def _at(run, key, t):
    """``run[key]`` at the last iteration finished by time ``t`` (NaN before the first)."""
    i = np.searchsorted(np.asarray(run["time_s"]), t, side="right") - 1
    return run[key][i] if i >= 0 else float("nan")


def _reach(run, goal):
    """Seconds until ``run``'s LDA log-likelihood first reaches ``goal`` (None: never)."""
    hit = [t for t, ll in zip(run["time_s"], run["loglik_lda"]) if ll >= goal]
    return hit[0] if hit else None


def _difference_cells(r, ref):
    """The table cells of ``r`` minus ``ref``: LDA log-likelihood at the budget's fractions,
    then the final DO log-likelihood, training and test accuracy."""
    b = ref["budget_s"]
    d = " | ".join(f"{_at(r, 'loglik_lda', f * b) - _at(ref, 'loglik_lda', f * b):+.4g}"
                   for f in FRACTIONS)
    return (f"{d} | {r['loglik_do'][-1] - ref['loglik_do'][-1]:+.4g} | "
            f"{r['train_accuracy'] - ref['train_accuracy']:+.3f} | "
            f"{r['test_accuracy'] - ref['test_accuracy']:+.3f} |")


def write_markdown(results):
    lines = ["# S supervised z-sweeps per Phi draw (20 Newsgroups train, alpha 0.1, beta 0.01)",
             "", "Written by `benchmarks/bench_z_sweeps.py` (see its docstring for the method).",
             ""]
    if results.get("checks"):
        lines += ["## S = 1 is the library's chain", "",
                  "| K | iterations | S=1 same z | S=1 same Phi | S=2 share of z differing |",
                  "|---|---|---|---|---|"]
        for r in sorted(results["checks"], key=lambda r: r["K"]):
            lines.append(f"| {r['K']} | {r['iterations']} | {r['s1_same_z']} | "
                         f"{r['s1_same_phi']} | {r['s2_share_of_z_differing']:.3f} |")
        lines.append("")
    mix = results.get("mixing")
    if mix and mix.get("runs"):
        runs = mix["runs"]
        lines += [f"## Mixing per wall-clock second ({mix['threads']} threads, arms "
                  "interleaved iteration by iteration)", "",
                  "LDA log-likelihood (ll) at fractions of the budget of each arm's own step "
                  "time; DO log-likelihood and accuracies of the last state (train: argmax of "
                  "u_d . eta_l; test: plug-in rule of the last draw, 20 sweeps). 'to S=1 end': "
                  "seconds the arm needed to reach the LDA ll the S = 1 arm had at the end of "
                  "its budget.", "",
                  "| K | seed | S | iterations | s / it | ll @ 25% | ll @ 50% | ll @ 75% | "
                  "ll @ 100% | to S=1 end (s) | DO ll end | train acc | test acc |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(runs, key=lambda r: (r["K"], r["seed"], r["sweeps"])):
            b = r["budget_s"]
            ref = [m for m in runs if (m["K"], m["seed"], m["sweeps"]) == (r["K"], r["seed"], 1)]
            reach = "-"
            if ref and r["sweeps"] != 1:
                t = _reach(r, ref[0]["loglik_lda"][-1])
                reach = f"{t:.1f}" if t is not None else "not reached"
            lls = " | ".join(f"{_at(r, 'loglik_lda', f * b):.6g}" for f in FRACTIONS)
            lines.append(f"| {r['K']} | {r['seed']} | {r['sweeps']} | {r['iterations']} | "
                         f"{r['time_s'][-1] / r['iterations']:.3f} | {lls} | {reach} | "
                         f"{r['loglik_do'][-1]:.5g} | {r['train_accuracy']:.3f} | "
                         f"{r['test_accuracy']:.3f} |")
        lines.append("")
        lines += ["### Differences to S = 1 of the same seed (and the seed-to-seed spread of "
                  "S = 1)", "",
                  "| K | S | seed | d ll @ 25% | d ll @ 50% | d ll @ 75% | d ll @ 100% | "
                  "d DO ll end | d train acc | d test acc |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        keyed = {(r["K"], r["seed"], r["sweeps"]): r for r in runs}
        for K in sorted({r["K"] for r in runs}):
            seeds = sorted({r["seed"] for r in runs if r["K"] == K})
            for S in sorted({r["sweeps"] for r in runs if r["K"] == K and r["sweeps"] != 1}):
                for seed in seeds:
                    r, ref = keyed.get((K, seed, S)), keyed.get((K, seed, 1))
                    if r is None or ref is None:
                        continue
                    lines.append(f"| {K} | {S} | {seed} | {_difference_cells(r, ref)}")
            ones = [keyed[(K, s, 1)] for s in seeds if (K, s, 1) in keyed]
            if len(ones) == 2:
                a, c = ones
                lines.append(f"| {K} | 1 | seed {c['seed']} - seed {a['seed']} | "
                             f"{_difference_cells(c, a)}")
        lines.append("")
        lines += ["### Per iteration instead of per second", "",
                  "LDA and DO log-likelihood after the same number of iterations n (the fewest "
                  "any arm of the (K, seed) pair ran), for reference: what the extra sweeps buy "
                  "per iteration, before their cost.", "",
                  "| K | seed | n | " + " | ".join(f"ll S={S}" for S in (1, 2, 3)) + " | "
                  + " | ".join(f"DO ll S={S}" for S in (1, 2, 3)) + " |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for K, seed in sorted({(r["K"], r["seed"]) for r in runs}):
            arms = [keyed.get((K, seed, S)) for S in (1, 2, 3)]
            if any(a is None for a in arms):
                continue
            n = min(a["iterations"] for a in arms)
            lines.append(f"| {K} | {seed} | {n} | "
                         + " | ".join(f"{a['loglik_lda'][n - 1]:.6g}" for a in arms) + " | "
                         + " | ".join(f"{a['loglik_do'][n - 1]:.5g}" for a in arms) + " |")
        lines.append("")
        if mix.get("blocks"):
            lines += ["### Machine load (1, 5, 15-minute load averages; 2 cores, shared)", "",
                      "| K | seed | load before | load after | wall s |", "|---|---|---|---|---|"]
            for bl in sorted(mix["blocks"], key=lambda b: (b["K"], b["seed"])):
                fmt = ", ".join(f"{x:.2f}" for x in bl["load_before"])
                fmt2 = ", ".join(f"{x:.2f}" for x in bl["load_after"])
                lines.append(f"| {bl['K']} | {bl['seed']} | {fmt} | {fmt2} | "
                             f"{bl['wall_s']:.0f} |")
            lines.append("")
        if mix.get("commands"):
            lines += ["### Commands", "", "```"] + [
                "PYTHONPATH=src OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 "
                "DOLDA_DATA=/work/shared/data python " + c for c in mix["commands"]] + ["```", ""]
    if results.get("notes"):
        lines += ["## Reading", "", results["notes"], ""]
    (OUT / "z_sweeps.md").write_text("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["check", "mixing", "notes"],
                        help="notes: set the results' reading (--text) and rewrite the .md")
    parser.add_argument("--text", default="", help="notes mode: the reading paragraph")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--budget", type=float, default=60.0)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sweeps", type=int, nargs="+", default=[1, 2, 3],
                        help="the arms: z-sweeps per iteration")
    parser.add_argument("--check-iters", type=int, default=3,
                        help="iterations of the S=1 / library equality check")
    args = parser.parse_args(argv)
    path = OUT / "z_sweeps.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    if args.mode == "notes":
        results["notes"] = args.text
    else:
        {"check": check_mode, "mixing": mixing_mode}[args.mode](args, results)
    path.write_text(json.dumps(results, indent=1))
    write_markdown(results)


if __name__ == "__main__":
    main()
