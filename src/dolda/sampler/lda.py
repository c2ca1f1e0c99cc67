"""Numba kernels of the partially collapsed LDA sampler (paper section 3.1).

With the topics ``Phi`` sampled instead of integrated out, the documents are
independent given ``Phi`` and the topic indicators are drawn from

    p(z_{d,i} = k | .) ∝ phi_{k,w} (n_{d,k}^{-i} + alpha),        w = w_{d,i}

one document per parallel task, after which ``phi_k ~ Dir(beta + n_{k,.})``
is drawn one topic per parallel task.  The blocks:

* :func:`init_topics`, :func:`topic_word_counts` -- start and count.
* :func:`draw_phi` -- the Phi draw; :func:`word_major` lays it out word-major
  (``phi_wk``, V x K) for the z-sweeps.
* :func:`sweep_dense` -- exact draw, O(K) per token.
* :func:`sweep_sparse` -- the same conditional split as
  ``alpha phi_{k,w} + n_{d,k} phi_{k,w}`` (Magnusson et al. 2018): the first
  bucket from a Walker alias table of ``phi_{.,w}`` (:func:`build_alias_tables`,
  built once per iteration), the second by walking the document's non-zero
  topics.  O(K_d) per token; exact, not Metropolis-Hastings.
* :func:`lda_log_likelihood` -- ``log p(w, z)`` with theta and Phi integrated out.
* :func:`predict_topic_proportions` -- z-sampling for new documents with Phi fixed.

Randomness: document ``d`` of sweep ``t`` draws from
``stream(seed, t*16 + STEP_Z, d)`` and topic ``k`` from
``stream(seed, t*16 + STEP_PHI, k)``; the topic-word counts are integer sums.
Every result is therefore identical for any number of threads.

The per-document bodies (:func:`resample_document_dense`,
:func:`resample_document_sparse`) are separate functions so that the
supervised sampler can reuse the pieces (:mod:`dolda.sampler.supervised`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .rng import (
    STEP_INIT,
    STEP_PHI,
    STEP_PREDICT,
    STEP_Z,
    log_gamma_variate,
    stream,
    uniform,
    uniform_open,
)

__all__ = [
    "ALIAS_MIN_TOKENS", "AliasTables", "SPARSE_MIN_TOPICS", "alias_rows", "build_alias_tables", "draw_phi", "init_topics",
    "lda_doc_log_likelihood", "lda_log_likelihood", "lda_topic_log_likelihood",
    "predict_topic_proportions", "resolve_sampler", "sweep",
    "sweep_dense", "sweep_sparse", "topic_word_counts", "word_major",
]

#: ``sampler="auto"`` uses the sparse sweep from this many topics on (see
#: ``benchmarks/results/lda_throughput.md`` for the measurement behind it).
SPARSE_MIN_TOPICS = 100

#: Block offset of the topic streams of the initial Phi draw, kept apart from
#: the document streams of the initial z (both use step ``STEP_INIT``).
_INIT_PHI_BLOCK = 1 << 40


# --------------------------------------------------------------------- start
@njit(cache=True, parallel=True)
def _init_topics(doc_ptr, z, ndk, seed):
    n_docs, n_topics = ndk.shape
    for d in prange(n_docs):
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


@njit(cache=True)
def _sparse_counts(word_ptr, order, z, n_topics):
    n_words = len(word_ptr) - 1
    n_tokens = len(order)
    fill = np.zeros(n_topics + 1, np.int64)
    for i in range(n_tokens):
        fill[z[i] + 1] += 1
    for k in range(n_topics):
        fill[k + 1] += fill[k]
    bucket_ptr = fill.copy()
    buf = np.empty(n_tokens, np.int32)
    for w in range(n_words):  # words in order, so every bucket ends up sorted
        for j in range(word_ptr[w], word_ptr[w + 1]):
            k = z[order[j]]
            buf[fill[k]] = w
            fill[k] += 1
    ptr = np.zeros(n_topics + 1, np.int64)
    words = np.empty(n_tokens, np.int32)
    counts = np.empty(n_tokens, np.int32)
    nnz = 0
    for k in range(n_topics):
        last = -1
        for j in range(bucket_ptr[k], bucket_ptr[k + 1]):
            w = buf[j]
            if w == last:
                counts[nnz - 1] += 1
            else:
                words[nnz] = w
                counts[nnz] = 1
                nnz += 1
                last = w
        ptr[k + 1] = nnz
    return ptr, words[:nnz].copy(), counts[:nnz].copy()


def sparse_topic_word_counts(word_ptr, order, z, n_topics):
    """``n_{k,w}`` as :class:`SparseCounts` from the word index of :func:`word_index`.

    Serial O(N + V + K): integer counts, independent of the thread count, and
    no dense K x V array to clear every iteration.
    """
    return SparseCounts(*_sparse_counts(word_ptr, order, z, int(n_topics)))


# ----------------------------------------------------------------------- Phi
@njit(cache=True, inline="always")
def log_gamma_small(shape, state):
    """``log G`` with ``G ~ Gamma(shape, 1)`` for ``0 < shape < 1``; returns ``(log G, state)``.

    Ahrens & Dieter (1974) algorithm GS, carried out in log space so that
    ``G = P**(1/shape)`` never underflows (``shape = 0.01`` gives values like
    ``exp(-300)``).  With ``b = 1 + shape/e`` and ``P = b U``: if ``P <= 1``,
    ``X = P**(1/shape)`` is accepted with probability ``exp(-X)``, otherwise
    ``X = -log((b - P)/shape)`` with probability ``X**(shape - 1)``.  When
    ``log X < -40`` the acceptance probability is 1 to double precision and
    no second uniform is drawn.  About one uniform and one log per draw, a
    third of the cost of :func:`dolda.sampler.rng.log_gamma_variate`; used for
    the zero-count entries ``n_{k,w} = 0`` that make up most of the Phi draw.
    """
    inv = 1.0 / shape
    b = 1.0 + shape / math.e
    while True:
        u, state = uniform_open(state)
        p = b * u
        if p <= 1.0:
            log_x = math.log(p) * inv
            if log_x < -40.0:
                return log_x, state
            u2, state = uniform(state)
            if u2 <= math.exp(-math.exp(log_x)):
                return log_x, state
        else:
            x = -math.log((b - p) * inv)
            u2, state = uniform(state)
            if u2 <= x ** (shape - 1.0):
                return math.log(x), state


@njit(cache=True)
def _log_gamma_small_many(shape, seed, n):
    """``n`` draws of :func:`log_gamma_small` from one stream (for tests)."""
    out = np.empty(n)
    state = stream(seed, 0, 0)
    for i in range(n):
        out[i], state = log_gamma_small(shape, state)
    return out


@njit(cache=True, inline="always")
def _int_power(x, n):
    """``x**n`` for a positive integer ``n`` by binary exponentiation."""
    result = 1.0
    while n > 0:
        if n & 1:
            result *= x
        x *= x
        n >>= 1
    return result


@njit(cache=True, inline="always")
def gamma_small(shape, inv, b, n_int, state):
    """``G ~ Gamma(shape, 1)`` for ``0 < shape < 1`` in linear space; returns ``(G, state)``.

    Algorithm GS of :func:`log_gamma_small` without logarithms where they can
    be avoided: when ``1/shape`` is an integer ``n_int`` (``beta = 0.01`` gives
    100) ``P**(1/shape)`` is ``n_int`` squarings-and-products, otherwise
    ``exp(log(P)/shape)`` (pass ``n_int = 0``).  The acceptance test
    ``U <= exp(-X)`` uses the squeeze ``U <= 1 - X`` first.  Values below
    ~1e-308 underflow to 0; the Phi draw only uses this for rows that also
    hold a ``Gamma(>= 1)`` variate, so such entries are < 1e-290 after
    normalisation either way.  ``inv = 1/shape`` and ``b = 1 + shape/e`` are
    passed in, computed once per row.
    """
    while True:
        u, state = uniform_open(state)
        p = b * u
        if p <= 1.0:
            x = _int_power(p, n_int) if n_int > 0 else math.exp(math.log(p) * inv)
            if x < 1e-17:  # exp(-x) == 1 to double precision: accept
                return x, state
            u2, state = uniform(state)
            if u2 <= 1.0 - x or u2 <= math.exp(-x):
                return x, state
        else:
            x = -math.log((b - p) * inv)
            u2, state = uniform(state)
            if u2 <= x ** (shape - 1.0):
                return x, state


@njit(cache=True)
def _gamma_small_many(shape, n_int, seed, n):
    """``n`` draws of :func:`gamma_small` from one stream (for tests)."""
    out = np.empty(n)
    state = stream(seed, 0, 0)
    for i in range(n):
        out[i], state = gamma_small(shape, 1.0 / shape, 1.0 + shape / math.e, n_int, state)
    return out


def _integer_inverse(beta: float) -> int:
    """``1/beta`` when it is an integer up to 4096 (then :func:`gamma_small` avoids logs), else 0."""
    inv = 1.0 / beta
    n = round(inv)
    return int(n) if beta < 1.0 and n <= 4096 and abs(inv - n) < 1e-9 * inv else 0


@njit(cache=True)
def draw_topic_row(k, ptr, words, counts, beta, n_int, state, row):
    """``phi_k ~ Dir(beta + n_{k,.})`` into ``row`` (V,) float64; returns the stream state.

    ``n_{k,.}`` is given sparsely (:class:`SparseCounts` arrays).  A topic
    holding tokens is drawn in linear space (the ``Gamma(beta + n >= 1)``
    variates bound the total from below, so nothing relevant underflows) with
    the cheap zero-count draws of :func:`gamma_small`; an empty topic, all of
    whose variates may be ~exp(-1000), is drawn and normalised in log space.
    """
    n_words = len(row)
    p, end = ptr[k], ptr[k + 1]
    next_w = words[p] if p < end else n_words
    if end > p and beta < 1.0:
        inv_beta = 1.0 / beta
        b = 1.0 + beta / math.e
        total = 0.0
        for w in range(n_words):
            if w == next_w:
                g, state = log_gamma_variate(beta + counts[p], state)
                x = math.exp(g)
                p += 1
                next_w = words[p] if p < end else n_words
            else:
                x, state = gamma_small(beta, inv_beta, b, n_int, state)
            row[w] = x
            total += x
    else:
        top = -np.inf
        for w in range(n_words):
            if w == next_w:
                g, state = log_gamma_variate(beta + counts[p], state)
                p += 1
                next_w = words[p] if p < end else n_words
            elif beta < 1.0:
                g, state = log_gamma_small(beta, state)
            else:
                g, state = log_gamma_variate(beta, state)
            row[w] = g
            if g > top:
                top = g
        total = 0.0
        for w in range(n_words):
            e = math.exp(row[w] - top)
            row[w] = e
            total += e
    inv = 1.0 / total
    for w in range(n_words):
        row[w] *= inv
    return state


@njit(cache=True, parallel=True)
def _draw_phi(ptr, words, counts, beta, n_int, seed, step, block_offset, phi):
    for k in prange(phi.shape[0]):
        state = stream(seed, step, block_offset + k)
        draw_topic_row(k, ptr, words, counts, beta, n_int, state, phi[k])


def _phi_step(iteration):
    if iteration < 0:
        return STEP_INIT, _INIT_PHI_BLOCK
    return int(iteration) * 16 + STEP_PHI, 0


def draw_phi(nkw, beta, seed, iteration):
    """Draw ``phi_k ~ Dir(beta + n_{k,.})`` for every topic, parallel over topics.

    Each topic draws ``G_{k,w} ~ Gamma(beta + n_{k,w})`` and normalises
    (:func:`draw_topic_row`); an empty topic is drawn in log space, so the
    paper's ``beta = 0.01`` never underflows to a row of zeros.

    Parameters
    ----------
    nkw : int (K, V)
        Topic-word counts ``n_{k,w}``.
    beta : float
        Dirichlet prior of the topics.
    seed : int
        Chain seed.
    iteration : int
        Gibbs iteration ``t`` (streams ``t*16 + STEP_PHI``); ``-1`` draws the
        initial Phi from distinct streams.

    Returns
    -------
    phi : float64 (K, V)
        ``Phi``, rows sum to one.
    """
    nkw = np.asarray(nkw)
    rows, cols = np.nonzero(nkw)
    ptr = np.zeros(nkw.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=nkw.shape[0]), out=ptr[1:])
    phi = np.empty(nkw.shape, np.float64)
    step, offset = _phi_step(iteration)
    _draw_phi(ptr, cols.astype(np.int32), nkw[rows, cols].astype(np.int32), float(beta),
              _integer_inverse(float(beta)), np.int64(seed), np.int64(step),
              np.int64(offset), phi)
    return phi


#: Topics per parallel block of the word-major Phi draw: 16 float32 = one cache line.
_PHI_BLOCK = 16
#: Entries of the float32 ``phi_wk`` below this are stored as 0 (no denormals).
_FLOAT32_TINY = 1e-37


@njit(cache=True, parallel=True)
def _draw_phi_wk(ptr, words, counts, beta, n_int, seed, step, block_offset, phi_wk):
    n_words, n_topics = phi_wk.shape
    n_blocks = (n_topics + _PHI_BLOCK - 1) // _PHI_BLOCK
    for b in prange(n_blocks):
        k_lo = b * _PHI_BLOCK
        nb = min(k_lo + _PHI_BLOCK, n_topics) - k_lo
        scratch = np.empty((nb, n_words))
        for j in range(nb):
            state = stream(seed, step, block_offset + k_lo + j)
            draw_topic_row(k_lo + j, ptr, words, counts, beta, n_int, state, scratch[j])
        for w in range(n_words):
            for j in range(nb):
                v = scratch[j, w]
                phi_wk[w, k_lo + j] = v if v >= _FLOAT32_TINY else 0.0


def draw_phi_word_major(counts: "SparseCounts", beta, seed, iteration, out):
    """The Phi draw of :func:`draw_phi` written straight into word-major float32.

    Same streams and the same variates as :func:`draw_phi` (so the values agree
    up to float32 rounding; entries below 1e-37 are stored as 0, which keeps
    denormals out of the z-sweeps), but from :class:`SparseCounts` and without
    a K x V float64 intermediate: topics are drawn in blocks of 16, each block
    written out one cache line per word.

    Parameters
    ----------
    counts : SparseCounts
        ``n_{k,w}``.
    beta : float
    seed, iteration : int
        As :func:`draw_phi`.
    out : float32 (V, K)
        Receives ``phi_wk = Phi^T``.
    """
    step, offset = _phi_step(iteration)
    _draw_phi_wk(counts.ptr, counts.words, counts.counts, float(beta),
                 _integer_inverse(float(beta)), np.int64(seed), np.int64(step),
                 np.int64(offset), out)
    return out


@njit(cache=True, parallel=True)
def accumulate(phi_wk, acc):
    """``acc += phi_wk`` (V, K), parallel over words: the running sum of kept draws."""
    for w in prange(phi_wk.shape[0]):
        for k in range(phi_wk.shape[1]):
            acc[w, k] += phi_wk[w, k]


@njit(cache=True, parallel=True)
def _transpose(phi, out):
    n_topics, n_words = phi.shape
    block = 64
    n_blocks = (n_words + block - 1) // block
    for b in prange(n_blocks):
        lo = b * block
        hi = min(lo + block, n_words)
        for k in range(n_topics):
            for w in range(lo, hi):
                out[w, k] = phi[k, w]


def word_major(phi):
    """``phi_wk = Phi^T``, float64 (V, K) contiguous: the layout the z-sweeps read."""
    out = np.empty((phi.shape[1], phi.shape[0]), np.float64)
    _transpose(np.ascontiguousarray(phi, dtype=np.float64), out)
    return out


# --------------------------------------------------------------- alias tables
class AliasTables(NamedTuple):
    """Walker alias tables of ``phi_{.,w}`` for (the frequent) words.

    Attributes
    ----------
    prob : float64 (R, K)   keep probability of the uniformly drawn column.
    alias : int32 (R, K)    the other topic of the column.
    mass : float64 (V,)     ``sum_k phi_{k,w}`` of every word.
    row : int32 (V,)        table row of word ``w``, or -1: no table, the
                            sparse sweep then draws from ``phi_{.,w}`` by a
                            linear scan.
    """

    prob: np.ndarray
    alias: np.ndarray
    mass: np.ndarray
    row: np.ndarray


#: Words with at least this many tokens get an alias table.  A table costs
#: about 25 ns per topic to build every iteration; without one, each draw from
#: the word bucket scans ~K/2 entries at ~1 ns.  With a word-bucket share of
#: 0.2-0.5 of the tokens the table pays from ~100-250 tokens of the word on.
ALIAS_MIN_TOKENS = 128

_ALIAS_CHUNK = 256


@njit(cache=True, parallel=True)
def _word_mass(phi_wk, mass):
    for w in prange(phi_wk.shape[0]):
        total = 0.0
        for k in range(phi_wk.shape[1]):
            total += phi_wk[w, k]
        mass[w] = total


@njit(cache=True, parallel=True)
def _build_alias(phi_wk, table_words, prob, alias, mass):
    n_topics = phi_wk.shape[1]
    n_rows = len(table_words)
    n_chunks = (n_rows + _ALIAS_CHUNK - 1) // _ALIAS_CHUNK
    for c in prange(n_chunks):
        small = np.empty(n_topics, np.int32)
        large = np.empty(n_topics, np.int32)
        for r in range(c * _ALIAS_CHUNK, min((c + 1) * _ALIAS_CHUNK, n_rows)):
            w = table_words[r]
            total = mass[w]
            n_small = 0
            n_large = 0
            scale = n_topics / total if total > 0.0 else 0.0
            for k in range(n_topics):
                p = phi_wk[w, k] * scale if total > 0.0 else 1.0
                prob[r, k] = p
                alias[r, k] = k
                if p < 1.0:
                    small[n_small] = k
                    n_small += 1
                else:
                    large[n_large] = k
                    n_large += 1
            while n_small > 0 and n_large > 0:
                n_small -= 1
                s = small[n_small]
                g = large[n_large - 1]
                alias[r, s] = g
                prob[r, g] = prob[r, g] + prob[r, s] - 1.0
                if prob[r, g] < 1.0:
                    n_large -= 1
                    small[n_small] = g
                    n_small += 1
            # leftovers are 1 up to rounding
            for i in range(n_large):
                prob[r, large[i]] = 1.0
            for i in range(n_small):
                prob[r, small[i]] = 1.0


def alias_rows(word_counts, min_tokens=ALIAS_MIN_TOKENS):
    """Table row of every word with at least ``min_tokens`` tokens, -1 for the others (V,)."""
    word_counts = np.asarray(word_counts)
    has = word_counts >= min_tokens
    row = np.full(len(word_counts), -1, np.int32)
    row[has] = np.arange(int(has.sum()), dtype=np.int32)
    return row


def build_alias_tables(phi_wk, row=None, out: AliasTables | None = None):
    """Alias tables of the words' topic columns ``phi_{.,w}``, parallel over words.

    Parameters
    ----------
    phi_wk : float (V, K)
        Word-major topics (:func:`word_major` or :func:`draw_phi_word_major`).
    row : int32 (V,) or None
        Which words get a table (:func:`alias_rows`); None: every word.
    out : AliasTables or None
        Buffers to fill (reused across iterations); new ones when None.

    Returns
    -------
    AliasTables
        Drawing ``k`` with probability ``phi_{k,w} / mass[w]`` costs O(1).
    """
    n_words, n_topics = phi_wk.shape
    if out is None:
        if row is None:
            row = np.arange(n_words, dtype=np.int32)
        n_rows = int((row >= 0).sum())
        out = AliasTables(np.empty((n_rows, n_topics), np.float64),
                          np.empty((n_rows, n_topics), np.int32),
                          np.empty(n_words, np.float64), np.asarray(row, np.int32))
    table_words = np.flatnonzero(out.row >= 0).astype(np.int64)
    _word_mass(phi_wk, out.mass)
    _build_alias(phi_wk, table_words, out.prob, out.alias, out.mass)
    return out


@njit(cache=True, inline="always")
def alias_draw(prob_row, alias_row, state):
    """Draw a topic from one word's alias table; returns ``(k, state)``."""
    n_topics = len(prob_row)
    u, state = uniform(state)
    x = u * n_topics
    k = min(int(x), n_topics - 1)
    if x - k >= prob_row[k]:
        k = alias_row[k]
    return k, state


# ------------------------------------------------------------------ z-sweeps
@njit(cache=True, inline="always")
def fill_cumulative(phi_row, ndk_row, alpha, cum):
    """``cum[k] = sum_{j<=k} phi_{j,w} (n_{d,j} + alpha)``; returns the total.

    ``phi_row`` is ``phi_wk[w]`` (K,), ``ndk_row`` the document's counts with
    the current token removed.
    """
    total = 0.0
    for k in range(len(cum)):
        total += phi_row[k] * (ndk_row[k] + alpha)
        cum[k] = total
    return total


@njit(cache=True, inline="always")
def search_cumulative(cum, n, target):
    """Smallest ``j < n`` with ``cum[j] > target`` (the last index if none)."""
    j = 0
    while j < n - 1 and cum[j] <= target:
        j += 1
    return j


@njit(cache=True)
def resample_document_dense(start, stop, tokens, z, ndk_row, phi_wk, alpha, cum, state):
    """Gibbs-resample the tokens ``start:stop`` of one document in order; returns the state.

    ``ndk_row`` (K,) is updated in place, ``cum`` (K,) is scratch space.
    """
    n_topics = len(ndk_row)
    for i in range(start, stop):
        k0 = z[i]
        ndk_row[k0] -= 1
        total = fill_cumulative(phi_wk[tokens[i]], ndk_row, alpha, cum)
        u, state = uniform(state)
        k1 = search_cumulative(cum, n_topics, u * total)
        z[i] = k1
        ndk_row[k1] += 1
    return state


@njit(cache=True, parallel=True)
def sweep_dense(tokens, doc_ptr, z, ndk, phi_wk, alpha, seed, iteration, doc_offset=0):
    """One exact Gibbs sweep over all tokens, documents in parallel, O(K) per token.

    Parameters
    ----------
    tokens : int32 (N,)       word ids ``w_{d,i}`` (CSR data).
    doc_ptr : int64 (D+1,)    document ``d`` owns ``tokens[doc_ptr[d]:doc_ptr[d+1]]``.
    z : int32 (N,)            topic indicators, updated in place.
    ndk : int32 (D, K)        ``n_{d,k}``, updated in place (each document its own row).
    phi_wk : float64 (V, K)   ``Phi^T`` (word-major).
    alpha : float             Dirichlet prior of theta.
    seed, iteration : int     document ``d`` uses ``stream(seed, iteration*16+STEP_Z, d)``.
    doc_offset : int          global index of document 0 when the arrays are one shard of a
                              corpus: document ``d`` then draws from the stream of
                              ``doc_offset + d``, so any sharding gives the same sweep.
    """
    n_docs, n_topics = ndk.shape
    step = iteration * 16 + STEP_Z
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        if stop == start:
            continue
        cum = np.empty(n_topics)
        state = stream(seed, step, doc_offset + d)
        resample_document_dense(start, stop, tokens, z, ndk[d], phi_wk, alpha, cum, state)


@njit(cache=True)
def resample_document_sparse(start, stop, tokens, z, ndk_row, phi_wk, prob, alias, mass,
                             table_row, alpha, nz, pos, cum, state):
    """Sparse exact Gibbs resampling of one document's tokens; returns the state.

    ``p(k) ∝ alpha phi_{k,w} + n_{d,k} phi_{k,w}``: with probability
    ``alpha mass_w / (alpha mass_w + sum_k n_{d,k} phi_{k,w})`` the topic comes
    from the word's alias table (or, for a word without one, a linear scan of
    ``phi_{.,w}``), otherwise from the document's non-zero topics.  ``nz``,
    ``pos`` and ``cum`` (K,) are scratch space.
    """
    n_topics = len(ndk_row)
    n_nz = 0
    for k in range(n_topics):
        if ndk_row[k] > 0:
            nz[n_nz] = k
            pos[k] = n_nz
            n_nz += 1
        else:
            pos[k] = -1
    for i in range(start, stop):
        w = tokens[i]
        k0 = z[i]
        ndk_row[k0] -= 1
        if ndk_row[k0] == 0:  # swap-remove k0 from the non-zero list
            j = pos[k0]
            last = nz[n_nz - 1]
            nz[j] = last
            pos[last] = j
            pos[k0] = -1
            n_nz -= 1
        phi_row = phi_wk[w]
        doc_mass = 0.0
        for j in range(n_nz):
            k = nz[j]
            doc_mass += ndk_row[k] * phi_row[k]
            cum[j] = doc_mass
        word_mass = alpha * mass[w]
        u, state = uniform(state)
        target = u * (word_mass + doc_mass)
        if target < word_mass or n_nz == 0:
            r = table_row[w]
            if r >= 0:
                k1, state = alias_draw(prob[r], alias[r], state)
            else:
                u2, state = uniform(state)
                target = u2 * mass[w]
                k1 = 0
                acc = float(phi_row[0])
                while acc <= target and k1 < n_topics - 1:
                    k1 += 1
                    acc += phi_row[k1]
        else:
            k1 = nz[search_cumulative(cum, n_nz, target - word_mass)]
        z[i] = k1
        if ndk_row[k1] == 0:
            nz[n_nz] = k1
            pos[k1] = n_nz
            n_nz += 1
        ndk_row[k1] += 1
    return state


@njit(cache=True, parallel=True)
def sweep_sparse(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, table_row, alpha, seed,
                 iteration, doc_offset=0):
    """One sparse exact Gibbs sweep, documents in parallel, O(K_d) per token.

    Samples the same conditional as :func:`sweep_dense`; ``prob``, ``alias``,
    ``mass``, ``table_row`` are the :class:`AliasTables` of ``phi_wk``.  Other arguments as
    :func:`sweep_dense`.
    """
    n_docs, n_topics = ndk.shape
    step = iteration * 16 + STEP_Z
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        if stop == start:
            continue
        nz = np.empty(n_topics, np.int32)
        pos = np.empty(n_topics, np.int32)
        cum = np.empty(n_topics)
        state = stream(seed, step, doc_offset + d)
        resample_document_sparse(start, stop, tokens, z, ndk[d], phi_wk, prob, alias, mass,
                                 table_row, alpha, nz, pos, cum, state)


def resolve_sampler(sampler: str, n_topics: int) -> str:
    """``"auto"`` -> ``"sparse"`` from :data:`SPARSE_MIN_TOPICS` topics on, else ``"dense"``."""
    if sampler == "auto":
        return "sparse" if n_topics >= SPARSE_MIN_TOPICS else "dense"
    return sampler


def sweep(tokens, doc_ptr, z, ndk, phi_wk, alpha, seed, iteration, tables=None, doc_offset=0):
    """One z-sweep: sparse when alias ``tables`` are given, dense otherwise.

    ``doc_offset``: global index of the first document when the arrays are a
    shard (see :func:`sweep_dense`).
    """
    if tables is None:
        sweep_dense(tokens, doc_ptr, z, ndk, phi_wk, float(alpha), np.int64(seed),
                    np.int64(iteration), np.int64(doc_offset))
    else:
        sweep_sparse(tokens, doc_ptr, z, ndk, phi_wk, tables.prob, tables.alias, tables.mass,
                     tables.row, float(alpha), np.int64(seed), np.int64(iteration),
                     np.int64(doc_offset))


# ------------------------------------------------------------ log-likelihood
@njit(cache=True, parallel=True)
def _doc_loglik(ndk, alpha, doc_part):
    n_docs, n_topics = ndk.shape
    lg_alpha = math.lgamma(alpha)
    for d in prange(n_docs):
        acc = 0.0
        n_d = 0
        for k in range(n_topics):
            c = ndk[d, k]
            if c > 0:
                acc += math.lgamma(c + alpha) - lg_alpha
                n_d += c
        if n_d > 0:
            acc += math.lgamma(n_topics * alpha) - math.lgamma(n_d + n_topics * alpha)
        doc_part[d] = acc


@njit(cache=True, parallel=True)
def _topic_loglik(nkw, beta, topic_part):
    n_topics, n_words = nkw.shape
    lg_beta = math.lgamma(beta)
    for k in prange(n_topics):
        acc = 0.0
        n_k = 0
        for w in range(n_words):
            c = nkw[k, w]
            if c > 0:
                acc += math.lgamma(c + beta) - lg_beta
                n_k += c
        topic_part[k] = acc + math.lgamma(n_words * beta) - math.lgamma(n_k + n_words * beta)


def lda_doc_log_likelihood(ndk, alpha):
    """The document part of :func:`lda_log_likelihood`, ``sum_d log p(z_d | alpha)``.

    A shard of documents computes its own part; the parts add up (in shard
    order) to the document sum of the whole corpus.

    Parameters
    ----------
    ndk : int (D, K)   ``n_{d,k}``.
    alpha : float
    """
    doc_part = np.empty(ndk.shape[0])
    _doc_loglik(ndk, float(alpha), doc_part)
    return float(np.sum(doc_part))


def lda_topic_log_likelihood(nkw, beta):
    """The topic part of :func:`lda_log_likelihood`, ``sum_k log p(w | z, beta)``.

    Parameters
    ----------
    nkw : int (K, V)   ``n_{k,w}``.
    beta : float
    """
    topic_part = np.empty(nkw.shape[0])
    _topic_loglik(nkw, float(beta), topic_part)
    return float(np.sum(topic_part))


def lda_log_likelihood(ndk, nkw, alpha, beta):
    """LDA marginal log-likelihood ``log p(w, z | alpha, beta)``, theta and Phi integrated out.

    ``sum_d [log G(K alpha) - log G(N_d + K alpha) + sum_k (log G(n_dk + alpha) - log G(alpha))]
    + sum_k [log G(V beta) - log G(n_k + V beta) + sum_w (log G(n_kw + beta) - log G(beta))]``
    (``G`` the gamma function): :func:`lda_doc_log_likelihood` plus
    :func:`lda_topic_log_likelihood`.  Parallel over documents and topics, the
    parts summed serially: the value does not depend on the thread count.

    Parameters
    ----------
    ndk : int (D, K)   ``n_{d,k}``.
    nkw : int (K, V)   ``n_{k,w}``.
    alpha, beta : float
    """
    return float(lda_doc_log_likelihood(ndk, alpha) + lda_topic_log_likelihood(nkw, beta))


@njit(cache=True, parallel=True)
def _topic_part_sparse(ptr, counts, n_words, beta, topic_part):
    lg_beta = math.lgamma(beta)
    for k in prange(len(ptr) - 1):
        acc = 0.0
        n_k = 0
        for j in range(ptr[k], ptr[k + 1]):
            acc += math.lgamma(counts[j] + beta) - lg_beta
            n_k += counts[j]
        topic_part[k] = acc + math.lgamma(n_words * beta) - math.lgamma(n_k + n_words * beta)


def lda_log_likelihood_sparse(ndk, counts: SparseCounts, n_words, alpha, beta):
    """:func:`lda_log_likelihood` with ``n_{k,w}`` given as :class:`SparseCounts`."""
    topic_part = np.empty(len(counts.ptr) - 1)
    _topic_part_sparse(counts.ptr, counts.counts, int(n_words), float(beta), topic_part)
    return float(lda_doc_log_likelihood(ndk, alpha) + np.sum(topic_part))


# ---------------------------------------------------------------- prediction
@njit(cache=True, parallel=True)
def _predict(tokens, doc_ptr, phi_wk, alpha, n_sweeps, burn_in, seed, out):
    n_docs, n_topics = out.shape
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        n_d = stop - start
        if n_d == 0:
            for k in range(n_topics):
                out[d, k] = 1.0 / n_topics
            continue
        state = stream(seed, STEP_PREDICT, d)
        ndk_row = np.zeros(n_topics, np.int32)
        cum = np.empty(n_topics)
        z = np.empty(n_d, np.int32)
        # initialise sequentially from p(k) ∝ phi_{k,w} (n_{d,k} + alpha)
        for i in range(n_d):
            total = fill_cumulative(phi_wk[tokens[start + i]], ndk_row, alpha, cum)
            u, state = uniform(state)
            k = search_cumulative(cum, n_topics, u * total)
            z[i] = k
            ndk_row[k] += 1
        acc = np.zeros(n_topics)
        local_tokens = tokens[start:stop]
        for s in range(n_sweeps):
            state = resample_document_dense(0, n_d, local_tokens, z, ndk_row, phi_wk, alpha,
                                            cum, state)
            if s >= burn_in:
                for k in range(n_topics):
                    acc[k] += ndk_row[k]
        kept = n_sweeps - burn_in
        denom = kept * (n_d + n_topics * alpha)
        for k in range(n_topics):
            out[d, k] = (acc[k] + kept * alpha) / denom


def predict_topic_proportions(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed):
    """Topic proportions of documents with Phi fixed (paper section 3.3).

    The indicators are drawn from ``p(z = k) ∝ phi_{k,w} (n_{d,k}^{-i} + alpha)``
    for ``n_sweeps`` sweeps; ``(n_{d,k} + alpha) / (N_d + K alpha)`` is averaged
    over the sweeps after ``burn_in``.  Document ``d`` uses the single stream
    ``stream(seed, STEP_PREDICT, d)``.

    Parameters
    ----------
    tokens : int32 (N,), doc_ptr : int64 (D+1,)
        The documents (CSR).
    phi : float (K, V)
        ``Phi``, e.g. the posterior mean of the kept draws.
    alpha : float
    n_sweeps, burn_in : int
        ``0 <= burn_in < n_sweeps``.
    seed : int

    Returns
    -------
    theta : float64 (D, K)
        Rows sum to one; an empty document gets ``1/K`` everywhere.
    """
    n_sweeps, burn_in = int(n_sweeps), int(burn_in)
    if not 0 <= burn_in < n_sweeps:
        raise ValueError(f"need 0 <= burn_in < n_sweeps, got burn_in={burn_in}, "
                         f"n_sweeps={n_sweeps}")
    phi_wk = word_major(phi)
    out = np.empty((len(doc_ptr) - 1, phi.shape[0]), np.float64)
    _predict(np.ascontiguousarray(tokens, dtype=np.int32),
             np.ascontiguousarray(doc_ptr, dtype=np.int64), phi_wk, float(alpha),
             n_sweeps, burn_in, np.int64(seed), out)
    return out


# -------------------------------------------------------------------- shards
# The LDA iteration cut into a shard-local block and a global one, for the
# distributed backend (:mod:`dolda.backends`): every shard sweeps its own
# documents (streams keyed by the global document index) and returns its sparse
# n_{k,w} and the document part of the log-likelihood; the driver adds the
# counts (integers: exact in any order) and draws Phi.  Same z, same Phi as the
# whole-corpus loop of :class:`dolda.LDA` for any number of shards.
class LDAShard(NamedTuple):
    """The fixed data of one shard: documents ``[doc_offset, doc_offset + D_s)``.

    Attributes
    ----------
    tokens : int32 (N_s,)       word ids of the shard's tokens.
    doc_ptr : int64 (D_s + 1,)  document pointer rebased to the shard (starts at 0).
    doc_offset : int            global index of the shard's first document.
    token_offset : int          global index of the shard's first token.
    word_ptr, order : int64     the shard's tokens grouped by word (:func:`word_index`).
    """

    tokens: np.ndarray
    doc_ptr: np.ndarray
    doc_offset: int
    token_offset: int
    word_ptr: np.ndarray
    order: np.ndarray

    @property
    def n_docs(self) -> int:
        return len(self.doc_ptr) - 1

    @property
    def docs(self) -> slice:
        """The shard's rows of a global (D, .) array."""
        return slice(self.doc_offset, self.doc_offset + self.n_docs)

    @property
    def token_range(self) -> slice:
        """The shard's part of a global (N,) array."""
        return slice(self.token_offset, self.token_offset + len(self.tokens))


def make_lda_shards(tokens, doc_ptr, n_words, bounds) -> list[LDAShard]:
    """Cut a corpus at the document ``bounds`` (:func:`dolda.sampler.shard.shard_bounds`)."""
    shards = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        t0, t1 = int(doc_ptr[lo]), int(doc_ptr[hi])
        part = np.ascontiguousarray(tokens[t0:t1], dtype=np.int32)
        word_ptr, order = word_index(part, n_words)
        shards.append(LDAShard(part, np.asarray(doc_ptr[lo:hi + 1] - doc_ptr[lo], np.int64),
                               int(lo), t0, word_ptr, order))
    return shards


def shard_sweep(seed, iteration, shard: LDAShard, z, ndk, phi_wk, tables, alpha):
    """The shard-local block of an LDA iteration; ``z`` and ``ndk`` are updated in place.

    Returns
    -------
    counts : SparseCounts   the shard's ``n_{k,w}`` after the sweep.
    loglik_doc : float      the shard's document part of the log-likelihood.
    """
    sweep(shard.tokens, shard.doc_ptr, z, ndk, phi_wk, alpha, seed, iteration, tables,
          shard.doc_offset)
    counts = sparse_topic_word_counts(shard.word_ptr, shard.order, z, ndk.shape[1])
    return counts, lda_doc_log_likelihood(ndk, alpha)


@njit(cache=True, parallel=True)
def _merge_counts(ptrs, words, counts, out_words, out_counts, out_len):
    """Per topic (in parallel): the entries of every part, sorted by word, equal words added.

    ``ptrs`` (S, K+1) index the concatenated ``words``/``counts`` of the parts;
    topic ``k``'s result is written from ``ptrs[0, k]``'s position in the
    topic-major layout (the sum of the earlier topics' entry counts).
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
        j = 0
        for s in range(n_parts):
            for i in range(ptrs[s, k], ptrs[s, k + 1]):
                w[j] = words[i]
                c[j] = counts[i]
                j += 1
        order = np.argsort(w, kind="mergesort")
        n_out = 0
        last = -1
        base = start[k]
        for i in order:
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


def lda_topic_log_likelihood_sparse(counts: SparseCounts, n_words, beta) -> float:
    """The topic part of :func:`lda_log_likelihood` from :class:`SparseCounts`.

    Parallel over topics, the parts summed serially (independent of the thread count).
    """
    topic_part = np.empty(len(counts.ptr) - 1)
    _topic_part_sparse(counts.ptr, counts.counts, int(n_words), float(beta), topic_part)
    return float(np.sum(topic_part))


def combine_log_likelihood(doc_parts, counts: SparseCounts, n_words, beta) -> float:
    """:func:`lda_log_likelihood` from the shards' document parts and the summed counts.

    The document parts are added by :func:`math.fsum` (correctly rounded, so
    the order of the shards does not matter).
    """
    return float(math.fsum(doc_parts) + lda_topic_log_likelihood_sparse(counts, n_words, beta))


def initial_state(tokens, doc_ptr, n_words, n_topics, beta, seed):
    """The start of an LDA chain: uniform z (one stream per document) and Phi from its counts.

    Returns
    -------
    z : int32 (N,), ndk : int32 (D, K)
    phi_wk : float32 (V, K)       Phi drawn with iteration -1 (:func:`draw_phi_word_major`).
    word_ptr, order : int64       the corpus' word index (:func:`word_index`).
    """
    word_ptr, order = word_index(tokens, n_words)
    z, ndk = init_topics(tokens, doc_ptr, n_topics, seed)
    counts = sparse_topic_word_counts(word_ptr, order, z, n_topics)
    phi_wk = np.empty((int(n_words), int(n_topics)), np.float32)
    draw_phi_word_major(counts, beta, seed, -1, phi_wk)
    return z, ndk, phi_wk, word_ptr, order
