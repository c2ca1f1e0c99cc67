"""The topic-word counts of the Pólya-urn Phi step (:mod:`dolda.sampler.polya`), word-major:
:class:`WordCounts` -- ``n_{k,w}`` by word, counted from ``z`` in parallel over words
(:func:`word_counts`) and merged across shards (:func:`merge_word_counts`), integer sums,
so the same for any grouping -- and the topic part of the LDA log-likelihood read from
them (:func:`topic_log_likelihood_words`).

Every name here is also importable from :mod:`dolda.sampler.polya`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import get_num_threads, njit, prange

from .topic_likelihood import _lgamma_table, lgamma_term


class WordCounts(NamedTuple):
    """Topic-word counts ``n_{k,w}`` in CSR layout by word (non-zero ones only).

    Attributes
    ----------
    ptr : int64 (V+1,)      word ``w`` owns entries ``ptr[w]:ptr[w+1]``.
    topics : int32 (nnz,)   topic ids, increasing within a word.
    counts : int32 (nnz,)   ``n_{k,w} > 0``.
    """

    ptr: np.ndarray
    topics: np.ndarray
    counts: np.ndarray



# ------------------------------------------------------------------ helpers
def _chunks(ptr, n_chunks):
    """Word bounds of ``n_chunks`` ranges with about equal numbers of entries ``ptr``."""
    n_words = len(ptr) - 1
    total = int(ptr[-1])
    n_chunks = max(1, min(int(n_chunks), n_words))
    targets = (np.arange(1, n_chunks) * total) // n_chunks
    inner = np.searchsorted(ptr, targets, side="left")
    return np.unique(np.concatenate([[0], inner, [n_words]])).astype(np.int64)


def _n_chunks():
    return 8 * max(1, get_num_threads())


@njit(cache=True, inline="always")
def _sorted_topics(a, n, scratch):
    """Sort the ``n`` distinct topics ``a[:n]`` (all with ``scratch[k] != 0``) in place.

    Insertion sort for short lists; for long ones (frequent words) a scan of
    ``scratch`` over all K topics, O(K), instead of O(n^2).
    """
    if n * n > 4 * len(scratch):
        j = 0
        for k in range(len(scratch)):
            if scratch[k] != 0:
                a[j] = k
                j += 1
        return
    for i in range(1, n):
        x = a[i]
        j = i - 1
        while j >= 0 and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True, parallel=True)
def _compact(cap_ptr, length, src_a, src_b, ptr, dst_a, dst_b):
    """Copy word ``w``'s ``length[w]`` entries from ``cap_ptr[w]`` to ``ptr[w]`` (parallel)."""
    for w in prange(len(length)):
        s, d = cap_ptr[w], ptr[w]
        for j in range(length[w]):
            dst_a[d + j] = src_a[s + j]
            dst_b[d + j] = src_b[s + j]


def _compact_pairs(cap_ptr, length, a, b):
    ptr = np.zeros(len(length) + 1, np.int64)
    np.cumsum(length, out=ptr[1:])
    out_a = np.empty(int(ptr[-1]), a.dtype)
    out_b = np.empty(int(ptr[-1]), b.dtype)
    _compact(cap_ptr, length, a, b, ptr, out_a, out_b)
    return ptr, out_a, out_b


# ------------------------------------------------------------------- counts
@njit(cache=True, parallel=True)
def _word_counts(word_ptr, order, z, n_topics, bounds, topics, counts, length):
    """Per word (chunks in parallel): the distinct topics of its tokens, sorted, with counts.

    Writes at ``word_ptr[w]`` (capacity: the word's token count).
    """
    for c in prange(len(bounds) - 1):
        scratch = np.zeros(n_topics, np.int32)
        for w in range(bounds[c], bounds[c + 1]):
            lo = word_ptr[w]
            m = 0
            for j in range(lo, word_ptr[w + 1]):
                k = z[order[j]]
                if scratch[k] == 0:
                    topics[lo + m] = k
                    m += 1
                scratch[k] += 1
            _sorted_topics(topics[lo:lo + m], m, scratch)
            for j in range(lo, lo + m):
                k = topics[j]
                counts[j] = scratch[k]
                scratch[k] = 0
            length[w] = m


def word_counts(word_ptr, order, z, n_topics) -> WordCounts:
    """``n_{k,w}`` as :class:`WordCounts` from the word index
    (:func:`dolda.sampler.counts.word_index`).

    Parallel over words, O(N + nnz log) work; integer counts, independent of
    the thread count.
    """
    n_words = len(word_ptr) - 1
    n_tokens = int(word_ptr[-1])
    topics = np.empty(n_tokens, np.int32)
    counts = np.empty(n_tokens, np.int32)
    length = np.empty(n_words, np.int64)
    _word_counts(word_ptr, order, z, int(n_topics), _chunks(word_ptr, _n_chunks()), topics,
                 counts, length)
    return WordCounts(*_compact_pairs(word_ptr, length, topics, counts))


@njit(cache=True, parallel=True)
def _merge_word_counts(ptrs, topics, counts, n_topics, cap_ptr, bounds, out_topics, out_counts,
                       length):
    n_parts = ptrs.shape[0]
    for c in prange(len(bounds) - 1):
        scratch = np.zeros(n_topics, np.int32)
        for w in range(bounds[c], bounds[c + 1]):
            lo = cap_ptr[w]
            m = 0
            for s in range(n_parts):
                for j in range(ptrs[s, w], ptrs[s, w + 1]):
                    k = topics[j]
                    if scratch[k] == 0:
                        out_topics[lo + m] = k
                        m += 1
                    scratch[k] += counts[j]
            _sorted_topics(out_topics[lo:lo + m], m, scratch)
            for j in range(lo, lo + m):
                k = out_topics[j]
                out_counts[j] = scratch[k]
                scratch[k] = 0
            length[w] = m


def merge_word_counts(parts, n_topics) -> WordCounts:
    """The sum of several :class:`WordCounts` (exact; the result does not depend on the order)."""
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [len(p.topics) for p in parts])
    ptrs = np.stack([np.asarray(p.ptr, np.int64) + off for p, off in zip(parts, offsets)])
    topics = np.concatenate([p.topics for p in parts]).astype(np.int32, copy=False)
    counts = np.concatenate([p.counts for p in parts]).astype(np.int32, copy=False)
    cap = (ptrs[:, 1:] - ptrs[:, :-1]).sum(axis=0)
    cap_ptr = np.zeros(len(cap) + 1, np.int64)
    np.cumsum(cap, out=cap_ptr[1:])
    n_words = len(cap)
    out_topics = np.empty(int(cap_ptr[-1]), np.int32)
    out_counts = np.empty(int(cap_ptr[-1]), np.int32)
    length = np.empty(n_words, np.int64)
    _merge_word_counts(ptrs, topics, counts, int(n_topics), cap_ptr,
                       _chunks(cap_ptr, _n_chunks()), out_topics, out_counts, length)
    return WordCounts(*_compact_pairs(cap_ptr, length, out_topics, out_counts))


@njit(cache=True, parallel=True)
def _topic_loglik_words(ptr, topics, counts, beta, bounds, n_topics, part, totals):
    lg_beta = math.lgamma(beta)
    table = _lgamma_table(beta, lg_beta)  # lgamma(c + beta) - lg_beta, small c
    for c in prange(len(bounds) - 1):
        tot = np.zeros(n_topics, np.int64)
        for w in range(bounds[c], bounds[c + 1]):
            acc = 0.0
            for j in range(ptr[w], ptr[w + 1]):
                n = counts[j]
                acc += lgamma_term(table, n, beta, lg_beta)
                tot[topics[j]] += n
            part[w] = acc
        for k in range(n_topics):
            totals[c, k] = tot[k]


def topic_log_likelihood_words(counts: WordCounts, n_topics, beta) -> float:
    """``sum_k log p(w | z, beta)``, the topic part of the LDA log-likelihood, from
    :class:`WordCounts`.

    Per-word parts summed in word order, so the value is the same for any
    thread count and any sharding.
    """
    n_words = len(counts.ptr) - 1
    bounds = _chunks(counts.ptr, _n_chunks())
    part = np.empty(n_words)
    totals = np.empty((len(bounds) - 1, int(n_topics)), np.int64)
    _topic_loglik_words(counts.ptr, counts.topics, counts.counts, float(beta), bounds,
                        int(n_topics), part, totals)
    n_k = totals.sum(axis=0)
    vb = n_words * float(beta)
    topic = sum(math.lgamma(vb) - math.lgamma(float(n) + vb) for n in n_k)
    return float(math.fsum(part) + topic)

