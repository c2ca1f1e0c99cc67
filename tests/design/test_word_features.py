"""Words as covariates (``DOLDA(n_words=...)``) and the vocabulary controls (issue 12).

* :class:`dolda.design.word_features.WordFeatures` against scikit-learn's vectorizers
  on a small corpus (selection by document frequency, log / binary / tf-idf).
* DOLDA with word covariates: names, coefficients, prediction after save/load,
  ``explain`` and ``signal_covariates`` list ``word=<w>`` columns; a decisive
  word planted in one class is kept by the Horseshoe.
* Stop words from a list or a file, ``max_df``, ``token_pattern``, their
  errors, and the same options from ``dolda fit``.
"""

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

import dolda
from dolda import DOLDA
from dolda.cli import main
from dolda.design.corpus import Corpus, read_stop_words
from dolda.datasets import simulate
from dolda.design.word_features import WordFeatures
from dolda import Sampler, Text, Words
from dolda.experimental import Experimental

DOCS = ["apple banana apple cherry", "banana banana date", "cherry apple egg egg egg",
        "fig apple", "banana cherry"]


def _reference(kind, words):
    vocab = {w: i for i, w in enumerate(words)}
    if kind == "tfidf":
        return TfidfVectorizer(vocabulary=vocab, sublinear_tf=True).fit(DOCS).transform(
            DOCS).toarray()
    counts = CountVectorizer(vocabulary=vocab).fit_transform(DOCS).toarray().astype(float)
    return np.log1p(counts) if kind == "log" else (counts > 0).astype(float)


@pytest.mark.parametrize("kind", ["log", "binary", "tfidf"])
def test_word_features_match_scikit_learn(kind):
    corpus = Corpus(DOCS, rare_share=0)
    wf = WordFeatures(3, kind).fit(corpus)
    # document frequencies: apple 3, banana 3, cherry 3, date 1, egg 1, fig 1
    assert wf.words_ == ["apple", "banana", "cherry"]
    assert wf.get_feature_names_out() == ["word=apple", "word=banana", "word=cherry"]
    got = wf.transform(corpus)
    assert got.shape == (5, 3)
    # sklearn's tf-idf idf is computed over its own vocabulary: same formula, same df
    np.testing.assert_allclose(got.toarray(), _reference(kind, wf.words_), atol=1e-12)
    back = WordFeatures.from_dict(wf.to_dict())
    np.testing.assert_array_equal(back.transform(corpus).toarray(), got.toarray())


def test_chi2_selection_matches_scikit_learn_and_skips_rare_words():
    # 8 documents, two classes: "alpha" marks class 0 (in 3 of its 4 documents),
    # "beta" is spread evenly, "gamma" marks class 1 but is in only 2 documents
    docs = ["alpha beta delta", "alpha beta", "alpha delta", "beta delta",
            "beta gamma delta", "beta gamma", "delta epsilon", "beta epsilon"]
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    corpus = Corpus(docs, rare_share=0)
    present = CountVectorizer(vocabulary=corpus.vocabulary.words, binary=True).fit_transform(docs)
    from sklearn.feature_selection import chi2

    score = chi2(present, y)[0]
    wf = WordFeatures(2, selection="chi2").fit(corpus, y)
    words = corpus.vocabulary.words
    eligible = [w for w in words if present[:, words.index(w)].sum() >= 3]
    best = sorted(eligible, key=lambda w: (-score[words.index(w)], w))[:2]
    assert wf.words_ == sorted(best)
    assert "alpha" in wf.words_ and "gamma" not in wf.words_  # gamma: df 2 < 3
    # asking for more words than qualify fills the rest by document frequency
    everything = WordFeatures(len(words), selection="chi2").fit(corpus, y)
    assert sorted(everything.words_) == sorted(words)
    # state survives the model file's dict; df selection is the default and label-free
    assert WordFeatures.from_dict(wf.to_dict()).selection == "chi2"
    assert WordFeatures(2).fit(corpus).words_ == ["beta", "delta"]
    with pytest.raises(ValueError, match="one label per training document"):
        WordFeatures(2, selection="chi2").fit(corpus)
    with pytest.raises(ValueError, match="word_selection"):
        WordFeatures(2, selection="mi").fit(corpus, y)


def test_dolda_word_selection_chi2_keeps_the_class_word(planted, tmp_path):
    texts, y, target = planted
    # 10 words by document frequency miss the planted class word; chi2 picks it first
    by_df = DOLDA(n_topics=4, n_iter=5, random_state=1, progress=False, words=Words(n=10), text=Text(rare_share=0)).fit(texts, y)
    assert "word=zebra" not in by_df.feature_names_
    model = DOLDA(n_topics=4, n_iter=5, random_state=1, progress=False, words=Words(n=10), experimental=Experimental(word_selection="chi2"), text=Text(rare_share=0)).fit(texts, y)
    assert "word=zebra" in model.feature_names_
    model.save(tmp_path / "m")
    again = dolda.load(tmp_path / "m")
    assert again.word_selection == "chi2" and again.word_features_.selection == "chi2"
    np.testing.assert_array_equal(again.predict_proba(texts[:10]), model.predict_proba(texts[:10]))
    with pytest.raises(ValueError, match="word_selection"):
        DOLDA(words=Words(n=2), experimental=Experimental(word_selection="mutual")).fit(DOCS, [0, 1, 0, 1, 0])


def test_word_features_reject_bad_arguments():
    corpus = Corpus(DOCS, rare_share=0)
    with pytest.raises(ValueError, match="n_words"):
        WordFeatures(-1).fit(corpus)
    with pytest.raises(ValueError, match="word_features"):
        WordFeatures(2, "counts").fit(corpus)
    with pytest.raises(ValueError, match="n_words"):
        DOLDA(words=Words(n=2.5)).fit(DOCS, [0, 1, 0, 1, 0])
    with pytest.raises(ValueError, match="Words.features"):
        DOLDA(words=Words(n=2, features="tf")).fit(DOCS, [0, 1, 0, 1, 0])


@pytest.fixture(scope="module")
def planted():
    """Simulated corpus where the word 'zebra' occurs only in class 2 documents."""
    sim = simulate(n_docs=240, n_topics=4, n_classes=3, vocab_size=120, doc_length=40,
                   n_signal=1, random_state=5)
    rng = np.random.default_rng(0)
    y = np.asarray(sim.y)
    target = np.unique(y)[2]
    texts = [t + (" zebra" if (label == target and rng.random() < 0.8) else "")
             for t, label in zip(sim.texts, y)]
    return texts, y, target


@pytest.mark.parametrize("eta_sampler", ["cholesky", "cg"])
def test_dolda_keeps_a_decisive_word(planted, eta_sampler, tmp_path):
    texts, y, target = planted
    # cg is an experimental eta-step: not a Sampler choice
    chooser = (dict(experimental=Experimental(eta_sampler=eta_sampler)) if eta_sampler == "cg"
               else dict(sampler=Sampler(eta=eta_sampler)))
    model = DOLDA(n_topics=4, n_iter=60, random_state=1, progress=False, words=Words(n=500),
                  text=Text(rare_share=0), **chooser).fit(texts, y)
    assert model.eta_sampler_ == eta_sampler
    words = [c for c in model.feature_names_ if c.startswith("word=")]
    assert len(words) == len(model.vocabulary_.words) and "word=zebra" in words
    assert model.feature_names_[-4:] == [f"topic {k}" for k in range(4)]
    signal = model.signal_covariates(target)
    assert "word=zebra" in signal.index and signal.loc["word=zebra", "coef"] > 0
    # the planted word is the strongest positive covariate of class 2
    assert model.coef_.loc[target, words].idxmax() == "word=zebra"
    explained = model.explain(texts[int(np.flatnonzero(y == target)[0])] + " zebra")
    assert "word=zebra" in set(explained["feature"])
    model.save(tmp_path / "m")
    again = dolda.load(tmp_path / "m")
    np.testing.assert_array_equal(again.predict_proba(texts[:20]), model.predict_proba(texts[:20]))


def test_stop_words_from_a_list_or_a_file(tmp_path):
    path = tmp_path / "stop.txt"
    path.write_text("# stack-trace words\njava\norg  # trailing comment\n\napache\n",
                    encoding="utf-8")
    assert read_stop_words(path) == ["apache", "java", "org"]
    assert read_stop_words(str(path)) == ["apache", "java", "org"]
    assert read_stop_words(["b", "a", "a"]) == ["a", "b"]
    assert read_stop_words("english") == "english" and read_stop_words(None) is None
    with pytest.raises(ValueError, match="is not a file"):
        read_stop_words(tmp_path / "missing.txt")
    docs = ["java org apache fails", "org java apache crashes now", "fails now crashes"]
    model = DOLDA(n_topics=2, n_iter=4, progress=False, random_state=0, text=Text(stop_words=path, rare_share=0)).fit(docs, [0, 1, 0])
    assert not {"java", "org", "apache"} & set(model.vocabulary_.words)
    assert "now" in model.vocabulary_.words  # the English list is not used here
    model = DOLDA(n_topics=2, n_iter=4, progress=False, random_state=0, text=Text(rare_share=0, max_df=0.4, token_pattern=r"\b\w+\b")).fit(docs + ["x y z"], [0, 1, 0, 1])
    assert "x" in model.vocabulary_.words       # one-letter tokens kept by the pattern
    assert "java" not in model.vocabulary_.words  # in 2 of 4 documents: above max_df
    with pytest.raises(ValueError, match="token_pattern"):
        DOLDA(text=Text(token_pattern="(unclosed")).fit(docs, [0, 1, 0])


def test_cli_word_and_vocabulary_options(tmp_path):
    sim = simulate(n_docs=120, n_topics=3, n_classes=2, vocab_size=80, doc_length=30,
                   random_state=2)
    data = tmp_path / "d.csv"
    pd.DataFrame({"text": sim.texts, "y": sim.y}).to_csv(data, index=False)
    stop = tmp_path / "stop.txt"
    stop.write_text("w0001\nw0002\n", encoding="utf-8")
    out = tmp_path / "model"
    result = CliRunner().invoke(main, [
        "fit", str(data), "--text", "text", "--label", "y", "--topics", "3",
        "--iterations", "20", "--quiet", "--seed", "1", "--words", "15",
        "--word-features", "binary", "--word-selection", "chi2", "--stop-words", "english",
        "--stop-words", str(stop), "--max-df", "0.95", "--token-pattern", r"(?u)\b\w\w+\b",
        "--out", str(out)])
    assert result.exit_code == 0, result.output
    model = dolda.load(out)
    assert model.word_features_.kind == "binary" and len(model.word_features_.words_) == 15
    assert model.word_selection == "chi2" and model.word_features_.selection == "chi2"
    assert "w0001" not in model.vocabulary_.words and "the" not in model.vocabulary_.words
    result = CliRunner().invoke(main, ["topics", str(out), "--level", "0.5"])
    assert result.exit_code == 0, result.output
    assert "word=" in result.output
    bad = CliRunner().invoke(main, ["fit", str(data), "--text", "text", "--label", "y",
                                    "--stop-words", str(tmp_path / "nope.txt"),
                                    "--out", str(tmp_path / "m2")])
    assert bad.exit_code != 0 and "is not a file" in bad.output


def test_auto_number_of_words_follows_the_documented_rule():
    from dolda.design.word_features import AUTO_MAX_WORDS, AUTO_MIN_WORDS, resolve_n_words

    assert (AUTO_MIN_WORDS, AUTO_MAX_WORDS) == (2000, 5000)
    assert resolve_n_words("auto", 825) == 2000          # small corpora: the floor
    assert resolve_n_words("auto", 8554) == 4277         # one word per two documents
    assert resolve_n_words("auto", 11314) == 5000        # large corpora: the cap
    assert resolve_n_words(0, 11314) == 0 and resolve_n_words(123, 10) == 123
    assert resolve_n_words("all", 11314, 83488) == 83488  # every kept vocabulary word
    for bad in ("every", -1, 2.0, True, None):
        with pytest.raises(ValueError, match="n_words"):
            resolve_n_words(bad, 100)
    with pytest.raises(ValueError, match="auto"):
        WordFeatures("auto").fit(Corpus(DOCS, rare_share=0))


def test_words_are_covariates_by_default_and_zero_turns_them_off():
    sim = simulate(n_docs=60, n_topics=2, n_classes=2, vocab_size=40, doc_length=20,
                   random_state=3)
    assert DOLDA().n_words == "auto"
    model = DOLDA(n_topics=2, n_iter=6, progress=False, random_state=0, text=Text(rare_share=0)).fit(sim.texts, sim.y)
    # 60 documents -> 2,000 asked, capped by the words that occur
    words = [c for c in model.feature_names_ if c.startswith("word=")]
    assert len(words) == len(model.vocabulary_.words) == len(model.word_features_.words_)
    assert model.eta_sampler_ == "cholesky"  # few columns: the exact independent draw
    plain = DOLDA(n_topics=2, n_iter=6, progress=False, random_state=0, text=Text(rare_share=0), words=Words(n=0)).fit(sim.texts, sim.y)
    assert plain.word_features_ is None
    assert not any(c.startswith("word=") for c in plain.feature_names_)


@pytest.mark.parametrize("value, expected", [("auto", None), ("0", 0), ("AUTO", None),
                                             ("all", None)])
def test_cli_words_option_takes_a_number_or_auto(tmp_path, value, expected):
    sim = simulate(n_docs=60, n_topics=2, n_classes=2, vocab_size=40, doc_length=20,
                   random_state=4)
    data = tmp_path / "d.csv"
    pd.DataFrame({"text": sim.texts, "y": sim.y}).to_csv(data, index=False)
    out = tmp_path / "m"
    result = CliRunner().invoke(main, [
        "fit", str(data), "--text", "text", "--label", "y", "--topics", "2",
        "--iterations", "6", "--quiet", "--words", value, "--out", str(out)])
    assert result.exit_code == 0, result.output
    model = dolda.load(out)
    if expected == 0:
        assert model.word_features_ is None
    else:
        assert len(model.word_features_.words_) == len(model.vocabulary_.words)
    bad = CliRunner().invoke(main, [
        "fit", str(data), "--text", "text", "--label", "y", "--words", "lots",
        "--out", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "neither a whole number, 'auto' nor 'all'" in bad.output
