"""The posterior mean of Phi kept sparse: a Rao-Blackwellised running sum over kept iterations.

Given the topic indicators ``z^(t)`` of iteration ``t``, ``phi_k ~ Dir(beta + n_k^(t))``
(paper section 3.1), so its conditional mean is

    E[phi_{k,w} | z^(t)] = (beta + n_{k,w}^(t)) / (V beta + n_k^(t)).

The mean of these over the kept iterations estimates the posterior mean of Phi with no more
variance than the mean of the Phi draws themselves (Rao-Blackwell), and it splits into a dense
part that is constant in ``w`` and a sparse part over the non-zero counts:

    sum_t E[phi_{k,w} | z^(t)] = c_k + s_{k,w},
    c_k = sum_t beta / (V beta + n_k^(t)),    s_{k,w} = sum_t n_{k,w}^(t) / (V beta + n_k^(t)).

:class:`PhiMean` holds ``c`` (K,) and ``s`` by word (CSR, the union of the kept iterations'
non-zero counts), so the running sum costs O(nnz) memory instead of the dense V x K float
array of a running sum of draws; :func:`dense_mean` writes the normalised K x V ``phibar``
once at the end.  The counts are integers and every entry is summed in iteration order, so
the result is the same for any number of threads, shards or workers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .counts import SparseCounts


class PhiMean(NamedTuple):
    """Running sum of ``E[phi | z^(t)]`` over the kept iterations.

    Attributes
    ----------
    ptr : int64 (V+1,)        word ``w`` owns entries ``ptr[w]:ptr[w+1]``.
    topics : int32 (nnz,)     topic ids, increasing within a word.
    values : float64 (nnz,)   ``s_{k,w} = sum_t n_{k,w}^(t) / (V beta + n_k^(t))``.
    topic_part : float64 (K,) ``c_k = sum_t beta / (V beta + n_k^(t))``.
    n_draws : int             iterations summed.
    """

    ptr: np.ndarray
    topics: np.ndarray
    values: np.ndarray
    topic_part: np.ndarray
    n_draws: int

    @property
    def nbytes(self) -> int:
        return int(self.ptr.nbytes + self.topics.nbytes + self.values.nbytes
                   + self.topic_part.nbytes)


def empty(n_words: int, n_topics: int) -> PhiMean:
    """The sum of no iterations."""
    return PhiMean(np.zeros(int(n_words) + 1, np.int64), np.empty(0, np.int32),
                   np.empty(0, np.float64), np.zeros(int(n_topics)), 0)


@njit(cache=True)
def _by_word(ptr, words, counts, n_words):
    """Topic-major CSR counts (:class:`SparseCounts`) -> word-major CSR, topics increasing."""
    n_topics = len(ptr) - 1
    nnz = len(words)
    wptr = np.zeros(n_words + 1, np.int64)
    for j in range(nnz):
        wptr[words[j] + 1] += 1
    for w in range(n_words):
        wptr[w + 1] += wptr[w]
    fill = wptr[:-1].copy()
    topics = np.empty(nnz, np.int32)
    out = np.empty(nnz, np.int32)
    for k in range(n_topics):  # topics in order: every word's list ends up sorted
        for j in range(ptr[k], ptr[k + 1]):
            w = words[j]
            topics[fill[w]] = k
            out[fill[w]] = counts[j]
            fill[w] += 1
    return wptr, topics, out


@njit(cache=True)
def _merge_word(w, aptr, atopics, avalues, bptr, btopics, bcounts, weight, at, otopics,
                ovalues, write):
    """Word ``w``'s union of the sorted topic lists of ``a`` and ``b``: its length, and with
    ``write`` the union from ``at`` on, ``avalues + weight[k] * bcounts``."""
    i, ie = aptr[w], aptr[w + 1]
    j, je = bptr[w], bptr[w + 1]
    o = at
    while i < ie or j < je:
        if j >= je or (i < ie and atopics[i] < btopics[j]):
            if write:
                otopics[o] = atopics[i]
                ovalues[o] = avalues[i]
            i += 1
        elif i >= ie or btopics[j] < atopics[i]:
            if write:
                k = btopics[j]
                otopics[o] = k
                ovalues[o] = weight[k] * bcounts[j]
            j += 1
        else:
            if write:
                k = btopics[j]
                otopics[o] = k
                ovalues[o] = avalues[i] + weight[k] * bcounts[j]
            i += 1
            j += 1
        o += 1
    return o - at


@njit(cache=True, parallel=True)
def _merge_parts(write, n_parts, aptr, atopics, avalues, bptr, btopics, bcounts, weight,
                 optr, otopics, ovalues):
    """:func:`_merge_word` for every word, ``n_parts`` parallel tasks of consecutive words:
    the lengths into ``optr[w + 1]`` (``write`` false), or the merged lists from ``optr[w]``
    on (``write`` true).  One kernel for both passes: numba builds one parallel region, not
    two (each costs about a second of the first run's compile)."""
    n_words = len(aptr) - 1
    for part_ in prange(n_parts):
        part = np.int64(part_)
        for w in range(part * n_words // n_parts, (part + 1) * n_words // n_parts):
            m = _merge_word(w, aptr, atopics, avalues, bptr, btopics, bcounts, weight,
                            optr[w] if write else 0, otopics, ovalues, write)
            if not write:
                optr[w + 1] = m


#: Parallel tasks of :func:`_merge_parts` (at most).
_MERGE_PARTS = 64


def add(acc: PhiMean, counts, beta: float) -> PhiMean:
    """``acc`` plus ``E[phi | z]`` of one iteration, from its topic-word counts.

    Parameters
    ----------
    acc : PhiMean
    counts : SparseCounts or dolda.sampler.polya.WordCounts
        ``n_{k,w}`` of the iteration (by topic, or by word for the Pólya-urn Phi step).
    beta : float
        The Dirichlet prior of the topics at this iteration.

    Returns
    -------
    PhiMean
        A new accumulator (``acc`` is not modified).
    """
    n_words, n_topics = len(acc.ptr) - 1, len(acc.topic_part)
    if isinstance(counts, SparseCounts):
        bptr, btopics, bcounts = _by_word(counts.ptr, counts.words, counts.counts, n_words)
        owner = np.repeat(np.arange(n_topics), np.diff(counts.ptr))
        totals = np.bincount(owner, weights=counts.counts, minlength=n_topics)
    else:
        bptr, btopics, bcounts = counts.ptr, counts.topics, counts.counts
        totals = np.bincount(btopics, weights=bcounts, minlength=n_topics)
    weight = 1.0 / (n_words * float(beta) + np.asarray(totals, np.float64))
    n_parts = np.int64(max(1, min(n_words, _MERGE_PARTS)))
    optr = np.zeros(n_words + 1, np.int64)
    args = (acc.ptr, acc.topics, acc.values, bptr, btopics, bcounts, weight, optr)
    _merge_parts(False, n_parts, *args, np.empty(0, np.int32), np.empty(0, np.float64))
    np.cumsum(optr, out=optr)
    otopics = np.empty(int(optr[-1]), np.int32)
    ovalues = np.empty(int(optr[-1]), np.float64)
    _merge_parts(True, n_parts, *args, otopics, ovalues)
    return PhiMean(optr, otopics, ovalues, acc.topic_part + float(beta) * weight,
                   acc.n_draws + 1)


@njit(cache=True, parallel=True)
def _scatter(ptr, topics, values, phi):
    for w in prange(len(ptr) - 1):
        for j in range(ptr[w], ptr[w + 1]):
            phi[topics[j], w] += values[j]


def dense_mean(acc: PhiMean, dtype=np.float32):
    """``phibar`` (K, V): the mean of ``E[phi | z^(t)]``, rows normalised to one.

    One K x V array is allocated (float32 by default, as the chain's Phi): the only
    dense copy.
    """
    n_words, n_topics = len(acc.ptr) - 1, len(acc.topic_part)
    phi = np.empty((n_topics, n_words), dtype)
    phi[:] = acc.topic_part[:, None]
    _scatter(acc.ptr, acc.topics, acc.values, phi)
    phi /= phi.sum(axis=1, keepdims=True, dtype=np.float64).astype(dtype)
    return phi


def to_arrays(acc: PhiMean) -> dict:
    """The arrays of a checkpoint (``phi_mean_*``)."""
    return {"phi_mean_ptr": acc.ptr, "phi_mean_topics": acc.topics,
            "phi_mean_values": acc.values, "phi_mean_topic": acc.topic_part,
            "phi_mean_draws": np.array([acc.n_draws], np.int64)}


def from_arrays(arrays) -> PhiMean:
    """Inverse of :func:`to_arrays`; refuses a layout the kernels could not index."""
    ptr = np.asarray(arrays["phi_mean_ptr"], np.int64)
    topics = np.asarray(arrays["phi_mean_topics"], np.int32)
    topic_part = np.asarray(arrays["phi_mean_topic"], np.float64)
    if (len(ptr) == 0 or ptr[0] != 0 or ptr[-1] != len(topics) or np.any(np.diff(ptr) < 0)
            or (len(topics) and (topics.min() < 0 or topics.max() >= len(topic_part)))):
        raise ValueError("the checkpoint's running mean of Phi (phi_mean_*) is inconsistent: "
                         "its pointer or topic ids do not describe a V x K sparse matrix")
    return PhiMean(ptr, topics, np.asarray(arrays["phi_mean_values"], np.float64), topic_part,
                   int(np.asarray(arrays["phi_mean_draws"]).reshape(-1)[0]))
