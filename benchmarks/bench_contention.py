"""Fit time idle and beside N busy-loop processes, against the fair-share expectation.

Issue 37: on a shared machine a fit should slow down by its share of the CPU, no more.
Corpus: the Apache Storm bug reports of ``apache_jira_bugs`` (train and test splits,
966 reports, 11 components), ``DOLDA(n_topics=20, n_iter=100)`` with the defaults
(word covariates, ``n_words="auto"``) and topics-only (``n_words=0``), ``n_jobs`` 1 and 2.

Every (configuration, ``n_jobs``) runs in a worker process of its own, started once
(imports, numba's cached kernels and a warm-up fit are paid before any timing) and then
asked for one timed ``fit`` at a time.  Rounds alternate: idle (only what else runs on
the machine), then beside ``--busy`` processes ``python -c "while True: pass"`` (started
for the round, killed after it, bounded by ``timeout`` in any case); within a round the
workers take turns in a rotating order, so every one sees the same load.

The fair-share expectation of a fit on ``t`` threads beside ``N`` busy loops on ``C``
CPUs: every runnable thread gets ``C / (N + t)`` of a CPU when ``N + t > C``, so the fit
gets ``min(t, t C / (N + t))`` CPUs instead of ``min(t, C)``: a slowdown of
``(N + t) / C`` (3x for ``t = 2``, 2.5x for ``t = 1`` with ``N = 4``, ``C = 2``).  The
table gives the measured slowdown (median busy / median idle), the expectation, their
ratio, and the busy time of ``n_jobs=2`` over ``n_jobs=1``.  The 1-minute load average
before and after every round is recorded: other work on the machine blurs both the idle
and the busy figures.

BLAS threads are capped at 1 in the workers (``OPENBLAS_NUM_THREADS`` etc.; the fit
itself caps BLAS at ``n_jobs`` while it runs).  ``--env KEY=VALUE`` passes a setting
to the workers (e.g. ``OMP_WAIT_POLICY=ACTIVE`` to see the spinning pool).

Usage::

    python benchmarks/bench_contention.py [--busy 4] [--rounds 2] [--iters 100]
        [--topics 20] [--jobs 1 2] [--configs defaults topics] [--env KEY=VALUE ...]
        [--src OTHER_CHECKOUT/src] [--tag NAME]

Writes ``benchmarks/results/contention.json`` and ``.md`` (``contention_TAG.*`` with
``--tag``).  At its defaults it runs in about 6-8 minutes on an idle 2-core machine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "apache_jira_bugs"
BLAS_ENV = {"OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
CONFIGS = {"defaults": {}, "topics": {"n_words": 0}}
#: A busy loop never lives longer than this (seconds), whatever happens to this script.
BUSY_LIMIT = 1800


# ------------------------------------------------------------------ worker
def load_corpus(project):
    texts, y = [], []
    for split in ("train", "test"):
        with gzip.open(DATA / project / f"{split}.jsonl.gz", "rt", encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                texts.append(row["text"])
                y.append(row["label"])
    return texts, y


def worker(args):
    """Fit on request: one line on stdin -> one JSON line on stdout."""
    from dolda import DOLDA
    import numba

    texts, y = load_corpus(args.project)
    params = dict(n_topics=args.topics, random_state=0, n_jobs=args.n_jobs, progress=False,
                  **CONFIGS[args.config])
    DOLDA(n_iter=3, **params).fit(texts, y)  # imports, kernels from numba's cache
    print(json.dumps({"ready": True, "threading_layer": numba.threading_layer()}), flush=True)
    for _ in sys.stdin:
        wall, cpu = time.perf_counter(), time.process_time()
        model = DOLDA(n_iter=args.iters, **params).fit(texts, y)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        chain = float(np.nansum(model.timings_["iteration_seconds"]))
        print(json.dumps({"wall": wall, "cpu": cpu, "chain": chain,
                          "eta_sampler": model.eta_sampler_}), flush=True)


# ------------------------------------------------------------------ driver
def fair_share(threads, busy, cpus):
    """Expected slowdown of a fit on ``threads`` threads beside ``busy`` busy loops."""
    idle = min(threads, cpus)
    loaded = min(threads, threads * cpus / (busy + threads))
    return idle / loaded


class BusyLoops:
    """``n`` busy-loop processes for the ``with`` block (killed after it, by pid)."""

    def __init__(self, n):
        self.n, self.procs = n, []

    def __enter__(self):
        code = "while True: pass"
        self.procs = [subprocess.Popen(["timeout", str(BUSY_LIMIT), sys.executable, "-c", code])
                      for _ in range(self.n)]
        time.sleep(1.0)  # let them start before the first timing
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.terminate()  # `timeout` forwards the TERM to its busy loop, then exits
        for proc in self.procs:
            proc.wait()
        self.procs = []
        return False


def start_worker(config, n_jobs, args, extra_env):
    env = dict(os.environ, **BLAS_ENV, **extra_env)
    env["PYTHONPATH"] = str(args.src) + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [sys.executable, __file__, "--worker", "--config", config, "--n-jobs", str(n_jobs),
           "--iters", str(args.iters), "--topics", str(args.topics), "--project", args.project]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=env, stderr=subprocess.DEVNULL)
    return proc


def ask(proc):
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def summarise(runs, args, cpus):
    rows = []
    for (config, n_jobs), res in runs.items():
        idle = [r["wall"] for r in res["idle"]]
        busy = [r["wall"] for r in res["busy"]]
        slow = float(np.median(busy) / np.median(idle))
        expect = fair_share(n_jobs, args.busy, cpus)
        rows.append({"config": config, "n_jobs": n_jobs,
                     "idle_s": idle, "busy_s": busy,
                     "idle_chain_s": [r["chain"] for r in res["idle"]],
                     "busy_chain_s": [r["chain"] for r in res["busy"]],
                     "idle_cpu_s": [r["cpu"] for r in res["idle"]],
                     "busy_cpu_s": [r["cpu"] for r in res["busy"]],
                     "slowdown": slow, "fair_share": expect, "over_fair": slow / expect,
                     "eta_sampler": res["idle"][0]["eta_sampler"]})
    for row in rows:
        one = [r for r in rows if r["config"] == row["config"] and r["n_jobs"] == 1]
        row["busy_vs_n_jobs_1"] = (float(np.median(row["busy_s"]) / np.median(one[0]["busy_s"]))
                                   if one else None)
    return rows


def write(rows, meta, out, tag):
    name = "contention" + (f"_{tag}" if tag else "")
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    lines = [f"# Fit beside {meta['busy']} busy loops on {meta['cpus']} CPUs "
             f"(`bench_contention.py`{' --tag ' + tag if tag else ''})", "",
             f"Storm bug reports ({meta['project']}, train + test), K = {meta['topics']}, "
             f"{meta['iters']} iterations, {meta['rounds']} rounds (idle and busy alternating), "
             f"medians; worker env {meta['env'] or '{}'}; numba threading layer "
             f"{meta['threading_layer']}; source `{meta['src']}`.  Load average (1 min) before/after the rounds: "
             f"{', '.join(f'{a:.1f}/{b:.1f}' for a, b in meta['load'])}.", "",
             "| fit | n_jobs | idle s | busy s | slowdown | fair share | slowdown / fair "
             "| busy vs n_jobs=1 | chain idle / busy s | CPU idle / busy s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        vs1 = "" if r["busy_vs_n_jobs_1"] is None or r["n_jobs"] == 1 else \
            f"{r['busy_vs_n_jobs_1']:.2f}x"
        lines.append(
            f"| {r['config']} | {r['n_jobs']} | {np.median(r['idle_s']):.1f} | "
            f"{np.median(r['busy_s']):.1f} | {r['slowdown']:.2f}x | {r['fair_share']:.2f}x | "
            f"**{r['over_fair']:.2f}** | {vs1} | {np.median(r['idle_chain_s']):.1f} / "
            f"{np.median(r['busy_chain_s']):.1f} | {np.median(r['idle_cpu_s']):.1f} / "
            f"{np.median(r['busy_cpu_s']):.1f} |")
    lines += ["", "Slowdown: median busy wall time / median idle wall time of the whole "
              "`fit` (chain, calibration map, convergence check); chain: the iterations alone.",
              "Targets (issue 37): defaults with n_jobs=2 within 1.3x of the fair share, and "
              "not slower than n_jobs=1 under the same load.", ""]
    (out / f"{name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--busy", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--iters", type=int, default=100)
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--project", default="storm")
    parser.add_argument("--env", nargs="*", default=[], help="KEY=VALUE for the workers")
    parser.add_argument("--tag", default="")
    parser.add_argument("--src", default=str(ROOT / "src"),
                        help="the dolda source tree the workers import (another checkout's "
                             "src/ for a before/after comparison)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--config", default="defaults", help=argparse.SUPPRESS)
    parser.add_argument("--n-jobs", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)

    extra_env = dict(kv.split("=", 1) for kv in args.env)
    # a TERM (e.g. from `timeout`) unwinds like Ctrl-C: the busy loops and workers are killed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    cpus = len(os.sched_getaffinity(0))
    keys = [(c, j) for c in args.configs for j in args.jobs]
    workers = {key: start_worker(*key, args, extra_env) for key in keys}
    runs = {key: {"idle": [], "busy": []} for key in keys}
    load, layer = [], None
    try:
        for key, proc in workers.items():
            hello = json.loads(proc.stdout.readline())
            layer = hello["threading_layer"]
        for rnd in range(args.rounds):
            for phase in ("idle", "busy"):
                order = keys[rnd % len(keys):] + keys[:rnd % len(keys)]
                before = os.getloadavg()[0]
                with BusyLoops(args.busy if phase == "busy" else 0):
                    for key in order:
                        res = ask(workers[key])
                        runs[key][phase].append(res)
                        print(f"round {rnd} {phase:4s} {key[0]:8s} n_jobs={key[1]} "
                              f"wall {res['wall']:6.1f} s chain {res['chain']:6.1f} s "
                              f"cpu {res['cpu']:6.1f} s", flush=True)
                load.append((before, os.getloadavg()[0]))
    finally:
        for proc in workers.values():
            proc.kill()
            proc.wait()
    meta = {"busy": args.busy, "cpus": cpus, "rounds": args.rounds, "iters": args.iters,
            "topics": args.topics, "project": args.project, "env": extra_env, "src": args.src,
            "threading_layer": layer, "load": load, "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    write(summarise(runs, args, cpus), meta, Path(args.out), args.tag)


if __name__ == "__main__":
    main()
