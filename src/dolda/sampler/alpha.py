"""The Dirichlet prior of the topic proportions, ``theta_d ~ Dir(alpha)``, as the kernels see it.

Every z-kernel takes ``alpha`` as a float64 array of length K (``alpha_k``, one
per topic): a symmetric prior is the constant vector, broadcast once here by the
Python wrappers, so there is one code path for both.  An asymmetric prior
(Wallach, Mimno & McCallum 2009, "Rethinking LDA: why priors matter") is learned
by :func:`dolda.sampler.hyper.update_alpha_asymmetric`.
"""

from __future__ import annotations

import numpy as np


def as_alpha(alpha, n_topics: int) -> np.ndarray:
    """``alpha`` as a contiguous float64 array of length ``n_topics`` (a scalar is broadcast).

    Parameters
    ----------
    alpha : float or array-like (K,)
    n_topics : int
        ``K``.

    Returns
    -------
    float64 (K,)
    """
    a = np.asarray(alpha, dtype=np.float64)
    if a.ndim == 0:
        return np.full(int(n_topics), float(a))
    if a.shape != (int(n_topics),):
        raise ValueError(f"alpha must be a number or have one value per topic ({n_topics}), "
                         f"got shape {a.shape}")
    return np.ascontiguousarray(a)


def is_symmetric(alpha) -> bool:
    """Whether every ``alpha_k`` is the same number (a scalar is symmetric)."""
    a = np.asarray(alpha, dtype=np.float64)
    return a.ndim == 0 or bool(np.all(a == a.flat[0]))


def alpha_value(alpha):
    """``alpha`` as stored on an estimator: a float for a scalar, a float64 array (K,) otherwise."""
    a = np.asarray(alpha, dtype=np.float64)
    return float(a) if a.ndim == 0 else a.copy()


def alpha_json(alpha):
    """``alpha`` for a JSON header: a float, or a list of K floats."""
    a = np.asarray(alpha, dtype=np.float64)
    return float(a) if a.ndim == 0 else [float(v) for v in a]
