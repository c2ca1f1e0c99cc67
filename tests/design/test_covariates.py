"""CovariateEncoder (one-hot 'column=level', min_count pooling, sparse output, persistence)
and sparse covariates in DOLDA."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from dolda.design import covariates
from dolda.design.covariates import OTHER, CovariateEncoder
from _flat import flat_dolda


def _frame():
    """12 rows: a categorical 'director' (a x5, b x4, c x2, d x1), a numeric 'year'."""
    return pd.DataFrame({
        "director": ["a"] * 5 + ["b"] * 4 + ["c"] * 2 + ["d"],
        "year": np.arange(2000.0, 2012.0),
    })


def _dense(M):
    return M.toarray() if sp.issparse(M) else np.asarray(M)


# ------------------------------------------------------------------ names and values
def test_one_hot_names_are_column_equals_level_in_column_order():
    df = pd.DataFrame({"year": [1.0, 2.0, 3.0], "genre": ["x", "y", "x"],
                       "studio": ["s2", "s1", "s1"]})
    enc = CovariateEncoder().fit(df)
    assert list(enc.get_feature_names_out()) == [
        "year", "genre=x", "genre=y", "studio=s1", "studio=s2"]
    M = _dense(enc.transform(df))
    np.testing.assert_array_equal(M, [[1, 1, 0, 0, 1],
                                      [2, 0, 1, 1, 0],
                                      [3, 1, 0, 1, 0]])
    # every one-hot block has exactly one 1 per row (no reference level dropped)
    np.testing.assert_array_equal(M[:, 1:3].sum(axis=1), 1)
    np.testing.assert_array_equal(M[:, 3:5].sum(axis=1), 1)


def test_min_count_pools_rare_levels_into_other_with_the_right_counts():
    df = _frame()
    enc = CovariateEncoder(min_count=3, sparse_output=False).fit(df)
    names = list(enc.get_feature_names_out())
    assert names == ["director=a", "director=b", f"director={OTHER}", "year"]
    M = enc.transform(df)
    sums = dict(zip(names[:3], M[:, :3].sum(axis=0)))
    assert sums == {"director=a": 5, "director=b": 4, "director=other": 3}  # c x2 + d x1
    np.testing.assert_array_equal(M[:, :3].sum(axis=1), 1)
    assert enc.pooled_["director"] and list(enc.categories_["director"]) == ["a", "b"]
    # min_count=1 pools nothing and makes no 'other' column
    plain = CovariateEncoder(min_count=1).fit(df)
    assert f"director={OTHER}" not in set(plain.get_feature_names_out())
    assert not plain.pooled_["director"]


def test_a_real_level_called_other_joins_the_pool_instead_of_duplicating_the_name():
    df = pd.DataFrame({"c": ["a", "a", OTHER, OTHER, "rare"]})
    enc = CovariateEncoder(min_count=2, sparse_output=False).fit(df)
    names = list(enc.get_feature_names_out())
    assert len(names) == len(set(names)) == 2
    assert names == ["c=a", "c=other"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither 'other' nor 'rare' is an unseen level
        M = enc.transform(df)
    np.testing.assert_array_equal(M.sum(axis=0), [2, 3])
    # without pooling, a level called 'other' is an ordinary level
    enc1 = CovariateEncoder(min_count=1).fit(df)
    assert list(enc1.get_feature_names_out()) == ["c=a", "c=other", "c=rare"]


def test_numeric_columns_are_kept_and_standardized():
    df = _frame()
    raw = CovariateEncoder(sparse_output=False).fit(df)
    np.testing.assert_array_equal(raw.transform(df)[:, -1], df["year"].to_numpy())
    enc = CovariateEncoder(standardize=True, sparse_output=False).fit(df)
    year = enc.transform(df)[:, -1]
    assert abs(year.mean()) < 1e-12
    assert abs(year.std() - 1.0) < 1e-12
    # one-hot columns are not scaled
    np.testing.assert_array_equal(np.unique(enc.transform(df)[:, :-1]), [0.0, 1.0])
    # new rows use the scaling learnt in fit
    new = pd.DataFrame({"director": ["a"], "year": [2000.0]})
    expected = (2000.0 - df["year"].mean()) / df["year"].std(ddof=0)
    assert enc.transform(new)[0, -1] == pytest.approx(expected, rel=1e-12)
    # a constant numeric column is only centred (no division by zero)
    const = pd.DataFrame({"k": [3.0, 3.0, 3.0]})
    np.testing.assert_array_equal(
        CovariateEncoder(standardize=True).fit_transform(const), np.zeros((3, 1)))


def test_numeric_dtype_columns_can_be_declared_categorical():
    df = pd.DataFrame({"year": [2001, 2002, 2001], "x": [0.5, 1.5, 2.5]})
    enc = CovariateEncoder(categorical=["year"]).fit(df)
    assert list(enc.get_feature_names_out()) == ["year=2001", "year=2002", "x"]


def test_missing_categorical_value_gives_a_zero_row_and_missing_numeric_is_an_error():
    df = pd.DataFrame({"c": ["a", None, "b"], "x": [1.0, 2.0, 3.0]})
    M = _dense(CovariateEncoder().fit(df).transform(df))
    np.testing.assert_array_equal(M[1, :2], [0, 0])
    bad = pd.DataFrame({"x": [1.0, np.nan]})
    with pytest.raises(ValueError, match="numeric column 'x'"):
        CovariateEncoder().fit(bad)


# ------------------------------------------------------------------ sparse output
def test_auto_sparse_output_switches_to_csr_above_the_threshold(monkeypatch):
    monkeypatch.setattr(covariates, "SPARSE_MIN_ONE_HOT", 3)
    df = _frame()  # 4 director levels -> 4 one-hot columns
    many = CovariateEncoder().fit(df)
    M = many.transform(df)
    assert sp.isspmatrix_csr(M) or isinstance(M, sp.csr_array)
    assert M.shape == (12, 5)
    assert M.nnz == 12 + 12  # one 1 per row + the year column
    few = CovariateEncoder(min_count=3).fit(df)  # 3 one-hot columns: not above 3
    assert isinstance(few.transform(df), np.ndarray)
    # explicit choices override 'auto'
    assert sp.issparse(CovariateEncoder(min_count=3, sparse_output=True).fit_transform(df))
    assert isinstance(CovariateEncoder(sparse_output=False).fit_transform(df), np.ndarray)
    # sparse and dense encodings hold the same numbers
    np.testing.assert_array_equal(
        M.toarray(), CovariateEncoder(sparse_output=False).fit_transform(df))


def test_the_default_threshold_keeps_small_encodings_dense():
    assert isinstance(CovariateEncoder().fit_transform(_frame()), np.ndarray)


# ------------------------------------------------------------------ unseen levels
def test_unseen_level_warns_and_goes_to_other_when_there_is_one():
    df = _frame()
    enc = CovariateEncoder(min_count=3, sparse_output=False).fit(df)
    new = pd.DataFrame({"director": ["zz", "a", "c"], "year": [2000.0, 2001.0, 2002.0]})
    with pytest.warns(UserWarning, match=r"column 'director'.*zz.*'other'"):
        M = enc.transform(new)
    # zz (unseen) and c (rare in fit) both go to 'other'
    np.testing.assert_array_equal(M[:, :3], [[0, 0, 1], [1, 0, 0], [0, 0, 1]])


def test_rare_levels_seen_in_fit_do_not_warn():
    df = _frame()
    enc = CovariateEncoder(min_count=3).fit(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc.transform(df)


def test_unseen_level_without_other_column_gives_a_zero_row():
    df = _frame()
    enc = CovariateEncoder(sparse_output=False).fit(df)  # no pooling, no 'other'
    new = pd.DataFrame({"director": ["zz", "b"], "year": [2000.0, 2001.0]})
    with pytest.warns(UserWarning, match="all-zero rows"):
        M = enc.transform(new)
    np.testing.assert_array_equal(M[0, :4], 0)
    np.testing.assert_array_equal(M[1, :4], [0, 1, 0, 0])


# ------------------------------------------------------------------ persistence
@pytest.mark.parametrize("sparse_output", ["auto", True, False])
def test_to_dict_from_dict_round_trip_gives_an_identical_transform(sparse_output):
    df = _frame()
    enc = CovariateEncoder(min_count=2, standardize=True, sparse_output=sparse_output).fit(df)
    data = json.loads(json.dumps(enc.to_dict()))  # must survive JSON
    back = CovariateEncoder.from_dict(data)
    new = pd.DataFrame({"director": ["a", "d", "c", "unseen"],
                        "year": [1999.0, 2003.0, 2005.5, 2020.0]})
    with pytest.warns(UserWarning):
        want = enc.transform(new)
    with pytest.warns(UserWarning):
        got = back.transform(new)
    assert sp.issparse(want) == sp.issparse(got)
    np.testing.assert_array_equal(_dense(got), _dense(want))
    assert list(back.get_feature_names_out()) == list(enc.get_feature_names_out())
    assert back.get_params() == enc.get_params()


def test_round_trip_with_non_string_column_labels():
    df = pd.DataFrame({0: ["a", "b", "a"], 1: [1.0, 2.0, 3.0]})
    enc = CovariateEncoder().fit(df)
    back = CovariateEncoder.from_dict(json.loads(json.dumps(enc.to_dict())))
    np.testing.assert_array_equal(_dense(back.transform(df)), _dense(enc.transform(df)))
    assert list(back.get_feature_names_out()) == ["0=a", "0=b", "1"]


# ------------------------------------------------------------------ errors
def test_missing_column_at_transform_is_named():
    enc = CovariateEncoder().fit(_frame())
    with pytest.raises(ValueError, match=r"\['year'\] missing from X"):
        enc.transform(_frame().drop(columns="year"))


def test_bad_inputs_and_parameters_are_clear():
    with pytest.raises(TypeError, match="DataFrame"):
        CovariateEncoder().fit(np.ones((3, 2)))
    with pytest.raises(ValueError, match="min_count"):
        CovariateEncoder(min_count=0).fit(_frame())
    with pytest.raises(ValueError, match="sparse_output"):
        CovariateEncoder(sparse_output="yes").fit(_frame())
    with pytest.raises(ValueError, match="missing from X"):
        CovariateEncoder(columns=["nope"]).fit(_frame())
    with pytest.raises(ValueError, match="not among the encoded"):
        CovariateEncoder(columns=["year"], categorical=["director"]).fit(_frame())


# ------------------------------------------------------------------ DOLDA with sparse X
@pytest.fixture(scope="module")
def small_corpus():
    from dolda.datasets import simulate

    sim = simulate(n_docs=120, n_topics=4, n_classes=3, vocab_size=80, doc_length=30,
                   covariates=True, random_state=3)
    X = CovariateEncoder(sparse_output=True).fit_transform(sim.X)
    return sim, X


def _dolda(**kw):
    from dolda import DOLDA

    return flat_dolda(n_topics=4, n_iter=12, burn_in=6, predict_sweeps=6, phi_draws=3,
                 random_state=5, n_jobs=1, progress=False, **kw)


def test_dolda_with_sparse_x_equals_the_fit_with_the_same_dense_x(small_corpus):
    sim, X = small_corpus
    assert sp.issparse(X) and X.shape == (120, 4)
    dense = _dolda().fit(sim.texts, sim.y, X=X.toarray())
    sparse = _dolda().fit(sim.texts, sim.y, X=X)
    assert sparse.feature_names_[:5] == ["(intercept)", "x0", "x1", "x2", "x3"]
    assert sparse.feature_names_ == dense.feature_names_
    np.testing.assert_array_equal(sparse.eta_draws_, dense.eta_draws_)
    np.testing.assert_array_equal(sparse.loglik_.to_numpy(), dense.loglik_.to_numpy())
    texts = sim.texts[:30]
    p_sparse = sparse.predict_proba(texts, X=X[:30])
    # the same chain; the calibrated probabilities differ only by the rounding of a dense and
    # a sparse matrix product
    np.testing.assert_allclose(p_sparse, dense.predict_proba(texts, X=X[:30].toarray()),
                               rtol=1e-12, atol=1e-15)
    # a sparse fit predicts from dense rows too, and vice versa
    np.testing.assert_allclose(p_sparse, sparse.predict_proba(texts, X=X[:30].toarray()),
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(p_sparse, dense.predict_proba(texts, X=X[:30]))
    np.testing.assert_array_equal(sparse.predict(texts, X=X[:30]),
                                  dense.predict(texts, X=X[:30].toarray()))


def test_dolda_sparse_x_errors(small_corpus):
    sim, X = small_corpus
    fitted = _dolda().set_params(n_iter=4, burn_in=2).fit(sim.texts, sim.y, X=X)
    with pytest.raises(ValueError, match="columns"):
        fitted.predict(sim.texts[:5], X=X[:5, :3])
    frame_fit = _dolda().set_params(n_iter=4, burn_in=2).fit(sim.texts, sim.y, X=sim.X)
    with pytest.raises(ValueError, match="DataFrame"):
        frame_fit.predict(sim.texts[:5], X=X[:5])
    bad = X.copy().astype(np.float64)
    bad.data[0] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        _dolda().set_params(n_iter=2, burn_in=1).fit(sim.texts, sim.y, X=bad)


def test_dolda_warns_when_the_covariates_are_too_many_for_its_dense_eta_step(small_corpus):
    """Issue 12: beyond 1,000 columns X stays sparse and the eta-step is CG; forcing the
    dense Cholesky there still warns."""
    import warnings

    sim, _ = small_corpus
    rng = np.random.default_rng(0)
    wide = sp.random(120, 1001, density=0.003, format="csr", random_state=rng)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        model = _dolda().set_params(n_iter=2, burn_in=1, words__n=0).fit(sim.texts, sim.y,
                                                                         X=wide)
        # with word covariates (the default) "auto" is the blocked Gibbs scan instead
        with_words = _dolda().set_params(n_iter=2, burn_in=1).fit(sim.texts, sim.y, X=wide)
    assert model.eta_sampler_ == "cg"
    assert with_words.eta_sampler_ == "gibbs"
    with pytest.warns(UserWarning, match="eta_sampler='cholesky'"):
        _dolda().set_params(n_iter=2, burn_in=1, sampler__eta="cholesky").fit(
            sim.texts, sim.y, X=wide)


def test_dolda_fitted_on_sparse_x_survives_save_and_load(small_corpus, tmp_path):
    import dolda

    sim, X = small_corpus
    model = _dolda().set_params(n_iter=4, burn_in=2).fit(sim.texts, sim.y, X=X)
    loaded = dolda.load(model.save(tmp_path / "m"))
    # agreement to rounding, as for the DataFrame case in tests/models/test_model.py
    np.testing.assert_allclose(loaded.predict_proba(sim.texts[:10], X=X[:10]),
                               model.predict_proba(sim.texts[:10], X=X[:10]), rtol=1e-12,
                               atol=1e-14)
    assert loaded.feature_names_ == model.feature_names_
