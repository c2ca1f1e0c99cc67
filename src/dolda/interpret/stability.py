"""What a fit identifies and what repeats: topic contrasts, topic recurrence across chains,
cross-chain R-hat and ESS of the reported quantities, signals that repeat.

The topic proportions of a document sum to one, so the likelihood cannot tell
``(intercept + c, every topic coefficient - c)`` from the original for any ``c``: a single
topic coefficient is not identified, only its position relative to the class's other topic
coefficients is.  :func:`topic_contrasts` reports ``eta_lk - median_j eta_lj`` (per draw),
which that direction does not move (the median of ``x - c`` is the median of ``x`` minus
``c``), and which stays near zero for the many topics a Horseshoe keeps at the class's
baseline (a mean would put every other topic below a strong signal).
:func:`class_levels` is the identified level, ``intercept + mean_k eta_lk`` (the score of a
document whose topics are uniform, covariates at zero).

Topics are matched across chains and seeds by the top words a reader sees (Hungarian
assignment on the number of shared top-10 words, :func:`dolda.evaluate.diagnostics.match_topics`,
as stm's ``multiSTM`` and Greene et al. 2014 judge topic sameness); a topic *recurs* in a chain
when its matched topic shares at least :data:`RECUR_TOP_WORDS` of its 10 top words with chain
0's.  The Hellinger distance of the whole distributions (dominated by the tail no reader sees)
is kept as a secondary figure.  A topic found in fewer than
:data:`STABLE_SHARE` of the chains is unstable and :meth:`dolda.DOLDA.signal_topics` does not
offer it as a signal.  These are functions of arrays (and of a fitted model) so that the
convergence verdict (:mod:`dolda.evaluate.convergence`) and the experiments can call them.
"""

from __future__ import annotations

import numpy as np

#: Two topics are "the same" when they share at least this many of their 10 top words.
RECUR_TOP_WORDS = 7
#: The secondary figure: two topics whose whole distributions are this close (Hellinger).
REPRODUCE_HELLINGER = 0.3
#: A topic is stable when it recurs in at least this share of the chains (2 chains: both).
STABLE_SHARE = 0.75


def topic_columns(n_columns: int, n_topics: int) -> slice:
    """The topic columns of eta: the last ``n_topics`` of ``n_columns``."""
    return slice(n_columns - n_topics, n_columns)


def topic_contrasts(eta_draws, n_topics: int):
    """``eta_lk - median_j eta_lj`` for every draw: (S, L, K) float64, identified."""
    t = np.asarray(eta_draws[..., topic_columns(eta_draws.shape[-1], n_topics)],
                   dtype=np.float64)
    return t - np.median(t, axis=-1, keepdims=True)


def class_levels(eta_draws, n_topics: int):
    """``intercept + mean_k eta_lk`` for every draw: (S, L) float64, identified."""
    t = np.asarray(eta_draws[..., topic_columns(eta_draws.shape[-1], n_topics)],
                   dtype=np.float64)
    return np.asarray(eta_draws[..., 0], dtype=np.float64) + t.mean(axis=-1)


def intervals(draws, level=0.95):
    """Equal-tailed ``level`` intervals over the first axis: (lower, upper)."""
    q = (1 - level) / 2
    lo, hi = np.quantile(draws, [q, 1 - q], axis=0)
    return lo, hi


def excludes_zero(draws, level=0.95):
    """Whether the ``level`` interval of each quantity (over axis 0) excludes zero."""
    lo, hi = intervals(draws, level)
    return (lo > 0) | (hi < 0)


def matched_hellinger(phi_ref, phi):
    """Hungarian matching of ``phi``'s topics to ``phi_ref``'s: ``(perm, distances (K,))``,
    ``phi[perm[k]]`` matched to ``phi_ref[k]`` at Hellinger distance ``distances[k]``."""
    from ..evaluate.diagnostics import align_topics, hellinger

    perm = align_topics(phi_ref, phi)
    dist = hellinger(np.asarray(phi_ref, np.float64), np.asarray(phi, np.float64)[perm])
    return perm, np.diag(dist).copy()


def reproduced_share(distances, threshold=REPRODUCE_HELLINGER) -> float:
    """Share of matched topics closer than ``threshold``."""
    return float(np.mean(np.asarray(distances) < threshold))


def topic_recurrence(distances, threshold=REPRODUCE_HELLINGER):
    """Share of chains in which each of chain 0's topics recurs: (K,) from the (C, K)
    matched distances (row 0: chain 0 itself, zeros)."""
    return np.mean(np.asarray(distances) < threshold, axis=0)


def shared_word_recurrence(shared, threshold=RECUR_TOP_WORDS):
    """Share of chains in which each of chain 0's topics recurs: (K,) from the (C, K) counts
    of top words each chain's matched topic shares with chain 0's (row 0: chain 0 itself)."""
    return np.mean(np.asarray(shared) >= threshold, axis=0)


def model_topic_recurrence(model):
    """(K,) share of the fit's chains in which each topic recurs (by its top words), or None
    with one chain (or a model that kept no match)."""
    if int(getattr(model, "n_chains_", 1)) < 2:
        return None
    shared = getattr(model, "topic_shared_words_", None)
    if shared is not None:
        return shared_word_recurrence(shared)
    dist = getattr(model, "topic_hellinger_", None)
    return None if dist is None else topic_recurrence(dist)


def unstable_topic_share(distances) -> float:
    """Share of chain 0's topics that recur in fewer than :data:`STABLE_SHARE` of the chains,
    from the (C, K) matched distances (:func:`topic_recurrence`)."""
    return float(np.mean(topic_recurrence(distances) < STABLE_SHARE))


def by_chain(draws, n_chains: int):
    """Pooled draws (C * S, ...) chain after chain -> (C, S, ...)."""
    draws = np.asarray(draws)
    return draws.reshape((int(n_chains), -1) + draws.shape[1:])


def rhat_ess(draws_by_chain):
    """Rank-normalised split R-hat and bulk ESS of (C, S, ...) draws -> two arrays of shape
    ``...`` (:mod:`dolda.evaluate.rhat`, the statistics of every verdict; each chain is split in
    halves, so one chain is judged too)."""
    from ..evaluate.rhat import bulk_ess, split_rhat

    return split_rhat(draws_by_chain), bulk_ess(draws_by_chain)


def chain_signals(eta_draws, n_topics: int, n_chains: int, level=0.95):
    """Signal flags of every chain on its own draws: bool (C, L, K) on the topic contrasts."""
    # the topic columns only (a compact word block is never assembled whole)
    per = by_chain(eta_draws[..., topic_columns(eta_draws.shape[-1], n_topics)], n_chains)
    return np.stack([excludes_zero(topic_contrasts(d, n_topics), level) for d in per])


def column_repeats(eta_draws, label_index: int, columns, n_chains: int, level=0.95):
    """Share of the chains in which each of ``columns`` (of class ``label_index``) is a
    signal on that chain's own draws (its ``level`` interval excludes zero): float (m,).
    Only those columns are read (a compact word block is never assembled whole)."""
    columns = np.asarray(columns, dtype=np.intp)
    if columns.size == 0:
        return np.zeros(0)
    draws = np.asarray(eta_draws[:, int(label_index), columns], dtype=np.float64)
    return np.mean([excludes_zero(d, level) for d in by_chain(draws, n_chains)], axis=0)


def signal_stability(model, level=0.95):
    """Per (class, topic) what is reported and how often it repeats across the chains.

    Returns a DataFrame indexed by (class, topic name) with ``effect`` (posterior mean of
    the topic contrast), ``lower``, ``upper``, ``signal`` (pooled interval excludes 0),
    ``repeats`` (share of chains where the topic is a signal on that chain's own draws),
    ``recurrence`` (share of chains in which the topic is found, NaN with one chain),
    ``stable`` (recurrence >= STABLE_SHARE, True with one chain), ``rhat`` and ``ess``
    of the contrast across chains (split halves with one chain).
    """
    import pandas as pd

    K = int(model.phi_.shape[0])
    C = int(model.n_chains_)
    eff = topic_contrasts(model.eta_draws_, K)
    lo, hi = intervals(eff, level)
    sig = (lo > 0) | (hi < 0)
    repeats = chain_signals(model.eta_draws_, K, C, level).mean(axis=0)
    rec = model_topic_recurrence(model)
    stable = np.ones(K, bool) if rec is None else rec >= STABLE_SHARE
    rec = np.full(K, np.nan) if rec is None else rec
    rhat, ess = rhat_ess(by_chain(eff, C))
    names = [f"topic {k}" for k in range(K)]
    rows = []
    for l, label in enumerate(model.classes_):
        for k in range(K):
            rows.append((label, names[k], float(eff[:, l, k].mean()), float(lo[l, k]),
                         float(hi[l, k]), bool(sig[l, k]), float(repeats[l, k]), float(rec[k]),
                         bool(stable[k]), float(rhat[l, k]), float(ess[l, k])))
    return pd.DataFrame(rows, columns=["class", "topic", "effect", "lower", "upper", "signal",
                                       "repeats", "recurrence", "stable", "rhat", "ess"]
                        ).set_index(["class", "topic"])


def _nan_extreme(reduce, values) -> float:
    """``reduce`` (nanmax, nanmin) of ``values``; NaN, without numpy's "All-NaN slice"
    warning, when no value is finite (a chain too short for R-hat and ESS)."""
    values = np.asarray(values, dtype=np.float64)
    if not np.isfinite(values).any():
        return float("nan")
    return float(reduce(values))


def reported_convergence(model, level=0.95) -> dict:
    """R-hat and ESS across chains of what is reported: the class levels and the topic
    contrasts of the signal topics (all contrasts when there is no signal).  A dict with
    ``level_rhat_max``, ``level_ess_min``, ``signal_rhat_max``, ``signal_ess_min``,
    ``signal_share_above`` (share of signal contrasts with R-hat > 1.05), ``n_signals``,
    ``unstable_topics`` (share of topics that do not recur in STABLE_SHARE of the chains;
    NaN with one chain)."""
    from ..evaluate.rhat import RHAT_MAX

    K, C = int(model.phi_.shape[0]), int(model.n_chains_)
    lv_rhat, lv_ess = rhat_ess(by_chain(class_levels(model.eta_draws_, K), C))
    table = signal_stability(model, level)
    chosen = table[table["signal"] & table["stable"]]
    if chosen.empty:
        chosen = table
    rec = model_topic_recurrence(model)
    return {"level_rhat_max": _nan_extreme(np.nanmax, lv_rhat),
            "level_ess_min": _nan_extreme(np.nanmin, lv_ess),
            "signal_rhat_max": float(chosen["rhat"].max()),
            "signal_ess_min": float(chosen["ess"].min()),
            "signal_share_above": float(np.mean(chosen["rhat"] > RHAT_MAX)),
            "n_signals": int((table["signal"] & table["stable"]).sum()),
            "unstable_topics": (float("nan") if rec is None
                                else float(np.mean(rec < STABLE_SHARE)))}
