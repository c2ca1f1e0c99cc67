"""The a-step's random streams (``dolda.sampler.truncnorm.draw_utilities``).

The docstring promises that row ``d`` draws from
``stream(seed, iteration * 16 + STEP_A, row_offset + d)``: the a-step never
shares a stream with another step (each uses ``iteration * 16 + STEP_*``) or
another iteration, and a shard of rows draws exactly what those rows draw in
the whole matrix.  Mutants that moved the step (``* 17``, ``/ STEP_A``) or the
row offset survived the distribution tests (docs/MUTATION.md); these pin the
promise.  Small and fast.
"""

import numpy as np
import pytest

from dolda.sampler.rng import STEP_A, STEP_ETA, STEP_PHI, STEP_SHRINK, STEP_Z, stream
from dolda.sampler.truncnorm import draw_utilities, truncated_normal

pytestmark = pytest.mark.power


def _problem(n=12, n_classes=3, seed=0):
    rng = np.random.default_rng(seed)
    mu = rng.normal(scale=2.0, size=(n, n_classes))
    mu[0] = [-9.0, 9.0, 0.5]  # both tails
    return mu, rng.integers(0, n_classes, n)


def _by_hand(mu, y, seed, step, row_offset=0):
    out = np.empty_like(mu)
    for d in range(len(mu)):
        state = np.uint64(stream(seed, step, row_offset + d))
        for l in range(mu.shape[1]):
            out[d, l], state = truncated_normal(mu[d, l], l == y[d], state)
            state = np.uint64(state)  # numba boxes the uint64 state as a Python int
    return out


@pytest.mark.parametrize("iteration", [0, 1, 14, 40])
def test_rows_draw_from_the_documented_stream_of_the_a_step(iteration):
    mu, y = _problem()
    got = draw_utilities(mu, y, 9, iteration, np.empty_like(mu))
    np.testing.assert_array_equal(got, _by_hand(mu, y, 9, iteration * 16 + STEP_A))
    # ... which is no other step's stream, this iteration or the next
    for t in (iteration, iteration + 1):
        for other in (STEP_Z, STEP_PHI, STEP_ETA, STEP_SHRINK):
            assert not np.array_equal(got, _by_hand(mu, y, 9, t * 16 + other))


def test_a_shard_of_rows_draws_what_those_rows_draw_in_the_whole_matrix():
    mu, y = _problem(n=30)
    whole = draw_utilities(mu, y, 4, 7, np.empty_like(mu))
    for lo, hi in ((0, 11), (11, 12), (12, 30)):
        part = draw_utilities(np.ascontiguousarray(mu[lo:hi]), y[lo:hi], 4, 7,
                              np.empty((hi - lo, mu.shape[1])), lo)
        np.testing.assert_array_equal(part, whole[lo:hi])


@pytest.mark.parametrize("mu", [1e300, 1e20, 3e16])
def test_far_tail_draws_stay_next_to_zero_when_the_excess_rounds_away(mu):
    """``a ~ N(mu, 1)`` truncated to the far side of 0 is ``-+Exp(|mu|)/|mu|``-small: when
    ``mu -+ x`` rounds to 0 the sign is kept by the smallest subnormal, never by a
    value of order one (a mutant that put -1.0 there survived the other tests)."""
    n = 200
    mus = np.tile([[mu, -mu]], (n, 1))  # class 0: mu on the wrong side for y = 1, ...
    y = np.ones(n, dtype=np.int64)      # ... class 1: -mu on the wrong side for y = 1
    a = draw_utilities(mus, y, 3, 0, np.empty_like(mus))
    assert np.all(a[:, 0] < 0) and np.all(a[:, 0] > -1e-3)
    assert np.all(a[:, 1] > 0) and np.all(a[:, 1] < 1e-3)
