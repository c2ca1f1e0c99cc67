"""Scoring class probabilities: reliability curves, expected calibration error, log loss and
the calibration slope (with :func:`fit_temperature`, the exponent that calibrates log
scores), and a reliability plot.

Every scoring function takes ``proba`` (D, L), rows summing to one, and integer labels
``y`` (D,) in ``0..L-1`` (the column of the true class).  Every name here is also
importable from :mod:`dolda.posterior.calibration` (and ``dolda.calibration``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import optimize, special

_EPS = 1e-15


def fit_temperature(log_scores, y, bounds=(0.05, 20.0)):
    """Exponent ``T`` maximising ``sum_d log softmax(T * log_scores_d)[y_d]``.

    Parameters
    ----------
    log_scores : (D, L) log class scores.
    y : (D,) int class columns.

    Returns
    -------
    float
        ``T``; 1 leaves the scores as they are, ``T > 1`` sharpens them.
    """
    log_scores = np.asarray(log_scores, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    rows = np.arange(len(y))

    def nll(t):
        s = t * log_scores
        return -np.sum(s[rows, y] - special.logsumexp(s, axis=1))

    res = optimize.minimize_scalar(nll, bounds=bounds, method="bounded",
                                   options={"xatol": 1e-5})
    return float(res.x)


# ------------------------------------------------------------------ scores
def _check(proba, y):
    proba = np.asarray(proba, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64)
    if proba.ndim != 2 or len(proba) != len(y):
        raise ValueError(f"proba must be (D, L) with D = len(y) = {len(y)}, "
                         f"got shape {proba.shape}")
    if y.size and (y.min() < 0 or y.max() >= proba.shape[1]):
        raise ValueError(f"y must hold class columns 0..{proba.shape[1] - 1}")
    return proba, y


def log_loss(proba, y):
    """Mean negative log probability of the true class (nats)."""
    proba, y = _check(proba, y)
    return float(-np.mean(np.log(np.clip(proba[np.arange(len(y)), y], _EPS, 1.0))))


def calibration_slope(proba, y):
    """Logit calibration slope: the ``b`` maximising ``sum_d log softmax(b log p_d)[y_d]``.

    For two classes it is the classical slope of the logistic regression of
    the label on the predicted logit.  1 is calibrated; below 1 the
    probabilities are overconfident (too close to 0 and 1), above 1
    underconfident.
    """
    proba, y = _check(proba, y)
    return fit_temperature(np.log(np.clip(proba, _EPS, 1.0)), y, bounds=(0.01, 100.0))


class Reliability(NamedTuple):
    """A reliability curve of the top-label confidence, one entry per non-empty bin."""
    confidence: np.ndarray  # mean predicted probability of the predicted class
    accuracy: np.ndarray    # share of rows in the bin whose predicted class is right
    count: np.ndarray       # rows in the bin
    edges: np.ndarray       # (n_bins + 1,) bin edges


def reliability_curve(proba, y, n_bins=15):
    """Top-label reliability curve: confidence vs accuracy in equal-width bins.

    Returns
    -------
    Reliability
        For a calibrated classifier ``accuracy ≈ confidence`` in every bin.
    """
    proba, y = _check(proba, y)
    confidence = proba.max(axis=1)
    correct = (np.argmax(proba, axis=1) == y).astype(np.float64)
    edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
    which = np.clip(np.digitize(confidence, edges[1:-1], right=True), 0, n_bins - 1)
    count = np.bincount(which, minlength=n_bins)
    conf_sum = np.bincount(which, weights=confidence, minlength=n_bins)
    acc_sum = np.bincount(which, weights=correct, minlength=n_bins)
    keep = count > 0
    return Reliability(conf_sum[keep] / count[keep], acc_sum[keep] / count[keep],
                       count[keep], edges)


def expected_calibration_error(proba, y, n_bins=15):
    """Top-label ECE: ``sum_b (n_b / D) |accuracy_b - confidence_b|`` over equal-width bins."""
    curve = reliability_curve(proba, y, n_bins)
    weights = curve.count / curve.count.sum()
    return float(np.sum(weights * np.abs(curve.accuracy - curve.confidence)))


def _equal_mass_ece(confidence, correct, n_bins):
    """Equal-mass ECE of sorted-or-not ``confidence`` and 0/1 ``correct`` (numpy arrays)."""
    order = np.argsort(confidence, kind="stable")
    n = len(order)
    n_bins = max(1, min(int(n_bins), n))
    # bin b holds the sorted rows [floor(b n / B), floor((b + 1) n / B))
    bounds = (np.arange(n_bins + 1) * n) // n_bins
    which = np.repeat(np.arange(n_bins), np.diff(bounds))
    gap = (np.bincount(which, weights=confidence[order], minlength=n_bins)
           - np.bincount(which, weights=correct[order], minlength=n_bins))
    return float(np.abs(gap).sum() / n)


def expected_calibration_error_equal_mass(proba, y, n_bins=15):
    """Top-label ECE over ``n_bins`` bins of (nearly) equal numbers of rows, sorted by
    confidence: ``sum_b (n_b / D) |accuracy_b - confidence_b|`` (Roelofs et al. 2022: less
    biased than equal-width bins, where most rows crowd into a few bins).  Bin ``b`` holds
    the sorted rows ``floor(b D / B) .. floor((b + 1) D / B) - 1``; ties in confidence keep
    the rows' order."""
    proba, y = _check(proba, y)
    if not len(y):
        return float("nan")
    confidence = proba.max(axis=1)
    correct = (np.argmax(proba, axis=1) == y).astype(np.float64)
    return _equal_mass_ece(confidence, correct, n_bins)


def ece_interval(proba, y, n_bins=15, n_boot=200, level=0.9, seed=0):
    """``(ece, low, high)``: the equal-mass ECE and its bootstrap ``level`` interval (the
    rows resampled with replacement ``n_boot`` times, seeded; percentiles of the
    resampled ECEs)."""
    proba, y = _check(proba, y)
    confidence = proba.max(axis=1)
    correct = (np.argmax(proba, axis=1) == y).astype(np.float64)
    ece = _equal_mass_ece(confidence, correct, n_bins)
    rng = np.random.default_rng(seed)
    n = len(y)
    boots = np.empty(int(n_boot))
    for i in range(int(n_boot)):
        pick = rng.integers(0, n, n)
        boots[i] = _equal_mass_ece(confidence[pick], correct[pick], n_bins)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(boots, [tail, 1.0 - tail])
    return ece, float(low), float(high)


def brier_score(proba, y):
    """Multi-class Brier score: ``mean_d sum_l (p_dl - [y_d = l])^2`` (0 is perfect, 2 the
    worst; Brier 1950)."""
    proba, y = _check(proba, y)
    if not len(y):
        return float("nan")
    sq = np.square(proba).sum(axis=1)
    return float(np.mean(sq - 2.0 * proba[np.arange(len(y)), y] + 1.0))


def calibration_summary(proba, y, n_bins=15):
    """Accuracy, log loss, ECE and calibration slope as a dict of floats."""
    proba, y = _check(proba, y)
    return {
        "accuracy": float(np.mean(np.argmax(proba, axis=1) == y)),
        "log_loss": log_loss(proba, y),
        "ece": expected_calibration_error(proba, y, n_bins),
        "slope": calibration_slope(proba, y),
    }


def plot_reliability(curves, ax=None, n_bins=None):
    """Draw reliability curves on a matplotlib axis.

    Parameters
    ----------
    curves : dict name -> Reliability (from :func:`reliability_curve`)
    ax : matplotlib Axes or None (a new figure)

    Returns
    -------
    matplotlib Axes
    """
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.plot([0, 1], [0, 1], color="0.6", lw=1, ls="--", label="calibrated")
    for name, curve in curves.items():
        ax.plot(curve.confidence, curve.accuracy, marker="o", ms=3, lw=1.2, label=name)
    ax.set_xlabel("predicted probability of the predicted class")
    ax.set_ylabel("share correct")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=8, loc="upper left")
    return ax


def calibration_figures(proba, y, n_bins=15, n_boot=200, seed=0):
    """The figures ``dolda score``, the report and ``experiments/calibration_peers.py`` show:
    accuracy, log loss, Brier score, ECE over ``n_bins`` equal-width bins and over
    ``n_bins`` equal-mass bins with its bootstrap 90% interval (seeded), and the mean stated
    probability of the predicted class; a dict of floats."""
    proba, y = _check(proba, y)
    ece_mass, low, high = ece_interval(proba, y, n_bins, n_boot, 0.9, seed)
    return {"accuracy": float(np.mean(np.argmax(proba, axis=1) == y)),
            "log_loss": log_loss(proba, y), "brier": brier_score(proba, y),
            "ece": expected_calibration_error(proba, y, n_bins), "ece_equal_mass": ece_mass,
            "ece_equal_mass_low": low, "ece_equal_mass_high": high,
            "mean_confidence": float(np.mean(proba.max(axis=1))), "n_bins": int(n_bins)}


def plain_sentence(proba, y, rows="the scored rows"):
    """One sentence a reader without statistics can check, from the numbers: the stated
    probability of the predicted class in its most populated tenth (0.5-0.6, ..., 0.9-1.0;
    below 0.5 only when no row is above), against the share of those rows that were right,
    then the same over every row.  E.g. "When the model says about 80%, it was right 78% of
    the time (412 of the 1,000 scored rows said 70-90%...)"."""
    proba, y = _check(proba, y)
    if not len(y):
        return "No row was scored."
    conf = proba.max(axis=1)
    correct = np.argmax(proba, axis=1) == y
    tenth = np.minimum((conf * 10).astype(int), 9)
    counts = np.bincount(tenth, minlength=10)
    upper = counts.copy()
    upper[:5] = 0
    b = int(np.argmax(upper if upper.any() else counts))
    inside = tenth == b
    said, right, n = conf[inside].mean(), correct[inside].mean(), int(inside.sum())
    verdict = ("about as often as it says" if abs(said - right) < 0.05 else
               "less often than it says (overconfident)" if right < said else
               "more often than it says (underconfident)")
    return (f"When the model says about {said:.0%}, it was right {right:.0%} of the time "
            f"on {rows}: {n:,} of {len(y):,} rows had a stated probability between "
            f"{b / 10:.0%} and {(b + 1) / 10:.0%}, so it is right {verdict} there. Over "
            f"all rows it said {conf.mean():.0%} on average and was right {correct.mean():.0%}.")
