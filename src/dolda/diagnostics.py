"""Convergence diagnostics: topic alignment across chains and ArviZ export."""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment


def hellinger(p, q):
    """Hellinger distances between the rows of ``p`` (A, V) and of ``q`` (B, V): (A, B)."""
    sp, sq = np.sqrt(p), np.sqrt(q)
    return np.sqrt(np.maximum(0.0, 1.0 - sp @ sq.T))


def align_topics(phi_ref, phi):
    """Permutation ``perm`` such that ``phi[perm]`` matches ``phi_ref`` topic by topic.

    Topic labels are arbitrary, so two chains may find the same topics in a
    different order (label switching).  ``perm`` minimises the total Hellinger
    distance between matched topics (Hungarian assignment), and
    ``phi[perm][k]`` is the topic of ``phi`` that plays the role of
    ``phi_ref[k]``.

    Parameters
    ----------
    phi_ref, phi : (K, V) topics of the reference chain and of another chain.

    Returns
    -------
    perm : int ndarray (K,)
    """
    _, cols = linear_sum_assignment(hellinger(phi_ref, phi))
    return cols
