"""Signals during a long ``dolda`` command (``fit``): SIGTERM as Ctrl-C, and a second
signal inside the chain ending the process at once."""

from __future__ import annotations

import contextlib


@contextlib.contextmanager
def _interrupts():
    """Signals during a long command: SIGTERM as Ctrl-C (a ``KeyboardInterrupt`` whose
    ``signum`` says which), and inside the chain a second signal ends the process at
    once (see ``dolda.models.dolda.chain_stage._DeferredInterrupt``)."""
    import signal
    import threading

    from ..models.dolda.chain_stage import _DeferredInterrupt

    def terminate(signum, frame):
        exc = KeyboardInterrupt()
        exc.signum = signum
        raise exc

    main_thread = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, terminate) if main_thread else None
    hard = _DeferredInterrupt.hard_second
    _DeferredInterrupt.hard_second = main_thread
    try:
        yield
    finally:
        _DeferredInterrupt.hard_second = hard
        if main_thread:
            signal.signal(signal.SIGTERM, old)
