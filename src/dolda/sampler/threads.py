"""Thread control for the numba kernels."""

from __future__ import annotations

import contextlib

import numba


@contextlib.contextmanager
def using_threads(n_jobs: int):
    """Run the enclosed kernels on ``n_jobs`` numba threads, then restore the old count.

    Results never depend on the count: every parallel block draws from its own
    random stream (see :mod:`dolda.sampler.rng`).
    """
    old = numba.get_num_threads()
    numba.set_num_threads(max(1, min(int(n_jobs), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(old)
