"""The calibration map fitted on the latest training rows, held out of the chain.

``DOLDA(calibration_holdout=f)``: the last ``round(f D)`` training rows, in the order given,
are kept out of the chain, and the ``proba="calibrated"`` map is fitted on their predictors
under the chain's draws, which are out of sample *and* out of time when the rows are in time
order (bug reports in filing order).  The default map (``calibration_holdout=None``) is fitted
on leave-one-out predictors of all training rows: right when new documents come from the same
distribution, overconfident when they drift (new reporters, new versions), because the
leave-one-out predictors still come from a chain that saw every period.  Measured in
``docs/CALIBRATION.md`` ("Time-ordered data").

Rows of the held-out part whose class has no row in the chain's part cannot be predicted
(the model's ``classes_`` are those of the chain's rows); they are left out of the map's fit,
and a warning says how many.
"""

from __future__ import annotations

import logging
import numbers

import numpy as np

logger = logging.getLogger(__name__)

#: Largest share of the training rows that can be held out for the map.
MAX_HOLDOUT = 0.5


#: ``calibration_holdout="time"``: the rows are in time order; the chain sees every row and the
#: map is rescaled on the latest ones (:mod:`dolda.posterior.drift`).
TIME_ORDER = "time"


def check_holdout(value):
    """``calibration_holdout``: None, ``"time"`` (:data:`TIME_ORDER`), or a share in
    ``(0, MAX_HOLDOUT]``; returns it (a share as float)."""
    if value is None or (isinstance(value, str) and value == TIME_ORDER):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            0.0 < float(value) <= MAX_HOLDOUT):
        raise ValueError(f"calibration_holdout must be None, {TIME_ORDER!r} (rows in time "
                         f"order: every row in the chain, the map rescaled on the latest) or a "
                         f"share in (0, {MAX_HOLDOUT}] of the training rows held out of the "
                         f"chain, got {value!r}")
    return float(value)


def holds_out(value):
    """Whether ``calibration_holdout`` keeps rows out of the chain (a share)."""
    return value is not None and value != TIME_ORDER


def _rows(values, index):
    """Rows ``index`` of documents, labels or covariates (list, array, Series, DataFrame,
    sparse matrix or Corpus, which becomes token lists)."""
    from sklearn.utils import _safe_indexing

    from ..design.corpus import Corpus

    if values is None:
        return None
    if isinstance(values, Corpus):
        return [values.document(int(d)) for d in index]
    if not hasattr(values, "__getitem__") or isinstance(values, (str, bytes)):
        values = list(values)
    out = _safe_indexing(values, index)
    if hasattr(out, "reset_index"):
        out = out.reset_index(drop=True)
    return out


def split_latest(texts, y, covariates, fraction, estimator=None):
    """``(texts, y, covariates)`` of the chain's rows and of the held-out latest rows.

    The labels are checked first as ``fit`` checks them (length, missing, continuous ...).
    Raises ValueError before any work when either part would be too small (the chain needs
    two rows, the map at least one) or no held-out row has a class of the chain's rows.
    """
    from sklearn.utils.validation import column_or_1d

    from ..utils.labels import encode_labels

    if not hasattr(texts, "__len__"):
        texts = list(texts)
    encode_labels(y, len(texts), estimator)
    y = column_or_1d(y, warn=False)
    n_rows = len(y)
    n_held = int(round(fraction * n_rows))
    if n_held < 1 or n_rows - n_held < 2:
        raise ValueError(f"calibration_holdout={fraction} of {n_rows} training rows leaves "
                         f"{n_rows - n_held} for the chain and {n_held} for the calibration "
                         "map; need at least 2 and 1 (use more rows or calibration_holdout="
                         "None)")
    first, last = np.arange(n_rows - n_held), np.arange(n_rows - n_held, n_rows)
    if not np.isin(y[last], y[first]).any():
        raise ValueError(f"calibration_holdout={fraction}: none of the latest {n_held} rows has "
                         "a class of the earlier rows, so no calibration map can be fitted; "
                         "hold out fewer rows")
    fit_part = (_rows(texts, first), y[first], _rows(covariates, first))
    held_part = (_rows(texts, last), y[last], _rows(covariates, last))
    return fit_part, held_part


def holdout_stacking(model, texts, y, covariates, regressors=None):
    """The calibration map of fitted ``model`` on held-out rows (their labels ``y``).

    The rows' predictors under evenly spaced kept draws (at most 20, fewer for large
    ``rows x classes``, as the leave-one-out map), equal weights; the map and its inputs are
    chosen by :func:`dolda.posterior.calibration.select_stacking`, as for the leave-one-out map.
    (Letting the leave-one-out map of the chain's rows compete on the held-out log score,
    its weights unpenalised and the held-out map's counted, was tried and dropped: the
    count over-penalises a ridge-regularised map of ``L (L + 1)`` weights, and on two JIRA
    corpora of six it kept the leave-one-out map where the held-out one was far better;
    ``docs/CALIBRATION.md``.)

    ``regressors(texts, covariates)`` gives the rows' regressors ``U`` (default: the
    model's ``_regressors``; the fit passes its own stage's function).
    """
    from . import calibration

    y = np.asarray(y)
    known = np.isin(y, model.classes_)
    if not known.all():
        missing = sorted(set(y[~known].tolist()), key=str)
        logger.warning("calibration_holdout: %d of %d held-out rows have a class the chain's "
                       "rows lack (%s); they are left out of the calibration map",
                       int((~known).sum()), len(y), ", ".join(map(str, missing[:5]))
                       + (" ..." if len(missing) > 5 else ""))
    if not known.any():
        raise ValueError("calibration_holdout: no held-out row has a class of the chain's "
                         "rows, so no calibration map can be fitted; hold out fewer rows")
    index = np.flatnonzero(known)
    regressors = model._regressors if regressors is None else regressors
    U = regressors(_rows(texts, index), _rows(covariates, index))
    y_index = np.searchsorted(model.classes_, y[index])  # classes_ = np.unique(labels)
    n_classes = len(model.classes_)
    out_of_sample = calibration.held_out_draws(
        U, model.eta_draws_, calibration.map_draw_count(U.shape[0], n_classes))
    return calibration.select_stacking(out_of_sample, y_index, n_classes)
