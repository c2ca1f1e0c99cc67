"""Topic summaries for the report: relevance-ranked terms and the intertopic map.

Relevance (Sievert & Shirley 2014, the ranking of LDAvis/pyLDAvis) of word
``w`` for topic ``k`` with weight ``lambda`` in [0, 1]::

    r(w, k | lambda) = lambda log phi_{k,w} + (1 - lambda) log(phi_{k,w} / p_w)

where ``p_w = sum_k s_k phi_{k,w}`` is the word's overall probability and
``s_k`` the topic's share of the tokens.  ``lambda = 1`` ranks by probability
within the topic, small ``lambda`` by lift (words specific to the topic).

The intertopic map places the topics in the plane by classical
(Torgerson) multidimensional scaling of their Jensen-Shannon distances, as
pyLDAvis does by default.
"""

from __future__ import annotations

import numpy as np

__all__ = ["topic_shares", "word_marginal", "relevance", "relevance_candidates",
           "jensen_shannon_distances", "classical_mds"]


def topic_shares(model):
    """``s_k``: share of the training tokens assigned to each topic, (K,).

    From the final topic counts of the training documents; uniform when the
    model does not keep them.
    """
    K = model.phi_.shape[0]
    counts = getattr(model, "doc_topic_counts_", None)
    if counts is None or np.asarray(counts).sum() <= 0:
        return np.full(K, 1.0 / K)
    total = np.asarray(counts, dtype=np.float64).sum(axis=0)
    return total / total.sum()


def word_marginal(phi, shares):
    """``p_w = sum_k s_k phi_{k,w}``, (V,)."""
    return shares @ phi


def relevance(phi, shares, lam):
    """Relevance of every word for every topic at weight ``lam``, (K, V)
    (:func:`dolda.interpret.topics.relevance` with ``p_w`` from the topic shares)."""
    from ..topics import relevance as topic_relevance

    return topic_relevance(phi, word_marginal(phi, shares), float(lam))


def relevance_candidates(phi, shares, n_words=30, grid=11):
    """Words that rank in the top ``n_words`` of a topic at some ``lambda`` of a grid.

    Returns
    -------
    list of (K,) int arrays
        Word ids per topic; the browser re-ranks them for any ``lambda`` from
        ``phi_{k,w}`` and ``p_w``: the top ``n_words`` at a ``lambda`` between
        two grid points are almost always among them.
    """
    K, V = phi.shape
    n = min(n_words, V)
    chosen = [set() for _ in range(K)]
    for lam in np.linspace(0.0, 1.0, grid):
        rel = relevance(phi, shares, lam)
        top = np.argpartition(-rel, n - 1, axis=1)[:, :n]
        for k in range(K):
            chosen[k].update(top[k].tolist())
    return [np.asarray(sorted(c), dtype=np.int64) for c in chosen]


def jensen_shannon_distances(phi):
    """Jensen-Shannon distances (base 2, in [0, 1]) between the rows of ``phi``, (K, K)."""
    from scipy.spatial.distance import pdist, squareform

    phi = np.asarray(phi, dtype=np.float64)
    phi = phi / phi.sum(axis=1, keepdims=True)
    # natural-log distance / sqrt(ln 2) = base-2 distance
    return squareform(np.nan_to_num(pdist(phi, metric="jensenshannon"))) / np.sqrt(np.log(2.0))


def classical_mds(distances, n_components=2):
    """Torgerson MDS: coordinates (K, n_components) whose distances approximate ``distances``."""
    d2 = np.asarray(distances, dtype=np.float64) ** 2
    n = d2.shape[0]
    centre = np.eye(n) - np.full((n, n), 1.0 / n)
    b = -0.5 * centre @ d2 @ centre
    values, vectors = np.linalg.eigh(b)
    order = np.argsort(values)[::-1][:n_components]
    coords = vectors[:, order] * np.sqrt(np.maximum(values[order], 0.0))
    if coords.shape[1] < n_components:
        coords = np.hstack([coords, np.zeros((n, n_components - coords.shape[1]))])
    # a sign convention, so that the map does not flip between runs
    for j in range(coords.shape[1]):
        if coords[np.argmax(np.abs(coords[:, j])), j] < 0:
            coords[:, j] = -coords[:, j]
    return coords
