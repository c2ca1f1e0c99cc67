"""DOProbit against scikit-learn's estimator checks, and its labels through sklearn's utilities."""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks

import dolda
from dolda import DOProbit


def _fast(**kw):
    """Short chains: the checks test the API, not the posterior."""
    return DOProbit(n_iter=20, burn_in=10, n_jobs=1, **kw)


# Every check of scikit-learn's suite, no expected failures.
@parametrize_with_checks([_fast()])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_tags_say_sparse_and_numeric_input():
    tags = DOProbit().__sklearn_tags__()
    assert tags.input_tags.sparse and tags.input_tags.two_d_array
    assert not tags.input_tags.string
    assert tags.estimator_type == "classifier"


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = np.where(X[:, 0] + 0.3 * rng.normal(size=80) > 0, 1, 0)
    return X, y


@pytest.mark.parametrize("labels", [
    [0, 1], [3, 7], [True, False], ["no", "yes"], np.array([-1.0, 1.0])])
def test_classes_keep_the_label_dtype(data, labels, tmp_path):
    X, y01 = data
    labels = np.asarray(labels)
    y = list(labels[y01])  # a plain list, as users pass them
    model = _fast(random_state=0).fit(X, y)
    assert model.classes_.dtype == np.sort(labels).dtype
    np.testing.assert_array_equal(model.classes_, np.sort(labels))
    pred = model.predict(X)
    assert pred.dtype == labels.dtype
    assert model.score(X, y) > 0.8
    loaded = dolda.load(model.save(tmp_path / "m"))
    assert loaded.classes_.dtype == model.classes_.dtype
    np.testing.assert_array_equal(loaded.predict(X), pred)


def test_object_column_of_booleans_gives_bool_classes(data):
    X, y01 = data
    y = pd.Series(y01.astype(bool)).astype(object)
    assert _fast(random_state=0).fit(X, y).classes_.dtype == bool


def test_int_labels_score_like_the_same_labels_as_strings(data):
    """The issue's cross_val_score(..., scoring='f1_macro') returned nan for int labels."""
    X, y = data
    ints = cross_val_score(_fast(random_state=1), X, pd.Series(y), cv=3, scoring="f1_macro")
    strs = cross_val_score(_fast(random_state=1), X, pd.Series(y).map({0: "a", 1: "b"}),
                           cv=3, scoring="f1_macro")
    assert np.all(np.isfinite(ints)) and ints.min() > 0.7
    np.testing.assert_array_equal(ints, strs)


def test_target_errors_name_the_problem(data):
    X, y = data
    with pytest.raises(ValueError, match="Unknown label type: continuous"):
        _fast().fit(X, X[:, 0])
    with pytest.raises(ValueError, match="requires y to be passed, but the target y is None"):
        _fast().fit(X, None)
    with pytest.raises(ValueError, match="single class"):
        _fast().fit(X, np.zeros(len(X), int))
    with pytest.raises(ValueError, match="missing labels"):
        _fast().fit(X, np.array(["a", None] * 40, dtype=object))
    with pytest.raises(ValueError, match="different lengths"):
        _fast().fit(X, y[:-1])
    with pytest.raises(ValueError, match="multilabel|multioutput|1d"):
        _fast().fit(X, np.column_stack([y, y]))


def test_column_vector_y_warns_and_fits_as_1d(data):
    X, y = data
    with pytest.warns(DataConversionWarning):
        col = _fast(random_state=2).fit(X, y[:, None])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataConversionWarning)
        flat = _fast(random_state=2).fit(X, y)
    np.testing.assert_array_equal(col.eta_draws_, flat.eta_draws_)


def test_decision_function_agrees_with_predict_and_predict_proba(data):
    X, y = data
    binary = _fast(random_state=0).fit(X, y)
    scores = binary.decision_function(X)
    assert scores.shape == (len(X),)
    proba = binary.predict_proba(X)
    np.testing.assert_allclose(scores, np.log(proba[:, 1] / proba[:, 0]), rtol=1e-10)
    np.testing.assert_array_equal(binary.predict(X), binary.classes_[(scores > 0).astype(int)])
    np.testing.assert_allclose(binary.predict_log_proba(X), np.log(proba))
    assert binary.linear_predictor(X).shape == (len(X), 2)

    y3 = np.digitize(X[:, 1], [-0.5, 0.5])
    multi = _fast(random_state=0).fit(X, y3)
    scores = multi.decision_function(X)
    assert scores.shape == (len(X), 3)
    softmax = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(softmax, multi.predict_proba(X), rtol=1e-10)
    np.testing.assert_array_equal(multi.classes_[scores.argmax(axis=1)], multi.predict(X))
