"""Vocabulary and corpus: from raw texts to flat arrays of word ids.

The preprocessing follows the DOLDA paper (section 4): tokenize, lowercase,
remove an English stop list, then remove the rarest word types that together
make up a given share of all tokens (1% in the paper).

A :class:`Corpus` never stores lists of lists.  The word ids of all documents
sit back to back in one ``int32`` array ``tokens`` (length ``N``) and
document ``d`` owns ``tokens[doc_ptr[d]:doc_ptr[d + 1]]`` (``doc_ptr`` is an
``int64`` array of length ``D + 1``), exactly like the ``indices`` and
``indptr`` arrays of a CSR matrix.  These are the arrays the numba kernels of
:mod:`dolda.sampler` take.

>>> from dolda.design.corpus import Corpus
>>> corpus = Corpus(["Topic models find topics", "Models of topics"], rare_share=0)
>>> corpus.words
['models', 'topic', 'topics']
>>> corpus.tokens.tolist(), corpus.doc_ptr.tolist()
([1, 0, 2, 0, 2], [0, 3, 5])
"""

from __future__ import annotations

import logging
import numbers
import re
import warnings
from collections.abc import Iterable

import numpy as np

logger = logging.getLogger(__name__)

#: Default token pattern: words of two or more characters that start with a
#: letter and consist of letters and digits (no underscores).  "x11" and "gpl2"
#: are words; "42", "_tmp", "a" are not, and an identifier with an underscore
#: ("under_score") gives no token at all.
TOKEN_PATTERN = r"(?u)\b[^\W\d_][^\W_]+\b"

__all__ = ["TOKEN_PATTERN", "Corpus", "Vocabulary", "read_stop_words"]


def read_stop_words(stop_words):
    """Resolve a user's stop-word choice to what :class:`Vocabulary` takes.

    Parameters
    ----------
    stop_words : "english", None, path, or collection of str
        ``"english"`` (scikit-learn's list) and None are returned as they are;
        a path (``str`` other than ``"english"`` or ``os.PathLike``) names a
        UTF-8 text file with one word per line (blank lines and text after
        ``#`` ignored); a collection of words is returned as a sorted list.

    Returns
    -------
    "english", None or list of str
    """
    import os
    from pathlib import Path

    if stop_words is None or (isinstance(stop_words, str) and stop_words == "english"):
        return stop_words
    if isinstance(stop_words, (str, os.PathLike)):
        path = Path(stop_words)
        if not path.is_file():
            raise ValueError(f"stop_words must be 'english', None, a list of words or a file "
                             f"of words; {str(stop_words)!r} is not a file")
        words = []
        for line in path.read_text(encoding="utf-8").splitlines():
            word = line.split("#", 1)[0].strip()
            if word:
                words.append(word)
        return sorted(set(words))
    if not isinstance(stop_words, Iterable) or not all(isinstance(w, str) for w in stop_words):
        raise TypeError(f"stop_words must be 'english', None, a path or a collection of str, "
                        f"got {type(stop_words).__name__}")
    return sorted(set(stop_words))


def check_token_pattern(pattern) -> str:
    """``pattern`` if it is a valid regular expression in the subset that cannot backtrack
    catastrophically (:mod:`dolda.design.token_pattern`), else a one-line ValueError."""
    from .token_pattern import UnsafePattern, check_safe_pattern

    if not isinstance(pattern, str):
        raise TypeError(f"token_pattern must be a str, got {type(pattern).__name__}")
    try:
        check_safe_pattern(pattern)
        re.compile(pattern)
    except (re.error, UnsafePattern) as exc:
        raise ValueError(f"token_pattern {pattern[:80]!r} is refused: "
                         f"{' '.join(str(exc).split())}") from None
    return pattern


def _english_stop_words() -> frozenset:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


def _check_share(value, name: str, upper_open: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not (0.0 <= value < 1.0):
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return value


def _df_bound(value, name: str, n_docs: int) -> int:
    """A document-frequency bound as an absolute count (int: as is, float: share of D)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an int (documents) or a float in (0, 1], got {value!r}")
    if isinstance(value, numbers.Integral):
        if value < 0:
            raise ValueError(f"{name} must be >= 0, got {value}")
        return int(value)
    if not (0.0 < value <= 1.0):
        raise ValueError(f"{name} as a float is a share of documents and must be in (0, 1], "
                         f"got {value}")
    return int(np.ceil(value * n_docs)) if name == "min_df" else int(np.floor(value * n_docs))


def _iter_documents(texts):
    """Yield ``(label, document)`` pairs, checking that ``texts`` is a collection of documents."""
    if isinstance(texts, (str, bytes)):
        raise TypeError("texts must be an iterable of documents (strings or token lists), "
                        "got a single str; wrap it in a list")
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is a dependency
        pd = None
    if pd is not None and isinstance(texts, pd.DataFrame):
        raise TypeError("texts must be a 1-d collection of documents, got a DataFrame; "
                        "pass one column, e.g. df['text']")
    if pd is not None and isinstance(texts, pd.Series):
        yield from zip(texts.index, texts.to_numpy(dtype=object))
        return
    if isinstance(texts, np.ndarray) and texts.ndim != 1:
        raise TypeError(f"texts must be a 1-d collection of documents, got an array of "
                        f"shape {texts.shape}")
    if not isinstance(texts, Iterable):
        raise TypeError(f"texts must be an iterable of documents, got {type(texts).__name__}")
    yield from enumerate(texts)


class Vocabulary:
    """Tokenizer, stop list and pruned word list: maps texts to word ids.

    Parameters
    ----------
    token_pattern : str, default=:data:`TOKEN_PATTERN`
        Regular expression whose matches are the tokens of a string document:
        words of at least two characters that start with a letter.
    lowercase : bool, default=True
        Lowercase documents (and pre-tokenized tokens) before anything else.
    stop_words : "english", None or collection of str, default="english"
        Words removed before counting; ``"english"`` is scikit-learn's
        ``ENGLISH_STOP_WORDS`` (318 words).
    rare_share : float in [0, 1), default=0.01
        Remove the rarest word types that together make up at most this share
        of all tokens (the paper removes the rarest 1%).  Types are ranked by
        count, ties broken alphabetically, so the result is deterministic.
    min_df, max_df : int or float, default=1 and 1.0
        Keep only words that occur in at least ``min_df`` and at most
        ``max_df`` documents (a float is a share of documents).  Applied
        before ``rare_share``.

    Attributes
    ----------
    words : list of str (V,)
        The kept word types, alphabetical; word id ``v`` is ``words[v]``.
    n_removed_ : dict
        Tokens removed by the stop list, the df bounds and ``rare_share`` at fit.
    n_unseen_ : int
        Tokens of the last :meth:`transform` whose word is not in ``words``.

    Notes
    -----
    String documents are tokenized by ``token_pattern``; pre-tokenized
    documents (lists of str) are only lowercased and stop-filtered.
    """

    def __init__(self, token_pattern=TOKEN_PATTERN, lowercase=True, stop_words="english",
                 rare_share=0.01, min_df=1, max_df=1.0):
        self.token_pattern = token_pattern
        self.lowercase = lowercase
        self.stop_words = stop_words
        self.rare_share = rare_share
        self.min_df = min_df
        self.max_df = max_df

    # ----------------------------------------------------------- tokenizing
    def _stop_set(self) -> frozenset:
        if self.stop_words is None:
            return frozenset()
        if isinstance(self.stop_words, str):
            if self.stop_words != "english":
                raise ValueError(f"stop_words must be 'english', None or a collection of "
                                 f"words; got {self.stop_words!r}")
            return _english_stop_words()
        return frozenset(str(w).lower() if self.lowercase else str(w) for w in self.stop_words)

    def _tokenize_all(self, texts):
        """Token lists (stop words removed) of every document, checking entry types."""
        # a Vocabulary built by hand or read from a file runs only safe patterns too
        regex = re.compile(check_token_pattern(self.token_pattern))
        stop = self._stop_set()
        lower = self.lowercase
        docs = []
        # one str object per distinct word: the token lists of a large corpus then cost a
        # pointer per token instead of a separate string each (~60 bytes)
        canon: dict[str, str] = {}
        for position, (label, doc) in enumerate(_iter_documents(texts)):
            if isinstance(doc, str):
                toks = regex.findall(doc.lower() if lower else doc)
            elif isinstance(doc, (list, tuple, np.ndarray)):
                toks = []
                for j, t in enumerate(doc):
                    if not isinstance(t, str):
                        raise TypeError(f"document {label!r} (position {position}) has a "
                                        f"non-string token at index {j}: "
                                        f"{type(t).__name__} {t!r}")
                    toks.append(t.lower() if lower else t)
            else:
                where = (f"document {label!r} (position {position})" if label != position
                         else f"document {position}")
                raise TypeError(f"{where} is {type(doc).__name__} ({doc!r:.40}); every document "
                                "must be a str or a list of str tokens")
            docs.append([canon.setdefault(t, t) for t in toks if t not in stop])
        if not docs:
            raise ValueError("the corpus is empty: texts holds no documents")
        return docs

    # ---------------------------------------------------------------- fit
    def fit(self, texts) -> "Vocabulary":
        """Learn the word list from ``texts`` (iterable of str, Series, or token lists)."""
        self.fit_transform(texts)
        return self

    def fit_transform(self, texts) -> "Corpus":
        """Learn the word list and return ``texts`` as a :class:`Corpus`."""
        rare_share = _check_share(self.rare_share, "rare_share")
        docs = self._tokenize_all(texts)
        n_docs = len(docs)
        min_df = _df_bound(self.min_df, "min_df", n_docs)
        max_df = _df_bound(self.max_df, "max_df", n_docs)
        counts: dict[str, int] = {}
        dfs: dict[str, int] = {}
        for doc in docs:
            for t in doc:
                counts[t] = counts.get(t, 0) + 1
            for t in set(doc):
                dfs[t] = dfs.get(t, 0) + 1
        n_total = sum(counts.values())
        if n_total == 0:
            raise ValueError("all documents are empty after tokenizing and stop-word removal; "
                             "no word to build a vocabulary from")
        kept = [w for w in counts if min_df <= dfs[w] <= max_df]
        n_after_df = sum(counts[w] for w in kept)
        removed_rare = 0
        if rare_share > 0 and kept:
            kept.sort(key=lambda w: (counts[w], w))
            budget = rare_share * n_after_df
            cut = 0
            for w in kept:
                if removed_rare + counts[w] > budget:
                    break
                removed_rare += counts[w]
                cut += 1
            kept = kept[cut:]
        self.words = sorted(kept)
        self.index_ = {w: i for i, w in enumerate(self.words)}
        self.n_removed_ = {"df": n_total - n_after_df, "rare": removed_rare}
        if not self.words:
            raise ValueError(
                f"all documents are empty after pruning: no word type survives "
                f"min_df={self.min_df}, max_df={self.max_df}, rare_share={self.rare_share}")
        logger.info("vocabulary: %d word types kept of %d; %d tokens removed by df bounds, "
                    "%d as rare", len(self.words), len(counts), self.n_removed_["df"],
                    removed_rare)
        corpus = self._encode(docs)
        if corpus.n_tokens == 0:  # pragma: no cover - a kept word always has a token
            raise ValueError("all documents are empty after pruning")
        return corpus

    # ----------------------------------------------------------- transform
    def _check_fitted(self):
        if not hasattr(self, "index_"):
            raise RuntimeError("this Vocabulary is not fitted yet; call fit or fit_transform")

    def _encode(self, docs, allow_all_empty: bool = False) -> "Corpus":
        index = self.index_
        lengths = np.zeros(len(docs), dtype=np.int64)
        ids = []
        n_unseen = 0
        for d, doc in enumerate(docs):
            mapped = [index[t] for t in doc if t in index]
            n_unseen += len(doc) - len(mapped)
            lengths[d] = len(mapped)
            ids.extend(mapped)
        doc_ptr = np.zeros(len(docs) + 1, dtype=np.int64)
        np.cumsum(lengths, out=doc_ptr[1:])
        self.n_unseen_ = n_unseen
        return Corpus.from_arrays(np.asarray(ids, dtype=np.int32), doc_ptr, self,
                                  n_unseen=n_unseen, allow_all_empty=allow_all_empty)

    def transform(self, texts) -> "Corpus":
        """Map new texts to word ids of this vocabulary; unseen words are dropped.

        Parameters
        ----------
        texts : iterable of str, pandas Series, token lists, or Corpus (D,)

        Returns
        -------
        Corpus
            Tokens whose word is not in :attr:`words` are dropped; their number
            is recorded in ``n_unseen_`` (here and on the returned corpus).
        """
        self._check_fitted()
        if isinstance(texts, Corpus):
            if texts.vocabulary is self:
                self.n_unseen_ = 0
                return texts
            lookup = np.array([self.index_.get(w, -1) for w in texts.words], dtype=np.int64)
            mapped = lookup[texts.tokens] if texts.n_tokens else np.empty(0, np.int64)
            keep = mapped >= 0
            kept_per_doc = np.add.reduceat(keep.astype(np.int64), texts.doc_ptr[:-1]) \
                if texts.n_tokens else np.zeros(texts.n_docs, np.int64)
            kept_per_doc[texts.doc_lengths == 0] = 0
            doc_ptr = np.zeros(texts.n_docs + 1, dtype=np.int64)
            np.cumsum(kept_per_doc, out=doc_ptr[1:])
            self.n_unseen_ = int((~keep).sum())
            return Corpus.from_arrays(mapped[keep].astype(np.int32), doc_ptr, self,
                                      n_unseen=self.n_unseen_, allow_all_empty=True)
        # new documents may all be empty (predict([""])): warned, like one empty
        # document in a batch, never an error
        return self._encode(self._tokenize_all(texts), allow_all_empty=True)

    # ---------------------------------------------------------- utilities
    def __len__(self) -> int:
        self._check_fitted()
        return len(self.words)

    def __repr__(self) -> str:
        size = f"{len(self.words)} words" if hasattr(self, "words") else "not fitted"
        return f"Vocabulary({size}, rare_share={self.rare_share})"

    def to_dict(self) -> dict:
        """JSON-encodable description (options and word list), for model files."""
        self._check_fitted()
        stop = self.stop_words
        if stop is not None and not isinstance(stop, str):
            stop = sorted(str(w) for w in stop)
        return {"token_pattern": self.token_pattern, "lowercase": bool(self.lowercase),
                "stop_words": stop, "rare_share": float(self.rare_share),
                "min_df": self.min_df, "max_df": self.max_df, "words": list(self.words)}

    @classmethod
    def from_dict(cls, data: dict) -> "Vocabulary":
        """Rebuild a fitted vocabulary from :meth:`to_dict` output."""
        vocab = cls(token_pattern=data["token_pattern"], lowercase=data["lowercase"],
                    stop_words=data["stop_words"], rare_share=data["rare_share"],
                    min_df=data["min_df"], max_df=data["max_df"])
        vocab.words = list(data["words"])
        vocab.index_ = {w: i for i, w in enumerate(vocab.words)}
        vocab.n_removed_ = {}
        return vocab


class Corpus:
    """Documents as flat arrays of word ids (CSR layout).

    Parameters
    ----------
    texts : iterable of str, pandas Series, or iterable of lists of str (D,)
        Raw documents or pre-tokenized ones.
    vocabulary : Vocabulary or None
        A fitted vocabulary to map ``texts`` with (unseen words dropped and
        counted in :attr:`n_unseen`); ``None`` fits a new one with the
        options below.
    **options
        ``token_pattern``, ``lowercase``, ``stop_words``, ``rare_share``,
        ``min_df``, ``max_df`` of :class:`Vocabulary`.

    Attributes
    ----------
    tokens : int32 (N,)
        Word ids ``w_{d,n}``, documents back to back.
    doc_ptr : int64 (D+1,)
        Document ``d`` owns ``tokens[doc_ptr[d]:doc_ptr[d+1]]``.
    vocabulary : Vocabulary
    n_unseen : int
        Tokens dropped because their word is not in the vocabulary.

    Warns
    -----
    UserWarning
        When some documents are empty after preprocessing (they are kept, with
        length 0, so that rows still line up with labels and covariates).

    Raises
    ------
    ValueError
        Empty input, or every document empty after pruning.
    TypeError
        A document that is neither a str nor a list of str (the message names
        its index and type).
    """

    def __init__(self, texts, vocabulary: Vocabulary | None = None, **options):
        if vocabulary is None:
            vocabulary = Vocabulary(**options)
            other = vocabulary.fit_transform(texts)
        else:
            if options:
                raise TypeError("pass either a fitted vocabulary or vocabulary options, "
                                f"not both (got {sorted(options)})")
            other = vocabulary.transform(texts)
        self.tokens, self.doc_ptr = other.tokens, other.doc_ptr
        self.vocabulary, self.n_unseen = other.vocabulary, other.n_unseen

    @classmethod
    def from_arrays(cls, tokens, doc_ptr, vocabulary: Vocabulary, n_unseen: int = 0,
                    warn_empty: bool = True, allow_all_empty: bool = False) -> "Corpus":
        """Wrap existing ``tokens`` (N,) and ``doc_ptr`` (D+1,) arrays, checking them.

        ``allow_all_empty``: a corpus without any token is allowed (with a
        warning) instead of an error; documents to predict may all be empty.
        """
        from ..utils.validation import check_doc_ptr

        tokens = np.ascontiguousarray(tokens, dtype=np.int32)
        doc_ptr = np.ascontiguousarray(doc_ptr, dtype=np.int64)
        if doc_ptr.ndim != 1 or len(doc_ptr) < 2:
            raise ValueError("the corpus is empty: doc_ptr must have length D + 1 >= 2")
        doc_ptr = check_doc_ptr(doc_ptr, len(tokens))
        n_words = len(vocabulary.words)
        if len(tokens) and (tokens.min() < 0 or tokens.max() >= n_words):
            raise ValueError(f"token ids must lie in [0, {n_words})")
        self = cls.__new__(cls)
        self.tokens, self.doc_ptr = tokens, doc_ptr
        self.vocabulary, self.n_unseen = vocabulary, int(n_unseen)
        n_empty = int(np.sum(self.doc_lengths == 0))
        if len(tokens) == 0 and not allow_all_empty:
            raise ValueError(f"all {self.n_docs} documents are empty after preprocessing "
                             "(tokenizing, stop words, vocabulary pruning or unseen words)")
        if n_empty and warn_empty:
            warnings.warn(f"{n_empty} of {self.n_docs} documents are empty after "
                          "preprocessing; they are kept with length 0", UserWarning,
                          stacklevel=3)
        return self

    @property
    def n_docs(self) -> int:
        """``D``: number of documents (empty ones included)."""
        return len(self.doc_ptr) - 1

    @property
    def n_tokens(self) -> int:
        """``N``: total number of tokens."""
        return len(self.tokens)

    @property
    def n_words(self) -> int:
        """``V``: size of the vocabulary."""
        return len(self.vocabulary.words)

    @property
    def doc_lengths(self) -> np.ndarray:
        """``N_d`` of every document, int64 (D,)."""
        return np.diff(self.doc_ptr)

    @property
    def words(self) -> list:
        """The vocabulary's word list (V,)."""
        return self.vocabulary.words

    def document(self, d: int) -> list:
        """The words of document ``d`` after preprocessing."""
        words = self.vocabulary.words
        return [words[i] for i in self.tokens[self.doc_ptr[d]:self.doc_ptr[d + 1]]]

    def __len__(self) -> int:
        return self.n_docs

    def __repr__(self) -> str:
        return f"Corpus(D={self.n_docs}, N={self.n_tokens}, V={self.n_words})"
