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


#: Covariate values beyond this magnitude are refused: the sampler squares and
#: sums them (``U^T U``), which overflows or loses every significant digit of
#: the topic columns (proportions in [0, 1]) long before float64's 1.8e308.
MAX_COVARIATE_ABS = 1e12
#: Beyond this magnitude a covariate is legal but suspicious: a warning asks to rescale it.
WARN_COVARIATE_ABS = 1e6


def check_covariate_scale(values, name) -> None:
    """Refuse a covariate column of absurd scale, warn on a merely large one.

    Parameters
    ----------
    values : ndarray (D,) or (D, P), or scipy.sparse matrix (D, P)
        Finite numeric values (one column, or a matrix whose columns are named by ``name``).
    name : str, sequence of str or None
        The column name (or the names of the P columns; None: ``x0, x1, ...``),
        used in the message.

    Raises
    ------
    ValueError
        When some ``|value| > MAX_COVARIATE_ABS`` (one line naming the column).
    """
    import warnings

    import scipy.sparse as sp

    if sp.issparse(values):
        if values.shape[0] == 0 or values.shape[1] == 0:
            return
        peak = np.asarray(abs(values).max(axis=0).todense(), dtype=np.float64).ravel()
        n_cols = values.shape[1]
    else:
        values = np.asarray(values, dtype=np.float64)
        if values.size == 0:
            return
        if values.ndim == 1:
            values = values[:, None]
        n_cols = values.shape[1]
        with np.errstate(invalid="ignore"):
            peak = np.nanmax(np.abs(values), axis=0)
    if name is None:
        names = [f"x{j}" for j in range(n_cols)]
    elif isinstance(name, str):
        names = [name] * n_cols
    else:
        names = [str(n) for n in name]
    for j in np.flatnonzero(peak > MAX_COVARIATE_ABS):
        raise ValueError(
            f"covariate column {names[j]!r} has values up to {peak[j]:.3g} in magnitude; "
            f"beyond {MAX_COVARIATE_ABS:.0e} the sampler's sums overflow or lose all precision: "
            "rescale it (e.g. log, or divide by a unit such as 1e6)")
    big = [names[j] for j in np.flatnonzero(peak > WARN_COVARIATE_ABS)]
    if big:
        warnings.warn(f"covariate column(s) {big[:5]} have values beyond "
                      f"{WARN_COVARIATE_ABS:.0e} in magnitude; the coefficient priors assume "
                      "roughly unit scale: consider rescaling (log, standardise)",
                      UserWarning, stacklevel=3)


def check_frame_columns(frame, columns=None) -> None:
    """Refuse duplicated column names (in ``frame`` among ``columns``, or in ``columns``).

    A duplicated header would make ``frame[name]`` a DataFrame (pandas then fails
    with an unrelated message) or silently use the first copy.
    """
    seen, dup = set(), []
    for c in (list(frame.columns) if columns is None else list(columns)):
        if c in seen and c not in dup:
            dup.append(c)
        seen.add(c)
    if dup:
        raise ValueError(f"duplicated covariate name(s) {dup}: every column needs its own name")
    counts = frame.columns.value_counts()
    twice = [c for c in (frame.columns if columns is None else columns)
             if c in counts.index and counts[c] > 1]
    if twice:
        raise ValueError(f"column name(s) {sorted(set(map(str, twice)))} appear more than "
                         "once in the table; rename the copies")
