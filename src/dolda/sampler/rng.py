"""Counter-based random streams for the parallel kernels.

Every parallel block of work (a document in the z-sweep, a topic in the Phi
draw, a row in the truncated-normal step, ...) gets its own stream whose
starting state is a hash of ``(seed, step, block)``.  The draws therefore depend
only on the data layout and the seed, never on how many threads run the loop or
on which Dask worker a shard lives.

The generator is SplitMix64 (Steele, Lea & Flood 2014): a Weyl sequence passed
through a 64-bit finaliser.  It passes BigCrush and needs one ``uint64`` of
state, which the kernels carry in a local variable:

>>> state = stream(seed, iteration, d)       # doctest: +SKIP
>>> u, state = uniform(state)                # doctest: +SKIP

All functions are numba ``njit`` functions meant to be called from other
kernels; they are also callable from Python (slowly), which the tests use.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S11 = np.uint64(11)
_TWO_M53 = 1.0 / 9007199254740992.0  # 2**-53

#: Step tags: distinct blocks of the Gibbs iteration draw from distinct streams.
STEP_Z = 1
STEP_PHI = 2
STEP_A = 3
STEP_ETA = 4
STEP_SHRINK = 5
STEP_PREDICT = 6
STEP_INIT = 7
STEP_WORDS = 8  # the single-site word sweep of the blocked eta-step (word_step.py)


@njit(cache=True, inline="always")
def mix64(x):
    """SplitMix64 finaliser: a bijective avalanche hash of a ``uint64``."""
    z = x
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True)
def stream(seed, step, block):
    """Starting state of the stream for ``block`` at ``step`` of chain ``seed``.

    Parameters
    ----------
    seed : int
        The chain seed (non-negative, < 2**63).
    step : int
        A counter that changes every time new randomness is needed for the same
        block, e.g. ``iteration * 16 + STEP_Z``.
    block : int
        The index of the unit of parallel work (document, topic, row, ...).
    """
    h = mix64(np.uint64(seed) + _GOLDEN)
    h = mix64(h ^ (np.uint64(step) * _M1 + _GOLDEN))
    h = mix64(h ^ (np.uint64(block) * _M2 + _GOLDEN))
    return h


@njit(cache=True, inline="always")
def next_u64(state):
    """Advance the stream; return ``(random uint64, new state)``."""
    s = state + _GOLDEN
    return mix64(s), s


@njit(cache=True, inline="always")
def uniform(state):
    """Uniform draw on [0, 1) with 53 random bits; returns ``(u, new state)``."""
    r, s = next_u64(state)
    return np.float64(r >> _S11) * _TWO_M53, s


@njit(cache=True, inline="always")
def uniform_open(state):
    """Uniform draw on (0, 1): never exactly 0, safe under ``log``."""
    r, s = next_u64(state)
    return (np.float64(r >> _S11) + 0.5) * _TWO_M53, s


@njit(cache=True)
def normal(state):
    """Standard normal draw (Box-Muller, one value per call)."""
    u1, state = uniform_open(state)
    u2, state = uniform(state)
    return np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * np.pi * u2), state


@njit(cache=True)
def exponential(state):
    """Standard exponential draw."""
    u, state = uniform_open(state)
    return -np.log(u), state


@njit(cache=True)
def log_gamma_variate(shape, state):
    """Draw ``log G`` with ``G ~ Gamma(shape, 1)``, stable for tiny shapes.

    Marsaglia & Tsang (2000) for shape >= 1.  For shape < 1 the identity
    ``G = G' * U**(1/shape)`` with ``G' ~ Gamma(shape + 1)`` is used in log
    space, so that shapes such as 0.01 (the paper's beta) never underflow to
    ``log 0``.
    """
    boost = 0.0
    a = shape
    if a < 1.0:
        u, state = uniform_open(state)
        boost = np.log(u) / a
        a = a + 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    while True:
        x, state = normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u, state = uniform_open(state)
        if np.log(u) < 0.5 * x * x + d - d * v + d * np.log(v):
            return np.log(d * v) + boost, state


def seed_from(random_state) -> int:
    """Turn a ``random_state`` argument into a 63-bit chain seed.

    ``None`` draws fresh entropy; an int is used as is (so the same int gives
    the same chain); a ``numpy.random.Generator`` or ``RandomState`` gives a
    seed drawn from it.
    """
    if random_state is None:
        return int(np.random.SeedSequence().generate_state(1, np.uint64)[0] >> np.uint64(1))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be a non-negative integer, got {random_state}")
        return int(random_state) & ((1 << 63) - 1)
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(0, 2**63 - 1))
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(0, 2**31 - 1))
    raise TypeError(
        "random_state must be None, a non-negative int or a numpy Generator, "
        f"got {type(random_state).__name__}"
    )


def numpy_generator(seed: int, step: int) -> np.random.Generator:
    """A numpy ``Generator`` for the serial global steps, keyed like ``stream``."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([seed, step])))


def chain_seed(seed: int, chain: int) -> int:
    """Seed of chain ``chain`` of a multi-chain fit with base seed ``seed``.

    Chain 0 uses ``seed`` itself (so ``n_chains=1`` reproduces a single-chain
    fit); chain ``c > 0`` gets an independent 63-bit seed derived from
    ``SeedSequence([seed, c])``.
    """
    if chain == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(chain)]).generate_state(1, np.uint64)[0]
               >> np.uint64(1))
