"""One Gibbs chain of DOProbit on a design ``U`` and class columns ``y_index``.

:meth:`dolda.models.probit.estimator.DOProbit.fit` runs it on the training rows; the cross-fitted
calibration map (``dolda.posterior.crossfit``) runs it on the rows outside each fold, with the
model's number of classes even where a fold's rows lack one.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np
import scipy.sparse as sp

from ...sampler import do_posterior, gaussian
from ...sampler import probit_blocks as gibbs
from ...sampler.threads import using_threads
from ...utils.draws import new_draws


class ChainSettings(NamedTuple):
    """What a chain needs besides the data and the seed (checked by ``_check_params``)."""
    horseshoe: bool
    fit_intercept: bool
    variance: float
    n_iter: int
    burn_in: int
    thin: int
    eta_sampler: str      # "auto" or one of dolda.sampler.probit_blocks.ETA_SAMPLERS
    n_jobs: int
    progress: bool = False
    likelihood: str = "ovr"   # "ovr": the paper's Gibbs sampler; "do": dolda.sampler.do_posterior


class Chain(NamedTuple):
    """Kept draws (float32) and the trace of one chain."""
    eta: np.ndarray               # (S, L, P)
    tau: Optional[np.ndarray]     # (S, L), Horseshoe only
    lam: Optional[np.ndarray]     # (S, L, P - intercept), Horseshoe only
    loglik: np.ndarray            # (n_iter,)
    eta_sampler: str              # "auto" resolved; "mala" on the DO likelihood
    acceptance: Optional[float] = None  # likelihood="do": accepted share of MALA moves


def run_chain(U, y_index, n_classes, seed, settings):
    """Run one chain of ``settings.n_iter`` iterations from seed ``seed``; :class:`Chain`."""
    n_samples, n_columns = U.shape
    shrunk = np.ones(n_columns, dtype=bool)
    if settings.fit_intercept:
        shrunk[0] = False
    prior = gibbs.ProbitPrior(settings.horseshoe, shrunk, settings.variance)
    n_iter, n_jobs = settings.n_iter, settings.n_jobs

    keep = np.arange(settings.burn_in, n_iter)[::settings.thin]
    n_keep = len(keep)
    # the draws in float32 (dolda.utils.draws), the chain's state in float64
    eta_draws = new_draws((n_keep, n_classes, n_columns))
    tau_draws = new_draws((n_keep, n_classes)) if prior.horseshoe else None
    lam_draws = new_draws((n_keep, n_classes, n_columns)) if prior.horseshoe else None
    loglik = np.empty(n_iter)

    method = settings.eta_sampler
    if settings.likelihood == "do":
        method = "mala"
    elif method == "auto":
        method = gibbs.choose_eta_sampler(n_samples, n_columns, sp.issparse(U))
    gram, design = None, None
    if method == "cholesky":
        gram = U.T @ U
        gram = gram.toarray() if sp.issparse(gram) else gram
    elif method == "cg":
        design = gaussian.sparse_design(U)
    state = gibbs.initial_state(n_samples, n_classes, n_columns)
    iterations = range(n_iter)
    if settings.progress:
        from tqdm.auto import tqdm

        iterations = tqdm(iterations, desc="DOProbit", unit="it")
    slot, cache, accepted = 0, None, 0
    with using_threads(n_jobs):
        for it in iterations:
            if method == "mala":
                state, cache, moved = do_posterior.do_step(seed, it, state, U, y_index,
                                                           prior, cache)
                accepted += moved
            else:
                state = gibbs.gibbs_step(seed, it, state, U, gram, y_index, prior, n_jobs,
                                         eta_sampler=method, design=design)
            loglik[it] = gibbs.do_log_likelihood(U @ state.eta.T, y_index)
            if slot < n_keep and it == keep[slot]:
                eta_draws[slot] = state.eta
                if prior.horseshoe:
                    tau_draws[slot] = np.sqrt(state.tau2)
                    lam_draws[slot] = np.sqrt(state.lam2)
                slot += 1
    start = 1 if settings.fit_intercept else 0
    acceptance = (accepted / (n_iter * do_posterior.MALA_STEPS) if method == "mala"
                  else None)
    return Chain(eta_draws, tau_draws, lam_draws[:, :, start:] if prior.horseshoe else None,
                 loglik, method, acceptance)
