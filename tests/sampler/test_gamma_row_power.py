"""The vectorised zero-count Gamma draws of the Phi step (``gamma.gamma_small_row``).

Three kinds of evidence: the law (Kolmogorov-Smirnov against scipy's Gamma for
the squaring, exp/log and small-integer branches), the algorithm (every entry
replayed in plain Python from its documented counters: algorithm GS's first
attempt on draws ``2w+1, 2w+2`` of the row's stream, the retry stream only
where that attempt fails), and the branch-free power (``p**n`` for every
``n < 128``).  Small and fast: also the test selection of the mutation run
over ``gamma.py`` (docs/MUTATION.md).
"""

import math

import numpy as np
import pytest
from scipy import stats

from dolda.sampler import gamma as G
from dolda.sampler.rng import stream

pytestmark = pytest.mark.power

MASK = (1 << 64) - 1
GOLDEN, M1, M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
RETRY = 0x8CB92BA72F3D8DD7


def _mix(x):
    """SplitMix64's finaliser in Python integers (independent of the library's)."""
    x &= MASK
    x = ((x ^ (x >> 30)) * M1) & MASK
    x = ((x ^ (x >> 27)) * M2) & MASK
    return x ^ (x >> 31)


def _first_attempt(s0, w):
    c = (s0 + (2 * w + 1) * GOLDEN) & MASK
    u1 = ((_mix(c) >> 11) + 0.5) * 2.0 ** -53
    u2 = (_mix(c + GOLDEN) >> 11) * 2.0 ** -53
    return u1, u2


def _reference_row(s0, shape, n_int, n):
    """Algorithm GS (Ahrens & Dieter 1974) entry by entry; returns values and how many
    entries needed the retry stream."""
    b = 1.0 + shape / math.e
    out, retried = np.empty(n), 0
    for w in range(n):
        u1, u2 = _first_attempt(s0, w)
        p = b * u1
        x = None
        if p <= 1.0:
            v = math.exp(math.log(p) / shape)
            if u2 <= math.exp(-v):
                x = v
        else:
            v = -math.log((b - p) / shape)
            if u2 <= v ** (shape - 1.0):
                x = v
        if x is None:  # GS's next attempts, from the entry's own stream
            retried += 1
            state = np.uint64(_mix(s0 ^ ((w * M2 + RETRY) & MASK)))
            x, _ = G.gamma_small(shape, 1.0 / shape, b, n_int, state)
        out[w] = x
    return out, retried


# n = 100 (beta = 0.01, the default) sets bits 2, 5, 6 of the squaring masks; 10 (beta = 0.1)
# bits 1 and 3; 127 every bit (a mask computed wrongly for one bit survived without them)
@pytest.mark.parametrize("shape, n_int", [(0.01, 100), (0.3, 0), (0.5, 2), (1 / 7, 7),
                                          (0.05, 20), (0.005, 200), (0.1, 10), (1 / 127, 127)])
def test_every_entry_is_gs_on_its_own_counters(shape, n_int):
    s0 = int(stream(11, 3, 5))
    n = 4000
    row = np.full(n, np.nan)
    G.gamma_small_row(np.uint64(s0), shape, n_int, row)
    want, retried = _reference_row(s0, shape, n_int, n)
    # p**n by squarings against exp(log(p) * n): a few ulps per squaring
    np.testing.assert_allclose(row, want, rtol=1e-11, atol=1e-300)  # denormals: few digits
    assert retried > 0  # the retry stream was exercised and replayed


@pytest.mark.parametrize("shape, n_int", [(0.01, 100), (0.01, 0), (0.3, 0), (0.5, 2),
                                          (1 / 7, 7), (0.05, 20)])
def test_row_draws_follow_the_gamma_law(shape, n_int):
    # 20 000 draws, one row, fixed seed; KS p-value above 1e-3.  (Gamma(0.01) puts
    # 8e-4 of its mass below 1e-308, where the draws underflow to 0: far below the
    # KS statistic's resolution at this size.)
    draws = G._gamma_small_row_many(shape, n_int, 321, 20_000)
    assert np.all(draws >= 0) and np.all(np.isfinite(draws))
    assert stats.kstest(draws, stats.gamma(shape).cdf).pvalue > 1e-3


def test_rows_of_different_streams_are_independent_and_rerun_exactly():
    a = G._gamma_small_row_many(0.01, 100, 1, 5000)
    b = G._gamma_small_row_many(0.01, 100, 2, 5000)
    np.testing.assert_array_equal(a, G._gamma_small_row_many(0.01, 100, 1, 5000))
    assert np.count_nonzero(a == b) == np.count_nonzero((a == 0) & (b == 0))
    # the ranks of two rows are uncorrelated
    assert abs(stats.spearmanr(a, b).statistic) < 0.05


@pytest.mark.parametrize("n", range(1, 128))
def test_branch_free_power_is_the_integer_power(n):
    bits = [float((n >> j) & 1) for j in range(7)]
    for p in (0.9999, 0.97, 0.5, 0.31, 0.05, 1e-3):
        want = p ** n
        if want < 1e-290:
            continue  # taken by log and exp in the scalar pass, never by squarings
        assert G._power_by_bits(p, *bits) == pytest.approx(want, rel=1e-13)


def test_counter_uniforms_are_the_documented_draws():
    # bitwise: draws 2w+1 (open, offset by half a step) and 2w+2 (half-open) of the stream
    # (the replay above compares values at rtol 1e-11, which a half-step offset passes)
    s0 = int(stream(7, 2, 9))
    for w in list(range(200)) + [2**20, 2**31 + 5]:
        assert G._counter_uniforms(np.uint64(s0), w) == _first_attempt(s0, w)
