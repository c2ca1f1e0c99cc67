"""Thread control: every thread pool a block runs (numba, BLAS, OpenMP) obeys ``n_jobs``,
and its threads sleep, not spin, while they wait.

numba is imported inside the functions: :func:`limit_spin_wait` runs at ``import dolda``,
which must stay cheap (no numba until a kernel is needed).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading

_controller = None
_controller_modules = -1
_controller_lock = threading.Lock()


#: Settings that already say how OpenMP threads wait (OpenMP, GNU libgomp, LLVM/Intel):
#: when the user set any of them, :func:`limit_spin_wait` leaves the environment alone.
WAIT_SETTINGS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")


#: libgomp's spin rounds before a waiting thread sleeps (:func:`limit_spin_wait`): about
#: a tenth of a millisecond, enough for the back-to-back parallel regions of one block.
SPIN_ROUNDS = 10_000


def limit_spin_wait(environ=os.environ) -> bool:
    """Let waiting OpenMP threads spin briefly, then sleep (``GOMP_SPINCOUNT``); True if set.

    numba's default threading layer here is OpenMP (GNU libgomp).  Unset, libgomp's threads
    spin for 300,000 rounds at the end of every parallel region and between regions (it
    throttles only when there are more threads than CPUs in the affinity mask, never for
    the load of other processes).  An iteration runs a dozen parallel regions; on a shared
    machine the spinning thread burns the CPU share the working one needs, and the fit
    slowed 9x beside 4 busy loops on 2 cores where a fair share predicts 3x
    (``benchmarks/results/contention.md``).  Sleeping at once (``OMP_WAIT_POLICY=PASSIVE``)
    costs a futex wake per region: the exact-posterior z-sweep tests, thousands of tiny
    regions, took 36 s against 6.3 s spinning on an idle machine; :data:`SPIN_ROUNDS`
    rounds took 6.8-7.4 s (3,000-30,000), so a short spin keeps the idle speed.

    The setting is read once, when the OpenMP runtime is loaded (numba loads it at the
    first parallel kernel), so this runs at ``import dolda``.  It leaves the environment
    alone when the user chose a policy (any of :data:`WAIT_SETTINGS` set:
    ``OMP_WAIT_POLICY=ACTIVE`` brings the long spin back, ``PASSIVE`` sleeps at once) or
    when numba's threads already run (too late to matter).  Child processes (Dask workers
    started from here) inherit the setting.
    """
    if any(name in environ for name in WAIT_SETTINGS):
        return False
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if parallel is not None and getattr(parallel, "_is_initialized", False):
        return False
    environ["GOMP_SPINCOUNT"] = str(SPIN_ROUNDS)
    return True


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
    import numba

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
    :func:`dolda.utils.validation.check_n_jobs`.
    """
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        from ..utils.validation import check_n_jobs

        with using_threads(check_n_jobs(self.n_jobs)):
            return method(self, *args, **kwargs)

    return wrapper
