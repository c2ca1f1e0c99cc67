"""Extending a finished DOLDA chain: ``fit(..., resume=checkpoint)`` with a larger ``n_iter``.

Every random draw of the chain is keyed by ``(seed, iteration, block)``
(:mod:`dolda.sampler.rng`), so a chain saved at its last iteration and
continued to ``n_iter`` iterations ends exactly where one run of ``n_iter``
iterations with the same seed ends -- provided the kept draws of the longer
run can be taken from the saved ones:

* the longer run's burn-in (half of the new ``n_iter`` by default) is not
  shorter than the saved run's and differs from it by a multiple of ``thin``
  (the same ``thin``), so its kept iterations before the old end were kept;
* its Phi average (the last ``phi_draws`` iterations) lies wholly after the
  old end (only the sum of the old ones is saved): extend by at least
  ``phi_draws`` iterations.
"""

from __future__ import annotations

import numpy as np

from ...sampler import phi_mean
from ...utils.validation import check_burn_in
from .params import check_params


def _old_schedule(meta):
    params = meta.get("params", {})
    n_old = int(meta["n_iter"])
    thin = int(params.get("thin") or 1)
    return n_old, check_burn_in(params.get("burn_in"), n_old), thin


def check_extension(meta, n_iter: int, model) -> None:
    """Raise a one-line ValueError unless the checkpoint can be extended to ``n_iter``."""
    n_old, old_burn, old_thin = _old_schedule(meta)
    if int(meta.get("next_iteration", -1)) != n_old:
        raise ValueError(f"the checkpoint was written by an interrupted fit with n_iter={n_old}: "
                         f"resume it with n_iter={n_old} first, then extend")
    if n_iter < n_old:
        raise ValueError(f"the checkpoint holds a finished chain of {n_old} iterations; "
                         f"n_iter={n_iter} would shorten it (extend with n_iter > {n_old})")
    p = check_params(model)
    burn, thin, phi_draws = p["burn_in"], p["thin"], p["phi_draws"]
    if thin != old_thin or burn < old_burn or (burn - old_burn) % thin:
        raise ValueError(f"cannot extend: the longer run keeps draws from iteration {burn} "
                         f"(thin {thin}) but the saved one kept them from {old_burn} "
                         f"(thin {old_thin}); use burn_in >= {old_burn} with the same thin")
    if max(burn, n_iter - phi_draws) < n_old:
        raise ValueError(f"cannot extend by {n_iter - n_old} iterations: the topics are "
                         f"averaged over the last phi_draws={phi_draws}; extend to "
                         f"n_iter >= {n_old + phi_draws}")


def extend_draws(meta, arr, kept, n_iter, burn_in, thin):
    """The saved draws ``kept`` (:class:`dolda.models.dolda.kept.KeptDraws`) laid out for
    the longer run.

    Returns
    -------
    kept, loglik, phi_acc
        Kept draws of the new schedule (those before the old end copied from
        the checkpoint; the word columns' lambda sums empty, their window lying after
        the old end as Phi's does), the log-likelihood trace padded with NaN to
        ``n_iter`` and an empty running mean of Phi
        (:class:`dolda.sampler.phi_mean.PhiMean`; its window starts after the old end).
    """
    n_old, old_burn, _ = _old_schedule(meta)
    old_keep = np.arange(old_burn, n_old)[::thin]
    keep = np.arange(burn_in, n_iter)[::thin]
    reuse = keep[keep < n_old]
    src = np.searchsorted(old_keep, reuse)
    loglik = np.full((n_iter, 2), np.nan)
    loglik[:n_old] = arr["loglik"]
    return (kept.relayout(src, len(keep)), loglik,
            phi_mean.empty(len(arr["phi_mean_ptr"]) - 1, len(arr["phi_mean_topic"])))
