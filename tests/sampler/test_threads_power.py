"""``using_threads`` / ``obeys_n_jobs`` (:mod:`dolda.sampler.threads`): the counts inside the
block, their restoration, and the cached thread-pool controller.  Written for the mutation run
of ``threads.py`` (docs/MUTATION.md); needs at least 2 numba threads for the upper cap.
"""

import sys
import types

import numba
import numpy as np  # noqa: F401 (loads BLAS, which threadpoolctl then sees)
import pytest
from threadpoolctl import ThreadpoolController

from dolda.sampler import threads

pytestmark = pytest.mark.power


def _blas_counts():
    return [lib.get_num_threads() for lib in ThreadpoolController().lib_controllers
            if lib.get_num_threads() is not None]


needs_two = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                               reason="needs 2 numba threads")


def test_one_thread_inside_the_block_and_the_old_counts_after():
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    before_numba, before_blas = numba.get_num_threads(), _blas_counts()
    with threads.using_threads(1):
        assert numba.get_num_threads() == 1
        assert all(n == 1 for n in _blas_counts())
    assert numba.get_num_threads() == before_numba
    assert _blas_counts() == before_blas


def test_counts_are_restored_when_the_block_raises():
    numba.set_num_threads(1)
    with pytest.raises(RuntimeError, match="boom"):
        with threads.using_threads(1):
            raise RuntimeError("boom")
    assert numba.get_num_threads() == 1
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


@needs_two
def test_thread_counts_are_capped_below_at_one_and_above_at_numbas_pool():
    top = numba.config.NUMBA_NUM_THREADS
    numba.set_num_threads(1)
    with threads.using_threads(2):
        assert numba.get_num_threads() == 2
        assert all(n == 2 for n in _blas_counts())
    with threads.using_threads(top + 5):
        assert numba.get_num_threads() == top
    with threads.using_threads(0):
        assert numba.get_num_threads() == 1
        assert all(n == 1 for n in _blas_counts())
    assert numba.get_num_threads() == 1
    numba.set_num_threads(top)


def test_the_controller_is_rebuilt_only_when_modules_were_imported():
    first = threads._thread_pools()
    assert threads._thread_pools() is first
    name = "_dolda_test_dummy_module"
    sys.modules[name] = types.ModuleType(name)
    try:
        second = threads._thread_pools()
        assert second is not first
        assert threads._thread_pools() is second
        assert threads._controller_modules == len(sys.modules)
    finally:
        del sys.modules[name]
    # a module removed: rebuilt too (a library imported next would otherwise restore the
    # old count unseen)
    third = threads._thread_pools()
    assert third is not second and threads._controller_modules == len(sys.modules)


@needs_two
def test_obeys_n_jobs_runs_the_method_under_the_estimators_thread_count():
    class Estimator:
        def __init__(self, n_jobs):
            self.n_jobs = n_jobs

        @threads.obeys_n_jobs
        def fit(self, x, scale=1):
            """Doc."""
            return numba.get_num_threads(), _blas_counts(), x * scale

    numba.set_num_threads(2)
    n, blas, value = Estimator(1).fit(3, scale=2)
    assert n == 1 and all(b == 1 for b in blas) and value == 6
    numba.set_num_threads(1)
    assert Estimator(2).fit(1)[0] == 2
    assert numba.get_num_threads() == 1
    assert Estimator.fit.__name__ == "fit" and Estimator.fit.__doc__ == "Doc."
    with pytest.raises(ValueError, match="n_jobs"):
        Estimator(0).fit(1)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)


def _blas_only_counts():
    return [lib.get_num_threads() for lib in ThreadpoolController().lib_controllers
            if lib.user_api == "blas"]


def test_blas_threads_caps_blas_only_and_restores_it():
    with threads.using_threads(2):
        numba_before, blas_before = numba.get_num_threads(), _blas_only_counts()
        with threads.blas_threads(1):
            assert _blas_only_counts() and all(n == 1 for n in _blas_only_counts())
            assert numba.get_num_threads() == numba_before  # numba is not BLAS
        assert _blas_only_counts() == blas_before
        with threads.blas_threads(0):  # capped below at one
            assert all(n == 1 for n in _blas_only_counts())


# ------------------------------------------------ waiting threads sleep (issue 37)
@pytest.mark.parametrize("chosen", [{}, {"OMP_WAIT_POLICY": "active"},
                                    {"GOMP_SPINCOUNT": "10k"}, {"KMP_BLOCKTIME": "0"}])
def test_passive_wait_is_asked_for_only_when_the_user_chose_no_policy(chosen, monkeypatch):
    fake = types.ModuleType("numba.np.ufunc.parallel")  # numba's threads not started yet
    fake._is_initialized = False
    monkeypatch.setitem(sys.modules, "numba.np.ufunc.parallel", fake)
    environ = dict(chosen, PATH="/bin")
    assert threads.limit_spin_wait(environ) is (not chosen)
    assert environ == (dict(chosen, PATH="/bin", GOMP_SPINCOUNT=str(threads.SPIN_ROUNDS))
                       if not chosen
                       else dict(chosen, PATH="/bin"))


def test_passive_wait_is_not_asked_for_once_numbas_threads_run(monkeypatch):
    fake = types.ModuleType("numba.np.ufunc.parallel")
    fake._is_initialized = True
    monkeypatch.setitem(sys.modules, "numba.np.ufunc.parallel", fake)
    environ = {}
    assert threads.limit_spin_wait(environ) is False and environ == {}
    fake._is_initialized = False
    assert threads.limit_spin_wait(environ) is True


_SHOW_POLICY = """
import dolda, numba, numpy as np
from numba import njit, prange
@njit(parallel=True)
def bump(a):
    for i in prange(len(a)):
        a[i] += 1
bump(np.zeros(8))
print(numba.threading_layer(), flush=True)
"""


@pytest.mark.parametrize("user, expect", [(None, "10000"), ("ACTIVE", "30000000000"),
                                          ("PASSIVE", "0")])
def test_import_dolda_makes_gnu_openmp_threads_spin_briefly(user, expect):
    """The setting reaches the OpenMP runtime numba loads (libgomp prints its settings with
    OMP_DISPLAY_ENV=VERBOSE: SPIN_ROUNDS rounds, where unset it spins 300,000), and an
    explicit user setting wins (ACTIVE: 30 billion rounds; PASSIVE: none)."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k not in threads.WAIT_SETTINGS}
    env.update(OMP_DISPLAY_ENV="VERBOSE", NUMBA_NUM_THREADS="2")
    if user is not None:
        env["OMP_WAIT_POLICY"] = user
    out = subprocess.run([sys.executable, "-c", _SHOW_POLICY], env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    if out.stdout.strip() != "omp" or "GOMP_SPINCOUNT" not in out.stderr:
        pytest.skip("numba's threading layer here is not GNU OpenMP (libgomp)")
    assert f"GOMP_SPINCOUNT = '{expect}'" in out.stderr


def test_all_cpus_means_the_cpus_this_process_may_use(monkeypatch):
    import os

    from dolda.utils.validation import available_cpus, check_n_jobs

    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3}, raising=False)
    assert available_cpus() == 1
    assert check_n_jobs(None) == 1 and check_n_jobs(-1) == 1 and check_n_jobs(4) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    assert check_n_jobs(None) == 3 and check_n_jobs(2) == 2
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    assert available_cpus() == 64 and check_n_jobs(None) == 64


def test_the_calibration_map_is_fitted_on_one_blas_thread(monkeypatch):
    from dolda.posterior import calibration

    seen = []
    real = calibration.fit_stacking_predictive

    def recording(*args, **kwargs):
        seen.append(_blas_only_counts())
        return real(*args, **kwargs)

    monkeypatch.setattr(calibration, "fit_stacking_predictive", recording)
    rng = np.random.default_rng(0)
    s, D, L = 3, 60, 3
    y = np.arange(D) % L
    loo = types.SimpleNamespace(mu=rng.normal(size=(s, D, L)), w=np.full((s, D), 1 / s))
    loo.mean = loo.mu.mean(axis=0)
    with threads.using_threads(2):
        before = _blas_only_counts()
        calibration.select_stacking(loo, y, L)
        assert _blas_only_counts() == before
    assert len(seen) == len(calibration.STACKING_MAPS)
    assert all(counts and all(n == 1 for n in counts) for counts in seen)
