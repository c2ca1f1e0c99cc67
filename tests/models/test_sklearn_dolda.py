"""DOLDA in scikit-learn: text input tags, labels, covariates in a DataFrame X through
Pipeline / GridSearchCV / cross_val_score, decision scores, set_output, skops."""

import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils import estimator_checks as ec

import dolda
from dolda import DOLDA, LDA
from dolda.datasets import simulate
from _flat import flat_dolda

# scikit-learn's checks that need no data: the only ones that apply to estimators
# whose input is text.  Every other check feeds random numeric 2-D arrays, which are
# not documents (check_estimator itself skips text estimators, as for CountVectorizer);
# the text versions of the fit/predict contract checks are the tests further down.
API_CHECKS = [ec.check_estimator_cloneable, ec.check_estimator_tags_renamed,
              ec.check_valid_tag_types, ec.check_estimator_repr,
              ec.check_no_attributes_set_in_init,
              ec.check_do_not_raise_errors_in_init_or_set_params,
              ec.check_mixin_order, ec.check_parameters_default_constructible,
              ec.check_get_params_invariance, ec.check_set_params]


def _dolda(**kw):
    params = dict(n_topics=3, n_iter=8, burn_in=4, predict_sweeps=4, phi_draws=2,
                  random_state=0, n_jobs=1, progress=False)
    params.update(kw)
    return flat_dolda(**params)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=90, n_topics=3, n_classes=3, vocab_size=45, doc_length=25,
                    covariates=True, random_state=4)


@pytest.fixture(scope="module")
def frame(sim):
    """Texts and covariates in one DataFrame, as a scikit-learn user holds them."""
    return sim.X.assign(text=sim.texts)


@pytest.mark.parametrize("estimator", [_dolda(), LDA(n_iter=5, progress=False)],
                         ids=["DOLDA", "LDA"])
@pytest.mark.parametrize("check", API_CHECKS, ids=lambda c: c.__name__)
def test_applicable_sklearn_checks(estimator, check):
    check(type(estimator).__name__, estimator)


@pytest.mark.parametrize("estimator", [DOLDA(), LDA()], ids=["DOLDA", "LDA"])
def test_tags_say_text_input_like_countvectorizer(estimator):
    tags = estimator.__sklearn_tags__()
    assert tags.input_tags.string and not tags.input_tags.two_d_array
    assert tags.requires_fit


def test_text_contract_fit_returns_self_keeps_params_and_is_reproducible(frame, sim):
    model = _dolda()
    params = clone(model).get_params()
    with pytest.raises(NotFittedError):
        model.predict(frame)
    assert model.fit(frame, sim.y) is model
    assert model.get_params() == params
    again = _dolda().fit(frame, sim.y)
    np.testing.assert_array_equal(model.eta_draws_, again.eta_draws_)
    assert not hasattr(clone(model), "eta_draws_")
    with pytest.raises(ValueError, match="requires y to be passed, but the target y is None"):
        _dolda().fit(frame, None)


# ------------------------------------------------------------------ labels
def test_int_labels_give_int_classes_and_f1_macro_equal_to_string_labels(sim):
    """The issue: cross_val_score(..., scoring='f1_macro') gave [nan nan nan] for int labels."""
    ints = pd.Series(sim.y).map({c: i for i, c in enumerate(sim.classes)})
    model = _dolda().fit(sim.texts, ints)
    assert model.classes_.dtype.kind == "i"
    assert model.predict(sim.texts[:5]).dtype.kind == "i"
    cv = KFold(3, shuffle=True, random_state=0)
    f1_int = cross_val_score(_dolda(), sim.texts, ints, cv=cv, scoring="f1_macro")
    f1_str = cross_val_score(_dolda(), sim.texts, sim.y, cv=cv, scoring="f1_macro")
    assert np.all(np.isfinite(f1_int))
    np.testing.assert_array_equal(f1_int, f1_str)


def test_boolean_labels_end_to_end_with_save_and_load(sim, tmp_path):
    y = np.asarray(sim.y) == sim.classes[0]
    model = _dolda().fit(sim.texts, list(y))
    assert model.classes_.dtype == bool
    pred = model.predict(sim.texts[:20])
    assert pred.dtype == bool
    loaded = dolda.load(model.save(tmp_path / "m"))
    assert loaded.classes_.dtype == bool
    np.testing.assert_array_equal(loaded.predict(sim.texts[:20]), pred)
    assert list(loaded.coef_.index) == [False, True]


def test_continuous_and_column_targets(sim):
    with pytest.raises(ValueError, match="continuous"):
        _dolda().fit(sim.texts, np.linspace(0, 1, len(sim.texts)))
    with pytest.warns(sklearn.exceptions.DataConversionWarning):
        _dolda(n_iter=2, burn_in=1).fit(sim.texts, np.asarray(sim.y)[:, None])


# ------------------------------------------------------------------ covariates in X
def test_dataframe_x_equals_texts_plus_covariates(frame, sim):
    by_frame = _dolda().fit(frame, sim.y)
    by_keyword = _dolda().fit(sim.texts, sim.y, covariates=sim.X)
    np.testing.assert_array_equal(by_frame.eta_draws_, by_keyword.eta_draws_)
    assert by_frame.feature_names_ == by_keyword.feature_names_
    assert "x_num" in by_frame.feature_names_
    np.testing.assert_array_equal(by_frame.predict_proba(frame[:10]),
                                  by_keyword.predict_proba(sim.texts[:10], covariates=sim.X[:10]))
    # the columns are found by name, in any order
    np.testing.assert_array_equal(by_frame.predict_proba(frame[:10][::-1].iloc[::-1]
                                                         [["text", "x_cat", "x_num"]]),
                                  by_frame.predict_proba(frame[:10]))
    assert by_frame.score(frame, sim.y) == pytest.approx(
        np.mean(by_frame.predict(frame) == sim.y))


def test_text_column_and_covariate_columns(frame, sim):
    renamed = frame.rename(columns={"text": "plot"}).assign(noise=0.0)
    model = _dolda(text_column="plot", covariate_columns=["x_num"],
                   n_words=0).fit(renamed, sim.y)
    assert [f for f in model.feature_names_ if not f.startswith("topic")] == [
        "(intercept)", "x_num"]
    assert model.predict(renamed[:5]).shape == (5,)
    text_only = _dolda(covariate_columns=[], n_words=0).fit(frame, sim.y)
    assert text_only.feature_names_[1] == "topic 0"
    with pytest.raises(ValueError, match="without the text column 'text'"):
        _dolda().fit(renamed, sim.y)
    with pytest.raises(ValueError, match="not columns of X"):
        _dolda(covariate_columns=["nope"]).fit(frame, sim.y)
    with pytest.raises(ValueError, match="do not pass covariates"):
        _dolda().fit(frame, sim.y, covariates=sim.X)


def test_former_x_keyword_still_works_with_a_deprecation_warning(sim):
    new = _dolda().fit(sim.texts, sim.y, covariates=sim.X)
    with pytest.warns(DeprecationWarning, match="covariates="):
        old = _dolda().fit(sim.texts, sim.y, X=sim.X)
    np.testing.assert_array_equal(old.eta_draws_, new.eta_draws_)
    with pytest.warns(DeprecationWarning):
        np.testing.assert_array_equal(old.predict_proba(sim.texts[:5], X=sim.X[:5]),
                                      new.predict_proba(sim.texts[:5], covariates=sim.X[:5]))


def test_pipeline_and_gridsearch_with_covariates(frame, sim):
    """A Pipeline whose first step edits the text, DOLDA with covariates, searched over K."""
    lower = FunctionTransformer(lambda df: df.assign(text=df["text"].str.lower()))
    pipe = make_pipeline(lower, _dolda())
    search = GridSearchCV(pipe, {"dolda__n_topics": [2, 3]}, cv=2, scoring="accuracy")
    search.fit(frame, sim.y)
    assert search.best_params_["dolda__n_topics"] in (2, 3)
    best = search.best_estimator_[-1]
    assert "x_cat=b" in best.feature_names_  # the covariates reached the fit
    assert search.predict(frame[:7]).shape == (7,)
    assert 0.0 <= search.score(frame, sim.y) <= 1.0


def test_cross_val_score_with_metadata_routing_on(frame, sim):
    with sklearn.config_context(enable_metadata_routing=True):
        scores = cross_val_score(_dolda(), frame, sim.y, cv=2)
    assert scores.shape == (2,) and np.all((scores >= 0) & (scores <= 1))


# ------------------------------------------------------------------ scores and transform
def test_decision_function_and_log_proba_agree_with_predict(frame, sim):
    model = _dolda().fit(frame, sim.y)
    proba = model.predict_proba(frame[:15])
    np.testing.assert_allclose(model.predict_log_proba(frame[:15]), np.log(proba))
    scores = model.decision_function(frame[:15])
    assert scores.shape == (15, 3)
    np.testing.assert_array_equal(model.classes_[scores.argmax(1)], model.predict(frame[:15]))
    binary = _dolda().fit(frame, np.asarray(sim.y) == sim.classes[1])
    scores = binary.decision_function(frame[:15])
    proba = binary.predict_proba(frame[:15])
    assert scores.shape == (15,)
    np.testing.assert_allclose(scores, np.log(proba[:, 1] / proba[:, 0]))


def test_sample_weight_other_than_ones_is_refused(frame, sim):
    ones = _dolda().fit(frame, sim.y, sample_weight=np.ones(len(sim.y)))
    np.testing.assert_array_equal(ones.eta_draws_, _dolda().fit(frame, sim.y).eta_draws_)
    with pytest.raises(ValueError, match="sample_weight"):
        _dolda().fit(frame, sim.y, sample_weight=np.arange(len(sim.y)))


def test_transform_feature_names_and_pandas_output(frame, sim):
    model = _dolda().fit(frame, sim.y)
    assert list(model.get_feature_names_out()) == ["dolda0", "dolda1", "dolda2"]
    plain = model.transform(frame[:6])
    out = model.set_output(transform="pandas").transform(frame[:6])
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["dolda0", "dolda1", "dolda2"]
    assert list(out.index) == list(frame.index[:6])
    np.testing.assert_array_equal(out.to_numpy(), plain)
    # predictions are unchanged by the pandas output of transform
    np.testing.assert_array_equal(model.predict_proba(frame[:6]),
                                  _dolda().fit(frame, sim.y).predict_proba(frame[:6]))


def test_skops_round_trip(frame, sim, tmp_path):
    sio = pytest.importorskip("skops.io")
    model = _dolda().fit(frame, sim.y)
    path = tmp_path / "model.skops"
    sio.dump(model, path)
    untrusted = sio.get_untrusted_types(file=path)
    assert all(t.startswith(("dolda.", "pandas.", "numpy.")) or "dtype" in t for t in untrusted)
    loaded = sio.load(path, trusted=untrusted)
    pd.testing.assert_frame_equal(loaded.coef_, model.coef_)
    pd.testing.assert_frame_equal(loaded.loglik_, model.loglik_)
    # equal up to rounding: skops stores arrays in another memory layout, so the
    # matrix products sum in another order
    np.testing.assert_allclose(loaded.predict_proba(frame[:10]), model.predict_proba(frame[:10]),
                               rtol=1e-12, atol=1e-15)
    # the model object itself is untouched by dumping
    assert isinstance(model.coef_, pd.DataFrame)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert loaded.score(frame, sim.y) == model.score(frame, sim.y)


def test_document_term_matrix_in_a_pipeline_after_countvectorizer(sim, tmp_path):
    """``make_pipeline(CountVectorizer(), DOLDA())`` fits and predicts (scikit-learn passes
    only the matrix: its columns are named x0, x1, ... as for LDA); ``vocabulary=`` names
    them; texts are refused by a model fitted on counts, and a wrong vocabulary is named."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.pipeline import make_pipeline

    import dolda

    pipe = make_pipeline(CountVectorizer(), _dolda(n_words=10)).fit(sim.texts, sim.y)
    assert pipe.predict_proba(sim.texts[:5]).shape == (5, 3)
    model = pipe[-1]
    n_columns = len(pipe[0].get_feature_names_out())
    assert model.vocabulary_.words == [f"x{j}" for j in range(n_columns)]
    assert model.n_features_in_ == n_columns
    vec = CountVectorizer().fit(sim.texts)
    counts = vec.transform(sim.texts)
    named = _dolda(n_words=10, vocabulary=vec.get_feature_names_out()).fit(counts, sim.y)
    assert named.vocabulary_.words == list(vec.get_feature_names_out())
    assert any(n.startswith("word=") and n[5:] in set(named.vocabulary_.words)
               for n in named.feature_names_)
    assert named.predict(counts[:4]).shape == (4,)
    named.save(tmp_path / "m")
    np.testing.assert_array_equal(dolda.load(tmp_path / "m").predict_proba(counts[:4]),
                                  named.predict_proba(counts[:4]))
    with pytest.raises(ValueError, match="document-term matrix"):
        named.predict(sim.texts[:4])
    with pytest.raises(ValueError, match="vocabulary has 2 words"):
        _dolda(vocabulary=["a", "b"]).fit(counts, sim.y)
    with pytest.raises(ValueError, match="fitted on texts"):
        _dolda().fit(sim.texts, sim.y).predict(counts[:4])
