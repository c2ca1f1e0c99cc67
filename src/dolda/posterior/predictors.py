"""The linear predictors ``mu = U eta^T`` of kept draws, as the calibration map and the
prediction rules read them: in slices of the draws (:func:`_draw_chunks`, bounded memory),
at the posterior mean, leave-one-out on the training rows (:func:`loo_draws`: importance
weights, the rows' own one-hot columns integrated out) and on held-out rows.

Every name here is also importable from :mod:`dolda.posterior.calibration`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..utils.draws import draw_mean


def _linear_predictors(U, block):
    """``mu[s, d, l] = u_d . eta_l^(s)`` (float64) for draws ``block`` (s, L, P); U dense,
    sparse or a :class:`dolda.design.regressors.SparseDenseDesign`.  Float32 draws are converted
    here, one block at a time."""
    n_rows, (n_draws, n_classes, n_columns) = U.shape[0], block.shape
    if isinstance(U, np.ndarray):
        return np.einsum("dp,slp->sdl", U, np.asarray(block, dtype=np.float64))
    # sparse or two-block U: one float64 copy, C-ordered (P, s * L), the layout the sparse
    # product copies to
    if sp.issparse(U) and U.format == "csr":
        # the same product draw by draw on all threads (dolda.sampler.linear_predictors)
        from ..sampler import linear_predictors as lp

        mu = np.empty((n_draws, n_rows, n_classes))
        lp.csr_draw_products(*lp.as_csr_arrays(U), lp.draws_by_column(block), mu)
        return mu
    right = np.ascontiguousarray(block.reshape(-1, n_columns).T, dtype=np.float64)
    mu = np.asarray(U @ right)
    return mu.reshape(n_rows, n_draws, n_classes).transpose(1, 0, 2)


def _draw_chunks(U, eta_draws, max_elements=2e6, keep=None):
    """``mu`` (s, D, L) of consecutive slices of the draws; ``keep`` (P,) bool: only those
    columns of U count (the others' coefficients are zeroed in the slice, not U copied).

    Slices of at most ``max_elements`` values of ``mu`` (16 MB) and of the draws (float32
    draws are converted to float64 slice by slice, so a few rows never convert them all):
    the callers' softmax and map temporaries are a few times that.  With 2e7, predicting
    20 Newsgroups test at K = 1000 with 250 draws peaked 0.76 GB above the model; with
    2e6, 0.21 GB, and faster.
    """
    _, n_classes, n_columns = eta_draws.shape
    per_draw = max(1, U.shape[0] * n_classes, n_classes * n_columns)
    chunk = max(1, int(max_elements // per_draw))
    for start in range(0, len(eta_draws), chunk):
        block = eta_draws[start:start + chunk]
        yield _linear_predictors(U, block if keep is None else block * keep)



def posterior_mean_predictors(U, eta_draws):
    """``u_d . E[eta_l]`` (D, L): the linear predictors at the posterior mean."""
    return np.asarray(U @ draw_mean(eta_draws).T)


def column_nonzero_counts(U):
    """Non-zero rows per column of ``U`` (D, P): dense, sparse (explicit zeros not counted)
    or a :class:`dolda.design.regressors.SparseDenseDesign`; (P,) int."""
    import scipy.sparse as sp

    from ..design.regressors import SparseDenseDesign

    if isinstance(U, SparseDenseDesign):
        return U.column_nonzero_counts()
    if sp.issparse(U):
        return np.asarray((U != 0).sum(axis=0)).ravel()
    return np.count_nonzero(np.asarray(U), axis=0)


def singleton_columns(U):
    """Columns of the training design ``U`` (D, P) with exactly one non-zero row: (P,) bool.

    A one-hot level seen in a single training row (a reporter who filed one
    report, the director of one film) is a parameter only that row informs;
    see :func:`loo_predictors`.
    """
    return column_nonzero_counts(U) == 1


def loo_predictors(U, eta_draws, y, prior_sd=None, max_elements=2e6):
    """Leave-one-out posterior means of the linear predictors of the training rows (D, L).

    ``sum_s w_sd mu_sd`` with the draws and weights of :func:`loo_draws`.
    """
    return loo_draws(U, eta_draws, y, prior_sd, n_keep=0, max_elements=max_elements).mean


class LooDraws(NamedTuple):
    """Leave-one-out predictors of the training rows (:func:`loo_draws`)."""
    mean: np.ndarray  # (D, L)     sum_s w_sd mu_sd over every draw
    mu: np.ndarray    # (s, D, L)  the kept draws' predictors, rows' own columns left out
    w: np.ndarray     # (s, D)     their weights, each row's renormalised to sum to one


def loo_draws(U, eta_draws, y, prior_sd=None, n_keep=20, max_elements=2e6,
              likelihood="ovr"):
    """Leave-one-out draws of the training rows' linear predictors and their weights.

    The posterior the sampler targets is a product of one-vs-rest binary
    probits, so row ``d``'s likelihood at draw ``s`` is
    ``prod_l F(mu_dl^(s))^{[y_d = l]} F(-mu_dl^(s))^{[y_d != l]}``; weighting the
    draws by its inverse (importance sampling, Gelfand 1996) turns the
    posterior into the posterior without row ``d``.  The weights are truncated
    at ``sqrt(S)`` times their mean (Ionides 2008) so that one draw cannot
    dominate.

    Columns only row ``d`` uses (:func:`singleton_columns`) are integrated out
    exactly instead: without row ``d`` nothing informs their coefficients, so
    their leave-one-out posterior is the prior, of mean zero; they drop out of
    ``d``'s predictor, and its likelihood, marginalised over them, is the probit
    ``F(+-mu_rest / sqrt(1 + v))`` with ``v = sum_j u_dj^2 sd_lj^2``.  Importance
    sampling alone cannot do this: no posterior draw has such a coefficient
    near its prior, the weights degenerate, and the "out-of-sample" predictors
    keep the fit to the row itself (with thousands of one-hot columns the map
    fitted on them was badly overconfident).

    Parameters
    ----------
    U : (D, P) dense or sparse   the rows the chain was fitted on.
    eta_draws : (S, L, P)        kept coefficient draws.
    y : (D,)                     class columns.
    prior_sd : callable or None  ``prior_sd(draws, columns)`` -> (s, L, len(columns)):
                                 the prior standard deviation of those columns'
                                 coefficients at the draws of slice ``draws``
                                 (``tau lambda`` for the Horseshoe; see
                                 :func:`dolda.models.probit.estimator.coefficient_prior_sd`).  None
                                 takes ``v = 0`` (the weights then slightly favour
                                 draws that fit row ``d`` without its own columns).

    n_keep : int                 draws (evenly spaced) whose predictors are returned.
    likelihood : {"ovr", "do"}   what the chain conditioned on: the one-vs-rest probits
                                 (the paper's sampler) or the DO likelihood
                                 (``DOProbit(likelihood="do")``), whose row likelihood
                                 then gives the weights.  Singleton columns are integrated
                                 out under ``"ovr"`` only (the DO likelihood has no closed
                                 form marginal over them).

    Returns
    -------
    LooDraws
        ``mean`` over every draw, and ``n_keep`` draws' predictors with their
        weights.  Two passes over the draws (weights, then predictors), so the
        memory is O(S D + n_keep D L), not O(S D L).
    """
    import scipy.sparse as sp

    from ..design.regressors import SparseDenseDesign
    from ..sampler.do_posterior import do_row_log_likelihood

    y = np.asarray(y, dtype=np.int64)
    n_rows, n_draws = U.shape[0], len(eta_draws)
    single = singleton_columns(U) if likelihood == "ovr" else np.zeros(U.shape[1], bool)
    # a compact word block (dolda.models.dolda.kept): its singleton columns' variance comes
    # per row from prior_sd.row_variance, not per column
    words = getattr(prior_sd, "word_columns", None)
    by_column = np.flatnonzero(single)
    if words is not None:
        by_column = by_column[(by_column < words[0]) | (by_column >= words[1])]
    if single.any():
        # the other columns' predictors: those coefficients zeroed draw by draw (U itself,
        # D x P, is neither changed nor copied)
        rest = (~single).astype(np.float64)
        own = (U.columns(by_column) if isinstance(U, SparseDenseDesign)
               else sp.csr_matrix(U)[:, by_column])
        U_own = own.power(2).tocsr()
    else:
        rest, U_own = None, None
    from ..sampler import linear_predictors as lp

    log_w = np.empty((n_draws, n_rows))
    start = 0
    for mu in _draw_chunks(U, eta_draws, max_elements / 2, rest):
        scaled = mu
        if U_own is not None and prior_sd is not None:
            draws = slice(start, start + len(mu))
            if len(by_column):
                var = np.asarray(prior_sd(draws, by_column), dtype=np.float64) ** 2
                v = np.asarray(U_own @ var.reshape(-1, var.shape[2]).T)
                v = v.reshape(n_rows, len(mu), -1).transpose(1, 0, 2)
            else:
                v = 0.0
            if words is not None:
                v = v + prior_sd.row_variance(draws, n_rows)
            scaled = mu / np.sqrt(1.0 + v)
        if likelihood == "do":
            log_w[start:start + len(mu)] = -do_row_log_likelihood(mu, y)
        else:
            # sum_l log F(sign * scaled) on all threads (dolda.sampler.linear_predictors)
            part = np.empty(scaled.shape[:2])
            lp.ovr_row_loglik(np.ascontiguousarray(scaled, dtype=np.float64), y, part)
            log_w[start:start + len(mu)] = -part
        start += len(mu)
    log_w -= log_w.max(axis=0, keepdims=True)
    w = np.exp(log_w)
    del log_w
    w = np.minimum(w, np.sqrt(n_draws) * w.mean(axis=0, keepdims=True))
    w /= w.sum(axis=0, keepdims=True)
    keep = kept_draws(n_draws, n_keep)
    mean = np.zeros((n_rows, eta_draws.shape[1]))
    kept = np.empty((len(keep), n_rows, eta_draws.shape[1]))
    start = 0
    for mu in _draw_chunks(U, eta_draws, max_elements / 2, rest):
        mean += np.einsum("sd,sdl->dl", w[start:start + len(mu)], mu)
        inside = (keep >= start) & (keep < start + len(mu))
        kept[inside] = mu[keep[inside] - start]
        start += len(mu)
    w_kept = w[keep]
    w_kept /= np.maximum(w_kept.sum(axis=0, keepdims=True), 1e-300)
    return LooDraws(mean, kept, w_kept)


def map_draw_count(n_rows, n_classes):
    """How many draws' predictors the calibration map is fitted on: 20, fewer (at least 5)
    when ``rows x classes`` is large, so that they stay below about 5e6 values."""
    return int(np.clip(5e6 // max(1, n_rows * n_classes), 5, 20))


def kept_draws(n_draws, n_keep):
    """Indices of ``n_keep`` evenly spaced draws of ``n_draws`` (all when fewer)."""
    if n_keep <= 0:
        return np.zeros(0, dtype=int)
    return np.unique(np.linspace(0, n_draws - 1, min(n_keep, n_draws)).round().astype(int))


def held_out_draws(U, eta_draws, n_keep):
    """Predictors of rows the chain did not see, as :class:`LooDraws`: ``n_keep`` evenly
    spaced draws' ``mu`` with equal weights (nothing to leave out)."""
    keep = kept_draws(len(eta_draws), n_keep)
    mu = np.concatenate(list(_draw_chunks(U, eta_draws[keep])), axis=0)
    return LooDraws(mu.mean(axis=0), mu, np.full(mu.shape[:2], 1.0 / len(keep)))

