"""Compile a command's kernels on a second core while the first one starts the work.

numba compiles a kernel the first time it is called, on the calling thread, one kernel
after another: right after an install, ``dolda demo`` spent ~48 of its ~55-65 s compiling,
on one core of two.  A *plan* lists the top-level kernels a command calls, in the order it
first calls them, with the exact argument types it calls them with.  When numba's cache
lacks some of them, the helper process that :func:`ahead` starts (:func:`helper_command`)
compiles the plan's second half (by recorded compile seconds, :func:`helper_order`), so
that those kernels are in the cache when the command gets there, while the command
compiles the first half itself.  numba's dispatcher reads its on-disk cache before
it compiles, and writes an entry by renaming a finished file, so the two processes never
see half an entry; a kernel both reach at once is compiled twice, and nothing else changes.

The plans are recorded from the commands themselves (:func:`record`; ``main(["--record"])``
records them all) and tested against what the commands call, so a kernel whose signature
changes fails a test instead of silently falling out of the plan.
``DOLDA_COMPILE_AHEAD=0`` turns the helper off.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

#: The recorded plans per command, ``[kernel name, [signature, ...], compile seconds]`` in the
#: order of first calls: ``compile_ahead.json``.
PLANS_FILE = Path(__file__).with_name("compile_ahead.json")
#: Set to ``0`` to never start the helper.
SWITCH = "DOLDA_COMPILE_AHEAD"
#: How a child process runs :func:`main` (``-m`` would import this module twice: the
#: ``dolda.cli`` package imports it first).
_MAIN = "import sys; from dolda.cli._compile_ahead import main; sys.exit(main(sys.argv[1:]))"


def encode_type(t) -> list:
    """A numba argument type as JSON: ``["array", dtype, ndim, layout, readonly]``,
    ``["scalar", name]`` (integers, floats, booleans) or ``["omitted", default]`` (an
    argument left to its default).  Raises ``TypeError`` otherwise."""
    from numba.core import types

    if isinstance(t, types.Omitted):
        return ["omitted", t.value]
    if isinstance(t, types.Array):
        return ["array", str(t.dtype), int(t.ndim), t.layout, bool(not t.mutable)]
    if isinstance(t, (types.Integer, types.Float, types.Boolean)) and not isinstance(
            t, types.Literal):
        return ["scalar", str(t)]
    raise TypeError(f"no plan entry for an argument of type {t}")


def decode_type(entry):
    """The numba type :func:`encode_type` gave ``entry`` for."""
    from numba.core import types

    kind = entry[0]
    if kind == "array":
        _, dtype, ndim, layout, readonly = entry
        return types.Array(getattr(types, dtype), int(ndim), layout, readonly=bool(readonly))
    if kind == "scalar":
        return getattr(types, entry[1])
    if kind == "omitted":
        return types.Omitted(entry[1])
    raise ValueError(f"unknown plan entry {entry!r}")


def _dispatcher(name: str):
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def load_plan(plan: str) -> list:
    """``[(kernel name, [signature as a tuple of numba types, ...], compile seconds), ...]``
    of ``plan``, in the order the command first calls them."""
    entries = json.loads(PLANS_FILE.read_text())[plan]
    return [(name, [tuple(decode_type(t) for t in sig) for sig in sigs], float(seconds))
            for name, sigs, seconds in entries]


#: Seconds by which the helper's first compile is taken to trail the command's: the command's
#: share of the plan is larger by about half of this.  A guess: on the demo the helper
#: started compiling about 2 s after the command started, and the command 3.5 s after (its
#: imports and corpus); a `dolda fit` reads and tokenises its table first, for longer the
#: larger it is.  Misjudging it moves the split by kernels worth about half the error, and
#: the kernels are 0.5-10 s each, so the split is as coarse as they are anyway.
HELPER_LAG = 2.0


def helper_order(entries: list) -> list:
    """The order the helper compiles a plan in: the plan from the first kernel the command
    does not compile itself on to the end, then the command's share backwards.

    The command's share is the plan's first ``m`` kernels, ``m`` chosen so that the later
    of the two processes finishes first by the recorded compile seconds, the helper
    starting :data:`HELPER_LAG` behind; the command then finds the rest in the cache.  A
    kernel that both start is compiled twice; starting the helper at the plan's end
    instead had them collide on whichever kernel lay at the meeting point (for the demo,
    its supervised sweep, its largest)."""
    seconds = [e[2] for e in entries]
    total = sum(seconds)
    own = [sum(seconds[:m]) for m in range(len(entries) + 1)]
    m = min(range(len(entries) + 1), key=lambda m: max(own[m], HELPER_LAG + total - own[m]))
    return entries[m:] + entries[:m][::-1]


def is_cached(dispatcher, signature) -> bool:
    """Whether numba's on-disk cache holds ``dispatcher`` compiled for ``signature`` (for
    this machine and this source).  Reads numba's cache index through private names;
    if they change, says True (then the helper ends at once: the command compiles as
    before).
    """
    try:
        cache = dispatcher._cache
        key = cache._index_key(signature, dispatcher.targetctx.codegen())
        return key in cache._cache_file._load_index()
    except Exception:  # noqa: BLE001 (numba internals moved: behave as without a plan)
        return True


def missing(plan: str) -> list:
    """The kernels of ``plan`` with a signature not in numba's cache."""
    out = []
    for name, sigs, _ in load_plan(plan):
        disp = _dispatcher(name)
        if not all(is_cached(disp, sig) for sig in sigs):
            out.append(name)
    return out


def compile_plan(plan: str, parent: int | None = None) -> list:
    """Compile ``plan``'s kernels in :func:`helper_order`, loading those already in the
    cache; stop early when process ``parent`` is gone.  Returns the kernels done."""
    done = []
    for name, sigs, _ in helper_order(load_plan(plan)):
        if parent is not None and os.getppid() != parent:
            break
        disp = _dispatcher(name)
        for sig in sigs:
            disp.compile(sig)
        done.append(name)
    return done


def helper_command(plan: str) -> list:
    """The helper's command line: compile ``plan`` (:func:`helper_order`), stop when we are
    gone."""
    return [sys.executable, "-c", _MAIN, plan, "--parent", str(os.getpid())]


@contextlib.contextmanager
def ahead(plan: str, environ=os.environ):
    """Within the block, a helper process compiles ``plan`` (:func:`helper_order`) unless
    ``DOLDA_COMPILE_AHEAD`` is ``0``; the helper is stopped when the block ends.  Yields
    the helper's ``Popen``, or None.

    The helper itself checks the cache (:func:`missing`) and ends at once when it holds the
    whole plan: checking here would import numba and every planned kernel's module before
    the helper starts, a second of the command's head start on a cold cache, where on a
    warm one the helper's check costs about a second on the other core."""
    proc = None
    if environ.get(SWITCH, "1") != "0":
        try:
            proc = subprocess.Popen(helper_command(plan), stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                    env=dict(environ))
        except Exception:  # noqa: BLE001
            # no process to spare, no sys.executable in an embedded interpreter, ...: the
            # command compiles as without a plan
            proc = None
    try:
        yield proc
    finally:
        if proc is not None and proc.poll() is None:
            proc.terminate()  # a cache entry is written by rename: never half written
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def record(run) -> list:
    """Call ``run()`` and return the plan of what it calls: every dolda kernel it first
    calls from Python (compiled or loaded from the cache), in that order, with the
    argument types of those calls and the seconds the first call took (its compile, with
    the callees compiled for it, when the cache is empty)."""
    import time

    from numba.core import types
    from numba.core.dispatcher import Dispatcher, OmittedArg

    order = []
    original = Dispatcher._compile_for_args

    def logged(self, *args, **kws):
        name = f"{self.py_func.__module__}.{self.py_func.__qualname__}"
        tic = time.perf_counter()
        try:
            return original(self, *args, **kws)
        finally:
            if name.startswith("dolda."):
                order.append((name, tuple(types.Omitted(a.value) if isinstance(a, OmittedArg)
                                          else self.typeof_pyval(a) for a in args),
                              time.perf_counter() - tic))

    Dispatcher._compile_for_args = logged
    try:
        run()
    finally:
        Dispatcher._compile_for_args = original
    plan: dict[str, list] = {}
    for name, sig, seconds in order:
        sigs, total = plan.setdefault(name, [[], 0.0])
        enc = [encode_type(t) for t in sig]
        if enc not in sigs:
            sigs.append(enc)
        plan[name][1] = total + seconds
    return [[name, sigs, round(seconds, 2)] for name, (sigs, seconds) in plan.items()]


def _demo_run():
    from click.testing import CliRunner

    from ._group import main as group  # the commands registered by the package's import

    result = CliRunner().invoke(group, ["demo", "-q"])
    if result.exit_code != 0:
        raise RuntimeError(f"{result.output}{result.exception!r}")


def _fit_run():
    import warnings

    from ._metrics import training_accuracy
    from ..datasets import simulate
    from ..models.dolda.estimator import DOLDA
    from ..models.dolda.options import Sampler

    sim = simulate(n_docs=600, n_topics=5, n_classes=3, vocab_size=800, doc_length=30,
                   covariates=True, random_state=0)
    # what `dolda fit` runs at its defaults on a corpus with more than 1,000 word columns
    # (the blocked Gibbs word step), then its training accuracy
    model = DOLDA(n_iter=20, progress=False, sampler=Sampler(eta="gibbs"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(sim.texts, sim.y, covariates=sim.X)
        training_accuracy(model, sim.y, sim.X, sim.texts)


#: How each plan is recorded: ``dolda demo``, and what ``dolda fit`` runs at its defaults.
RECORDERS = {"demo": _demo_run, "fit": _fit_run}


def record_in_process(plan: str, cold: bool = False) -> list:
    """:func:`record` of ``plan``'s recorder, run in a fresh Python process; with ``cold``
    its numba cache is a new, empty directory, so that the seconds are compile times."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dolda_plan_cache_") as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=tmp) if cold else None
        out = subprocess.run([sys.executable, "-c", _MAIN, "--record-one", plan],
                             capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan", nargs="?", help="compile this plan (helper_order)")
    parser.add_argument("--parent", type=int, default=None,
                        help="stop when this process is gone")
    parser.add_argument("--record", action="store_true",
                        help="record every plan into compile_ahead.json (compiles "
                             "everything, about a minute a plan)")
    parser.add_argument("--record-one", metavar="PLAN",
                        help="print one plan's record as JSON (in a fresh process)")
    args = parser.parse_args(argv)
    if args.record_one:
        os.environ[SWITCH] = "0"  # no helper while recording
        print(json.dumps(record(RECORDERS[args.record_one])))
        return 0
    if args.record:  # each plan in its own process: a kernel is recorded at its first call
        plans = {name: record_in_process(name, cold=True) for name in RECORDERS}
        PLANS_FILE.write_text(json.dumps(plans, indent=1) + "\n")
        return 0
    if args.plan is None:
        parser.error("name a plan or --record")
    if missing(args.plan):  # else every kernel is cached: nothing to do
        compile_plan(args.plan, parent=args.parent)
    return 0
