"""Gamma variates for the Dirichlet draw of Phi: the small-shape method used for the many
entries with zero count (shape beta < 1), as log-gamma and gamma.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .rng import stream, uniform, uniform_open


@njit(cache=True, inline="always")
def log_gamma_small(shape, state):
    """``log G`` with ``G ~ Gamma(shape, 1)`` for ``0 < shape < 1``; returns ``(log G, state)``.

    Ahrens & Dieter (1974) algorithm GS, carried out in log space so that
    ``G = P**(1/shape)`` never underflows (``shape = 0.01`` gives values like
    ``exp(-300)``).  With ``b = 1 + shape/e`` and ``P = b U``: if ``P <= 1``,
    ``X = P**(1/shape)`` is accepted with probability ``exp(-X)``, otherwise
    ``X = -log((b - P)/shape)`` with probability ``X**(shape - 1)``.  When
    ``log X < -40`` the acceptance probability is 1 to double precision and
    no second uniform is drawn.  About one uniform and one log per draw, a
    third of the cost of :func:`dolda.sampler.rng.log_gamma_variate`; used for
    the zero-count entries ``n_{k,w} = 0`` that make up most of the Phi draw.
    """
    inv = 1.0 / shape
    b = 1.0 + shape / math.e
    while True:
        u, state = uniform_open(state)
        p = b * u
        if p <= 1.0:
            log_x = math.log(p) * inv
            if log_x < -40.0:
                return log_x, state
            u2, state = uniform(state)
            if u2 <= math.exp(-math.exp(log_x)):
                return log_x, state
        else:
            x = -math.log((b - p) * inv)
            u2, state = uniform(state)
            if u2 <= x ** (shape - 1.0):
                return math.log(x), state


@njit(cache=True)
def _log_gamma_small_many(shape, seed, n):
    """``n`` draws of :func:`log_gamma_small` from one stream (for tests)."""
    out = np.empty(n)
    state = stream(seed, 0, 0)
    for i in range(n):
        out[i], state = log_gamma_small(shape, state)
    return out


@njit(cache=True, inline="always")
def _int_power(x, n):
    """``x**n`` for a positive integer ``n`` by binary exponentiation."""
    result = 1.0
    while n > 0:
        if n & 1:
            result *= x
        x *= x
        n >>= 1
    return result


@njit(cache=True, inline="always")
def gamma_small(shape, inv, b, n_int, state):
    """``G ~ Gamma(shape, 1)`` for ``0 < shape < 1`` in linear space; returns ``(G, state)``.

    Algorithm GS of :func:`log_gamma_small` without logarithms where they can
    be avoided: when ``1/shape`` is an integer ``n_int`` (``beta = 0.01`` gives
    100) ``P**(1/shape)`` is ``n_int`` squarings-and-products, otherwise
    ``exp(log(P)/shape)`` (pass ``n_int = 0``).  The acceptance test
    ``U <= exp(-X)`` uses the squeeze ``U <= 1 - X`` first.  Values below
    ~1e-308 underflow to 0; the Phi draw only uses this for rows that also
    hold a ``Gamma(>= 1)`` variate, so such entries are < 1e-290 after
    normalisation either way.  ``inv = 1/shape`` and ``b = 1 + shape/e`` are
    passed in, computed once per row.
    """
    while True:
        u, state = uniform_open(state)
        p = b * u
        if p <= 1.0:
            x = _int_power(p, n_int) if n_int > 0 else math.exp(math.log(p) * inv)
            if x < 1e-17:  # exp(-x) == 1 to double precision: accept
                return x, state
            u2, state = uniform(state)
            if u2 <= 1.0 - x or u2 <= math.exp(-x):
                return x, state
        else:
            x = -math.log((b - p) * inv)
            u2, state = uniform(state)
            if u2 <= x ** (shape - 1.0):
                return x, state


@njit(cache=True)
def _gamma_small_many(shape, n_int, seed, n):
    """``n`` draws of :func:`gamma_small` from one stream (for tests)."""
    out = np.empty(n)
    state = stream(seed, 0, 0)
    for i in range(n):
        out[i], state = gamma_small(shape, 1.0 / shape, 1.0 + shape / math.e, n_int, state)
    return out


def _integer_inverse(beta: float) -> int:
    """``1/beta`` when it is an integer up to 4096 (then :func:`gamma_small` avoids logs), else 0."""
    inv = 1.0 / beta
    n = round(inv)
    return int(n) if beta < 1.0 and n <= 4096 and abs(inv - n) < 1e-9 * inv else 0
