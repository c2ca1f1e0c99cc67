"""Several chains as modes: their stacking weights (Yao, Vehtari & Gelman 2022, JMLR).

A Gibbs chain of a topic model stays in the mode it found; several chains are several modes,
not one sample to pool.  Stacking scores each chain by how well it predicts every training
label left out: with ``lpd[i, c]`` the PSIS-LOO log predictive density of label ``i`` under
chain ``c`` (Vehtari, Gelman & Gabry 2017), the weights ``w`` on the simplex maximise

    sum_i log sum_c w_c exp(lpd[i, c]),

a concave objective (so its optimum is the one :func:`stacking_weights` finds).  Reported
beside them: the effective number of chains ``1 / sum_c w_c^2`` (1: one chain carries all
the weight; C: all weigh the same) and, per chain, the Pareto ``k`` counts that say where the
leave-one-out estimate itself cannot be trusted (``k > 0.7``).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy import optimize
from scipy.special import logsumexp

#: EM updates of the weights before the boundary is polished.
EM_ITERATIONS = 2000
#: Pareto k above which a PSIS-LOO term is unreliable (Vehtari et al. 2017 / 2024).
K_BAD = 0.7
#: ... and above which it is usable but worth a look.
K_OK = 0.5


def loo_pointwise(loglik):
    """``(lpd, k)``: PSIS-LOO log predictive density ``lpd`` (N,) and Pareto ``k`` (N,) of
    one chain's pointwise log-likelihood draws ``loglik`` (S draws, N observations)."""
    ll = np.asarray(loglik, dtype=np.float64)
    if ll.ndim != 2 or ll.shape[0] < 2:
        raise ValueError(f"loglik must be (draws >= 2, observations), got shape {ll.shape}")
    with warnings.catch_warnings():  # ArviZ's refactor notice and its k warnings (counted)
        warnings.simplefilter("ignore")
        import arviz as az

        log_w, k = az.psislw(-ll.T)  # (N, S) normalised log weights
    lpd = logsumexp(log_w + ll.T, axis=1)
    return lpd, np.asarray(k, dtype=np.float64)


def stacking_objective(w, lpd):
    """``sum_i log sum_c w_c exp(lpd[i, c])`` (``w`` on the simplex, ``lpd`` (N, C))."""
    lpd = np.asarray(lpd, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return float(logsumexp(lpd, axis=1, b=np.asarray(w, np.float64)[None, :]).sum())


def stacking_weights(lpd):
    """The stacking weights (C,) of ``lpd`` (N observations, C chains): the maximiser of
    :func:`stacking_objective` on the simplex.  The mixture-weight EM update
    ``w_c <- w_c mean_i(p_ic / sum_c' w_c' p_ic')`` (monotone, from equal weights) brings it
    near the optimum; SLSQP on the simplex with the exact gradient then places the weights
    that belong on the boundary there (the better of the two is returned; a weight below
    1e-8 is 0)."""
    lpd = np.asarray(lpd, dtype=np.float64)
    if lpd.ndim != 2 or lpd.shape[1] < 1 or not np.isfinite(lpd).all():
        raise ValueError("lpd must be a finite (observations, chains) array")
    C = lpd.shape[1]
    if C == 1:
        return np.ones(1)
    # exp(lpd - row max): the objective's terms at a common scale per observation
    E = np.exp(lpd - lpd.max(axis=1, keepdims=True))

    def value(w):
        return float(np.log(np.maximum(E @ w, 1e-300)).sum())

    w = np.full(C, 1.0 / C)
    for _ in range(EM_ITERATIONS):
        step = w * (E / (E @ w)[:, None]).mean(axis=0)
        done = np.abs(step - w).max() < 1e-12
        w = step / step.sum()
        if done:
            break

    def negative(v):
        mix = np.maximum(E @ v, 1e-300)
        return -np.log(mix).sum(), -(E / mix[:, None]).sum(axis=0)

    res = optimize.minimize(negative, w, jac=True, method="SLSQP", bounds=[(0.0, 1.0)] * C,
                            constraints=[{"type": "eq", "fun": lambda v: v.sum() - 1.0,
                                          "jac": lambda v: np.ones_like(v)}],
                            options={"ftol": 1e-14, "maxiter": 500})
    polished = np.clip(res.x, 0.0, None)
    if polished.sum() > 0:
        polished = polished / polished.sum()
        if value(polished) >= value(w):
            w = polished
    w[w < 1e-8] = 0.0
    return w / w.sum()


def effective_chains(weights) -> float:
    """``1 / sum_c w_c^2``: 1 when one chain carries all the weight, C when all weigh the same."""
    w = np.asarray(weights, dtype=np.float64)
    return float(1.0 / np.sum(w ** 2))


def pareto_k_counts(k) -> dict:
    """How many leave-one-out terms are good (``k <= 0.5``), ok (``<= 0.7``) and bad."""
    k = np.asarray(k, dtype=np.float64)
    return {"good": int(np.sum(k <= K_OK)), "ok": int(np.sum((k > K_OK) & (k <= K_BAD))),
            "bad": int(np.sum(~(k <= K_BAD)))}


def chain_stacking(logliks):
    """``{"weights", "effective_chains", "lpd", "pareto_k"}`` of the chains' pointwise
    log-likelihood draws ``logliks`` (a list, one (S_c, N) array per chain): PSIS-LOO per
    chain, then :func:`stacking_weights`; ``lpd`` is the summed elpd_loo of every chain and
    ``pareto_k`` the per-chain :func:`pareto_k_counts`."""
    per = [loo_pointwise(ll) for ll in logliks]
    lpd = np.stack([p[0] for p in per], axis=1)
    w = stacking_weights(lpd)
    return {"weights": w, "effective_chains": effective_chains(w),
            "elpd_loo": lpd.sum(axis=0), "stacked_elpd_loo": stacking_objective(w, lpd),
            "pareto_k": [pareto_k_counts(p[1]) for p in per]}
