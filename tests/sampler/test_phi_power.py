"""Layouts and streams of the Phi draw (``dolda.sampler.phi``), small and fast.

The laws of the draws are tested in ``test_sampler_power.py`` (exact Beta
marginals); here: the word-major draw is the topic-major draw of the same
streams in every block of topics, the initial draw (iteration -1) has streams
of its own, and the layout helpers are what they say.  Also the test selection
of the mutation run over ``phi.py`` (docs/MUTATION.md).
"""

import numpy as np
import pytest

from dolda.sampler import counts as C
from dolda.sampler import phi as P
from dolda.sampler.threads import using_threads

pytestmark = pytest.mark.power


def _nkw(K=40, V=30, seed=0):
    rng = np.random.default_rng(seed)
    nkw = rng.poisson(0.8, size=(K, V)).astype(np.int32)
    nkw[5] = 0  # an empty topic (log-space path)
    nkw[:, 7] = 0  # a word no topic holds
    return nkw


def _sparse(nkw):
    rows, cols = np.nonzero(nkw)
    ptr = np.zeros(nkw.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=nkw.shape[0]), out=ptr[1:])
    return C.SparseCounts(ptr, cols.astype(np.int32), nkw[rows, cols].astype(np.int32))


@pytest.mark.parametrize("beta, iteration", [(0.01, 3), (0.3, -1), (1.5, 0)])
def test_word_major_draw_is_the_topic_major_draw_in_every_tile_of_words(beta, iteration):
    """2,000 words x 40 topics: tiles of 819 words (two whole, one partial), each its own
    parallel task.  The word-major draw stores the unnormalised variate in float32 and
    then scales it, so it may differ from the rounded float64 draw by one float32 ulp
    (never more, and never a zero against a non-zero)."""
    nkw = _nkw(V=2000)
    assert nkw.shape[1] > 2 * (P._PHI_TILE_ENTRIES // nkw.shape[0])
    phi = P.draw_phi(nkw, beta, 7, iteration)
    assert phi.shape == nkw.shape
    np.testing.assert_allclose(phi.sum(axis=1), 1.0, rtol=1e-12)
    assert np.all(phi >= 0)
    out = np.full((nkw.shape[1], nkw.shape[0]), np.nan, np.float32)
    P.draw_phi_word_major(_sparse(nkw), beta, 7, iteration, out)
    expected = np.where(phi.T < 1e-37, 0.0, phi.T).astype(np.float32)
    np.testing.assert_array_equal(out == 0, expected == 0)
    np.testing.assert_array_max_ulp(out, expected, maxulp=1)
    # the same draw on one thread and on all of them
    again = np.empty_like(out)
    with using_threads(1):
        P.draw_phi_word_major(_sparse(nkw), beta, 7, iteration, again)
    np.testing.assert_array_equal(again, out)


def test_initial_draw_has_streams_of_its_own_and_iterations_differ():
    nkw = _nkw(K=6, V=10)
    draws = {t: P.draw_phi(nkw, 0.5, 3, t) for t in (-1, 0, 1, 2)}
    for s in draws:
        for t in draws:
            if s < t:
                assert not np.allclose(draws[s], draws[t]), (s, t)
    np.testing.assert_array_equal(draws[-1], P.draw_phi(nkw, 0.5, 3, -1))
    # topics draw from their own streams: equal counts, different rows
    same = np.tile(nkw[:1], (3, 1))
    rows = P.draw_phi(same, 0.5, 3, 0)
    assert not np.allclose(rows[0], rows[1]) and not np.allclose(rows[1], rows[2])


def test_tiny_entries_of_the_float32_layout_are_zero_not_denormal():
    nkw = np.zeros((2, 400), np.int32)
    nkw[:, 0] = 1000  # beta = 0.001: most entries ~ exp(-1000) of the total
    out = np.empty((400, 2), np.float32)
    P.draw_phi_word_major(_sparse(nkw), 0.001, 1, 0, out)
    assert np.all((out == 0) | (out >= 1e-37))
    assert np.count_nonzero(out == 0) > 100
    np.testing.assert_allclose(out.sum(axis=0), 1.0, rtol=1e-5)


def test_word_major_transpose():
    rng = np.random.default_rng(1)
    phi = rng.random((5, 150))  # more than two blocks of 64 words
    wk = P.word_major(phi)
    assert wk.dtype == np.float64 and wk.flags.c_contiguous
    np.testing.assert_array_equal(wk, phi.T)


def test_empty_topics_with_a_tiny_beta_do_not_underflow():
    """With ``beta = 0.001`` and three words, every ``log G`` of an empty topic is below -350
    for about a third of the topics: only the log-space draw normalised at its maximum
    keeps such rows finite (a mutant normalising at ``+ top`` survived the law tests)."""
    nkw = np.zeros((1000, 3), np.int32)
    phi = P.draw_phi(nkw, 0.001, 2, 0)
    assert np.all(np.isfinite(phi))
    np.testing.assert_allclose(phi.sum(axis=1), 1.0, rtol=1e-12)
    out = np.empty((3, 1000), np.float32)
    P.draw_phi_word_major(_sparse(nkw), 0.001, 2, 0, out)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out.sum(axis=0), 1.0, rtol=1e-5)


@pytest.mark.parametrize("counts", [[0, 0, 0, 0, 0], [0, 3, 0, 1, 9]], ids=["empty", "tokens"])
def test_phi_marginals_with_beta_above_one_are_their_beta_laws(counts):
    """``beta >= 1`` takes the log-space path for every topic, with the general gamma
    method for zero counts (the small-shape method is only valid below 1: a mutant that
    used it for ``beta > 1`` survived the tests at beta 0.05 and 0.5).  KS against
    ``Beta(beta + n_w, sum - that)`` over 2000 iid topics, p > 1e-4 per column."""
    from scipy import stats

    beta = 2.5
    counts = np.array(counts, np.int32)
    phi = P.draw_phi(np.tile(counts, (2000, 1)), beta, 13, 4)
    a = counts + beta
    for w in range(len(counts)):
        p = stats.kstest(phi[:, w], stats.beta(a[w], a.sum() - a[w]).cdf).pvalue
        assert p > 1e-4, (w, p)
