"""Showing topics: relevance-ranked top words and short automatic topic labels.

A topic ``phi_k`` ranked by raw probability is dominated by the words that
are frequent everywhere (headers, "like", "just"): they top most topics and
tell them apart poorly.  Sievert & Shirley (2014, "LDAvis: A method for
visualizing and interpreting topics") rank the words of topic ``k`` by their
*relevance*

    r(w, k | lambda) = lambda log phi_{k,w} + (1 - lambda) log(phi_{k,w} / p_w),

where ``p_w`` is the marginal probability of word ``w`` in the corpus: lambda
= 1 is the raw ranking, lambda = 0 the lift ``phi_{k,w} / p_w`` (exclusive
but often rare words).  Their user study found lambda about 0.6 best for
recognising topics, and :data:`DEFAULT_RELEVANCE` is that value.  pyLDAvis
shows the same quantity (it starts its slider at 1, the raw ranking; dolda
shows the ranking the study recommends and lets lambda be chosen).

Every place dolda shows topics goes through :func:`relevant_words`: the
``top_words`` methods of :class:`dolda.LDA` and :class:`dolda.DOLDA`,
``DOLDA.signal_topics``, ``dolda topics`` and the HTML report.
"""

from __future__ import annotations

import numpy as np

#: lambda of the relevance ranking used when none is given (Sievert & Shirley's 0.6).
DEFAULT_RELEVANCE = 0.6
#: Words joined into a topic label by :func:`topic_labels`.
DEFAULT_LABEL_WORDS = 3


def _check_phi(phi) -> np.ndarray:
    phi = np.asarray(phi, dtype=np.float64)
    if phi.ndim != 2 or phi.shape[0] < 1 or phi.shape[1] < 1:
        raise ValueError(f"phi must be a (K, V) matrix of topics, got shape {phi.shape}")
    if not np.all(np.isfinite(phi)) or (phi < 0).any():
        raise ValueError("phi must hold finite non-negative probabilities")
    sums = phi.sum(axis=1, keepdims=True)
    if (sums <= 0).any():
        raise ValueError("every topic (row of phi) needs a positive total")
    return phi / sums


def _check_lambda(lam) -> float:
    try:
        lam = float(lam)
    except (TypeError, ValueError):
        raise ValueError(f"relevance (lambda) must be a number in [0, 1], got {lam!r}") from None
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"relevance (lambda) must be in [0, 1], got {lam}")
    return lam


def word_probabilities(phi, topic_weights=None) -> np.ndarray:
    """Marginal word probabilities ``p_w = sum_k pi_k phi_{k,w}``.

    Parameters
    ----------
    phi : array (K, V)
        Topics (rows are normalised to sum to one).
    topic_weights : array (K,) or None
        ``pi_k``, e.g. the number of tokens assigned to each topic
        (``doc_topic_counts_.sum(axis=0)``); normalised here.  None: equal weights.

    Returns
    -------
    ndarray (V,), summing to one.
    """
    phi = _check_phi(phi)
    if topic_weights is None:
        weights = np.full(phi.shape[0], 1.0 / phi.shape[0])
    else:
        weights = np.asarray(topic_weights, dtype=np.float64).ravel()
        if weights.shape != (phi.shape[0],) or (weights < 0).any() or weights.sum() <= 0:
            raise ValueError(f"topic_weights must be {phi.shape[0]} non-negative numbers with a "
                             "positive sum")
        weights = weights / weights.sum()
    p = weights @ phi
    return p / p.sum()


def relevance(phi, word_freq, lam=DEFAULT_RELEVANCE) -> np.ndarray:
    """Sievert & Shirley's relevance of every word to every topic.

    Parameters
    ----------
    phi : array (K, V)
        Topics ``phi_{k,w}``.
    word_freq : array (V,)
        Corpus counts or probabilities of the words (normalised to ``p_w``).
    lam : float in [0, 1], default=:data:`DEFAULT_RELEVANCE`
        ``lambda``; 1 ranks by ``phi_{k,w}`` alone.

    Returns
    -------
    ndarray (K, V)
        ``lambda log phi_{k,w} + (1 - lambda) log(phi_{k,w} / p_w)``
        (``-inf`` where ``phi_{k,w} = 0``; a word with ``p_w = 0`` gets ``-inf``).
    """
    phi = _check_phi(phi)
    lam = _check_lambda(lam)
    freq = np.asarray(word_freq, dtype=np.float64).ravel()
    if freq.shape != (phi.shape[1],):
        raise ValueError(f"word_freq has {freq.size} entries, phi has {phi.shape[1]} words")
    if (freq < 0).any() or not np.isfinite(freq).all() or freq.sum() <= 0:
        raise ValueError("word_freq must hold finite non-negative numbers with a positive sum")
    p = freq / freq.sum()
    with np.errstate(divide="ignore"):
        log_phi = np.log(phi)
        if lam == 1.0:
            return log_phi
        out = log_phi - (1.0 - lam) * np.log(p)
    out[:, p == 0] = -np.inf
    out[phi == 0] = -np.inf
    return out


def relevant_words(phi, word_freq, lam=DEFAULT_RELEVANCE, n=10, vocab=None):
    """The ``n`` most relevant words of every topic.

    Ties are broken by ``phi_{k,w}`` and then by word id, so the ranking is
    deterministic.

    Parameters
    ----------
    phi : array (K, V)
    word_freq : array (V,)
        Corpus counts or probabilities of the words (see :func:`relevance`).
    lam : float in [0, 1], default=:data:`DEFAULT_RELEVANCE`
    n : int, default=10
        Words per topic (at most V).
    vocab : sequence of str (V,) or None
        Words; None returns word ids.

    Returns
    -------
    ndarray (K, n)
        Word ids (int) or, with ``vocab``, the words (object), most relevant first.
    """
    n = int(n)
    if n < 1:
        raise ValueError(f"n must be a positive number of words, got {n}")
    phi = _check_phi(phi)
    score = relevance(phi, word_freq, lam)
    n = min(n, phi.shape[1])
    # lexsort: last key is primary -> relevance, then phi, then (stable) word id
    order = np.empty((phi.shape[0], n), dtype=np.int64)
    for k in range(phi.shape[0]):
        order[k] = np.lexsort((-phi[k], -score[k]))[:n]
    if vocab is None:
        return order
    words = np.asarray(list(vocab), dtype=object)
    if len(words) != phi.shape[1]:
        raise ValueError(f"vocab has {len(words)} words, phi has {phi.shape[1]}")
    return words[order]


def topic_labels(phi, word_freq, vocab, lam=DEFAULT_RELEVANCE, n_words=DEFAULT_LABEL_WORDS,
                 sep=" ") -> list[str]:
    """Short, distinct labels of the topics: their most relevant words joined.

    The label of topic ``k`` is its ``n_words`` most relevant words (see
    :func:`relevant_words`) joined by ``sep``, e.g. ``"space nasa orbit"``.
    Two topics whose labels would be equal get one more word each until they
    differ (at most 3 more); if they still coincide, ``" (k)"`` is appended.

    Parameters
    ----------
    phi : array (K, V)
    word_freq : array (V,)
    vocab : sequence of str (V,)
    lam : float in [0, 1], default=:data:`DEFAULT_RELEVANCE`
    n_words : int, default=3
    sep : str, default=" "

    Returns
    -------
    list of K str
    """
    n_words = int(n_words)
    if n_words < 1:
        raise ValueError(f"n_words must be at least 1, got {n_words}")
    extra = 3
    ranked = relevant_words(phi, word_freq, lam, n_words + extra, vocab)
    K = len(ranked)
    used = np.full(K, min(n_words, ranked.shape[1]))
    for _ in range(extra + 1):
        labels = [sep.join(str(w) for w in ranked[k, :used[k]]) for k in range(K)]
        seen: dict[str, list[int]] = {}
        for k, label in enumerate(labels):
            seen.setdefault(label, []).append(k)
        clashes = [ks for ks in seen.values() if len(ks) > 1]
        if not clashes:
            return labels
        for ks in clashes:
            for k in ks:
                used[k] = min(used[k] + 1, ranked.shape[1])
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return [f"{label} ({k})" if counts[label] > 1 else label for k, label in enumerate(labels)]


def model_word_frequencies(model) -> np.ndarray:
    """Marginal word probabilities ``p_w`` of a fitted LDA or DOLDA, shape (V,).

    ``sum_k n_k phi_{k,w}`` normalised, with ``n_k`` the training tokens of
    topic ``k`` (``doc_topic_counts_``), i.e. the expected word frequencies of
    the training corpus under the model; equal topic weights when the model
    kept no counts (a two-step DOLDA).
    """
    counts = getattr(model, "doc_topic_counts_", None)
    weights = None
    if counts is not None:
        weights = np.asarray(counts, dtype=np.float64).sum(axis=0)
        if weights.sum() <= 0:
            weights = None
    return word_probabilities(model.phi_, weights)


def model_top_words(model, n=10, lam=DEFAULT_RELEVANCE) -> np.ndarray:
    """The ``n`` most relevant words (object array (K, n)) of a fitted LDA or DOLDA."""
    return relevant_words(model.phi_, model_word_frequencies(model), lam, n,
                          model.vocabulary_.words)


def model_topic_labels(model, n_words=DEFAULT_LABEL_WORDS, lam=DEFAULT_RELEVANCE,
                       sep=" ") -> list[str]:
    """:func:`topic_labels` of a fitted LDA or DOLDA."""
    return topic_labels(model.phi_, model_word_frequencies(model), model.vocabulary_.words,
                        lam, n_words, sep)
