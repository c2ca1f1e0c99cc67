"""Calibration utilities and the prediction rules of DOProbit / DOLDA (issue 14)."""

import numpy as np
import pytest
from scipy import special, stats

import _simulate
from dolda import DOProbit
from dolda.posterior import calibration


def test_reliability_curve_and_ece_by_hand():
    proba = np.array([[0.9, 0.1], [0.8, 0.2], [0.3, 0.7], [0.45, 0.55]])
    y = np.array([0, 1, 1, 1])
    curve = calibration.reliability_curve(proba, y, n_bins=2)
    # bin (0.5, 1]: every row (confidences .9 .8 .7 .55), 3 of 4 right
    np.testing.assert_allclose(curve.confidence, [(0.9 + 0.8 + 0.7 + 0.55) / 4])
    np.testing.assert_allclose(curve.accuracy, [0.75])
    assert calibration.expected_calibration_error(proba, y, n_bins=2) == pytest.approx(
        abs(0.75 - 0.7375))
    assert calibration.log_loss(proba, y) == pytest.approx(
        -np.mean(np.log([0.9, 0.2, 0.7, 0.55])))


@pytest.mark.parametrize("temperature", [0.5, 1.0, 2.0])
def test_calibration_slope_recovers_a_known_temperature(temperature):
    """Labels from softmax(s); predictions softmax(s / t) have slope t (+-5%)."""
    rng = np.random.default_rng(int(temperature * 10))
    s = 1.5 * rng.normal(size=(40_000, 4))
    truth = special.softmax(s, axis=1)
    y = (rng.random(len(s))[:, None] > np.cumsum(truth, axis=1)).sum(axis=1)
    slope = calibration.calibration_slope(special.softmax(s / temperature, axis=1), y)
    assert slope == pytest.approx(temperature, rel=0.05)


def test_rules_from_their_formulas():
    mu = np.array([[0.3, -1.2, 2.0], [-0.5, -0.4, -3.0]])
    eta = np.stack([mu.T, mu.T])[:, :, :]  # (S=2, L=3, P=2) with U = I
    U = np.eye(2)
    F = stats.norm.cdf
    do = F(mu) / F(-mu) * np.prod(F(-mu), axis=1, keepdims=True)
    np.testing.assert_allclose(calibration.average_rule_probabilities(U, eta, "do"),
                               do / do.sum(axis=1, keepdims=True), rtol=1e-12)
    np.testing.assert_allclose(calibration.average_rule_probabilities(U, eta, "ovr"),
                               F(mu) / F(mu).sum(axis=1, keepdims=True), rtol=1e-12)
    with pytest.raises(ValueError, match="rule must be"):
        calibration.average_rule_probabilities(U, eta, "softmax")


def test_loo_predictors_reweight_towards_the_draws_that_fit_a_row_badly():
    """Two draws; row 0's label is likelier under draw 0, so leaving it out moves its
    predictors towards draw 1 (weights 1/likelihood, then normalised).  Rows 2 and 3
    repeat rows 0 and 1, so that no column is used by one row alone (those are
    integrated out instead; the next test)."""
    U = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    eta = np.array([[[2.0, 0.0], [-2.0, 0.0]], [[0.0, 0.0], [0.0, 0.0]]])  # (S=2, L=2, P=2)
    y = np.array([0, 1, 0, 1])
    loo = calibration.loo_predictors(U, eta, y)
    lik0 = stats.norm.cdf(2.0) * stats.norm.cdf(2.0)
    lik1 = 0.25
    w = np.array([1 / lik0, 1 / lik1])
    w = np.minimum(w / w.max(), np.sqrt(2) * (w / w.max()).mean())
    w /= w.sum()
    np.testing.assert_allclose(loo[0], w[0] * np.array([2.0, -2.0]), rtol=1e-12)
    np.testing.assert_allclose(loo[1], [0.0, 0.0], atol=1e-12)  # row 1: both draws give 0


@pytest.fixture(scope="module")
def logit_fit():
    """The issue's regime, smaller: labels from a multinomial logit, weak normal prior."""
    train = _simulate.simulate_labelled(2000, n_features=6, n_classes=4, model="logit",
                                        scale=1.0, seed=4)
    test = _simulate.simulate_labelled(4000, model="logit", seed=5, coef=train.coef)
    fit = DOProbit(prior="normal", n_iter=300, burn_in=100, random_state=0,
                   n_jobs=1).fit(train.X, train.y)
    return fit, test


def test_calibrated_rule_is_calibrated_on_multinomial_logit_labels(logit_fit):
    """Slope in [0.85, 1.15] and log loss within 3% of the truth's, where the DO rule is
    overconfident and normalised one-vs-rest underconfident (measured: DO slope ~0.8,
    OvR ~1.25, calibrated ~0.97 / +0.6% log loss)."""
    fit, test = logit_fit
    truth = calibration.log_loss(test.proba, test.y)
    got = calibration.calibration_summary(fit.predict_proba(test.X), test.y)
    assert 0.85 <= got["slope"] <= 1.15, got
    assert got["log_loss"] <= 1.03 * truth, (got, truth)
    fit.set_params(proba="do")
    do = calibration.calibration_summary(fit.predict_proba(test.X), test.y)
    fit.set_params(proba="ovr")
    ovr = calibration.calibration_summary(fit.predict_proba(test.X), test.y)
    fit.set_params(proba="calibrated")
    assert do["slope"] < got["slope"] < ovr["slope"]
    assert got["log_loss"] < min(do["log_loss"], ovr["log_loss"])
    assert got["accuracy"] >= do["accuracy"] - 0.01


def test_proba_rules_share_one_fit_and_round_trip(logit_fit, tmp_path):
    import dolda
    from dolda.posterior.scores import average_do_probabilities

    fit, test = logit_fit
    X = test.X[:50]
    U = np.hstack([np.ones((50, 1)), X])
    fit.set_params(proba="do")
    np.testing.assert_allclose(fit.predict_proba(X), average_do_probabilities(U, fit.eta_draws_))
    fit.set_params(proba="calibrated")
    assert fit.stacking_.shape == (4, 5)
    fit.save(tmp_path / "m")
    loaded = dolda.load(tmp_path / "m")
    np.testing.assert_allclose(loaded.predict_proba(X), fit.predict_proba(X))
    fit.set_params(proba="sharp")
    with pytest.raises(ValueError, match="proba must be one of"):
        fit.predict_proba(X)
    fit.set_params(proba="calibrated")


def test_loo_predictors_integrate_out_a_rows_own_columns_exactly():
    """Column 2 is used by row 0 alone: without row 0 its coefficient is back at its prior
    (mean 0), so row 0's predictor drops it and its weights use the marginal probit
    F(+-mu_rest / sqrt(1 + u^2 sd^2)); the other rows are plain importance sampling.
    The caller's U is left as it was."""
    import scipy.sparse as sp

    U = sp.csr_matrix(np.array([[1.0, 0.5, 2.0], [1.0, -1.0, 0.0], [1.0, 0.3, 0.0]]))
    before = U.toarray().copy()
    eta = np.array([[[0.2, 1.0, 3.0], [-0.4, 0.5, -1.0]],
                    [[-0.1, 0.2, 0.5], [0.3, -0.6, 2.0]]])  # (S=2, L=2, P=3)
    sd = np.array([[0.5, 2.0], [1.5, 0.7]])  # prior sd of column 2 at (draw, class)
    y = np.array([1, 0, 1])
    assert calibration.singleton_columns(U).tolist() == [False, False, True]
    loo = calibration.loo_predictors(U, eta, y,
                                     prior_sd=lambda draws, cols: sd[draws][:, :, None])
    np.testing.assert_array_equal(U.toarray(), before)
    F = stats.norm.cdf
    mu_rest = np.array([[e[:, :2] @ U.toarray()[0, :2] for e in eta]])[0]  # (S, L)
    scaled = mu_rest / np.sqrt(1.0 + 4.0 * sd ** 2)
    sign = np.array([-1.0, 1.0])
    w = 1.0 / np.prod(F(sign * scaled), axis=1)
    w = w / w.max()
    w = np.minimum(w, np.sqrt(2) * w.mean())
    w /= w.sum()
    np.testing.assert_allclose(loo[0], w @ mu_rest, rtol=1e-12)
    plain = calibration.loo_predictors(U[1:, :2], eta[:, :, :2], y[1:])
    np.testing.assert_allclose(loo[1:], plain, rtol=1e-12)
    # a dense U gives the same (its column 2 is left out through the coefficients, in place)
    dense = U.toarray()
    again = calibration.loo_predictors(dense, eta, y,
                                       prior_sd=lambda draws, cols: sd[draws][:, :, None])
    np.testing.assert_allclose(again, loo, rtol=1e-12)
    np.testing.assert_array_equal(dense, before)


@pytest.mark.parametrize("seed", [1, 5, 6])
def test_calibrated_rule_survives_one_hot_levels_seen_once(seed):
    """Every training row has its own one-hot column (a reporter who filed one report);
    test rows have none.  Importance-sampling LOO alone kept each row's fit to itself
    and the map came out overconfident (measured slope 0.65 / 0.66 / 0.81, log loss
    +4.3% / +5.6% / +2.1% over the truth's); integrating those columns out gives
    0.80 / 0.92 / 0.95 and +2.9% / +0.6% / +0.9%.  Tolerance: slope in [0.78, 1.2],
    log loss within 3.5% of the truth's."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    coef = rng.normal(size=(3, 3))

    def draw(n, r):
        X = r.normal(size=(n, 3))
        p = special.softmax(X @ coef.T, axis=1)
        return X, (r.random(n)[:, None] > np.cumsum(p, axis=1)).sum(axis=1), p

    X, y, _ = draw(600, rng)
    Xt, yt, pt = draw(3000, np.random.default_rng(seed + 100))
    train = sp.hstack([sp.csr_matrix(X), sp.identity(600, format="csr")]).tocsr()
    test = sp.hstack([sp.csr_matrix(Xt), sp.csr_matrix((3000, 600))]).tocsr()
    fit = DOProbit(n_iter=300, random_state=seed, n_jobs=1).fit(train, y)
    got = calibration.calibration_summary(fit.predict_proba(test), yt)
    assert 0.78 <= got["slope"] <= 1.2, got
    assert got["log_loss"] <= 1.035 * calibration.log_loss(pt, yt), got


def test_predictive_map_with_one_draw_is_penalised_multinomial_logistic_regression():
    """With a single draw the draw-averaged score is the plain multinomial likelihood, so
    the L-BFGS fit (hand-written objective and gradient) must land on scikit-learn's
    L2 logistic regression with the same C (tolerance 1e-3 on the probabilities)."""
    rng = np.random.default_rng(3)
    mu = rng.normal(size=(400, 3))
    y = (rng.random(400)[:, None] > np.cumsum(special.softmax(1.5 * mu, axis=1), axis=1)).sum(1)
    ours = calibration.fit_stacking_predictive(mu[None], np.ones((1, 400)), y, 3, C=0.5)
    ref = calibration.fit_stacking(mu, y, 3, C=0.5)
    np.testing.assert_allclose(calibration.stacked_probabilities(mu, ours),
                               calibration.stacked_probabilities(mu, ref), atol=1e-3)


def test_predictive_map_accounts_for_the_spread_of_the_draws():
    """Rows whose draws disagree: averaging a map fitted at the mean flattens the
    probabilities; the map fitted on the average itself scores the training rows better
    (its own objective) and is steeper."""
    rng = np.random.default_rng(4)
    centre = rng.normal(size=(600, 3))
    y = (rng.random(600)[:, None] > np.cumsum(special.softmax(2 * centre, axis=1), axis=1)).sum(1)
    draws = centre[None] + rng.normal(scale=1.0, size=(10, 600, 3))
    w = np.full((10, 600), 0.1)
    plain = calibration.fit_stacking(np.einsum("sd,sdl->dl", w, draws), y, 3)
    fitted = calibration.fit_stacking_predictive(draws, w, y, 3, init=plain)

    def score(stack):
        p = special.softmax(stack[:, 0] + draws @ stack[:, 1:].T, axis=2).mean(axis=0)
        return np.log(p[np.arange(600), y]).mean()

    assert score(fitted) > score(plain) + 0.005
    assert np.linalg.norm(fitted[:, 1:]) > np.linalg.norm(plain[:, 1:])


def test_in_place_softmax_is_scipys_to_the_last_bit():
    """The map's fit and its probabilities compute the softmax in their own array (no
    temporaries of the (s, D, L) size): the same values as scipy's, bit for bit, also with
    an absent class's -inf intercept."""
    rng = np.random.default_rng(5)
    z = rng.normal(scale=30.0, size=(4, 300, 6))
    want = special.softmax(z, axis=-1)
    work = z.copy()
    assert calibration.softmax_inplace(work) is work
    np.testing.assert_array_equal(work, want)
    stacking = rng.normal(size=(6, 13))
    stacking[2, 0] = -np.inf
    mu = rng.normal(scale=2.0, size=(4, 300, 6))
    features = calibration.stacking_features(mu, "mu, log F(mu)")
    np.testing.assert_array_equal(
        calibration.stacked_probabilities(mu, stacking),
        special.softmax(stacking[:, 0] + features @ stacking[:, 1:].T, axis=-1))


# ------------------------------------------------------------ the map's choice of inputs
def _labels(rng, proba):
    return (rng.random(len(proba))[:, None] > np.cumsum(proba, axis=1)).sum(axis=1)


def _loo_like(mu, rng, spread=0.3, n_draws=8):
    """Draws scattered around ``mu`` with equal weights, shaped like :func:`loo_draws`."""
    draws = mu[None] + rng.normal(scale=spread, size=(n_draws,) + mu.shape)
    w = np.full((n_draws, len(mu)), 1.0 / n_draws)
    return calibration.LooDraws(np.einsum("sd,sdl->dl", w, draws), draws, w)


def test_stacking_features_and_their_widths():
    mu = np.array([[0.5, -1.0, 2.0]])
    assert calibration.stacking_features(mu, "mu") is mu
    rich = calibration.stacking_features(mu, "mu, log F(mu)")
    np.testing.assert_allclose(rich, [[0.5, -1.0, 2.0, *stats.norm.logcdf([0.5, -1.0, 2.0])]],
                               rtol=1e-12)
    assert calibration.stacking_map(np.zeros((3, 4))) == "mu"
    assert calibration.stacking_map(np.zeros((3, 7))) == "mu, log F(mu)"
    assert calibration.stacking_map(np.zeros((3, 10))) == calibration.DO_MAP
    do = calibration.stacking_features(mu, calibration.DO_MAP)
    np.testing.assert_allclose(do[:, 6:], stats.norm.logcdf(-mu), rtol=1e-12)
    # the fixed DO map is the DO formula, by the formula's own definition
    odds = stats.norm.cdf(mu) / stats.norm.cdf(-mu)
    np.testing.assert_allclose(
        calibration.stacked_probabilities(mu, calibration.do_formula_map(3)),
        odds / odds.sum(), rtol=1e-12)
    assert calibration.is_do_formula_map(calibration.do_formula_map(3))
    assert not calibration.is_do_formula_map(calibration.do_formula_map(3) + 1e-9)
    with pytest.raises(ValueError, match="4, 7 or 10 columns, not 5"):
        calibration.stacking_map(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="unknown calibration map"):
        calibration.stacking_features(mu, "log mu")


def test_proba_rule_and_its_description_name_the_map():
    """What the report, ``dolda fit``/``score`` and ``GET /model`` show of the rule."""
    from types import SimpleNamespace as Model

    plain = Model(proba="calibrated", stacking_=np.zeros((3, 4)))
    rich = Model(proba="calibrated", stacking_=np.zeros((3, 7)))
    old = Model(proba="calibrated", stacking_=None)  # files saved before 0.2
    assert calibration.proba_rule(plain) == ("calibrated", "mu")
    assert calibration.proba_rule(rich) == ("calibrated", "mu, log F(mu)")
    assert calibration.proba_rule(old) == ("calibrated", None)
    assert calibration.proba_rule(Model(proba="ovr", stacking_=np.zeros((3, 7)))) == \
        ("ovr", None)
    assert calibration.describe_proba(plain) == (
        "calibrated map on the class scores (mu), chosen by leave-one-out log score with a "
        "parameter penalty")
    assert calibration.describe_proba(rich) == (
        "calibrated map on the class scores and their one-vs-rest log-probabilities "
        "(mu, log F(mu)), chosen by leave-one-out log score with a parameter penalty")
    assert "no calibration map" in calibration.describe_proba(old)
    assert "proba='ovr'" in calibration.describe_proba(Model(proba="ovr"))
    assert "proba='do'" in calibration.describe_proba(Model(proba="do", stacking_=None))
    held = Model(proba="calibrated", stacking_=np.zeros((3, 4)), calibration_holdout=0.2)
    assert calibration.describe_proba(held) == (
        "calibrated map on the class scores (mu), fitted and chosen on the latest 20% of the "
        "training rows, held out of the chain")


def test_rich_map_probabilities_from_their_formula():
    """``stacking`` (L, 2L+1): softmax(b + W1 mu + W2 log F(mu)), averaged over the draws."""
    rng = np.random.default_rng(7)
    U, eta = rng.normal(size=(6, 4)), rng.normal(size=(5, 3, 4))
    stacking = rng.normal(size=(3, 7))
    mu = np.einsum("dp,slp->sdl", U, eta)
    z = (stacking[:, 0] + mu @ stacking[:, 1:4].T
         + stats.norm.logcdf(mu) @ stacking[:, 4:].T)
    expected = (np.exp(z) / np.exp(z).sum(axis=2, keepdims=True)).mean(axis=0)
    np.testing.assert_allclose(calibration.class_probabilities(U, eta, "calibrated", stacking),
                               expected, rtol=1e-10)
    np.testing.assert_allclose(calibration.stacked_probabilities(mu[0], stacking),
                               np.exp(z[0]) / np.exp(z[0]).sum(axis=1, keepdims=True),
                               rtol=1e-10)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_select_stacking_takes_log_f_only_where_the_labels_need_it(seed):
    """Labels from normalised one-vs-rest probits, ``F(mu_l) / sum_j F(mu_j)``, are a
    softmax of ``log F(mu)``, which no map linear in ``mu`` is: the selection takes the
    richer map there, and keeps the plain one on multinomial-logit labels, where the
    extra 16 weights only fit noise (its in-sample score is higher: the penalty decides).
    Fails if the choice ignores the scores, or drops the penalty."""
    rng = np.random.default_rng(seed)
    mu = rng.normal(scale=1.2, size=(2500, 4))
    ovr = stats.norm.cdf(mu) / stats.norm.cdf(mu).sum(axis=1, keepdims=True)
    y_ovr, y_logit = _labels(rng, ovr), _labels(rng, special.softmax(mu, axis=1))
    loo = _loo_like(mu, rng)
    assert calibration.stacking_map(calibration.select_stacking(loo, y_ovr, 4)) == \
        "mu, log F(mu)"
    chosen = calibration.select_stacking(loo, y_logit, 4)
    assert calibration.stacking_map(chosen) == "mu"
    rich = calibration.fit_stacking_predictive(
        calibration.stacking_features(loo.mu, "mu, log F(mu)"), loo.w, y_logit, 4,
        init=calibration.fit_stacking(calibration.stacking_features(loo.mean, "mu, log F(mu)"),
                                      y_logit, 4))
    assert (calibration.loo_log_score(rich, loo.mu, loo.w, y_logit)
            > calibration.loo_log_score(chosen, loo.mu, loo.w, y_logit))


def test_select_stacking_with_an_absent_class_keeps_its_minus_infinite_intercept():
    rng = np.random.default_rng(5)
    mu = rng.normal(size=(300, 3))
    y = _labels(rng, special.softmax(mu[:, :2], axis=1))  # class 2 never seen
    stacking = calibration.select_stacking(_loo_like(mu, rng), y, 3)
    assert np.isneginf(stacking[2, 0]) and np.isfinite(stacking[:2, 0]).all()
    proba = calibration.stacked_probabilities(mu, stacking)
    assert np.all(proba[:, 2] == 0.0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


@pytest.fixture(scope="module")
def ovr_fit():
    """Labels from normalised one-vs-rest probits (the regime where the map on ``mu``
    alone was 3.1% above the truth's log loss)."""
    train = _simulate.simulate_labelled(3000, model="ovr", scale=0.5, seed=1)
    test = _simulate.simulate_labelled(5000, model="ovr", seed=101, coef=train.coef)
    fit = DOProbit(prior="normal", n_iter=400, burn_in=100, random_state=1,
                   n_jobs=1).fit(train.X, train.y)
    return fit, train, test


def test_calibrated_rule_on_normalised_one_vs_rest_labels(ovr_fit, tmp_path):
    """The fitted map is the ``[mu, log F(mu)]`` one, its test log loss within 2.5% of the
    truth's (measured +1.7% at 600 iterations) and below the plain map's, its slope in
    [0.85, 1.15]; the model file keeps it."""
    import dolda

    fit, train, test = ovr_fit
    assert calibration.stacking_map(fit.stacking_) == "mu, log F(mu)"
    got = calibration.calibration_summary(fit.predict_proba(test.X), test.y)
    truth = calibration.log_loss(test.proba, test.y)
    assert got["log_loss"] <= 1.025 * truth, (got, truth)
    assert 0.85 <= got["slope"] <= 1.15, got
    # the map on mu alone, fitted the same way on the same draws, does worse on test
    y_index = np.searchsorted(fit.classes_, train.y)
    U_train = np.column_stack([np.ones(len(train.X)), train.X])
    loo = calibration.loo_draws(U_train, fit.eta_draws_, y_index, n_keep=20)
    plain = calibration.fit_stacking_predictive(
        loo.mu, loo.w, y_index, 5, init=calibration.fit_stacking(loo.mean, y_index, 5))
    U_test = np.column_stack([np.ones(len(test.X)), test.X])
    plain_loss = calibration.log_loss(
        calibration.class_probabilities(U_test, fit.eta_draws_, "calibrated", plain), test.y)
    assert got["log_loss"] < plain_loss - 0.005, (got["log_loss"], plain_loss)
    fit.save(tmp_path / "m")
    loaded = dolda.load(tmp_path / "m")
    assert loaded.stacking_.shape == (5, 11)
    np.testing.assert_allclose(loaded.predict_proba(test.X[:100]),
                               fit.predict_proba(test.X[:100]))


# ------------------------------------------------- per-class maps (many classes, issue 36)
def test_per_class_map_recovers_per_class_slopes_and_intercepts():
    """Labels from ``softmax(b + a * mu)`` with one slope per class: the per-class fit on
    3000 rows recovers ``a`` and ``b`` (up to the softmax's shift of ``b``) within 0.15, and
    is stored in the full maps' layout, zero off the diagonal.  Fails if the gradient of
    ``a`` or ``b`` is wrong (L-BFGS stops early, far from the truth) or the layout is."""
    rng = np.random.default_rng(3)
    L, D = 6, 3000
    a, b = np.linspace(0.5, 2.0, L), np.linspace(-0.5, 0.5, L)
    mu = rng.normal(scale=1.5, size=(D, L))
    y = _labels(rng, special.softmax(b + a * mu, axis=1))
    fitted = calibration.fit_stacking_per_class(mu[None], np.ones((1, D)), y, L, 1, C=1e6)
    assert fitted.shape == (L, L + 1) and calibration.is_per_class(fitted)
    np.testing.assert_allclose(np.diagonal(fitted[:, 1:]), a, atol=0.15)
    np.testing.assert_allclose(fitted[:, 0] - fitted[:, 0].mean(), b - b.mean(), atol=0.15)
    got, _ = calibration.per_class_weights(fitted)
    np.testing.assert_array_equal(got[0], np.diagonal(fitted[:, 1:]))


def test_per_class_gradient_matches_finite_differences():
    """The analytic gradient of the draw-averaged objective against central differences
    (two inputs, several draws, unequal weights, an absent class held at -30)."""
    from scipy import optimize as opt

    rng = np.random.default_rng(11)
    s, D, L, k = 3, 40, 4, 2
    F = rng.normal(size=(s, D, k, L))
    w = rng.random((s, D))
    w /= w.sum(axis=0)
    y = rng.integers(0, L - 1, D)  # class L - 1 absent
    present = np.bincount(y, minlength=L) > 0
    captured = {}
    real = opt.minimize

    def spy(fun, x0, **kw):
        captured["fun"] = fun
        return real(fun, x0, **kw)

    opt_minimize = calibration.optimize.minimize
    calibration.optimize.minimize = spy
    try:
        calibration._per_class_lbfgs(F, w, y, L, k, 0.7, np.zeros(L + k * L), present, 1)
    finally:
        calibration.optimize.minimize = opt_minimize
    theta = rng.normal(size=L + k * L)
    value, grad = captured["fun"](theta)
    eps = 1e-6
    numeric = np.array([(captured["fun"](theta + eps * e)[0]
                         - captured["fun"](theta - eps * e)[0]) / (2 * eps)
                        for e in np.eye(len(theta))])
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


def test_select_stacking_goes_per_class_above_the_threshold_and_keeps_absent_classes():
    rng = np.random.default_rng(4)
    L = calibration.FULL_MAP_MAX_CLASSES + 3
    mu = rng.normal(scale=1.5, size=(1500, L))
    y = _labels(rng, special.softmax(1.3 * mu[:, :-1], axis=1))  # the last class absent
    stacking = calibration.select_stacking(_loo_like(mu, rng), y, L)
    assert calibration.is_per_class(stacking)
    assert np.isneginf(stacking[-1, 0]) and np.isfinite(stacking[:-1, 0]).all()
    proba = calibration.stacked_probabilities(mu, stacking)
    assert np.all(proba[:, -1] == 0.0)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    # the slope 1.3 of the labels is found on every present class
    np.testing.assert_allclose(np.diagonal(stacking[:-1, 1:L]), 1.3, atol=0.3)
    # below the threshold (or asked for) the full map stays
    assert not calibration.is_per_class(calibration.select_stacking(
        _loo_like(mu[:, :4], rng), np.minimum(y, 3), 4))
