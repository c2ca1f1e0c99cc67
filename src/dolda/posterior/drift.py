"""A temperature (and per-class biases) on top of the calibration map, fitted on the latest
training rows: the calibration of ``DOLDA(calibration_holdout="time")``.

The default map (:func:`dolda.posterior.calibration.select_stacking`) is fitted on the
leave-one-out predictors of every training row.  When the rows are in time order and new
documents drift from the old (bug reports: new components, reporters, versions), the latest
rows are the closest to tomorrow's, and the map's scores of those rows are a little less
reliable than of the others: the chain saw their older neighbours far more often than their
newer ones.  Here the map ``[b, W]`` is kept and rescaled on the latest rows only,

    p(y | mu) = softmax(T (b + W f(mu)) + c),

with ``T > 0`` one temperature and ``c`` one bias per class (BCTS, Alexandari et al. 2020),
fitted by maximising the leave-one-out log score of the latest rows (the draw-averaged
probabilities, as the map itself is fitted) minus ``|c|^2 / (2 BIAS_VARIANCE)``.  The result is
again a map of the same layout, ``[T b + c, T W]``, so model files, the service and
``predict_proba`` read it unchanged.

A temperature cannot lose a class, and the biases are penalised towards 0, so a class absent
from the latest rows keeps a finite score (its bias stays within a few units of 0) and a class
the chain learned is never dropped, unlike ``calibration_holdout=<share>``, whose chain does
not see the latest rows.  The rows are in time order only when the user says so; nothing here
guesses it.  Measured in ``docs/guide/probabilities.md``.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

#: Share of the training rows (the latest) the temperature and biases are fitted on.
DRIFT_SHARE = 0.2
#: Variance of the Gaussian prior (L2 penalty) on the per-class biases ``c``.
BIAS_VARIANCE = 1.0
#: At least this many latest rows are used (fewer training rows: all of them).
MIN_ROWS = 50


def latest_rows(n_rows, share=DRIFT_SHARE, min_rows=MIN_ROWS):
    """Indices of the latest ``round(share * n_rows)`` rows (at least ``min_rows``, at most
    all of them)."""
    n = int(min(n_rows, max(min_rows, round(share * n_rows))))
    return np.arange(n_rows - n, n_rows)


def map_scores(stacking, mu):
    """``z = b + W f(mu)`` (..., L) of the calibration map ``stacking`` (-inf for classes the
    map has no row of)."""
    from .calibration import stacking_features, stacking_map

    z = stacking_features(mu, stacking_map(stacking)) @ stacking[:, 1:].T
    z += stacking[:, 0]
    return z


def fit_temperature_biases(z, w, y, biases=True, bias_variance=BIAS_VARIANCE):
    """``(T, c)`` maximising ``sum_d log sum_s w_sd softmax(T z_sd + c)[y_d] - |c|^2 /
    (2 bias_variance)`` (``c`` zero when ``biases`` is False).

    ``z`` (s, D, L) map scores (-inf: a class the map has no row of, kept at -inf), ``w``
    (s, D) weights of each row's draws (summing to one), ``y`` (D,) class columns.  L-BFGS on
    ``log T`` and ``c`` with the analytic gradient, started at ``T = 1, c = 0``.
    """
    z = np.asarray(z, dtype=np.float64)
    w = np.asarray(w, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    n_draws, n_rows, L = z.shape
    absent = ~np.isfinite(z).all(axis=(0, 1))
    zf = np.where(np.isfinite(z), z, 0.0)
    rows = np.arange(n_rows)

    def objective(theta):
        t = np.exp(theta[0])
        c = theta[1:] if biases else np.zeros(L)
        s = t * zf + c
        s[..., absent] = -np.inf
        s -= s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        p_y = p[:, rows, y]
        q = np.maximum((w * p_y).sum(axis=0), 1e-300)
        r = w * p_y / q                        # each draw's share of row d's score
        g = -p                                 # d log softmax_y / d s = e_y - p
        g[:, rows, y] += 1.0
        g *= r[:, :, None]
        value = -np.log(q).sum()
        grad_t = -np.sum(g * zf) * t           # d / d log T
        grad = [grad_t]
        if biases:
            value += 0.5 * np.sum(c * c) / bias_variance
            grad_c = -g.sum(axis=(0, 1)) + c / bias_variance
            grad_c[absent] = 0.0
            grad = np.concatenate([[grad_t], grad_c])
        return value, np.asarray(grad, dtype=np.float64)

    x0 = np.zeros(1 + (L if biases else 0))
    bounds = [(np.log(0.05), np.log(20.0))] + [(None, None)] * (L if biases else 0)
    res = optimize.minimize(objective, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                            options={"maxiter": 200})
    c = res.x[1:] if biases else np.zeros(L)
    return float(np.exp(res.x[0])), np.where(absent, 0.0, c)


def rescaled_map(stacking, temperature, bias):
    """The map ``[T b + c, T W]`` (same layout as ``stacking``; -inf intercepts stay)."""
    out = np.array(stacking, dtype=np.float64)
    out[:, 1:] *= temperature
    finite = np.isfinite(out[:, 0])
    out[finite, 0] = temperature * out[finite, 0] + np.asarray(bias)[finite]
    return out


def drift_map(stacking, loo, y, share=DRIFT_SHARE, biases=True):
    """``(map, T, c)``: ``stacking`` rescaled on the latest ``share`` of the rows of ``loo``
    (:class:`dolda.posterior.predictors.LooDraws`, rows in time order, labels ``y``) by
    :func:`fit_temperature_biases`."""
    from .calibration import fewer_draws

    y = np.asarray(y, dtype=np.int64)
    index = latest_rows(len(y), share)
    loo = fewer_draws(loo, 10)
    w = loo.w[:, index]
    z = map_scores(np.asarray(stacking, dtype=np.float64), loo.mu[:, index])
    t, c = fit_temperature_biases(z, w, y[index], biases=biases)
    return rescaled_map(stacking, t, c), t, c
