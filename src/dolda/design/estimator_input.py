"""What the text estimators accept as ``X``: texts, a DataFrame, or a document-term matrix.

scikit-learn hands an estimator one ``X`` (and ``y``) through Pipeline,
GridSearchCV and cross_val_score, so everything a document carries must be in
that ``X``:

* :class:`dolda.DOLDA` takes a DataFrame whose ``text_column`` holds the
  documents and whose other columns (or ``covariate_columns``) are the
  covariates; :func:`split_documents` separates the two.
* :class:`dolda.LDA` also takes a document-term matrix of counts, e.g. from
  ``CountVectorizer``; :func:`corpus_from_counts` turns it into the flat token
  arrays of a :class:`~dolda.design.corpus.Corpus` (the columns are the vocabulary).

The former keyword form ``fit(texts, y, X=covariates)`` is kept for one
release through :func:`legacy_covariates_keyword`.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["corpus_from_counts", "is_count_matrix", "legacy_covariates_keyword",
           "split_documents"]


def split_documents(X, text_column, covariate_columns, covariates):
    """Documents and covariates of DOLDA's input ``X``.

    Parameters
    ----------
    X : DataFrame, or iterable of str / token lists, or Corpus (D,), or a document-term
        matrix (sparse, numeric array or numeric DataFrame without ``text_column``)
        A DataFrame must hold ``text_column``; its other columns (or only
        ``covariate_columns``) are the covariates.
    text_column : hashable
        The DataFrame column with the documents.
    covariate_columns : sequence or None
        Covariate columns of a DataFrame ``X`` (None: all but ``text_column``;
        an empty list: no covariates).
    covariates : DataFrame, array, sparse matrix or None (D, P)
        Covariates passed beside a non-DataFrame ``X``.

    Returns
    -------
    texts : the documents (D,)
    covariates : DataFrame, array, sparse matrix or None
    """
    if isinstance(X, pd.DataFrame) and text_column not in X.columns and is_count_matrix(X):
        return X, covariates  # a document-term matrix of counts: its columns are words
    if not isinstance(X, pd.DataFrame):
        if covariate_columns is not None and covariates is not None:
            if not isinstance(covariates, pd.DataFrame):
                raise ValueError("covariate_columns selects DataFrame columns, but the "
                                 "covariates are not a DataFrame")
            covariates = covariates[_columns(covariates, covariate_columns)]
        return X, covariates
    if covariates is not None:
        raise ValueError("X is a DataFrame, so its columns other than text_column are the "
                         "covariates; do not pass covariates= as well")
    if text_column not in X.columns:
        raise ValueError(f"X is a DataFrame without the text column {text_column!r} "
                         f"(it has {list(X.columns)[:10]}); set text_column=")
    if covariate_columns is None:
        cols = [c for c in X.columns if c != text_column]
    else:
        cols = _columns(X, covariate_columns)
        if text_column in cols:
            raise ValueError(f"the text column {text_column!r} cannot be a covariate column")
    return X[text_column], (X[cols] if cols else None)


def check_covariate_columns(columns):
    """``covariate_columns`` is None, a column name or a list of them (one-line ValueError)."""
    if columns is None or isinstance(columns, str):
        return columns
    if isinstance(columns, (list, tuple, pd.Index, np.ndarray)) and all(
            isinstance(c, (str, int, np.integer)) and not isinstance(c, bool) for c in columns):
        return columns
    raise ValueError("covariate_columns must be None, a column name or a list of column "
                     f"names, got {type(columns).__name__} {columns!r}"[:200])


def _columns(frame, columns):
    check_covariate_columns(columns)
    cols = [columns] if isinstance(columns, str) else list(columns)
    missing = [c for c in cols if c not in frame.columns]
    if missing:
        raise ValueError(f"covariate_columns {missing} are not columns of X "
                         f"(it has {list(frame.columns)[:10]})")
    return cols


def legacy_covariates_keyword(method):
    """Accept the former ``method(texts, ..., X=covariates)`` as ``covariates=``.

    scikit-learn reserves the name ``X`` for the main input, so the covariates
    moved to ``covariates=`` (or into a DataFrame ``X``).  A call that gives the
    documents positionally *and* ``X=`` by keyword is the old form: it still
    works, with a DeprecationWarning.  ``functools.wraps`` keeps the signature
    that metadata routing inspects.
    """
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if args and "X" in kwargs:
            if kwargs.get("covariates") is not None:
                raise TypeError(f"{method.__name__}() got covariates twice, as X= and "
                                "covariates=")
            warnings.warn(f"{type(self).__name__}.{method.__name__}(texts, ..., X=covariates) "
                          "is deprecated: pass covariates=..., or a DataFrame X with the "
                          "texts in its text_column and the covariates in the other columns",
                          DeprecationWarning, stacklevel=2)
            kwargs["covariates"] = kwargs.pop("X")
        return method(self, *args, **kwargs)

    return wrapper


def is_count_matrix(X) -> bool:
    """True for what looks like a document-term matrix: sparse, numeric 2-D array or frame."""
    if sp.issparse(X):
        return True
    if isinstance(X, np.ndarray):
        return X.ndim == 2 and X.dtype.kind in "biuf"
    if isinstance(X, pd.DataFrame):
        return X.shape[1] > 0 and all(dt.kind in "biuf" for dt in X.dtypes)
    return False


def count_tokens(X) -> tuple[np.ndarray, np.ndarray]:
    """Token arrays ``(tokens, doc_ptr)`` of a validated count matrix ``X`` (D, V).

    Document ``d`` gets ``X[d, v]`` copies of word ``v``, words in column
    order (the order does not matter to LDA: tokens are exchangeable).

    Raises
    ------
    ValueError
        Negative or non-integer entries (e.g. tf-idf weights: the Gibbs sampler
        needs token counts).
    """
    X = sp.csr_matrix(X)
    X.sum_duplicates()
    data = X.data
    if data.size and (data.min() < 0 or not np.all(data == np.floor(data))):
        bad = "negative" if data.min() < 0 else "non-integer"
        raise ValueError(f"a document-term matrix must hold word counts; this one has {bad} "
                         "entries (use CountVectorizer, not TfidfVectorizer)")
    counts = data.astype(np.int64)
    tokens = np.repeat(X.indices, counts).astype(np.int32)
    cumulative = np.concatenate([[0], np.cumsum(counts)])
    doc_ptr = cumulative[X.indptr].astype(np.int64)  # row d: tokens doc_ptr[d]:doc_ptr[d+1]
    return tokens, doc_ptr


def corpus_from_counts(X, vocabulary):
    """A :class:`~dolda.design.corpus.Corpus` over ``vocabulary`` from the count matrix ``X`` (D, V)."""
    from .corpus import Corpus

    tokens, doc_ptr = count_tokens(X)
    return Corpus.from_arrays(tokens, doc_ptr, vocabulary)


def vocabulary_of_columns(names):
    """A fitted :class:`~dolda.design.corpus.Vocabulary` whose words are the matrix columns ``names``."""
    from .corpus import Vocabulary

    vocab = Vocabulary(stop_words=None, rare_share=0.0)
    vocab.words = [str(n) for n in names]
    vocab.index_ = {w: i for i, w in enumerate(vocab.words)}
    vocab.n_removed_ = {"df": 0, "rare": 0}
    return vocab
