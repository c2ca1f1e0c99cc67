"""Per-token topic frequencies of new documents, for word-level explanations.

The prediction sweep of paper section 3.3 draws the topic indicators of a new
document with Phi fixed and no supervision,
``p(z_i = k) ∝ phibar_{k,w_i} (n_{d,k}^{-i} + alpha_k)``, and averages the
empirical proportions ``zbar_d = n_{d,.} / N_d`` over the sweeps after a
burn-in.  :func:`token_topic_frequencies` runs the same sweep and keeps, for
every token ``i``, an estimate of ``P(z_i = k)``: by default the average over the
kept sweeps of the conditional ``p(z_i = . | z_-i)`` the token was drawn from
(Rao-Blackwellised), else the share of kept sweeps in which ``z_i = k``.  Their
mean over the tokens of a document is exactly the averaged ``zbar_d`` of the same
estimator, so a class score ``u_d . eta_l`` splits exactly into one term per
token, ``(1/N_d) sum_k P(z_i = k) eta_{l,k}``.

Document ``d`` draws from the stream ``stream(seed, STEP_PREDICT, d)``, the
stream of :func:`dolda.sampler.lda.predict_topic_proportions`; the kernel is
self-contained so that it does not change when the training sweeps do.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..utils.validation import check_doc_ptr, check_phi_columns
from .alpha import as_alpha
from .predict import local_topics
from .rng import STEP_PREDICT, stream, uniform

__all__ = ["token_topic_frequencies"]


@njit(cache=True, inline="always")
def _draw(phi_row, ndk_row, alpha, cum, state):
    """One draw from ``p(k) ∝ phi_row[k] (ndk_row[k] + alpha[k])``; returns ``(k, state)``."""
    n_topics = len(cum)
    total = 0.0
    for k in range(n_topics):
        total += phi_row[k] * (ndk_row[k] + alpha[k])
        cum[k] = total
    u, state = uniform(state)
    target = u * total
    k = 0
    while k < n_topics - 1 and cum[k] <= target:
        k += 1
    return k, state


@njit(cache=True, parallel=True)
def _token_frequencies(tokens, doc_ptr, phi_wk, alpha, n_sweeps, burn_in, seed, out,
                       rao_blackwell):
    n_topics = phi_wk.shape[1]
    n_docs = len(doc_ptr) - 1
    kept = n_sweeps - burn_in
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        n_d = stop - start
        if n_d == 0:
            continue
        state = stream(seed, STEP_PREDICT, d)
        ndk_row = np.zeros(n_topics, np.int32)
        cum = np.empty(n_topics)
        z = np.empty(n_d, np.int32)
        for i in range(n_d):  # sequential initialisation from the same conditional
            k, state = _draw(phi_wk[tokens[start + i]], ndk_row, alpha, cum, state)
            z[i] = k
            ndk_row[k] += 1
        for s in range(n_sweeps):
            for i in range(n_d):
                ndk_row[z[i]] -= 1
                k, state = _draw(phi_wk[tokens[start + i]], ndk_row, alpha, cum, state)
                z[i] = k
                ndk_row[k] += 1
                if s >= burn_in:
                    if rao_blackwell:  # the conditional the token was drawn from
                        inv = 1.0 / cum[n_topics - 1]
                        below = 0.0
                        for j in range(n_topics):
                            out[start + i, j] += (cum[j] - below) * inv
                            below = cum[j]
                    else:
                        out[start + i, k] += 1.0
        for i in range(n_d):
            for k in range(n_topics):
                out[start + i, k] /= kept


def token_topic_frequencies(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed,
                            rao_blackwell=True):
    """Estimates of ``P(z_i = k)`` from the kept prediction sweeps.

    Parameters
    ----------
    tokens : int (N,), doc_ptr : int (D+1,)
        The documents (CSR, as in :class:`dolda.design.corpus.Corpus`).
    phi : float (K, V)
        ``Phi`` held fixed (the model's ``phi_``).
    alpha : float or float (K,)
        The Dirichlet prior of theta (symmetric or per topic).
    n_sweeps, burn_in : int
        ``0 <= burn_in < n_sweeps``; sweeps ``burn_in .. n_sweeps-1`` are kept.
    seed : int
    rao_blackwell : bool, default=True
        Average the conditional ``p(z_i = . | z_-i)`` each kept draw of token ``i`` came
        from (True: the same draws, a less noisy estimate), or the share of kept
        sweeps in which ``z_i = k`` (False).

    Returns
    -------
    float64 (N, K)
        Row ``i``: the estimate of ``P(z_i = k)``; rows sum to 1.  The mean of
        the rows of document ``d`` is the averaged ``zbar_d`` of the sweep (its
        Rao-Blackwellised estimate by default, as
        :func:`dolda.sampler.predict.predict_topic_proportions`).
    """
    n_sweeps, burn_in = int(n_sweeps), int(burn_in)
    if not 0 <= burn_in < n_sweeps:
        raise ValueError(f"need 0 <= burn_in < n_sweeps, got burn_in={burn_in}, "
                         f"n_sweeps={n_sweeps}")
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    doc_ptr = check_doc_ptr(doc_ptr, len(tokens))
    phi = np.asarray(phi)
    check_phi_columns(phi, tokens)  # the kernel indexes Phi by word id unchecked
    # only the batch's words, in Phi's own float type (a float32 value widens exactly in the
    # kernel's float64 arithmetic): no V x K float64 copy of a fitted model's phi_ per call
    local, phi_wk = local_topics(tokens, phi)
    out = np.zeros((len(tokens), phi.shape[0]), np.float64)
    _token_frequencies(local, doc_ptr, phi_wk, as_alpha(alpha, phi.shape[0]), n_sweeps,
                       burn_in, np.int64(seed), out, bool(rao_blackwell))
    return out
