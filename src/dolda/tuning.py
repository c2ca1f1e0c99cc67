"""Choosing the number of topics K: cross-validated accuracy, coherence and perplexity.

:func:`tune_topics` fits one model per K and fold and scores it three ways:

* ``accuracy`` (DOLDA only): share of the held-out fold predicted right;
* ``coherence``: mean topic coherence (:mod:`dolda.interpret.coherence`, C_V by default)
  of the model's top words on its *training* documents;
* ``perplexity``: held-out perplexity of the fold by document completion
  (:mod:`dolda.evaluate.heldout`); lower is better.

:func:`plot_tuning` draws the three against K.  The same scores are available
as scikit-learn scorers (:func:`perplexity_scorer`, :func:`coherence_scorer`)
for ``GridSearchCV``; ``docs/CHOOSING_K.md`` shows both routes.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from .evaluate.heldout import perplexity
from .interpret.coherence import MEASURES, topic_coherence


def perplexity_scorer(estimator, texts, y=None):
    """scikit-learn scorer: minus the held-out perplexity (greater is better)."""
    return -perplexity(estimator, texts)


def coherence_scorer(measure="c_v", n_words=10):
    """A scikit-learn scorer: the mean coherence of the topics on the scored texts."""
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")

    def scorer(estimator, texts, y=None):
        return float(np.nanmean(topic_coherence(estimator, texts, measure, n_words)))

    scorer.__name__ = f"coherence_{measure}"
    return scorer


def _subset(values, index):
    if values is None:
        return None
    if isinstance(values, (pd.DataFrame, pd.Series)):
        return values.iloc[index].reset_index(drop=True)
    return np.asarray(values)[index]


def tune_topics(texts, y=None, X=None, topics=(5, 10, 20), folds=3, measure="c_v",
                n_words=10, random_state=0, make_model=None, progress=None, **params):
    """Cross-validate a grid of topic numbers.

    Parameters
    ----------
    texts : sequence of str (D,)
    y : array-like (D,) or None
        Labels: DOLDA models (accuracy is scored); None: LDA models.
    X : covariates or None
        Passed to DOLDA's ``fit``/``predict`` (rows follow ``texts``).
    topics : sequence of int
        The values of K to try (each at least 2).
    folds : int, default=3
        Cross-validation folds (stratified when ``y`` is given).
    measure : {"c_v", "c_npmi", "u_mass"}, default="c_v"
    n_words : int, default=10
        Top words per topic for coherence.
    random_state : int, default=0
        Seed of the folds and of every model.
    make_model : callable ``K -> estimator`` or None
        Builds the model for K (default: ``DOLDA(n_topics=K, **params)`` or
        ``LDA(n_topics=K, **params)``, ``progress=False``).
    progress : callable ``str -> None`` or None
        Called with a line after every fit (the CLI prints it).
    **params
        Other parameters of the default models (``n_iter``, ``alpha``, ...).

    Returns
    -------
    pandas.DataFrame
        One row per K (index ``topics``): ``accuracy`` and ``accuracy_sd`` (with
        ``y``), ``coherence``, ``coherence_sd``, ``perplexity``,
        ``perplexity_sd`` (means and standard deviations over the folds) and
        ``seconds`` (fitting time per fold).  ``attrs["folds"]`` holds the
        per-fold scores.
    """
    from sklearn.model_selection import KFold, StratifiedKFold

    from .models.lda import LDA
    from .models.dolda.estimator import DOLDA

    topics = [int(k) for k in topics]
    if not topics or min(topics) < 2:
        raise ValueError(f"topics must be numbers of topics >= 2, got {topics}")
    if measure not in MEASURES:
        raise ValueError(f"measure must be one of {', '.join(MEASURES)}, got {measure!r}")
    texts = np.asarray(list(texts), dtype=object)
    supervised = y is not None
    if supervised:
        y = np.asarray(y)
        splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=random_state)
        splits = list(splitter.split(texts, y))
    else:
        splitter = KFold(n_splits=folds, shuffle=True, random_state=random_state)
        splits = list(splitter.split(texts))
    if make_model is None:
        kind = DOLDA if supervised else LDA
        params.setdefault("progress", False)
        params.setdefault("random_state", random_state)

        def make_model(k):
            return kind(n_topics=k, **params)

    rows = []
    for k in topics:
        for fold, (train, test) in enumerate(splits):
            model = make_model(k)
            tic = time.perf_counter()
            train_texts = list(texts[train])
            if supervised:
                model.fit(train_texts, y[train], X=_subset(X, train))
            else:
                model.fit(train_texts)
            seconds = time.perf_counter() - tic
            row = {"topics": k, "fold": fold + 1, "seconds": seconds}
            if supervised:
                predicted = model.predict(list(texts[test]), X=_subset(X, test))
                row["accuracy"] = float(np.mean(np.asarray(predicted) == y[test]))
            row["coherence"] = float(np.nanmean(topic_coherence(model, train_texts, measure,
                                                                 n_words)))
            row["perplexity"] = perplexity(model, list(texts[test]))
            rows.append(row)
            if progress is not None:
                shown = ", ".join(f"{name} {row[name]:.3f}" for name in
                                  ("accuracy", "coherence", "perplexity") if name in row)
                progress(f"K={k} fold {fold + 1}/{folds}: {shown} ({seconds:.1f} s)")
    per_fold = pd.DataFrame(rows)
    metrics = [m for m in ("accuracy", "coherence", "perplexity") if m in per_fold]
    grouped = per_fold.groupby("topics")
    table = pd.DataFrame(index=pd.Index(topics, name="topics"))
    for name in metrics:
        table[name] = grouped[name].mean()
        table[f"{name}_sd"] = grouped[name].std(ddof=1) if folds > 1 else 0.0
    table["seconds"] = grouped["seconds"].mean()
    table.attrs["folds"] = per_fold
    table.attrs["measure"] = measure
    return table


def best_topics(table) -> dict:
    """The K preferred by each score of a :func:`tune_topics` table (max accuracy,
    max coherence, min perplexity)."""
    best = {}
    if "accuracy" in table:
        best["accuracy"] = int(table["accuracy"].idxmax())
    best["coherence"] = int(table["coherence"].idxmax())
    best["perplexity"] = int(table["perplexity"].idxmin())
    return best


def plot_tuning(table, path=None, title=None):
    """Accuracy, coherence and perplexity against K, one panel each, with ±1 sd bars.

    Parameters
    ----------
    table : DataFrame from :func:`tune_topics`
    path : str or Path or None
        Image file to write (format from the extension, e.g. ``.png``, ``.svg``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib

    if path is not None:
        matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    measure = table.attrs.get("measure", "c_v")
    panels = [(m, label) for m, label in (("accuracy", "cross-validated accuracy"),
                                          ("coherence", f"coherence ({measure})"),
                                          ("perplexity", "held-out perplexity"))
              if m in table]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    ks = table.index.to_numpy()
    for ax, (name, label) in zip(axes[0], panels):
        sd = table.get(f"{name}_sd")
        ax.errorbar(ks, table[name], yerr=None if sd is None else sd.fillna(0.0), marker="o",
                    capsize=3)
        ax.set_xlabel("number of topics K")
        ax.set_ylabel(label)
        ax.set_xticks(ks)
        ax.grid(alpha=0.3)
        best = table[name].idxmin() if name == "perplexity" else table[name].idxmax()
        ax.axvline(best, color="grey", linestyle=":", linewidth=1)
    fig.suptitle(title or "Choosing the number of topics")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig
