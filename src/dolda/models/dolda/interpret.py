"""What a fitted DOLDA says: topics, signal topics and covariates, coefficient intervals,
why a document gets its class, the ArviZ export and the HTML report.

The methods of :class:`dolda.DOLDA` that read a fitted model and change nothing
(a mixin, so that ``model.py`` holds the estimator: parameters, fit, prediction).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from ...interpret.topics import (
    DEFAULT_LABEL_WORDS,
    DEFAULT_RELEVANCE,
    model_top_words,
    model_topic_labels,
)
from ...sampler.threads import obeys_n_jobs
from ...utils.draws import draw_quantiles
from ...utils.validation import check_positive_int
from .design_stage import INTERCEPT, topic_name  # noqa: F401 (topic_name re-exported)


def check_level(level) -> float:
    """A credible level: a real number strictly between 0 and 1, or a one-line error."""
    if isinstance(level, bool) or not isinstance(level, (int, float, np.integer, np.floating)):
        raise TypeError(f"level must be a number in (0, 1), got {level!r}")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must be in (0, 1) (e.g. 0.95), got {level!r}")
    return float(level)


def unknown_class(label, classes) -> ValueError:
    """The error for a class label the model does not have, listing its classes as text."""
    shown = ", ".join(repr(c.item() if hasattr(c, "item") else c) for c in list(classes)[:20])
    more = f" and {len(classes) - 20} more" if len(classes) > 20 else ""
    return ValueError(f"unknown class {label!r}; the model's classes are {shown}{more}")


class DOLDAInterpretation:
    """Interpretation, diagnostics and the report of a fitted :class:`dolda.DOLDA`."""

    def top_words(self, n=10, relevance=DEFAULT_RELEVANCE):
        """The ``n`` most relevant words of every topic: DataFrame (K, n), rows ``topic k``.

        Words are ranked by Sievert & Shirley's relevance with lambda =
        ``relevance`` (:func:`dolda.interpret.topics.relevance`); ``relevance=1`` ranks by
        ``phi_{k,w}`` alone.
        """
        check_is_fitted(self, "phi_")
        n = check_positive_int(n, "n")
        top = model_top_words(self, n, relevance)
        return pd.DataFrame(top, index=[topic_name(k) for k in range(len(top))],
                            columns=[f"word {i + 1}" for i in range(top.shape[1])])

    def topic_labels(self, n_words=DEFAULT_LABEL_WORDS, relevance=DEFAULT_RELEVANCE):
        """Short distinct labels of the topics (their most relevant words), list of K str.

        See :func:`dolda.interpret.topics.topic_labels`.
        """
        check_is_fitted(self, "phi_")
        return model_topic_labels(self, n_words, relevance)

    def coef_interval(self, level=0.95):
        """Equal-tailed credible intervals of eta: two DataFrames (lower, upper) like ``coef_``."""
        check_is_fitted(self, "eta_draws_")
        level = check_level(level)
        q = (1 - level) / 2
        lo, hi = draw_quantiles(self.eta_draws_, [q, 1 - q])
        mk = lambda a: pd.DataFrame(a, index=self.coef_.index, columns=self.coef_.columns)  # noqa: E731
        return mk(lo), mk(hi)

    def signal_topics(self, label, level=0.95, n_words=8, relevance=DEFAULT_RELEVANCE,
                      identified=True):
        """Topics whose effect on class ``label`` stands out of the shrinkage, and repeats.

        A single topic coefficient is not identified: the topic proportions sum to one, so
        ``(intercept + c, every topic coefficient - c)`` fits the data equally well and the
        chain wanders along that line (:mod:`dolda.interpret.stability`).  With ``identified=True``
        a topic is judged on its contrast ``eta_lk - median_j eta_lj`` (its coefficient
        against the class's typical topic), which that line does not move: a signal topic
        is one whose ``level`` credible interval of the contrast excludes zero.  With
        several chains (``n_chains``), a topic that is not found in at least
        :data:`dolda.interpret.stability.STABLE_SHARE` of the chains (its matched topic sharing
        :data:`dolda.interpret.stability.RECUR_TOP_WORDS` of its 10 top words) is unstable and
        not offered.
        ``identified=False``: the former rule, the interval of the raw coefficient
        (which moves with the intercept).

        Returns a DataFrame sorted by |coef| with ``coef`` (the contrast's posterior mean;
        the raw coefficient with ``identified=False``), its interval ``lower, upper``, its
        ``sign``, ``repeats`` (share of chains in which the topic is a signal on that
        chain's own draws), ``recurrence`` (share of chains in which the topic is found;
        NaN with one chain) and the topic's top words (ranked by relevance with lambda =
        ``relevance``, see :meth:`top_words`).
        """
        from ...interpret.stability import (
            STABLE_SHARE,
            chain_signals,
            model_topic_recurrence,
            topic_contrasts,
        )

        check_is_fitted(self, "eta_draws_")
        if label not in set(self.classes_.tolist()):
            raise unknown_class(label, self.classes_)
        level = check_level(level)
        topics = [c for c in self.coef_.columns if c.startswith("topic ")]
        K, C = len(topics), int(getattr(self, "n_chains_", 1))
        l = int(np.flatnonzero(self.classes_ == label)[0])
        if identified:
            eff = topic_contrasts(self.eta_draws_[:, l:l + 1], K)[:, 0]
            q = (1 - level) / 2
            lo, hi = np.quantile(eff, [q, 1 - q], axis=0)
            mean = pd.Series(eff.mean(axis=0), index=topics)
            lo, hi = pd.Series(lo, index=topics), pd.Series(hi, index=topics)
        else:
            lo, hi = self.coef_interval(level)
            mean = self.coef_.loc[label, topics]
            lo, hi = lo.loc[label, topics], hi.loc[label, topics]
        keep = (lo > 0) | (hi < 0)
        recurrence = model_topic_recurrence(self)
        if recurrence is not None:
            keep &= recurrence >= STABLE_SHARE
        else:
            recurrence = np.full(K, np.nan)
        repeats = chain_signals(self.eta_draws_[:, l:l + 1], K, C, level)[:, 0].mean(axis=0)
        words = self.top_words(n_words, relevance)
        out = pd.DataFrame({"coef": mean[keep], "lower": lo[keep], "upper": hi[keep]})
        out["sign"] = np.where(out["coef"] > 0, "+", "-")
        out["repeats"] = repeats[keep.to_numpy()]
        out["recurrence"] = recurrence[keep.to_numpy()]
        out["top_words"] = [" ".join(words.loc[t]) for t in out.index]
        return out.reindex(out["coef"].abs().sort_values(ascending=False).index)

    def signal_covariates(self, label, level=0.95):
        """Covariates (and words, ``"word=<w>"``) whose coefficient for ``label`` stands out.

        Like :meth:`signal_topics` for the non-topic columns: those whose
        ``level`` credible interval excludes zero, sorted by |coefficient|.
        Returns a DataFrame with ``coef, lower, upper, sign`` and ``repeats`` (share of the
        chains in which the feature is a signal on that chain's own draws; 1.0 with one
        chain) indexed by feature.
        """
        from ...interpret.stability import column_repeats

        check_is_fitted(self, "eta_draws_")
        if label not in set(self.classes_.tolist()):
            raise unknown_class(label, self.classes_)
        lo, hi = self.coef_interval(level)
        cols = [c for c in self.coef_.columns if c != INTERCEPT and not c.startswith("topic ")]
        mean, lo, hi = self.coef_.loc[label, cols], lo.loc[label, cols], hi.loc[label, cols]
        keep = (lo > 0) | (hi < 0)
        out = pd.DataFrame({"coef": mean[keep], "lower": lo[keep], "upper": hi[keep]})
        out["sign"] = np.where(out["coef"] > 0, "+", "-")
        l = int(np.flatnonzero(self.classes_ == label)[0])
        index = pd.Index(self.coef_.columns).get_indexer(out.index)
        out["repeats"] = column_repeats(self.eta_draws_, l, index,
                                        int(getattr(self, "n_chains_", 1)), level)
        return out.reindex(out["coef"].abs().sort_values(ascending=False).index)

    @obeys_n_jobs
    def explain(self, text, X_row=None, level="feature", classes=None, word_features=None):
        """Why one document gets its class: each feature's or each word's contribution.

        The score of class ``l`` is ``mu_l = u . eta_l`` with the posterior mean
        of eta; the contribution of feature ``p`` is ``u_p eta_{lp}``.  At
        ``level="token"`` the topic part is split over the words of the text:
        token ``i`` contributes ``(1/N_d) sum_k P(z_i = k) eta_{l,k}`` with the
        topic frequencies of the prediction sweeps (see :mod:`dolda.interpret.explain`).

        Parameters
        ----------
        text : str
        X_row : Series, one-row DataFrame, array or None
        level : {"feature", "token"}, default="feature"
        classes : None, int or list of labels
            All classes, the ``n`` most probable, or the given ones.
        word_features : dict or None
            Feature name -> word, for covariates that stand for a word.

        Returns
        -------
        pandas.DataFrame
            ``level="feature"``: columns ``class, feature, value, coef,
            contribution``, sorted by class probability (most probable class
            first) and then by |contribution|; ``level="token"``: one row per
            (class, token) in text order.  ``attrs["proba"]`` holds the class
            probabilities and ``attrs["score"]`` the class scores.
        """
        from ...interpret.explain import explain

        check_is_fitted(self, "eta_draws_")
        return explain(self, text, X_row=X_row, level=level, classes=classes,
                       word_features=word_features)


    def to_inference_data(self, y=None, X=None, texts=None):
        """The posterior draws as an ArviZ ``InferenceData``, for R-hat, ESS and plots.

        With the training labels ``y`` (and covariates ``X``, if any) it also has
        a ``log_likelihood`` group, per kept draw and training document, for
        ``az.loo``, ``az.waic`` and ``az.compare``; see
        :func:`dolda.evaluate.diagnostics.dolda_inference_data` (``texts``: the training
        documents, needed after a two-step fit).

        Chains are comparable because their topics were aligned during ``fit``:
        each chain's Phi is matched to chain 0's by the Hungarian assignment on
        the Hellinger distances between topics
        (:func:`dolda.evaluate.diagnostics.align_topics`), and the chain's topic columns
        of eta, lambda and its topic counts are permuted accordingly
        (``topic_alignment_``).  Without this, label switching would make R-hat
        of the topic coefficients meaningless.

        Returns
        -------
        arviz.InferenceData
            ``posterior``: ``eta`` (chain, draw, class, feature) with the class
            labels and ``feature_names_`` (``"(intercept)"``, covariates,
            ``"topic 0"`` ...) as coordinates; for the Horseshoe also ``tau``
            (chain, draw, class) and ``lambda`` (chain, draw, class,
            shrunk_feature), the features without the intercept.
            ``sample_stats``: ``loglik``, ``loglik_do`` and ``loglik_lda``
            (chain, draw) at the kept draws, and ``loglik_trace``,
            ``loglik_do_trace``, ``loglik_lda_trace`` (chain, iteration) over
            all ``n_iter`` iterations, burn-in included.

        Examples
        --------
        >>> import arviz as az                                   # doctest: +SKIP
        >>> idata = DOLDA(n_chains=4).fit(texts, y).to_inference_data()  # doctest: +SKIP
        >>> az.summary(idata, var_names=["eta"])                 # doctest: +SKIP
        >>> az.loo(model.to_inference_data(y=y))                  # doctest: +SKIP
        """
        from ...evaluate.diagnostics import dolda_inference_data

        return dolda_inference_data(self, y=y, X=X, texts=texts)

    def report(self, path, texts=None, y=None, X=None, max_documents=200):
        """Write one self-contained HTML report (topics, coefficients, diagnostics).

        Parameters
        ----------
        path : str or Path
            The HTML file to write.
        texts : sequence of str or None
            Documents to explain in the report (the first ``max_documents``)
            and, with ``y``, to compute the confusion matrix on.
        y : array-like or None
            True labels of ``texts``.
        X : DataFrame or array or None
            Covariates of ``texts`` (when the model has covariates).
        max_documents : int, default=200

        Returns
        -------
        pathlib.Path
        """
        from ...interpret.report import make_report

        return make_report(self, path, texts=texts, y=y, X=X, max_documents=max_documents)
