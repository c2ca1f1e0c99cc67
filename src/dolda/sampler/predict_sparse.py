"""The sparse prediction kernel: topic proportions of new documents with Phi fixed, O(K_d) per
token (``K_d`` the topics present in the document), for :mod:`dolda.sampler.predict`.

The conditional ``p(z_{d,i} = k) ∝ phibar_{k,w} (n_{d,k}^{-i} + alpha_k)`` splits into a
document bucket ``n_{d,k} phibar_{k,w}`` over the document's non-zero topics and a word bucket
``alpha_k phibar_{k,w}`` (total ``m_w = sum_k alpha_k phibar_{k,w}``).  The word bucket, rarely
visited once the document has topics, is drawn by a scan of the word's sums over blocks of
:data:`BLOCK` topics, then of the block's entries: O(K / BLOCK + BLOCK) instead of O(K).

**The document bucket reads a document-local copy of Phi.**  Phi is fixed and a document is
swept many times, so each document keeps ``L[u, j] = phibar_{k_j, w_u}`` for its distinct
words ``w_u`` and its non-zero topics ``k_j`` in *slot* order, with the counts ``c_j = n_{d,k_j}``
beside them.  A token's bucket is then ``c_j L[u, j]`` over contiguous slots (one vectorised
product loop, summed by blocks of :data:`dolda.sampler.sweeps.WEIGHT_BLOCK`), not a gather of
``K_d`` entries scattered over the word's row of Phi.  A topic entering the document fills a
column (one read per distinct word), a topic leaving it is replaced by the last slot's column:
on 20 Newsgroups this happens for 7% of the tokens at K = 100 and 26% at K = 1000, against a
bucket of 23 and 59 topics per token (``benchmarks/results/predict.md``).  The slots' order
changes which topic a uniform lands on only through the order of the sum, so the draws are
those of the gather kernel up to rounding.  A document whose copy would exceed
:data:`LOCAL_MAX_ENTRIES` entries uses the gather kernel (``_gather_document``), which reads
Phi's rows directly.

Both average either the drawn counts over the kept sweeps or, by default, the conditional
probabilities each token is drawn from (Rao-Blackwellised): the document bucket's part as it is
met (per slot, added to its topic when the slot empties and at the end) and the word bucket's,
``alpha_k phibar_{k,w} / total``, once per token position after the sweeps from the summed
``1 / total`` of that position (O(N_d K) once, not per sweep).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .rng import STEP_PREDICT, stream, uniform
from .sweeps import WEIGHT_BLOCK, block_totals_n, search_weights_n
from .sweeps import search_cumulative as _search

#: Topics per block of the word bucket's two-level scan.
BLOCK = 32

#: A document whose local copy of Phi (distinct words x min(K, N_d) slots) would exceed this
#: many entries is swept by the gather kernel instead (16 MB per thread in float32).
LOCAL_MAX_ENTRIES = 1 << 22


@njit(cache=True, inline="always")
def _alpha_total(alpha):
    total = 0.0
    for k in range(len(alpha)):
        total += alpha[k]
    return total


@njit(cache=True, inline="always")
def write_proportions(out, d, acc, alpha, n_sweeps, burn_in, n_d):
    """``out[d, k] = (E[n_{d,k}] + alpha_k) / (N_d + sum alpha)`` from the kept sums ``acc``
    (both kernels' last step)."""
    kept = n_sweeps - burn_in
    denom = kept * (n_d + _alpha_total(alpha))
    for k in range(out.shape[1]):
        out[d, k] = (acc[k] + kept * alpha[k]) / denom


@njit(cache=True, inline="always")
def _draw_word_bucket(phi_row, block_row, alpha, target):
    """The topic of the word bucket ``alpha_k phi_{k,w}`` whose interval holds ``target`` (in
    ``[0, m_w)``): its block by the block sums ``block_row``, then its topic in the block."""
    n_blocks = len(block_row)
    b = 0
    acc = block_row[0]
    while acc <= target and b < n_blocks - 1:
        b += 1
        acc += block_row[b]
    target -= acc - block_row[b]
    k = b * BLOCK
    last = min(k + BLOCK, len(phi_row)) - 1
    acc = alpha[k] * phi_row[k]
    while acc <= target and k < last:
        k += 1
        acc += alpha[k] * phi_row[k]
    return k


@njit(cache=True, inline="always")
def _add_word_shares(words, phi_wk, alpha, word_share, acc):
    """The word bucket's part of the Rao-Blackwellised sums, once after the sweeps:
    ``acc[k] += word_share[i] alpha_k phi_{k,w_i}`` for every token position ``i``
    (``word_share[i]``: its summed ``1 / total`` over the kept sweeps)."""
    for i in range(len(words)):
        phi_row = phi_wk[words[i]]
        share = word_share[i]
        for k in range(len(acc)):
            acc[k] += share * alpha[k] * phi_row[k]


# ------------------------------------------------ the document-local kernel
@njit(cache=True, inline="always")
def _slot_weights(L_row, counts, n_nz, prob, block_sums):
    """``prob[j] = c_j L[u, j]`` over the slots ``j < n_nz`` and their sums over blocks of
    ``WEIGHT_BLOCK`` (:func:`dolda.sampler.sweeps.block_totals_n`); returns the document
    bucket's mass."""
    for j in range(n_nz):
        prob[j] = counts[j] * L_row[j]
    return block_totals_n(prob, n_nz, block_sums)


@njit(cache=True, inline="always")
def _search_slots(prob, block_sums, n_nz, target):
    """The slot ``j < n_nz`` whose interval of the cumulated ``prob`` holds ``target`` (in
    ``[0, mass)``; :func:`dolda.sampler.sweeps.search_weights_n` over the first ``n_nz``)."""
    return search_weights_n(prob, n_nz, block_sums, target)


@njit(cache=True)
def _distinct_words(words, local, distinct):
    """The document's distinct words into ``distinct[:U]`` and each token's index among them
    into ``local``; returns ``U``."""
    order = np.argsort(words)
    n_distinct = 0
    previous = -1
    for i in order:
        w = words[i]
        if w != previous:
            distinct[n_distinct] = w
            n_distinct += 1
            previous = w
        local[i] = n_distinct - 1
    return n_distinct


@njit(cache=True)
def _local_document(words, local, distinct, n_distinct, phi_wk, blocks, mass, alpha, n_sweeps,
                    burn_in, state, acc, rao_blackwell):
    """Sweep one document on its local copy of Phi; the kept sums into ``acc`` (K,).

    ``words`` are its tokens, ``local`` / ``distinct`` / ``n_distinct`` from
    :func:`_distinct_words`.  Slot ``j < n_nz`` holds topic ``slot[j]`` (``pos`` the inverse,
    -1 for an absent topic), its count ``counts[j]``, its Rao-Blackwellised sum
    ``slot_acc[j]`` and its column ``L[:, j]``.
    """
    n_topics = len(acc)
    n_d = len(words)
    width = min(n_topics, n_d)  # a document has at most N_d non-zero topics
    L = np.empty((n_distinct, width), phi_wk.dtype)
    counts = np.zeros(width)
    slot = np.empty(width, np.int32)
    pos = np.full(n_topics, -1, np.int32)
    slot_acc = np.zeros(width)
    prob = np.empty(width)
    block_sums = np.empty((width + WEIGHT_BLOCK - 1) // WEIGHT_BLOCK)
    z = np.empty(n_d, np.int32)
    word_share = np.zeros(n_d if rao_blackwell else 0)
    n_nz = 0
    # sweep -1 is the sequential initialisation from p(k) ∝ phi_{k,w} (n_{d,k} + alpha_k)
    # over the tokens before i; the sweeps s >= 0 first take the token out
    for s in range(-1, n_sweeps):
        kept_sweep = s >= burn_in
        for i in range(n_d):
            w = words[i]
            if s >= 0:
                k0 = z[i]
                j = pos[k0]
                counts[j] -= 1.0
                if counts[j] == 0.0:  # k0 leaves: the last slot moves into j
                    acc[k0] += slot_acc[j]
                    last = n_nz - 1
                    if j != last:
                        moved = slot[last]
                        slot[j] = moved
                        pos[moved] = j
                        counts[j] = counts[last]
                        slot_acc[j] = slot_acc[last]
                        for u in range(n_distinct):
                            L[u, j] = L[u, last]
                    pos[k0] = -1
                    n_nz -= 1
            doc_mass = _slot_weights(L[local[i]], counts, n_nz, prob, block_sums)
            if kept_sweep and rao_blackwell:
                inv = 1.0 / (mass[w] + doc_mass)
                for j in range(n_nz):
                    slot_acc[j] += prob[j] * inv
                word_share[i] += inv
            u1, state = uniform(state)
            target = u1 * (mass[w] + doc_mass)
            if target < doc_mass:
                k = slot[_search_slots(prob, block_sums, n_nz, target)]
            else:
                k = _draw_word_bucket(phi_wk[w], blocks[w], alpha, target - doc_mass)
            z[i] = k
            j = pos[k]
            if j < 0:  # k enters: a new slot, its column read from Phi
                j = n_nz
                slot[j] = k
                pos[k] = j
                counts[j] = 0.0
                slot_acc[j] = 0.0
                for u in range(n_distinct):
                    L[u, j] = phi_wk[distinct[u], k]
                n_nz += 1
            counts[j] += 1.0
        if kept_sweep and not rao_blackwell:
            for j in range(n_nz):
                acc[slot[j]] += counts[j]
    for j in range(n_nz):
        acc[slot[j]] += slot_acc[j]
    if rao_blackwell:
        _add_word_shares(words, phi_wk, alpha, word_share, acc)
    return state


# ------------------------------------------------ the gather kernel (long documents)
@njit(cache=True, inline="always")
def _document_bucket(phi_row, ndk_row, nz, n_nz, cum):
    """``cum[j] = sum_{i<=j} n_{d,k_i} phi_{k_i,w}`` over the non-zero topics
    ``k_i = nz[i]``; returns the document bucket's mass (the last value)."""
    doc_mass = 0.0
    for j in range(n_nz):
        k = nz[j]
        doc_mass += ndk_row[k] * phi_row[k]
        cum[j] = doc_mass
    return doc_mass


@njit(cache=True, inline="always")
def _add(k, ndk_row, nz, pos, n_nz):
    """``n_{d,k} += 1``, keeping the non-zero list; returns the new ``n_nz``."""
    if ndk_row[k] == 0:
        nz[n_nz] = k
        pos[k] = n_nz
        n_nz += 1
    ndk_row[k] += 1
    return n_nz


@njit(cache=True, inline="always")
def _remove(k, ndk_row, nz, pos, n_nz):
    """``n_{d,k} -= 1``, swap-removing ``k`` from the non-zero list at 0; returns ``n_nz``."""
    ndk_row[k] -= 1
    if ndk_row[k] == 0:
        j = pos[k]
        last = nz[n_nz - 1]
        nz[j] = last
        pos[last] = j
        pos[k] = -1
        n_nz -= 1
    return n_nz


@njit(cache=True)
def _gather_document(words, phi_wk, blocks, mass, alpha, n_sweeps, burn_in, state, acc,
                     rao_blackwell):
    """Sweep one document reading Phi's rows (``n_{d,k} phi_{k,w}`` gathered over the
    non-zero topics, as a running sum); the kept sums into ``acc`` (K,)."""
    n_topics = len(acc)
    n_d = len(words)
    width = min(n_topics, n_d)
    ndk_row = np.zeros(n_topics, np.int32)
    pos = np.empty(n_topics, np.int32)
    nz = np.empty(width, np.int32)
    cum = np.empty(width)
    z = np.empty(n_d, np.int32)
    n_nz = 0
    for i in range(n_d):  # the sequential initialisation
        w = words[i]
        doc_mass = _document_bucket(phi_wk[w], ndk_row, nz, n_nz, cum)
        u, state = uniform(state)
        target = u * (mass[w] + doc_mass)
        if target < doc_mass:
            k = nz[_search(cum, n_nz, target)]
        else:
            k = _draw_word_bucket(phi_wk[w], blocks[w], alpha, target - doc_mass)
        z[i] = k
        n_nz = _add(k, ndk_row, nz, pos, n_nz)
    word_share = np.zeros(n_d if rao_blackwell else 0)
    for s in range(n_sweeps):
        kept_sweep = s >= burn_in
        for i in range(n_d):
            w = words[i]
            n_nz = _remove(z[i], ndk_row, nz, pos, n_nz)
            phi_row = phi_wk[w]
            doc_mass = _document_bucket(phi_row, ndk_row, nz, n_nz, cum)
            if kept_sweep and rao_blackwell:
                inv = 1.0 / (mass[w] + doc_mass)
                below = 0.0
                for j in range(n_nz):
                    acc[nz[j]] += (cum[j] - below) * inv
                    below = cum[j]
                word_share[i] += inv
            u, state = uniform(state)
            target = u * (mass[w] + doc_mass)
            if target < doc_mass:
                k = nz[_search(cum, n_nz, target)]
            else:
                k = _draw_word_bucket(phi_row, blocks[w], alpha, target - doc_mass)
            z[i] = k
            n_nz = _add(k, ndk_row, nz, pos, n_nz)
        if kept_sweep and not rao_blackwell:
            for j in range(n_nz):
                acc[nz[j]] += ndk_row[nz[j]]
    if rao_blackwell:
        _add_word_shares(words, phi_wk, alpha, word_share, acc)
    return state


# ------------------------------------------------ per document, per batch
@njit(cache=True)
def _sparse_document(tokens, start, stop, phi_wk, blocks, mass, alpha, n_sweeps, burn_in, seed,
                     d, out, doc_offset, rao_blackwell, local_max_entries):
    """Topic proportions of document ``d`` (tokens ``start:stop``) into ``out[d]``; the stream
    is that of document ``doc_offset + d``.  The local kernel unless its copy of Phi would
    exceed ``local_max_entries`` entries."""
    n_topics = out.shape[1]
    n_d = stop - start
    if n_d == 0:
        for k in range(n_topics):
            out[d, k] = 1.0 / n_topics
        return
    state = stream(seed, STEP_PREDICT, doc_offset + d)
    words = tokens[start:stop]
    acc = np.zeros(n_topics)
    local = np.empty(n_d, np.int32)
    distinct = np.empty(n_d, np.int32)
    n_distinct = _distinct_words(words, local, distinct)
    if n_distinct * min(n_topics, n_d) <= local_max_entries:
        _local_document(words, local, distinct, n_distinct, phi_wk, blocks, mass, alpha,
                        n_sweeps, burn_in, state, acc, rao_blackwell)
    else:
        _gather_document(words, phi_wk, blocks, mass, alpha, n_sweeps, burn_in, state, acc,
                         rao_blackwell)
    write_proportions(out, d, acc, alpha, n_sweeps, burn_in, n_d)


@njit(cache=True, parallel=True)
def _predict_sparse(tokens, doc_ptr, phi_wk, blocks, mass, alpha, n_sweeps, burn_in, seed, out,
                    doc_offset=0, rao_blackwell=False, local_max_entries=LOCAL_MAX_ENTRIES):
    for d in prange(out.shape[0]):  # d as int64, as the serial loop's: one signature
        _sparse_document(tokens, doc_ptr[d], doc_ptr[d + 1], phi_wk, blocks, mass, alpha,
                         n_sweeps, burn_in, seed, np.int64(d), out, doc_offset, rao_blackwell,
                         local_max_entries)


@njit(cache=True)
def _predict_sparse_serial(tokens, doc_ptr, phi_wk, blocks, mass, alpha, n_sweeps, burn_in,
                           seed, out, doc_offset=0, rao_blackwell=False,
                           local_max_entries=LOCAL_MAX_ENTRIES):
    for d in range(out.shape[0]):
        _sparse_document(tokens, doc_ptr[d], doc_ptr[d + 1], phi_wk, blocks, mass, alpha,
                         n_sweeps, burn_in, seed, d, out, doc_offset, rao_blackwell,
                         local_max_entries)
