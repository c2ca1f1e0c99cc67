"""A fitted DOLDA as metadata and arrays (dolda's own model files, ``docs/FORMAT.md``; no
pickle) and the state that skops stores.

A mixin of :class:`dolda.DOLDA`, so that ``estimator.py`` holds the estimator itself.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from ...design.word_features import WordFeatures
from ...evaluate.convergence import chain_convergence, from_json, to_json
from ...sampler.alpha import alpha_json, alpha_value
from ...utils.draws import BlockDraws, draw_mean
from ...utils.fitted import NotFittedAttributes
from .options import flat_params

#: Starting values of ``alpha="auto"`` and ``beta="auto"`` (:mod:`dolda.sampler.hyper`), also
#: what a model file without ``alpha_`` / ``beta_`` falls back to.
AUTO_ALPHA_START = 0.1
AUTO_BETA_START = 0.01


def alpha_mode(alpha):
    """How the parameter ``alpha`` is learned: ``"asymmetric"`` (``"auto"``),
    ``"symmetric"`` (``"auto_symmetric"``), or False (fixed)."""
    if isinstance(alpha, str):
        return "asymmetric" if alpha == "auto" else "symmetric"
    return False


def set_loglik(model, loglik):
    """``model.loglik_`` from ``loglik`` (C, n_iter, 2) or (n_iter, 2): a DataFrame indexed by
    (chain, iteration) with the columns ``do``, ``lda`` and ``total``."""
    loglik = np.asarray(loglik, dtype=np.float64)
    if loglik.ndim == 2:
        loglik = loglik[None]
    n_chains, n_iter, _ = loglik.shape
    index = pd.MultiIndex.from_product([range(n_chains), range(n_iter)],
                                       names=["chain", "iteration"])
    flat = loglik.reshape(-1, 2)
    model.loglik_ = pd.DataFrame({"do": flat[:, 0], "lda": flat[:, 1],
                                  "total": flat.sum(axis=1)}, index=index)


def set_coef(model, eta_draws):
    """``model.coef_``: the posterior mean of ``eta_draws``, rows = ``classes_``, columns =
    ``feature_names_``."""
    model.coef_ = pd.DataFrame(draw_mean(eta_draws), index=pd.Index(model.classes_,
                                                                    name="class"),
                               columns=model.feature_names_)


def fitted_alpha(model):
    """The alpha of a DOLDA's fitted chain (learned with ``alpha="auto"``): a float or (K,)."""
    alpha = getattr(model, "alpha_", None)
    if alpha is None:
        alpha = (AUTO_ALPHA_START if isinstance(model.alpha, str) else model.alpha)
    return alpha_value(alpha)


class DOLDAState(NotFittedAttributes):
    """Saving and loading a fitted :class:`dolda.DOLDA` (``dolda.io``) and its skops state."""

    def __getstate__(self):
        """Plain arrays instead of the DataFrames ``coef_`` and ``loglik_``.

        Lets skops (``skops.io.dump``) store a fitted model: it cannot store a
        DataFrame.  :meth:`__setstate__` rebuilds both.  dolda's own
        :meth:`save` never pickles.
        """
        state = super().__getstate__()
        eta = state.get("eta_draws_")
        if isinstance(eta, BlockDraws):  # plain arrays: skops stores no dolda objects
            state = dict(state)
            state["eta_draws_"] = eta.rest
            state["eta_word_draws_"] = eta.words
            state["eta_word_start_"] = eta.start
        if isinstance(state.get("loglik_"), pd.DataFrame):
            state = dict(state)
            state.pop("coef_", None)  # the mean of eta_draws_: rebuilt on load
            state["loglik_"] = self.loglik_[["do", "lda"]].to_numpy().reshape(
                self.n_chains_, -1, 2)
        return state

    def __setstate__(self, state):
        if "eta_word_draws_" in state:
            state = dict(state)
            state["eta_draws_"] = BlockDraws(state["eta_draws_"], state.pop("eta_word_draws_"),
                                             state.pop("eta_word_start_"))
        super().__setstate__(state)
        if isinstance(getattr(self, "loglik_", None), np.ndarray):
            set_loglik(self, self.loglik_)
            set_coef(self, self.eta_draws_)

    def _to_state(self):
        """Metadata and arrays for :func:`dolda.io.save_model` (no pickle)."""
        from ... import io

        check_is_fitted(self, "eta_draws_")
        meta = {
            "params": io.encode_params(flat_params(self)),
            "classes": io.encode_labels(self.classes_),
            "feature_names": list(self.feature_names_),
            "vocabulary": self.vocabulary_.to_dict(),
            "covariates": (self.covariate_encoder_.to_dict()
                           if getattr(self, "_has_covariates", False) else None),
            "seed": int(self.seed_),
            "n_iter": int(self.n_iter_),
            "n_tokens": int(self.n_tokens_),
            "n_chains": int(self.n_chains_),
            "alpha_": alpha_json(fitted_alpha(self)),
            "beta_": float(getattr(self, "beta_", None) or self.beta),
            "word_features": (self.word_features_.to_dict()
                              if getattr(self, "word_features_", None) is not None else None),
            "convergence": to_json(getattr(self, "convergence_", None)),
            # fitted on a document-term matrix: its number of columns (the vocabulary)
            "n_features_in": (int(self.n_features_in_) if "n_features_in_" in vars(self)
                              else None),
        }
        eta = self.eta_draws_
        # with word covariates: the word block of eta float16 beside the other columns
        # (BlockDraws), the word columns' lambda as summaries (docs/FORMAT.md)
        arrays = {"eta_draws": eta.rest if isinstance(eta, BlockDraws) else eta,
                  "eta_word_draws": eta.words if isinstance(eta, BlockDraws) else None,
                  "tau_draws": self.tau_draws_, "lambda_draws": self.lambda_draws_,
                  "lambda_word_stats": getattr(self, "lambda_word_stats_", None),
                  "lambda_word_rows": getattr(self, "lambda_word_rows_", None),
                  "lambda_word_row_ids": (None if getattr(self, "lambda_word_rows_", None) is None
                                          else self.lambda_word_row_ids_),
                  "phi": self.phi_,
                  "doc_topic_counts": self.doc_topic_counts_,
                  "loglik": self.loglik_[["do", "lda"]].to_numpy().reshape(
                      self.n_chains_, -1, 2),
                  "stacking": getattr(self, "stacking_", None),
                  "training_loglik": getattr(self, "training_loglik_", None),
                  # several chains: each one's Phi and stacking weight (the mixture)
                  "chain_phi": getattr(self, "chain_phi_", None),
                  "chain_weights": (None if getattr(self, "chain_phi_", None) is None
                                    else np.asarray(self.chain_weights_, np.float64))}
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        """Rebuild a fitted DOLDA from :meth:`_to_state` output (see :func:`dolda.load`)."""
        from ...io.codec import fitted_from_state
        from ...design.corpus import Vocabulary

        model = fitted_from_state(cls, meta, arrays)
        model.feature_names_ = list(meta["feature_names"])
        words = arrays.get("eta_word_draws")
        if words is not None:  # the compact word block (format version 2), (S, L, W)
            start = len(model.feature_names_) - int(model.n_topics) - words.shape[-1]
            model.eta_draws_ = BlockDraws(model.eta_draws_, words, start)
        model.lambda_word_stats_ = arrays.get("lambda_word_stats")
        model.lambda_word_rows_ = arrays.get("lambda_word_rows")
        model.lambda_word_row_ids_ = arrays.get("lambda_word_row_ids")
        model.vocabulary_ = Vocabulary.from_dict(meta["vocabulary"])
        model._has_covariates = meta.get("covariates") is not None
        if model._has_covariates:
            from ...design.covariates import CovariateEncoder

            model.covariate_encoder_ = CovariateEncoder.from_dict(meta["covariates"])
        model.word_features_ = (WordFeatures.from_dict(meta["word_features"])
                                if meta.get("word_features") else None)
        model.n_tokens_ = meta["n_tokens"]
        model.alpha_ = alpha_value(meta.get("alpha_", model.alpha
                                            if not isinstance(model.alpha, str)
                                            else AUTO_ALPHA_START))
        model.beta_ = float(meta.get("beta_", model.beta if model.beta != "auto"
                                     else AUTO_BETA_START))
        model.phi_ = arrays["phi"]
        model.scale_blocks_ = None  # one global scale per class unless tau_draws (S, L, G)
        if model.tau_draws_ is not None and np.ndim(model.tau_draws_) == 3:
            from .design_stage import SCALE_BLOCKS, fitted_scale_blocks

            blocks = fitted_scale_blocks(model, all_blocks=True)
            model.scale_blocks_ = [b for b in SCALE_BLOCKS if b in blocks]
        model.doc_topic_counts_ = arrays.get("doc_topic_counts")
        model.training_loglik_ = arrays.get("training_loglik")
        model.chain_phi_ = arrays.get("chain_phi")
        weights = arrays.get("chain_weights")
        model.chain_weights_ = (np.full(model.n_chains_, 1.0 / model.n_chains_)
                                if weights is None else weights)
        model.effective_chains_ = float(1.0 / np.sum(np.square(model.chain_weights_)))
        model.chain_loo_ = None
        if meta.get("n_features_in") is not None:
            model.n_features_in_ = int(meta["n_features_in"])
        set_loglik(model, arrays["loglik"])
        set_coef(model, model.eta_draws_)
        # the verdict the fit logged; files written before it was stored: computed now (a
        # diagnostic never stops a load)
        if meta.get("convergence"):
            model.convergence_ = from_json(meta["convergence"])
        else:
            try:
                model.convergence_ = chain_convergence(model)
            except (ValueError, IndexError, ZeroDivisionError):
                model.convergence_ = None
        return model

    def save(self, path, overwrite=False):
        """Save the fitted model as a directory (``docs/FORMAT.md``); read it with ``dolda.load``."""
        from ...io import save_model

        return save_model(self, path, overwrite=overwrite)

