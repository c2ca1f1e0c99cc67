"""DO-probit scores of kept coefficient draws, shared by DOProbit and DOLDA.

Log-odds and DO-probability scores, the coefficients' prior scale for the leave-one-out
draws, and the fit of the calibration (stacking) map on those draws
(:mod:`dolda.posterior.calibration`).
"""

from __future__ import annotations

import numpy as np

from . import calibration
from ..sampler import do_posterior


def log_odds_scores(proba):
    """Decision scores from class probabilities ``proba`` (D, L).

    Two classes: the log-odds ``log p_1 - log p_0``, shape (D,) (positive means
    ``classes_[1]``).  More classes: the centred log-probabilities
    ``log p_l - mean_j log p_j``, shape (D, L), whose softmax is ``proba``
    again; the argmax is the predicted class either way.
    """
    logp = np.log(np.maximum(proba, np.finfo(np.float64).tiny))
    if logp.shape[1] == 2:
        return logp[:, 1] - logp[:, 0]
    return logp - logp.mean(axis=1, keepdims=True)


def average_do_probabilities(U, eta_draws):
    """DO class probabilities averaged over draws of eta (the paper's rule, ``proba="do"``).

    Parameters
    ----------
    U : (D, P) regressors, ndarray or scipy.sparse matrix.
    eta_draws : (S, L, P) kept draws.

    Returns
    -------
    (D, L) array: ``mean_s P(y = l | u_d, eta^(s))``.
    """
    return calibration.average_rule_probabilities(U, eta_draws, "do")


def coefficient_prior_sd(tau_draws, lambda_draws, variance, n_unpenalised=0, blocks=None,
                         word_block=None):
    """``prior_sd(draws, columns)`` for :func:`dolda.posterior.calibration.loo_predictors`.

    Horseshoe (``tau_draws`` (S, L), ``lambda_draws`` (S, L, P - n_unpenalised)):
    ``tau_l lambda_lp`` at each draw, the first ``n_unpenalised`` columns (the
    intercept) N(0, ``variance``).  Normal prior (``tau_draws`` None): ``sqrt(variance)``.
    Per-block global scales: ``tau_draws`` (S, L, G) and ``blocks`` (P - n_unpenalised,) the
    block of every penalised column (negative: block 0).

    ``word_block`` ``(start, stop, row_ids, row_var)``: a DOLDA fit's compact word block
    (:mod:`dolda.models.dolda.kept`): ``lambda_draws`` then lacks the word columns
    ``[start, stop)`` (indices of the penalised columns), which ``prior_sd`` is never asked
    for; instead ``prior_sd.word_columns = (start, stop)`` and
    ``prior_sd.row_variance(draws, n_rows)`` (s, n_rows, L) is ``tau_l^2 sum_j u_dj^2
    lambda_lj^2`` over the singleton word columns of each training row, kept per draw
    (``row_var`` (S, D_s, L) at rows ``row_ids``; zero elsewhere), which
    :func:`dolda.posterior.calibration.loo_draws` adds to the rows' variance.
    """
    sd0 = float(np.sqrt(variance))

    def prior_sd(draws, columns):
        columns = np.asarray(columns)
        if tau_draws is None:
            n = len(range(*draws.indices(10**12)))
            return np.full((n, 1, len(columns)), sd0)
        # float32 draws: the product in float64, one slice of draws at a time
        pen = columns >= n_unpenalised
        tau = np.asarray(tau_draws[draws], dtype=np.float64)
        if tau.ndim == 3:  # one scale per block: the block of every column asked for
            tau = tau[:, :, np.maximum(np.asarray(blocks)[columns[pen] - n_unpenalised], 0)]
        else:
            tau = tau[:, :, None]
        out = np.full((len(tau), tau.shape[1], len(columns)), sd0)
        lam_cols = columns[pen] - n_unpenalised
        if word_block is not None:  # the other columns, in lambda_draws without the words
            start, stop = word_block[0] - n_unpenalised, word_block[1] - n_unpenalised
            if np.any((lam_cols >= start) & (lam_cols < stop)):
                raise ValueError("the word columns' lambda is kept per row, not per column")
            lam_cols = np.where(lam_cols < start, lam_cols, lam_cols - (stop - start))
        lam = lambda_draws[draws][:, :, lam_cols]
        out[:, :, pen] = tau * np.asarray(lam, dtype=np.float64)
        return out

    if word_block is not None and tau_draws is not None:
        start, stop, row_ids, row_var = word_block
        group = (None if np.ndim(tau_draws) != 3
                 else max(int(np.asarray(blocks)[start - n_unpenalised]), 0))

        def row_variance(draws, n_rows):
            tau = np.asarray(tau_draws[draws], dtype=np.float64)
            tau = tau if group is None else tau[:, :, group]
            out = np.zeros((len(tau), n_rows, tau.shape[1]))
            if row_var is not None and len(row_ids):
                out[:, row_ids, :] = (tau[:, None, :] ** 2
                                      * np.asarray(row_var[draws], dtype=np.float64))
            return out

        prior_sd.word_columns = (start, stop)
        prior_sd.row_variance = row_variance
    return prior_sd


def check_do_size(likelihood, n_classes, n_columns):
    """Refuse ``likelihood="do"`` beyond :data:`dolda.sampler.do_posterior.MAX_COEFFICIENTS`
    coefficients (its eta-step factorises a dense (L P) x (L P) matrix)."""
    if likelihood == "do" and n_classes * n_columns > do_posterior.MAX_COEFFICIENTS:
        raise ValueError(f"likelihood='do' samples all {n_classes} x {n_columns} = "
                         f"{n_classes * n_columns} coefficients jointly, at most "
                         f"{do_posterior.MAX_COEFFICIENTS}; use likelihood='ovr' (the "
                         "default) for a model this wide")


def fit_proba_stacking(U, eta_draws, y_index, n_classes, prior_sd=None,
                       maps=calibration.STACKING_MAPS, likelihood="ovr"):
    """The ``proba="calibrated"`` map, fitted on leave-one-out training predictors.

    ``U`` (D, P) are the rows the chain was fitted on and ``y_index`` (D,) their
    class columns; ``prior_sd`` as in :func:`dolda.posterior.calibration.loo_predictors`
    (see :func:`coefficient_prior_sd`); the map, (L, L + 1) or (L, 2 L + 1), is
    :func:`dolda.posterior.calibration.select_stacking`'s choice among ``maps``
    (``docs/CALIBRATION.md``).
    """
    loo = proba_stacking_draws(U, eta_draws, y_index, n_classes, prior_sd, likelihood)
    return calibration.select_stacking(loo, y_index, n_classes, maps=maps,
                                       likelihood=likelihood)


def proba_stacking_draws(U, eta_draws, y_index, n_classes, prior_sd=None, likelihood="ovr"):
    """The leave-one-out draws :func:`fit_proba_stacking` fits its map on
    (:func:`dolda.posterior.calibration.loo_draws` with :func:`dolda.posterior.calibration.map_draw_count`
    draws kept): the only step that reads ``U``, so a caller holding a large ``U`` can
    release it before :func:`dolda.posterior.calibration.select_stacking`."""
    return calibration.loo_draws(U, eta_draws, y_index, prior_sd=prior_sd,
                                 n_keep=calibration.map_draw_count(U.shape[0], n_classes),
                                 likelihood=likelihood)
