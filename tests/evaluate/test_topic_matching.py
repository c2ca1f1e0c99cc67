"""Topics matched across chains and seeds by the top words a reader sees
(:func:`dolda.evaluate.diagnostics.match_topics`), against a brute-force optimiser."""

import itertools

import numpy as np
import pytest

from dolda.evaluate.diagnostics import (
    hellinger,
    match_topics,
    shared_top_words,
    top_word_ids,
)
from dolda.interpret.stability import RECUR_TOP_WORDS, shared_word_recurrence


def _brute_force(phi_ref, phi, n):
    """Every permutation: the one with the most shared top words, then the least Hellinger."""
    top_ref, top = top_word_ids(phi_ref, n), top_word_ids(phi, n)
    K = len(phi_ref)
    shared = np.array([[len(set(top_ref[a]) & set(top[b])) for b in range(K)]
                       for a in range(K)])
    dist = hellinger(phi_ref, phi)
    best, best_key = None, None
    for perm in itertools.permutations(range(K)):
        key = (sum(shared[k, perm[k]] for k in range(K)),
               -sum(dist[k, perm[k]] for k in range(K)))
        if best_key is None or key > best_key:
            best, best_key = perm, key
    return np.array(best), np.array([shared[k, best[k]] for k in range(K)])


@pytest.mark.parametrize("seed", range(6))
def test_matching_maximises_shared_top_words_as_brute_force_does(seed):
    rng = np.random.default_rng(seed)
    K, V = 5, 40
    phi_ref = rng.dirichlet(np.full(V, 0.3), size=K)
    # another chain: the same topics shuffled and perturbed, so that some overlaps tie
    phi = phi_ref[rng.permutation(K)] * rng.gamma(4.0, 0.25, size=(K, V))
    phi /= phi.sum(axis=1, keepdims=True)
    perm, shared = match_topics(phi_ref, phi, n=6)
    ref_perm, ref_shared = _brute_force(phi_ref, phi, 6)
    assert shared.sum() == ref_shared.sum()
    np.testing.assert_array_equal(perm, ref_perm)
    np.testing.assert_array_equal(shared, ref_shared)


def test_top_words_are_ranked_as_top_words_shows_them():
    """lam=1 ranks by phi alone; a lower lam (relevance) penalises words frequent everywhere."""
    phi = np.array([[0.5, 0.3, 0.15, 0.05], [0.5, 0.05, 0.15, 0.3]])
    np.testing.assert_array_equal(top_word_ids(phi, 2, lam=1), [[0, 1], [0, 3]])
    # word 0 is as frequent in both topics: relevance puts each topic's own word first
    np.testing.assert_array_equal(top_word_ids(phi, 1, lam=0.2), [[1], [3]])
    np.testing.assert_array_equal(top_word_ids(phi, 1), [[0], [0]])  # lam 0.6 keeps word 0


def test_same_top_words_recur_whatever_the_tail():
    """Two topics with the same 10 top words but different tails (Hellinger far apart) are
    the same topic to a reader: matched, and counted as recurring."""
    rng = np.random.default_rng(0)
    V = 2000
    head = np.zeros(V)
    head[:10] = np.linspace(0.05, 0.03, 10)
    a = head + np.where(np.arange(V) >= 10, rng.dirichlet(np.full(V, 0.2)) * 0.6, 0)
    b = head + np.where(np.arange(V) >= 10, rng.dirichlet(np.full(V, 0.2)) * 0.6, 0)
    other = rng.dirichlet(np.full(V, 0.2))
    phi_ref = np.stack([a, other])
    phi = np.stack([other, b])
    phi_ref /= phi_ref.sum(axis=1, keepdims=True)
    phi /= phi.sum(axis=1, keepdims=True)
    perm, shared = match_topics(phi_ref, phi, n=10, weights_ref=None)
    np.testing.assert_array_equal(perm, [1, 0])
    assert shared[0] >= RECUR_TOP_WORDS
    assert hellinger(phi_ref[:1], phi[1:])[0, 0] > 0.3  # the old rule called them different
    rec = shared_word_recurrence(np.stack([np.full(2, 10), shared]))
    assert rec[0] == 1.0


def test_shared_top_words_counts_intersections():
    top_ref = np.array([[0, 1, 2], [3, 4, 5]])
    top = np.array([[2, 1, 9], [5, 6, 7], [0, 3, 4]])
    np.testing.assert_array_equal(shared_top_words(top_ref, top), [[2, 0, 1], [0, 1, 2]])
