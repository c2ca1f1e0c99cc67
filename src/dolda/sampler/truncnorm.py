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
* ``lo >= 1e8``: ``lo + Exp(lo)``, the exact conditional to double precision
  (the Robert rate ``lam`` would overflow in ``lo**2`` from ~1e154 on, and a
  NaN in the acceptance test used to make the loop spin forever).

Both rejection branches are exact, and every loop is bounded (:data:`MAX_TRIES`,
reached with probability below 1e-60), so a draw terminates for any input:
NaN in, NaN out; the a-step then reports the non-finite predictor.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .rng import STEP_A, exponential, normal, stream, uniform_open


#: Rejection rounds before the (practically never used) fallback; the acceptance
#: rate of either branch is at least ~0.5, so 200 rounds all fail with
#: probability below 1e-60.  The bound makes termination unconditional.
MAX_TRIES = 200
#: From this truncation point on, ``x - lo`` given ``x > lo`` is ``Exp(lo)`` to
#: double precision (the neglected factor ``exp(-t**2/2)`` with ``t ~ 1/lo`` is
#: ``1 - O(lo**-2)``), and ``lo * lo`` would overflow from ~1.3e154 on.
EXP_TAIL_FROM = 1e8


@njit(cache=True)
def std_normal_above(lo, state):
    """Draw ``x ~ N(0, 1)`` conditioned on ``x > lo``; returns ``(x, state)``.

    Terminates for every input: NaN gives NaN, ``+inf`` gives ``+inf``, and
    every loop is bounded by :data:`MAX_TRIES` rounds.
    """
    if np.isnan(lo) or lo == np.inf:  # NaN or +inf: nothing to draw, no loop
        return lo, state
    if lo <= 0.0:
        x = 0.0
        for _ in range(MAX_TRIES):
            x, state = normal(state)
            if x > lo:
                return x, state
        # P(reached) < 2**-200: reflect the last draw into the allowed side
        return max(abs(x), lo + 5e-324), state
    if lo >= EXP_TAIL_FROM:
        # lo + Exp(rate lo): the exact conditional to double precision (see above)
        e, state = exponential(state)
        return lo + e / lo, state
    lam = 0.5 * (lo + np.sqrt(lo * lo + 4.0))
    for _ in range(MAX_TRIES):
        e, state = exponential(state)
        x = lo + e / lam
        u, state = uniform_open(state)
        d = x - lam
        if np.log(u) <= -0.5 * d * d:
            return x, state
    # P(reached) < 0.3**200: the proposal itself, which is above lo
    e, state = exponential(state)
    return lo + e / lam, state


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
