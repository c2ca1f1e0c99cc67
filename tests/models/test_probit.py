"""DOProbit: the estimator contract, correctness oracles, recovery, accuracy, bad input."""

import numpy as np
import pandas as pd
import pytest
from scipy import optimize
from scipy.special import log_ndtr

from dolda import DOProbit
from dolda.sampler.probit_blocks import do_probabilities


def simulate_do(n=1000, n_features=50, seed=42):
    """DO-probit data: 3 classes, 5 signal covariates out of ``n_features``."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features))
    eta = np.zeros((3, n_features))
    eta[0, [0, 1]] = [1.5, -1.5]
    eta[1, [2, 3]] = [1.5, -1.5]
    eta[2, 4] = 2.0
    p = do_probabilities(X @ eta.T)
    y = (rng.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1)
    return X, y, eta


@pytest.fixture(scope="module")
def recovery_fits():
    X, y, eta = simulate_do()
    fits = {prior: DOProbit(prior=prior, n_iter=1000, random_state=0).fit(X, y)
            for prior in ("horseshoe", "normal")}
    return X, y, eta, fits


def test_horseshoe_recovers_signal_and_shrinks_noise(recovery_fits):
    """Signal: right sign and |mean| > 0.8 (true 1.5-2.0; DO data attenuate by ~20%).
    Noise (45 columns x 3 classes): median |mean| < 0.03 and max < 0.25."""
    X, y, eta, fits = recovery_fits
    coef = fits["horseshoe"].coef_
    signal = eta != 0
    assert np.all(np.sign(coef[signal]) == np.sign(eta[signal]))
    assert np.all(np.abs(coef[signal]) > 0.8)
    noise = np.abs(coef[:, 5:])
    assert np.median(noise) < 0.03
    assert noise.max() < 0.25
    lo, hi = np.quantile(fits["horseshoe"].eta_draws_[:, :, 1:], [0.025, 0.975], axis=0)
    excludes_zero = (lo > 0) | (hi < 0)
    assert excludes_zero[signal].all()
    assert excludes_zero[:, 5:].sum() <= 3  # of 135 noise coefficients


def test_normal_prior_is_visibly_denser(recovery_fits):
    _, _, _, fits = recovery_fits
    hs = np.median(np.abs(fits["horseshoe"].coef_[:, 5:]))
    normal = np.median(np.abs(fits["normal"].coef_[:, 5:]))
    assert normal > 2.5 * hs


def test_fitted_attributes_have_documented_shapes(recovery_fits):
    X, y, _, fits = recovery_fits
    m = fits["horseshoe"]
    assert m.coef_.shape == (3, 50) and m.intercept_.shape == (3,)
    assert m.eta_draws_.shape == (500, 3, 51)
    assert m.tau_draws_.shape == (500, 3) and np.all(m.tau_draws_ > 0)
    assert m.lambda_draws_.shape == (500, 3, 50) and np.all(m.lambda_draws_ > 0)
    assert m.loglik_.shape == (1000,)
    assert m.loglik_[-100:].mean() > m.loglik_[0]
    proba = m.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert (m.predict(X) == y).mean() > 0.8
    assert fits["normal"].tau_draws_ is None


def _probit_mle(U, t):
    def nll(b):
        mu = U @ b
        return -(log_ndtr(mu)[t].sum() + log_ndtr(-mu)[~t].sum())

    return optimize.minimize(nll, np.zeros(U.shape[1]), method="BFGS").x


def test_weak_normal_prior_matches_one_vs_rest_probit_mle():
    """DESIGN.md section 2: the sampler targets L independent binary probits.
    With a weak prior the posterior mean of eta_l equals the MLE of a probit of
    [y = l] on U, up to 0.3 posterior sd (Monte Carlo error, ~300 effective draws)."""
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2000, 3))
    y = rng.choice(np.array(["a", "b", "c"]), size=2000)
    y[X[:, 0] > 0.8] = "a"
    y[X[:, 1] < -0.8] = "b"
    m = DOProbit(prior="normal", prior_variance=1e4, n_iter=2000, burn_in=500,
                 random_state=1).fit(X, y)
    U = np.column_stack([np.ones(len(X)), X])
    for l, label in enumerate(m.classes_):
        mle = _probit_mle(U, y == label)
        sd = m.eta_draws_[:, l].std(axis=0)
        np.testing.assert_array_less(np.abs(m.eta_draws_[:, l].mean(axis=0) - mle), 0.3 * sd)


def test_digits_accuracy_close_to_logistic_regression():
    """scikit-learn's digits (10 classes, no download), 70/30 split, standardised."""
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    acc = DOProbit(n_iter=400, random_state=1).fit(Xtr, ytr).score(Xte, yte)
    acc_lr = LogisticRegression(max_iter=5000).fit(Xtr, ytr).score(Xte, yte)
    assert acc > 0.95
    assert acc > acc_lr - 0.02


def test_same_seed_same_draws_whatever_the_threads():
    X, y, _ = simulate_do(n=200, n_features=5)
    one = DOProbit(n_iter=30, random_state=9, n_jobs=1).fit(X, y)
    two = DOProbit(n_iter=30, random_state=9, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(one.eta_draws_, two.eta_draws_)
    np.testing.assert_array_equal(one.tau_draws_, two.tau_draws_)
    other = DOProbit(n_iter=30, random_state=10).fit(X, y)
    assert not np.array_equal(one.eta_draws_, other.eta_draws_)


def test_string_labels_dataframe_and_thinning():
    X, y, _ = simulate_do(n=300, n_features=5)
    X = X[:, :4]
    names = np.array(["cat", "dog", "eel"])[y]
    df = pd.DataFrame(X, columns=["w", "x", "y", "z"])
    m = DOProbit(n_iter=40, burn_in=10, thin=3, random_state=0).fit(df, list(names))
    assert list(m.classes_) == ["cat", "dog", "eel"]
    assert m.eta_draws_.shape[0] == len(range(10, 40, 3))
    assert list(m.feature_names_in_) == ["w", "x", "y", "z"]
    assert set(m.predict(df)) <= {"cat", "dog", "eel"}
    no_icpt = DOProbit(n_iter=20, fit_intercept=False, random_state=0).fit(X, y)
    assert no_icpt.eta_draws_.shape[2] == 4 and np.all(no_icpt.intercept_ == 0)


def test_get_params_and_clone():
    from sklearn.base import clone

    m = DOProbit(prior="normal", n_iter=10)
    assert m.get_params()["prior"] == "normal"
    assert clone(m).get_params() == m.get_params()


# ----------------------------------------------------------------- bad input
X_OK = np.random.default_rng(0).normal(size=(20, 3))
Y_OK = np.arange(20) % 2


@pytest.mark.parametrize("kwargs, X, y, match", [
    ({}, X_OK, Y_OK[:-1], "different lengths: X has 20 rows, y has 19"),
    ({}, np.where(np.eye(20, 3) == 1, np.nan, X_OK), Y_OK, "NaN"),
    ({}, np.where(np.eye(20, 3) == 1, np.inf, X_OK), Y_OK, "infinity"),
    ({}, X_OK, np.zeros(20), "single class"),
    ({}, X_OK[:1], Y_OK[:1], "minimum of 2"),
    ({"prior": "laplace"}, X_OK, Y_OK, "prior must be one of 'horseshoe', 'normal'"),
    ({"n_iter": 0}, X_OK, Y_OK, "n_iter must be >= 1"),
    ({"n_iter": 10, "burn_in": 10}, X_OK, Y_OK, r"burn_in \(10\) must be smaller than n_iter"),
    ({"prior_variance": -1.0}, X_OK, Y_OK, "prior_variance must be a finite number > 0"),
    ({}, X_OK, [None] + [1] * 19, "missing labels"),
])
def test_bad_input_names_the_problem(kwargs, X, y, match):
    with pytest.raises((ValueError, TypeError), match=match):
        DOProbit(**{"n_iter": 5, **kwargs}).fit(X, y)


def test_predict_with_wrong_columns_names_both_numbers():
    m = DOProbit(n_iter=5, random_state=0).fit(X_OK, Y_OK)
    with pytest.raises(ValueError, match="X has 4 features, but DOProbit is expecting 3"):
        m.predict(np.zeros((2, 4)))


def test_predict_before_fit_is_a_clear_error():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        DOProbit().predict(X_OK)


def test_do_log_likelihood_kernel_matches_scipy_reference():
    from scipy.special import logsumexp

    from dolda.sampler.probit_blocks import do_log_likelihood, do_log_scores

    rng = np.random.default_rng(3)
    mu = rng.normal(scale=3.0, size=(3000, 5))
    mu[:10] *= 20.0  # far tails: |mu| up to ~200
    y = rng.integers(0, 5, 3000)
    s = do_log_scores(mu)
    ref = (s[np.arange(3000), y] - logsumexp(s, axis=1)).sum()
    assert np.isfinite(do_log_likelihood(mu, y))
    np.testing.assert_allclose(do_log_likelihood(mu, y), ref, rtol=1e-10)
