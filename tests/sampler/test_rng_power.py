"""Exact tests of the counter-based random streams (:mod:`dolda.sampler.rng`).

The generator is SplitMix64; its outputs are checked against the published
reference sequence and an independent pure-Python (arbitrary-precision int)
implementation, the derived variates against their formulas and laws.  Written for
the mutation run of ``rng.py`` (docs/MUTATION.md).
"""

import math

import numpy as np
import pytest
from scipy import stats

from dolda.sampler import rng

pytestmark = pytest.mark.power

MASK = (1 << 64) - 1
GOLDEN, M1, M2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def _mix(x):
    z = x & MASK
    z = ((z ^ (z >> 30)) * M1) & MASK
    z = ((z ^ (z >> 27)) * M2) & MASK
    return z ^ (z >> 31)


def _u64(x):
    """A state as numpy uint64: a numba function called from Python returns its uint64 state as
    a Python int, which numba would type as int64 on the next call."""
    return np.uint64(int(x) & MASK)


def _call(fn, *args):
    """``fn(*args, state)`` with the state passed, and returned, as uint64."""
    value, state = fn(*args[:-1], _u64(args[-1]))
    return value, _u64(state)


def _stream(seed, step, block):
    h = _mix(seed + GOLDEN)
    h = _mix(h ^ ((step * M1 + GOLDEN) & MASK))
    return _mix(h ^ ((block * M2 + GOLDEN) & MASK))


def test_splitmix64_reproduces_the_published_sequence_from_zero():
    """SplitMix64 seeded with 0 (Vigna's reference splitmix64.c) starts
    16294208416658607535, 7960286522194355700, 487617019471545679."""
    state = np.uint64(0)
    out = []
    for _ in range(3):
        r, state = _call(rng.next_u64, state)
        out.append(int(r) & MASK)
    assert out == [16294208416658607535, 7960286522194355700, 487617019471545679]
    assert int(state) == (3 * GOLDEN) & MASK


@pytest.mark.parametrize("x", [0, 1, 12345, GOLDEN, MASK, 1 << 63])
def test_mix64_is_the_splitmix64_finaliser(x):
    assert int(rng.mix64(np.uint64(x))) == _mix(x)


@pytest.mark.parametrize("seed,step,block", [(0, 0, 0), (7, 3 * 16 + 1, 5), (2**62 + 9, 17, 2**41 + 3)])
def test_stream_start_is_the_documented_hash(seed, step, block):
    assert int(rng.stream(seed, step, block)) == _stream(seed, step, block)


def test_streams_of_different_seeds_steps_and_blocks_differ():
    starts = {int(rng.stream(s, t, b)) for s in range(3) for t in range(3) for b in range(3)}
    assert len(starts) == 27


def test_uniforms_use_the_top_53_bits():
    state = _u64(rng.stream(3, 5, 7))
    for _ in range(20):
        r, _ = _call(rng.next_u64, state)
        r = int(r) & MASK
        u, s1 = _call(rng.uniform, state)
        v, s2 = _call(rng.uniform_open, state)
        assert u == (r >> 11) * 2.0**-53
        assert v == ((int(r) >> 11) + 0.5) * 2.0**-53
        assert 0.0 <= u < 1.0 and 0.0 < v < 1.0
        assert int(s1) == int(s2) == (int(state) + GOLDEN) & MASK
        state = s1


def test_normal_and_exponential_are_box_muller_and_minus_log():
    state = _u64(rng.stream(1, 2, 3))
    for _ in range(10):
        u1, s = _call(rng.uniform_open, state)
        u2, s = _call(rng.uniform, s)
        x, s_x = _call(rng.normal, state)
        assert x == pytest.approx(math.sqrt(-2 * math.log(u1)) * math.cos(2 * math.pi * u2),
                                  rel=1e-12, abs=1e-12)
        assert int(s_x) == int(s)
        e, s_e = _call(rng.exponential, state)
        assert e == pytest.approx(-math.log(u1), rel=1e-12)
        assert int(s_e) == (int(state) + GOLDEN) & MASK
        state = s


def _draws(fn, n, seed):
    state = _u64(rng.stream(seed, 0, 0))
    out = np.empty(n)
    for i in range(n):
        out[i], state = _call(fn, state)
    return out


def test_normal_and_exponential_laws():
    """KS tests, n = 4000 each (p > 1e-3 at fixed seeds)."""
    assert stats.kstest(_draws(rng.normal, 4000, 11), "norm").pvalue > 1e-3
    assert stats.kstest(_draws(rng.exponential, 4000, 12), "expon").pvalue > 1e-3


@pytest.mark.parametrize("shape", [0.05, 0.7, 1.0, 3.0, 40.0])
def test_log_gamma_variates_follow_the_gamma_law(shape):
    """KS test of ``exp(log G)`` (``log G`` for the tiny shape, where G underflows) against
    Gamma(shape, 1), n = 3000; the mean of G within 4 standard errors."""
    g = _draws(lambda s: rng.log_gamma_variate(shape, s), 3000, 21)
    assert np.all(np.isfinite(g))
    dist = stats.gamma(shape)
    p = stats.kstest(g, lambda x: dist.cdf(np.exp(x))).pvalue
    assert p > 1e-3, p
    assert abs(np.exp(g).mean() - shape) < 4 * math.sqrt(shape / 3000)


def test_log_gamma_variate_is_exact_in_the_far_tail_of_a_tiny_shape():
    """Shape 0.01: ``log G`` has ``P(log G < -100) = P(G < e^-100) ~ e^-1 / Gamma(1.01)``,
    about 0.37; linear-space draws would underflow there."""
    g = _draws(lambda s: rng.log_gamma_variate(0.01, s), 2000, 5)
    frac = np.mean(g < -100.0)
    expect = stats.gamma(0.01).cdf(np.exp(-100.0))
    assert abs(frac - expect) < 4 * math.sqrt(expect * (1 - expect) / 2000)


def test_seed_from_every_documented_input():
    assert rng.seed_from(5) == 5
    assert rng.seed_from(np.int64(7)) == 7
    assert rng.seed_from(2**63 + 5) == 5  # masked to 63 bits
    assert rng.seed_from(0) == 0
    for _ in range(5):
        s = rng.seed_from(None)
        assert isinstance(s, int) and 0 <= s < 2**63
    assert rng.seed_from(None) != rng.seed_from(None)
    g = rng.seed_from(np.random.default_rng(3))
    assert g == int(np.random.default_rng(3).integers(0, 2**63 - 1))
    for s in range(6):  # a 31-bit seed: some of these have bit 30 set
        r = rng.seed_from(np.random.RandomState(s))
        assert r == int(np.random.RandomState(s).randint(0, 2**31 - 1))
    with pytest.raises(ValueError, match="non-negative"):
        rng.seed_from(-1)
    with pytest.raises(TypeError, match="random_state"):
        rng.seed_from(True)
    with pytest.raises(TypeError, match="random_state"):
        rng.seed_from(1.5)


def test_numpy_generator_and_chain_seed_are_keyed_by_seed_sequence():
    a = rng.numpy_generator(4, 21).standard_normal(3)
    b = np.random.Generator(np.random.PCG64(np.random.SeedSequence([4, 21]))).standard_normal(3)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, rng.numpy_generator(4, 22).standard_normal(3))
    assert rng.chain_seed(9, 0) == 9
    seeds = [rng.chain_seed(9, c) for c in range(1, 6)]
    assert all(0 <= s < 2**63 for s in seeds) and len(set(seeds)) == 5 and 9 not in seeds
    assert seeds[0] == int(np.random.SeedSequence([9, 1]).generate_state(1, np.uint64)[0] >> 1)


def test_step_tags_are_distinct_slots_of_an_iteration():
    tags = [rng.STEP_Z, rng.STEP_PHI, rng.STEP_A, rng.STEP_ETA, rng.STEP_SHRINK,
            rng.STEP_PREDICT, rng.STEP_INIT]
    assert len(set(tags)) == len(tags)
    assert all(0 <= t < 16 for t in tags)
