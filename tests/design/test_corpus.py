"""Vocabulary and Corpus: tokenizing, pruning, CSR layout, errors."""

import warnings

import numpy as np
import pandas as pd
import pytest

from dolda.design.corpus import Corpus, Vocabulary


def test_tokenizer_rules_and_stop_words():
    corpus = Corpus(["The GPL2 license, a x11 thing: 42 _tmp under_score naïve"], rare_share=0)
    # "the", "a" are stop words; "42" starts with a digit; "_tmp" with an underscore;
    # "under_score" is one \w run holding an underscore, so it yields no token.
    assert corpus.document(0) == ["gpl2", "license", "x11", "thing", "naïve"]
    assert "the" not in corpus.words


def test_csr_layout_and_properties():
    corpus = Corpus(["alpha beta beta", "gamma", "beta gamma alpha delta"], rare_share=0)
    assert corpus.words == ["alpha", "beta", "delta", "gamma"]
    assert corpus.tokens.dtype == np.int32 and corpus.doc_ptr.dtype == np.int64
    assert corpus.doc_ptr.tolist() == [0, 3, 4, 8]
    assert corpus.tokens.tolist() == [0, 1, 1, 3, 1, 3, 0, 2]
    assert corpus.n_docs == 3 and corpus.n_tokens == 8 and corpus.n_words == 4
    assert corpus.doc_lengths.tolist() == [3, 1, 4]
    assert [corpus.document(d) for d in range(3)] == [
        ["alpha", "beta", "beta"], ["gamma"], ["beta", "gamma", "alpha", "delta"]]


def test_series_and_pretokenized_inputs_agree():
    texts = ["Apple banana", "banana cherry cherry"]
    a = Corpus(pd.Series(texts, index=[10, 20]), rare_share=0)
    b = Corpus([["apple", "banana"], ["BANANA", "cherry", "cherry"]], rare_share=0)
    assert a.words == b.words
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(a.doc_ptr, b.doc_ptr)


def test_rare_share_removes_rarest_types_up_to_the_share():
    # counts: common 90, mid 6, rare1 2, rare2 1, rare3 1  -> total 100
    docs = [["common"] * 90 + ["mid"] * 6 + ["rarea"] * 2 + ["rareb", "rarec"]]
    # 2% budget: rareb (1) + rarec (1) = 2 fit; adding rarea (2) would exceed
    assert Corpus(docs, rare_share=0.02).words == ["common", "mid", "rarea"]
    # 4% budget: the three rarest (1 + 1 + 2 = 4) go
    assert Corpus(docs, rare_share=0.04).words == ["common", "mid"]
    assert Corpus(docs, rare_share=0.0).n_tokens == 100


def test_document_frequency_bounds():
    docs = ["aa bb cc", "aa bb", "aa dd"]
    assert Corpus(docs, rare_share=0, min_df=2).words == ["aa", "bb"]
    assert Corpus(docs, rare_share=0, max_df=2).words == ["bb", "cc", "dd"]
    assert Corpus(docs, rare_share=0, max_df=0.7).words == ["bb", "cc", "dd"]


def test_transform_drops_and_counts_unseen_words():
    vocab = Vocabulary(rare_share=0)
    vocab.fit(["apple banana", "banana cherry"])
    new = vocab.transform(["apple durian durian", "cherry elderberry banana"])
    assert vocab.n_unseen_ == 3 and new.n_unseen == 3
    assert [new.document(d) for d in range(2)] == [["apple"], ["cherry", "banana"]]
    assert new.vocabulary is vocab


def test_transform_of_a_corpus_with_another_vocabulary():
    train = Vocabulary(rare_share=0)
    train.fit(["apple banana cherry"])
    other = Corpus(["durian apple", "cherry cherry fig"], rare_share=0)
    mapped = train.transform(other)
    assert [mapped.document(d) for d in range(2)] == [["apple"], ["cherry", "cherry"]]
    assert train.n_unseen_ == 2
    assert train.transform(mapped) is mapped


def test_vocabulary_round_trip():
    vocab = Vocabulary(rare_share=0, stop_words=["Foo"])
    vocab.fit(["foo bar baz", "bar qux"])
    again = Vocabulary.from_dict(vocab.to_dict())
    assert again.words == vocab.words == ["bar", "baz", "qux"]
    np.testing.assert_array_equal(again.transform(["qux bar foo"]).tokens, [2, 0])


def test_empty_documents_warn_with_their_count():
    with pytest.warns(UserWarning, match="2 of 4 documents are empty"):
        corpus = Corpus(["apple banana", "the of", "", "banana"], rare_share=0)
    assert corpus.doc_lengths.tolist() == [2, 0, 0, 1]


def test_no_warning_without_empty_documents():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Corpus(["apple banana", "banana"], rare_share=0)


def test_empty_corpus_is_an_error():
    with pytest.raises(ValueError, match="corpus is empty"):
        Corpus([])


def test_all_documents_empty_after_pruning():
    with pytest.raises(ValueError, match="empty after tokenizing"):
        Corpus(["the of and", "42 7"])
    with pytest.raises(ValueError, match="all documents are empty after pruning"):
        Corpus(["apple banana", "cherry"], min_df=2, rare_share=0)


def test_unseen_only_documents_are_a_warning_at_transform():
    """New documents may all be empty (predict([""])): warned, like one empty document
    in a batch, not an error (issue 15: the two used to disagree)."""
    vocab = Vocabulary(rare_share=0)
    vocab.fit(["apple banana"])
    with pytest.warns(UserWarning, match="1 of 1 documents are empty"):
        corpus = vocab.transform(["durian"])
    assert corpus.n_docs == 1 and corpus.n_tokens == 0


def test_non_string_entries_name_index_and_type():
    with pytest.raises(TypeError, match=r"document 1 is float"):
        Corpus(["apple", float("nan"), "banana"])
    with pytest.raises(TypeError, match=r"document 'b' \(position 1\) is int"):
        Corpus(pd.Series(["apple", 3], index=["a", "b"]))
    with pytest.raises(TypeError, match=r"non-string token at index 1: int"):
        Corpus([["apple", 5]])
    with pytest.raises(TypeError, match="single str"):
        Corpus("apple banana")


def test_bad_options():
    with pytest.raises(ValueError, match="rare_share"):
        Corpus(["apple"], rare_share=1.5)
    with pytest.raises(ValueError, match="min_df"):
        Corpus(["apple"], min_df=-1)
    with pytest.raises(ValueError, match="stop_words"):
        Corpus(["apple"], stop_words="german")
    with pytest.raises(RuntimeError, match="not fitted"):
        Vocabulary().transform(["apple"])
