"""Topic coherence (dolda.interpret.coherence) against brute-force counts and, when installed, gensim."""

import itertools
import math

import numpy as np
import pytest

from dolda.interpret.coherence import coherence, topic_coherence

pytestmark = pytest.mark.quality

EPS = 1e-12


def windows_of(texts, size):
    """Every window as a set of words: the obvious definition."""
    out = []
    for doc in texts:
        if size is None or len(doc) <= size:
            out.append(set(doc))
        else:
            out.extend(set(doc[i:i + size]) for i in range(len(doc) - size + 1))
    return out


def brute(topics, texts, measure, size, smoothing=1.0):
    wins = windows_of(texts, size)
    n = len(wins)
    count = lambda *ws: sum(all(w in win for w in ws) for win in wins)  # noqa: E731

    def npmi(a, b):
        pab = count(a, b) / n
        pa, pb = count(a) / n, count(b) / n
        return math.log((pab + EPS) / (pa * pb)) / -math.log(pab + EPS)

    scores = []
    for top in topics:
        if measure == "u_mass":
            vals = [math.log((count(top[i], top[j]) + smoothing) / count(top[j]))
                    for i in range(1, len(top)) for j in range(i)]
        elif measure == "c_npmi":
            vals = [npmi(a, b) for a, b in itertools.combinations(top, 2)]
        else:
            vecs = [[npmi(a, b) for b in top] for a in top]
            total = [sum(col) for col in zip(*vecs)]
            norm = lambda v: math.sqrt(sum(x * x for x in v))  # noqa: E731
            vals = [sum(x * y for x, y in zip(v, total)) / (norm(v) * norm(total))
                    for v in vecs]
        scores.append(sum(vals) / len(vals))
    return np.array(scores)


def random_texts(seed, n_docs=40, vocab=12):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(vocab)]
    return [list(rng.choice(words, rng.integers(1, 25), p=np.arange(vocab, 0, -1) /
                            (vocab * (vocab + 1) / 2))) for _ in range(n_docs)]


TOPICS = [["w0", "w1", "w2", "w3"], ["w4", "w5", "w0"], ["w7", "w3", "w9", "w11", "w1"]]


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("measure,size", [("u_mass", None), ("c_npmi", 10), ("c_npmi", 3),
                                          ("c_v", 110), ("c_v", 5), ("c_npmi", None)])
def test_matches_brute_force_counts(seed, measure, size):
    texts = random_texts(seed)
    got = coherence(TOPICS, texts, measure, window_size=size)
    np.testing.assert_allclose(got, brute(TOPICS, texts, measure, size), rtol=1e-10, atol=1e-12)


def test_hand_computed_umass_and_npmi():
    # documents: {a,b}, {a,b}, {a}, {c}
    texts = [["a", "b"], ["b", "a"], ["a"], ["c"]]
    # UMass pair (b, a): log((D(a,b) + 1) / D(a)) = log(3 / 3) = 0; (c, a): log(1 / 3)
    assert coherence([["a", "b"]], texts, "u_mass")[0] == pytest.approx(0.0)
    assert coherence([["a", "c"]], texts, "u_mass")[0] == pytest.approx(math.log(1 / 3))
    # NPMI(a, b) over documents: P(a)=3/4, P(b)=1/2, P(a,b)=1/2 -> log(4/3) / log(2)
    assert coherence([["a", "b"]], texts, "c_npmi", window_size=None)[0] == pytest.approx(
        math.log(4 / 3) / math.log(2), rel=1e-9)
    # never together: NPMI close to -1 (exactly -1 without gensim's eps)
    assert coherence([["b", "c"]], texts, "c_npmi", window_size=None)[0] == pytest.approx(
        -1.0, abs=0.1)


def test_coherent_topics_score_higher_than_mixed_ones():
    rng = np.random.default_rng(5)
    groups = [[f"a{i}" for i in range(5)], [f"b{i}" for i in range(5)]]
    texts = [list(rng.choice(groups[d % 2], 30)) for d in range(60)]
    good = [groups[0][:4], groups[1][:4]]
    mixed = [groups[0][:2] + groups[1][:2], groups[1][2:4] + groups[0][2:4]]
    for measure in ("u_mass", "c_npmi", "c_v"):
        assert coherence(good, texts, measure).mean() > coherence(mixed, texts, measure).mean() \
            + 0.1, measure


def test_absent_word_pairs_are_left_out_and_errors():
    texts = [["a", "b"], ["a", "b", "c"]]
    with_absent = coherence([["a", "b", "zzz"]], texts, "c_npmi", window_size=None)
    assert with_absent[0] == pytest.approx(
        coherence([["a", "b"]], texts, "c_npmi", window_size=None)[0])
    assert np.isnan(coherence([["zzz", "yyy"]], texts, "u_mass")[0])
    with pytest.raises(ValueError, match="measure"):
        coherence([["a", "b"]], texts, "c_uci")
    with pytest.raises(ValueError, match="two top words"):
        coherence([["a"]], texts)
    with pytest.raises(ValueError, match="token lists"):
        coherence([["a", "b"]], ["a b", "b c"])


@pytest.mark.parametrize("measure", ["u_mass", "c_npmi", "c_v"])
def test_agrees_with_gensim(measure):
    gensim = pytest.importorskip("gensim")
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    rng = np.random.default_rng(3)
    # gensim skips windows of documents without a top word (every document here has w0),
    # and its sliding window forgets a word repeated inside a window when the first copy
    # leaves it (text_analysis._slide_window), so words do not repeat within a document
    texts = [["w0"] + list(rng.permutation([f"w{i}" for i in range(1, 12)])[:rng.integers(1, 11)])
             for _ in range(60)]
    for doc in texts:
        rng.shuffle(doc)
    dictionary = Dictionary(texts)
    model = CoherenceModel(topics=TOPICS, texts=texts, dictionary=dictionary,
                           corpus=[dictionary.doc2bow(t) for t in texts], coherence=measure,
                           processes=1)
    expected = np.array(model.get_coherence_per_topic())
    got = coherence(TOPICS, texts, measure,
                    smoothing=EPS * len(texts) if measure == "u_mass" else 1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-7, atol=1e-9)
    assert gensim.__version__


def test_topic_coherence_of_a_fitted_lda():
    from dolda import LDA

    rng = np.random.default_rng(0)
    groups = [["apple", "banana", "cherry", "grape"], ["dog", "eagle", "fox", "goat"]]
    docs = [" ".join(rng.choice(groups[d % 2], 12)) for d in range(60)]
    model = LDA(n_topics=2, n_iter=40, random_state=0, progress=False, rare_share=0).fit(docs)
    scores = topic_coherence(model, docs, "c_npmi", n_words=4)
    assert scores.shape == (2,)
    assert (scores > 0.5).all()  # each topic is one co-occurring group
    # the same numbers as scoring the raw top words by hand
    top = model.top_words(4, relevance=1.0)
    tokens = [d.split() for d in docs]
    np.testing.assert_allclose(scores, coherence(top, tokens, "c_npmi"))
