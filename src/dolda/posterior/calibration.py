"""Calibration of class probabilities: the prediction rules between which
``DOProbit(proba=...)`` and ``DOLDA(proba=...)`` choose (``docs/CALIBRATION.md``) and the
``"calibrated"`` map: its fit on leave-one-out (or held-out) predictors and its selection.

The predictors of kept draws are :mod:`dolda.posterior.predictors`; the scores that
check that ``predict_proba`` means what it says ("0.8 sure" is right 80% of the time:
reliability curves, ECE, log loss, slope) are :mod:`dolda.posterior.reliability`.  Both
modules' names are importable from here too (``dolda.calibration.reliability_curve``).
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from ..sampler.threads import blas_threads
from .predictors import (  # noqa: F401 (importable from here)
    LooDraws,
    _draw_chunks,
    _linear_predictors,
    column_nonzero_counts,
    held_out_draws,
    kept_draws,
    loo_draws,
    loo_predictors,
    map_draw_count,
    posterior_mean_predictors,
    singleton_columns,
)
from .reliability import (  # noqa: F401 (importable from here)
    Reliability,
    _check,
    brier_score,
    calibration_slope,
    calibration_summary,
    ece_interval,
    expected_calibration_error,
    expected_calibration_error_equal_mass,
    fit_temperature,
    log_loss,
    plot_reliability,
    reliability_curve,
)

PROBA_RULES = ("calibrated", "ovr", "do")


# ------------------------------------------------------------------ prediction rules
def ovr_log_scores(mu):
    """One-vs-rest log scores ``log F(mu_l)``, shape of ``mu`` (..., L)."""
    return special.log_ndtr(mu)


def do_log_scores(mu):
    """DO log scores ``log F(mu_l) - log F(-mu_l)`` (..., L).

    ``F(mu_l) prod_{j != l} F(-mu_j) = [F(mu_l) / F(-mu_l)] prod_j F(-mu_j)``: the
    last factor is common to every class and cancels when normalising, so the DO
    probabilities are the normalised odds (the double sharpening of
    ``docs/CALIBRATION.md``).
    """
    return special.log_ndtr(mu) - special.log_ndtr(-mu)



def average_rule_probabilities(U, eta_draws, rule):
    """``mean_s rule(U eta^(s)^T)`` (D, L) for ``rule`` "do" or "ovr".

    ``"do"``: the paper's DO formula ``F(mu_l) prod_{j != l} F(-mu_j) / Z(mu)``;
    ``"ovr"``: normalised one-vs-rest probabilities ``F(mu_l) / sum_j F(mu_j)``.
    ``U`` (D, P) may be dense or scipy.sparse; ``eta_draws`` is (S, L, P).
    """
    scores = {"do": do_log_scores, "ovr": ovr_log_scores}
    if rule not in scores:
        raise ValueError(f"rule must be 'do' or 'ovr', got {rule!r}")
    proba = np.zeros((U.shape[0], eta_draws.shape[1]))
    for mu in _draw_chunks(U, eta_draws):
        proba += special.softmax(scores[rule](mu), axis=-1).sum(axis=0)
    return proba / len(eta_draws)




def fit_stacking(mu, y, n_classes, C=1.0):
    """Multinomial-logit map from one-vs-rest linear predictors to class probabilities.

    Fits ``P(y = l | mu) = softmax(mu @ W.T + b)_l`` by (L2-penalised,
    ``C``) maximum likelihood of the class labels, scikit-learn's
    ``LogisticRegression``.

    Parameters
    ----------
    mu : (D, L) training linear predictors (ideally out-of-sample, e.g.
        :func:`loo_predictors`).
    y : (D,) class columns in ``0..n_classes-1``.

    Returns
    -------
    ndarray (L, L + 1)
        ``[b, W]``: column 0 the intercepts, then the weights.
    """
    from sklearn.linear_model import LogisticRegression

    y = np.asarray(y, dtype=np.int64)
    present = np.unique(y)
    fit = LogisticRegression(C=C, max_iter=5000).fit(mu, y)
    out = np.zeros((n_classes, mu.shape[1] + 1))
    if len(present) == 2:  # scikit-learn keeps one row for two classes
        coef = np.vstack([-fit.coef_ / 2, fit.coef_ / 2])
        icpt = np.array([-fit.intercept_[0] / 2, fit.intercept_[0] / 2])
    else:
        coef, icpt = fit.coef_, fit.intercept_
    out[present, 0] = icpt
    out[present, 1:] = coef
    out[np.setdiff1d(np.arange(n_classes), present), 0] = -np.inf
    return out


def fit_stacking_predictive(mu, w, y, n_classes, C=1.0, init=None):
    """The calibration map fitted for the rule it serves: draw-averaged probabilities.

    ``predict_proba`` averages ``softmax(b + W mu^(s))`` over the kept draws;
    this fits ``[b, W]`` by maximising the leave-one-out log score of exactly
    that average, ``sum_d log sum_s w_sd softmax(b + W mu_sd)[y_d]``, minus
    ``|W|^2 / (2 C)`` (the penalty of :func:`fit_stacking`), with L-BFGS.  A
    map fitted on the posterior-mean predictors (:func:`fit_stacking`, the
    starting point) and then averaged over the draws is underconfident where
    the map amplifies the draws' spread (20 Newsgroups); applied at the mean
    instead it is overconfident where coefficients are uncertain (one-hot levels
    seen in a few rows: the films' metadata).  Measured in ``docs/CALIBRATION.md``.

    Parameters
    ----------
    mu, w : (s, D, L), (s, D)   from :func:`loo_draws` (its ``n_keep`` draws, each
                                row's weights summing to one); every draw given is used.
    init : (L, L + 1) or None   starting map (e.g. :func:`fit_stacking`'s).

    Returns
    -------
    ndarray (L, L + 1)  ``[b, W]``; ``init`` when a class has no training row.
    """
    y = np.asarray(y, dtype=np.int64)
    _, n_rows, n_pred = mu.shape
    if init is not None and np.isneginf(init[:, 0]).any():
        return init  # absent classes: keep the plain map's -inf intercepts
    rows = np.arange(n_rows)
    L = n_classes
    flat = mu.reshape(-1, n_pred)

    def objective(theta):
        b, W = theta[:L], theta[L:].reshape(L, n_pred)
        p = mu @ W.T                         # one (s, D, L) array, changed in place
        p += b
        p = softmax_inplace(p)
        p_y = p[:, rows, y]
        q = np.maximum((w * p_y).sum(axis=0), 1e-300)
        r = w * p_y / q                      # each draw's share of row d's score
        g = np.negative(p, out=p)            # p is not read again
        g[:, rows, y] += 1.0                 # d log softmax_y / dz = e_y - p
        g *= -r[:, :, None]
        grad_W = g.reshape(-1, L).T @ flat + W / C
        value = -np.log(q).sum() + 0.5 * np.sum(W * W) / C
        return value, np.concatenate([g.sum(axis=(0, 1)), grad_W.ravel()])

    x0 = (np.zeros(L * (n_pred + 1)) if init is None
          else np.concatenate([init[:, 0], init[:, 1:].ravel()]))
    res = optimize.minimize(objective, x0, jac=True, method="L-BFGS-B",
                            options={"maxiter": 300})
    return np.column_stack([res.x[:L], res.x[L:].reshape(L, n_pred)])


#: Up to this many classes the calibration maps are full (``W`` of ``L x width`` weights,
#: every class's score from every predictor); above it they are per-class
#: (:func:`fit_stacking_per_class`: class ``l``'s score from its own predictor only,
#: ``b_l + a_l mu_l [+ c_l log F(mu_l)]``), whose fit costs O(draws x rows x L) per
#: L-BFGS step instead of O(draws x rows x L^2) and has 2L or 3L parameters instead of
#: L (L + 1) or L (2 L + 1).  At 52 classes x 5,139 rows the full maps took over half an
#: hour; measured in ``benchmarks/results/calibration_scaling.md``.
FULL_MAP_MAX_CLASSES = 12
#: The per-class maps are fitted on at most PER_CLASS_MAX_DRAWS draws and at most this
#: many draws x rows x classes values (at least 5 draws, evenly spaced, weights
#: renormalised): 7 draws at 52 classes x 5,139 rows.  On simulated 52 classes x 2,000
#: rows, 5 or 10 draws instead of 20 cost +1% test log loss and no ECE
#: (``benchmarks/results/calibration_draws.md``), at a ninth or a third of the time.
PER_CLASS_BUDGET = 2e6
PER_CLASS_MAX_DRAWS = 10


def fit_stacking_per_class(mu, w, y, n_classes, n_blocks, C=1.0, init=None, maxiter=50):
    """The calibration map with one weight per class and input: ``softmax(b + sum_k a_k *
    f_k(mu))``, fitted for the draw average as :func:`fit_stacking_predictive`.

    ``mu`` (s, D, n_blocks L) are the map's inputs (:func:`stacking_features`: ``n_blocks``
    blocks of L, ``[mu]`` or ``[mu, log F(mu)]``); class ``l``'s score uses the ``l``-th
    column of each block only, ``b_l + sum_k a_kl f_k(mu)_l``.  Maximises the leave-one-out
    log score ``sum_d log sum_s w_sd softmax(...)[y_d]`` minus ``|a|^2 / (2 C)`` with
    L-BFGS (analytic gradient, every array O(s D L); at most ``maxiter`` iterations: on a
    49-class bug-report fit, 40 iterations ended within 1 nat of the optimum of 1,642, at a
    third of the time), started from ``init`` ((n_blocks, L) ``a`` and (L,) ``b``, or None:
    the same objective on the weighted means of the draws, itself started from ``a = 1,
    b = 0``).

    Returns
    -------
    ndarray (L, n_blocks L + 1)
        ``[b, W]`` in the layout of the full maps, ``W`` zero off the blocks' diagonals, so
        that :func:`stacked_probabilities`, model files and the service read it unchanged.
    """
    y = np.asarray(y, dtype=np.int64)
    L, k = n_classes, int(n_blocks)
    n_draws, n_rows = mu.shape[:2]
    F = mu.reshape(n_draws, n_rows, k, L)
    present = np.bincount(y, minlength=L) > 0
    if init is None:
        mean = np.einsum("sd,sdkl->dkl", w, F)[None]
        start = np.concatenate([np.zeros(L), np.eye(1, k).T.repeat(L, axis=1).ravel()])
        if n_draws > 1:
            start = _per_class_lbfgs(mean, np.ones((1, n_rows)), y, L, k, C, start, present,
                                     200)  # one "draw": cheap, converged
    else:
        a0, b0 = init
        start = np.concatenate([b0, np.asarray(a0, dtype=np.float64).ravel()])
    theta = _per_class_lbfgs(F, w, y, L, k, C, start, present, maxiter)
    b, A = theta[:L], theta[L:].reshape(k, L)
    out = np.zeros((L, k * L + 1))
    out[:, 0] = b
    for j in range(k):
        out[np.arange(L), 1 + j * L + np.arange(L)] = A[j]
    out[~present, 0] = -np.inf
    out[~present, 1:] = 0.0
    return out


def per_class_draws(n_rows, n_classes):
    """How many draws the per-class maps are fitted on (:data:`PER_CLASS_BUDGET`)."""
    return max(5, min(PER_CLASS_MAX_DRAWS, int(PER_CLASS_BUDGET // max(1, n_rows * n_classes))))


def fewer_draws(loo, n_keep):
    """``loo`` (:class:`LooDraws`) on ``n_keep`` evenly spaced of its draws, each row's
    weights renormalised (itself when it has no more)."""
    if loo.mu.shape[0] <= n_keep:
        return loo
    keep = kept_draws(loo.mu.shape[0], n_keep)
    w = loo.w[keep]
    w = w / np.maximum(w.sum(axis=0, keepdims=True), 1e-300)
    return LooDraws(loo.mean, loo.mu[keep], w)


def per_class_weights(stacking):
    """``(a, b)`` of a per-class map (:func:`fit_stacking_per_class`), the start of a wider
    one: ``a`` (n_blocks, L), ``b`` (L,) with -inf intercepts of absent classes made finite."""
    stacking = np.asarray(stacking, dtype=np.float64)
    L = stacking.shape[0]
    k = (stacking.shape[1] - 1) // L
    a = np.stack([np.diagonal(stacking[:, 1 + j * L:1 + (j + 1) * L]) for j in range(k)])
    return a, np.where(np.isfinite(stacking[:, 0]), stacking[:, 0], 0.0)


def is_per_class(stacking):
    """Whether a map's weights are zero off its blocks' diagonals, and not all zero (a
    per-class map)."""
    stacking = np.asarray(stacking)
    L = stacking.shape[0]
    W = stacking[:, 1:].reshape(L, -1, L)
    on = np.eye(L, dtype=bool)[:, None, :]
    return bool(L > 1 and np.any(W[np.broadcast_to(on, W.shape)])
                and not np.any(W[~np.broadcast_to(on, W.shape)]))


def _per_class_lbfgs(F, w, y, L, k, C, x0, present, maxiter):
    """Minimise the per-class map's penalised negative log score over ``[b, a]`` (L + k L);
    classes without a row get an intercept fixed at -30 (their -inf is set by the caller)."""
    n_draws, n_rows = F.shape[:2]
    rows = np.arange(n_rows)
    absent = ~present
    x0 = np.array(x0, dtype=np.float64)
    x0[:L][absent] = -30.0
    bounds = [(-30.0, -30.0) if a else (None, None) for a in absent] + [(None, None)] * (k * L)

    blocks = [np.ascontiguousarray(F[:, :, j, :]).reshape(-1, L) for j in range(k)]
    flat_y = (np.arange(n_draws)[:, None] * n_rows + rows).ravel()  # (s D,) rows of y_d
    flat_cols = np.tile(y, n_draws)
    buffer = np.empty((n_draws * n_rows, L))

    def objective(theta):
        b, A = theta[:L], theta[L:].reshape(k, L)
        z = np.multiply(blocks[0], A[0], out=buffer)
        for j in range(1, k):
            z += blocks[j] * A[j]
        z += b
        p = softmax_inplace(z)
        p_y = p[flat_y, flat_cols].reshape(n_draws, n_rows)
        q = np.maximum((w * p_y).sum(axis=0), 1e-300)
        r = (w * p_y / q).ravel()
        g = np.negative(p, out=p)             # the buffer is rewritten at the next call
        g[flat_y, flat_cols] += 1.0
        g *= -r[:, None]
        grad_A = np.stack([np.einsum("nl,nl->l", g, blocks[j]) for j in range(k)]) + A / C
        value = -np.log(q).sum() + 0.5 * np.sum(A * A) / C
        return value, np.concatenate([g.sum(axis=0), grad_A.ravel()])

    res = optimize.minimize(objective, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                            options={"maxiter": maxiter, "ftol": 1e-7})
    return res.x


# The calibration map's inputs, told apart by the width of ``stacking`` (L, 1 + width):
# "mu" (width L), the linear predictors; "mu, log F(mu)" (width 2L), with their one-vs-rest
# log probabilities beside them.
STACKING_MAPS = ("mu", "mu, log F(mu)")

#: A third map, never fitted: ``f(mu) = [mu, log F(mu), log F(-mu)]`` (width 3L) with
#: ``b = 0`` and ``W = [0, I, -I]`` is the DO formula itself.  ``select_stacking`` offers
#: it beside the fitted maps when the chain targets the DO likelihood
#: (``DOProbit(likelihood="do")``), whose posterior predictive it then is.
DO_MAP = "mu, log F(mu), log F(-mu)"


def do_formula_map(n_classes):
    """``[b, W]`` (L, 3 L + 1) of :data:`DO_MAP` that gives the DO formula exactly."""
    eye = np.eye(n_classes)
    return np.hstack([np.zeros((n_classes, 1 + n_classes)), eye, -eye])


def is_do_formula_map(stacking):
    """Whether ``stacking`` is :func:`do_formula_map` (the DO formula, not a fitted map)."""
    stacking = np.asarray(stacking)
    return (stacking.shape[1] == 3 * stacking.shape[0] + 1
            and np.array_equal(stacking, do_formula_map(stacking.shape[0])))


def stacking_width(kind, n_classes):
    """Number of inputs of map ``kind`` for ``n_classes`` classes (L, 2 L or 3 L)."""
    return {STACKING_MAPS[0]: 1, STACKING_MAPS[1]: 2, DO_MAP: 3}[kind] * n_classes


def stacking_map(stacking):
    """Which map of ``STACKING_MAPS`` the array ``stacking`` (L, 1 + width) holds."""
    n_classes, width = stacking.shape[0], stacking.shape[1] - 1
    if width == n_classes:
        return STACKING_MAPS[0]
    if width == 2 * n_classes:
        return STACKING_MAPS[1]
    if width == 3 * n_classes:
        return DO_MAP
    raise ValueError(f"a calibration map for {n_classes} classes has {n_classes + 1}, "
                     f"{2 * n_classes + 1} or {3 * n_classes + 1} columns, not "
                     f"{stacking.shape[1]}")


_MAP_INPUTS = {STACKING_MAPS[0]: "the class scores",
               STACKING_MAPS[1]: "the class scores and their one-vs-rest log-probabilities",
               DO_MAP: "the class scores and their log F(mu) and log F(-mu)"}


def proba_rule(model):
    """``(proba, calibration_map)``: the rule of a fitted model's ``predict_proba`` and,
    for ``"calibrated"``, which of ``STACKING_MAPS`` its ``stacking_`` holds (None for the
    other rules, and for files saved before 0.2, which have no map)."""
    rule = getattr(model, "proba", "do")
    stacking = getattr(model, "stacking_", None)
    if rule != "calibrated" or stacking is None:
        return rule, None
    return rule, stacking_map(np.asarray(stacking))


def describe_proba(model):
    """:func:`proba_rule` in words, one clause (``docs/CALIBRATION.md``, "The map's inputs")."""
    rule, kind = proba_rule(model)
    if rule == "calibrated" and kind is None:
        return ("the DO formula averaged over the draws: this model has no calibration map "
                "(saved by an older dolda)")
    if rule == "calibrated" and is_do_formula_map(model.stacking_):
        return ("the DO formula averaged over the draws of the DO posterior "
                "(likelihood='do'), chosen over the fitted maps by leave-one-out log score")
    if rule == "calibrated":
        holdout = getattr(model, "calibration_holdout", None)
        folds = getattr(model, "calibration_folds", None)
        scope = ("per-class " if is_per_class(model.stacking_) else "")
        if folds:
            return (f"calibrated map on {_MAP_INPUTS[kind]} ({kind}), fitted and chosen on "
                    f"cross-fitted predictors ({folds} folds of the training rows, each "
                    "predicted by a chain on the others)")
        if holdout == "time":  # the share is dolda.posterior.drift.DRIFT_SHARE
            return (f"{scope}calibrated map on {_MAP_INPUTS[kind]} ({kind}), chosen by "
                    "leave-one-out log score, then rescaled (a temperature and per-class "
                    "biases) on the latest 20% of the training rows, given in time order")
        if holdout:
            return (f"calibrated map on {_MAP_INPUTS[kind]} ({kind}), fitted and chosen on "
                    f"the latest {holdout:.0%} of the training rows, held out of the chain")
        scope = ("per-class " if is_per_class(model.stacking_) else "")
        return (f"{scope}calibrated map on {_MAP_INPUTS[kind]} ({kind}), chosen by "
                "leave-one-out log score with a parameter penalty")
    if rule == "ovr":
        return "normalised one-vs-rest probabilities averaged over the draws (proba='ovr')"
    return "the DO formula averaged over the draws (proba='do')"


def stacking_features(mu, kind):
    """The inputs of map ``kind`` (one of ``STACKING_MAPS``) from predictors ``mu`` (..., L)."""
    if kind == STACKING_MAPS[0]:
        return mu
    if kind == STACKING_MAPS[1]:
        return np.concatenate([mu, special.log_ndtr(mu)], axis=-1)
    if kind == DO_MAP:
        return np.concatenate([mu, special.log_ndtr(mu), special.log_ndtr(-mu)], axis=-1)
    raise ValueError(f"unknown calibration map {kind!r}; expected one of "
                     f"{STACKING_MAPS + (DO_MAP,)}")


def loo_log_score(stacking, mu, w, y):
    """Leave-one-out log score ``sum_d log sum_s w_sd softmax(b + W f(mu_sd))[y_d]``."""
    y = np.asarray(y, dtype=np.int64)
    p_y = stacked_probabilities(mu, stacking)[:, np.arange(len(y)), y]
    return float(np.log(np.maximum((w * p_y).sum(axis=0), 1e-300)).sum())


def select_stacking(loo, y, n_classes, C=1.0, maps=STACKING_MAPS, likelihood="ovr",
                    per_class=None):
    """The calibration map: each of ``STACKING_MAPS`` fitted, the best by an AIC-type score.

    Both maps are fitted by :func:`fit_stacking_predictive` (started from
    :func:`fit_stacking` on the leave-one-out means) on the leave-one-out draws
    ``loo`` (:func:`loo_draws`); each is scored by its leave-one-out log score
    (:func:`loo_log_score`) minus its number of free weights and intercepts (classes
    with training rows only), and the larger wins; ties keep the plain ``mu`` map.
    The count is the unpenalised one, so the richer map must gain more than it could by
    chance.  Measured (``docs/CALIBRATION.md``): it picks ``"mu, log F(mu)"`` on labels
    from normalised one-vs-rest probits (test log loss +3.1% -> +1.5-1.7% from the
    truth's) and ``"mu"`` on every multinomial-logit and DO regime tried.  ``maps``
    restricts the candidates (e.g. ``("mu",)``, the map before this choice existed).

    With ``likelihood="do"`` (draws of the DO posterior, ``loo`` weighted by the DO
    likelihood) the DO formula itself (:func:`do_formula_map`, no fitted weight) competes
    too: it is the model's own posterior predictive, and wins where the labels follow the
    DO model (``docs/CALIBRATION.md``, "The DO likelihood").

    ``per_class`` (None: above :data:`FULL_MAP_MAX_CLASSES` classes) fits the per-class
    maps of :func:`fit_stacking_per_class` instead of the full ones, the wider started
    from the narrower, and counts their ``1 + blocks`` weights per class.

    Returns
    -------
    ndarray (L, L + 1), (L, 2 L + 1) or (L, 3 L + 1)   ``[b, W]``; :func:`stacking_map`
    tells which, :func:`is_per_class` whether it is per-class.

    The maps are fitted on one BLAS thread whatever ``n_jobs``: their products are thin
    (L x L outputs from at most 2e6 draws x rows) and a second OpenBLAS thread, which
    spins between the optimiser's hundreds of calls, cost 4-10x the CPU time and wall time
    (``benchmarks/results/contention.md``); the map then no longer depends on the BLAS
    thread count either.
    """
    y = np.asarray(y, dtype=np.int64)
    n_present = len(np.unique(y))
    if per_class is None:
        per_class = n_classes > FULL_MAP_MAX_CLASSES
    if per_class:
        loo = fewer_draws(loo, per_class_draws(len(y), n_classes))
    best, best_score = None, -np.inf
    previous = None  # per-class: each map starts where the narrower one ended
    with blas_threads(1):
        for kind in maps:
            if per_class:
                n_blocks = stacking_width(kind, n_classes) // n_classes
                init = None
                if previous is not None:
                    a, b = per_class_weights(previous)
                    a = np.vstack([a, np.zeros((n_blocks - len(a), n_classes))])[:n_blocks]
                    init = (a, b)
                fitted = fit_stacking_per_class(stacking_features(loo.mu, kind), loo.w, y,
                                                n_classes, n_blocks, C=C, init=init)
                previous = fitted
                n_free = n_present * (1 + n_blocks)
            else:
                plain = fit_stacking(stacking_features(loo.mean, kind), y, n_classes, C=C)
                fitted = fit_stacking_predictive(stacking_features(loo.mu, kind), loo.w, y,
                                                 n_classes, C=C, init=plain)
                n_free = n_present * fitted.shape[1]
            score = loo_log_score(fitted, loo.mu, loo.w, y) - n_free
            if score > best_score:
                best, best_score = fitted, score
    if likelihood == "do":
        formula = do_formula_map(n_classes)
        if loo_log_score(formula, loo.mu, loo.w, y) > best_score:
            best = formula
    return best


def stacked_probabilities(mu, stacking):
    """``softmax(b + W f(mu))`` over the last axis of ``mu`` (..., L), with ``stacking = [b, W]``
    (:func:`select_stacking`, :func:`fit_stacking`) and ``f`` its map's features
    (:func:`stacking_features`)."""
    features = stacking_features(mu, stacking_map(stacking))
    z = features @ stacking[:, 1:].T
    del features
    z += stacking[:, 0]
    return softmax_inplace(z)


def softmax_inplace(z):
    """``scipy.special.softmax(z, axis=-1)`` computed in ``z`` (float64, C-ordered), returned:
    the same operations in the same order (maximum, shift, exp, sum, division), so the same
    values to the last bit, without its three temporaries of ``z``'s size (the calibration
    map's fit works on 20 draws x D x L arrays: 36 MB each on 20 Newsgroups)."""
    z -= np.max(z, axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= np.sum(z, axis=-1, keepdims=True)
    return z


def class_probabilities(U, eta_draws, rule, stacking=None):
    """Class probabilities (D, L) of rows ``U`` (D, P) by ``rule`` (see ``PROBA_RULES``).

    ``"calibrated"`` needs ``stacking`` (:func:`fit_stacking`) and averages
    ``softmax(b + W mu^(s))`` over the draws (the posterior predictive of the
    map; plugging in the posterior-mean ``mu`` instead was overconfident where
    coefficients are uncertain, e.g. one-hot levels seen in one or two training
    rows); ``"do"`` and ``"ovr"`` average their formula over the draws
    (:func:`average_rule_probabilities`).
    """
    if rule == "calibrated":
        if stacking is None:
            import warnings

            warnings.warn("this model has no calibration map (saved by an older dolda); "
                          "using the DO formula (proba='do')", stacklevel=3)
            return average_rule_probabilities(U, eta_draws, "do")
        proba = np.zeros((U.shape[0], eta_draws.shape[1]))
        for mu in _draw_chunks(U, eta_draws):
            proba += stacked_probabilities(mu, stacking).sum(axis=0)
        return proba / len(eta_draws)
    if rule in ("do", "ovr"):
        return average_rule_probabilities(U, eta_draws, rule)
    raise ValueError(f"proba must be one of {PROBA_RULES}, got {rule!r}")

