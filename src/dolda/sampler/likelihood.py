"""Log-likelihood kernels for convergence monitoring (paper section 3.3)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


@njit(cache=True, inline="always")
def log_normal_cdf(x):
    """``log F(x)`` for the standard normal CDF, accurate for any finite ``x``."""
    if x > -30.0:
        return math.log(0.5 * math.erfc(-x / math.sqrt(2.0)))
    # asymptotic series of the Mills ratio, exact to double precision for x <= -30
    x2 = x * x
    return -0.5 * x2 - math.log(-x) - _LOG_SQRT_2PI + math.log(1.0 - 1.0 / x2 + 3.0 / (x2 * x2))


#: Below this ``|x|`` :func:`log_normal_odds` takes the smaller tail from ``erfc``; above it the
#: tail is below 1e-197, so ``log1p(-q)`` is 0 in double and the tail's log comes from the series.
ODDS_SERIES_FROM = 30.0


@njit(cache=True, inline="always")
def log_normal_odds(x):
    """``log F(x) - log F(-x)`` from one tail: with ``q = F(-|x|)``, ``log(1 - q) - log(q)``,
    negated for ``x < 0`` (one ``erfc`` instead of two :func:`log_normal_cdf`)."""
    a = abs(x)
    if a < ODDS_SERIES_FROM:
        q = 0.5 * math.erfc(a / math.sqrt(2.0))
        r = math.log1p(-q) - math.log(q)
    else:
        r = -log_normal_cdf(-a)
    return r if x >= 0.0 else -r


@njit(cache=True, parallel=True)
def do_log_likelihood(mu, y):
    """``sum_d log P(y_d | mu_d)`` under the Diagonal Orthant probit.

    ``P(y = l) ∝ F(mu_l) / F(-mu_l)`` (the common factor ``prod_j F(-mu_j)``
    cancels).  ``mu`` is (D, L), ``y`` (D,) class indices.  Rows are summed in
    fixed blocks, so the total does not depend on the number of threads.
    """
    n, n_classes = mu.shape
    block = 1024
    n_blocks = (n + block - 1) // block
    partial = np.zeros(n_blocks)
    for b in prange(n_blocks):
        scores = np.empty(n_classes)
        total = 0.0
        for d in range(b * block, min(n, (b + 1) * block)):
            top = -np.inf
            for l in range(n_classes):
                s = log_normal_odds(mu[d, l])
                scores[l] = s
                if s > top:
                    top = s
            acc = 0.0
            for l in range(n_classes):
                acc += math.exp(scores[l] - top)
            total += scores[y[d]] - top - math.log(acc)
        partial[b] = total
    out = 0.0
    for b in range(n_blocks):  # a plain loop: numba would parallelise partial.sum()
        out += partial[b]
    return out
