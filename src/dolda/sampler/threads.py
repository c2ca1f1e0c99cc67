"""Thread control: every thread pool a block runs (numba, BLAS, OpenMP) obeys ``n_jobs``."""

from __future__ import annotations

import contextlib
import functools
import sys
import threading

import numba

_controller = None
_controller_modules = -1
_controller_lock = threading.Lock()


def _thread_pools():
    """A cached ``threadpoolctl.ThreadpoolController`` of the BLAS / OpenMP libraries loaded.

    Building one scans the loaded shared libraries (~4 ms); it is rebuilt only when
    ``sys.modules`` has grown since, i.e. when an import may have loaded a new library
    (scipy's own OpenBLAS, say), so that a service predicting one document per call pays
    microseconds, not milliseconds.
    """
    global _controller, _controller_modules
    with _controller_lock:
        if _controller is None or len(sys.modules) != _controller_modules:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
            _controller_modules = len(sys.modules)
        return _controller


def blas_threads(n: int):
    """Context manager capping the BLAS libraries loaded at ``n`` threads (restored after).

    ``threadpoolctl.threadpool_limits`` would scan the loaded libraries on every call
    (milliseconds); this reuses the cached controller of :func:`_thread_pools`.
    """
    return _thread_pools().limit(limits=max(1, int(n)), user_api="blas")


@contextlib.contextmanager
def using_threads(n_jobs: int):
    """Run the enclosed block on at most ``n_jobs`` threads, then restore the old counts.

    Caps numba's parallel kernels (``numba.set_num_threads``) and, through threadpoolctl,
    every BLAS and OpenMP library loaded in the process (the eta-step's Cholesky and
    ``U^T U``, the prediction's einsum, ...).  Inner blocks may lower the BLAS count further
    (one BLAS thread per class when classes run on ``n_jobs`` Python threads).

    Results never depend on the count: every parallel block draws from its own
    random stream (see :mod:`dolda.sampler.rng`).
    """
    n = max(1, min(int(n_jobs), numba.config.NUMBA_NUM_THREADS))
    old = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        with _thread_pools().limit(limits=max(1, int(n_jobs))):
            yield
    finally:
        numba.set_num_threads(old)


def obeys_n_jobs(method):
    """Decorate an estimator method so that its whole body runs under ``using_threads``.

    The thread count is the estimator's ``n_jobs`` (None or -1: all cores), checked by
    :func:`dolda._validation.check_n_jobs`.
    """
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        from .._validation import check_n_jobs

        with using_threads(check_n_jobs(self.n_jobs)):
            return method(self, *args, **kwargs)

    return wrapper
