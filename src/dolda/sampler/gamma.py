"""Gamma variates for the Dirichlet draw of Phi: the small-shape method used for the many
entries with zero count (shape beta < 1), as log-gamma and gamma.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from .rng import _GOLDEN, _M2, _S11, _TWO_M53, mix64, stream, uniform, uniform_open


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


#: Entry ``w`` of a row whose first attempt is rejected retries from the stream
#: ``mix64(s0 ^ (w * _M2 + _RETRY_TAG))`` (``s0`` the row's stream).
_RETRY_TAG = np.uint64(0x8CB92BA72F3D8DD7)
#: ``P**n`` below this (``P < P_tiny``) is taken by log and exp in the scalar pass.
_TINY_POWER = 1e-290
#: Squarings of the vector pass are clamped here so that nothing becomes denormal.
_SQUARE_FLOOR = 1.6e-154
#: Largest ``n = 1/shape`` whose power the vector pass takes by squarings (7 bits).
_MAX_VECTOR_POWER = 127


@njit(cache=True, inline="always")
def _counter_uniforms(s0, w):
    """Draws ``2w+1`` and ``2w+2`` of the stream starting at ``s0``, as an open and a
    half-open uniform: entry ``w``'s first attempt, computed without the draws before it."""
    c = s0 + np.uint64(2 * w + 1) * _GOLDEN
    u1 = (np.float64(mix64(c) >> _S11) + 0.5) * _TWO_M53
    u2 = np.float64(mix64(c + _GOLDEN) >> _S11) * _TWO_M53
    return u1, u2


@njit(cache=True, inline="always")
def _power_by_bits(p, m0, m1, m2, m3, m4, m5, m6):
    """``p**n`` for ``n < 128`` given its bits ``m_j`` (0.0 or 1.0), without branches, so
    that the loop calling it vectorises; squarings never fall below ``_SQUARE_FLOOR``
    (bits above ``n``'s highest are multiplied in as 1 whatever their square is)."""
    x = p
    r = (1.0 - m0) + m0 * x
    x = max(x, _SQUARE_FLOOR)
    x *= x
    r *= (1.0 - m1) + m1 * x
    x = max(x, _SQUARE_FLOOR)
    x *= x
    r *= (1.0 - m2) + m2 * x
    x = max(x, _SQUARE_FLOOR)
    x *= x
    r *= (1.0 - m3) + m3 * x
    x = max(x, _SQUARE_FLOOR)
    x *= x
    r *= (1.0 - m4) + m4 * x
    x = max(x, _SQUARE_FLOOR)
    x *= x
    r *= (1.0 - m5) + m5 * x
    x = max(x, _SQUARE_FLOOR)
    x *= x
    r *= (1.0 - m6) + m6 * x
    return r


@njit(cache=True)
def gamma_small_row(s0, shape, n_int, row):
    """``row[w] ~ Gamma(shape, 1)`` independently for every ``w``, ``0 < shape < 1``:
    algorithm GS of :func:`gamma_small` with entry ``w``'s first attempt taken from draws
    ``2w+1, 2w+2`` of the stream starting at ``s0`` (:func:`_counter_uniforms`).

    Nothing in the first attempt depends on another entry, so it runs as one
    branch-free, vectorised pass: ``P = b U1``, ``X = P**n`` by squarings when
    ``n = 1/shape`` is an integer below 128 (else ``exp(log(P)/shape)``), accepted
    when ``P <= 1`` and ``U2 <= 1 - X`` (the squeeze of ``U2 <= exp(-X)``) and
    ``P**n >= 1e-290``.  A second, scalar pass finishes the few others exactly as
    GS would: ``P**n`` below 1e-290 by log and exp (accepted: ``exp(-X) = 1``), the
    full test ``U2 <= exp(-X)`` or GS's second branch (``P > 1``) on the same two
    uniforms, and an entry whose first attempt fails retries from its own stream
    ``mix64(s0 ^ (w * M2 + tag))`` with :func:`gamma_small`.  The law is GS's: the
    attempts of an entry are independent, whichever stream they come from.  For
    ``shape = 0.01`` about 1.3% of the entries reach the second pass.
    """
    gamma_span(s0, span_constants(shape, n_int), row, 0, len(row))


@njit(cache=True)
def span_constants(shape, n_int):
    """What :func:`gamma_span` needs of ``shape`` and ``n_int``: ``1/shape``, GS's
    ``b = 1 + shape/e``, the smallest ``P`` whose power is taken by squarings, and the
    squaring masks of ``n_int`` (bits 0-6, 0.0 or 1.0)."""
    masks = np.zeros(7)
    for j in range(7):
        masks[j] = np.float64((n_int >> j) & 1)
    return (shape, n_int, 1.0 / shape, 1.0 + shape / math.e,
            math.exp(math.log(_TINY_POWER) * shape), masks)


@njit(cache=True, inline="always")
def gamma_span(s0, constants, out, w0, n):
    """Entries ``w0 .. w0+n-1`` of :func:`gamma_small_row`'s row into ``out[:n]``, given
    :func:`span_constants`: the same values as the whole row's, since every entry reads
    only its own counters. The tiled Phi draw (:func:`dolda.sampler.phi.draw_phi_word_major`)
    draws a row a cache-sized span at a time."""
    shape, n_int, inv, b, p_tiny, masks = constants
    if 0 < n_int <= _MAX_VECTOR_POWER:
        m0, m1, m2, m3 = masks[0], masks[1], masks[2], masks[3]
        m4, m5, m6 = masks[4], masks[5], masks[6]
        for i in range(n):
            u1, u2 = _counter_uniforms(s0, w0 + i)
            p = b * u1
            x = _power_by_bits(max(p, p_tiny), m0, m1, m2, m3, m4, m5, m6)
            ok = (p >= p_tiny) & (p <= 1.0) & (u2 <= 1.0 - x)
            out[i] = x if ok else -1.0
    else:
        for i in range(n):
            u1, u2 = _counter_uniforms(s0, w0 + i)
            p = b * u1
            x = math.exp(math.log(max(p, p_tiny)) * inv)
            ok = (p >= p_tiny) & (p <= 1.0) & (u2 <= 1.0 - x)
            out[i] = x if ok else -1.0
    for i in range(n):
        if out[i] < 0.0:
            out[i] = _finish_entry(s0, w0 + i, shape, inv, b, n_int, p_tiny)


@njit(cache=True)
def _finish_entry(s0, w, shape, inv, b, n_int, p_tiny):
    """Entry ``w`` of :func:`gamma_small_row` that the vector pass did not accept."""
    u1, u2 = _counter_uniforms(s0, w)
    p = b * u1
    if p <= 1.0:
        if p < p_tiny:
            return math.exp(math.log(p) * inv)  # < 1e-290: exp(-x) is 1, accepted
        x = _int_power(p, n_int) if n_int > 0 else math.exp(math.log(p) * inv)
        if u2 <= math.exp(-x):
            return x
    else:
        x = -math.log((b - p) * inv)
        if u2 <= x ** (shape - 1.0):
            return x
    state = mix64(s0 ^ (np.uint64(w) * _M2 + _RETRY_TAG))
    x, state = gamma_small(shape, inv, b, n_int, state)
    return x


@njit(cache=True)
def _gamma_small_row_many(shape, n_int, seed, n):
    """``n`` draws of :func:`gamma_small_row` (for tests)."""
    out = np.empty(n)
    gamma_small_row(stream(seed, 0, 0), shape, n_int, out)
    return out
