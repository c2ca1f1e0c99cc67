"""The memory-saving paths give the values of the straightforward ones (issue 13, item 5)."""

import numpy as np
import pytest
import scipy.sparse as sp

from dolda import DOLDA, _heap
from dolda.datasets import simulate


@pytest.fixture(scope="module")
def corpus():
    return simulate(n_docs=120, n_topics=4, n_classes=3, vocab_size=60, doc_length=30,
                    random_state=5)


@pytest.mark.parametrize("n_words", [0, 20])
def test_regressors_are_the_stacked_covariates_and_proportions(corpus, n_words):
    model = DOLDA(n_topics=4, n_iter=6, random_state=2, progress=False, n_jobs=1,
                  n_words=n_words).fit(corpus.texts, corpus.y)
    new = corpus.texts[:25]
    U = model._regressors(new)
    zbar = model.transform(new)  # a fresh D x K array, then stacked: the old way
    if n_words:
        assert sp.issparse(U)
        U = U.toarray()
        words = model.word_features_.transform(model.vocabulary_.transform(new)).toarray()
        expected = np.hstack([np.ones((25, 1)), words, zbar])
    else:
        assert isinstance(U, np.ndarray) and U.flags.c_contiguous
        expected = np.hstack([np.ones((25, 1)), zbar])
    np.testing.assert_array_equal(U, expected)


def test_release_free_heap(monkeypatch):
    assert _heap.release_free_heap(10) is False  # a small corpus: not worth a trim
    monkeypatch.setattr(_heap, "_malloc_trim", lambda: None)  # no malloc_trim in this libc
    assert _heap.release_free_heap() is False
    calls = []
    monkeypatch.setattr(_heap, "_malloc_trim", lambda: calls.append)
    assert _heap.release_free_heap(_heap.TRIM_MIN_TOKENS) is True and calls == [0]


def test_trims_inside_iterations_only_for_a_large_phi(monkeypatch):
    calls = []
    monkeypatch.setattr(_heap, "_malloc_trim", lambda: calls.append)
    assert _heap.release_in_iteration(83_488, 100) is False  # 20 Newsgroups at K = 100
    assert calls == []
    assert _heap.release_in_iteration(83_488, 1000) is True and calls == [0]
