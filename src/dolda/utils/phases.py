"""The steps of a fit that can take a while, announced: a log record always, a line on
standard error when one runs longer than :data:`SHOW_AFTER` seconds (progress on).

``with phase("fitting the calibration map (52 classes x 5,139 rows)", show=model.progress):``
logs ``DOLDA: <what> ...`` at the start and ``DOLDA: <what>: done in 3.2 s`` at the end
(logger ``dolda.models.dolda.estimator``, INFO), and, with ``show``, writes the start line to standard error
once the step has run :data:`SHOW_AFTER` seconds (a timer thread; short steps stay silent)
and then its end line.  When the log records already reach a handler at INFO (``dolda -v``),
nothing else is written.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time

logger = logging.getLogger("dolda.models.dolda.estimator")

#: A step that runs longer than this many seconds is shown on standard error.
SHOW_AFTER = 2.0


def _echo(line):
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def phase(what, show=True):
    """Announce the step ``what`` (a clause: "computing ..."); see the module doc."""
    tic = time.perf_counter()
    logger.info("DOLDA: %s ...", what)
    shown, lock = threading.Event(), threading.Lock()
    timer = None
    if show and not (logger.isEnabledFor(logging.INFO) and logging.getLogger().handlers):

        def announce():
            with lock:
                shown.set()
                _echo(f"DOLDA: {what} ...")

        timer = threading.Timer(SHOW_AFTER, announce)
        timer.daemon = True
        timer.start()
    outcome = "stopped after"
    try:
        yield
        outcome = "done in"
    finally:
        if timer is not None:
            timer.cancel()
        seconds = time.perf_counter() - tic
        logger.info("DOLDA: %s: %s %.1f s", what, outcome, seconds)
        with lock:  # an announcement under way finishes first
            if shown.is_set():
                _echo(f"DOLDA: {what}: {outcome} {seconds:.1f} s")


def cold_kernels(modules=None):
    """Names of the numba kernels of ``modules`` (default: every loaded ``dolda.sampler``
    module) whose on-disk cache is missing or older than their source: those the next call
    compiles (about a minute for a first fit; cached afterwards).  Empty when every kernel
    is cached or the cache cannot be inspected."""
    import os

    if modules is None:
        modules = [m for name, m in list(sys.modules.items())
                   if name.startswith("dolda.sampler.") and m is not None]
    cold = []
    for module in modules:
        source = getattr(module, "__file__", None)
        for name, obj in list(vars(module).items()):
            cache = getattr(obj, "_cache", None)
            index = getattr(getattr(cache, "_cache_file", None), "_index_path", None)
            if index is None or getattr(obj, "__module__", None) != module.__name__:
                continue
            try:
                if not os.path.exists(index) or (
                        source and os.path.getmtime(index) < os.path.getmtime(source)):
                    cold.append(f"{module.__name__}.{name}")
            except OSError:
                continue
    return cold
