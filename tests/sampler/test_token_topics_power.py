"""Per-token topic frequencies (``dolda.sampler.token_topics``) against their exact law.

With Phi fixed, the prediction sweep of a document is a Gibbs chain whose
stationary law is ``p(z) ∝ prod_i phi_{z_i, w_i} prod_k Gamma(n_k + alpha)``;
for a document of a few tokens it is enumerated here and its marginals
``P(z_i = k)`` compared with the kept-sweep frequencies.  Small and fast (the
test selection of the mutation run over ``token_topics.py``).
"""

import itertools

import numpy as np
import pytest
from scipy.special import gammaln

from dolda.sampler.token_topics import token_topic_frequencies

pytestmark = pytest.mark.power


def _exact_marginals(phi, words, alpha):
    K = phi.shape[0]
    out = np.zeros((len(words), K))
    for z in itertools.product(range(K), repeat=len(words)):
        n = np.bincount(z, minlength=K)
        p = np.prod(phi[list(z), words]) * np.exp(np.sum(gammaln(n + alpha)))
        for i, k in enumerate(z):
            out[i, k] += p
    return out / out.sum(axis=1, keepdims=True)


PHI = np.array([[0.5, 0.3, 0.1, 0.1],
                [0.1, 0.2, 0.6, 0.1],
                [0.2, 0.2, 0.2, 0.4]])


def test_frequencies_match_the_enumerated_marginals():
    docs = [[0, 1, 2], [], [2, 2, 0, 3]]  # an empty document in between
    tokens = np.array([w for d in docs for w in d], np.int32)
    doc_ptr = np.cumsum([0] + [len(d) for d in docs])
    alpha, n_sweeps, burn_in = 0.3, 6000, 100
    freq = token_topic_frequencies(tokens, doc_ptr, PHI, alpha, n_sweeps, burn_in, seed=4,
                                   rao_blackwell=False)
    assert freq.shape == (len(tokens), 3)
    np.testing.assert_allclose(freq.sum(axis=1), 1.0, atol=1e-12)
    # every entry is a share of the n_sweeps - burn_in kept sweeps
    kept = n_sweeps - burn_in
    np.testing.assert_allclose(freq * kept, np.round(freq * kept), atol=1e-6)
    start = 0
    for d in docs:
        if d:
            exact = _exact_marginals(PHI, np.array(d), alpha)
            got = freq[start:start + len(d)]
            # sd of a frequency over ~6000 autocorrelated sweeps is <= ~0.01 (max error seen over
            # seeds 0-4 at 3000 sweeps: 0.028); 0.05 is > 4 sd
            assert np.max(np.abs(got - exact)) < 0.05, (got, exact)
        start += len(d)


def test_rao_blackwellised_estimates_match_the_marginals_closer():
    # the same chain, its conditionals averaged: within 0.02 of the exact marginals (the
    # counts' tolerance above is 0.05), and closer than the counts of the same draws
    docs = [[0, 1, 2], [2, 2, 0, 3]]
    tokens = np.array([w for d in docs for w in d], np.int32)
    doc_ptr = np.cumsum([0] + [len(d) for d in docs])
    alpha = 0.3
    rb = token_topic_frequencies(tokens, doc_ptr, PHI, alpha, 3000, 100, seed=4)
    counts = token_topic_frequencies(tokens, doc_ptr, PHI, alpha, 3000, 100, seed=4,
                                     rao_blackwell=False)
    exact = np.vstack([_exact_marginals(PHI, np.array(d), alpha) for d in docs])
    np.testing.assert_allclose(rb.sum(axis=1), 1.0, atol=1e-12)
    assert np.max(np.abs(rb - exact)) < 0.02
    assert np.abs(rb - exact).sum() < np.abs(counts - exact).sum()


def test_one_token_documents_get_their_exact_conditional():
    rng = np.random.default_rng(5)
    alpha = np.array([0.05, 1.5, 0.4])
    tokens = np.array([0, 3, 2], np.int32)
    freq = token_topic_frequencies(tokens, np.arange(4), PHI, alpha, 5, 1, seed=rng.integers(9))
    want = alpha[:, None] * PHI[:, tokens]
    np.testing.assert_allclose(freq, (want / want.sum(axis=0)).T, rtol=1e-12)


def test_topics_on_disjoint_words_are_known_exactly():
    phi = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.7, 0.3]])
    tokens = np.array([0, 2, 3, 1, 2], np.int32)
    doc_ptr = np.array([0, 2, 5])
    freq = token_topic_frequencies(tokens, doc_ptr, phi, 0.1, 20, 5, seed=1)
    np.testing.assert_array_equal(freq, np.eye(2)[[0, 1, 1, 0, 1]])


def test_the_same_seed_gives_the_same_frequencies_and_documents_use_their_own_streams():
    tokens = np.array([0, 1, 2, 3, 0, 1, 2, 3], np.int32)
    a = token_topic_frequencies(tokens, np.array([0, 4, 8]), PHI, 0.5, 40, 10, seed=2)
    b = token_topic_frequencies(tokens, np.array([0, 4, 8]), PHI, 0.5, 40, 10, seed=2)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a[:4], a[4:])  # same words, different streams
    assert not np.array_equal(a, token_topic_frequencies(tokens, np.array([0, 4, 8]), PHI,
                                                         0.5, 40, 10, seed=3))


@pytest.mark.parametrize("n_sweeps, burn_in", [(10, 10), (10, -1), (5, 7)])
def test_burn_in_must_leave_sweeps_to_keep(n_sweeps, burn_in):
    with pytest.raises(ValueError, match="need 0 <= burn_in < n_sweeps"):
        token_topic_frequencies(np.array([0], np.int32), np.array([0, 1]), PHI, 0.5,
                                n_sweeps, burn_in, seed=0)
