"""Held-out log-likelihood and perplexity by document completion (dolda.evaluate.heldout)."""

import math

import numpy as np
import pytest

from dolda import DOLDA, LDA
from dolda.evaluate.heldout import (
    document_completion,
    heldout_log_likelihood,
    perplexity,
    split_halves,
)
from dolda import Prediction, Text

pytestmark = pytest.mark.quality


def test_split_halves_takes_the_first_floor_half():
    tokens = np.array([0, 1, 2, 3, 4, 5, 6, 7])
    doc_ptr = np.array([0, 5, 6, 6, 8])  # lengths 5, 1, 0, 2
    obs, obs_ptr, held, held_doc = split_halves(tokens, doc_ptr)
    assert obs.tolist() == [0, 1, 6]
    assert obs_ptr.tolist() == [0, 2, 2, 2, 3]
    assert held.tolist() == [2, 3, 4, 5, 7]
    assert held_doc.tolist() == [0, 0, 0, 1, 3]


def test_hand_computed_case_with_disjoint_topics():
    # topic 0 = {a, b}, topic 1 = {c, d}, each uniform; document "a a | b c":
    # the observed "a a" can only come from topic 0, so every sweep has n_d = (2, 0),
    # theta = ((2 + alpha), alpha) / (2 + 2 alpha); held out: p(b) = theta_0 / 2,
    # p(c) = theta_1 / 2.  Second document "c | d": theta = (alpha, 1 + alpha) / (1 + 2 alpha).
    phi = np.array([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]])
    alpha = 0.1
    tokens = np.array([0, 0, 1, 2, 2, 3])
    doc_ptr = np.array([0, 4, 6])
    loglik, n = document_completion(phi, alpha, tokens, doc_ptr, n_sweeps=10, seed=3)
    t0 = (2 + alpha) / (2 + 2 * alpha)
    expected0 = math.log(t0 / 2) + math.log((1 - t0) / 2)
    expected1 = math.log((1 + alpha) / (1 + 2 * alpha) / 2)
    np.testing.assert_allclose(loglik, [expected0, expected1], rtol=1e-12)
    assert n.tolist() == [2, 1]


def planted(seed, n_docs, n_words=8):
    """Documents each drawn from one of 4 topics of 4 equally likely words."""
    rng = np.random.default_rng(seed)
    groups = [[f"{c}{i}" for i in range(4)] for c in "pqrs"]
    return [" ".join(rng.choice(groups[d % 4], n_words)) for d in range(n_docs)]


def test_perplexity_of_planted_topics_is_near_the_true_value():
    # each held-out document draws 4 equally likely words of one topic: the true model's
    # perplexity is 4.  A fitted LDA with alpha = 0.1 puts theta = 4.1 / 4.4 = 0.93 on the
    # topic of the 4 observed tokens, so p(w) ~ 0.93 / 4 and the perplexity ~ 4.29; a model
    # that ignores the documents scores V = 16.
    train, test = planted(0, 200), planted(1, 80)
    model = LDA(n_topics=4, n_iter=60, alpha=0.1, random_state=0, progress=False,
                rare_share=0).fit(train)
    ppl = perplexity(model, test)
    assert 4.2 <= ppl < 4.4
    uniform = LDA(n_topics=4, n_iter=5, alpha=0.1, random_state=0, progress=False,
                  rare_share=0).fit(train)
    uniform.phi_ = np.full_like(model.phi_, 1 / model.phi_.shape[1])
    assert perplexity(uniform, test) == pytest.approx(16.0)
    result = heldout_log_likelihood(model, test + ["zzz unknown p0"])
    assert result.n_unseen == 2
    assert result.n_tokens[-1] == 1 and result.n_tokens[:-1].tolist() == [4] * 80
    # reproducible: the model's seed is the default
    assert perplexity(model, test) == ppl


def test_dolda_is_scored_as_its_topic_model():
    train = planted(2, 120)
    y = [d % 4 >= 2 for d in range(120)]
    model = DOLDA(n_topics=4, n_iter=60, alpha=0.1, random_state=0, progress=False, text=Text(rare_share=0), prediction=Prediction(sweeps=20)).fit(train, y)
    ppl = perplexity(model, planted(3, 40))
    assert 4.2 <= ppl < 4.5
    with pytest.raises(ValueError, match="empty|no held-out token"):
        heldout_log_likelihood(model, ["", "zzz yyy"]).perplexity
    # a one-word document has no observed half: it is scored under the prior mean theta
    one = heldout_log_likelihood(model, ["p0"])
    assert one.n_tokens.tolist() == [1]
    assert one.loglik[0] == pytest.approx(np.log(model.phi_[:, model.vocabulary_.index_["p0"]]
                                                 .mean()))
