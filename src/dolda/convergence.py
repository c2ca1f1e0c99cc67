"""Has the chain converged?  The summary ``DOLDA.fit`` logs at its end (``convergence_``).

Split R-hat and bulk ESS (Vehtari, Gelman, Simpson, Carpenter & Buerkner
2021, as computed by ArviZ) of

* the joint log-likelihood over the kept iterations (after the burn-in), and
* every coefficient of eta over the kept draws,

pooled over the chains (a single chain is split in halves, so a trend shows
as R-hat > 1).  The chain "looks converged" when R-hat of the log-likelihood
is at most :data:`RHAT_MAX`, its bulk ESS at least :data:`ESS_MIN`, and at
most :data:`COEF_SHARE_MAX` of the coefficients have R-hat above
:data:`RHAT_MAX` (a Horseshoe model has hundreds of coefficients near zero,
some of which mix slowly without changing any prediction).  These are
heuristics: they can miss non-convergence, never prove convergence.
"""

from __future__ import annotations

import numpy as np

#: Largest split R-hat taken as converged (1.01 is Vehtari et al.'s strict
#: value for final inference; short topic-model chains are judged at 1.05).
RHAT_MAX = 1.05
#: Smallest bulk ESS of the log-likelihood taken as enough.
ESS_MIN = 100
#: At most this many coefficients are diagnosed: those of largest posterior |mean|
#: (a model with word covariates has tens of thousands, mostly shrunk to zero).
MAX_COEFFICIENTS = 2000
#: Largest share of coefficients allowed above RHAT_MAX.
COEF_SHARE_MAX = 0.05


def _rhat_ess(draws):
    """Split R-hat and bulk ESS of ``draws`` (chain, draw, ...) -> two arrays of shape ``...``.

    ``draws`` are a few thousand coefficients at most (or the log-likelihood): converted
    to float64 whole."""
    import arviz as az

    draws = np.asarray(draws, dtype=np.float64)
    if draws.shape[0] == 1:  # ArviZ wants two chains: give it the two halves
        half = draws.shape[1] // 2
        draws = np.stack([draws[0, :half], draws[0, half:2 * half]])
    ds = az.convert_to_dataset({"x": draws})
    return (np.asarray(az.rhat(ds)["x"].values, dtype=float),
            np.asarray(az.ess(ds, method="bulk")["x"].values, dtype=float))


def chain_convergence(model) -> dict:
    """The convergence summary of a fitted DOLDA (see the module doc).

    Returns
    -------
    dict
        ``converged`` (bool), ``loglik_rhat``, ``loglik_ess``, ``coef_rhat_max``,
        ``coef_share_above`` (share of coefficients with R-hat > RHAT_MAX),
        ``coef_ess_min`` and ``message`` (one line, with what to do if not converged).
    """
    n_chains = int(model.n_chains_)
    ll = model.loglik_["total"].to_numpy().reshape(n_chains, -1)
    burn = ll.shape[1] - (len(model.eta_draws_) // n_chains) * int(model.get_params()["thin"])
    ll = ll[:, max(burn, 0):]
    ll = ll[:, np.all(np.isfinite(ll), axis=0)]
    eta = model.eta_draws_.reshape((n_chains, -1) + model.eta_draws_.shape[1:])
    if ll.shape[1] < 4 or eta.shape[1] < 4:
        return {"converged": False, "loglik_rhat": float("nan"), "loglik_ess": float("nan"),
                "coef_rhat_max": float("nan"), "coef_share_above": float("nan"),
                "coef_ess_min": float("nan"),
                "message": "too few kept draws to judge convergence: run more iterations"}
    ll_rhat, ll_ess = (float(v) for v in _rhat_ess(ll))
    flat = eta.reshape(eta.shape[:2] + (-1,))
    if flat.shape[2] > MAX_COEFFICIENTS:  # the coefficients that matter for predictions
        top = np.argsort(-np.abs(flat.mean(axis=(0, 1), dtype=np.float64)))[:MAX_COEFFICIENTS]
        flat = flat[:, :, np.sort(top)]
    rhat, ess = _rhat_ess(flat)
    finite = np.isfinite(rhat)
    share = float(np.mean(rhat[finite] > RHAT_MAX)) if finite.any() else 0.0
    out = {"loglik_rhat": ll_rhat, "loglik_ess": ll_ess,
           "coef_rhat_max": float(np.nanmax(rhat)) if finite.any() else float("nan"),
           "coef_share_above": share,
           "coef_ess_min": float(np.nanmin(ess)) if np.isfinite(ess).any() else float("nan")}
    out["converged"] = bool(ll_rhat <= RHAT_MAX and ll_ess >= ESS_MIN
                            and share <= COEF_SHARE_MAX)
    figures = (f"split R-hat of the log-likelihood {ll_rhat:.3f}, its ESS {ll_ess:.0f}; "
               f"{share:.0%} of the coefficients have R-hat > {RHAT_MAX}")
    if out["converged"]:
        out["message"] = f"the chain looks converged ({figures})"
    else:
        n_iter = int(model.n_iter_)
        out["message"] = (f"the chain has not converged ({figures}); run more iterations: "
                          f"fit with checkpoint=DIR, then fit(..., resume=DIR) with "
                          f"n_iter={2 * n_iter} (CLI: dolda fit ... --checkpoint DIR, then "
                          f"--resume DIR --iterations {2 * n_iter})")
    return out
