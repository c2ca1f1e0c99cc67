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


def test_one_chain_keeps_its_draw_arrays_and_chains_pool_in_order(corpus, monkeypatch):
    """One chain: the model's S x L x P draws are the chain's own C-ordered arrays (no
    column-permuted copy, no concatenated copy); several chains: the concatenation of the
    chains' (aligned) draws, in chain order."""
    from dolda import _dolda_chain

    seen = []
    combine = _dolda_chain.combine_chains

    def spy(model, chains, n_iter):
        seen.append([{k: ch[k] for k in ("eta_draws", "lambda_draws", "tau_draws")}
                     for ch in chains])
        return combine(model, chains, n_iter)

    monkeypatch.setattr("dolda.model.combine_chains", spy)
    one = DOLDA(n_topics=4, n_iter=6, random_state=2, progress=False, n_jobs=1,
                n_words=0).fit(corpus.texts, corpus.y)
    assert one.eta_draws_ is seen[0][0]["eta_draws"]
    assert one.lambda_draws_ is seen[0][0]["lambda_draws"]
    assert one.eta_draws_.flags.c_contiguous and one.lambda_draws_.flags.c_contiguous
    two = DOLDA(n_topics=4, n_iter=6, random_state=2, progress=False, n_jobs=1, n_words=0,
                n_chains=2).fit(corpus.texts, corpus.y)
    K, n_x = 4, two.eta_draws_.shape[2] - 4
    first, second = seen[1]
    np.testing.assert_array_equal(two.eta_draws_[:len(first["eta_draws"])], first["eta_draws"])
    perm = two.topic_alignment_[1]
    cols = np.concatenate([np.arange(n_x), n_x + perm])
    np.testing.assert_array_equal(two.eta_draws_[len(first["eta_draws"]):],
                                  second["eta_draws"][:, :, cols])
    np.testing.assert_array_equal(two.tau_draws_,
                                  np.concatenate([first["tau_draws"], second["tau_draws"]]))


@pytest.mark.parametrize("block_rows", [1, 3, 2048])
def test_hstack_sparse_dense_is_scipys_hstack_array_for_array(block_rows):
    from dolda.covariates import hstack_sparse_dense

    rng = np.random.default_rng(4)
    left = sp.random(11, 7, density=0.3, format="csr", random_state=5)
    left[2] = 0  # an empty sparse row
    left.eliminate_zeros()
    right = rng.random((11, 5))
    right[right < 0.3] = 0.0   # zeros are dropped, as sp.hstack drops them
    right[6] = 0.0             # a row with no dense entries
    got = hstack_sparse_dense(left, right, block_rows=block_rows)
    want = sp.hstack([left, right], format="csr")
    assert got.shape == want.shape and got.nnz == want.nnz
    np.testing.assert_array_equal(got.indptr, want.indptr)
    np.testing.assert_array_equal(got.indices, want.indices)
    np.testing.assert_array_equal(got.data, want.data)
    with pytest.raises(ValueError, match="rows"):
        hstack_sparse_dense(left, right[:5])


def test_draw_chunks_bound_the_slice_and_keep_the_values():
    from dolda import calibration

    rng = np.random.default_rng(1)
    U = sp.random(40, 9, density=0.4, format="csr", random_state=2)
    draws = rng.standard_normal((25, 3, 9))
    whole = np.concatenate(list(calibration._draw_chunks(U, draws, max_elements=1e9)))
    chunks = list(calibration._draw_chunks(U, draws))  # the default bound
    small = list(calibration._draw_chunks(U, draws, max_elements=40 * 3 * 4))
    assert len(small) == 7 and all(c.size <= 40 * 3 * 4 for c in small)
    np.testing.assert_array_equal(np.concatenate(small), whole)
    np.testing.assert_array_equal(np.concatenate(chunks), whole)
    # the default is small enough that 20 Newsgroups test x 20 classes is sliced
    assert calibration._draw_chunks.__defaults__[0] <= 2e6
