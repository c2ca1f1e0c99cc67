"""The LDA log-likelihood's small-count ``lgamma`` table gives the direct terms' bits.

``topic_likelihood.LGAMMA_TABLE`` counts are looked up instead of calling ``lgamma``; the table
holds ``lgamma(c + a) - lgamma(a)`` computed by the same float operations, so every part must
equal, bit for bit, the sum of the direct terms in the kernels' order, compiled by numba too
(CPython's ``math.lgamma`` is another implementation than the one compiled code calls).  The counts
straddle the table's end, and an asymmetric alpha takes the direct path.
"""

import math

import numpy as np
import pytest
from numba import njit

from dolda.sampler import polya
from dolda.sampler.topic_likelihood import (LGAMMA_TABLE, _doc_loglik, _topic_loglik,
                                            _topic_part_sparse)


def _counts(rng, shape):
    """Mostly zero and small counts, some at and around the table's end, a few large."""
    c = rng.choice([0, 0, 0, 1, 2, 3, 7], size=shape)
    flat = c.reshape(-1)
    picks = rng.choice(flat.size, size=12, replace=False)
    flat[picks] = [LGAMMA_TABLE - 1, LGAMMA_TABLE, LGAMMA_TABLE + 1, 2 * LGAMMA_TABLE, 5000,
                   1, LGAMMA_TABLE - 2, 40, 300, 511, 513, 1023]
    return c.astype(np.int32)


@njit
def _doc_reference(ndk, alpha):
    out = np.empty(ndk.shape[0])
    a_sum = 0.0
    for k in range(ndk.shape[1]):
        a_sum += alpha[k]
    for d in range(ndk.shape[0]):
        acc, n_d = 0.0, 0
        for k in range(ndk.shape[1]):
            c = ndk[d, k]
            if c > 0:
                acc += math.lgamma(c + alpha[k]) - math.lgamma(alpha[k])
                n_d += c
        if n_d > 0:
            acc += math.lgamma(a_sum) - math.lgamma(n_d + a_sum)
        out[d] = acc
    return out


@njit
def _terms(rows, beta):
    """Per row: the sum of ``lgamma(c + beta) - lgamma(beta)`` over its non-zeros, and ``n``."""
    acc = np.zeros(rows.shape[0])
    n = np.zeros(rows.shape[0], np.int64)
    for r in range(rows.shape[0]):
        for j in range(rows.shape[1]):
            c = rows[r, j]
            if c > 0:
                acc[r] += math.lgamma(c + beta) - math.lgamma(beta)
                n[r] += c
    return acc, n


@njit
def _lgamma(x):
    return math.lgamma(x)


def _topic_reference(rows, n_words, beta):
    acc, n = _terms(rows, beta)
    return np.array([a + _lgamma(n_words * beta) - _lgamma(k + n_words * beta)
                     for a, k in zip(acc, n)])


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("symmetric", [True, False])
def test_document_part_is_the_direct_sum_bit_for_bit(seed, symmetric):
    rng = np.random.default_rng(seed)
    ndk = _counts(rng, (40, 9))
    alpha = np.full(9, 0.1) if symmetric else rng.uniform(0.05, 0.9, 9)
    part = np.empty(40)
    _doc_loglik(ndk, alpha, part)
    np.testing.assert_array_equal(part, _doc_reference(ndk, alpha))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_topic_parts_are_the_direct_sums_bit_for_bit(seed):
    rng = np.random.default_rng(seed)
    beta, n_words = 0.01, 30
    nkw = _counts(rng, (6, n_words))
    expected = _topic_reference(nkw, n_words, beta)
    dense = np.empty(6)
    _topic_loglik(nkw, beta, dense)
    np.testing.assert_array_equal(dense, expected)
    # the topic-major sparse layout (counts.SparseCounts), non-zeros only
    ptr = np.concatenate([[0], np.cumsum((nkw > 0).sum(axis=1))]).astype(np.int64)
    sparse = np.empty(6)
    _topic_part_sparse(ptr, nkw[nkw > 0].astype(np.int32), n_words, beta, sparse)
    np.testing.assert_array_equal(sparse, expected)
    # the word-major layout of the Pólya-urn step: per word, the direct terms in word order
    words = nkw.T
    w_ptr = np.concatenate([[0], np.cumsum((words > 0).sum(axis=1))]).astype(np.int64)
    topics = np.concatenate([np.flatnonzero(r) for r in words]).astype(np.int32)
    counts = words[words > 0].astype(np.int32)
    got = polya.topic_log_likelihood_words(polya.WordCounts(w_ptr, topics, counts), 6, beta)
    per_word, _ = _terms(words, beta)
    vb = n_words * beta
    topic = sum(math.lgamma(vb) - math.lgamma(float(n) + vb) for n in nkw.sum(axis=1))
    assert got == float(math.fsum(per_word) + topic)
