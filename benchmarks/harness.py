"""The one harness every benchmark runs on.

A benchmark script does three things through it:

1. ``args = harness.parser(__doc__).parse_args(argv)`` -- the common options
   (``--quick``, ``--rounds``, ``--threads``, ``--blas-threads``, ``--out``, ``--data``)
   plus its own;
2. ``run = harness.start("NAME", args)`` -- records the machine (platform, CPU count and
   affinity, load average, library versions, the git commit) and caps the BLAS pools at
   ``--blas-threads`` through threadpoolctl for the rest of the run, so that numba's
   threads and BLAS's do not compete for the same cores unseen;
3. ``run.interleave({...})`` for timed contestants (warm-up, then rounds A B A B ...: a
   load spike on a shared machine then hits every contestant of a round alike, which is
   why the per-round ratio, not the ratio of two medians, is the figure to read), and
   ``run.finish(result, lines)`` to write ``NAME.json`` and ``NAME.md`` into ``--out``
   (``benchmarks/results/`` by default; a ``--quick`` run goes to
   ``benchmarks/results/quick/``, which git ignores, so a smoke run never replaces a
   measurement).

Contestants are compared to a reference (the first contestant unless named): the ratio of
a round is the contestant's time over the reference's in that round, so below 1 means
faster, and ``speed_ratio`` is its inverse.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DEFAULT_DATA = Path(os.environ.get("DOLDA_DATA", ROOT.parent / "shared" / "data"))
DEFAULT_BLAS_THREADS = 1


def parser(doc: str | None, **kwargs) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark takes."""
    first = (doc or "").strip().splitlines()[0] if doc else None
    p = argparse.ArgumentParser(description=first, **kwargs)
    p.add_argument("--quick", action="store_true",
                   help="a smoke run on tiny simulated data (seconds); writes to "
                        "benchmarks/results/quick/ unless --out is given")
    p.add_argument("--rounds", type=int, default=None,
                   help="interleaved rounds per contestant (the script's default if omitted)")
    p.add_argument("--threads", type=int, default=2, help="dolda's n_jobs")
    p.add_argument("--blas-threads", type=int, default=DEFAULT_BLAS_THREADS,
                   help="BLAS threads, capped through threadpoolctl")
    p.add_argument("--out", type=Path, default=None, help="folder of the result files")
    p.add_argument("--data", type=Path, default=DEFAULT_DATA,
                   help="the shared data folder (not read by --quick)")
    return p


def rounds(args, full: int, quick: int = 2) -> int:
    """``--rounds`` if given, else the script's default for a full or a quick run."""
    if args.rounds is not None:
        if args.rounds < 1:
            raise SystemExit(f"--rounds must be >= 1, got {args.rounds}")
        return args.rounds
    return quick if args.quick else full


# ------------------------------------------------------------------ the machine
def git_commit() -> dict:
    def git(*cmd):
        out = subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else None

    status = git("status", "--porcelain", "--untracked-files=no", "--", "src")
    return {"commit": git("rev-parse", "HEAD"), "src_modified": bool(status)}


def _version(name):
    try:
        module = __import__(name)
    except ImportError:
        return None
    return getattr(module, "__version__", "unknown")


def machine(blas_threads: int | None = None) -> dict:
    """Where and with what the run happens; the load average is read now."""
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        affinity = None
    from threadpoolctl import threadpool_info

    pools = [{k: p.get(k) for k in ("user_api", "internal_api", "num_threads")}
             for p in threadpool_info()]
    return {"platform": platform.platform(), "python": platform.python_version(),
            "cpu_count": os.cpu_count(), "affinity": affinity,
            "load_average": list(os.getloadavg()),
            "versions": {n: _version(n) for n in ("numpy", "numba", "scipy", "tomotopy")},
            "blas_threads_cap": blas_threads, "thread_pools": pools, **git_commit()}


def optional(name: str):
    """The module ``name``, or None when it cannot be imported (a peer that may be absent)."""
    try:
        return __import__(name)
    except ImportError:
        return None


# ------------------------------------------------------------------ rounds
def interleave(contestants: Mapping[str, Callable[[], float | None]], rounds: int,
               warmup: int = 1, log: list | None = None) -> dict[str, list[float]]:
    """Seconds per round of each contestant, run A B C A B C ... after ``warmup`` calls each.

    A contestant is a callable; it returns its own measured seconds as a Python float (to
    leave set-up out of the timing), or anything else (None, a prediction), in which case
    the whole call is timed.  ``log`` (a list), if
    given, receives the order of the calls as ``(phase, name)``.
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not contestants:
        raise ValueError("no contestants")
    for name, fn in contestants.items():
        for _ in range(warmup):
            if log is not None:
                log.append(("warmup", name))
            fn()
    times = {name: [] for name in contestants}
    for _ in range(rounds):
        for name, fn in contestants.items():
            if log is not None:
                log.append(("round", name))
            tic = time.perf_counter()
            value = fn()
            elapsed = time.perf_counter() - tic
            own = isinstance(value, (float, int)) and not isinstance(value, bool)
            times[name].append(float(value) if own else elapsed)
    return times


def summarise(times: Mapping[str, list[float]], reference: str | None = None) -> dict:
    """Per contestant: the rounds, median and best seconds, and the per-round ratios to
    the reference (time / reference time) with their median; ``speed_ratio`` is the
    median of reference time / time."""
    names = list(times)
    ref = names[0] if reference is None else reference
    if ref not in times:
        raise ValueError(f"reference {ref!r} is not a contestant ({', '.join(names)})")
    base = np.asarray(times[ref], dtype=float)
    out = {}
    for name in names:
        t = np.asarray(times[name], dtype=float)
        if t.shape != base.shape:
            raise ValueError(f"{name!r} has {t.size} rounds, the reference {base.size}")
        ratio = t / base
        out[name] = {"seconds": t.tolist(), "median_seconds": float(np.median(t)),
                     "best_seconds": float(t.min()), "ratio_rounds": ratio.tolist(),
                     "median_ratio": float(np.median(ratio)),
                     "speed_ratio": float(np.median(base / t)), "reference": ref}
    return out


def table(summary: Mapping[str, dict], unit: str = "s", scale: float = 1.0) -> list[str]:
    """Markdown rows of a :func:`summarise` result."""
    ref = next(iter(summary.values()))["reference"]
    lines = [f"| contestant | median {unit} | best {unit} | time / {ref} (rounds) | "
             f"median ratio | speed vs {ref} |", "|---|---|---|---|---|---|"]
    for name, s in summary.items():
        rounds_ = ", ".join(f"{r:.2f}" for r in s["ratio_rounds"])
        lines.append(f"| {name} | {s['median_seconds'] * scale:.4g} | "
                     f"{s['best_seconds'] * scale:.4g} | {rounds_} | {s['median_ratio']:.2f}x "
                     f"| {s['speed_ratio']:.2f}x |")
    return lines


# ------------------------------------------------------------------ a run
class Run:
    """One benchmark run: the machine before and after, the BLAS cap, the result files."""

    def __init__(self, name: str, args: argparse.Namespace, argv: list[str] | None = None,
                 module: str | None = None):
        if not name or "/" in name:
            raise ValueError(f"a result name is a plain file stem, got {name!r}")
        self.name, self.args = name, args
        self.quick = bool(getattr(args, "quick", False))
        out = getattr(args, "out", None)
        self.out = Path(out) if out is not None else (RESULTS / "quick" if self.quick
                                                      else RESULTS)
        blas = getattr(args, "blas_threads", DEFAULT_BLAS_THREADS)
        from threadpoolctl import threadpool_limits

        self._limits = threadpool_limits(limits=blas, user_api="blas")
        self.machine = machine(blas)
        self.command = [f"python -m {module or 'benchmarks.' + name}"] + list(sys.argv[1:] if argv is None
                                                                 else argv)
        self.notes: list[str] = []
        self.started = time.time()

    def note(self, text: str) -> None:
        """A sentence kept in both files (e.g. a peer that was skipped)."""
        print(text, flush=True)
        self.notes.append(text)

    def interleave(self, contestants, rounds, warmup=1, log=None):
        return interleave(contestants, rounds, warmup, log)

    def finish(self, result: dict, lines: list[str], title: str | None = None):
        """Write ``NAME.json`` (machine, command, notes, ``result``) and ``NAME.md``."""
        load_after = list(os.getloadavg())
        payload = {"benchmark": self.name, "quick": self.quick, "command": " ".join(
            self.command), "machine": self.machine, "load_average_after": load_after,
            "wall_seconds": round(time.time() - self.started, 2), "notes": self.notes,
            "result": result}
        self.out.mkdir(parents=True, exist_ok=True)
        json_path = self.out / f"{self.name}.json"
        json_path.write_text(json.dumps(payload, indent=1, default=_plain) + "\n")
        m = self.machine
        head = [f"# {title or self.name}", "",
                f"{m['platform']}, {m['cpu_count']} CPUs (affinity {m['affinity']}), "
                f"load average {m['load_average'][0]:.2f} before, {load_after[0]:.2f} after; "
                f"BLAS capped at {m['blas_threads_cap']} thread(s); numpy "
                f"{m['versions']['numpy']}, numba {m['versions']['numba']}; commit "
                f"`{(m['commit'] or 'unknown')[:10]}`"
                + (" (src modified)" if m["src_modified"] else "")
                + (" -- **quick smoke run, not a measurement**" if self.quick else "") + ".",
                ""]
        tail = [""] + [f"Note: {n}" for n in self.notes] + (
            [""] if self.notes else []) + [f"Reproduce: `{payload['command']}`"]
        md_path = self.out / f"{self.name}.md"
        md_path.write_text("\n".join(head + list(lines) + tail) + "\n")
        print(f"wrote {json_path} and {md_path.name}", flush=True)
        self._limits.restore_original_limits()
        return json_path, md_path


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def start(name: str, args: argparse.Namespace, argv: list[str] | None = None) -> Run:
    """A :class:`Run` writing ``NAME.*``; its reproduce line names the calling module."""
    caller = sys._getframe(1).f_globals
    spec = caller.get("__spec__")
    module = spec.name if spec is not None else caller.get("__name__")
    return Run(name, args, argv, None if module in (None, "__main__") else module)


# ------------------------------------------------------------------ tiny data
def tiny_corpus(n_docs=120, n_topics=4, n_classes=3, vocab_size=200, doc_length=40, seed=0,
                covariates=False):
    """A small corpus from :func:`dolda.datasets.simulate`: (texts, labels, X or None)."""
    from dolda.datasets import simulate

    sim = simulate(n_docs=n_docs, n_topics=n_topics, n_classes=n_classes,
                   vocab_size=vocab_size, doc_length=doc_length, covariates=covariates,
                   random_state=seed)
    return sim.texts, np.asarray(sim.y), sim.X
