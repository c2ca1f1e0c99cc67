"""The supervised z-step of DOLDA (paper section 3.2, DESIGN.md section 2).

With Phi sampled, documents are independent given ``(Phi, eta, a)``, and

    p(z_{di} = k | .) ∝ phi_{k,w} (n_{dk}^{-i} + alpha_k) exp(g_{dk}^{-i}),
    g_{dk}^{-i} = (1/N_d) sum_l eta_{lk} r_{dl}^{-i} - (1/(2 N_d^2)) sum_l eta_{lk}^2,
    r_{dl}^{-i} = a_{dl} - mu_{dl}^{-i}.

Caching: with ``S = eta_topics^T eta_topics`` (K x K, once per iteration) and
``h_{dk} = sum_l eta_{lk} r_{dl}`` (once per document), removing a token of
topic ``k0`` adds ``S[:, k0] / N_d`` to ``h`` and adding it back with topic
``k1`` subtracts ``S[:, k1] / N_d``: O(K) per token, no O(K L) dot products.
The factors ``exp(g_k)`` themselves are kept as products, ``exp(S_jk / N_d^2)``
being computed once per document and topic met, so the exact sweep needs no
``exp`` per token (log space is kept for the rare documents too short for
the products to stay well scaled; see :func:`sweep_supervised`).

Two kernels share this conditional:

* :func:`sweep_supervised` -- exact Gibbs draw from the full conditional,
  O(K) per token.
* :func:`sweep_supervised_mh` -- for large K: a Metropolis-Hastings step whose
  proposal is the LDA part ``q(k) ∝ phi_{k,w} (n_{dk}^{-i} + alpha_k)``, drawn
  sparsely (an alias table of ``alpha_k phi_{k,w}`` per word plus the
  document's non-zero topics), accepted with ``exp(g_{k'} - g_{k0})``.  The
  residual ``r_d`` is kept instead of ``h``, so ``g_k`` costs O(L) on demand
  and a token costs O(K_d + L) instead of O(K).

Every document draws from its own stream ``stream(seed, iteration*16+STEP_Z, d)``
(``d`` the global document index, see ``doc_offset``): the result does not
depend on the number of threads nor on the sharding of the documents.

``alpha`` is a float64 array (K,) in the compiled kernels (``_sweep_*``); the
public wrappers of the same names without underscore also take a float.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .alias import build_alias_tables
from .alpha import as_alpha, is_symmetric
from .prefetch import AHEAD, prefetch, prefetch_row, prefetch_whole_row
from .rng import STEP_Z, stream, uniform
from .sweeps import WEIGHT_BLOCK, block_totals, search_cumulative, search_weights


@njit(cache=True)
def document_residual(d, ndk, eta_topics, base, inv_n, r):
    """``r_{dl} = base_{dl} - (1/N_d) sum_k eta_{lk} n_{dk}`` into ``r`` (L,)."""
    n_classes, n_topics = eta_topics.shape
    for l in range(n_classes):
        acc = 0.0
        for k in range(n_topics):
            acc += eta_topics[l, k] * ndk[d, k]
        r[l] = base[d, l] - acc * inv_n


#: The multiplicative cache of :func:`sweep_supervised` is used for a document
#: when its supervised log-factors ``g_k`` can move by at most this much from
#: their values at the start of the document (bound: ``3 max_k S_kk / N_d``);
#: ``exp`` of the shifts then neither overflows nor loses relative precision.
CACHE_MAX_SHIFT = 30.0


@njit(cache=True)
def _document_exact(d, start, stop, tokens, z, ndk, phi_wk, alpha, gram_topics, inv_n, h,
                    half_diag, state, record, recording):
    """Supervised sweep of one document in log space: K ``exp`` per token (any N_d, any eta)."""
    n_topics = len(h)
    g = np.empty(n_topics)
    cum = np.empty(n_topics)
    for i in range(start, stop):
        w = tokens[i]
        if i + AHEAD < stop:  # the row of Phi of a token ahead starts loading now
            prefetch_whole_row(phi_wk, tokens[i + AHEAD])
        k0 = z[i]
        ndk[d, k0] -= 1
        top = -np.inf
        for k in range(n_topics):
            h[k] += gram_topics[k, k0] * inv_n
            gk = h[k] * inv_n - half_diag[k]
            g[k] = gk
            if gk > top:
                top = gk
        total = 0.0
        for k in range(n_topics):
            total += phi_wk[w, k] * (ndk[d, k] + alpha[k]) * math.exp(g[k] - top)
            cum[k] = total
        u, state = uniform(state)
        target = u * total
        k1 = 0
        while k1 < n_topics - 1 and cum[k1] <= target:
            k1 += 1
        if total <= 0.0:  # phi_{.,w} = 0 (a Pólya-urn draw can do this): keep the topic
            k1 = k0
        if recording:
            prev = 0.0
            for k in range(n_topics):
                record[i, k] = (cum[k] - prev) / total
                prev = cum[k]
        z[i] = k1
        ndk[d, k1] += 1
        for k in range(n_topics):
            h[k] -= gram_topics[k, k1] * inv_n
    return state


@njit(cache=True, inline="always")
def _factor_rows(j, gram_topics, inv_n2, F, G):
    """``F[j, k] = exp(S_jk / N_d^2)`` and ``G[j, k] = 1 / F[j, k]`` for every topic ``k``."""
    for k in range(F.shape[1]):
        f = math.exp(gram_topics[j, k] * inv_n2)
        F[j, k] = f
        G[j, k] = 1.0 / f


@njit(cache=True)
def _document_cached(d, start, stop, tokens, z, ndk, phi_wk, alpha, gram_topics, inv_n, h,
                     half_diag, state, record, recording):
    """Supervised sweep of one document with the factors ``E_k = exp(g_k - c)`` kept as products.

    Removing a token of topic ``j`` multiplies ``E_k`` by ``F_{jk} = exp(S_jk / N_d^2)``,
    adding one divides by it; ``F_{j.}`` is computed once per document for each
    topic ``j`` met.  ``B_k = (n_dk + alpha_k) E_k`` is kept too, so a token costs
    one vectorised pass of products, a sum in four fixed partial sums and a
    search with early exit (no ``exp``); a changed topic adds one O(K) rescale.  Used when :data:`CACHE_MAX_SHIFT`
    bounds the drift of ``g`` (see :func:`sweep_supervised`).
    """
    n_topics = len(h)
    inv_n2 = inv_n * inv_n
    top = -np.inf
    for k in range(n_topics):
        gk = h[k] * inv_n - half_diag[k]
        if gk > top:
            top = gk
    E = np.empty(n_topics)
    B = np.empty(n_topics)  # B_k = (n_dk + alpha_k) E_k, the document's factor of the conditional
    for k in range(n_topics):
        E[k] = math.exp(h[k] * inv_n - half_diag[k] - top)
        B[k] = (ndk[d, k] + alpha[k]) * E[k]
    F = np.empty((n_topics, n_topics))
    G = np.empty((n_topics, n_topics))  # G = 1 / F: the rescale multiplies, never divides
    have = np.zeros(n_topics, np.bool_)
    p = np.empty(n_topics)
    block_sums = np.empty((n_topics + WEIGHT_BLOCK - 1) // WEIGHT_BLOCK)
    for i in range(start, stop):
        w = tokens[i]
        if i + AHEAD < stop:  # the row of Phi of a token ahead starts loading now
            prefetch_whole_row(phi_wk, tokens[i + AHEAD])
        k0 = z[i]
        ndk[d, k0] -= 1
        if ndk[d, k0] == 0:
            B[k0] = alpha[k0] * E[k0]  # exact refresh: no cancellation left behind
        else:
            B[k0] -= E[k0]
        if not have[k0]:
            _factor_rows(k0, gram_topics, inv_n2, F, G)
            have[k0] = True
        for k in range(n_topics):  # independent products: vectorised
            p[k] = phi_wk[w, k] * B[k] * F[k0, k]
        total = block_totals(p, block_sums)  # short independent chains, a fixed order
        u, state = uniform(state)
        k1 = search_weights(p, block_sums, u * total)
        if total <= 0.0:  # phi_{.,w} = 0 (a Pólya-urn draw can do this): keep the topic
            k1 = k0
        if recording:
            for k in range(n_topics):
                record[i, k] = p[k] / total
        z[i] = k1
        ndk[d, k1] += 1
        if k1 != k0:
            if not have[k1]:
                _factor_rows(k1, gram_topics, inv_n2, F, G)
                have[k1] = True
            for k in range(n_topics):
                ratio = F[k0, k] * G[k1, k]
                E[k] *= ratio
                B[k] *= ratio
        B[k1] += E[k1]
    return state


@njit(cache=True, parallel=True)
def _sweep_supervised(tokens, doc_ptr, z, ndk, phi_wk, alpha, eta_topics, base, gram_topics,
                      seed, iteration, record, doc_offset=0, max_shift=CACHE_MAX_SHIFT):
    """One exact supervised Gibbs sweep over all tokens, documents in parallel.

    Parameters
    ----------
    tokens : int32 (N,)       word id of every token (CSR data).
    doc_ptr : int64 (D+1,)    document ``d`` owns ``tokens[doc_ptr[d]:doc_ptr[d+1]]``.
    z : int32 (N,)            topic indicators, updated in place.
    ndk : int32 (D, K)        document-topic counts, updated in place.
    phi_wk : float (V, K)     Phi transposed (word-major, for cache locality).
    alpha : float64 (K,)      Dirichlet prior of theta, ``alpha_k`` (a float in the wrapper).
    eta_topics : (L, K)       the topic block of eta.
    base : (D, L)             ``a_{dl} - x_d . eta_{l,x}``: the residual before topics.
    gram_topics : (K, K)      ``S = eta_topics^T eta_topics``.
    seed, iteration : int     fix the random streams.
    record : float64 (N, K) or (0, K)
        When it has N rows, the normalised conditional of every token is written
        there as it is drawn (for tests); pass ``np.empty((0, K))`` otherwise.
    doc_offset : int, default=0
        Global index of document 0 when ``doc_ptr`` describes a shard (a
        contiguous range of documents): document ``d`` draws from the stream of
        document ``doc_offset + d``, so any sharding gives the same chain.
    max_shift : float, default=CACHE_MAX_SHIFT
        A document whose bound ``3 max_k S_kk / N_d`` on the drift of its
        log-factors ``g_k`` is at most this is swept with the multiplicative
        cache (:func:`_document_cached`, no ``exp`` per token), the others in
        log space (:func:`_document_exact`).  Both compute the same
        conditional; ``0`` forces the log-space path everywhere (for tests).

    Notes
    -----
    Within a document, ``g_k = h_k / N_d - S_kk / (2 N_d^2)`` with
    ``h_k = eta_{.,k} . r_d`` moves by ``-S_{k,j} / N_d^2`` when a token joins
    topic ``j`` (and back when it leaves), so over a document ``|g_k(t) - g_k(0)|
    <= max_j |S_kj| (2 N_d + 1) / N_d^2 <= 3 max_k S_kk / N_d`` (Cauchy-Schwarz:
    ``|S_kj| <= max S_kk``).
    """
    n_docs = len(doc_ptr) - 1
    n_classes, n_topics = eta_topics.shape
    step = iteration * 16 + STEP_Z
    recording = record.shape[0] > 0
    s_max = 0.0
    for k in range(n_topics):
        if gram_topics[k, k] > s_max:
            s_max = gram_topics[k, k]
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        n_d = stop - start
        if n_d == 0:
            continue
        inv_n = 1.0 / n_d
        dd = np.int64(d)  # the parallel body's index is uint64: one signature for the callees
        r = np.empty(n_classes)
        document_residual(dd, ndk, eta_topics, base, inv_n, r)
        h = np.zeros(n_topics)
        for k in range(n_topics):
            acc = 0.0
            for l in range(n_classes):
                acc += eta_topics[l, k] * r[l]
            h[k] = acc
        half_diag = np.empty(n_topics)
        for k in range(n_topics):
            half_diag[k] = 0.5 * gram_topics[k, k] * inv_n * inv_n
        state = stream(seed, step, doc_offset + d)
        if 3.0 * s_max * inv_n <= max_shift:
            _document_cached(dd, start, stop, tokens, z, ndk, phi_wk, alpha, gram_topics, inv_n,
                             h, half_diag, state, record, recording)
        else:
            _document_exact(dd, start, stop, tokens, z, ndk, phi_wk, alpha, gram_topics, inv_n,
                            h, half_diag, state, record, recording)


# ------------------------------------------------ pieces of the MH sweeps
@njit(cache=True, inline="always")
def _squared_norms(eta_kl):
    """``S_kk = |eta_{.,k}|^2`` (K,) from the topic-major ``eta_kl`` (K, L)."""
    n_topics, n_classes = eta_kl.shape
    sq = np.zeros(n_topics)
    for k in range(n_topics):
        for l in range(n_classes):
            sq[k] += eta_kl[k, l] * eta_kl[k, l]
    return sq


@njit(cache=True, inline="always")
def _nonzero_topics(ndk_row, nz, pos):
    """The document's non-zero topics into ``nz[:n]`` and their positions into ``pos``
    (-1 for the others); returns ``n``."""
    n_nz = 0
    for k in range(len(ndk_row)):
        if ndk_row[k] > 0:
            nz[n_nz] = k
            pos[k] = n_nz
            n_nz += 1
    return n_nz


@njit(cache=True, inline="always")
def _sparse_residual(ndk_row, eta_kl, base_row, inv_n, nz, n_nz, r):
    """:func:`document_residual` over the document's non-zero topics ``nz[:n_nz]`` only,
    from the topic-major ``eta_kl`` (K, L): O(K_d L) instead of O(K L) (at K = 1000 a 20
    Newsgroups document has about 60 topics)."""
    for l in range(len(r)):
        r[l] = 0.0
    for j in range(n_nz):
        k = nz[j]
        count = ndk_row[k]
        for l in range(len(r)):
            r[l] += eta_kl[k, l] * count
    for l in range(len(r)):
        r[l] = base_row[l] - r[l] * inv_n


@njit(cache=True, inline="always")
def document_topics(ndk_row, eta_kl, base_row, inv_n):
    """A document's start in the sparse z-sweeps: the compact list of its non-zero topics
    ``nz[:n_nz]`` with their positions ``pos`` (-1 for the others), and its residual ``r``
    with every token in (:func:`_sparse_residual`).  Returns ``(nz, pos, n_nz, r)``."""
    n_topics, n_classes = eta_kl.shape
    nz = np.empty(n_topics, np.int32)
    pos = np.full(n_topics, -1, np.int32)
    n_nz = _nonzero_topics(ndk_row, nz, pos)
    r = np.empty(n_classes)
    _sparse_residual(ndk_row, eta_kl, base_row, inv_n, nz, n_nz, r)
    return nz, pos, n_nz, r


@njit(cache=True, inline="always")
def _drop_topic(k, nz, pos, n_nz):
    """Swap-remove topic ``k`` (its count fell to 0) from the non-zero list; returns its length."""
    j = pos[k]
    last = nz[n_nz - 1]
    nz[j] = last
    pos[last] = j
    pos[k] = -1
    return n_nz - 1


@njit(cache=True, inline="always")
def _add_topic(k, nz, pos, n_nz):
    """Append topic ``k`` (its count rises from 0) to the non-zero list; returns its length."""
    nz[n_nz] = k
    pos[k] = n_nz
    return n_nz + 1


@njit(cache=True, inline="always")
def _document_bucket(ndk_row, phi_row, nz, n_nz, cum):
    """Cumulative ``n_{d,k} phi_{k,w}`` over the non-zero topics into ``cum``; the total."""
    doc_mass = 0.0
    for j in range(n_nz):
        k = nz[j]
        doc_mass += ndk_row[k] * phi_row[k]
        cum[j] = doc_mass
    return doc_mass


@njit(cache=True, inline="always")
def _pick_nonzero(cum, nz, n_nz, target):
    """The non-zero topic whose cumulative bucket first exceeds ``target`` (the last if none;
    :func:`dolda.sampler.sweeps.search_cumulative`, branch-free)."""
    return nz[search_cumulative(cum, n_nz, target)]


@njit(cache=True, inline="always")
def log_factor_ratio(k0, k1, eta_kl, r, sq, inv_n):
    """``g_{k1} - g_{k0} = (eta_{.,k1} - eta_{.,k0}) . r^{-i} / N_d - (S_11 - S_00) / (2 N_d^2)``
    with ``r`` keeping the current token in at ``k0`` (``r^{-i} = r + eta_{.,k0} / N_d``,
    never formed): O(L)."""
    dg = 0.0
    for l in range(eta_kl.shape[1]):
        e0 = eta_kl[k0, l]
        dg += (eta_kl[k1, l] - e0) * (r[l] + e0 * inv_n)
    return dg * inv_n - 0.5 * (sq[k1] - sq[k0]) * inv_n * inv_n


@njit(cache=True, inline="always")
def word_proposal(w, u, phi_wk, prob, alias, mass, table_row, alpha):
    """``k ~ alpha_k phi_{k,w} / mass[w]`` from one uniform ``u``: the word's alias table
    (word-bucket tables), or a linear scan of ``alpha_k phi_{k,w}`` for a word without one
    (O(K); such words are rare)."""
    n_topics = phi_wk.shape[1]
    row = table_row[w]
    if row >= 0:
        x = u * n_topics
        kk = min(int(x), n_topics - 1)
        return kk if (x - kk) < prob[row, kk] else alias[row, kk]
    target = u * mass[w]
    k = 0
    acc = alpha[0] * phi_wk[w, 0]
    while acc <= target and k < n_topics - 1:
        k += 1
        acc += alpha[k] * phi_wk[w, k]
    return k


@njit(cache=True, inline="always")
def _supervised_acceptance(k0, k1, eta_kl, r, sq, inv_n, state):
    """Metropolis-Hastings correction of a move ``k0 -> k1`` proposed from the LDA part,
    accepted with ``min(1, exp(g_{k1} - g_{k0}))`` (:func:`log_factor_ratio`).
    Returns the topic after the step (``k1`` accepted, ``k0`` rejected) and the stream.
    """
    log_ratio = log_factor_ratio(k0, k1, eta_kl, r, sq, inv_n)
    if log_ratio < 0.0:
        u3, state = uniform(state)
        if math.log(u3) > log_ratio:
            return k0, state
    return k1, state


@njit(cache=True, inline="always")
def _move_residual(k0, k1, eta_kl, r, inv_n):
    """The token moved from ``k0`` to ``k1``: ``r += (eta_{.,k0} - eta_{.,k1}) / N_d``."""
    for l in range(eta_kl.shape[1]):
        r[l] += (eta_kl[k0, l] - eta_kl[k1, l]) * inv_n


@njit(cache=True, parallel=True)
def _sweep_supervised_mh(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, table_row, alpha,
                         eta_topics, base, seed, iteration, doc_offset=0):
    """One Metropolis-Hastings supervised sweep, documents in parallel (for large K).

    For every token the proposal is the LDA conditional
    ``q(k) ∝ phi_{k,w} (n_{dk}^{-i} + alpha_k)``, drawn exactly and sparsely:
    with probability ``mass[w] / (mass[w] + sum_{k in d} n_{dk} phi_{k,w})``,
    ``mass[w] = sum_k alpha_k phi_{k,w}``, from the word's alias table of
    ``alpha_k phi_{k,w}`` (the word-bucket tables of
    :func:`dolda.sampler.alias.build_alias_tables` with ``alpha``), otherwise from
    the document's non-zero topics.
    The proposal ``k'`` replaces the current ``k0`` with probability
    ``min(1, exp(g_{k'} - g_{k0}))``, ``g_k = eta_{.,k} . r^{-i} / N_d - S_kk / (2 N_d^2)``;
    the supervised factor is the only part of the target the proposal lacks.
    Cost per token: O(K_d + L).  Arguments as :func:`sweep_supervised`, plus
    the word-bucket alias tables (``prob``, ``alias`` with one row per word that
    has a table, ``mass`` (V,) and ``table_row`` (V,), -1 for a word without a
    table: its proposal from the alias part is then drawn by a linear scan of
    ``alpha_k phi_{k,w}``, which is cheap because such words are rare), and
    ``doc_offset`` as in :func:`sweep_supervised`.
    """
    n_docs = len(doc_ptr) - 1
    n_classes, n_topics = eta_topics.shape
    step = iteration * 16 + STEP_Z
    eta_kl = np.ascontiguousarray(eta_topics.T)  # topic-major: a topic's L values contiguous
    sq = _squared_norms(eta_kl)  # S_kk = |eta_{.,k}|^2
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        n_d = stop - start
        if n_d == 0:
            continue
        inv_n = 1.0 / n_d
        ndk_row = ndk[d]
        nz, pos, n_nz, r = document_topics(ndk_row, eta_kl, base[d], inv_n)
        cum = np.empty(n_topics)
        state = stream(seed, step, doc_offset + d)
        for i in range(start, stop):
            w = tokens[i]
            if i + AHEAD < stop:  # the row of Phi of a token ahead starts loading now
                prefetch_row(phi_wk, tokens[i + AHEAD], nz, n_nz)
                prefetch(mass, tokens[i + AHEAD])
            k0 = z[i]
            ndk_row[k0] -= 1
            if ndk_row[k0] == 0:  # swap-remove k0 from the non-zero list
                n_nz = _drop_topic(k0, nz, pos, n_nz)
            # r keeps the current token in; r^{-i} = r + eta_{.,k0} / N_d is never formed
            # proposal from q
            doc_mass = _document_bucket(ndk_row, phi_wk[w], nz, n_nz, cum)
            word_mass = mass[w]
            u, state = uniform(state)
            target = u * (word_mass + doc_mass)
            if target < word_mass or n_nz == 0:
                u2, state = uniform(state)
                k1 = word_proposal(w, u2, phi_wk, prob, alias, mass, table_row, alpha)
            else:
                target -= word_mass
                k1 = _pick_nonzero(cum, nz, n_nz, target)
            if k1 != k0:
                k1, state = _supervised_acceptance(k0, k1, eta_kl, r, sq, inv_n, state)
                if k1 != k0:  # accepted: the token moves from k0 to k1
                    _move_residual(k0, k1, eta_kl, r, inv_n)
            z[i] = k1
            if ndk_row[k1] == 0:
                n_nz = _add_topic(k1, nz, pos, n_nz)
            ndk_row[k1] += 1


@njit(cache=True, parallel=True)
def _sweep_supervised_mh_sparse(tokens, doc_ptr, z, ndk, phi_wk, phi_ptr, phi_topics, prob,
                                alias, mass, alpha, eta_topics, base, seed, iteration,
                                doc_offset=0):
    """The Metropolis-Hastings supervised sweep of :func:`sweep_supervised_mh` with a sparse Phi.

    Phi is a Pólya-urn draw (:class:`dolda.sampler.polya.SparsePhi`): word
    ``w``'s non-zero ``phi_{k,w}`` are the entries ``phi_ptr[w]:phi_ptr[w+1]``
    (topics ``phi_topics``) with a Walker alias table over them (``prob``,
    ``alias``: offsets within the word), ``mass[w] = sum_k phi_{k,w}``, and
    ``phi_wk`` (V, K) the same values dense (read for the document's topics).
    Here the alias tables are those of the word bucket ``alpha_k phi_{k,w}`` over
    the word's non-zeros and ``mass[w] = sum_k alpha_k phi_{k,w}``
    (:func:`dolda.sampler.polya.bucket_tables`).
    The proposal is the LDA conditional ``q(k) ∝ phi_{k,w} (n_{dk}^{-i} + alpha_k)``:
    the word part from the alias table (O(1), any K), the document part from
    the document's non-zero topics (O(K_d)); the supervised factor is the MH
    correction ``min(1, exp(g_{k'} - g_{k0}))`` in O(L).  Doubly sparse: no
    step is O(K).

    Two cases the Dirichlet draw never produces: a current topic with
    ``phi_{k0,w} = 0`` has target mass 0, so any proposal is accepted; a word
    with no non-zero ``phi_{.,w}`` at all (every Poisson draw 0) keeps its
    topic (its conditional is identically 0).  Other arguments as
    :func:`sweep_supervised_mh`.
    """
    n_docs = len(doc_ptr) - 1
    n_classes, n_topics = eta_topics.shape
    step = iteration * 16 + STEP_Z
    eta_kl = np.ascontiguousarray(eta_topics.T)
    sq = _squared_norms(eta_kl)
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        n_d = stop - start
        if n_d == 0:
            continue
        inv_n = 1.0 / n_d
        ndk_row = ndk[d]
        nz, pos, n_nz, r = document_topics(ndk_row, eta_kl, base[d], inv_n)
        cum = np.empty(n_topics)
        state = stream(seed, step, doc_offset + d)
        for i in range(start, stop):
            w = tokens[i]
            if i + AHEAD < stop:  # the row of Phi of a token ahead starts loading now
                prefetch_row(phi_wk, tokens[i + AHEAD], nz, n_nz)
                prefetch(mass, tokens[i + AHEAD])
            lo = phi_ptr[w]
            m = phi_ptr[w + 1] - lo
            if m == 0:
                continue
            k0 = z[i]
            ndk_row[k0] -= 1
            if ndk_row[k0] == 0:
                n_nz = _drop_topic(k0, nz, pos, n_nz)
            doc_mass = _document_bucket(ndk_row, phi_wk[w], nz, n_nz, cum)
            word_mass = mass[w]
            u, state = uniform(state)
            target = u * (word_mass + doc_mass)
            if target < word_mass or doc_mass <= 0.0:
                u2, state = uniform(state)
                x = u2 * m
                e = min(int(x), m - 1)
                if x - e >= prob[lo + e]:
                    e = alias[lo + e]
                k1 = phi_topics[lo + e]
            else:
                target -= word_mass
                k1 = _pick_nonzero(cum, nz, n_nz, target)
            if k1 != k0 and phi_wk[w, k0] > 0.0:
                k1, state = _supervised_acceptance(k0, k1, eta_kl, r, sq, inv_n, state)
            if k1 != k0:
                _move_residual(k0, k1, eta_kl, r, inv_n)
            z[i] = k1
            if ndk_row[k1] == 0:
                n_nz = _add_topic(k1, nz, pos, n_nz)
            ndk_row[k1] += 1


# ------------------------------------------------ wrappers (alpha a float or (K,))
def sweep_supervised(tokens, doc_ptr, z, ndk, phi_wk, alpha, eta_topics, base, gram_topics,
                     seed, iteration, record, doc_offset=0, max_shift=CACHE_MAX_SHIFT):
    """:func:`_sweep_supervised` with ``alpha`` a float or float (K,) (broadcast here)."""
    _sweep_supervised(tokens, doc_ptr, z, ndk, phi_wk, as_alpha(alpha, ndk.shape[1]),
                      eta_topics, base, gram_topics, seed, iteration, record, doc_offset,
                      max_shift)


def word_bucket_tables(phi_wk, prob, alias, mass, table_row, alpha):
    """The word-bucket tables of ``alpha_k phi_{k,w}`` from the plain alias tables of
    ``phi_{.,w}`` (:func:`dolda.sampler.alias.build_alias_tables` without alpha), for
    ``alpha`` a float or float (K,): symmetric alpha only scales the masses, another is
    built into new tables.  Returns ``(alpha (K,), prob, alias, mass)``."""
    alpha = as_alpha(alpha, phi_wk.shape[1])
    if is_symmetric(alpha):
        return alpha, prob, alias, mass * alpha[0]
    t = build_alias_tables(phi_wk, table_row, alpha=alpha)
    return alpha, t.prob, t.alias, t.mass


def sweep_supervised_mh(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, table_row, alpha,
                        eta_topics, base, seed, iteration, doc_offset=0):
    """:func:`_sweep_supervised_mh` from the plain alias tables of ``phi_{.,w}`` and
    ``alpha`` a float or float (K,) (:func:`word_bucket_tables`)."""
    alpha, prob, alias, mass = word_bucket_tables(phi_wk, prob, alias, mass, table_row, alpha)
    _sweep_supervised_mh(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, table_row, alpha,
                         eta_topics, base, seed, iteration, doc_offset)


def sweep_supervised_mh_sparse(tokens, doc_ptr, z, ndk, phi_wk, phi_ptr, phi_topics, prob, alias,
                               mass, alpha, eta_topics, base, seed, iteration, doc_offset=0):
    """:func:`_sweep_supervised_mh_sparse` from the plain tables of a
    :class:`dolda.sampler.polya.SparsePhi` and ``alpha`` a float or float (K,):
    the word-bucket tables are derived here."""
    from .polya import weighted_word_tables

    alpha = as_alpha(alpha, ndk.shape[1])
    if is_symmetric(alpha):
        mass = mass * alpha[0]
    else:
        prob, alias, mass = weighted_word_tables(phi_ptr, phi_topics, phi_wk, alpha)
    _sweep_supervised_mh_sparse(tokens, doc_ptr, z, ndk, phi_wk, phi_ptr, phi_topics, prob,
                                alias, mass, alpha, eta_topics, base, seed, iteration,
                                doc_offset)
