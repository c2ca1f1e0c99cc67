"""The GIL-free LAPACK calls (:mod:`dolda.sampler.lapack_nogil`) are scipy's wrappers' calls:
the same bits, the same refusals."""

import threading

import numpy as np
import pytest
from numpy.linalg import LinAlgError
from scipy.linalg import lapack

from dolda.sampler import lapack_nogil as LN


def _spd(n, seed):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n + 3, n))
    return np.asfortranarray(A.T @ A + 0.1 * np.eye(n)), rng.normal(size=n)


@pytest.mark.parametrize("n", [1, 2, 7, 64, 301])
def test_factor_and_solves_are_scipys_to_the_last_bit(n):
    a, b = _spd(n, n)
    mine = a.copy(order="F")
    assert LN.potrf_lower(mine) == 0
    ref, info = lapack.dpotrf(a.copy(order="F"), lower=1, overwrite_a=0, clean=0)
    assert info == 0
    np.testing.assert_array_equal(np.tril(mine), np.tril(ref))
    np.testing.assert_array_equal(np.triu(mine, 1), np.triu(a, 1))  # upper triangle untouched
    b0 = b.copy()
    np.testing.assert_array_equal(LN.potrs_lower(mine, b), lapack.dpotrs(ref, b, lower=1)[0])
    np.testing.assert_array_equal(LN.trtrs_lower_transposed(mine, b),
                                  lapack.dtrtrs(ref, b, lower=1, trans=1)[0])
    np.testing.assert_array_equal(b, b0)
    C = np.tril(ref)
    np.testing.assert_allclose(C @ C.T @ LN.potrs_lower(mine, b), b, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(C.T @ LN.trtrs_lower_transposed(mine, b), b, rtol=1e-9,
                               atol=1e-9)


def test_a_matrix_that_is_not_positive_definite_gives_the_minor_and_a_zero_factor_is_refused():
    a = np.asfortranarray(np.diag([1.0, 2.0, -1.0, 4.0]))
    assert LN.potrf_lower(a) == 3
    c = np.asfortranarray(np.diag([1.0, 0.0, 2.0]))
    with pytest.raises(LinAlgError, match="singular"):
        LN.trtrs_lower_transposed(c, np.ones(3))


@pytest.mark.parametrize("bad", [np.eye(3), np.ones((3, 2), order="F"),
                                 np.eye(3, dtype=np.float32, order="F")])
def test_arrays_lapack_would_misread_are_refused(bad):
    with pytest.raises(ValueError, match="Fortran order"):
        LN.potrf_lower(bad)
    a, _ = _spd(3, 0)
    with pytest.raises(ValueError, match="vector"):
        LN.potrs_lower(a, np.ones(4))


def test_threads_factor_at_once_and_get_what_one_thread_gets():
    """Eight factorisations shared by four threads: each the same bits as alone."""
    mats = [_spd(120, s)[0] for s in range(8)]
    alone = []
    for m in mats:
        w = m.copy(order="F")
        LN.potrf_lower(w)
        alone.append(w)
    out = [m.copy(order="F") for m in mats]
    threads = [threading.Thread(target=lambda j=j: [LN.potrf_lower(out[i])
                                                     for i in range(j, 8, 4)])
               for j in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w, ref in zip(out, alone):
        np.testing.assert_array_equal(w, ref)


def test_without_the_c_routines_the_classes_are_drawn_on_one_thread(monkeypatch):
    from dolda.sampler import probit_blocks as probit

    monkeypatch.setattr(LN, "_routines", lambda: {}["dpotrf"])
    assert not LN.available()
    calls = []
    real = probit._draw_classes
    monkeypatch.setattr(probit, "_draw_classes",
                        lambda *a: calls.append(a[6] if len(a) > 6 else False) or real(*a))
    a, _ = _spd(300, 1)
    rng = np.random.default_rng(0)
    rhs, prec, z = (rng.normal(size=(3, 300)), rng.gamma(2.0, size=(3, 300)),
                    rng.normal(size=(3, 300)))
    got = probit.draw_coefficients(a, rhs, prec, z, n_jobs=2)
    assert calls == [False]
    monkeypatch.undo()
    np.testing.assert_array_equal(got, probit.draw_coefficients(a, rhs, prec, z, n_jobs=2))
