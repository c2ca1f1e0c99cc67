"""Topic indicators and their counts: the initial z, n_{d,k}, n_{k,w} (dense and sparse) and the
exact merge of shard counts (integer sums, so any thread count gives the same result).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .prefetch import prefetch
from .rng import STEP_INIT, stream, uniform


#: Block offset of the topic streams of the initial Phi draw, kept apart from
#: the document streams of the initial z (both use step ``STEP_INIT``).
_INIT_PHI_BLOCK = 1 << 40


# --------------------------------------------------------------------- start
@njit(cache=True)
def _init_topics(doc_ptr, z, ndk, seed):
    """Serial: once per fit, tens of milliseconds for millions of tokens, where a parallel
    region would cost about a second of the first run's compile."""
    n_docs, n_topics = ndk.shape
    for d in range(n_docs):
        state = stream(seed, STEP_INIT, d)
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            u, state = uniform(state)
            k = min(int(u * n_topics), n_topics - 1)
            z[i] = k
            ndk[d, k] += 1


def init_topics(tokens, doc_ptr, n_topics, seed):
    """Uniform random topic indicators, one stream per document.

    Returns
    -------
    z : int32 (N,)
        ``z_{d,i}``.
    ndk : int32 (D, K)
        ``n_{d,k}``.
    """
    z = np.empty(len(tokens), np.int32)
    ndk = np.zeros((len(doc_ptr) - 1, int(n_topics)), np.int32)
    _init_topics(doc_ptr, z, ndk, np.int64(seed))
    return z, ndk


@njit(cache=True)
def _count(tokens, z, nkw):
    for i in range(len(tokens)):
        nkw[z[i], tokens[i]] += 1


def topic_word_counts(tokens, z, n_topics, n_words):
    """``n_{k,w}``: int32 (K, V), tokens of word ``w`` assigned to topic ``k``.

    A serial O(N) pass: integer sums, so the result cannot depend on threads,
    and it costs far less than the O(K V) Phi draw that follows it.
    """
    nkw = np.zeros((int(n_topics), int(n_words)), np.int32)
    _count(tokens, z, nkw)
    return nkw


class SparseCounts(NamedTuple):
    """Topic-word counts ``n_{k,w}`` in CSR layout by topic (only the non-zero ones).

    Attributes
    ----------
    ptr : int64 (K+1,)      topic ``k`` owns entries ``ptr[k]:ptr[k+1]``.
    words : int32 (nnz,)    word ids, increasing within a topic.
    counts : int32 (nnz,)   ``n_{k,w} > 0``.
    """

    ptr: np.ndarray
    words: np.ndarray
    counts: np.ndarray


def word_index(tokens, n_words):
    """Token positions grouped by word, computed once per corpus.

    Returns
    -------
    word_ptr : int64 (V+1,)
        Word ``w`` owns ``order[word_ptr[w]:word_ptr[w+1]]``.
    order : int64 (N,)
        Token positions sorted by word id (stable).
    """
    order = np.argsort(tokens, kind="stable").astype(np.int64)
    word_ptr = np.zeros(int(n_words) + 1, np.int64)
    np.cumsum(np.bincount(tokens, minlength=int(n_words)), out=word_ptr[1:])
    return word_ptr, order


#: Chunks of words (of about equal token counts) the count kernel works on in parallel; the
#: result does not depend on it.
COUNT_CHUNKS = 32

#: Token positions ahead whose topic the count kernel prefetches (``z[order[j]]`` is a
#: random read of z).
_COUNT_AHEAD = 16


#: Phases of :func:`_count_parts`, the sparse counts' one parallel kernel.
_PHASE_TOPICS, _PHASE_SCATTER, _PHASE_RUNS, _PHASE_FILL = 0, 1, 2, 3
#: Parallel tasks of a per-topic phase of :func:`_count_parts` (at most).
_COUNT_TOPIC_PARTS = 64


@njit(cache=True)
def _chunk_topics(c, word_ptr, order, z, chunks, topic, hist):
    """Chunk ``c``: the topics of its tokens in word order into ``topic``, counted in
    ``hist[c]``."""
    lo, hi = word_ptr[chunks[c]], word_ptr[chunks[c + 1]]
    for j in range(lo, hi):
        if j + _COUNT_AHEAD < hi:
            prefetch(z, order[j + _COUNT_AHEAD])
        k = z[order[j]]
        topic[j] = k
        hist[c, k] += 1


@njit(cache=True)
def _chunk_scatter(c, word_ptr, chunks, topic, fill, buf):
    """Chunk ``c``'s words into their topics' buckets of ``buf``, in word order, from the
    places ``fill[c]``."""
    for w in range(chunks[c], chunks[c + 1]):
        for j in range(word_ptr[w], word_ptr[w + 1]):
            k = topic[j]
            buf[fill[c, k]] = w
            fill[c, k] += 1


@njit(cache=True)
def _topic_runs(k, bucket_ptr, buf, runs):
    """``runs[k + 1]``: the distinct words of topic ``k``'s (sorted) bucket."""
    last = -1
    m = 0
    for j in range(bucket_ptr[k], bucket_ptr[k + 1]):
        if buf[j] != last:
            m += 1
            last = buf[j]
    runs[k + 1] = m


@njit(cache=True)
def _topic_fill(k, bucket_ptr, buf, ptr, words, counts):
    """Topic ``k``'s runs of equal words as (word, count) pairs from ``ptr[k]`` on."""
    at = ptr[k] - 1
    last = -1
    for j in range(bucket_ptr[k], bucket_ptr[k + 1]):
        w = buf[j]
        if w == last:
            counts[at] += 1
        else:
            at += 1
            words[at] = w
            counts[at] = 1
            last = w


@njit(cache=True, parallel=True)
def _count_parts(phase, n_parts, word_ptr, order, z, chunks, topic, hist, fill, buf,
                 bucket_ptr, runs, ptr, words, counts):
    """One phase of :func:`_sparse_counts` in ``n_parts`` parallel tasks: chunks of words
    (``_PHASE_TOPICS``, ``_PHASE_SCATTER``; one task per chunk) or contiguous shares of the
    topics (``_PHASE_RUNS``, ``_PHASE_FILL``).  One kernel for the four phases, so that
    numba builds one parallel region, not four (each costs seconds of the first run's
    compile)."""
    n_topics = len(bucket_ptr) - 1
    for part_ in prange(n_parts):
        part = np.int64(part_)  # the parallel body's index is unsigned: one signature
        if phase == _PHASE_TOPICS:
            _chunk_topics(part, word_ptr, order, z, chunks, topic, hist)
        elif phase == _PHASE_SCATTER:
            _chunk_scatter(part, word_ptr, chunks, topic, fill, buf)
        else:
            for k in range(part * n_topics // n_parts, (part + 1) * n_topics // n_parts):
                if phase == _PHASE_RUNS:
                    _topic_runs(k, bucket_ptr, buf, runs)
                else:
                    _topic_fill(k, bucket_ptr, buf, ptr, words, counts)


def _sparse_counts(word_ptr, order, z, n_topics, chunks):
    """``n_{k,w}`` topic-major (ptr, words, counts), from the word index, in parallel.

    Words are cut into consecutive chunks (``chunks``: word bounds).  Each chunk reads the
    topics of its tokens once (``topic``, in word order) and counts them per topic; a
    prefix over (topic, chunk) gives every chunk its place in every topic's bucket, so each
    chunk writes its words there in word order and every bucket ends up sorted by word with
    no sort; runs of equal words are then counted per topic.  Integer work in a fixed
    layout: the same arrays for any chunks and threads.
    """
    n_chunks = len(chunks) - 1
    n_tokens = len(order)
    topic = np.empty(n_tokens, np.int32)  # z of the tokens in word order
    hist = np.zeros((n_chunks, n_topics), np.int64)
    fill = np.empty((n_chunks, n_topics), np.int64)
    bucket_ptr = np.empty(n_topics + 1, np.int64)
    buf = np.empty(n_tokens, np.int32)  # each topic's words, sorted
    runs = np.zeros(n_topics + 1, np.int64)
    ptr = np.empty(n_topics + 1, np.int64)
    topic_parts = max(1, min(n_topics, _COUNT_TOPIC_PARTS))

    def phase(which, n_parts, words, counts):
        _count_parts(which, np.int64(n_parts), word_ptr, order, z, chunks, topic, hist, fill,
                     buf, bucket_ptr, runs, ptr, words, counts)

    unused = np.empty(0, np.int32)  # words and counts, before their sizes are known
    phase(_PHASE_TOPICS, n_chunks, unused, unused)
    # every chunk's place in every topic's bucket: topic-major running sum of hist
    flat = hist.T.ravel()
    starts = (np.cumsum(flat) - flat).reshape(n_topics, n_chunks)
    fill[:] = starts.T
    bucket_ptr[:-1] = starts[:, 0]
    bucket_ptr[-1] = n_tokens
    phase(_PHASE_SCATTER, n_chunks, unused, unused)
    phase(_PHASE_RUNS, topic_parts, unused, unused)
    np.cumsum(runs, out=ptr)
    words = np.empty(ptr[n_topics], np.int32)
    counts = np.empty(ptr[n_topics], np.int32)
    phase(_PHASE_FILL, topic_parts, words, counts)
    return ptr, words, counts


def count_chunks(word_ptr, n_chunks=None):
    """Word bounds (int64) of at most ``n_chunks`` consecutive chunks of about equal token
    counts (None: :data:`COUNT_CHUNKS`, fewer for a small corpus, one per 4096 tokens)."""
    n_words, n_tokens = len(word_ptr) - 1, int(word_ptr[-1])
    if n_chunks is None:
        n_chunks = min(COUNT_CHUNKS, n_tokens // 4096 + 1)
    n_chunks = max(1, min(int(n_chunks), n_words))
    bounds = np.searchsorted(word_ptr, np.linspace(0, n_tokens, n_chunks + 1)[1:-1])
    return np.unique(np.concatenate([[0], np.clip(bounds, 0, n_words), [n_words]])).astype(
        np.int64)


def sparse_topic_word_counts(word_ptr, order, z, n_topics, n_chunks=None):
    """``n_{k,w}`` as :class:`SparseCounts` from the word index of :func:`word_index`.

    O(N + V + K) in parallel over chunks of words and over topics (:func:`_sparse_counts`):
    integer counts, the same for any thread count or ``n_chunks``, and no dense K x V array
    to clear every iteration.
    """
    return SparseCounts(*_sparse_counts(word_ptr, order, z, int(n_topics),
                                        count_chunks(word_ptr, n_chunks)))


# ----------------------------------------------------------------------- Phi

@njit(cache=True, inline="always")
def _merge_two_runs(w, c, lo, mid, hi, w_out, c_out):
    """The runs ``lo:mid`` and ``mid:hi`` of ``w`` (each sorted by word) into ``w_out[lo:hi]``,
    sorted, stable, ties in place (``c`` carried along)."""
    i, j, o = lo, mid, lo
    while i < mid and j < hi:
        if w[j] < w[i]:
            w_out[o] = w[j]
            c_out[o] = c[j]
            j += 1
        else:
            w_out[o] = w[i]
            c_out[o] = c[i]
            i += 1
        o += 1
    while i < mid:
        w_out[o] = w[i]
        c_out[o] = c[i]
        i += 1
        o += 1
    while j < hi:
        w_out[o] = w[j]
        c_out[o] = c[j]
        j += 1
        o += 1


@njit(cache=True, parallel=True)
def _merge_counts(ptrs, words, counts, out_words, out_counts, out_len):
    """Per topic (in parallel): the entries of every part, sorted by word, equal words added.

    ``ptrs`` (S, K+1) index the concatenated ``words``/``counts`` of the parts;
    topic ``k``'s result is written from ``ptrs[0, k]``'s position in the
    topic-major layout (the sum of the earlier topics' entry counts).  Each
    part's run is sorted by word (the layout of :func:`sparse_topic_word_counts`),
    so the runs are merged pairwise, O(m log S) per topic of ``m`` entries; a
    part whose run is not sorted sends its topic through a stable sort instead.
    """
    n_parts, n_topics = ptrs.shape[0], ptrs.shape[1] - 1
    start = np.zeros(n_topics + 1, np.int64)
    for k in range(n_topics):
        m = 0
        for s in range(n_parts):
            m += ptrs[s, k + 1] - ptrs[s, k]
        start[k + 1] = start[k] + m
    for k in prange(n_topics):
        m = start[k + 1] - start[k]
        w = np.empty(m, np.int32)
        c = np.empty(m, np.int32)
        bounds = np.empty(n_parts + 1, np.int64)
        bounds[0] = 0
        j = 0
        runs_sorted = True
        for s in range(n_parts):
            for i in range(ptrs[s, k], ptrs[s, k + 1]):
                w[j] = words[i]
                c[j] = counts[i]
                if j > bounds[s] and w[j] < w[j - 1]:
                    runs_sorted = False
                j += 1
            bounds[s + 1] = j
        if runs_sorted:
            w2 = np.empty(m, np.int32)
            c2 = np.empty(m, np.int32)
            n_runs = n_parts
            while n_runs > 1:  # merge neighbouring runs until one is left
                kept = 0
                for r in range(0, n_runs, 2):
                    lo = bounds[r]
                    hi = bounds[min(r + 2, n_runs)]
                    mid = bounds[r + 1] if r + 1 < n_runs else hi
                    _merge_two_runs(w, c, lo, mid, hi, w2, c2)
                    bounds[kept] = lo
                    kept += 1
                bounds[kept] = bounds[n_runs]
                n_runs = kept
                w, w2 = w2, w
                c, c2 = c2, c
        else:
            order = np.argsort(w, kind="mergesort")
            w = w[order]
            c = c[order]
        n_out = 0
        last = -1
        base = start[k]
        for i in range(m):
            if w[i] == last:
                out_counts[base + n_out - 1] += c[i]
            else:
                out_words[base + n_out] = w[i]
                out_counts[base + n_out] = c[i]
                n_out += 1
                last = w[i]
        out_len[k] = n_out


def merge_sparse_counts(parts) -> SparseCounts:
    """The sum of several :class:`SparseCounts` with the same topics (exact; any order).

    The result has the layout of :func:`sparse_topic_word_counts` (words
    increasing within a topic), so the sum of the shards' counts is identical,
    array for array, to the counts of the whole corpus.
    """
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]
    offsets = np.cumsum([0] + [len(p.words) for p in parts])
    ptrs = np.stack([np.asarray(p.ptr, np.int64) + off for p, off in zip(parts, offsets)])
    words = np.concatenate([p.words for p in parts]).astype(np.int32, copy=False)
    counts = np.concatenate([p.counts for p in parts]).astype(np.int32, copy=False)
    n_topics = ptrs.shape[1] - 1
    out_words = np.empty(len(words), np.int32)
    out_counts = np.empty(len(words), np.int32)
    out_len = np.empty(n_topics, np.int64)
    _merge_counts(ptrs, words, counts, out_words, out_counts, out_len)
    start = np.zeros(n_topics + 1, np.int64)
    np.cumsum((ptrs[:, 1:] - ptrs[:, :-1]).sum(axis=0), out=start[1:])
    ptr = np.zeros(n_topics + 1, np.int64)
    np.cumsum(out_len, out=ptr[1:])
    keep = np.repeat(start[:-1] - ptr[:-1], out_len) + np.arange(ptr[-1])
    return SparseCounts(ptr, out_words[keep], out_counts[keep])
