"""Convergence in plain language: the verdict of :func:`dolda.evaluate.convergence.chain_convergence`
(the same the fit logged and ``convergence_`` holds) with the facts and the table the report
shows (the split R-hat and bulk ESS it is computed with are in :mod:`dolda.evaluate.rhat`).

A Horseshoe fit has hundreds of coefficients pinned near zero; they mix slowly
and often show a high R-hat, yet they change no prediction.  The verdict is
therefore taken on what matters: the log-likelihood trace and the *signal*
coefficients (those whose credible interval excludes zero), with the share of
all coefficients above the R-hat threshold given as context.
"""

from __future__ import annotations

import numpy as np

from ...evaluate.convergence import ESS_MIN, RHAT_MAX
from ...evaluate.rhat import bulk_ess, split_rhat  # noqa: F401  (the report's table below; tests import them from here)

__all__ = ["RHAT_WARN", "ESS_TARGET", "convergence_summary"]

#: R-hat above this is flagged (:data:`dolda.evaluate.convergence.RHAT_MAX`).
RHAT_WARN = RHAT_MAX
#: Bulk ESS wanted for a signal coefficient (:data:`dolda.evaluate.convergence.ESS_MIN`).
ESS_TARGET = ESS_MIN


def convergence_summary(model, level=0.95):
    """The verdict of :func:`dolda.evaluate.convergence.chain_convergence` (the one the fit logged and
    ``convergence_`` holds), with the facts and the coefficient table the report shows.

    Returns
    -------
    dict
        ``verdict`` ("converged", "not converged" or "too short to judge"), ``advice``
        (list of sentences, the first the verdict), ``facts`` (list of sentences),
        ``more_iterations`` (0 when converged), ``table`` (DataFrame of the coefficients with
        the largest R-hat, signal coefficients first), ``loglik_rhat``, ``loglik_ess``,
        ``share_flagged`` (share of all coefficients with R-hat > RHAT_WARN), ``verdict_data``
        (the whole dict of ``chain_convergence``).
    """
    import pandas as pd

    from ...evaluate.convergence import ESS_MIN, MAX_COEFFICIENTS, SHARE_MAX, chain_convergence

    verdict = chain_convergence(model, level)
    n_chains = int(getattr(model, "n_chains_", 1))
    n_iter = int(model.n_iter_)
    draws = np.asarray(model.eta_draws_)
    S, L, P = draws.shape
    burn = n_iter - (S // n_chains) * int(getattr(model, "thin", 1) or 1)
    by_chain = draws.reshape(n_chains, S // n_chains, L, P)
    r_hat = split_rhat(by_chain)  # (L, P)
    ess = bulk_ess(by_chain)  # (L, P)
    lo, hi = model.coef_interval(level)
    signal = ((lo > 0) | (hi < 0)).to_numpy()
    coef = model.coef_.to_numpy()
    classes = [str(c) for c in model.classes_]
    names = list(model.feature_names_)
    bad_all = int(np.nansum(r_hat > RHAT_WARN))
    n_all = int(np.sum(np.isfinite(r_hat)))
    facts = [
        f"{n_chains} chain{'s' if n_chains > 1 else ''} of {n_iter} iterations, the first "
        f"{burn} discarded as burn-in, {S} kept draws.",
        f"Log-likelihood: split R-hat {verdict['loglik_rhat']:.3f}, effective sample size "
        f"{verdict['loglik_ess']:.0f} (its drift is judged, not its ESS).",
        f"{verdict['n_signal']} signal coefficients (their {level:.0%} interval excludes 0"
        + (f"; of the {MAX_COEFFICIENTS} largest" if L * P > MAX_COEFFICIENTS else "")
        + f"): {verdict['signal_share_rhat_above']:.0%} with R-hat > {RHAT_WARN}, "
        f"{verdict['signal_share_ess_below']:.0%} with bulk ESS < {ESS_MIN} (converged "
        f"wants at most {SHARE_MAX:.0%} of each).",
        f"All {n_all} coefficients: {bad_all} ({bad_all / max(n_all, 1):.0%}) with "
        f"R-hat > {RHAT_WARN}. Coefficients the Horseshoe shrinks to zero mix slowly and often "
        "show a high R-hat without changing any prediction; the verdict rests on the "
        "log-likelihood and the signal coefficients.",
    ]
    li, pi = np.meshgrid(np.arange(L), np.arange(P), indexing="ij")
    table = pd.DataFrame({"class": np.asarray(classes, dtype=object)[li.ravel()],
                          "feature": np.asarray(names, dtype=object)[pi.ravel()],
                          "mean": coef.ravel(), "r_hat": r_hat.ravel(),
                          "ess_bulk": ess.ravel(), "signal": signal.ravel()})
    worst = table.sort_values(["signal", "r_hat"], ascending=[False, False]).head(20)
    return {"verdict": verdict["verdict"], "advice": list(verdict["advice"]), "facts": facts,
            "more_iterations": verdict["more_iterations"],
            "table": worst.set_index(["class", "feature"]),
            "loglik_rhat": verdict["loglik_rhat"], "loglik_ess": verdict["loglik_ess"],
            "share_flagged": bad_all / max(n_all, 1), "verdict_data": verdict}
