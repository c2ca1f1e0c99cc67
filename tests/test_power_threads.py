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
