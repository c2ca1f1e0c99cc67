"""Chains too short for R-hat and ESS: NaN and a reason, no numpy warnings
(dolda.evaluate.diagnostics, dolda.interpret.stability)."""

import warnings

import numpy as np
import pytest

from dolda.evaluate.diagnostics import MIN_DRAWS_PER_CHAIN, convergence_table
from dolda.interpret.stability import _nan_extreme


def _idata(chains, draws):
    import arviz as az

    eta = np.random.default_rng(0).normal(size=(chains, draws, 2, 3))
    return az.from_dict(posterior={"eta": eta}, dims={"eta": ["class", "feature"]})


@pytest.mark.parametrize("chains, draws", [(1, 1), (1, 2), (1, 3), (2, 1), (2, 3)])
def test_short_posteriors_give_nan_without_warnings(chains, draws):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # arviz's own note on building such a posterior
        idata = _idata(chains, draws)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = convergence_table(idata)
    assert table["r_hat"].isna().all() and table["ess_bulk"].isna().all()
    assert str(MIN_DRAWS_PER_CHAIN) in table.attrs["too_short"]


def test_long_enough_posteriors_are_judged():
    table = convergence_table(_idata(2, 50))
    assert table["r_hat"].notna().all() and table.attrs["too_short"] == ""


def test_all_nan_extremes_are_nan_without_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isnan(_nan_extreme(np.nanmax, [np.nan, np.nan]))
    assert _nan_extreme(np.nanmin, [np.nan, 2.0, 1.0]) == 1.0
