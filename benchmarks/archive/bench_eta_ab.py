"""Interleaved A/B of two dolda trees on DOLDA's eta-step (issue 13): 20 Newsgroups, K topics.

Two persistent worker processes, one per tree (``PYTHONPATH`` = ``--old`` / ``--new``),
each build the chain ``bench_dolda.py`` builds (20 Newsgroups train, topics-only covariates:
P = K + 1, L = 20, Horseshoe, ``--threads`` threads), run ``--warmup`` untimed iterations,
then take turns: in every round one worker runs ``--iters`` iterations while the other
waits, then the other (the order alternates from round to round), so a change in the
machine's load falls on both.  Per iteration the blocks are timed by wrapping the module
attributes the iteration calls (as ``profile_dolda.py`` does):

* ``eta``      -- :func:`dolda.sampler.chain.global_eta_step` (eta + Horseshoe scales);
* ``utility``  -- :func:`dolda.sampler.shard.utility_step` over the shards (a-step, ``U^T U``);
* ``iteration`` -- the whole :func:`dolda.sampler.chain.dolda_step`;

and, after the iterations of a round, :func:`dolda.sampler.chain.eta_step` alone is
timed ``--eta-repeats`` times on the inputs of the round's last iteration (``eta_alone``).
The two chains start from the same seed; every iteration's eta is hashed, and the
result says whether old and new drew the same bits all along.

    python benchmarks/archive/bench_eta_ab.py --old /tmp/eta-old/src --new src --topics 1000 100

writes ``benchmarks/results/eta_k1000.json`` and ``eta_k1000.md`` (``--out`` for another name).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BLOCKS = ("iteration", "eta", "utility", "eta_alone")


def _load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ------------------------------------------------------------------ worker
def worker(args):
    sys.path.insert(0, str(Path(__file__).parents[1]))  # bench_dolda.py
    from bench_dolda import DOLDAContestant, load_corpus

    from dolda.sampler import chain, shard
    from dolda.sampler.threads import using_threads

    train, _, corpus = load_corpus(args.data)
    contestant = DOLDAContestant(corpus, train.label.to_numpy(), args.topics[0], args.threads)
    table = {}
    last = {}

    def timed(module, name, label, keep=False):
        fn = getattr(module, name)

        def run(*a, **k):
            tic = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                table[label] = table.get(label, 0.0) + time.perf_counter() - tic
                if keep:
                    last["args"] = a

        setattr(module, name, run)
        return fn

    timed(shard, "utility_step", "utility")
    timed(chain, "global_eta_step", "eta")
    eta_step = timed(chain, "eta_step", "_eta_step", keep=True)
    contestant.run(args.warmup)
    print(json.dumps({"ready": dolda_file()}), flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        record = {b: [] for b in BLOCKS}
        record["eta_hash"] = []
        for _ in range(args.iters):
            table.clear()
            record["iteration"].append(contestant.run(1))
            record["eta"].append(table.get("eta", 0.0))
            record["utility"].append(table.get("utility", 0.0))
            record["eta_hash"].append(hashlib.sha1(
                contestant.chain.state.probit.eta.tobytes()).hexdigest())
        with using_threads(args.threads):
            for _ in range(args.eta_repeats):
                tic = time.perf_counter()
                eta_step(*last["args"])
                record["eta_alone"].append(time.perf_counter() - tic)
        print(json.dumps(record), flush=True)


def dolda_file():
    import dolda

    return dolda.__file__


# ------------------------------------------------------------------ driver
def start(src, K, args):
    env = dict(os.environ, PYTHONPATH=str(Path(src).resolve()), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "worker", "--topics", str(K), "--threads",
           str(args.threads), "--iters", str(args.iters), "--warmup", str(args.warmup),
           "--eta-repeats", str(args.eta_repeats), "--data", str(args.data)]
    proc = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    ready = json.loads(proc.stdout.readline())
    return proc, ready["ready"]


def one_round(proc):
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def compare(K, args):
    old, old_file = start(args.old, K, args)
    new, new_file = start(args.new, K, args)
    runs = {"old": {b: [] for b in BLOCKS}, "new": {b: [] for b in BLOCKS}}
    hashes = {"old": [], "new": []}
    load_before = _load()
    for r in range(args.rounds):
        order = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
        for name, proc in order:
            rec = one_round(proc)
            for b in BLOCKS:
                runs[name][b].extend(rec[b])
            hashes[name].extend(rec["eta_hash"])
        print(f"K={K} round {r + 1}/{args.rounds}: " + ", ".join(
            f"{n} eta {np.median(runs[n]['eta']):.3f} s it {np.median(runs[n]['iteration']):.3f} s"
            for n in ("old", "new")), flush=True)
    for proc in (old, new):
        proc.stdin.write("stop\n")
        proc.stdin.close()
        proc.wait()
    summary = {}
    for b in BLOCKS:
        o, n = np.median(runs["old"][b]), np.median(runs["new"][b])
        summary[b] = {"old_median_s": float(o), "new_median_s": float(n),
                      "old_min_s": float(np.min(runs["old"][b])),
                      "new_min_s": float(np.min(runs["new"][b])),
                      "speedup": float(o / n), "n": len(runs["old"][b])}
    return {"K": K, "P": K + 1, "files": {"old": old_file, "new": new_file},
            "load_before": load_before, "load_after": _load(), "summary": summary,
            "same_eta_bits_every_iteration": hashes["old"] == hashes["new"],
            "iterations_compared": len(hashes["old"]), "raw": runs}


LABELS = {"iteration": "whole iteration (dolda_step)",
          "eta": "eta + shrinkage (global_eta_step)",
          "utility": "a-step + U^T U (utility_step, all shards)",
          "eta_alone": "eta_step alone, same inputs"}


def write(results, args, out):
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    out.with_suffix(".json").write_text(json.dumps(
        {"command": " ".join(sys.argv), "uptime_at_end": uptime, "results": results},
        indent=1) + "\n")
    lines = ["# DOLDA eta-step, old vs new tree (issue 13)", "",
             f"`{' '.join(['python'] + sys.argv)}`: 20 Newsgroups train, topics-only "
             f"covariates (P = K + 1), L = 20, {args.threads} threads; {args.warmup} untimed "
             f"warm-up iterations, then {args.rounds} alternating rounds of {args.iters} "
             f"iterations per tree (eta_step alone: {args.eta_repeats} repeats per round); "
             "medians over all timed iterations.", "",
             f"`uptime` at the end: `{uptime}` (2 cores, shared with other jobs).", ""]
    for res in results:
        lines += [f"## K = {res['K']} (P = {res['P']})", "",
                  f"Load average (1, 5, 15 min) before {res['load_before']}, after "
                  f"{res['load_after']}.  Old and new drew the same eta, bit for bit, on all "
                  f"{res['iterations_compared']} iterations compared: "
                  f"{res['same_eta_bits_every_iteration']}.", "",
                  "| block | old median s | new median s | old min s | new min s | old / new |",
                  "|---|---|---|---|---|---|"]
        for b in BLOCKS:
            s = res["summary"][b]
            lines.append(f"| {LABELS[b]} | {s['old_median_s']:.3f} | {s['new_median_s']:.3f} | "
                         f"{s['old_min_s']:.3f} | {s['new_min_s']:.3f} | {s['speedup']:.2f} |")
        lines.append("")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", nargs="?", default="compare", choices=["compare", "worker"])
    parser.add_argument("--old", default="/tmp/eta-old/src")
    parser.add_argument("--new", default=str(ROOT / "src"))
    parser.add_argument("--topics", type=int, nargs="+", default=[1000, 100])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--iters", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--eta-repeats", type=int, default=3)
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "DOLDA_DATA", ROOT.parent / "shared" / "data")))
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "eta_k1000")
    args = parser.parse_args(argv)
    if args.mode == "worker":
        return worker(args)
    results = [compare(K, args) for K in args.topics]
    write(results, args, args.out)
    for res in results:
        print(res["K"], {b: round(s["speedup"], 2) for b, s in res["summary"].items()},
              "same bits:", res["same_eta_bits_every_iteration"])


if __name__ == "__main__":
    main()
