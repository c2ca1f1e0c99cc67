"""Peak memory of ``dolda.LDA.fit`` on 20 Newsgroups train, code versions side by side.

Each contender is a source tree (``NAME=PATH``, PATH holding the ``dolda`` package); every
round fits ``dolda.LDA(n_topics=K, n_iter=I, burn_in=I // 2)`` once per contender, each in a
fresh process (interleaved), and reads its peak resident set size (``ru_maxrss``).  The
corpus is loaded and tokenised inside the measured process, as a user's fit would.

Usage::

    python benchmarks/lda_memory.py --topics 1000 --iters 6 --rounds 2 \\
        --contender before=/path/to/old/src --contender after=src

Writes ``benchmarks/results/lda_memory.json`` and ``.md``.
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

CHILD = """
import resource, sys, time
from dolda import LDA
from dolda.datasets import load_20newsgroups
train = load_20newsgroups(sys.argv[1], "train")
K, iters = int(sys.argv[2]), int(sys.argv[3])
t = time.perf_counter()
LDA(n_topics=K, n_iter=iters, burn_in=iters // 2, alpha=0.1, beta=0.01, random_state=1,
    progress=False, n_jobs=2).fit(train.text.tolist())
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, time.perf_counter() - t)
"""


def run_one(src, data, K, iters):
    env = dict(os.environ, PYTHONPATH=str(src), OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, str(data), str(K), str(iters)],
                         env=env, capture_output=True, text=True, check=True)
    peak, seconds = out.stdout.split()[-2:]
    return int(peak), float(seconds)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--iters", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--contender", action="append", required=True,
                        help="NAME=PATH of a source tree holding the dolda package")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    contenders = dict(c.split("=", 1) for c in args.contender)
    load = [os.getloadavg()[0]]
    runs = {name: [] for name in contenders}
    for _ in range(args.rounds):
        for name, src in contenders.items():
            runs[name].append(run_one(Path(src).resolve(), args.data, args.topics, args.iters))
    load.append(os.getloadavg()[0])
    result = {"topics": args.topics, "iterations": args.iters, "rounds": args.rounds,
              "load": load, "machine": platform.machine(), "date": time.strftime("%Y-%m-%d"),
              "contenders": {name: {"src": str(src), "peak_bytes": [p for p, _ in runs[name]],
                                    "seconds": [s for _, s in runs[name]]}
                             for name, src in contenders.items()}}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "lda_memory.json").write_text(json.dumps(result, indent=1))
    lines = ["# Peak memory of dolda.LDA.fit (20 Newsgroups train)", "",
             f"`benchmarks/lda_memory.py`: K = {args.topics}, {args.iters} iterations "
             f"(burn-in {args.iters // 2}), 2 threads, one fresh process per fit, "
             f"{args.rounds} interleaved rounds; load {load[0]:.1f} before, {load[1]:.1f} "
             "after.", "",
             "| contender | peak RSS (GB), per round | median | fit s (median) |",
             "|---|---|---|---|"]
    for name in contenders:
        peaks = [p / 1e9 for p, _ in runs[name]]
        secs = [s for _, s in runs[name]]
        lines.append(f"| {name} | {', '.join(f'{p:.2f}' for p in peaks)} | "
                     f"{np.median(peaks):.2f} | {np.median(secs):.1f} |")
    (args.out / "lda_memory.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
