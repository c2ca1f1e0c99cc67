"""The LDA marginal log-likelihood log p(w, z) with theta and Phi integrated out, split into a
document part and a topic part (so shards can add their parts).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from .alpha import as_alpha
from .counts import SparseCounts


#: Counts below this are looked up in a table of ``lgamma(c + a) - lgamma(a)`` built once per
#: call (the same float operations as the direct term, so the same bits): most ``n_{d,k}`` and
#: ``n_{k,w}`` are small, and ``lgamma`` is the cost of the log-likelihood (benchmarks:
#: ``profile_dolda.py time``).
LGAMMA_TABLE = 512


@njit(cache=True, inline="always")
def _lgamma_table(a, lg_a):
    """``table[c] = lgamma(c + a) - lg_a`` for ``c < LGAMMA_TABLE``."""
    table = np.empty(LGAMMA_TABLE)
    for c in range(LGAMMA_TABLE):
        table[c] = math.lgamma(c + a) - lg_a
    return table


@njit(cache=True, inline="always")
def lgamma_term(table, c, a, lg_a):
    """``lgamma(c + a) - lg_a``: from ``table`` (:func:`_lgamma_table` of ``a``) for
    ``c < LGAMMA_TABLE``, directly above."""
    return table[c] if c < LGAMMA_TABLE else math.lgamma(c + a) - lg_a


@njit(cache=True, parallel=True)
def _doc_loglik(ndk, alpha, doc_part):
    """``log p(z_d | alpha)`` of every document; ``alpha`` float64 (K,)."""
    n_docs, n_topics = ndk.shape
    lg_alpha = np.empty(n_topics)
    alpha_sum = 0.0
    symmetric = True
    for k in range(n_topics):
        lg_alpha[k] = math.lgamma(alpha[k])
        alpha_sum += alpha[k]
        symmetric = symmetric and alpha[k] == alpha[0]
    lg_sum = math.lgamma(alpha_sum)
    table = _lgamma_table(alpha[0], lg_alpha[0])  # a symmetric alpha's terms
    for d in prange(n_docs):
        acc = 0.0
        n_d = 0
        for k in range(n_topics):
            c = ndk[d, k]
            if c > 0:
                if symmetric:
                    acc += lgamma_term(table, c, alpha[0], lg_alpha[0])
                else:
                    acc += math.lgamma(c + alpha[k]) - lg_alpha[k]
                n_d += c
        if n_d > 0:
            acc += lg_sum - math.lgamma(n_d + alpha_sum)
        doc_part[d] = acc


@njit(cache=True, parallel=True)
def _topic_loglik(nkw, beta, topic_part):
    n_topics, n_words = nkw.shape
    lg_beta = math.lgamma(beta)
    table = _lgamma_table(beta, lg_beta)
    for k in prange(n_topics):
        acc = 0.0
        n_k = 0
        for w in range(n_words):
            c = nkw[k, w]
            if c > 0:
                acc += lgamma_term(table, c, beta, lg_beta)
                n_k += c
        topic_part[k] = acc + math.lgamma(n_words * beta) - math.lgamma(n_k + n_words * beta)


def lda_doc_log_likelihood(ndk, alpha):
    """The document part of :func:`lda_log_likelihood`, ``sum_d log p(z_d | alpha)``.

    A shard of documents computes its own part; the parts add up (in shard
    order) to the document sum of the whole corpus.

    Parameters
    ----------
    ndk : int (D, K)   ``n_{d,k}``.
    alpha : float or float (K,)
        ``log p(z_d | alpha) = log G(A) - log G(N_d + A) + sum_k [log G(n_dk + alpha_k)
        - log G(alpha_k)]``, ``A = sum_k alpha_k``.
    """
    doc_part = np.empty(ndk.shape[0])
    _doc_loglik(ndk, as_alpha(alpha, ndk.shape[1]), doc_part)
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
    alpha : float or float (K,)   (per topic: see :func:`lda_doc_log_likelihood`)
    beta : float
    """
    return float(lda_doc_log_likelihood(ndk, alpha) + lda_topic_log_likelihood(nkw, beta))


@njit(cache=True, parallel=True)
def _topic_part_sparse(ptr, counts, n_words, beta, topic_part):
    lg_beta = math.lgamma(beta)
    table = _lgamma_table(beta, lg_beta)
    for k in prange(len(ptr) - 1):
        acc = 0.0
        n_k = 0
        for j in range(ptr[k], ptr[k + 1]):
            c = counts[j]
            acc += lgamma_term(table, c, beta, lg_beta)
            n_k += c
        topic_part[k] = acc + math.lgamma(n_words * beta) - math.lgamma(n_k + n_words * beta)


def lda_log_likelihood_sparse(ndk, counts: SparseCounts, n_words, alpha, beta):
    """:func:`lda_log_likelihood` with ``n_{k,w}`` given as :class:`SparseCounts`."""
    topic_part = np.empty(len(counts.ptr) - 1)
    _topic_part_sparse(counts.ptr, counts.counts, int(n_words), float(beta), topic_part)
    return float(lda_doc_log_likelihood(ndk, alpha) + np.sum(topic_part))


# ---------------------------------------------------------------- prediction

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
