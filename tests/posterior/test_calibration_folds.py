"""``DOProbit(calibration_folds=K)``: the calibration map fitted on cross-fitted predictors
(:mod:`dolda.posterior.crossfit`)."""

import numpy as np
import pytest
from sklearn.base import clone

import _simulate
import dolda
from dolda import DOProbit
from dolda.models.probit import estimator as probit_module
from dolda.posterior.crossfit import check_folds, fold_chain_seed, fold_seed, stratified_folds
from dolda.posterior.calibration import LooDraws, describe_proba, select_stacking

SMALL = dict(prior="normal", n_iter=30, burn_in=10, n_jobs=1, random_state=7)


@pytest.fixture(scope="module")
def data():
    sim = _simulate.simulate_labelled(240, n_features=4, n_classes=4, model="logit", seed=3)
    return sim.X, sim.y


# ------------------------------------------------------------------ folds
@pytest.mark.parametrize("n_folds", [2, 3, 5])
def test_folds_partition_the_rows_and_are_stratified(n_folds):
    rng = np.random.default_rng(0)
    # classes of 1, 2, 4 (< K) and of many rows, in random order
    y = rng.permutation(np.repeat(np.arange(6), [1, 2, 4, 30, 57, 101]))
    fold = stratified_folds(y, n_folds, seed=11)
    assert fold.shape == y.shape and fold.dtype == np.int64
    assert set(np.unique(fold)) == set(range(n_folds))  # every row in exactly one fold
    sizes = np.bincount(fold, minlength=n_folds)
    assert sizes.max() - sizes.min() <= 1
    for c in np.unique(y):
        per_fold = np.bincount(fold[y == c], minlength=n_folds)
        assert per_fold.max() - per_fold.min() <= 1, (c, per_fold)
        # a class of two or more rows is in two folds or more: every fold's chain sees it
        assert (per_fold > 0).sum() == min(n_folds, (y == c).sum())
    np.testing.assert_array_equal(fold, stratified_folds(y, n_folds, seed=11))
    assert not np.array_equal(fold, stratified_folds(y, n_folds, seed=12))


# ------------------------------------------------------------------ parameter checks
@pytest.mark.parametrize("bad", [0, 1, 21, -3, 2.5, 3.0, "3", True])
def test_bad_values_are_refused_before_any_chain(bad, data, monkeypatch):
    def no_chain(*args, **kwargs):
        raise AssertionError("a chain ran before the parameter was checked")

    monkeypatch.setattr(probit_module, "run_chain", no_chain)
    with pytest.raises(ValueError, match="calibration_folds") as err:
        check_folds(bad)
    for extra in ({}, {"n_chains": 2}):
        with pytest.raises(ValueError, match="calibration_folds") as err:
            DOProbit(calibration_folds=bad, **SMALL, **extra).fit(*data)
        assert "\n" not in str(err.value)


def test_too_few_rows_for_the_folds_is_refused_before_any_chain(monkeypatch):
    def no_chain(*args, **kwargs):
        raise AssertionError("a chain ran before the rows were checked")

    monkeypatch.setattr(probit_module, "run_chain", no_chain)
    X, y = np.arange(8.0).reshape(4, 2), np.array([0, 1, 0, 1])
    for rows, n_folds, least, extra in ((4, 5, 5, {}), (3, 2, 4, {}), (4, 5, 5, {"n_chains": 2})):
        with pytest.raises(ValueError, match=f"calibration_folds={n_folds} needs at least "
                                             f"{least} training rows") as err:
            DOProbit(calibration_folds=n_folds, **SMALL, **extra).fit(X[:rows], y[:rows])
        assert "\n" not in str(err.value)


# ------------------------------------------------------------------ the map
def _evenly_spaced(n_draws, n_keep):
    return np.unique(np.linspace(0, n_draws - 1, min(n_keep, n_draws)).round().astype(int))


@pytest.mark.parametrize("n_chains", [1, 2])
def test_the_map_is_the_one_of_the_fold_chains_out_of_fold_predictors(data, n_chains):
    # Recomputed here from plain fits on the rows outside each fold (same seeds, same
    # number of chains), with the held-out rows' predictors by hand.  Column 4 is a level
    # only three rows of fold 0 have: fold 0's chain never sees it, so it must not enter
    # their predictors.
    X, y = data
    n_folds, seed = 3, SMALL["random_state"]
    fold = stratified_folds(y, n_folds, fold_seed(seed, n_folds))
    level = np.zeros((len(y), 1))
    level[np.flatnonzero(fold == 0)[:3]] = 1.0
    X = np.hstack([X, level])
    model = DOProbit(calibration_folds=n_folds, n_chains=n_chains, **SMALL).fit(X, y)

    n_keep = 20  # dolda.posterior.calibration.map_draw_count(240, 4)
    mu = np.zeros((n_keep, len(y), 4))
    for k in range(n_folds):
        inside, held = fold != k, fold == k
        chain = DOProbit(n_chains=n_chains,
                         **{**SMALL, "random_state": fold_chain_seed(seed, n_folds, k)})
        chain.fit(X[inside], y[inside])
        eta = np.asarray(chain.eta_draws_, dtype=np.float64)
        eta = eta[_evenly_spaced(len(eta), n_keep)]
        assert len(eta) == n_keep
        U = np.hstack([np.ones((held.sum(), 1)), X[held]])
        if k == 0:
            U[:, 5] = 0.0  # the level fold 0's chain never saw
        mu[:, held] = np.einsum("dp,slp->sdl", U, eta)
    expected = select_stacking(LooDraws(mu.mean(axis=0), mu, np.full(mu.shape[:2], 1 / n_keep)),
                               y, 4)
    np.testing.assert_allclose(model.stacking_, expected, rtol=1e-9, atol=1e-12)

    # the full-data chain is the plain fit's: the option changes the map alone
    plain = DOProbit(n_chains=n_chains, **SMALL).fit(X, y)
    np.testing.assert_array_equal(model.eta_draws_, plain.eta_draws_)
    assert not np.allclose(model.stacking_[:, :5], plain.stacking_[:, :5])


def test_a_seed_reproduces_the_map_and_another_seed_changes_it(data):
    a = DOProbit(calibration_folds=3, **SMALL).fit(*data)
    b = DOProbit(calibration_folds=3, **SMALL).fit(*data)
    np.testing.assert_array_equal(a.stacking_, b.stacking_)
    c = DOProbit(calibration_folds=3, **{**SMALL, "random_state": 8}).fit(*data)
    assert not np.array_equal(a.stacking_, c.stacking_)
    assert not np.array_equal(stratified_folds(data[1], 3, fold_seed(7, 3)),
                              stratified_folds(data[1], 3, fold_seed(8, 3)))


def test_a_class_with_one_row_keeps_a_finite_map(data):
    # its row's fold chain has no row of the class; the class keeps its probability
    X, y = data
    y = y.copy()
    y[0] = 9
    with pytest.warns(UserWarning, match="single document"):
        model = DOProbit(calibration_folds=3, **SMALL).fit(X, y)
    assert np.isfinite(model.stacking_).all()
    assert (model.predict_proba(X)[:, -1] > 0).all()


# ------------------------------------------------------------------ sklearn and files
def test_get_params_clone_and_set_params(data):
    model = DOProbit(calibration_folds=4)
    assert model.get_params()["calibration_folds"] == 4
    assert DOProbit().get_params()["calibration_folds"] is None
    twin = clone(model)
    assert twin.get_params() == model.get_params()
    assert twin.set_params(calibration_folds=None).calibration_folds is None


def test_save_load_keeps_the_probabilities_bit_for_bit(data, tmp_path):
    X, y = data
    model = DOProbit(calibration_folds=3, **SMALL).fit(X, y)
    model.save(tmp_path / "m")
    loaded = dolda.load(tmp_path / "m")
    assert loaded.calibration_folds == 3
    np.testing.assert_array_equal(loaded.stacking_, model.stacking_)
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    assert "3 folds" in describe_proba(loaded)
    assert "leave-one-out" in describe_proba(DOProbit(**SMALL).fit(X, y))
