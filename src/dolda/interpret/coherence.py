"""Topic coherence: UMass, NPMI and C_V scores of a model's top words.

A coherence score asks whether the top words of a topic occur together in a
reference corpus.  Three standard measures are implemented, each from its paper:

``"u_mass"`` (Mimno et al. 2011, "Optimizing semantic coherence in topic models")
    Document co-occurrence, asymmetric: for the top words ``w_1 .. w_N`` (most
    probable first), the mean over ``i > j`` of
    ``log((D(w_i, w_j) + smoothing) / D(w_j))``, ``D`` counting documents.
    Mimno et al. add 1 (``smoothing=1``) and sum over the pairs; the mean
    (as gensim reports it) does not depend on ``N``.  At most 0; higher is better.
``"c_npmi"`` (Bouma 2009; Aletras & Stevenson 2013)
    The mean over pairs ``i < j`` of the normalised pointwise mutual information
    ``NPMI = log(P(w_i, w_j) / (P(w_i) P(w_j))) / -log P(w_i, w_j)`` in [-1, 1],
    probabilities estimated on sliding windows of ``window_size`` (10) tokens.
``"c_v"`` (Röder, Both & Hinneburg 2015, "Exploring the space of topic coherence
measures")
    Indirect confirmation: every top word ``w_i`` gets the context vector
    ``v_i = (NPMI(w_i, w_j))_{j=1..N}`` (windows of 110 tokens), the topic the
    vector ``v_W = sum_i v_i``, and the score is the mean cosine
    ``cos(v_i, v_W)``.  In [-1, 1] (in practice [0, 1]); it agrees best with human
    ratings in Röder et al.'s study.

As in gensim's ``CoherenceModel`` (whose conventions these follow, so the
numbers are comparable), probabilities are shares of windows (or documents), a
window is ``window_size`` consecutive tokens of one document (a shorter
document is one window), and ``eps = 1e-12`` keeps the logarithms of NPMI
finite when a pair never co-occurs.  gensim skips documents holding none of the
top words when it counts windows; here every window of the reference corpus
counts, as in Röder et al.'s definition.

Why not call gensim: it is a large dependency for three formulas, and its
window counting runs in Python over every window (minutes on 20 Newsgroups).
Here each top word's set of windows is a bitset (``numpy.packbits``) and a pair
count is one ``AND`` and a population count; the tests check every measure
against a brute-force count on small corpora and against gensim when it is
installed.
"""

from __future__ import annotations

import numpy as np

MEASURES = ("c_v", "c_npmi", "u_mass")
#: Default sliding-window length of every measure (None: whole documents).
DEFAULT_WINDOW = {"c_v": 110, "c_npmi": 10, "u_mass": None}
EPSILON = 1e-12
#: Set bits of every byte (numpy < 2 has no ``bitwise_count``).
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def _popcount(bits) -> int:
    if hasattr(np, "bitwise_count"):
        return int(np.bitwise_count(bits).sum(dtype=np.int64))
    return int(_POPCOUNT[bits].sum(dtype=np.int64))  # pragma: no cover - numpy < 2


# ------------------------------------------------------------------ window counts
class _WindowCounts:
    """Which windows of a reference corpus contain each of a few "relevant" words.

    Parameters
    ----------
    ids : int ndarray (N,)
        The corpus as one flat token array, each token the index of its word in
        the relevant list or -1 (positions of other words are kept).
    doc_ptr : int ndarray (D + 1,)
        Document ``d`` is ``ids[doc_ptr[d]:doc_ptr[d + 1]]``.
    n_relevant : int
    window_size : int or None
        None: a window is a whole document.
    """

    def __init__(self, ids, doc_ptr, n_relevant, window_size):
        ids = np.asarray(ids, dtype=np.int64)
        doc_ptr = np.asarray(doc_ptr, dtype=np.int64)
        lengths = np.diff(doc_ptr)
        if window_size is None:
            n_win = np.ones(len(lengths), dtype=np.int64)
        else:
            n_win = np.where(lengths > window_size, lengths - window_size + 1, 1)
        offsets = np.concatenate([[0], np.cumsum(n_win)])
        self.n_windows = int(offsets[-1])
        doc = np.repeat(np.arange(len(lengths)), lengths)
        keep = ids >= 0
        pos = (np.arange(len(ids)) - doc_ptr[doc])[keep]
        doc, word = doc[keep], ids[keep]
        if window_size is None:
            start = end = offsets[doc]
        else:
            long_doc = lengths[doc] > window_size
            start = offsets[doc] + np.where(long_doc, np.maximum(0, pos - window_size + 1), 0)
            end = offsets[doc] + np.where(long_doc, np.minimum(pos, lengths[doc] - window_size),
                                          0)
        order = np.argsort(word, kind="stable")
        bounds = np.searchsorted(word[order], np.arange(n_relevant + 1))
        self._start, self._end = start[order], end[order]
        self._bounds = bounds
        self._cache: dict[int, np.ndarray] = {}

    def _bits(self, r: int) -> np.ndarray:
        """Packed bitset (ceil(n_windows / 8),) of the windows holding word ``r``."""
        bits = self._cache.get(r)
        if bits is None:
            lo, hi = self._bounds[r], self._bounds[r + 1]
            delta = np.zeros(self.n_windows + 1, dtype=np.int32)
            np.add.at(delta, self._start[lo:hi], 1)
            np.add.at(delta, self._end[lo:hi] + 1, -1)
            bits = np.packbits(np.cumsum(delta[:-1]) > 0)
            self._cache[r] = bits
        return bits

    def counts(self, words) -> np.ndarray:
        """Co-occurrence counts (N, N) of ``words``; the diagonal holds single counts."""
        bits = [self._bits(int(r)) for r in words]
        n = len(bits)
        out = np.zeros((n, n), dtype=np.int64)
        for i in range(n):
            for j in range(i, n):
                both = bits[i] if i == j else np.bitwise_and(bits[i], bits[j])
                out[i, j] = out[j, i] = _popcount(both)
        self._cache.clear()
        return out


# ------------------------------------------------------------------ measures
def _npmi(counts, n_windows):
    """NPMI matrix (N, N) from co-occurrence counts (gensim's eps convention); NaN for
    pairs with a word absent from every window."""
    p = np.diag(counts) / n_windows
    joint = counts / n_windows
    with np.errstate(divide="ignore", invalid="ignore"):
        pmi = np.log((joint + EPSILON) / np.outer(p, p))
        out = pmi / -np.log(joint + EPSILON)
    absent = p == 0
    out[absent, :] = np.nan
    out[:, absent] = np.nan
    return out


def _u_mass(counts, smoothing):
    n = len(counts)
    d = np.diag(counts).astype(np.float64)
    scores = []
    for i in range(1, n):
        for j in range(i):
            scores.append(np.log((counts[i, j] + smoothing) / d[j]) if d[j] > 0 else np.nan)
    return _nanmean(scores)


def _c_npmi(counts, n_windows):
    npmi = _npmi(counts, n_windows)
    upper = npmi[np.triu_indices(len(counts), k=1)]
    return _nanmean(upper)


def _c_v(counts, n_windows):
    npmi = np.nan_to_num(_npmi(counts, n_windows), nan=0.0)
    v_topic = npmi.sum(axis=0)
    norms = np.linalg.norm(npmi, axis=1) * np.linalg.norm(v_topic)
    with np.errstate(divide="ignore", invalid="ignore"):
        cos = (npmi @ v_topic) / norms
    return _nanmean(np.where(norms > 0, cos, np.nan))


def _nanmean(values):
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0 or np.isnan(values).all():
        return float("nan")
    return float(np.nanmean(values))


# ------------------------------------------------------------------ public API
def _tokens_and_ptr(texts, vocabulary):
    """Reference texts -> (list of word strings per type, flat ids into it, doc_ptr)."""
    from ..design.corpus import Corpus

    if isinstance(texts, Corpus):
        if vocabulary is not None and texts.vocabulary is not vocabulary:
            texts = vocabulary.transform(texts)
        return list(texts.words), np.asarray(texts.tokens), np.asarray(texts.doc_ptr)
    texts = list(texts)
    if vocabulary is not None:
        corpus = vocabulary.transform(texts)
        return list(corpus.words), np.asarray(corpus.tokens), np.asarray(corpus.doc_ptr)
    if any(isinstance(t, str) for t in texts):
        raise ValueError("texts must be token lists (or a Corpus) unless a vocabulary is given "
                         "to tokenize strings")
    index: dict[str, int] = {}
    flat = []
    lengths = []
    for doc in texts:
        ids = [index.setdefault(str(w), len(index)) for w in doc]
        flat.extend(ids)
        lengths.append(len(ids))
    doc_ptr = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
    words = [None] * len(index)
    for w, i in index.items():
        words[i] = w
    return words, np.asarray(flat, dtype=np.int64), doc_ptr


def coherence(topics, texts, measure="c_v", *, window_size="default", smoothing=1.0,
              vocabulary=None):
    """Coherence of every topic, given its top words, on reference texts.

    Parameters
    ----------
    topics : sequence of K sequences of str
        The top words of each topic, most probable first (the order matters for
        ``"u_mass"`` only).  At least two words per topic.
    texts : Corpus, sequence of token lists, or sequence of str with ``vocabulary``
        The reference corpus (the training documents, or held-out ones).
    measure : {"c_v", "c_npmi", "u_mass"}, default="c_v"
    window_size : int, None or "default"
        Sliding-window length in tokens; None: whole documents.  "default":
        110 for c_v, 10 for c_npmi, documents for u_mass (as gensim and Röder
        et al.).
    smoothing : float, default=1.0
        u_mass only: the count added to every co-occurrence (Mimno et al.'s 1;
        gensim's convention is ``1e-12 * D``).
    vocabulary : Vocabulary or None
        Tokenizes string texts (and maps a Corpus of another vocabulary).

    Returns
    -------
    ndarray (K,)
        The score of each topic; average it for the model.  A pair with a word
        that never occurs in ``texts`` is left out (NaN if no pair is left).
    """
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    if window_size == "default":
        window_size = DEFAULT_WINDOW[measure]
    if window_size is not None:
        window_size = int(window_size)
        if window_size < 1:
            raise ValueError(f"window_size must be a positive number of tokens, got "
                             f"{window_size}")
    topics = [[str(w) for w in topic] for topic in topics]
    if not topics or any(len(t) < 2 for t in topics):
        raise ValueError("every topic needs at least two top words")
    words, flat, doc_ptr = _tokens_and_ptr(texts, vocabulary)
    if len(doc_ptr) < 2:
        raise ValueError("texts is empty: coherence needs a reference corpus")
    relevant = sorted({w for topic in topics for w in topic})
    rel_index = {w: i for i, w in enumerate(relevant)}
    lookup = np.array([rel_index.get(w, -1) for w in words] + [-1], dtype=np.int64)
    ids = lookup[flat] if len(flat) else np.empty(0, dtype=np.int64)
    windows = _WindowCounts(ids, doc_ptr, len(relevant), window_size)
    scores = np.empty(len(topics))
    for k, topic in enumerate(topics):
        counts = windows.counts([rel_index[w] for w in topic])
        if measure == "u_mass":
            scores[k] = _u_mass(counts, float(smoothing))
        elif measure == "c_npmi":
            scores[k] = _c_npmi(counts, windows.n_windows)
        else:
            scores[k] = _c_v(counts, windows.n_windows)
    return scores


def topic_coherence(model, texts, measure="c_v", n_words=10, **kwargs):
    """Coherence of the topics of a fitted LDA or DOLDA, shape (K,).

    The top ``n_words`` words of every topic by ``phi_{k,w}`` (the usual
    convention for coherence; relevance ranking is for display) are scored on
    ``texts`` tokenized with the model's vocabulary.  See :func:`coherence` for
    ``measure`` and the other options.

    Examples
    --------
    >>> from dolda.interpret.coherence import topic_coherence                 # doctest: +SKIP
    >>> topic_coherence(model, train_texts, "c_npmi").mean()        # doctest: +SKIP
    """
    from sklearn.utils.validation import check_is_fitted

    from .topics import relevant_words

    check_is_fitted(model, "phi_")
    n_words = int(n_words)
    if n_words < 2:
        raise ValueError(f"n_words must be at least 2, got {n_words}")
    phi = np.asarray(model.phi_)
    top = relevant_words(phi, np.ones(phi.shape[1]), 1.0, n_words, model.vocabulary_.words)
    return coherence(top.tolist(), texts, measure, vocabulary=model.vocabulary_, **kwargs)
