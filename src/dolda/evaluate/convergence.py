"""Has the chain converged?  One verdict for the fit log, ``convergence_``, the report and a
loaded model: :func:`chain_convergence` computes it, everything else shows it.

Split R-hat and bulk ESS (Vehtari, Gelman, Simpson, Carpenter & Buerkner 2021; vectorised in
:mod:`dolda.interpret.report.convergence`) of what the fit reports:

* the predictions: the training labels' log predictive density at every kept draw (the sum
  over the training documents of ``training_loglik_``): does it drift?  Where a fit kept no
  pointwise log-likelihood (too many draws x documents, or a file written before it), the
  joint log-likelihood stands in.  The joint log-likelihood is always reported
  (``loglik_rhat``); its LDA part measures how the topics' fine structure moves, which no
  prediction or top-word list shows, and is not judged on its own;
* the *signal* quantities of what the fit reports (:func:`identified`: each class's level,
  the topic contrasts, the covariate and word coefficients), those whose 95% interval of the
  kept draws excludes zero (the :data:`MAX_COEFFICIENTS` of largest posterior |mean| when
  none does): have they mixed?  The raw intercept and topic coefficients are not judged:
  they move together along a direction the data cannot see.

pooled over the chains (a single chain is split in halves, so a trend shows as R-hat > 1).
The chain "looks converged" when the judged score's R-hat is at most :data:`RHAT_MAX`, at
most :data:`SHARE_MAX` of the signal coefficients have R-hat above :data:`RHAT_MAX` and at
most :data:`SHARE_MAX` have a bulk ESS below :data:`ESS_MIN`, with at least
:data:`MIN_KEPT_DRAWS` kept draws per chain.  The log-likelihood's ESS is reported, not
required: its mean is never used, only its drift matters, and a topic model's log-likelihood
is so autocorrelated that an ESS bar of 100 failed every chain shorter than about 200
kept draws.  A Horseshoe model has hundreds of coefficients pinned near zero
that mix slowly without changing any prediction: they are reported (``coef_share_above``),
not judged.  With several chains, the topics must also agree: when more than
:data:`SHARE_MAX` of the topics are not found again (their matched topic sharing 7 of their 10
top words) in 75% of the chains (:mod:`dolda.interpret.stability`), the chains are in
different modes and the
verdict is "not converged".  These are heuristics: they can miss non-convergence, never prove
convergence.

Across several chains the verdict also names the modes: the chains' stacking weights
(``chain_weights_``, :mod:`dolda.posterior.chain_stacking`) and their effective number.

The advice can be run as printed: it knows whether the fit wrote a checkpoint that
``resume`` can extend (:func:`checkpoint_of`); without one it says to refit with more
iterations and a checkpoint.  Where the estimate is many times the fit
(:data:`MAX_EXTENSION`), more iterations are a rate, not a remedy, and the advice is instead
what was measured to make the reported signals agree (:func:`measured_advice`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..utils.draws import BlockDraws, draw_mean
from .rhat import RHAT_MAX
#: Smallest bulk ESS wanted for a signal coefficient (Monte Carlo error of its posterior
#: mean at most 1 / sqrt(50) = 14% of its posterior standard deviation).
ESS_MIN = 50
#: Largest share of the signal coefficients allowed above RHAT_MAX or below ESS_MIN.
SHARE_MAX = 0.05
#: Fewer kept draws per chain than this: too short to judge (split halves of 10 draws).
MIN_KEPT_DRAWS = 20
#: At most this many coefficients are diagnosed: those of largest posterior |mean|.
MAX_COEFFICIENTS = 2000
#: Advice asking for more than this many times the fit's own iterations is flagged as a
#: rate, not a remedy: on the storm bug reports (defaults, seed 0) the estimate grew as the
#: chain ran (``recommended_iterations`` 53,500 after 3,000 iterations, 232,350 after
#: 20,000, still not converged): the slowest coefficients' ESS does not grow linearly with
#: the draws (``experiments/RESULTS.md``).
MAX_EXTENSION = 10
#: Former name of SHARE_MAX.
COEF_SHARE_MAX = SHARE_MAX

#: The keys of ``convergence_`` that are numbers (NaN where not computed).
NUMBERS = ("loglik_rhat", "loglik_ess", "score_rhat", "score_ess", "coef_rhat_max", "coef_share_above", "coef_ess_min",
           "signal_share_rhat_above", "signal_share_ess_below", "n_signal", "kept_draws",
           "n_chains", "n_iter", "more_iterations", "recommended_iterations")


def _round_up(n, step=50):
    return int(step * math.ceil(max(n, step) / step))


def _params(model) -> dict:
    """The model's options by their flat names (a DOLDA's groups read through)."""
    if hasattr(model, "_flat_params"):
        return model._flat_params()
    return model.get_params() if hasattr(model, "get_params") else {}


def checkpoint_of(model):
    """The checkpoint directory ``resume`` can extend this model from, or None: the model's
    ``checkpoint`` parameter when it holds a finished chain (``model.json``; chain 0's of a
    multi-chain fit)."""
    params = _params(model)
    path = params.get("checkpoint", getattr(model, "checkpoint", None))
    if not path:
        return None
    path = Path(path)
    if (path / "model.json").exists() or (path / "chain0" / "model.json").exists():
        return str(path)
    return None


def identified(draws, n_topics: int):
    """The draws of what a fit reports, in place of eta's columns (S, L, P), same layout:
    column 0 the class level ``intercept + mean_k eta_lk``, the topic columns the contrasts
    ``eta_lk - median_j eta_lj`` (:mod:`dolda.interpret.stability`), the covariates and words as
    they are.  The topic proportions sum to one, so the raw intercept and topic coefficients
    wander together along a line the data cannot see: judging them would call every chain
    unconverged for a drift no prediction or explanation shows."""
    if n_topics <= 0:
        return draws
    rest = draws.rest if isinstance(draws, BlockDraws) else np.asarray(draws)
    out = np.array(rest, dtype=np.float32, copy=True)
    topics = np.asarray(rest[..., -n_topics:], dtype=np.float64)
    out[..., 0] = rest[..., 0] + topics.mean(axis=-1)
    out[..., -n_topics:] = topics - np.median(topics, axis=-1, keepdims=True)
    if isinstance(draws, BlockDraws):
        return BlockDraws(out, draws.words, draws.start)
    return out


def _largest(draws, n):
    """(S, <= n) float32: the draws of the ``n`` coefficients (flattened over class and
    column, in that order) of largest posterior |mean|; all of them when there are fewer."""
    P = draws.shape[2]
    flat = np.abs(draw_mean(draws)).reshape(-1)
    pick = np.sort(np.argsort(-flat)[:n]) if flat.size > n else np.arange(flat.size)
    out = np.empty((len(draws), len(pick)), dtype=np.float32)
    for l in np.unique(pick // P):
        mine = pick // P == l
        out[:, mine] = draws[:, int(l), pick[mine] % P]
    return out


def _signal(flat, level=0.95):
    """(n,) bool: coefficients whose central ``level`` interval of the draws excludes 0."""
    q = (1 - level) / 2
    lo, hi = np.quantile(flat.reshape(-1, flat.shape[-1]), [q, 1 - q], axis=0)
    return (lo > 0) | (hi < 0)


def advice(converged, n_iter, more, checkpoint):
    """``(message_tail, sentences)``: what to run, as the library and the CLI spell it."""
    if converged:
        return "", []
    total = n_iter + more
    if checkpoint is not None:
        return (f"continue it: fit(..., resume={checkpoint!r}) with n_iter={total} "
                f"(CLI: the same dolda fit command with --resume {checkpoint} --iterations "
                f"{total})",
                [f"Run about {more} more iterations: continue this chain from its checkpoint "
                 f"with --resume {checkpoint} --iterations {total} (in Python: fit(..., "
                 f"resume={checkpoint!r}) with n_iter={total})."])
    refit = n_iter + 2 * more  # half of a new chain is burn-in
    return (f"refit with n_iter={refit} and checkpoint=DIR so that it can be extended "
            f"later (CLI: --iterations {refit} --checkpoint DIR); this fit wrote no "
            "checkpoint to resume",
            [f"Refit with about {refit} iterations and a checkpoint: --iterations {refit} "
             f"--checkpoint DIR (in Python: n_iter={refit}, checkpoint=DIR). This fit wrote "
             "no checkpoint, so it cannot be continued; with one, a later fit(..., "
             "resume=DIR) or --resume DIR extends it instead of starting again."])


def chain_convergence(model, level=0.95) -> dict:
    """The convergence verdict of a fitted DOLDA (see the module doc): a JSON-able dict.

    Returns
    -------
    dict
        ``converged`` (bool); ``verdict`` ("converged", "not converged" or "too short to
        judge"); the figures of :data:`NUMBERS` (``loglik_rhat``, ``loglik_ess``,
        ``signal_share_rhat_above``, ``signal_share_ess_below``, ``n_signal``,
        ``coef_rhat_max``, ``coef_share_above`` (share of the diagnosed coefficients with
        R-hat > RHAT_MAX), ``coef_ess_min``, ``kept_draws`` (per chain), ``n_chains``,
        ``n_iter``, ``more_iterations`` (0 when converged), ``recommended_iterations``);
        ``checkpoint`` (what ``resume`` can extend, or None); ``problems`` (clauses);
        ``summary`` (one line: verdict, problems, figures), ``message`` (the summary and
        what to do) and ``advice`` (sentences, the first the verdict).
    """
    from .rhat import bulk_ess, split_rhat

    n_chains = int(getattr(model, "n_chains_", 1))
    n_iter = int(model.n_iter_)
    phi = getattr(model, "phi_", None)
    draws = identified(model.eta_draws_, 0 if phi is None else int(phi.shape[0]))
    S = len(draws) // n_chains
    if isinstance(draws, BlockDraws):
        # the compact word block (dolda.utils.draws): only the diagnosed coefficients are
        # assembled, never the whole (S, L, P) float32 array
        eta = _largest(draws, MAX_COEFFICIENTS).reshape((n_chains, S, -1))
    else:
        eta = np.asarray(draws).reshape((n_chains, S, -1))
    params = _params(model)
    thin = int(params.get("thin", 1) or 1)
    ll = model.loglik_["total"].to_numpy().reshape(n_chains, -1)
    ll = ll[:, max(ll.shape[1] - S * thin, 0):]
    ll = ll[:, np.all(np.isfinite(ll), axis=0)]
    checkpoint = checkpoint_of(model)
    out = {"n_chains": n_chains, "n_iter": n_iter, "kept_draws": S, "checkpoint": checkpoint}
    nan = float("nan")
    if S < MIN_KEPT_DRAWS or ll.shape[1] < 4:
        more = _round_up(2 * MIN_KEPT_DRAWS * thin)
        out.update({k: nan for k in NUMBERS if k not in out})
        out.update(converged=False, verdict="too short to judge", more_iterations=more,
                   recommended_iterations=n_iter + more,
                   problems=[f"only {S} kept draws per chain (at least {MIN_KEPT_DRAWS} are "
                             "needed to judge)"])
    else:
        ll_rhat = float(split_rhat(ll[:, :, None])[0])
        ll_ess = float(bulk_ess(ll[:, :, None])[0])
        score = heldin_score(model, n_chains, S)
        score_rhat = score_ess = nan  # no pointwise log-likelihood: the joint one is judged
        if score is not None:
            score_rhat = float(split_rhat(score[:, :, None])[0])
            score_ess = float(bulk_ess(score[:, :, None])[0])
        judged_rhat = ll_rhat if score is None else score_rhat
        if eta.shape[2] > MAX_COEFFICIENTS:  # the coefficients that matter for predictions
            top = np.argsort(-np.abs(eta.mean(axis=(0, 1), dtype=np.float64)))
            eta = eta[:, :, np.sort(top[:MAX_COEFFICIENTS])]
        rhat, ess = split_rhat(eta), bulk_ess(eta)
        finite = np.isfinite(rhat)
        signal = _signal(eta, level) & finite
        judged = signal if signal.any() else finite
        sig_rhat, sig_ess = rhat[judged], ess[judged]
        share_rhat = float(np.mean(sig_rhat > RHAT_MAX)) if judged.any() else 0.0
        share_ess = float(np.mean(~(sig_ess >= ESS_MIN))) if judged.any() else 0.0
        problems = []
        if not np.isnan(judged_rhat) and judged_rhat > RHAT_MAX:
            problems.append(f"the log-likelihood still drifts (R-hat {judged_rhat:.3f})"
                            if score is None else "the training labels' predictive score "
                            f"still drifts (R-hat {judged_rhat:.3f})")
        what = "signal coefficients" if signal.any() else "largest coefficients"
        if share_rhat > SHARE_MAX:
            problems.append(f"{share_rhat:.0%} of the {int(judged.sum())} {what} have R-hat > "
                            f"{RHAT_MAX}")
        if share_ess > SHARE_MAX:
            problems.append(f"{share_ess:.0%} of the {int(judged.sum())} {what} have fewer "
                            f"than {ESS_MIN} effective draws")
        from ..interpret.stability import STABLE_SHARE, model_topic_recurrence

        recurrence = model_topic_recurrence(model)  # the chains' topics, matched
        if recurrence is not None:
            unstable = float(np.mean(recurrence < STABLE_SHARE))
            if unstable > SHARE_MAX:
                problems.append(f"{unstable:.0%} of the {len(recurrence)} topics are not "
                                f"found again in {STABLE_SHARE:.0%} of the chains (the chains "
                                "found different topics, and the pooled topics average them)")
        more = 0
        if problems:
            # ESS grows about linearly with the kept draws; a drifting chain needs at least
            # as many again
            factor = 1.0
            low = np.quantile(sig_ess[np.isfinite(sig_ess)], SHARE_MAX) \
                if np.isfinite(sig_ess).any() else nan
            if share_ess > SHARE_MAX and low > 0:
                factor = max(factor, ESS_MIN / low - 1.0)
            more = _round_up(factor * S * thin)
        out.update(
            converged=not problems, verdict="not converged" if problems else "converged",
            loglik_rhat=ll_rhat, loglik_ess=ll_ess, score_rhat=score_rhat,
            score_ess=score_ess,
            coef_rhat_max=float(np.nanmax(rhat)) if finite.any() else nan,
            coef_share_above=float(np.mean(rhat[finite] > RHAT_MAX)) if finite.any() else 0.0,
            coef_ess_min=float(np.nanmin(ess)) if np.isfinite(ess).any() else nan,
            signal_share_rhat_above=share_rhat, signal_share_ess_below=share_ess,
            n_signal=int(signal.sum()), more_iterations=more,
            recommended_iterations=n_iter + more, problems=problems)
    weights = getattr(model, "chain_weights_", None)
    if n_chains > 1 and weights is not None and len(weights) == n_chains:
        w = np.asarray(weights, dtype=np.float64)
        out["chain_weights"] = [float(v) for v in w]
        out["effective_chains"] = float(1.0 / np.sum(w ** 2))
    tail, steps = advice(out["converged"], n_iter, out["more_iterations"], checkpoint)
    if (out["verdict"] == "not converged"  # a chain too short to judge needs iterations
            and out["more_iterations"] > MAX_EXTENSION * n_iter):
        ratio = (n_iter + out["more_iterations"]) / max(n_iter, 1)
        tail, steps = measured_advice(n_chains, n_iter, ratio)
    figures = _figures(out)
    if out["converged"]:
        out["summary"] = out["message"] = f"the chain looks converged ({figures})"
        out["advice"] = ["Converged: the predictions are stable and the signal "
                         "coefficients mixed well; no more iterations are needed for the "
                         f"predictions and the signal topics shown here ({figures})."]
    else:
        head = ("too short to judge convergence" if out["verdict"] == "too short to judge"
                else "the chain has not converged")
        short = ("" if np.isnan(out["loglik_rhat"]) else
                 f"log-likelihood split R-hat {out['loglik_rhat']:.3f}, ESS "
                 f"{out['loglik_ess']:.0f}; {out['n_signal']} signal coefficients")
        if "chain_weights" in out:
            short += (f"; modes: the chains' stacking weights "
                      f"{'/'.join(f'{v:.2f}' for v in out['chain_weights'])} "
                      f"({out['effective_chains']:.1f} effective chains)")
        out["summary"] = f"{head} ({'; '.join(out['problems'] + [short][:bool(short)])})"
        out["message"] = f"{out['summary']}: {tail}"
        out["advice"] = [f"Not converged yet: {'; '.join(out['problems'])}."] + steps
    return out


def heldin_score(model, n_chains, S):
    """(C, S) float64: the training labels' log predictive density summed over the
    documents, at each kept draw of each chain (``training_loglik_``, (C * S, D)); None when
    the fit kept no pointwise log-likelihood of that shape."""
    pointwise = getattr(model, "training_loglik_", None)
    if pointwise is None or np.ndim(pointwise) != 2 or len(pointwise) != n_chains * S:
        return None
    total = np.asarray(pointwise, dtype=np.float64).sum(axis=1).reshape(n_chains, S)
    return total if np.all(np.isfinite(total)) else None


#: What was measured to make the reported signals agree across seeds, at the defaults (K = 20,
#: 500 iterations in all, the PLSA start from a random point, two seeds;
#: ``docs/decisions/chains-and-start.md``).
MEASURED_TWO_CHAINS = ("on three corpora (20 Newsgroups-5, storm, activemq), two chains of "
                       "half the iterations each, at the same cost, made the signal topics "
                       "agree more between seeds (per-class Jaccard 0.25-0.69 to 0.67-0.78) "
                       "and the signal words too (0.35-0.50 to 0.46-0.74), at a cost of up "
                       "to 0.012 accuracy and of topics that recur (90% to 70% on 20 "
                       "Newsgroups-5)")


def measured_advice(n_chains, n_iter, ratio):
    """``(message_tail, sentences)`` where the iterations estimate is ``ratio`` times the fit:
    no more iterations (a rate, not a remedy), but what was measured to help, if anything."""
    head = (f"more iterations alone are unlikely to settle it (the estimate is {ratio:.0f}x "
            "this fit, a rate rather than a remedy)")
    rate = (f"The iterations estimate is {ratio:.0f} times this fit's: the slowest "
            "coefficients barely move, and for such chains the estimate grows as the chain "
            "runs rather than being met.")
    if n_chains == 1:
        half = max(n_iter // 2, 1)
        run = (f"--chains 2 --iterations {half} (in Python: n_chains=2, n_iter={half})")
        return (f"{head}; measured to help: {run}",
                [rate, f"Measured to help instead: {run}. {MEASURED_TWO_CHAINS[0].upper()}"
                       f"{MEASURED_TWO_CHAINS[1:]}. The chains' stacking weights then show "
                       "whether they found different modes (docs/decisions/"
                       "chains-and-start.md)."])
    return (f"{head}; the signals that recur across the chains are the ones to trust",
            [rate, "The explanations show how often each signal recurs across the chains; "
                   "trust the ones found in most chains. No further remedy was measured to "
                   "help at this point (docs/decisions/chains-and-start.md)."])


def _figures(out):
    """The verdict's figures in one clause."""
    if np.isnan(out["loglik_rhat"]):
        return ""
    score = ("" if np.isnan(out.get("score_rhat", np.nan)) else
             f"predictive score split R-hat {out['score_rhat']:.3f}; ")
    return (f"{score}log-likelihood split R-hat {out['loglik_rhat']:.3f}, ESS "
            f"{out['loglik_ess']:.0f}; {out['n_signal']} signal coefficients, "
            f"{out['signal_share_rhat_above']:.0%} with R-hat > {RHAT_MAX}, "
            f"{out['signal_share_ess_below']:.0%} with ESS < {ESS_MIN}")


def to_json(summary):
    """``convergence_`` as model files store it: NaN as None (JSON has no NaN)."""
    if summary is None:
        return None
    return {k: (None if isinstance(v, float) and not np.isfinite(v) else v)
            for k, v in summary.items()}


def from_json(stored):
    """``convergence_`` of a model file (:func:`to_json`): None back to NaN."""
    if stored is None:
        return None
    # the reported_* figures of dolda.interpret.stability are numbers too
    return {k: (float("nan") if v is None and (k in NUMBERS or k.startswith("reported_"))
                else v) for k, v in stored.items()}
