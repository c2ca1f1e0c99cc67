"""Idle cost of the passive OpenMP wait policy: chain iterations with and without spinning.

``import dolda`` sets ``OMP_WAIT_POLICY=PASSIVE`` when the user chose no policy
(:func:`dolda.sampler.threads.limit_spin_wait`, issue 37): numba's OpenMP threads sleep
at the end of a parallel region instead of spinning 300,000 rounds (GNU libgomp's default).
This measures what that costs on an idle machine: two worker processes hold a live DOLDA
chain each (built as ``bench_dolda.py`` builds it: ``n_words=0``, the estimator's z- and
Phi-steps for K), one with the new default, one with ``GOMP_SPINCOUNT=300000`` (libgomp's
spinning as before; an explicit setting, so dolda leaves it alone).  They take turns running
``--round-iters`` iterations, ``--rounds`` times; the table gives the median seconds per
iteration and the ratio passive / spinning, with the load average (the machine is shared).

Corpus: ``--docs`` documents drawn at random (seed 0) from the 20 Newsgroups "bydate" training split.

Usage::

    python benchmarks/bench_wait_policy.py [--data ../shared/data] [--topics 100 1000]
        [--docs 4000] [--threads 2] [--rounds 5] [--round-iters 2]

Writes ``benchmarks/results/wait_policy.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
POLICIES = {"passive (default)": {}, "spinning (GOMP_SPINCOUNT=300000)":
            {"GOMP_SPINCOUNT": "300000"}}


def worker(args):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from bench_dolda import DOLDAContestant

    from dolda.design.corpus import Vocabulary
    from dolda.datasets import load_20newsgroups

    train = load_20newsgroups(args.data, "train")
    train = train.sample(n=min(args.docs, len(train)), random_state=0)  # sorted by label
    corpus = Vocabulary().fit_transform(train.text.tolist())
    chain = DOLDAContestant(corpus, train.label.to_numpy(), args.k, args.threads)
    chain.run(2)  # compile / warm up
    print(json.dumps({"ready": True}), flush=True)
    for _ in sys.stdin:
        print(json.dumps({"s_per_it": chain.run(args.round_iters)}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--docs", type=int, default=4000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--round-iters", type=int, default=2)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--k", type=int, default=100, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    rows, load = [], [os.getloadavg()[0]]
    for K in args.topics:
        procs = {}
        for name, extra in POLICIES.items():
            env = {k: v for k, v in os.environ.items()
                   if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")}
            env.update(extra, OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
                       PYTHONPATH=str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", ""))
            procs[name] = subprocess.Popen(
                [sys.executable, __file__, "--worker", "--k", str(K), "--data", args.data,
                 "--docs", str(args.docs), "--threads", str(args.threads),
                 "--round-iters", str(args.round_iters)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        try:
            for proc in procs.values():
                json.loads(proc.stdout.readline())
            times = {name: [] for name in procs}
            names = list(procs)
            for rnd in range(args.rounds):
                for name in (names if rnd % 2 == 0 else names[::-1]):
                    procs[name].stdin.write("go\n")
                    procs[name].stdin.flush()
                    times[name].append(json.loads(procs[name].stdout.readline())["s_per_it"])
        finally:
            for proc in procs.values():
                proc.kill()
                proc.wait()
        load.append(os.getloadavg()[0])
        med = {name: float(np.median(t)) for name, t in times.items()}
        rows.append({"K": K, "s_per_it": times, "median": med,
                     "passive_over_spinning": med[names[0]] / med[names[1]]})
        print(rows[-1], flush=True)

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    meta = {"docs": args.docs, "threads": args.threads, "rounds": args.rounds,
            "round_iters": args.round_iters, "load": load,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    (out / "wait_policy.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    names = list(POLICIES)
    lines = ["# Chain iterations with passive and spinning OpenMP waits (`bench_wait_policy.py`)",
             "", f"20 Newsgroups train, {args.docs} documents (random, seed 0), n_words=0, "
             f"{args.threads} threads, {args.rounds} alternating rounds of {args.round_iters} "
             f"iterations; load average (1 min) at the start and after each K: "
             f"{', '.join(f'{x:.1f}' for x in load)}.", "",
             f"| K | {names[0]} s/it | {names[1]} s/it | passive / spinning |", "|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['K']} | {r['median'][names[0]]:.3f} | {r['median'][names[1]]:.3f} "
                     f"| {r['passive_over_spinning']:.2f} |")
    lines.append("")
    (out / "wait_policy.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
