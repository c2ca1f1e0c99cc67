"""The sparse running mean of Phi (Rao-Blackwellised) against a dense computation."""

import numpy as np
import pytest

from dolda.sampler import phi_mean, polya
from dolda.sampler.counts import sparse_topic_word_counts, word_index


def _dense_reference(zs, tokens, n_topics, n_words, beta):
    """``mean_t (beta + n^t) / (V beta + n_k^t)``, normalised rows, in float64."""
    total = np.zeros((n_topics, n_words))
    for z in zs:
        n = np.zeros((n_topics, n_words))
        np.add.at(n, (z, tokens), 1)
        total += (beta + n) / (n_words * beta + n.sum(axis=1, keepdims=True))
    return total / total.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("by_word", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_running_mean_matches_dense(by_word, seed):
    rng = np.random.default_rng(seed)
    n_topics, n_words, beta = 7, 30, 0.05
    tokens = rng.integers(0, n_words - 3, 400).astype(np.int32)  # 3 words never seen
    word_ptr, order = word_index(tokens, n_words)
    zs = []
    acc = phi_mean.empty(n_words, n_topics)
    for _ in range(4):
        z = rng.integers(0, n_topics - 1, len(tokens)).astype(np.int32)  # topic K-1 empty
        zs.append(z)
        counts = (polya.word_counts(word_ptr, order, z, n_topics) if by_word
                  else sparse_topic_word_counts(word_ptr, order, z, n_topics))
        acc = phi_mean.add(acc, counts, beta)
    assert acc.n_draws == 4
    seen = np.zeros((n_topics, n_words), bool)  # the sparse part holds exactly these pairs
    for z in zs:
        seen[z, tokens] = True
    assert len(acc.topics) == seen.sum() and not seen[:, -3:].any()
    got = phi_mean.dense_mean(acc, np.float64)
    want = _dense_reference(zs, tokens, n_topics, n_words, beta)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    f32 = phi_mean.dense_mean(acc)
    assert f32.dtype == np.float32 and f32.shape == (n_topics, n_words)
    np.testing.assert_allclose(f32, want, rtol=1e-5)


def test_arrays_round_trip_and_refuse_bad_layout():
    rng = np.random.default_rng(3)
    tokens = rng.integers(0, 12, 100).astype(np.int32)
    word_ptr, order = word_index(tokens, 12)
    z = rng.integers(0, 4, 100).astype(np.int32)
    acc = phi_mean.add(phi_mean.empty(12, 4), sparse_topic_word_counts(word_ptr, order, z, 4),
                       0.1)
    back = phi_mean.from_arrays(phi_mean.to_arrays(acc))
    for a, b in zip(acc, back):
        np.testing.assert_array_equal(a, b)
    bad = phi_mean.to_arrays(acc)
    bad["phi_mean_topics"] = bad["phi_mean_topics"].copy()
    bad["phi_mean_topics"][0] = 4
    with pytest.raises(ValueError, match="phi_mean"):
        phi_mean.from_arrays(bad)
