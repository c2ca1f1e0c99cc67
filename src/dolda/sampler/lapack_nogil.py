"""LAPACK's Cholesky routines callable from several threads at once.

scipy's ``scipy.linalg.lapack`` wrappers (f2py) hold the GIL while LAPACK runs, so
the per-class Cholesky draws of the eta-step (:func:`dolda.sampler.probit_blocks.draw_coefficients`)
ran one at a time however many threads submitted them: on 2 cores, 20 classes at
P = 1,001 took 294-331 ms with one thread and with two.  The same routines are exported
by ``scipy.linalg.cython_lapack`` as C functions; called through :mod:`ctypes`, which
releases the GIL for the duration of a foreign call, two threads factor two classes at
once (265 ms -> 151 ms for 20 factorisations of 1,001 columns).

They are the very routines the f2py wrappers call, with the same arguments, so the
results are the same bits (``tests/sampler/test_eta_factor.py``):

* :func:`potrf_lower` is ``lapack.dpotrf(a, lower=1, overwrite_a=1, clean=0)``;
* :func:`potrs_lower` is ``lapack.dpotrs(c, b, lower=1)``;
* :func:`trtrs_lower_transposed` is ``lapack.dtrtrs(c, b, lower=1, trans=1)``.

Every array is float64 in Fortran order (a vector is both orders).
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np
from numpy.linalg import LinAlgError


def _c_function(name: str, n_args: int):
    """The C function ``name`` of ``scipy.linalg.cython_lapack`` (every argument a pointer)."""
    from scipy.linalg import cython_lapack

    capsule = cython_lapack.__pyx_capi__[name]
    api = ctypes.pythonapi
    api.PyCapsule_GetName.restype = ctypes.c_char_p
    api.PyCapsule_GetName.argtypes = [ctypes.py_object]
    api.PyCapsule_GetPointer.restype = ctypes.c_void_p
    api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    address = api.PyCapsule_GetPointer(capsule, api.PyCapsule_GetName(capsule))
    return ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n_args))(address)


@functools.lru_cache(maxsize=None)
def _routines():
    return {"dpotrf": _c_function("dpotrf", 5), "dpotrs": _c_function("dpotrs", 8),
            "dtrtrs": _c_function("dtrtrs", 10)}


def available() -> bool:
    """Whether this scipy exports the routines (``scipy.linalg.cython_lapack`` has since
    0.16); callers fall back to scipy's wrappers on one thread if not."""
    try:
        _routines()
    except (ImportError, AttributeError, KeyError, TypeError):
        return False
    return True


_LOWER = np.frombuffer(b"L", dtype=np.uint8)
_TRANSPOSED = np.frombuffer(b"T", dtype=np.uint8)
_NON_UNIT = np.frombuffer(b"N", dtype=np.uint8)


def _check_square(a):
    if a.dtype != np.float64 or not a.flags.f_contiguous or a.ndim != 2 \
            or a.shape[0] != a.shape[1]:
        raise ValueError("a square float64 array in Fortran order is required")


def _int(value):
    return np.array([value], dtype=np.intc)


def potrf_lower(a) -> int:
    """Factor ``a = C C^T`` in place (the lower triangle; the upper one is left as it was).
    Returns LAPACK's ``info`` (0: done; ``i > 0``: the leading minor of order ``i`` is not
    positive definite)."""
    _check_square(a)
    n, info = _int(a.shape[0]), _int(0)
    _routines()["dpotrf"](_LOWER.ctypes.data, n.ctypes.data, a.ctypes.data, n.ctypes.data,
                          info.ctypes.data)
    return int(info[0])


def _solve(routine, chol, b, *flags):
    _check_square(chol)
    x = np.array(b, dtype=np.float64, order="F")  # a copy: b is left as it was
    if x.ndim != 1 or x.shape[0] != chol.shape[0]:
        raise ValueError("b must be a vector as long as the factor")
    n, nrhs, info = _int(chol.shape[0]), _int(1), _int(0)
    routine(*[f.ctypes.data for f in flags], n.ctypes.data, nrhs.ctypes.data, chol.ctypes.data,
            n.ctypes.data, x.ctypes.data, n.ctypes.data, info.ctypes.data)
    if info[0] != 0:
        raise LinAlgError(f"singular Cholesky factor (info {int(info[0])})")
    return x


def potrs_lower(chol, b):
    """``(C C^T)^{-1} b`` from the lower factor ``C`` of :func:`potrf_lower` (a new vector)."""
    return _solve(_routines()["dpotrs"], chol, b, _LOWER)


def trtrs_lower_transposed(chol, b):
    """``C^{-T} b`` for the lower factor ``C`` (a new vector)."""
    return _solve(_routines()["dtrtrs"], chol, b, _LOWER, _TRANSPOSED, _NON_UNIT)
