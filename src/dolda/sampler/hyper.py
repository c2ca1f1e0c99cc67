"""Dirichlet hyperparameters learned from the data: Minka's fixed point (empirical Bayes).

``alpha="auto"`` / ``beta="auto"`` in :class:`dolda.DOLDA`: during the burn-in,
every :data:`UPDATE_EVERY` iterations, the symmetric concentration of
``theta_d ~ Dir(alpha)`` (resp. ``phi_k ~ Dir(beta)``) is set to the value that
maximises the Dirichlet-multinomial likelihood of the current counts
``n_{d,k}`` (resp. ``n_{k,w}``), by Minka's (2000, "Estimating a Dirichlet
distribution", eq. 55) fixed point for a symmetric Dirichlet of dimension ``K``
(resp. ``V``)::

    a <- a * sum_{g,j} [psi(n_{g,j} + a) - psi(a)]
           / (K * sum_g [psi(n_g + K a) - psi(K a)])

where ``g`` runs over documents (topics) and ``n_g`` is the group total.  This
is the update MALLET's ``--optimize-interval`` and gensim's ``alpha="auto"``
make; here it is evaluated from integer *histograms* of the counts (how many
``n_{g,j}`` equal 1, 2, ...; Minka's and MALLET's fast form), which are the
same on every backend and cost O(max count) per fixed-point step.

``alpha="auto"`` learns an *asymmetric* alpha, one ``alpha_k`` per topic
(Wallach, Mimno & McCallum 2009, "Rethinking LDA: why priors matter"; what
MALLET's ``--optimize-interval`` does), by Minka's fixed point for the
Dirichlet-multinomial (2000, eq. 55 per component)::

    alpha_k <- alpha_k * sum_d [psi(n_{d,k} + alpha_k) - psi(alpha_k)]
                       / sum_d [psi(N_d + A) - psi(A)],        A = sum_k alpha_k,

again from histograms: one of ``n_{d,k}`` per topic and one of the document
lengths ``N_d``, as MALLET's optimisation keeps them
(:func:`asymmetric_dirichlet`).  ``alpha="auto_symmetric"`` and ``beta="auto"``
use the symmetric update above.

After the burn-in alpha and beta stay fixed, so the kept draws are those of a
valid Gibbs chain for the learned values (an empirical-Bayes plug-in, not a
fully Bayesian treatment of alpha and beta).
"""

from __future__ import annotations

import numpy as np
from scipy.special import digamma

#: Iterations between two updates during the burn-in.
UPDATE_EVERY = 10
#: Fixed-point steps per update and their relative tolerance.
MAX_STEPS = 200
TOL = 1e-6
#: Bounds that keep the concentration finite and positive.
MIN_VALUE, MAX_VALUE = 1e-5, 1e3


def histogram(counts) -> np.ndarray:
    """``h[c]`` = number of entries equal to ``c`` (c >= 1) of an integer array (zeros ignored)."""
    counts = np.asarray(counts).ravel()
    counts = counts[counts > 0].astype(np.int64)
    return np.bincount(counts) if len(counts) else np.zeros(1, np.int64)


def _digamma_sum(hist, a):
    """``sum_c h[c] (psi(c + a) - psi(a))`` over the histogram ``h``."""
    c = np.nonzero(hist)[0]
    return float(np.sum(hist[c] * (digamma(c + a) - digamma(a))))


def symmetric_dirichlet(a, entry_hist, total_hist, dim: int) -> float:
    """Minka's fixed point for a symmetric Dirichlet concentration ``a`` (per component).

    Parameters
    ----------
    a : float
        Starting value.
    entry_hist : int array
        :func:`histogram` of the counts ``n_{g,j}`` (groups x components).
    total_hist : int array
        :func:`histogram` of the group totals ``n_g`` (empty groups ignored: they
        carry no information).
    dim : int
        Number of components (``K`` for alpha, ``V`` for beta).

    Returns
    -------
    float
        The maximiser of the Dirichlet-multinomial likelihood (clipped to
        [MIN_VALUE, MAX_VALUE]).
    """
    a = float(a)
    for _ in range(MAX_STEPS):
        num = _digamma_sum(entry_hist, a)
        den = dim * _digamma_sum(total_hist, dim * a)
        if den <= 0 or num <= 0:
            break
        new = float(np.clip(a * num / den, MIN_VALUE, MAX_VALUE))
        if abs(new - a) <= TOL * a:
            return new
        a = new
    return a


def update_alpha(alpha: float, ndk, doc_lengths) -> float:
    """Learned symmetric ``alpha`` from the document-topic counts ``n_{d,k}`` (D, K)."""
    return symmetric_dirichlet(alpha, histogram(ndk), histogram(doc_lengths), ndk.shape[1])


def topic_histograms(ndk):
    """The non-zero bins of the per-topic histograms of ``n_{d,k}`` (D, K), flattened.

    Returns
    -------
    topic : int64 (B,)   the topic ``k`` of bin ``b``.
    count : int64 (B,)   the value ``c >= 1`` of ``n_{d,k}`` it counts.
    docs : int64 (B,)    how many documents have ``n_{d,k} = c``.
    """
    ndk = np.asarray(ndk)
    d, k = np.nonzero(ndk)
    c = ndk[d, k].astype(np.int64)
    if not len(c):
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    width = int(c.max()) + 1
    keys, docs = np.unique(k.astype(np.int64) * width + c, return_counts=True)
    return keys // width, keys % width, docs.astype(np.int64)


def asymmetric_dirichlet(alpha, bins, total_hist):
    """Minka's fixed point for an asymmetric Dirichlet ``(alpha_1, ..., alpha_K)``.

    Parameters
    ----------
    alpha : float64 (K,)
        Starting values.
    bins : tuple of three int arrays
        :func:`topic_histograms` of the counts ``n_{d,k}``.
    total_hist : int array
        :func:`histogram` of the document lengths ``N_d`` (empty documents ignored).

    Returns
    -------
    float64 (K,)
        The maximiser of the Dirichlet-multinomial likelihood
        ``sum_d [log G(A) - log G(N_d + A) + sum_k (log G(n_dk + alpha_k) - log G(alpha_k))]``,
        each component clipped to [MIN_VALUE, MAX_VALUE] (a topic no document uses goes
        to MIN_VALUE).
    """
    a = np.array(alpha, dtype=np.float64)
    topic, count, docs = bins
    lengths = np.nonzero(total_hist)[0]
    n_len = np.asarray(total_hist)[lengths]
    for _ in range(MAX_STEPS):
        total = float(a.sum())
        den = float(np.sum(n_len * (digamma(lengths + total) - digamma(total))))
        if den <= 0:
            break
        at = a[topic]
        num = np.bincount(topic, weights=docs * (digamma(count + at) - digamma(at)),
                          minlength=len(a))
        new = np.clip(a * num / den, MIN_VALUE, MAX_VALUE)
        if np.all(np.abs(new - a) <= TOL * a):
            return new
        a = new
    return a


def update_alpha_asymmetric(alpha, ndk, doc_lengths):
    """Learned asymmetric ``alpha`` (K,) from the document-topic counts ``n_{d,k}`` (D, K)."""
    from .alpha import as_alpha

    start = as_alpha(alpha, ndk.shape[1])
    return asymmetric_dirichlet(start, topic_histograms(ndk), histogram(doc_lengths))


def update_beta(beta: float, nkw_values, topic_totals, n_words: int) -> float:
    """Learned symmetric ``beta`` from the non-zero topic-word counts and the topic totals."""
    return symmetric_dirichlet(beta, histogram(nkw_values), histogram(topic_totals), n_words)


def learn(config, z, ndk, data, learn_alpha, learn_beta: bool):
    """The chain's config with alpha and/or beta re-estimated from the current topics.

    ``z`` (N,) and ``ndk`` (D, K) are the chain's topic indicators and counts
    (:meth:`runner.topics`), ``data`` its :class:`dolda.sampler.gibbs_iteration.TopicData`.
    ``learn_alpha``: ``"asymmetric"`` (a vector, :func:`update_alpha_asymmetric`),
    ``"symmetric"`` or True (:func:`update_alpha`), or False.
    """
    alpha, beta = config.alpha, config.beta
    if learn_alpha == "asymmetric":
        alpha = update_alpha_asymmetric(alpha, ndk, data.doc_lengths)
    elif learn_alpha:
        alpha = update_alpha(alpha, ndk, data.doc_lengths)
    if learn_beta:
        K = config.n_topics
        pairs = np.asarray(z, np.int64) * data.n_words + np.asarray(data.tokens, np.int64)
        _, nkw = np.unique(pairs, return_counts=True)
        beta = update_beta(beta, nkw, np.bincount(z, minlength=K), data.n_words)
    return config._replace(alpha=alpha, beta=beta)
