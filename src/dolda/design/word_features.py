"""Words as covariates: the counts of selected vocabulary words beside the topics.

A topic proportion averages over a whole document; a single decisive word
("druid", "s3", "azure") is diluted in it.  DOLDA's regression can take any
covariates ``x_d`` beside ``zbar_d`` (paper section 2), so the counts of a few
hundred or thousand vocabulary words can enter as sparse covariates, each with
its own Horseshoe-shrunk coefficient per class: the Horseshoe keeps the few
words that decide a class and shrinks the rest to zero.

:class:`WordFeatures` selects the words on the training corpus and maps any
:class:`dolda.design.corpus.Corpus` with the same vocabulary to a sparse CSR matrix
(D, n_words) of

* ``"log"``: ``log(1 + n_{d,w})`` (default; a word seen 20 times counts about
  three times as much as a word seen once);
* ``"binary"``: ``1`` if the word occurs in the document;
* ``"tfidf"``: ``(1 + log n_{d,w}) * idf_w`` with scikit-learn's smoothed
  ``idf_w = 1 + log((1 + D) / (1 + df_w))``, each row scaled to unit
  Euclidean norm over the selected words.

Which words (``selection``):

* ``"df"``: the ``n_words`` with the highest document frequency in the training
  corpus, which uses no labels;
* ``"chi2"``: the ``n_words`` most associated with the class, by the chi-squared
  statistic of the word's presence against the label on the training documents
  (scikit-learn's :func:`~sklearn.feature_selection.chi2`), among the words in at
  least :data:`CHI2_MIN_DF` training documents (a word seen once or twice cannot be
  judged); when fewer words qualify, the rest are filled by document frequency.  A
  common word spread evenly over the classes is left to the topics; a rarer word
  that marks one class ("druid", a newsgroup's sign-off) is kept.

Ties are broken by document frequency, then by word id (alphabetically).
Columns are named ``"word=<word>"``.

``dense=True`` (DOLDA's ``word_prior="both"``) appends a second, dense part: every word of
the training corpus as ``"tfidf"`` over the whole vocabulary (rows of unit length),
named ``"dense=<word>"``.  The regression then gives each word a sparse part (the
selected words, Horseshoe) and a dense part (every word, a Gaussian), whose sum is the
word's effect.
"""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

#: The word-feature transforms :class:`WordFeatures` knows.
WORD_FEATURES = ("log", "binary", "tfidf")

#: How :class:`WordFeatures` picks its words.
WORD_SELECTIONS = ("df", "chi2")

#: ``selection="chi2"`` ranks only words in at least this many training documents.
CHI2_MIN_DF = 3

#: Prefix of the column names of word covariates.
WORD_PREFIX = "word="

#: Prefix of the column names of the dense part (``WordFeatures(dense=True)``).
DENSE_PREFIX = "dense="


#: ``n_words="auto"``: about one word column per two training documents, at least
#: :data:`AUTO_MIN_WORDS` and at most :data:`AUTO_MAX_WORDS`.  Chosen by measurement
#: (docs/decisions/n-words.md): 2,000 words beat 800 and 5,000 on bug-report
#: corpora of 825-2,770 documents, 5,000 beat 2,000 and 10,000 on 20 Newsgroups (11,314).
AUTO_MIN_WORDS, AUTO_MAX_WORDS = 2000, 5000


#: ``n_words="all"``: every word of the kept vocabulary (every word with a training
#: document) is a covariate.
ALL_WORDS = "all"


def check_n_words(value):
    """``n_words`` as an int >= 0 (0: no word covariates), ``"auto"`` or ``"all"``; a
    one-line error otherwise."""
    if isinstance(value, str) and value in ("auto", ALL_WORDS):
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 0:
        raise ValueError(f"n_words must be an int >= 0 (0: no word covariates), 'auto' or "
                         f"'all' (every kept vocabulary word), got {value!r}")
    return int(value)


def resolve_n_words(value, n_docs: int, n_vocabulary: int | None = None) -> int:
    """The number of word covariates ``n_words`` asks for on ``n_docs`` training documents.

    ``"auto"``: ``n_docs // 2`` clipped to [:data:`AUTO_MIN_WORDS`, :data:`AUTO_MAX_WORDS`];
    ``"all"``: ``n_vocabulary``, the size of the kept vocabulary; an int is returned as it
    is.  Either way :meth:`WordFeatures.fit` keeps at most the words that occur in the
    corpus.
    """
    value = check_n_words(value)
    if value == "auto":
        return int(min(AUTO_MAX_WORDS, max(AUTO_MIN_WORDS, n_docs // 2)))
    if value == ALL_WORDS:
        if n_vocabulary is None:
            raise ValueError("n_words='all' needs the vocabulary size")
        return int(n_vocabulary)
    return value


def _count_matrix(corpus) -> sp.csr_matrix:
    """``n_{d,w}`` as CSR (D, V) from the corpus's flat token arrays (duplicates summed)."""
    rows = np.repeat(np.arange(corpus.n_docs), np.diff(corpus.doc_ptr))
    data = np.ones(len(corpus.tokens), dtype=np.float64)
    # through COO: its conversion sums repeated (d, w) pairs (a CSR built straight from
    # the token arrays would keep them, and column indexing would then miscount)
    return sp.coo_matrix((data, (rows, corpus.tokens)),
                         shape=(corpus.n_docs, corpus.n_words)).tocsr()


def _chi2_scores(counts: sp.csr_matrix, y: np.ndarray) -> np.ndarray:
    """Chi-squared statistic of each word's presence against the class (0 where undefined:
    a word in no document, or a single class)."""
    from sklearn.feature_selection import chi2

    if len(np.unique(y)) < 2:
        return np.zeros(counts.shape[1])
    present = sp.csr_matrix((np.ones_like(counts.data), counts.indices, counts.indptr),
                            shape=counts.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        score, _ = chi2(present, y)
    return np.where(np.isfinite(score), score, 0.0)  # NaN for words in no document


def _tfidf_rows(counts: sp.csr_matrix, idf: np.ndarray) -> sp.csr_matrix:
    """``(1 + log n) * idf`` of CSR counts (sorted indices), rows scaled to unit length."""
    counts = counts.copy()
    counts.data = (1.0 + np.log(counts.data)) * idf[counts.indices]
    norms = np.sqrt(np.asarray(counts.multiply(counts).sum(axis=1)).ravel())
    return sp.csr_matrix(sp.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ counts,
                         dtype=np.float64)


class WordFeatures:
    """Selected vocabulary words as sparse covariates (see the module doc).

    Parameters
    ----------
    n_words : int
        Number of words to keep (at most the vocabulary size).
    kind : {"log", "binary", "tfidf"}, default="log"
    selection : {"df", "chi2"}, default="df"
        Which words: highest document frequency, or most associated with the
        label (``fit`` then needs ``y``); see the module doc.
    dense : bool, default=False
        Also every word of the corpus as tf-idf (the dense part; module doc).

    Attributes
    ----------
    word_ids_ : int64 (n,)
        Vocabulary ids of the selected words, increasing.
    words_ : list of str (n,)
    idf_ : float64 (n,)
        Inverse document frequencies (used by ``"tfidf"`` only).
    dense_ids_, dense_words_, dense_idf_ : the dense part's words (None without one).
    """

    def __init__(self, n_words: int, kind: str = "log", selection: str = "df",
                 dense: bool = False):
        self.n_words = n_words
        self.kind = kind
        self.selection = selection
        self.dense = dense

    def fit(self, corpus, y=None) -> WordFeatures:
        """Pick ``n_words`` words of ``corpus`` (``y``: class index per document, needed by
        ``selection="chi2"``)."""
        n = check_n_words(self.n_words)
        if isinstance(n, str):
            raise ValueError(f"WordFeatures needs a number of words; resolve {n!r} with "
                             "resolve_n_words first")
        if self.kind not in WORD_FEATURES:
            raise ValueError(f"word_features must be one of {WORD_FEATURES}, got {self.kind!r}")
        if self.selection not in WORD_SELECTIONS:
            raise ValueError(f"word_selection must be one of {WORD_SELECTIONS}, "
                             f"got {self.selection!r}")
        counts = _count_matrix(corpus)
        df = np.bincount(counts.indices, minlength=corpus.n_words)
        n = min(n, int(np.count_nonzero(df)))
        if self.selection == "chi2":
            if y is None or len(y) != corpus.n_docs:
                raise ValueError("word_selection='chi2' needs one label per training document")
            score = _chi2_scores(counts, np.asarray(y))
            eligible = (df >= CHI2_MIN_DF).astype(np.int64)
            # eligible first, then chi2, then df (descending), then id
            order = np.lexsort((np.arange(len(df)), -df, -score, -eligible))[:n]
        else:
            order = np.lexsort((np.arange(len(df)), -df))[:n]  # df descending, then id
        self.word_ids_ = np.sort(order).astype(np.int64)
        words = corpus.vocabulary.words
        self.words_ = [words[i] for i in self.word_ids_]
        n_docs = corpus.n_docs
        idf = 1.0 + np.log((1.0 + n_docs) / (1.0 + df))
        self.idf_ = idf[self.word_ids_]
        self.dense_ids_ = np.flatnonzero(df).astype(np.int64) if self.dense else None
        self.dense_idf_ = idf[self.dense_ids_] if self.dense else None
        self.dense_words_ = [words[i] for i in self.dense_ids_] if self.dense else None
        return self

    @property
    def n_dense_(self) -> int:
        """Columns of the dense part (0 without one)."""
        ids = getattr(self, "dense_ids_", None)
        return 0 if ids is None else len(ids)

    def get_feature_names_out(self) -> list:
        """``["word=<w>", ...]`` in column order, then ``["dense=<w>", ...]`` with a dense
        part."""
        names = [WORD_PREFIX + w for w in self.words_]
        if self.n_dense_:
            names += [DENSE_PREFIX + w for w in self.dense_words_]
        return names

    def transform(self, corpus) -> sp.csr_matrix:
        """The word covariates of ``corpus``: CSR float64 (D, n_words).

        ``corpus`` must use the vocabulary the features were fitted with (word
        ids are looked up, not words).
        """
        all_counts = _count_matrix(corpus)
        counts = all_counts[:, self.word_ids_].tocsr()
        counts.sort_indices()
        values = counts.data
        if self.kind == "log":
            counts.data = np.log1p(values)
        elif self.kind == "binary":
            counts.data = np.ones_like(values)
        else:
            counts = _tfidf_rows(counts, self.idf_)
        out = sp.csr_matrix(counts, dtype=np.float64)
        if self.n_dense_:
            dense = all_counts[:, self.dense_ids_].tocsr()
            dense.sort_indices()
            out = sp.hstack([out, _tfidf_rows(dense, self.dense_idf_)], format="csr")
        return out

    def fit_transform(self, corpus) -> sp.csr_matrix:
        return self.fit(corpus).transform(corpus)

    def to_dict(self) -> dict:
        """JSON-able state for the model file (no pickle)."""
        out = {"n_words": int(self.n_words), "kind": self.kind, "selection": self.selection,
               "word_ids": self.word_ids_.tolist(), "words": list(self.words_),
               "idf": self.idf_.tolist()}
        if self.n_dense_:
            out["dense"] = {"word_ids": self.dense_ids_.tolist(),
                            "words": list(self.dense_words_), "idf": self.dense_idf_.tolist()}
        return out

    @classmethod
    def from_dict(cls, data: dict) -> WordFeatures:
        out = cls(data["n_words"], data["kind"], data.get("selection", "df"))
        out.word_ids_ = np.asarray(data["word_ids"], dtype=np.int64)
        out.words_ = list(data["words"])
        out.idf_ = np.asarray(data["idf"], dtype=np.float64)
        dense = data.get("dense")  # absent in files written before the dense part
        out.dense = dense is not None
        out.dense_ids_ = None if dense is None else np.asarray(dense["word_ids"], np.int64)
        out.dense_idf_ = None if dense is None else np.asarray(dense["idf"], np.float64)
        out.dense_words_ = None if dense is None else list(dense["words"])
        return out
