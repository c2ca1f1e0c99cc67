"""Several chains as modes: the prediction of a several-chain DOLDA.

A Gibbs chain of a topic model stays in the mode it found, so each chain keeps its own Phi
(``chain_phi_``, C x K x V) and its own draws (the pooled ``eta_draws_`` in chain order), and a
new document's class probabilities are the mixture of the chains' predictive distributions
with their stacking weights (``chain_weights_``: Yao, Vehtari & Gelman 2022;
:mod:`dolda.posterior.chain_stacking`):

    p(y | x) = sum_c w_c p_c(y | x),

``p_c`` the rule ``proba`` on chain ``c``'s draws and its document proportions under its own
Phi.  The calibration map (``stacking_``) is the one fitted on the pooled chains.  What a
reader sees (topics, signal topics, explanations) is the chains' topics matched by their top
words and averaged (``phi_``); a chain of weight 0 costs nothing at prediction.
"""

from __future__ import annotations

import numpy as np

from ...posterior import calibration
from ...utils.draws import BlockDraws
from .proportions import document_design, regressor_matrix


def chain_draws(draws, n_chains, c):
    """Chain ``c``'s draws of the pooled ``draws`` (chains in order, as many each)."""
    S = len(draws) // n_chains
    if isinstance(draws, BlockDraws):
        return BlockDraws(draws.rest[c * S:(c + 1) * S], draws.words[c * S:(c + 1) * S],
                          draws.start)
    return draws[c * S:(c + 1) * S]


def is_mixture(model) -> bool:
    """Does ``model`` predict as a mixture of its chains?"""
    return getattr(model, "chain_phi_", None) is not None


def mixture_probabilities(model, X, covariates=None):
    """Class probabilities (D, L) of documents ``X``: the chains' predictive distributions
    mixed with their stacking weights."""
    corpus, Xd = document_design(model, X, covariates)
    phis = model.chain_phi_
    C = len(phis)
    weights = getattr(model, "chain_weights_", None)
    weights = np.full(C, 1.0 / C) if weights is None else np.asarray(weights, np.float64)
    proba = None
    for c in range(C):
        if weights[c] <= 0:
            continue
        U = regressor_matrix(model, corpus, Xd, phi=phis[c])
        p = calibration.class_probabilities(U, chain_draws(model.eta_draws_, C, c),
                                            model.proba, getattr(model, "stacking_", None))
        proba = weights[c] * p if proba is None else proba + weights[c] * p
    return proba / proba.sum(axis=1, keepdims=True)
