"""Stages 1-2 of a DOLDA fit, and the inputs as prediction needs them: the corpus,
``[1, X]``, the word covariates, and the layout of ``U`` the eta-step wants.

:func:`fit_design` is the fit's first stage: the user's ``X`` and ``y`` become the
chain's data (:class:`FitDesign`).  The other functions serve it and prediction alike
(the estimator's methods ``_make_corpus``, ``_covariates``, ``_add_word_features`` and
``_design`` call them): in ``fit`` they also set the fitted vocabulary, covariate encoder
and word features on the estimator.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ...design.estimator_input import split_documents
from ...design.word_features import WordFeatures, resolve_n_words
from ...posterior.holdout import holds_out, split_latest
from ...sampler import gibbs_iteration as dolda_chain
from ...sampler import probit_blocks as probit_blocks
from ...utils.heap import release_free_heap
from ...utils.labels import encode_labels
from ...utils.validation import check_covariate_scale, check_fit_sizes
from .options import flat_value

INTERCEPT = "(intercept)"
#: ``eta_sampler="auto"`` with word covariates or sparse X: Cholesky of the
#: sparse-formed ``U^T U`` up to this many columns of ``U``, CG beyond (measured on
#: the hadoop bug reports with 2,000 words + 20 topics, 28 classes: CG needed
#: 10-35 s per eta-step on the loaded 2-core machine; the Cholesky of 1,000
#: columns costs ~L P^3 / 3 = 7e9 flops, under a second).
SPARSE_CHOLESKY_MAX_COLUMNS = 1000


def topic_name(k: int) -> str:
    """The name of topic ``k`` in ``coef_``, ``top_words`` and the report."""
    return f"topic {k}"


class FitDesign(NamedTuple):
    """What the first stage of a fit gives the chain and the posterior summary."""

    corpus: object  #: the training documents (:class:`dolda.design.corpus.Corpus`)
    Xd: object  #: ``[1, X, words]`` (D, P_x), dense or CSR as the eta-step wants
    y_index: np.ndarray  #: every document's class column (D,)
    data: object  #: :class:`dolda.sampler.gibbs_iteration.TopicData`: what the chain reads
    prior: object  #: :class:`dolda.sampler.probit_blocks.ProbitPrior`
    n_word_columns: int  #: the word covariates among the columns of ``Xd``
    held: tuple | None  #: ``calibration_holdout``'s latest rows ``(texts, y, covariates)``


def fit_design(model, X, y, covariates, p) -> FitDesign:
    """Stages 1-2 of ``model.fit`` (a DOLDA; ``p`` its checked parameters): split ``X`` into
    texts and covariates, keep the latest rows out with ``calibration_holdout``, encode
    ``y``, build the corpus, ``[1, X, words]`` and the prior; sets the fitted vocabulary,
    ``classes_``, covariate encoder, word features, ``eta_sampler_``, ``feature_names_``,
    ``scale_blocks_`` and ``n_tokens_``."""
    from .loadable import check_inputs, check_options

    check_options(model)  # options a model file could not hold: refused before any work
    texts, covariates = split_documents(X, model.text_column, model.covariate_columns,
                                        covariates)
    if y is None:
        encode_labels(None, 0, model)  # scikit-learn's message, before any work
    held = None  # with calibration_holdout, the latest rows: the map's, not the chain's
    if holds_out(p["calibration_holdout"]):
        (texts, y, covariates), held = split_latest(texts, y, covariates,
                                                    p["calibration_holdout"], model)
    corpus = make_corpus(model, texts, fit=True)
    n_docs = corpus.n_docs
    model.classes_, y_index = encode_labels(y, n_docs, model)
    Xd, names = covariate_design(model, covariates, n_docs, fit=True)
    n_before_words = Xd.shape[1]
    Xd, names = add_word_features(model, corpus, Xd, names, p, y_index)
    n_word_columns = Xd.shape[1] - n_before_words
    K = p["n_topics"]
    check_fit_sizes(model.classes_, y_index, K, corpus, Xd.shape[1] + K, p, n_word_columns)
    check_inputs(model, names, K)  # names and fitted inputs a model file could not hold
    Xd, model.eta_sampler_ = chain_design(model, Xd, K, p, sp.issparse(covariates))
    model.feature_names_ = names + [topic_name(k) for k in range(K)]
    n_dense = 0 if model.word_features_ is None else model.word_features_.n_dense_
    prior, model.scale_blocks_ = chain_prior(model, p, Xd.shape[1], n_word_columns, K, n_dense)
    data = dolda_chain.TopicData(corpus.tokens, corpus.doc_ptr, corpus.n_words, Xd,
                                 y_index, len(model.classes_))
    model.n_tokens_ = int(len(corpus.tokens))
    return FitDesign(corpus, Xd, y_index, data, prior, n_word_columns, held)


def chain_prior(model, p, n_x: int, n_word_columns: int, K: int, n_dense: int = 0):
    """The chain's :class:`~dolda.sampler.probit_blocks.ProbitPrior` over ``U = [1, covariates,
    words, topics]`` (``n_x`` columns before the topics, the last ``n_word_columns`` of them
    words, of which the last ``n_dense`` the dense part) and the scale blocks' names (None:
    one shared scale): the intercept N(0, c), the rest the Horseshoe with the slab on
    ``slab_blocks``, and the Gaussian words of ``word_prior`` "normal" or "both" (the dense
    part) held at ``N(0, word_prior_variance)`` in a scale block of their own (the block
    layout then, whatever ``global_scales`` says) without a slab."""
    shrunk = np.ones(n_x + K, dtype=bool)
    shrunk[0] = False
    horseshoe = flat_value(model, "prior") == "horseshoe"
    gaussian_block = {"normal": "words", "both": "dense_words"}.get(p["word_prior"])
    gaussian_block = gaussian_block if horseshoe and n_word_columns > 0 else None
    blocks, names = scale_blocks(
        n_x, n_word_columns, K, horseshoe and (model.global_scales == "block"
                                               or gaussian_block is not None), n_dense)
    slab_blocks = tuple(b for b in p["slab_blocks"] if b != gaussian_block)
    slab = (slab_variances(p["slab"], slab_blocks, n_x, n_word_columns, K, n_dense)
            if horseshoe and slab_blocks else None)
    gaussian = (None if gaussian_block is None
                else (names.index(gaussian_block), p["word_prior_variance"]))
    prior = probit_blocks.ProbitPrior(horseshoe, shrunk, p["variance"], blocks, slab, gaussian)
    return prior, names


def _count_corpus(model, X, fit: bool):
    """A Corpus from a document-term matrix of counts ``X`` (sparse, numeric array or numeric
    DataFrame), as :class:`dolda.LDA` takes one (``make_pipeline(CountVectorizer(),
    DOLDA())``): its columns are the vocabulary, named by ``model.vocabulary`` (e.g. the
    vectorizer's ``get_feature_names_out()``), else by the DataFrame's columns, else
    ``x0, x1, ...``; the vocabulary options (stop words, ``min_df`` ...) do not apply."""
    from sklearn.utils.validation import check_non_negative, validate_data

    from ...design.estimator_input import corpus_from_counts, vocabulary_of_columns

    if fit:
        for name in ("n_features_in_", "feature_names_in_"):  # from an earlier fit
            if name in vars(model):
                delattr(model, name)
    elif not hasattr(model, "n_features_in_"):
        raise ValueError("this DOLDA was fitted on texts; pass texts, not a document-term "
                         "matrix")
    X = validate_data(model, X, reset=fit, accept_sparse="csr", dtype=None,
                      ensure_all_finite=True)
    check_non_negative(X, "DOLDA (document-term matrix X)")
    if fit:
        names = model.vocabulary
        if names is None:
            names = getattr(model, "feature_names_in_", None)
        if names is None:
            names = [f"x{j}" for j in range(X.shape[1])]
        names = [str(w) for w in names]
        if len(names) != X.shape[1]:
            raise ValueError(f"vocabulary has {len(names)} words but the document-term "
                             f"matrix has {X.shape[1]} columns")
        if len(set(names)) != len(names):
            raise ValueError("vocabulary has duplicated words")
        model.vocabulary_ = vocabulary_of_columns(names)
    return corpus_from_counts(X, model.vocabulary_)


def make_corpus(model, texts, fit: bool):
    from ...design.estimator_input import is_count_matrix
    from ...design.corpus import Corpus, Vocabulary

    if is_count_matrix(texts):
        return _count_corpus(model, texts, fit)
    if not fit and hasattr(model, "n_features_in_") and not isinstance(texts, Corpus):
        raise ValueError(f"this DOLDA was fitted on a document-term matrix; pass one with its "
                         f"{model.n_features_in_} columns, not texts")
    if fit:
        for name in ("n_features_in_", "feature_names_in_"):  # from an earlier fit on counts
            if name in vars(model):
                delattr(model, name)
    if isinstance(texts, Corpus):
        if fit:
            model.vocabulary_ = texts.vocabulary
        elif texts.vocabulary is not model.vocabulary_ and \
                texts.vocabulary.words != model.vocabulary_.words:
            raise ValueError("this Corpus was built with another vocabulary; pass the "
                             "texts, or a Corpus from model.vocabulary_.transform(texts)")
        return texts
    if fit:
        from ...design.corpus import TOKEN_PATTERN, check_token_pattern, read_stop_words

        model.vocabulary_ = Vocabulary(
            rare_share=model.rare_share, min_df=model.min_df, max_df=model.max_df,
            stop_words=read_stop_words(model.stop_words),
            token_pattern=check_token_pattern(
                TOKEN_PATTERN if model.token_pattern is None else model.token_pattern))
        corpus = model.vocabulary_.fit_transform(texts)
    else:
        corpus = model.vocabulary_.transform(texts)
    release_free_heap(corpus.n_tokens)  # the token lists' strings and lists are freed
    return corpus


def covariate_design(model, X, n_docs: int, fit: bool):
    """Design matrix ``[1, x_d]`` (D, P_x) and its column names.

    ``X`` may be a DataFrame (categorical columns one-hot encoded by
    :class:`dolda.design.covariates.CovariateEncoder`), a 1-D or 2-D array, or any
    scipy.sparse matrix.  Arrays and sparse matrices are numeric columns
    named ``x0 ... x{p-1}``; a sparse matrix takes no DataFrame detour and
    stays sparse (CSR), as does a sparse one-hot encoding: :func:`chain_design`
    densifies it only for the Cholesky eta-step, and with thousands of
    columns the CG / BCM eta-step (:mod:`dolda.sampler.sparse_eta`) keeps it
    sparse end to end.  Or pool
    rare levels with ``covariate_min_count``.  A model fitted on
    an array or sparse matrix predicts from either; a model fitted on a
    DataFrame needs a DataFrame.
    """
    from ...design.covariates import CovariateEncoder

    if fit:
        model._has_covariates = X is not None
    if X is None:
        if not fit and model._has_covariates:
            raise ValueError("this model was fitted with covariates X; pass X to predict")
        return np.ones((n_docs, 1)), [INTERCEPT]
    if not fit and not model._has_covariates:
        raise ValueError("this model was fitted without covariates; do not pass X")
    if sp.issparse(X):
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D, got shape {X.shape}")
        n_cols = X.shape[1]
        plain = [f"x{j}" for j in range(n_cols)]
        if fit:
            # an encoder over numeric columns x0..x{p-1} (identity), fitted on no rows:
            # it names the columns and is saved with the model like any other
            model.covariate_encoder_ = CovariateEncoder().fit(
                pd.DataFrame(np.zeros((0, n_cols)), columns=plain))
        else:
            enc = model.covariate_encoder_
            fitted_plain = (not enc.categories_ and all(
                enc.mean_[c] == 0.0 and enc.scale_[c] == 1.0 for c in enc.mean_))
            if not fitted_plain:
                raise ValueError("this model was fitted on a DataFrame of covariates; "
                                 "pass a DataFrame to predict")
            if n_cols != enc.n_features_out_:
                raise ValueError(f"X has {n_cols} columns, but the model was fitted "
                                 f"with {enc.n_features_out_}")
        M = sp.csr_matrix(X, dtype=np.float64)
        if not np.all(np.isfinite(M.data)):
            raise ValueError("X has missing or infinite values")
        check_covariate_scale(M, plain)
    else:
        if not isinstance(X, pd.DataFrame):
            arr = np.asarray(X)
            if arr.ndim == 1:
                arr = arr[:, None]
            if arr.ndim != 2:
                raise ValueError(f"X must be a 2-D array or a DataFrame, got shape "
                                 f"{arr.shape}")
            X = pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])
        if fit:
            model.covariate_encoder_ = CovariateEncoder(min_count=model.covariate_min_count)
            M = model.covariate_encoder_.fit_transform(X)
        else:
            M = model.covariate_encoder_.transform(X)
        M = (sp.csr_matrix(M, dtype=np.float64) if sp.issparse(M)
             else np.asarray(M, dtype=np.float64))
    if M.shape[0] != n_docs:
        raise ValueError(f"texts and X have different lengths: {n_docs} texts, "
                         f"{M.shape[0]} rows of X")
    names = [INTERCEPT] + [str(c) for c in model.covariate_encoder_.get_feature_names_out()]
    if sp.issparse(M):
        return sp.hstack([np.ones((n_docs, 1)), M], format="csr"), names
    return np.hstack([np.ones((n_docs, 1)), M]), names


def add_word_features(model, corpus, Xd, names, p=None, y_index=None):
    """Append the word covariates (:mod:`dolda.design.word_features`) to ``[1, x_d]``
    (``p``, ``y_index``: the fit's parameters and class indices)."""
    if p is not None:  # fit
        n_words = resolve_n_words(p["n_words"], corpus.n_docs, corpus.n_words)
        model.word_features_ = (
            WordFeatures(n_words, p["word_features"], p["word_selection"],
                         dense=p["word_prior"] == "both")
            .fit(corpus, y_index) if n_words > 0 else None)
    wf = getattr(model, "word_features_", None)
    if wf is None:
        return Xd, names
    return (sp.hstack([Xd, wf.transform(corpus)], format="csr"),
            names + wf.get_feature_names_out())


def chain_design(model, Xd, n_topics, p, sparse_input):
    """``[1, X, words]`` as the chain needs it; returns ``(Xd, eta_sampler)``.

    Word covariates and a scipy-sparse ``X`` of more than
    :data:`dolda.sampler.probit_blocks.CHOLESKY_MAX_COLUMNS` columns stay CSR
    (:mod:`dolda.sampler.sparse_eta`): ``"auto"`` then
    factors ``U^T U`` (formed sparse) per class up to
    :data:`SPARSE_CHOLESKY_MAX_COLUMNS` columns and beyond uses the blocked Gibbs scan
    ``"gibbs"`` (:mod:`dolda.sampler.word_step`) with word covariates, CG without.  Other
    covariates keep the dense path (reduced statistics and Cholesky) unless
    :func:`dolda.sampler.probit_blocks.choose_eta_sampler` says otherwise.
    """
    import warnings

    n_docs, n_x = Xd.shape
    n_cols = n_x + n_topics
    # small sparse X keeps the dense path (and the chain it always had)
    has_words = getattr(model, "word_features_", None) is not None
    method = p["eta_sampler"]
    keep_sparse = has_words or method == "gibbs" or (
        (sparse_input or sp.issparse(Xd)) and n_x > probit_blocks.CHOLESKY_MAX_COLUMNS)
    if method == "auto":
        # up to SPARSE_CHOLESKY_MAX_COLUMNS an independent exact draw (Cholesky) is cheap; beyond,
        # with word covariates, the blocked Gibbs scan (dolda.sampler.word_step, O(nnz) per
        # class) instead of CG (36x cheaper per iteration at equal ESS per iteration:
        # benchmarks/results/word_step.md); CG for other wide sparse X
        method = (("cholesky" if n_cols <= SPARSE_CHOLESKY_MAX_COLUMNS
                   else "gibbs" if has_words else "cg")
                  if keep_sparse else
                  probit_blocks.choose_eta_sampler(n_docs, n_cols, False))
    if method == "cholesky" and n_x > probit_blocks.CHOLESKY_MAX_COLUMNS:
        warnings.warn(f"DOLDA with {n_x} covariate columns and eta_sampler='cholesky': its "
                      f"eta-step factors a dense ({n_x} + K)^2 matrix per class and "
                      f"iteration; leave eta_sampler='auto' (CG on sparse X) or pool rare "
                      f"levels with covariate_min_count (CLI: --min-count)",
                      UserWarning, stacklevel=4)
    if method == "cholesky" and not keep_sparse:
        Xd = Xd.toarray() if sp.issparse(Xd) else np.ascontiguousarray(Xd)
    else:
        Xd = sp.csr_matrix(Xd, dtype=np.float64)
        Xd.sort_indices()
    return Xd, method


#: The global-scale blocks of ``global_scales="block"``, in the order of their index
#: ("dense_words": the dense part of ``word_prior="both"``).
SCALE_BLOCKS = ("topics", "covariates", "words", "dense_words")


def column_kinds(n_x: int, n_word_columns: int, n_topics: int, n_dense: int = 0) -> np.ndarray:
    """The kind of every column of ``U = [1, covariates, words, topics]``: "intercept",
    "covariates", "words", "dense_words" (the last ``n_dense`` of the word columns) or
    "topics" (str array (P,))."""
    n_cov = n_x - 1 - n_word_columns
    return np.array(["intercept"] + ["covariates"] * n_cov
                    + ["words"] * (n_word_columns - n_dense) + ["dense_words"] * n_dense
                    + ["topics"] * n_topics)


def slab_variances(slab, slab_blocks, n_x: int, n_word_columns: int, n_topics: int,
                   n_dense: int = 0):
    """:attr:`ProbitPrior.slab` of ``U = [1, covariates, words, topics]``: ``s^2`` on the
    columns of the blocks ``slab_blocks``, ``inf`` (no slab) elsewhere; None without one."""
    if slab is None:
        return None
    kinds = column_kinds(n_x, n_word_columns, n_topics, n_dense)
    return np.where(np.isin(kinds, slab_blocks), float(slab), np.inf)


def scale_blocks(n_x: int, n_word_columns: int, n_topics: int, per_block: bool,
                 n_dense: int = 0):
    """The Horseshoe global-scale block of every column of ``U = [1, covariates, words,
    topics]``: ``(blocks, names)``, ``blocks`` int (P,) (-1: the intercept) and ``names``
    the blocks present in index order; ``(None, None)`` for one shared scale (also when only
    one block is present: the chain is then the shared-scale one)."""
    if not per_block:
        return None, None
    kinds = column_kinds(n_x, n_word_columns, n_topics, n_dense)
    names = [b for b in SCALE_BLOCKS if np.any(kinds == b)]
    if len(names) < 2:
        return None, None
    blocks = np.full(len(kinds), -1, np.int64)
    for g, b in enumerate(names):
        blocks[kinds == b] = g
    return blocks, names


def _fitted_sizes(model):
    """``(n_x, n_word_columns, n_topics, n_dense)`` of a fitted DOLDA's ``U = [1,
    covariates, words, topics]``."""
    wf = getattr(model, "word_features_", None)
    n_words = 0 if wf is None else len(wf.get_feature_names_out())
    K = model.phi_.shape[0]
    return len(model.feature_names_) - K, n_words, K, 0 if wf is None else wf.n_dense_


def fitted_column_kinds(model) -> np.ndarray:
    """:func:`column_kinds` of a fitted DOLDA, in the order of ``feature_names_``."""
    return column_kinds(*_fitted_sizes(model))


def fitted_scale_blocks(model, all_blocks=False):
    """The global-scale block of every column of a fitted DOLDA (None: one shared scale);
    ``all_blocks``: the names of the blocks present instead."""
    if not all_blocks and getattr(model, "scale_blocks_", None) is None:
        return None
    n_x, n_words, K, n_dense = _fitted_sizes(model)
    blocks, names = scale_blocks(n_x, n_words, K, True, n_dense)
    return names if all_blocks else blocks
