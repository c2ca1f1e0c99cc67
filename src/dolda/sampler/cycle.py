"""The supervised z-step of DOLDA by cycle Metropolis-Hastings: O(1) + O(L) per proposal.

The target is the supervised conditional of :mod:`dolda.sampler.supervised`,

    p(z_{di} = k | .) ∝ phi_{k,w} (n_{dk}^{-i} + alpha_k) exp(g_{dk}^{-i}),

with ``g_k = eta_{.,k} . r^{-i} / N_d - S_kk / (2 N_d^2)``.  Following the cycle
proposals of LightLDA (Yuan et al. 2015), each token takes ``n_cycles`` pairs of
Metropolis-Hastings steps, each step leaving ``p`` invariant on its own:

* a *word* step, proposal ``q_w(k) ∝ alpha_k phi_{k,w}`` (the word-bucket alias
  table of the word, O(1); a word without a table is drawn by a linear scan, or,
  with ``scan_rare=False``, proposed from ``q(k) ∝ alpha_k`` with the ratio that
  proposal needs),
  accepted with ``min(1, [(n_{dk'} + alpha_k') / alpha_k'] / [(n_{dk0} + alpha_k0) /
  alpha_k0] * exp(g_k' - g_k0))``;
* a *document* step, proposal ``q_d(k) ∝ n_{dk}^{-i} + alpha_k`` drawn without
  building anything: with probability ``(N_d - 1) / (N_d - 1 + sum_k alpha_k)``
  the topic of a uniformly chosen *other* token of the document, otherwise a
  draw from ``alpha`` (uniform when symmetric, a binary search of the
  cumulative ``alpha`` otherwise); accepted with
  ``min(1, phi_{k',w} / phi_{k0,w} * exp(g_k' - g_k0))``.

Counts are ``n^{-i}`` (the token taken out) for every step of the token.  The
supervised difference ``g_k' - g_k0`` costs O(L) from the document's residual
``r`` (kept with the token in, as the MH sweep of :mod:`.supervised` keeps it),
so a token costs O(n_cycles L) and nothing in it is O(K) or O(K_d) (but the linear
scan of a word without a table).  The uniforms of a token's first step pair are drawn
``AHEAD`` tokens early, from the same stream, so that the alias entry and the entries of
Phi the pair will read are prefetched.

Every document draws from its own stream ``stream(seed, iteration*16+STEP_Z,
doc_offset + d)``: the chain does not depend on the number of threads or on the
sharding.  Exact (Dirichlet) Phi only: the per-word tables over the non-zeros of the
Pólya-urn Phi are not read here (use ``z_sampler="mh"`` with it).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .prefetch import AHEAD, prefetch, prefetch_whole_row
from .rng import STEP_Z, stream, uniform
from .supervised import (_move_residual, _squared_norms, document_topics,
                         log_factor_ratio, word_bucket_tables, word_proposal)

#: (word, document) step pairs per token.  Measured on a captured 20 Newsgroups state
#: (``benchmarks/results/z_cycle.md``): a second pair costs 2.0-2.4 times the sweep (its
#: uniforms are not drawn early, so nothing it reads is prefetched) for 1.2-1.4 times the
#: tokens moved, so one pair.
N_CYCLES = 1

#: The word step of a word without an alias table (fewer than ``ALIAS_MIN_TOKENS`` tokens:
#: 37% of the 20 Newsgroups tokens): True, the exact ``q_w`` by a linear scan of
#: ``alpha_k phi_{k,w}``, O(K), which dominates the sweep at K = 1000; False, the prior
#: proposal ``q(k) ∝ alpha_k``, O(1).  Both are exact.  The prior proposal makes the sweep
#: 2.5 times faster at K = 1000 but mixes worse per second: on 20 Newsgroups (2 seeds, same
#: wall time) its LDA log-likelihood stays below the scan's at K = 100 and K = 1000
#: (``benchmarks/results/z_cycle.md``), so the scan is the default.
SCAN_RARE = True


@njit(cache=True, inline="always")
def _accept(ratio, state):
    """Metropolis-Hastings test of a proposal with target-over-proposal ratio ``ratio``
    (a uniform is drawn only when ``ratio < 1``); returns ``(accepted, state)``."""
    if ratio >= 1.0:
        return True, state
    u, state = uniform(state)
    return u < ratio, state


@njit(cache=True, inline="always")
def _alpha_draw(t, alpha, cum_alpha, symmetric):
    """``k ~ alpha_k / sum(alpha)`` from ``t`` uniform on ``[0, sum(alpha))``."""
    n_topics = len(alpha)
    if symmetric:
        return min(int(t / alpha[0]), n_topics - 1)
    lo, hi = 0, n_topics - 1  # first k with cum_alpha[k] > t
    while lo < hi:
        mid = (lo + hi) // 2
        if cum_alpha[mid] > t:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, inline="always")
def _document_proposal(pos, start, n_d, u, z, others, alpha_sum, alpha, cum_alpha, symmetric):
    """``k ~ n_dk^{-i} + alpha_k`` from one uniform: the topic of another token of the
    document (token ``pos`` of it excluded) or a draw from alpha."""
    t = u * (others + alpha_sum)
    if t < others:
        j = min(int(t), n_d - 2)
        if j >= pos:
            j += 1
        return z[start + j]
    return _alpha_draw(t - others, alpha, cum_alpha, symmetric)


@njit(cache=True, inline="always")
def _prefetch_token(i, start, n_d, uw, ud, tokens, z, phi_wk, prob, alias, table_row, others,
                    alpha_sum, alpha, cum_alpha, symmetric, scan_rare):
    """Start loading what the first step pair of token ``i`` (uniforms ``uw``, ``ud``) reads."""
    w = tokens[i]
    row = table_row[w]
    n_topics = phi_wk.shape[1]
    if row >= 0:
        kk = min(int(uw * n_topics), n_topics - 1)
        prefetch(prob, (row, kk))
        prefetch(alias, (row, kk))
    elif scan_rare:
        prefetch_whole_row(phi_wk, w)
    else:
        prefetch(phi_wk, (w, _alpha_draw(uw * alpha_sum, alpha, cum_alpha, symmetric)))
    prefetch(phi_wk, (w, z[i]))
    kd = _document_proposal(i - start, start, n_d, ud, z, others, alpha_sum, alpha, cum_alpha,
                            symmetric)
    prefetch(phi_wk, (w, kd))


@njit(cache=True, parallel=True)
def _sweep_supervised_cycle(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, table_row,
                            alpha, eta_topics, base, seed, iteration, doc_offset=0,
                            n_cycles=N_CYCLES, scan_rare=SCAN_RARE):
    """One cycle-MH supervised sweep over all tokens, documents in parallel.

    Parameters
    ----------
    tokens, doc_ptr, z, ndk, phi_wk, eta_topics, base, seed, iteration, doc_offset
        As :func:`dolda.sampler.supervised.sweep_supervised` (``z`` and ``ndk`` updated in place).
    prob, alias : (R, K)      word-bucket alias tables of ``alpha_k phi_{k,w}`` (one row per
                              word with a table, :func:`dolda.sampler.alias.build_alias_tables`
                              with ``alpha``).
    mass : float64 (V,)       ``sum_k alpha_k phi_{k,w}``.
    table_row : int32 (V,)    table row of word ``w``, -1: none (linear-scan proposal).
    alpha : float64 (K,)      ``alpha_k``.
    n_cycles : int            (word, document) step pairs per token.
    scan_rare : bool          the word step of a word without a table: its exact ``q_w`` by
                              a linear scan (O(K)), or (False) ``q(k) ∝ alpha_k`` with the
                              ratio ``phi_k'w (n_k'+alpha_k')/alpha_k' / [phi_k0w (n_k0+alpha_k0)
                              /alpha_k0] exp(g_k'-g_k0)`` (O(1)).
    """
    n_docs = len(doc_ptr) - 1
    n_classes, n_topics = eta_topics.shape
    step = iteration * 16 + STEP_Z
    eta_kl = np.ascontiguousarray(eta_topics.T)  # topic-major: a topic's L values contiguous
    sq = _squared_norms(eta_kl)
    cum_alpha = np.cumsum(alpha)
    alpha_sum = cum_alpha[n_topics - 1]
    symmetric = True
    for k in range(n_topics):
        if alpha[k] != alpha[0]:
            symmetric = False
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        n_d = stop - start
        if n_d == 0:
            continue
        inv_n = 1.0 / n_d
        others = n_d - 1.0
        ndk_row = ndk[d]
        # the residual with every token in (the current one too); the topic list is not used
        r = document_topics(ndk_row, eta_kl, base[d], inv_n)[3]
        state = stream(seed, step, doc_offset + d)
        # the uniforms of the first (word, document) pair of a token are drawn AHEAD tokens
        # early, so what that pair will read (alias entry, Phi entries) can start loading
        ring_w = np.empty(AHEAD)
        ring_d = np.empty(AHEAD)
        for a in range(min(AHEAD, n_d)):
            ring_w[a], state = uniform(state)
            ring_d[a], state = uniform(state)
            _prefetch_token(start + a, start, n_d, ring_w[a], ring_d[a], tokens, z, phi_wk, prob,
                            alias, table_row, others, alpha_sum, alpha, cum_alpha, symmetric,
                            scan_rare)
        for i in range(start, stop):
            w = tokens[i]
            slot = (i - start) % AHEAD
            uw = ring_w[slot]
            ud = ring_d[slot]
            if i + AHEAD < stop:
                ring_w[slot], state = uniform(state)
                ring_d[slot], state = uniform(state)
                _prefetch_token(i + AHEAD, start, n_d, ring_w[slot], ring_d[slot], tokens, z,
                                phi_wk, prob, alias, table_row, others, alpha_sum, alpha,
                                cum_alpha, symmetric, scan_rare)
            k = z[i]
            ndk_row[k] -= 1
            for c in range(n_cycles):
                # word step: q_w(k) ∝ alpha_k phi_{k,w} (q(k) ∝ alpha_k for a word without
                # a table unless scan_rare)
                if c > 0:
                    uw, state = uniform(state)
                by_word = scan_rare or table_row[w] >= 0
                if by_word:
                    k1 = word_proposal(w, uw, phi_wk, prob, alias, mass, table_row, alpha)
                else:
                    k1 = _alpha_draw(uw * alpha_sum, alpha, cum_alpha, symmetric)
                if k1 != k:
                    ratio = ((ndk_row[k1] + alpha[k1]) * alpha[k]
                             / ((ndk_row[k] + alpha[k]) * alpha[k1])
                             * math.exp(log_factor_ratio(k, k1, eta_kl, r, sq, inv_n)))
                    if not by_word:
                        p0 = phi_wk[w, k]
                        ratio = ratio * phi_wk[w, k1] / p0 if p0 > 0.0 else np.inf
                    ok, state = _accept(ratio, state)
                    if ok:
                        _move_residual(k, k1, eta_kl, r, inv_n)
                        k = k1
                # document step: q_d(k) ∝ n_dk^{-i} + alpha_k
                if c > 0:
                    ud, state = uniform(state)
                k1 = _document_proposal(i - start, start, n_d, ud, z, others, alpha_sum, alpha,
                                        cum_alpha, symmetric)
                if k1 != k:
                    p0 = phi_wk[w, k]
                    if p0 <= 0.0:  # the current topic has no mass: any move is accepted
                        ok = True
                    else:
                        ratio = (phi_wk[w, k1] / p0
                                 * math.exp(log_factor_ratio(k, k1, eta_kl, r, sq, inv_n)))
                        ok, state = _accept(ratio, state)
                    if ok:
                        _move_residual(k, k1, eta_kl, r, inv_n)
                        k = k1
            z[i] = k
            ndk_row[k] += 1


def sweep_supervised_cycle(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, table_row, alpha,
                           eta_topics, base, seed, iteration, doc_offset=0, n_cycles=N_CYCLES,
                           scan_rare=SCAN_RARE):
    """:func:`_sweep_supervised_cycle` from the plain alias tables of ``phi_{.,w}``
    (:func:`dolda.sampler.alias.build_alias_tables` without alpha) and ``alpha`` a float or
    float (K,): the word-bucket tables are derived here (as
    :func:`dolda.sampler.supervised.sweep_supervised_mh` does)."""
    alpha, prob, alias, mass = word_bucket_tables(phi_wk, prob, alias, mass, table_row, alpha)
    _sweep_supervised_cycle(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, table_row, alpha,
                            eta_topics, base, seed, iteration, doc_offset, n_cycles, scan_rare)
