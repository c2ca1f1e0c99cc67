"""Relevance-ranked top words and topic labels (dolda.interpret.topics)."""

import math

import numpy as np
import pytest

from dolda import LDA
from dolda.interpret.topics import (
    DEFAULT_RELEVANCE,
    model_word_frequencies,
    relevance,
    relevant_words,
    topic_labels,
    word_probabilities,
)

pytestmark = pytest.mark.quality


def brute_relevance(phi, freq, lam):
    p = [f / sum(freq) for f in freq]
    out = []
    for row in phi:
        total = sum(row)
        out.append([lam * math.log(x / total) + (1 - lam) * math.log((x / total) / pw)
                    for x, pw in zip(row, p)])
    return np.array(out)


def test_relevance_matches_the_formula_term_by_term():
    phi = [[0.5, 0.25, 0.2, 0.05], [0.1, 0.1, 0.3, 0.5]]
    freq = [30, 10, 25, 35]
    for lam in (0.0, 0.3, DEFAULT_RELEVANCE, 1.0):
        np.testing.assert_allclose(relevance(phi, freq, lam), brute_relevance(phi, freq, lam),
                                   rtol=1e-12)


def test_relevance_demotes_a_word_frequent_in_every_topic():
    # "the" is 40% of both topics; hand computation (equal topic weights):
    # r(the) = 0.6 log .4 = -0.550, r(space) = log .3 - 0.4 log .15 = -0.445
    vocab = ["the", "space", "game", "orbit", "team"]
    phi = np.array([[0.4, 0.3, 0.0, 0.3, 0.0], [0.4, 0.0, 0.3, 0.0, 0.3]])
    p = word_probabilities(phi)
    np.testing.assert_allclose(p, [0.4, 0.15, 0.15, 0.15, 0.15])
    raw = relevant_words(phi, p, lam=1.0, n=2, vocab=vocab)
    assert raw[0, 0] == "the" and raw[1, 0] == "the"
    ranked = relevant_words(phi, p, lam=0.6, n=3, vocab=vocab)
    assert ranked[0].tolist() == ["space", "orbit", "the"]  # ties broken by word id
    assert ranked[1].tolist() == ["game", "team", "the"]
    assert relevance(phi, p, 0.6)[0, 0] == pytest.approx(0.6 * math.log(0.4))
    # a word absent from a topic is never among its relevant words
    assert "game" not in relevant_words(phi, p, lam=0.0, n=3, vocab=vocab)[0]


def test_word_probabilities_weight_topics():
    phi = np.array([[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_allclose(word_probabilities(phi, [3, 1]), [0.75, 0.25])
    with pytest.raises(ValueError, match="topic_weights"):
        word_probabilities(phi, [1, 2, 3])


def test_bad_arguments_are_one_line_errors():
    phi = np.array([[0.5, 0.5]])
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        relevance(phi, [1, 1], 1.5)
    with pytest.raises(ValueError, match="2 words"):
        relevance(phi, [1, 1, 1], 0.5)
    with pytest.raises(ValueError, match="n must be"):
        relevant_words(phi, [1, 1], n=0)
    with pytest.raises(ValueError, match="shape"):
        relevant_words([0.5, 0.5], [1, 1])


def test_topic_labels_are_short_and_distinct():
    vocab = ["a", "b", "c", "d", "e", "f"]
    phi = np.array([[0.3, 0.3, 0.2, 0.1, 0.05, 0.05],
                    [0.3, 0.3, 0.2, 0.05, 0.1, 0.05],   # same first three words
                    [0.3, 0.3, 0.2, 0.1, 0.05, 0.05],   # identical to topic 0
                    [0.0, 0.0, 0.0, 0.1, 0.1, 0.8]])
    freq = np.ones(6)
    labels = topic_labels(phi, freq, vocab, lam=1.0, n_words=3)
    assert len(set(labels)) == 4
    assert labels[3] == "f d e"
    assert labels[1] == "a b c e"          # one more word tells it from topic 0
    assert labels[0].endswith("(0)") and labels[2].endswith("(2)")
    assert topic_labels(phi[[0, 3]], freq, vocab, lam=1.0, n_words=2, sep="_") == ["a_b", "f_d"]


def test_lda_top_words_and_labels_use_relevance():
    rng = np.random.default_rng(0)
    # four topics of three words, plus a "header" word making a third of every document:
    # phi(header) ~ 1/3 > phi(word) ~ 2/9, but with K = 4 the lift of a topic word is ~4
    # and relevance 0.6 ranks it first iff phi_h / phi_w < 4 ** (0.4 / 0.6) = 2.5
    groups = [["apple", "banana", "cherry"], ["dog", "eagle", "fox"],
              ["gold", "iron", "lead"], ["mars", "venus", "pluto"]]
    docs = [["header"] * 4 + list(rng.choice(groups[d % 4], 8)) for d in range(120)]
    model = LDA(n_topics=4, n_iter=60, random_state=1, progress=False, rare_share=0).fit(docs)
    raw = model.top_words(1, relevance=1.0)
    assert [row[0] for row in raw] == ["header"] * 4
    ranked = model.top_words(3)
    assert all("header" not in row for row in ranked)
    assert sorted(map(sorted, ranked)) == sorted(map(sorted, groups))
    # relevance=1 is exactly the raw phi ranking
    order = np.argsort(-model.phi_, axis=1, kind="stable")[:, :4]
    words = np.asarray(model.vocabulary_.words)
    assert model.top_words(4, relevance=1.0) == [list(r) for r in words[order]]
    labels = model.topic_labels(n_words=2)
    assert len(labels) == 4 and all(len(label.split()) == 2 for label in labels)
    assert labels == [" ".join(row[:2]) for row in ranked]
    p = model_word_frequencies(model)
    assert p.shape == (len(words),) and p.sum() == pytest.approx(1.0)
    assert p[list(words).index("header")] == pytest.approx(4 / 12, abs=0.02)
