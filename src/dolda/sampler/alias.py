"""Walker alias tables of phi_{.,w} for the frequent words, built once per iteration, read by the
sparse z-sweep (Magnusson et al. 2018) and the Metropolis-Hastings supervised z-step.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit, prange

from .alpha import as_alpha, is_symmetric
from .rng import uniform


class AliasTables(NamedTuple):
    """Walker alias tables of ``phi_{.,w}`` for (the frequent) words.

    Attributes
    ----------
    prob : float64 (R, K)   keep probability of the uniformly drawn column.
    alias : int32 (R, K)    the other topic of the column.
    mass : float64 (V,)     ``sum_k phi_{k,w}`` of every word (``sum_k alpha_k phi_{k,w}``,
                            the word bucket of the z-sweeps, for tables built
                            with ``alpha``: see :func:`build_alias_tables`).
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
def _word_mass(phi_wk, weights, mass):
    for w in prange(phi_wk.shape[0]):
        total = 0.0
        for k in range(phi_wk.shape[1]):
            total += weights[k] * phi_wk[w, k]
        mass[w] = total


@njit(cache=True, parallel=True)
def _build_alias(phi_wk, weights, table_words, prob, alias, mass):
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
                p = weights[k] * phi_wk[w, k] * scale if total > 0.0 else 1.0
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


def build_alias_tables(phi_wk, row=None, out: AliasTables | None = None, alpha=None):
    """Alias tables of the words' topic columns ``phi_{.,w}``, parallel over words.

    With ``alpha`` the tables are those of the z-sweeps' word bucket
    ``alpha_k phi_{k,w}`` and ``mass[w] = sum_k alpha_k phi_{k,w}``; a symmetric
    ``alpha`` keeps the tables of ``phi_{.,w}`` (the same law) and only scales
    ``mass``.

    Parameters
    ----------
    phi_wk : float (V, K)
        Word-major topics (:func:`word_major` or :func:`draw_phi_word_major`).
    row : int32 (V,) or None
        Which words get a table (:func:`alias_rows`); None: every word.
    out : AliasTables or None
        Buffers to fill (reused across iterations); new ones when None.
    alpha : None, float or float (K,)
        The Dirichlet prior of theta; None: weights 1.

    Returns
    -------
    AliasTables
        Drawing ``k`` with probability ``alpha_k phi_{k,w} / mass[w]`` costs O(1).
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
    weights = np.ones(n_topics)
    scale = 1.0
    if alpha is not None:
        if is_symmetric(alpha):
            scale = float(np.asarray(alpha, dtype=np.float64).flat[0])
        else:
            weights = as_alpha(alpha, n_topics)
    _word_mass(phi_wk, weights, out.mass)
    _build_alias(phi_wk, weights, table_words, out.prob, out.alias, out.mass)
    if scale != 1.0:
        out.mass[:] *= scale
    return out


def bucket_tables(tables: AliasTables, phi_wk, alpha) -> AliasTables:
    """The word-bucket tables of ``alpha_k phi_{k,w}`` from the plain tables of ``phi_{.,w}``.

    A symmetric ``alpha`` costs O(V) (``mass`` scaled, the tables shared); an
    asymmetric one rebuilds the tables (new buffers) for the same words.
    """
    if is_symmetric(alpha):
        return tables._replace(mass=tables.mass * float(np.asarray(alpha).flat[0]))
    return build_alias_tables(phi_wk, tables.row, alpha=alpha)


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
