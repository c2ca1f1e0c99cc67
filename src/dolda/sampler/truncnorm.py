"""Exact one-sided truncated-normal draws for the a-step of the DO probit.

The latent utilities are ``a ~ N(mu, 1)`` truncated to ``(0, inf)`` (the
observed class) or to ``(-inf, 0)`` (every other class).  Both reduce to a
standard normal truncated below at ``lo``:

* ``lo <= 0.0`` (the cut is in the bulk): plain rejection from N(0, 1); the
  acceptance rate is at least one half.
* ``lo > 0.0`` (the cut is in the tail): Robert (1995) rejection from a
  shifted exponential with the optimal rate
  ``lam = (lo + sqrt(lo**2 + 4)) / 2``.  The acceptance rate tends to one as
  ``lo`` grows, and every draw is finite and above ``lo`` for any finite
  ``lo`` (``mu = +-40`` or ``+-1e6`` alike): no inverse CDF is evaluated, so
  nothing underflows.

Both branches are exact rejection samplers.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .rng import STEP_A, exponential, normal, stream, uniform_open


@njit(cache=True)
def std_normal_above(lo, state):
    """Draw ``x ~ N(0, 1)`` conditioned on ``x > lo``; returns ``(x, state)``."""
    if lo <= 0.0:
        while True:
            x, state = normal(state)
            if x > lo:
                return x, state
    lam = 0.5 * (lo + np.sqrt(lo * lo + 4.0))
    while True:
        e, state = exponential(state)
        x = lo + e / lam
        u, state = uniform_open(state)
        d = x - lam
        if np.log(u) <= -0.5 * d * d:
            return x, state


@njit(cache=True)
def truncated_normal(mu, positive, state):
    """Draw ``a ~ N(mu, 1)`` truncated to ``a > 0`` (``positive``) or ``a < 0``.

    The result is strictly on the requested side of zero.
    """
    if positive:
        x, state = std_normal_above(-mu, state)
        a = mu + x
        if a <= 0.0:  # rounding when |mu| >> x: keep the sign exact
            a = 5e-324
        return a, state
    x, state = std_normal_above(mu, state)
    a = mu - x
    if a >= 0.0:
        a = -5e-324
    return a, state


@njit(cache=True, parallel=True)
def draw_utilities(mu, y, seed, iteration, out, row_offset=0):
    """The a-step: ``a[d, l] ~ N(mu[d, l], 1)`` truncated by the label.

    Parameters
    ----------
    mu : float64 array (D, L)
        Linear predictors ``u_d . eta_l``.
    y : int array (D,)
        Class index of every row (0 .. L-1).
    seed, iteration : int
        Chain seed and iteration; row ``d`` draws from its own stream
        ``stream(seed, iteration * 16 + STEP_A, d)``, so the result does not
        depend on the number of threads.
    out : float64 array (D, L)
        Receives the draws (row ``d`` is written only by the thread doing ``d``).
    row_offset : int, default=0
        Global index of row 0: a shard of rows ``[o, o + D)`` of a larger matrix
        passes ``o`` and draws from the streams of its global rows, so the
        result does not depend on how the rows are split into shards either.
    """
    n, n_classes = mu.shape
    step = iteration * 16 + STEP_A
    for d in prange(n):
        state = stream(seed, step, row_offset + d)
        yd = y[d]
        for l in range(n_classes):
            a, state = truncated_normal(mu[d, l], l == yd, state)
            out[d, l] = a
    return out
