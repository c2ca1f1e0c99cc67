"""``hyper.learn``: the chain's alpha and beta re-estimated from its own topics.

The expected values are Minka's fixed point (its maximum-likelihood property is
tested in ``test_hyper.py``) applied to counts recomputed here with numpy from
``z`` and the tokens.  Small and fast: also the test selection of the mutation
run over ``hyper.py`` (docs/MUTATION.md).
"""

import numpy as np
import pytest

from dolda.sampler import gibbs_iteration as chain, hyper
from dolda.sampler import probit_blocks as probit_blocks

pytestmark = pytest.mark.power


def _chain(seed=0, D=60, V=25, K=4):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(5, 40, D)
    lengths[2] = 0  # an empty document
    doc_ptr = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    topic_words = rng.dirichlet(np.full(V, 0.1), K)
    z = rng.integers(0, K, doc_ptr[-1]).astype(np.int32)
    tokens = np.array([rng.choice(V, p=topic_words[k]) for k in z], np.int32)
    data = chain.TopicData(tokens, doc_ptr, V, np.ones((D, 1)), np.zeros(D, np.int64), 2)
    doc_of = np.repeat(np.arange(D), lengths)
    ndk = np.zeros((D, K), np.int32)
    np.add.at(ndk, (doc_of, z), 1)
    prior = probit_blocks.ProbitPrior(False, np.ones(1 + K, bool), 1.0)
    return data, z, ndk, chain.DOLDAConfig(K, 0.7, 0.3, prior, "exact", 1)


def _mle(a, counts, totals, dim):
    return hyper.symmetric_dirichlet(a, hyper.histogram(counts), hyper.histogram(totals), dim)


@pytest.mark.parametrize("learn_alpha, learn_beta", [(True, True), (True, False), (False, True),
                                                     (False, False)])
@pytest.mark.parametrize("V, K", [(25, 4), (3, 7)])  # more topics than words, too
def test_learn_re_estimates_what_it_is_asked_to_from_the_chains_counts(learn_alpha, learn_beta,
                                                                       V, K):
    data, z, ndk, config = _chain(V=V, K=K)
    K, V = config.n_topics, data.n_words
    nkw = np.zeros((K, V), np.int64)
    np.add.at(nkw, (z, data.tokens), 1)
    alpha = _mle(0.7, ndk, np.diff(data.doc_ptr), K)
    beta = _mle(0.3, nkw, nkw.sum(axis=1), V)
    assert abs(alpha - 0.7) > 0.05 and abs(beta - 0.3) > 0.05  # the test can tell them apart
    new = hyper.learn(config, z, ndk, data, learn_alpha, learn_beta)
    assert new.alpha == pytest.approx(alpha if learn_alpha else 0.7, rel=1e-12)
    assert new.beta == pytest.approx(beta if learn_beta else 0.3, rel=1e-12)
    assert new._replace(alpha=0.7, beta=0.3) == config  # nothing else changes


def test_no_counts_leave_the_concentration_where_it_was():
    empty = hyper.histogram(np.zeros((3, 4), np.int64))
    assert hyper.symmetric_dirichlet(0.42, empty, empty, 4) == 0.42
