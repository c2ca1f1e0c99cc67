"""Input checks shared by the estimators, with messages that name the problem."""

from __future__ import annotations

import numbers

import numpy as np


def check_positive_int(value, name: str, minimum: int = 1) -> int:
    """Return ``value`` as int, or raise naming ``name`` when it is not an int >= minimum."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_positive_float(value, name: str) -> float:
    """Return ``value`` as float, or raise naming ``name`` when it is not finite and > 0."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_choice(value, name: str, choices) -> str:
    """Raise naming ``name`` and the allowed values when ``value`` is not one of ``choices``."""
    if value not in choices:
        allowed = ", ".join(repr(c) for c in choices)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}")
    return value


def check_burn_in(burn_in, n_iter: int) -> int:
    """Resolve ``burn_in`` (None means half of ``n_iter``) and check ``0 <= burn_in < n_iter``."""
    if burn_in is None:
        return n_iter // 2
    burn_in = check_positive_int(burn_in, "burn_in", minimum=0)
    if burn_in >= n_iter:
        raise ValueError(
            f"burn_in ({burn_in}) must be smaller than n_iter ({n_iter}): "
            "no draws would be kept"
        )
    return burn_in


def check_n_jobs(n_jobs) -> int:
    """Number of threads for the parallel kernels: None or -1 means all cores."""
    import os

    n_cpu = os.cpu_count() or 1
    if n_jobs is None or n_jobs == -1:
        return n_cpu
    n_jobs = check_positive_int(n_jobs, "n_jobs")
    return min(n_jobs, n_cpu)
