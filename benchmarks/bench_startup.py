"""Start-up cost: ``dolda demo`` with an empty numba cache (right after an install) and with a
warm one, ``import dolda``, and which kernels the demo compiles.

* ``cold``: ``dolda demo -q`` in a fresh process with ``NUMBA_CACHE_DIR`` pointing at a new,
  empty directory, so every kernel is compiled (what a user sees right after
  ``pip install``);
* ``cached``: the same command again with that directory filled by the cold run;
* ``cold, no helper``: ``cold`` with ``DOLDA_COMPILE_AHEAD=0``, so that the demo's own
  process compiles every kernel, one after another (as before the compile helper of
  ``dolda.cli._compile_ahead``, which compiles the demo's later kernels on the second core);
* ``import``: ``python -c "import dolda"`` and ``python -c "import dolda.cli"``;
* ``compile profile`` (``--profile``): the first ``cold, no helper`` run is the demo
  in-process with a numba compile-event listener: seconds per kernel compiled and the
  number of specialisations of every dolda kernel afterwards (each should compile once).

Cold and cached runs are interleaved (``--rounds`` pairs).  Wall and CPU seconds (user +
system of the child) are both recorded: on a busy machine the wall time overstates the
cost, the CPU time of the compile (single-threaded) does not.

``--quick`` times the imports only (no demo).

Usage::

    python -m benchmarks.bench_startup [--rounds 2] [--profile] [-- demo options]
    python -m benchmarks.bench_startup --quick

Writes ``benchmarks/results/startup.json`` and ``.md``.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import harness

ROOT = harness.ROOT


def _run(cmd, env):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    tic = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - tic
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} failed:\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_seconds": wall, "cpu_seconds": cpu, "output": proc.stdout}


def _env(cache_dir):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    env["NUMBA_CACHE_DIR"] = str(cache_dir)
    return env


PROFILE = r'''
import json, sys, time
from numba.core import event
from numba.core.registry import CPUDispatcher

class Listener(event.Listener):
    def __init__(self):
        self.stack, self.out = [], []
    def on_start(self, ev):
        self.stack.append(time.perf_counter())
    def on_end(self, ev):
        t = self.stack.pop()
        if not self.stack:  # top-level compiles only (callees are inside)
            d = ev.data["dispatcher"]
            self.out.append((d.py_func.__module__ + "." + d.py_func.__qualname__,
                             time.perf_counter() - t))

listener = Listener()
event.register("numba:compile", listener)
from click.testing import CliRunner
from dolda.cli import main
result = CliRunner().invoke(main, sys.argv[1:])
assert result.exit_code == 0, result.output
kernels = {}
for name, mod in list(sys.modules.items()):
    if name.startswith("dolda"):
        for attr in vars(mod).values():
            if isinstance(attr, CPUDispatcher) and attr.py_func.__module__ == name:
                if attr.signatures:
                    kernels[name + "." + attr.py_func.__qualname__] = len(attr.signatures)
print(json.dumps({"compiles": listener.out, "specialisations": kernels}))
'''


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("demo_args", nargs="*", default=["-q"])
    args = parser.parse_args(argv)
    run = harness.start("startup", args, argv)
    n_rounds = harness.rounds(args, full=2, quick=2)
    demo = [sys.executable, "-m", "dolda.cli", "demo", *args.demo_args]
    kinds = () if args.quick else ("cold", "cached", "cold, no helper")
    rows = []
    profile = None
    with tempfile.TemporaryDirectory(prefix="dolda_startup_") as tmp:
        for r in range(n_rounds):
            cache = Path(tmp) / f"numba_cache_{r}"
            env = _env(cache)
            for kind in ("import dolda", "import dolda.cli"):
                res = _run([sys.executable, "-c", kind], env)
                rows.append({"round": r, "what": kind, **{k: v for k, v in res.items()
                                                           if k != "output"}})
            serial_env = dict(_env(Path(tmp) / f"numba_cache_serial_{r}"),
                              DOLDA_COMPILE_AHEAD="0")
            for kind in kinds:
                # the first serial cold run records the compile profile (the listener costs
                # nothing); "no helper": every kernel compiled by the demo's own process
                cmd = demo
                if kind == "cold, no helper" and r == 0 and args.profile:
                    cmd = [sys.executable, "-c", PROFILE, "demo", *args.demo_args]
                res = _run(cmd, serial_env if kind == "cold, no helper" else env)
                if cmd is not demo:
                    profile = json.loads(res["output"].strip().splitlines()[-1])
                    profile["wall_seconds"] = res["wall_seconds"]
                    profile["cpu_seconds"] = res["cpu_seconds"]
                rows.append({"round": r, "what": f"demo {kind}",
                             **{k: v for k, v in res.items() if k != "output"}})
                print(f"round {r} demo {kind}: {res['wall_seconds']:.1f} s wall, "
                      f"{res['cpu_seconds']:.1f} s CPU", flush=True)
    summary = {}
    for what in dict.fromkeys(r["what"] for r in rows):
        walls = sorted(r["wall_seconds"] for r in rows if r["what"] == what)
        cpus = sorted(r["cpu_seconds"] for r in rows if r["what"] == what)
        summary[what] = {"wall_median": walls[len(walls) // 2], "wall_min": walls[0],
                         "cpu_median": cpus[len(cpus) // 2], "cpu_min": cpus[0]}
    result = {"demo_command": " ".join(demo[1:]) if kinds else None, "rounds": n_rounds,
              "summary": summary, "rows": rows, "compile_profile": profile}
    run.finish(result, markdown(result), "Start-up")
    return result


def markdown(result):
    lines = [f"Demo: `{result['demo_command']}`; {result['rounds']} interleaved rounds (wall "
             "time inflates with the load; CPU time is user + system of the process).",
             "", "| what | wall median s | wall min s | CPU median s | CPU min s |",
             "|---|---|---|---|---|"]
    for what, s in result["summary"].items():
        lines.append(f"| {what} | {s['wall_median']:.2f} | {s['wall_min']:.2f} | "
                     f"{s['cpu_median']:.2f} | {s['cpu_min']:.2f} |")
    p = result.get("compile_profile")
    if p:
        total = sum(t for _, t in p["compiles"])
        lines += ["", "Compile profile (one in-process demo, empty cache, no helper: "
                  f"{p['wall_seconds']:.1f} s wall, {p['cpu_seconds']:.1f} s CPU; "
                  f"{total:.1f} s wall in top-level compiles):", "",
                  "| kernel | compile s (wall) |", "|---|---|"]
        for name, t in sorted(p["compiles"], key=lambda x: -x[1]):
            lines.append(f"| {name} | {t:.2f} |")
        multi = {k: n for k, n in p["specialisations"].items() if n > 1}
        lines += ["", f"Kernels with more than one specialisation after the demo: "
                  f"{multi or 'none'} (of {len(p['specialisations'])} compiled)."]
    return lines


if __name__ == "__main__":
    main()
