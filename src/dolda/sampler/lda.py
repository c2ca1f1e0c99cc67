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
    "AliasTables", "SPARSE_MIN_TOPICS", "build_alias_tables", "draw_phi", "init_topics",
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


@njit(cache=True, parallel=True)
def _draw_phi(nkw, beta, seed, step, block_offset, phi):
    n_topics, n_words = nkw.shape
    small = beta < 1.0
    for k in prange(n_topics):
        state = stream(seed, step, block_offset + k)
        row = phi[k]
        counts = nkw[k]
        top = -np.inf
        for w in range(n_words):
            c = counts[w]
            if c == 0 and small:
                g, state = log_gamma_small(beta, state)
            else:
                g, state = log_gamma_variate(beta + c, state)
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


def draw_phi(nkw, beta, seed, iteration):
    """Draw ``phi_k ~ Dir(beta + n_{k,.})`` for every topic, parallel over topics.

    Each topic draws ``log G_{k,w}``, ``G_{k,w} ~ Gamma(beta + n_{k,w})``, and
    normalises in log space, so the paper's ``beta = 0.01`` never underflows
    to a row of zeros.

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
    phi = np.empty(nkw.shape, np.float64)
    if iteration < 0:
        step, offset = STEP_INIT, _INIT_PHI_BLOCK
    else:
        step, offset = int(iteration) * 16 + STEP_PHI, 0
    _draw_phi(nkw, float(beta), np.int64(seed), np.int64(step), np.int64(offset), phi)
    return phi


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
    """Walker alias tables of ``phi_{.,w}`` for every word.

    Attributes
    ----------
    prob : float64 (V, K)   keep probability of the uniformly drawn column.
    alias : int32 (V, K)    the other topic of the column.
    mass : float64 (V,)     ``sum_k phi_{k,w}``.
    """

    prob: np.ndarray
    alias: np.ndarray
    mass: np.ndarray


@njit(cache=True, parallel=True)
def _build_alias(phi_wk, prob, alias, mass):
    n_words, n_topics = phi_wk.shape
    for w in prange(n_words):
        total = 0.0
        for k in range(n_topics):
            total += phi_wk[w, k]
        mass[w] = total
        small = np.empty(n_topics, np.int32)
        large = np.empty(n_topics, np.int32)
        n_small = 0
        n_large = 0
        scale = n_topics / total if total > 0.0 else 0.0
        for k in range(n_topics):
            p = phi_wk[w, k] * scale if total > 0.0 else 1.0
            prob[w, k] = p
            alias[w, k] = k
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
            alias[w, s] = g
            prob[w, g] = prob[w, g] + prob[w, s] - 1.0
            if prob[w, g] < 1.0:
                n_large -= 1
                small[n_small] = g
                n_small += 1
        # leftovers are 1 up to rounding
        for i in range(n_large):
            prob[w, large[i]] = 1.0
        for i in range(n_small):
            prob[w, small[i]] = 1.0


def build_alias_tables(phi_wk):
    """Alias tables of every word's topic column ``phi_{.,w}``, parallel over words.

    Parameters
    ----------
    phi_wk : float64 (V, K)
        Word-major topics (:func:`word_major`).

    Returns
    -------
    AliasTables
        Drawing ``k`` with probability ``phi_{k,w} / mass[w]`` costs O(1).
    """
    n_words, n_topics = phi_wk.shape
    tables = AliasTables(np.empty((n_words, n_topics), np.float64),
                         np.empty((n_words, n_topics), np.int32), np.empty(n_words, np.float64))
    _build_alias(phi_wk, tables.prob, tables.alias, tables.mass)
    return tables


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
def sweep_dense(tokens, doc_ptr, z, ndk, phi_wk, alpha, seed, iteration):
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
    """
    n_docs, n_topics = ndk.shape
    step = iteration * 16 + STEP_Z
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        if stop == start:
            continue
        cum = np.empty(n_topics)
        state = stream(seed, step, d)
        resample_document_dense(start, stop, tokens, z, ndk[d], phi_wk, alpha, cum, state)


@njit(cache=True)
def resample_document_sparse(start, stop, tokens, z, ndk_row, phi_wk, prob, alias, mass,
                             alpha, nz, pos, cum, state):
    """Sparse exact Gibbs resampling of one document's tokens; returns the state.

    ``p(k) ∝ alpha phi_{k,w} + n_{d,k} phi_{k,w}``: with probability
    ``alpha mass_w / (alpha mass_w + sum_k n_{d,k} phi_{k,w})`` the topic comes
    from the word's alias table, otherwise from the document's non-zero
    topics.  ``nz``, ``pos`` and ``cum`` (K,) are scratch space.
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
            k1, state = alias_draw(prob[w], alias[w], state)
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
def sweep_sparse(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, alpha, seed, iteration):
    """One sparse exact Gibbs sweep, documents in parallel, O(K_d) per token.

    Samples the same conditional as :func:`sweep_dense`; ``prob``, ``alias``,
    ``mass`` are the :class:`AliasTables` of ``phi_wk``.  Other arguments as
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
        state = stream(seed, step, d)
        resample_document_sparse(start, stop, tokens, z, ndk[d], phi_wk, prob, alias, mass,
                                 alpha, nz, pos, cum, state)


def resolve_sampler(sampler: str, n_topics: int) -> str:
    """``"auto"`` -> ``"sparse"`` from :data:`SPARSE_MIN_TOPICS` topics on, else ``"dense"``."""
    if sampler == "auto":
        return "sparse" if n_topics >= SPARSE_MIN_TOPICS else "dense"
    return sampler


def sweep(tokens, doc_ptr, z, ndk, phi_wk, alpha, seed, iteration, tables=None):
    """One z-sweep: sparse when alias ``tables`` are given, dense otherwise."""
    if tables is None:
        sweep_dense(tokens, doc_ptr, z, ndk, phi_wk, float(alpha), np.int64(seed),
                    np.int64(iteration))
    else:
        sweep_sparse(tokens, doc_ptr, z, ndk, phi_wk, tables.prob, tables.alias, tables.mass,
                     float(alpha), np.int64(seed), np.int64(iteration))


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
