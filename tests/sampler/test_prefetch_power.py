"""``sampler.prefetch``: the cache hint changes no value, is the documented LLVM call, and the
row helpers hint the documented cache lines.

The hint itself can only be seen compiled (its LLVM IR); which lines the helpers hint is seen
by running their Python functions with ``prefetch`` replaced by a recorder (the same code the
JIT compiles).  Under ``NUMBA_DISABLE_JIT=1`` (the mutation runs) the compiled test is
skipped and ``prefetch`` must be a no-op.
"""

import re

import numpy as np
import pytest
from numba import njit
from numba.core import config

import dolda.sampler.prefetch as pf

pytestmark = pytest.mark.power


def _py(f):
    return getattr(f, "py_func", f)


@pytest.mark.skipif(not config.DISABLE_JIT, reason="the pure-Python fallback")
def test_prefetch_is_a_no_op_without_the_jit():
    values = np.arange(6.0).reshape(2, 3)
    assert pf.prefetch(values, (1, 2)) is None and pf.prefetch(values[0], 1) is None
    np.testing.assert_array_equal(values, np.arange(6.0).reshape(2, 3))


@pytest.mark.skipif(config.DISABLE_JIT, reason="the hint exists compiled only")
def test_compiled_hints_are_read_keep_data_and_change_nothing():
    @njit
    def hinted(flat, table, i, w, k, nz):
        pf.prefetch(flat, i)  # 1-D, one index
        pf.prefetch(table, (w, k))  # 2-D, a tuple of mixed integer types
        pf.prefetch_row(table, w, nz, 1)
        pf.prefetch_row(table, w, nz, nz.shape[0])
        pf.prefetch_whole_row(table, w)
        return flat[i] + table[w, k]

    flat = np.arange(7.0)
    table = np.arange(3 * 40, dtype=np.float32).reshape(3, 40)
    nz = np.array([5, 1, 30], np.int64)
    got = hinted(flat, table, np.int32(4), np.int64(2), np.int32(33), nz)
    assert got == 4.0 + 113.0
    np.testing.assert_array_equal(flat, np.arange(7.0))
    np.testing.assert_array_equal(table, np.arange(120, dtype=np.float32).reshape(3, 40))
    calls = re.findall(r"call void @llvm\.prefetch[.\w]*\(([^)]*)\)",
                       hinted.inspect_llvm(hinted.signatures[0]))
    assert calls, "no prefetch in the compiled code"
    for args in calls:  # rw = 0 (read), locality = 3 (keep in every cache level), data cache
        assert re.search(r"i32 0, i32 3, i32 1$", args.strip()), args


@pytest.mark.parametrize("dtype, per_line", [(np.float32, 16), (np.float64, 8)])
@pytest.mark.parametrize("n_topics", [1, 15, 16, 17, 63, 64, 65, 1000])
def test_whole_row_hints_every_cache_line_once(monkeypatch, dtype, per_line, n_topics):
    seen = []
    monkeypatch.setattr(pf, "prefetch", lambda a, index: seen.append(index))
    phi_wk = np.zeros((3, n_topics), dtype)
    _py(pf.prefetch_whole_row)(phi_wk, 2)
    assert seen == [(2, k) for k in range(0, n_topics, per_line)]


@pytest.mark.parametrize("dtype, per_line", [(np.float32, 16), (np.float64, 8)])
def test_row_hint_takes_the_whole_row_when_the_topics_would_touch_most_lines(monkeypatch,
                                                                            dtype, per_line):
    """``n_nz * per_line >= K``: the whole row; below: each of the ``n_nz`` topics once."""
    seen = []
    monkeypatch.setattr(pf, "prefetch", lambda a, index: seen.append(index))
    monkeypatch.setattr(pf, "prefetch_whole_row", lambda a, w: seen.append(("row", w)))
    nz = np.array([7, 0, 62, 31, 5, 40, 11, 63, 2, 50, 9, 1, 33, 20, 44, 3], np.int64)
    for n_topics, n_nz in [(64, 5), (64, 64 // per_line), (64, 64 // per_line - 1),
                           (65, 64 // per_line), (16 * per_line, 5), (5 * per_line + 1, 5),
                           (5 * per_line, 5), (64, 0), (1, 0)]:
        seen.clear()
        phi_wk = np.zeros((4, n_topics), dtype)
        _py(pf.prefetch_row)(phi_wk, 3, nz, n_nz)
        if n_nz * per_line >= n_topics:
            assert seen == [("row", 3)], (n_topics, n_nz)
        else:
            assert seen == [(3, int(k)) for k in nz[:n_nz]], (n_topics, n_nz)
