"""The memory-saving paths give the values of the straightforward ones (issue 13, item 5)."""

import numpy as np
import pytest
import scipy.sparse as sp

from dolda import DOLDA
from dolda.utils import heap as _heap
from dolda.datasets import simulate
from dolda import Words


@pytest.fixture(scope="module")
def corpus():
    return simulate(n_docs=120, n_topics=4, n_classes=3, vocab_size=60, doc_length=30,
                    random_state=5)


@pytest.mark.parametrize("n_words", [0, 20])
def test_regressors_are_the_stacked_covariates_and_proportions(corpus, n_words):
    model = DOLDA(n_topics=4, n_iter=6, random_state=2, progress=False, n_jobs=1, words=Words(n=n_words)).fit(corpus.texts, corpus.y)
    new = corpus.texts[:25]
    U = model._regressors(new)
    zbar = model.transform(new)  # a fresh D x K array, then stacked: the old way
    if n_words:
        from dolda.design.regressors import SparseDenseDesign

        assert isinstance(U, SparseDenseDesign) and sp.issparse(U.left)
        np.testing.assert_array_equal(U.right, zbar)  # the dense block is zbar itself
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


def test_regressors_give_back_the_transforms_heap_for_large_batches(corpus, monkeypatch):
    """The regressor matrix (training transform, predict) trims after the topic sampler,
    asking with the batch's token count, so a small batch is not trimmed."""
    from dolda.models.dolda import proportions as model_module

    model = DOLDA(n_topics=4, n_iter=4, random_state=2, progress=False, n_jobs=1, words=Words(n=20)).fit(corpus.texts, corpus.y)
    asked = []
    monkeypatch.setattr(model_module, "release_free_heap", asked.append)
    new = corpus.texts[:25]
    U = model._regressors(new)
    assert asked == [model._make_corpus(new, fit=False).n_tokens]
    np.testing.assert_array_equal(U.right, model.transform(new))
    calls = []
    monkeypatch.setattr(_heap, "_malloc_trim", lambda: calls.append)
    assert _heap.release_free_heap(asked[0]) is False and calls == []  # 25 short documents


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
    from dolda.models.dolda import summary as _dolda_summary

    seen = []
    combine = _dolda_summary.combine_chains

    def spy(model, chains, n_iter):
        seen.append([{k: ch[k] for k in ("eta_draws", "lambda_draws", "tau_draws")}
                     for ch in chains])
        return combine(model, chains, n_iter)

    monkeypatch.setattr("dolda.models.dolda.summary.combine_chains", spy)
    one = DOLDA(n_topics=4, n_iter=6, random_state=2, progress=False, n_jobs=1, words=Words(n=0)).fit(corpus.texts, corpus.y)
    assert one.eta_draws_ is seen[0][0]["eta_draws"]
    assert one.lambda_draws_ is seen[0][0]["lambda_draws"]
    assert one.eta_draws_.flags.c_contiguous and one.lambda_draws_.flags.c_contiguous
    two = DOLDA(n_topics=4, n_iter=6, random_state=2, progress=False, n_jobs=1, n_chains=2, words=Words(n=0)).fit(corpus.texts, corpus.y)
    K, n_x = 4, two.eta_draws_.shape[2] - 4
    first, second = seen[1]
    np.testing.assert_array_equal(two.eta_draws_[:len(first["eta_draws"])], first["eta_draws"])
    perm = two.topic_alignment_[1]
    cols = np.concatenate([np.arange(n_x), n_x + perm])
    np.testing.assert_array_equal(two.eta_draws_[len(first["eta_draws"]):],
                                  second["eta_draws"][:, :, cols])
    np.testing.assert_array_equal(two.tau_draws_,
                                  np.concatenate([first["tau_draws"], second["tau_draws"]]))


def _design_and_array():
    from dolda.design.regressors import SparseDenseDesign

    rng = np.random.default_rng(4)
    left = sp.random(11, 7, density=0.3, format="csr", random_state=5)
    left[2] = 0  # an empty sparse row
    left[:, 4] = 0  # an all-zero column (kept as explicit zeros until eliminated)
    left[3, 1] = 0.0
    right = rng.random((11, 5))
    right[right < 0.3] = 0.0
    right[6] = 0.0  # a row with no dense entries
    right[:, 0] = 0.0
    right[8, 0] = 0.7  # the first dense column, used by one row
    return SparseDenseDesign(left, right), np.hstack([left.toarray(), right])


def test_sparse_dense_design_is_the_stacked_matrix():
    from dolda.posterior import calibration

    U, A = _design_and_array()
    assert U.shape == A.shape
    np.testing.assert_array_equal(U.toarray(), A)
    B = np.random.default_rng(5).normal(size=(12, 6))
    np.testing.assert_allclose(U @ B, A @ B, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(U @ B[:, 0], A @ B[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(U.column_nonzero_counts(), np.count_nonzero(A, axis=0))
    np.testing.assert_array_equal(calibration.singleton_columns(U),
                                  calibration.singleton_columns(A))
    assert calibration.singleton_columns(U)[7]  # the dense column of one row
    index = np.flatnonzero(calibration.singleton_columns(A))
    np.testing.assert_array_equal(U.columns(index).toarray(), A[:, index])
    with pytest.raises(ValueError, match="columns"):
        U @ B[:5]
    with pytest.raises(ValueError, match="rows"):
        type(U)(U.left, U.right[:5])


def test_calibration_on_the_design_equals_the_dense_matrix():
    """Every calibration path gives the dense design's values on the two-block design."""
    from dolda.posterior import calibration

    U, A = _design_and_array()
    rng = np.random.default_rng(6)
    draws = rng.normal(size=(9, 3, 12)).astype(np.float32)
    y = rng.integers(0, 3, size=11)
    sd = lambda s, cols: np.full((len(range(9)[s]), 3, len(cols)), 0.8)  # noqa: E731
    got = calibration.loo_draws(U, draws, y, prior_sd=sd, n_keep=4, max_elements=60)
    want = calibration.loo_draws(A, draws, y, prior_sd=sd, n_keep=4, max_elements=60)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    stacking = calibration.select_stacking(want, y, 3)
    for rule in ("do", "ovr"):
        np.testing.assert_allclose(calibration.class_probabilities(U, draws, rule),
                                   calibration.class_probabilities(A, draws, rule), rtol=1e-10)
    np.testing.assert_allclose(calibration.class_probabilities(U, draws, "calibrated", stacking),
                               calibration.class_probabilities(A, draws, "calibrated", stacking),
                               rtol=1e-10)


def test_draw_chunks_bound_the_slice_and_keep_the_values():
    from dolda.posterior import calibration

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
