"""The sparse Pólya-urn Phi step (Terenin, Magnusson, Jonsson & Draper 2019), word-major.

The exact Phi step draws ``phi_k ~ Dir(beta + n_{k,.})``: K V gamma variates
per iteration, nearly all of them for zero counts.  The Pólya-urn draw
replaces the gamma variates by Poisson ones,

    c_{k,w} ~ Poisson(beta + n_{k,w}),        phi_{k,w} = c_{k,w} / sum_v c_{k,v},

which converges to the Dirichlet draw as the counts grow (the paper's
Theorem 1) and is sparse: ``Poisson(beta + n) = Poisson(n) + Poisson(beta)``,
so a count draws one ``Poisson(n_{k,w})`` and the prior part of a topic,
``V`` independent ``Poisson(beta)``, is ``H_k ~ Poisson(V beta)`` hits at
uniformly drawn words.  The work is O(nnz(n) + K V beta) instead of O(K V).
It is an approximation of the partially collapsed sampler (see
``benchmarks/results/polya_accuracy.md`` for how close it is); a topic whose
draw is all zero gets its prior hits conditioned on at least one (the
normalisation needs a non-zero total).

Everything here is word-major, the layout the z-sweeps read:

* :class:`WordCounts` (:mod:`dolda.sampler.polya_counts`) -- ``n_{k,w}`` by word, counted
  from ``z`` in parallel over words (:func:`word_counts`) and merged across shards
  (:func:`merge_word_counts`), integer sums, so the same for any grouping.
* :class:`SparsePhi` -- the non-zero ``phi_{k,w}`` by word with, per word, a
  Walker alias table over its non-zeros (:func:`polya_phi`), and the dense
  float32 ``phi_wk`` (V, K) updated in place (only the entries that change).

Random streams: word ``w`` draws its count parts from
``stream(seed, t*16 + STEP_PHI, w)``, topic ``k`` its prior hits from
``stream(seed, t*16 + STEP_PHI, 2**41 + k)``; with integer counts and sums
the result is the same for any number of threads, shards or workers.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .alpha import is_symmetric
from .rng import STEP_INIT, STEP_PHI, stream, uniform, uniform_open
from .polya_counts import (  # noqa: F401 (the counts, importable from here)
    WordCounts,
    _chunks,
    _compact_pairs,
    _n_chunks,
    merge_word_counts,
    topic_log_likelihood_words,
    word_counts,
)

#: Block offset of the topic streams (prior hits), apart from the word streams.
_TOPIC_BLOCK = 1 << 41
#: Block offset of the initial draw (iteration -1), apart from the initial z streams.
_INIT_BLOCK = 1 << 42


class SparsePhi(NamedTuple):
    """A Pólya-urn draw of Phi by word: the non-zero ``phi_{k,w}`` and their alias tables.

    Attributes
    ----------
    ptr : int64 (V+1,)      word ``w`` owns entries ``ptr[w]:ptr[w+1]``.
    topics : int32 (nnz,)   topic ids ``k`` with ``phi_{k,w} > 0``, increasing.
    values : float32 (nnz,) ``phi_{k,w}``.
    mass : float64 (V,)     ``sum_k phi_{k,w}``.
    prob : float64 (nnz,)   keep probability of an entry in its word's alias table.
    alias : int32 (nnz,)    the other entry (offset within the word) of the column.
    """

    ptr: np.ndarray
    topics: np.ndarray
    values: np.ndarray
    mass: np.ndarray
    prob: np.ndarray
    alias: np.ndarray

    @property
    def nbytes_broadcast(self) -> int:
        """Bytes of what a worker needs to rebuild everything (ptr, topics, values)."""
        return int(self.ptr.nbytes + self.topics.nbytes + self.values.nbytes)


class PhiNonZeros(NamedTuple):
    """What travels to a worker: the non-zeros of a :class:`SparsePhi` (the rest is derived).

    Attributes
    ----------
    ptr : int64 (V+1,), topics : int32 (nnz,), values : float32 (nnz,)
        As :class:`SparsePhi`.
    n_topics : int
    """

    ptr: np.ndarray
    topics: np.ndarray
    values: np.ndarray
    n_topics: int

    @classmethod
    def of(cls, phi: "SparsePhi", n_topics):
        return cls(phi.ptr, phi.topics, phi.values, int(n_topics))

    def expand(self):
        """``(phi_wk, SparsePhi)``: the dense word-major float32 Phi and the full sparse one."""
        sparse = finish_sparse_phi(self.ptr, self.topics, self.values, self.n_topics)
        return dense(sparse, self.n_topics), sparse


# ------------------------------------------------------------------ helpers
@njit(cache=True, inline="always")
def poisson(lam, state):
    """``X ~ Poisson(lam)``; returns ``(X, state)``.

    Inversion by products of uniforms for ``lam < 10``; for larger means the
    transformed rejection method PTRS of Hörmann (1993), O(1) per draw.
    """
    if lam < 10.0:
        limit = math.exp(-lam)
        k = 0
        u, state = uniform(state)
        p = u
        while p > limit:
            k += 1
            u, state = uniform(state)
            p *= u
        return k, state
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    log_inv_alpha = math.log(1.1239 + 1.1328 / (b - 3.4))
    vr = 0.9277 - 3.6224 / (b - 2.0)
    while True:
        u, state = uniform(state)
        u -= 0.5
        v, state = uniform_open(state)
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return int(k), state
        if k < 0 or (us < 0.013 and v > us):
            continue
        if (math.log(v) + log_inv_alpha - math.log(a / (us * us) + b)
                <= -lam + k * loglam - math.lgamma(k + 1.0)):
            return int(k), state


@njit(cache=True)
def _poisson_many(lam, seed, n):
    """``n`` draws of :func:`poisson` from one stream (for tests)."""
    out = np.empty(n, np.int64)
    state = stream(seed, 0, 0)
    for i in range(n):
        out[i], state = poisson(lam, state)
    return out



# --------------------------------------------------------------- the draw
@njit(cache=True, parallel=True)
def _count_parts(ptr, counts, seed, step, offset, bounds, n_topics, topics, draws, totals):
    """``draws[j] ~ Poisson(n_{k,w})`` for every count entry; per-chunk topic totals."""
    for c in prange(len(bounds) - 1):
        tot = np.zeros(n_topics, np.int64)
        for w in range(bounds[c], bounds[c + 1]):
            state = stream(seed, step, offset + w)
            for j in range(ptr[w], ptr[w + 1]):
                x, state = poisson(float(counts[j]), state)
                draws[j] = x
                tot[topics[j]] += x
        for k in range(n_topics):
            totals[c, k] = tot[k]


@njit(cache=True, parallel=True)
def _prior_hit_numbers(count_total, n_words, beta, seed, step, offset, hits):
    """``H_k ~ Poisson(V beta)``, conditioned on ``H_k >= 1`` when the topic's count part is 0."""
    lam = n_words * beta
    for k in prange(len(hits)):
        state = stream(seed, step, offset + _TOPIC_BLOCK + k)
        h, state = poisson(lam, state)
        while h == 0 and count_total[k] == 0:
            h, state = poisson(lam, state)
        hits[k] = h


@njit(cache=True, parallel=True)
def _prior_hit_words(count_total, n_words, beta, seed, step, offset, hit_ptr, hit_words):
    """The ``H_k`` uniform words of topic ``k`` (the stream of :func:`_prior_hit_numbers`)."""
    lam = n_words * beta
    for k in prange(len(hit_ptr) - 1):
        state = stream(seed, step, offset + _TOPIC_BLOCK + k)
        h, state = poisson(lam, state)
        while h == 0 and count_total[k] == 0:
            h, state = poisson(lam, state)
        for j in range(hit_ptr[k], hit_ptr[k + 1]):
            u, state = uniform(state)
            hit_words[j] = min(int(u * n_words), n_words - 1)


@njit(cache=True)
def _hits_by_word(hit_ptr, hit_words, n_words):
    """Counting sort of the prior hits by word; within a word, topics increase."""
    wptr = np.zeros(n_words + 1, np.int64)
    for j in range(len(hit_words)):
        wptr[hit_words[j] + 1] += 1
    for w in range(n_words):
        wptr[w + 1] += wptr[w]
    fill = wptr[:-1].copy()
    wtopics = np.empty(len(hit_words), np.int32)
    for k in range(len(hit_ptr) - 1):
        for j in range(hit_ptr[k], hit_ptr[k + 1]):
            w = hit_words[j]
            wtopics[fill[w]] = k
            fill[w] += 1
    return wptr, wtopics


@njit(cache=True, inline="always")
def _build_word_alias(values, lo, m, mass, prob, alias, small, large):
    """Walker alias table of entries ``lo:lo+m`` (weights ``values``), offsets from ``lo``."""
    if m == 0:
        return
    scale = m / mass
    n_small = 0
    n_large = 0
    for j in range(m):
        p = values[lo + j] * scale
        prob[lo + j] = p
        alias[lo + j] = j
        if p < 1.0:
            small[n_small] = j
            n_small += 1
        else:
            large[n_large] = j
            n_large += 1
    while n_small > 0 and n_large > 0:
        n_small -= 1
        s = small[n_small]
        g = large[n_large - 1]
        alias[lo + s] = g
        prob[lo + g] = prob[lo + g] + prob[lo + s] - 1.0
        if prob[lo + g] < 1.0:
            n_large -= 1
            small[n_small] = g
            n_small += 1
    for i in range(n_large):
        prob[lo + large[i]] = 1.0
    for i in range(n_small):
        prob[lo + small[i]] = 1.0


@njit(cache=True, parallel=True)
def _assemble(ptr, topics, draws, wptr, wtopics, cap_ptr, bounds, out_topics, out_draws,
              length):
    """Per word: count parts (by topic) merged with the prior hits (by topic), zeros dropped."""
    for c in prange(len(bounds) - 1):
        for w in range(bounds[c], bounds[c + 1]):
            i, i_end = ptr[w], ptr[w + 1]
            h, h_end = wptr[w], wptr[w + 1]
            o = cap_ptr[w]
            m = 0
            while i < i_end or h < h_end:
                if h >= h_end or (i < i_end and topics[i] <= wtopics[h]):
                    k = topics[i]
                    x = draws[i]
                    i += 1
                else:
                    k = wtopics[h]
                    x = 0
                while h < h_end and wtopics[h] == k:
                    x += 1
                    h += 1
                if x > 0:
                    out_topics[o + m] = k
                    out_draws[o + m] = x
                    m += 1
            length[w] = m


@njit(cache=True, parallel=True)
def _finish(ptr, values, bounds, n_topics, mass, prob, alias):
    for c in prange(len(bounds) - 1):
        small = np.empty(n_topics, np.int32)
        large = np.empty(n_topics, np.int32)
        for w in range(bounds[c], bounds[c + 1]):
            lo, hi = ptr[w], ptr[w + 1]
            total = 0.0
            for j in range(lo, hi):
                total += values[j]
            mass[w] = total
            _build_word_alias(values, lo, hi - lo, total, prob, alias, small, large)


def finish_sparse_phi(ptr, topics, values, n_topics) -> SparsePhi:
    """:class:`SparsePhi` from its non-zeros (word masses and alias tables computed here).

    A function of ``(ptr, topics, values)`` alone: a worker that receives
    only those rebuilds exactly the driver's tables.
    """
    n_words = len(ptr) - 1
    mass = np.empty(n_words)
    prob = np.empty(len(values))
    alias = np.empty(len(values), np.int32)
    _finish(ptr, values, _chunks(ptr, _n_chunks()), int(n_topics), mass, prob, alias)
    return SparsePhi(ptr, topics, values, mass, prob, alias)


def _weighted_tables(ptr, topics, weighted, n_topics):
    """``(prob, alias, mass)``: the per-word alias tables and sums of the entries ``weighted``."""
    mass = np.empty(len(ptr) - 1)
    prob = np.empty(len(weighted))
    alias = np.empty(len(weighted), np.int32)
    _finish(ptr, weighted, _chunks(ptr, _n_chunks()), int(n_topics), mass, prob, alias)
    return prob, alias, mass


def bucket_tables(phi: SparsePhi, alpha) -> SparsePhi:
    """``phi`` with the word-bucket tables of the MH z-step: alias tables of
    ``alpha_k phi_{k,w}`` over each word's non-zeros, ``mass[w] = sum_k alpha_k phi_{k,w}``.

    ``alpha`` float64 (K,).  Symmetric: the tables of ``phi`` are kept (same law)
    and ``mass`` scaled, O(V); asymmetric: rebuilt, O(nnz), as :func:`finish_sparse_phi`.
    """
    if is_symmetric(alpha):
        return phi._replace(mass=phi.mass * float(np.asarray(alpha).flat[0]))
    alpha = np.asarray(alpha, dtype=np.float64)
    weighted = phi.values * alpha[phi.topics]
    prob, alias, mass = _weighted_tables(phi.ptr, phi.topics, weighted, len(alpha))
    return SparsePhi(phi.ptr, phi.topics, phi.values, mass, prob, alias)


def weighted_word_tables(ptr, topics, phi_wk, alpha):
    """``(prob, alias, mass)`` of :func:`bucket_tables` from the sparse layout
    (``ptr``, ``topics``) and the dense word-major ``phi_wk`` (V, K)."""
    alpha = np.asarray(alpha, dtype=np.float64)
    words = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    weighted = phi_wk[words, topics] * alpha[topics]
    return _weighted_tables(np.asarray(ptr, np.int64), topics, weighted, len(alpha))


def _phi_step(iteration):
    if iteration < 0:
        return STEP_INIT, _INIT_BLOCK
    return int(iteration) * 16 + STEP_PHI, 0


def polya_counts(counts: WordCounts, n_topics, beta, seed, iteration):
    """The integer Pólya-urn draw ``c_{k,w} ~ Poisson(beta + n_{k,w})`` by word, non-zeros only.

    Returns
    -------
    ptr : int64 (V+1,), topics : int32 (nnz,), draws : int64 (nnz,)
        ``c_{k,w} > 0`` by word, topics increasing.
    totals : int64 (K,)
        ``c_k = sum_w c_{k,w}`` (at least 1).
    """
    n_topics = int(n_topics)
    n_words = len(counts.ptr) - 1
    step, offset = _phi_step(iteration)
    seed, step, offset = np.int64(seed), np.int64(step), np.int64(offset)
    bounds = _chunks(counts.ptr, _n_chunks())
    draws = np.empty(len(counts.counts), np.int64)
    totals = np.empty((len(bounds) - 1, n_topics), np.int64)
    _count_parts(counts.ptr, counts.counts, seed, step, offset, bounds, n_topics, counts.topics,
                 draws, totals)
    count_total = totals.sum(axis=0)
    hits = np.empty(n_topics, np.int64)
    _prior_hit_numbers(count_total, n_words, float(beta), seed, step, offset, hits)
    hit_ptr = np.zeros(n_topics + 1, np.int64)
    np.cumsum(hits, out=hit_ptr[1:])
    hit_words = np.empty(int(hit_ptr[-1]), np.int64)
    _prior_hit_words(count_total, n_words, float(beta), seed, step, offset, hit_ptr,
                     hit_words)
    wptr, wtopics = _hits_by_word(hit_ptr, hit_words, n_words)
    cap = np.diff(counts.ptr) + np.diff(wptr)
    cap_ptr = np.zeros(n_words + 1, np.int64)
    np.cumsum(cap, out=cap_ptr[1:])
    out_topics = np.empty(int(cap_ptr[-1]), np.int32)
    out_draws = np.empty(int(cap_ptr[-1]), np.int64)
    length = np.empty(n_words, np.int64)
    _assemble(counts.ptr, counts.topics, draws, wptr, wtopics, cap_ptr,
              _chunks(cap_ptr, _n_chunks()), out_topics, out_draws, length)
    ptr, topics, c = _compact_pairs(cap_ptr, length, out_topics, out_draws)
    return ptr, topics, c, count_total + hits


@njit(cache=True, parallel=True)
def _normalise(ptr, topics, c, inv_total, values):
    for w in prange(len(ptr) - 1):
        for j in range(ptr[w], ptr[w + 1]):
            values[j] = c[j] * inv_total[topics[j]]


def polya_phi(counts: WordCounts, n_topics, beta, seed, iteration) -> SparsePhi:
    """The Pólya-urn draw of Phi from ``n_{k,w}``, parallel over words and topics.

    Parameters
    ----------
    counts : WordCounts
        ``n_{k,w}`` by word.
    n_topics : int
        ``K``.
    beta : float
        Dirichlet (here: Poisson) prior mass per entry.
    seed, iteration : int
        Chain seed and iteration ``t`` (``-1``: the initial draw).

    Returns
    -------
    SparsePhi
        ``phi_{k,w} = c_{k,w} / c_k`` (:func:`polya_counts`) for the non-zero
        ``c_{k,w}``, with alias tables.
    """
    ptr, topics, c, totals = polya_counts(counts, n_topics, beta, seed, iteration)
    values = np.empty(len(c), np.float32)
    _normalise(ptr, topics, c, 1.0 / totals.astype(np.float64), values)
    return finish_sparse_phi(ptr, topics, values, n_topics)


# ------------------------------------------------------ dense view of Phi
@njit(cache=True, parallel=True)
def _scatter(ptr, topics, values, phi_wk, clear):
    for w in prange(len(ptr) - 1):
        for j in range(ptr[w], ptr[w + 1]):
            phi_wk[w, topics[j]] = 0.0 if clear else values[j]


def write_dense(phi: SparsePhi, out, previous: SparsePhi | None = None):
    """Write ``phi`` into the word-major float32 ``out`` (V, K) in place.

    With ``previous`` (the draw ``out`` holds now) only its non-zeros are
    cleared, so the update costs O(nnz), not O(V K); otherwise ``out`` is
    zeroed first.
    """
    if previous is None:
        out.fill(0.0)
    else:
        _scatter(previous.ptr, previous.topics, previous.values, out, True)
    _scatter(phi.ptr, phi.topics, phi.values, out, False)
    return out


def dense(phi: SparsePhi, n_topics):
    """A new word-major float32 (V, K) array holding ``phi``."""
    return write_dense(phi, np.empty((len(phi.ptr) - 1, int(n_topics)), np.float32))


@njit(cache=True, parallel=True)
def _row_nnz(phi_wk, nnz):
    for w in prange(phi_wk.shape[0]):
        m = 0
        for k in range(phi_wk.shape[1]):
            if phi_wk[w, k] != 0.0:
                m += 1
        nnz[w] = m


@njit(cache=True, parallel=True)
def _gather(phi_wk, ptr, topics, values):
    for w in prange(phi_wk.shape[0]):
        j = ptr[w]
        for k in range(phi_wk.shape[1]):
            v = phi_wk[w, k]
            if v != 0.0:
                topics[j] = k
                values[j] = v
                j += 1


def from_dense(phi_wk) -> SparsePhi:
    """:class:`SparsePhi` of a word-major float32 Phi (its non-zeros): O(V K), for resumed chains.

    For a Pólya-urn draw this gives back exactly the :class:`SparsePhi` it was written from.
    """
    phi_wk = np.ascontiguousarray(phi_wk, dtype=np.float32)
    nnz = np.empty(phi_wk.shape[0], np.int64)
    _row_nnz(phi_wk, nnz)
    ptr = np.zeros(phi_wk.shape[0] + 1, np.int64)
    np.cumsum(nnz, out=ptr[1:])
    topics = np.empty(int(ptr[-1]), np.int32)
    values = np.empty(int(ptr[-1]), np.float32)
    _gather(phi_wk, ptr, topics, values)
    return finish_sparse_phi(ptr, topics, values, phi_wk.shape[1])
