"""Exact tests of the prediction driver (:mod:`dolda.sampler.predict`) written for its mutation
run (docs/MUTATION.md)."""

import numpy as np
import pytest

from dolda.sampler import predict


def _greedy_bounds(tokens, doc_ptr, max_words):
    """Consecutive chunks, each as long as its distinct words fit ``max_words`` (a document
    with more is a chunk of its own): plain Python sets."""
    bounds, words = [0], set()
    for d in range(len(doc_ptr) - 1):
        doc = set(tokens[doc_ptr[d]:doc_ptr[d + 1]].tolist())
        if words and len(words | doc) > max_words:
            bounds.append(d)
            words = set(doc)
        else:
            words |= doc
    bounds.append(len(doc_ptr) - 1)
    return bounds


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_words", [3, 8, 20])
def test_chunk_bounds_are_the_greedy_chunks_of_at_most_max_words(seed, max_words):
    g = np.random.default_rng(seed)
    lengths = g.integers(0, 12, 25)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = g.integers(0, 30, doc_ptr[-1]).astype(np.int64)
    got = predict.chunk_bounds(tokens, doc_ptr, 30, max_words)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, _greedy_bounds(tokens, doc_ptr, max_words))


def test_a_batch_that_fits_is_one_chunk():
    doc_ptr = np.array([0, 2, 4], np.int64)
    tokens = np.array([0, 1, 2, 3], np.int64)
    np.testing.assert_array_equal(predict.chunk_bounds(tokens, doc_ptr, 4, 4), [0, 2])
    np.testing.assert_array_equal(predict.chunk_bounds(tokens[:2], doc_ptr[:2], 4, 1), [0, 1])
