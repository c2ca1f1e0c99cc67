"""Options that have no effect (dolda.utils.inert)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dolda.models.dolda.options import flat_defaults
from dolda.utils.inert import check_inert as _check_inert
from dolda.utils.inert import inert_errors as _inert_errors
from dolda.utils.inert import inert_warnings as _inert_warnings


def _params(**changes):
    params = flat_defaults()
    params.update(changes)
    return params


def check_inert(params):
    return _check_inert(params, flat_defaults())


def inert_warnings(params):
    return _inert_warnings(params, flat_defaults())


def inert_errors(params):
    return _inert_errors(params, flat_defaults())


def test_defaults_are_never_reported():
    assert check_inert(_params()) == []


@pytest.mark.parametrize("changes, names", [
    (dict(snapshot_every=5), ("snapshot_every",)),
    (dict(phi_transport="dense", client=object()), ("client", "phi_transport")),
    (dict(n_words=0, word_features="tfidf"), ("word_features",)),
    (dict(n_words=0, word_selection="chi2", word_prior="normal"), ("word_selection",
                                                                    "word_prior")),
    (dict(word_prior_variance=3.0), ("word_prior_variance",)),
    (dict(calibration_holdout=0.2, proba="ovr"), ("calibration_holdout",)),
    (dict(prior="normal", slab_scale=1.0), ("slab_scale",)),
    (dict(slab_scale=None, slab_blocks=("words",)), ("slab_blocks",)),
    (dict(checkpoint_every=7), ("checkpoint_every",)),
    (dict(two_step=True, alpha="auto"), ("alpha",)),
])
def test_each_inert_option_is_named(changes, names):
    found = check_inert(_params(**changes))
    assert [f.names for f in found] == [names]
    message = found[0].message
    assert "\n" not in message and all(n in message for n in names)
    assert inert_warnings(_params(**changes)) == [message]


@pytest.mark.parametrize("changes", [
    dict(backend="dask", snapshot_every=5), dict(n_words=100, word_features="tfidf"),
    dict(calibration_holdout=0.2), dict(word_prior="normal", word_prior_variance=3.0),
    dict(checkpoint="ckpt", checkpoint_every=7), dict(two_step=True)])
def test_options_that_count_are_not_reported(changes):
    assert check_inert(_params(**changes)) == []


def test_predict_burn_in_that_leaves_nothing_is_an_error():
    assert inert_errors(_params(predict_sweeps=10, predict_burn_in=10))
    assert not inert_errors(_params(predict_sweeps=10, predict_burn_in=9))


@given(st.dictionaries(st.sampled_from(sorted(flat_defaults())),
                       st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=True),
                                 st.text(max_size=5), st.booleans())))
def test_any_values_give_findings_not_exceptions(changes):
    for finding in check_inert(_params(**changes)):
        assert finding.level in ("warning", "error") and "\n" not in finding.message
