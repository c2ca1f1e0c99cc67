"""Scores shared by ``dolda fit``, ``dolda score`` and ``dolda tune``."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def training_accuracy(model, y, X=None, texts=None):
    """Accuracy on the training documents from their final topic assignments.

    ``u_d = [1, x_d, zbar_d]`` with ``zbar_d = n_{d,.} / N_d`` of the last
    iteration (``doc_topic_counts_``) and the class probabilities of
    ``predict_proba``'s rule: one matrix product, instead of re-sampling the topics
    of every training document as ``predict`` does (which took up to minutes
    after the progress bar).  These topic assignments were sampled knowing the
    labels, so this is an in-sample fit measure, not an estimate of accuracy on
    new documents (use ``dolda evaluate`` or ``dolda score`` for that).

    With ``calibration_holdout`` only the rows the chain saw (the first ones) are scored.
    Returns None when the model kept no counts (a two-step fit), or has word covariates
    and no ``texts`` are given.
    """
    counts = getattr(model, "doc_topic_counts_", None)
    if counts is None:
        return None
    counts = np.asarray(counts, dtype=np.float64)
    n_fit = counts.shape[0]
    if n_fit < len(y):  # calibration_holdout: the chain saw the first rows only
        from ..posterior.holdout import _rows

        index = np.arange(n_fit)
        y, X = np.asarray(y)[:n_fit], _rows(X, index)
        texts = None if texts is None else _rows(texts, index)
    zbar = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    design, _ = model._covariates(X, zbar.shape[0], fit=False)
    if getattr(model, "word_features_", None) is not None:  # word covariates (n_words)
        if texts is None:
            return None
        design, _ = model._add_word_features(model._make_corpus(texts, fit=False), design, [])
    if sp.issparse(design):
        U = sp.hstack([design, sp.csr_matrix(zbar)], format="csr")
    else:
        U = np.hstack([design, zbar])
    proba = model._class_probabilities(U)  # predict_proba's rule
    predicted = np.asarray(model.classes_)[proba.argmax(axis=1)]
    return float(np.mean(predicted == np.asarray(y)))


def align_labels(y, classes):
    """Labels ``y`` as values of ``classes`` (matching by value, then by text), and the
    labels that match no class."""
    classes = list(np.asarray(classes).tolist())
    by_value = set(classes)
    by_text = {str(c): c for c in classes}
    out, unknown = [], []
    for v in np.asarray(y, dtype=object).tolist():
        if v in by_value:
            out.append(v)
        elif str(v) in by_text:
            out.append(by_text[str(v)])
        else:
            unknown.append(v)
            out.append(v)
    return out, unknown


def classification_scores(y, proba, classes):
    """Accuracy, macro-F1, log loss and confusion matrix of probabilities ``proba`` (D, L).

    ``y`` must hold values of ``classes`` (see :func:`align_labels`).  Macro-F1
    averages over the classes present in ``y`` or predicted.
    """
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, log_loss

    classes = list(np.asarray(classes).tolist())
    index = {c: i for i, c in enumerate(classes)}
    y_index = np.array([index[v] for v in y])
    pred_index = np.asarray(proba).argmax(axis=1)
    present = sorted(set(y_index.tolist()) | set(pred_index.tolist()))
    proba = np.clip(np.asarray(proba, dtype=np.float64), 1e-15, 1.0)
    proba = proba / proba.sum(axis=1, keepdims=True)
    return {
        "n_docs": int(len(y_index)),
        "accuracy": float(accuracy_score(y_index, pred_index)),
        "macro_f1": float(f1_score(y_index, pred_index, average="macro", labels=present)),
        "log_loss": float(log_loss(y_index, proba, labels=list(range(len(classes))))),
        "confusion_matrix": {"labels": classes,
                             "matrix": confusion_matrix(y_index, pred_index,
                                                        labels=list(range(len(classes))))
                             .tolist()},
    }
