"""Exact checks of the Pólya-urn Phi's sparse structures (:mod:`dolda.sampler.polya`) that hold
to float32 rounding with and without numba; written for the mutation run of ``polya.py``
(docs/MUTATION.md).  ``test_polya.py`` has the laws and the chain.
"""

import numpy as np
import pytest

from dolda.sampler import polya
from dolda.sampler.counts import word_index


def _word_counts(seed, V, K, N, skew=False):
    g = np.random.default_rng(seed)
    p = g.dirichlet(np.full(V, 0.1 if skew else 5.0))
    tokens = g.choice(V, N, p=p).astype(np.int32)
    z = g.integers(0, K, N).astype(np.int32)
    dense = np.zeros((K, V), np.int64)
    np.add.at(dense, (z, tokens), 1)
    return polya.word_counts(*word_index(tokens, V), z, K), dense, tokens, z


@pytest.mark.parametrize("seed,skew", [(0, False), (1, True)])
def test_every_words_alias_table_reproduces_its_non_zeros(seed, skew):
    """Per word: ``P(entry j) = (prob_j + sum_{i: alias_i = j} (1 - prob_i)) / m`` equals
    ``phi_{k_j,w} / mass_w``; masses are the sums of the stored values."""
    wc, dense, _, _ = _word_counts(seed, 40, 12, 1500, skew)
    phi = polya.polya_phi(wc, 12, 0.3, seed, 2)
    for w in range(40):
        lo, hi = phi.ptr[w], phi.ptr[w + 1]
        m = hi - lo
        vals = phi.values[lo:hi].astype(np.float64)
        assert phi.mass[w] == pytest.approx(vals.sum(), rel=1e-6)  # float32 sums without numba
        if m == 0:
            continue
        assert np.all(np.diff(phi.topics[lo:hi]) > 0) and np.all(vals > 0)
        assert np.all((phi.alias[lo:hi] >= 0) & (phi.alias[lo:hi] < m))
        assert np.all((phi.prob[lo:hi] >= 0) & (phi.prob[lo:hi] <= 1 + 1e-12))
        eff = np.zeros(m)
        for j in range(m):
            eff[j] += phi.prob[lo + j] / m
            eff[phi.alias[lo + j]] += (1 - phi.prob[lo + j]) / m
        np.testing.assert_allclose(eff, vals / vals.sum(), rtol=1e-6, atol=1e-9)


def test_the_draw_is_a_normalised_phi_with_the_counts_support():
    """Every topic sums to one; every entry with ``n_{k,w} > 0`` has ``c_{k,w} >= 1`` or not,
    but no entry is stored as zero; iteration -1 (the initial draw) and 0 use other streams."""
    wc, dense, _, _ = _word_counts(2, 30, 7, 900)
    phi = polya.polya_phi(wc, 7, 0.05, 4, 0)
    d = polya.dense(phi, 7)
    np.testing.assert_allclose(d.sum(axis=0), 1.0, rtol=1e-5)
    assert np.all(phi.values > 0)
    init = polya.polya_phi(wc, 7, 0.05, 4, -1)
    again = polya.polya_phi(wc, 7, 0.05, 4, -1)
    np.testing.assert_array_equal(polya.dense(init, 7), polya.dense(again, 7))
    assert not np.array_equal(polya.dense(init, 7), d)
    assert not np.array_equal(polya.dense(polya.polya_phi(wc, 7, 0.05, 4, 1), 7), d)


def test_counts_of_frequent_and_rare_words_merge_exactly():
    """Skewed word frequencies: frequent words take the O(K) topic scan, rare ones the
    insertion sort; split into 3 parts and merged, the counts are the whole corpus'."""
    wc, dense, tokens, z = _word_counts(3, 25, 16, 3000, skew=True)
    got = np.zeros_like(dense)
    for w in range(25):
        sl = slice(wc.ptr[w], wc.ptr[w + 1])
        assert np.all(np.diff(wc.topics[sl]) > 0)
        got[wc.topics[sl], w] = wc.counts[sl]
    np.testing.assert_array_equal(got, dense)
    parts = [polya.word_counts(*word_index(tokens[a:b], 25), z[a:b], 16)
             for a, b in [(0, 5), (5, 1700), (1700, 3000)]]
    merged = polya.merge_word_counts(parts, 16)
    for x, y in zip(merged, wc):
        np.testing.assert_array_equal(x, y)
    assert polya.merge_word_counts(parts[:1], 16) is parts[0]


def test_non_zeros_travel_and_rebuild_the_same_phi():
    wc, _, _, _ = _word_counts(4, 20, 5, 400)
    phi = polya.polya_phi(wc, 5, 0.1, 1, 3)
    nz = polya.PhiNonZeros.of(phi, 5)
    assert nz.n_topics == 5
    dense, sparse = nz.expand()
    np.testing.assert_array_equal(dense, polya.dense(phi, 5))
    for x, y in zip(sparse, phi):
        np.testing.assert_array_equal(x, y)
    assert phi.nbytes_broadcast == phi.ptr.nbytes + phi.topics.nbytes + phi.values.nbytes
    out = np.full((20, 5), 7.0, np.float32)
    polya.write_dense(phi, out)  # no previous draw: zeroed first
    np.testing.assert_array_equal(out, polya.dense(phi, 5))
