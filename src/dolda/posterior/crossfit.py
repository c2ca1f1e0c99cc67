"""The calibration map fitted on cross-fitted predictors: K chains, each on K - 1 folds.

``DOProbit(calibration_folds=K)``: the training rows are split into K folds stratified by
class; for each fold a chain runs on the other K - 1 folds, and the held-out fold's
predictors ``mu`` under that chain's draws (evenly spaced, equal weights) are out of sample
for every coefficient, not only for the columns a single row uses.  The map is fitted on the
pooled out-of-fold draws by :func:`dolda.posterior.calibration.select_stacking`, as the leave-one-out
map is on its importance-sampled draws, and applied with the full-data chain's draws.

Why: the leave-one-out map reuses the chain's draws, reweighted; a one-hot level seen in two
to five training rows is fitted to those rows and no reweighting of the draws leaves one of
them out, so the map learns that the predictors are more reliable than they are on new rows
(the films' metadata: test ECE 0.087 against 0.037 for logistic regression).  Measured in
``docs/CALIBRATION.md`` ("Cross-fitted map").

Columns that none of a fold chain's rows use (levels seen only in the held-out fold) have
coefficients the chain never learnt, drawn from the prior: they are left out of the held-out
rows' predictors (their prior mean, zero), as test rows' unseen levels are all-zero columns
and as the leave-one-out predictors leave out a row's own levels.
"""

from __future__ import annotations

import numbers

import numpy as np

from . import calibration

#: Smallest and largest number of folds.
MIN_FOLDS, MAX_FOLDS = 2, 20


def check_folds(value):
    """``calibration_folds``: None or an int in ``[MIN_FOLDS, MAX_FOLDS]``; returns it."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or not (
            MIN_FOLDS <= int(value) <= MAX_FOLDS):
        raise ValueError(f"calibration_folds must be None or an int in [{MIN_FOLDS}, "
                         f"{MAX_FOLDS}] (the number of extra chains), got {value!r}")
    return int(value)


def fold_seed(seed, n_folds):
    """Seed of the fold assignment of a chain with seed ``seed`` (independent of the chains'
    seeds, :func:`dolda.sampler.rng.chain_seed`)."""
    return int(np.random.SeedSequence([int(seed), 0xF01D, int(n_folds)])
               .generate_state(1, np.uint64)[0] >> np.uint64(1))


def stratified_folds(y_index, n_folds, seed):
    """Fold (0 .. n_folds - 1) of every row, (D,) int64, stratified by class.

    The rows are shuffled (``seed``), grouped by class (stable), and dealt to the folds in
    turn, the count running on across classes: fold sizes differ by at most one, a class of
    ``n`` rows has ``n // K`` or ``n // K + 1`` in each fold, and a class of at least two rows
    is in at least two folds, so every fold's chain sees it.
    """
    y = np.asarray(y_index, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    order = order[np.argsort(y[order], kind="stable")]
    fold = np.empty(len(y), dtype=np.int64)
    fold[order] = np.arange(len(y)) % n_folds
    return fold


def used_columns(U):
    """(P,) bool: columns of ``U`` with at least one non-zero value."""
    return calibration.column_nonzero_counts(U) > 0


def out_of_fold_mu(U_held, U_chain, eta_draws, n_keep):
    """``mu`` (s, D_held, L) of held-out rows under ``n_keep`` evenly spaced draws of a chain
    fitted on ``U_chain``; columns no chain row uses are left out (module docstring)."""
    draws = eta_draws[calibration.kept_draws(len(eta_draws), n_keep)]
    seen = used_columns(U_chain).astype(np.float64)
    return np.concatenate(list(calibration._draw_chunks(U_held, draws, keep=seen)), axis=0)


def pooled_draws(mu_by_fold, fold):
    """:class:`dolda.posterior.calibration.LooDraws` of all rows from each fold's out-of-fold ``mu``
    (``mu_by_fold[k]`` (s, rows of fold k, L), rows in increasing order), equal weights."""
    n_draws = mu_by_fold[0].shape[0]
    mu = np.empty((n_draws, len(fold), mu_by_fold[0].shape[2]))
    for k, block in enumerate(mu_by_fold):
        mu[:, np.flatnonzero(fold == k)] = block
    return calibration.LooDraws(mu.mean(axis=0), mu, np.full(mu.shape[:2], 1.0 / n_draws))


def check_fold_rows(n_rows, n_folds):
    """Raise ValueError (before any chain runs) when ``n_rows`` training rows cannot make
    ``n_folds`` non-empty folds each leaving at least two rows to its chain."""
    if n_folds is None:
        return
    if n_rows < n_folds or n_rows - -(-n_rows // n_folds) < 2:
        least = 4 if n_folds == 2 else n_folds
        raise ValueError(f"calibration_folds={n_folds} needs at least {least} "
                         f"training rows (every fold one, every fold's chain two), got "
                         f"{n_rows}; use fewer folds or calibration_folds=None")


def fold_chain_seed(seed, n_folds, k):
    """Seed of the chain on the rows outside fold ``k`` (of ``n_folds``) of a fit with seed
    ``seed``: independent of the full chain's and of the other folds'."""
    return int(np.random.SeedSequence([int(seed), 0xF01D, int(n_folds), int(k) + 1])
               .generate_state(1, np.uint64)[0] >> np.uint64(1))


def crossfit_stacking(U, y_index, n_classes, n_folds, seed, sample, log=None,
                      likelihood="ovr"):
    """The cross-fitted calibration map (L, L + 1) or (L, 2 L + 1) of training rows ``U``.

    ``sample(U_rows, y_rows, chain_seed)`` runs the model's chain(s) on some rows and
    returns their kept eta draws (S, L, P), with all ``n_classes`` classes.  Folds by
    :func:`stratified_folds` seeded by :func:`fold_seed`; the chains run one after the
    other, each fold's draws dropped once its rows' predictors (the map's ``n_keep`` evenly
    spaced draws, :func:`dolda.posterior.calibration.map_draw_count`) are computed; the map is
    :func:`dolda.posterior.calibration.select_stacking`'s on the pooled out-of-fold draws.
    """
    import scipy.sparse as sp

    y_index = np.asarray(y_index, dtype=np.int64)
    fold = stratified_folds(y_index, n_folds, fold_seed(seed, n_folds))
    n_keep = calibration.map_draw_count(U.shape[0], n_classes)
    if sp.issparse(U):
        U = sp.csr_matrix(U)
    blocks = []
    for k in range(n_folds):
        inside, held = np.flatnonzero(fold != k), np.flatnonzero(fold == k)
        U_in = U[inside]
        eta = sample(U_in, y_index[inside], fold_chain_seed(seed, n_folds, k))
        blocks.append(out_of_fold_mu(U[held], U_in, eta, n_keep))
        del eta, U_in
        if log is not None:
            log("calibration_folds: fold %d of %d done (%d rows held out)", k + 1, n_folds,
                len(held))
    return calibration.select_stacking(pooled_draws(blocks, fold), y_index, n_classes,
                                       likelihood=likelihood)
