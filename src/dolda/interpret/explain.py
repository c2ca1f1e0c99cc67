"""Why a document gets its class: feature- and word-level explanations of DOLDA.

The score of class ``l`` for a document is ``mu_l = u . eta_l`` with the
posterior mean of eta (``model.coef_``) and the regressors
``u = [1, x, zbar]`` (paper section 2).  The topic part of ``u`` is the
empirical topic proportion ``zbar_k = (1/N_d) sum_i [z_i = k]``, averaged over
the prediction sweeps (paper section 3.3).  With the per-token frequencies
``P(z_i = k)`` of those sweeps (:mod:`dolda.sampler.token_topics`) the topic
part of the score splits exactly into one term per token::

    mu_l = sum_p u_p eta_{l,p}                                   (features)
         = sum_{p not topic} u_p eta_{l,p}
           + sum_i (1/N_d) sum_k P(z_i = k) eta_{l,k}            (tokens)

A covariate that stands for a word (``word_features``: a feature name ->
word mapping, by default every covariate named ``word:W``, ``word=W`` or
``w:W``) is attributed to the occurrences of that word in the text, in equal
shares; a word covariate whose word does not occur stays a feature-level term.

Functions
---------
explain(model, text, X_row=None, level="feature", classes=None)
    A tidy DataFrame, one row per (class, feature) or per (class, token).
explain_documents(model, texts, X=None, n_classes=3, ...)
    JSON-ready explanations of many documents at once (report and service).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["explain", "explain_documents", "Analysis", "analyse", "tokenize_with_spans"]

LEVELS = ("feature", "token")
_WORD_FEATURE = re.compile(r"^(?:word|w|dense)\s*[:=]\s*(.+)$")


def tokenize_with_spans(vocabulary, text, stop=None):
    """Tokens of ``text`` as the vocabulary sees them, with their character spans.

    Tokenizes, lowercases and removes stop words exactly as
    :meth:`dolda.design.corpus.Vocabulary.transform` does, keeping unknown words.

    Returns
    -------
    words : list of str (n,)
        Tokens after stop-word removal (lowercased when the vocabulary is).
    spans : int64 (n, 2)
        ``text[start:end]`` is the token in the original text (``-1`` for a
        pre-tokenized document).
    ids : int64 (n,)
        Word id in ``vocabulary.words``, ``-1`` for a word the model does not know.

    ``stop`` (the vocabulary's stop set) may be passed to save rebuilding it.
    """
    stop = vocabulary._stop_set() if stop is None else stop
    if isinstance(text, str):
        lower = vocabulary.lowercase
        source = text.lower() if lower else text
        if len(source) == len(text):
            offsets = None
        else:  # a few characters change length when lowercased (e.g. "İ")
            pieces = [c.lower() for c in text]
            source = "".join(pieces)
            offsets = np.repeat(np.arange(len(text)), [len(p) for p in pieces])
            offsets = np.append(offsets, len(text))
        found = [(m.group(), m.start(), m.end())
                 for m in re.finditer(vocabulary.token_pattern, source)]
        if stop:
            found = [f for f in found if f[0] not in stop]
        words = [f[0] for f in found]
        spans = [(f[1], f[2]) for f in found]
        if offsets is not None and spans:
            spans = [(int(offsets[a]), int(offsets[b - 1]) + 1) for a, b in spans]
        spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    else:
        words = [str(t).lower() if vocabulary.lowercase else str(t) for t in text]
        words = [w for w in words if w not in stop]
        spans = np.full((len(words), 2), -1, dtype=np.int64)
    index = vocabulary.index_
    ids = np.asarray([index.get(w, -1) for w in words], dtype=np.int64)
    return words, spans, ids


def word_feature_map(model, word_features=None):
    """Covariate columns that stand for a word: ``{column index: word}``.

    ``word_features`` maps feature names to words; None takes every covariate
    named ``word:W``, ``word=W``, ``w:W`` or ``dense=W`` (the dense part of
    ``word_prior="both"``; case as in the vocabulary).
    """
    names = list(model.feature_names_)
    out = {}
    if word_features is None:
        for j, name in enumerate(names):
            match = _WORD_FEATURE.match(str(name))
            if match and not str(name).startswith("topic "):
                word = match.group(1).strip()
                out[j] = word.lower() if model.vocabulary_.lowercase else word
        return out
    position = {name: j for j, name in enumerate(names)}
    for name, word in dict(word_features).items():
        if name not in position:
            raise ValueError(f"word_features names {name!r}, which is not a feature of the "
                             f"model")
        out[position[name]] = str(word)
    return out


def _topic_columns(model):
    cols = [j for j, name in enumerate(model.feature_names_) if str(name).startswith("topic ")]
    return np.asarray(cols, dtype=np.int64)


@dataclass
class Analysis:
    """Everything the explanations of a batch of documents are made of.

    Attributes
    ----------
    U : float (D, P)
        Regressors ``u_d = [1, x_d, zbar_d]``; ``zbar_d`` is the mean of the
        per-token topic frequencies of document ``d``.
    score : float (D, L)
        ``mu_{d,l} = u_d . eta_l`` with the posterior mean of eta.
    proba : float (D, L)
        DO probabilities averaged over the kept eta draws.
    words, spans, ids : per document, see :func:`tokenize_with_spans`.
    freq : float (N, K)
        ``P(z_i = k)`` of the known tokens of all documents, back to back.
    doc_ptr : int (D+1,)
        Document ``d`` owns ``freq[doc_ptr[d]:doc_ptr[d+1]]``.
    attributed : bool (D, P)
        Features whose contribution is carried by the tokens (topics, word
        covariates whose word occurs).
    word_columns : dict
        Covariate column -> word (see :func:`word_feature_map`).

    The per-token arrays are computed on demand (:meth:`token_topics`,
    :meth:`contributions`), so a large batch keeps only ``freq``.
    """

    model: object
    U: np.ndarray
    score: np.ndarray
    proba: np.ndarray
    words: list
    spans: list
    ids: list
    freq: np.ndarray
    doc_ptr: np.ndarray
    attributed: np.ndarray
    word_columns: dict

    def token_topics(self, d):
        """``P(z_i = k)`` of the tokens of document ``d``, (n_d, K); zero rows for unknown words."""
        ids = self.ids[d]
        rows = np.zeros((len(ids), self.freq.shape[1]))
        rows[ids >= 0] = self.freq[self.doc_ptr[d]:self.doc_ptr[d + 1]]
        return rows

    def contributions(self, d):
        """Topic part and total contribution of every token of ``d`` to each class: 2 x (n_d, L)."""
        coef = self.model.coef_.to_numpy()
        eta_topics = coef[:, _topic_columns(self.model)]
        n_known = self.doc_ptr[d + 1] - self.doc_ptr[d]
        part = self.token_topics(d) @ eta_topics.T / max(n_known, 1)
        total = part.copy()
        if self.word_columns and len(self.words[d]):
            word_array = np.asarray(self.words[d], dtype=object)
            for j, word in self.word_columns.items():
                if self.attributed[d, j]:
                    where = np.flatnonzero(word_array == word)
                    total[where] += self.U[d, j] * coef[:, j] / len(where)
        return part, total

    def rest(self, d):
        """The part of every class score not carried by tokens (intercept, covariates), (L,)."""
        coef = self.model.coef_.to_numpy()
        return (self.U[d] * coef * ~self.attributed[d]).sum(axis=1)


def _covariate_rows(model, X, texts):
    """``[1, x_d, words_d]`` of ``texts``, dense: the model's covariates and, when it
    was fitted with word covariates (``n_words``), their values."""
    import scipy.sparse as sp

    Xd, _ = model._covariates(X, len(texts), fit=False)
    if getattr(model, "word_features_", None) is not None:
        Xd, _ = model._add_word_features(model._make_corpus(texts, fit=False), Xd, [])
    if sp.issparse(Xd):
        Xd = Xd.toarray()
    return np.asarray(Xd, dtype=np.float64)


def analyse(model, texts, X=None, word_features=None, max_draws=None) -> Analysis:
    """Scores, probabilities and per-token topic frequencies of ``texts`` (D documents).

    Parameters
    ----------
    model : fitted DOLDA
    texts : sequence of str or of token lists (D,)
    X : DataFrame, array or None (D, ...)
        Covariates, as for ``model.predict``.
    word_features : dict or None
        See :func:`word_feature_map`.
    max_draws : int or None
        Average the probabilities over at most this many evenly spaced kept
        draws of eta (None: all, as ``predict_proba``).  The probability of
        thousands of documents over hundreds of draws costs seconds; the
        report bounds it.
    """
    from sklearn.utils.validation import check_is_fitted

    from ..utils.validation import check_n_jobs
    from ..posterior.calibration import class_probabilities
    from ..sampler.threads import using_threads
    from ..sampler.token_topics import token_topic_frequencies

    check_is_fitted(model, "eta_draws_")
    texts = list(texts)
    n_docs = len(texts)
    if n_docs == 0:
        raise ValueError("no document to explain")
    vocab = model.vocabulary_
    stop = vocab._stop_set()
    tokenized = [tokenize_with_spans(vocab, t, stop) for t in texts]
    Xd = _covariate_rows(model, X, texts)  # validates X before the sweep
    known = [ids[ids >= 0] for _, _, ids in tokenized]
    lengths = np.array([len(k) for k in known], dtype=np.int64)
    n_empty = int(np.sum(lengths == 0))
    if n_empty:
        import warnings

        warnings.warn(f"{n_empty} of {n_docs} documents are empty after preprocessing (no word "
                      f"of the model's vocabulary): their topic part is zero, only the "
                      f"intercept and covariates explain them", UserWarning, stacklevel=3)
    doc_ptr = np.zeros(n_docs + 1, dtype=np.int64)
    np.cumsum(lengths, out=doc_ptr[1:])
    tokens = np.concatenate(known).astype(np.int32)
    sweeps = int(model.predict_sweeps)
    burn = sweeps // 2 if model.predict_burn_in is None else int(model.predict_burn_in)
    with using_threads(check_n_jobs(model.n_jobs)):
        freq = token_topic_frequencies(tokens, doc_ptr, model.phi_, model._alpha(),
                                       sweeps, burn, int(model.seed_))
    K = model.phi_.shape[0]
    sums = np.add.reduceat(freq, doc_ptr[:-1], axis=0) if len(freq) else np.zeros((n_docs, K))
    zbar = np.where(lengths[:, None] > 0, sums / np.maximum(lengths, 1)[:, None], 0.0)
    U = np.hstack([Xd, zbar])
    coef = model.coef_.to_numpy()
    score = U @ coef.T
    draws = model.eta_draws_
    if max_draws is not None and len(draws) > int(max_draws):
        draws = draws[np.linspace(0, len(draws) - 1, int(max_draws)).round().astype(int)]
    proba = class_probabilities(U, draws, getattr(model, "proba", "do"),
                                getattr(model, "stacking_", None))  # predict_proba's rule
    words_of = word_feature_map(model, word_features)
    attributed = np.zeros(U.shape, dtype=bool)
    attributed[:, _topic_columns(model)] = True
    for d, (words, _, _) in enumerate(tokenized):
        if words_of and words:
            present = set(words)
            for j, word in words_of.items():
                attributed[d, j] = word in present and U[d, j] != 0
    return Analysis(model, U, score, proba, [t[0] for t in tokenized],
                    [t[1] for t in tokenized], [t[2] for t in tokenized], freq, doc_ptr,
                    attributed, words_of)


def _class_order(model, proba_row, classes):
    """Indices of the classes to show: all (by probability), the top ``n``, or given labels."""
    order = np.argsort(-proba_row, kind="stable")
    if classes is None:
        return order
    if isinstance(classes, (int, np.integer)) and not isinstance(classes, bool):
        if classes < 1:
            raise ValueError(f"classes must be >= 1, got {classes}")
        return order[:classes]
    labels = model.classes_.tolist()
    chosen = []
    for label in classes:
        if label not in labels:
            raise ValueError(f"unknown class {label!r}; classes are {labels}")
        chosen.append(labels.index(label))
    return np.asarray(chosen, dtype=np.int64)


def _one_document(text):
    """The one document of :func:`explain`, checked as ``predict`` checks its ``X``: a str,
    or a collection holding one str."""
    from ..design.corpus import _iter_documents

    if isinstance(text, str):
        return text
    docs = [doc for _, doc in _iter_documents(text)]  # predict's TypeError for None, 42
    if len(docs) != 1:
        raise TypeError(f"explain takes one document, got {len(docs)}; explain them one "
                         "at a time (or use explain_documents)")
    doc = docs[0]
    if not isinstance(doc, str):
        raise TypeError(f"document 0 is {type(doc).__name__} ({doc!r:.40}); explain needs "
                        "the document as a str (its word spans are positions in the text)")
    return doc


def _as_frame(X_row):
    if X_row is None:
        return None
    if sp.issparse(X_row):
        if X_row.ndim != 2 or X_row.shape[0] != 1:
            raise ValueError(f"X_row must be one row of covariates, got a sparse matrix of "
                             f"shape {X_row.shape}")
        return sp.csr_matrix(X_row)
    if isinstance(X_row, pd.Series):
        return X_row.to_frame().T.infer_objects()
    if isinstance(X_row, pd.DataFrame):
        return X_row
    return np.atleast_2d(np.asarray(X_row, dtype=float))


def explain(model, text, X_row=None, level="feature", classes=None, word_features=None):
    """Each feature's or each word's contribution to the class scores of one document.

    Parameters
    ----------
    model : fitted DOLDA
    text : str (or a list holding one str)
    X_row : Series, one-row DataFrame, 1-d array, sparse 1 x P matrix or None
        The document's covariates when the model has some (a sparse row for a
        model fitted on sparse covariates).
    level : {"feature", "token"}
        ``"feature"``: one row per (class, feature with a non-zero value),
        columns ``class, feature, value, coef, contribution`` with
        ``contribution = value * coef``, sorted by |contribution| within a class.
        ``"token"``: one row per (class, token of the text), in text order,
        columns ``class, position, word, start, end, topic, topic_proba,
        topic_contribution, word_contribution, contribution``; ``topic`` is the
        token's most frequent topic and ``topic_proba`` its frequency.  Tokens
        the model does not know contribute 0.
    classes : None, int or list of labels
        All classes (None), the ``n`` most probable, or the given ones.  Rows
        come in the order of decreasing probability (or the given order).
    word_features : dict or None
        Feature name -> word for covariates that stand for a word; see
        :func:`word_feature_map`.

    Returns
    -------
    pandas.DataFrame
        ``attrs["proba"]`` (class -> probability, all classes),
        ``attrs["score"]`` (class -> ``mu_l``) and, at the token level,
        ``attrs["rest"]`` (class -> the part of the score not carried by
        tokens: intercept and other covariates).  For every class the
        contributions of a level plus (token level) ``rest`` add up to the score.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    text = _one_document(text)
    docs = [text]
    a = analyse(model, docs, _as_frame(X_row), word_features)
    labels = model.classes_
    order = _class_order(model, a.proba[0], classes)
    coef = model.coef_.to_numpy()
    u = a.U[0]
    if level == "feature":
        names = list(model.feature_names_)
        rows = []
        for l in order:
            contrib = u * coef[l]
            for j in np.argsort(-np.abs(contrib), kind="stable"):
                if u[j] == 0:
                    continue
                rows.append((labels[l], names[j], u[j], coef[l, j], contrib[j]))
        out = pd.DataFrame(rows, columns=["class", "feature", "value", "coef", "contribution"])
    else:
        n = len(a.words[0])
        rows = a.token_topics(0)
        topic_parts, totals = a.contributions(0)
        best = np.argmax(rows, axis=1) if n else np.zeros(0, np.int64)
        best_p = rows[np.arange(n), best] if n else np.zeros(0)
        known = a.ids[0] >= 0
        frames = []
        for l in order:
            topic_part = topic_parts[:, l]
            total = totals[:, l]
            frames.append(pd.DataFrame({
                "class": [labels[l]] * n, "position": np.arange(n), "word": a.words[0],
                "start": a.spans[0][:, 0], "end": a.spans[0][:, 1],
                "topic": [f"topic {k}" if ok else None for k, ok in zip(best, known)],
                "topic_proba": np.where(known, best_p, 0.0),
                "topic_contribution": topic_part, "word_contribution": total - topic_part,
                "contribution": total}))
        out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        rest = a.rest(0)
        out.attrs["rest"] = dict(zip(labels.tolist(), rest.tolist()))
    out.attrs["proba"] = dict(zip(labels.tolist(), a.proba[0].tolist()))
    out.attrs["score"] = dict(zip(labels.tolist(), a.score[0].tolist()))
    return out


def explain_documents(model, texts, X=None, n_classes=3, n_features=8, ids=None,
                      max_chars=None, word_features=None, analysis=None, rows=None):
    """JSON-ready explanations of many documents (for the report and the service).

    Parameters
    ----------
    model : fitted DOLDA
    texts : sequence of str (D,)
    X : covariates of ``texts`` or None
    n_classes : int
        Classes explained per document (the most probable ones).
    n_features : int
        Largest feature contributions listed per class.
    ids : sequence or None (D,)
        Document ids (default ``0 .. D-1``).
    max_chars : int or None
        Cut texts (and drop the tokens beyond) at this many characters.
    analysis : Analysis or None
        A precomputed :func:`analyse` of the same texts.
    rows : sequence of int or None
        Explain only these documents of ``texts`` (default: all).

    Returns
    -------
    list of dict
        Per document: ``id``, ``text``, ``truncated``, ``predicted``,
        ``proba`` (all classes, ranked: ``[[label, p], ...]``), ``tokens``
        (``[[start, end, topic or -1], ...]`` of the known or attributed words
        in ``text``) and ``classes``: per explained class ``label``,
        ``proba``, ``score``, ``rest`` (the part of the score not carried by
        tokens), ``features`` (``[[name, value, coef, contribution], ...]``)
        and ``weights`` (the contribution of every listed token, same order as
        ``tokens``).  Token weights plus ``rest`` add up to ``score`` (up to
        rounding to 5 decimals, and when the text is cut).
    """
    texts = [str(t) for t in texts]
    a = analysis if analysis is not None else analyse(model, texts, X, word_features)
    labels = [str(c) for c in model.classes_]
    names = list(model.feature_names_)
    coef = model.coef_.to_numpy()
    ids = list(range(len(texts))) if ids is None else list(ids)
    out = []
    for d in (range(len(texts)) if rows is None else rows):
        text = texts[d]
        part, total = a.contributions(d)
        cut = len(text) if max_chars is None else min(len(text), int(max_chars))
        spans = a.spans[d]
        keep = np.flatnonzero((spans[:, 1] <= cut) & (spans[:, 0] >= 0)
                              & ((a.ids[d] >= 0) | (np.abs(total).sum(axis=1) > 0)))
        topics = np.where(a.ids[d][keep] >= 0,
                          np.argmax(a.token_topics(d)[keep], axis=1) if len(keep) else 0, -1)
        order = np.argsort(-a.proba[d], kind="stable")
        rest = a.rest(d)
        classes = []
        for l in order[:n_classes]:
            contrib = a.U[d] * coef[l]
            top = [j for j in np.argsort(-np.abs(contrib), kind="stable")
                   if a.U[d, j] != 0][:n_features]
            classes.append({
                "label": labels[l], "proba": round(float(a.proba[d, l]), 5),
                "score": round(float(a.score[d, l]), 5), "rest": round(float(rest[l]), 5),
                "features": [[names[j], round(float(a.U[d, j]), 5), round(float(coef[l, j]), 5),
                              round(float(contrib[j]), 5)] for j in top],
                "weights": np.round(total[keep, l], 5).tolist()})
        out.append({
            "id": ids[d], "text": text[:cut], "truncated": cut < len(text),
            "predicted": labels[order[0]],
            "proba": [[labels[l], round(float(a.proba[d, l]), 5)] for l in order],
            "tokens": [[int(s), int(e), int(k)] for (s, e), k in zip(spans[keep], topics)],
            "classes": classes})
    return out
