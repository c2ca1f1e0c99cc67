"""Fitted attributes and methods of unfitted estimators raise NotFittedError
(dolda.utils.fitted)."""

import pytest
from sklearn.exceptions import NotFittedError

from dolda import DOLDA
from dolda.models.lda import LDA
from dolda.models.probit.estimator import DOProbit

ATTRIBUTES = ["coef_", "classes_", "eta_draws_", "phi_", "n_features_in_", "components_",
              "n_iter_", "loglik_"]


@pytest.mark.bad_input
@pytest.mark.parametrize("cls", [DOLDA, LDA, DOProbit])
@pytest.mark.parametrize("name", ATTRIBUTES)
def test_fitted_attribute_before_fit(cls, name):
    with pytest.raises(NotFittedError, match="not fitted yet"):
        getattr(cls(), name)
    assert not hasattr(cls(), name)


@pytest.mark.bad_input
@pytest.mark.parametrize("call", [lambda m: m.top_words(), lambda m: m.signal_topics("a"),
                                  lambda m: m.explain("a b"), lambda m: m.save("x"),
                                  lambda m: m.coef_interval(), lambda m: m.topic_labels()])
def test_methods_before_fit(call):
    with pytest.raises(NotFittedError):
        call(DOLDA())


def test_unknown_attribute_is_a_plain_attribute_error():
    with pytest.raises(AttributeError) as info:
        DOLDA().no_such_thing
    assert not isinstance(info.value, NotFittedError)


@pytest.mark.bad_input
def test_interpretation_arguments_are_one_line_errors():
    from dolda.models.dolda.interpret import check_level, unknown_class

    for bad, error in [(2, ValueError), (0, ValueError), ("a", TypeError), (True, TypeError)]:
        with pytest.raises(error, match="level must be"):
            check_level(bad)
    message = str(unknown_class("x", __import__("numpy").array(["a", "b"])))
    assert message == "unknown class 'x'; the model's classes are 'a', 'b'"
