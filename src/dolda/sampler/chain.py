"""The DOLDA Gibbs iteration: a -> eta -> (tau, lambda) -> z -> Phi (paper section 3.1).

A chain state is a :class:`DOLDAState`; :func:`dolda_step` maps a state to the
next one and returns an info record.  The blocks are the DO-probit blocks of
:mod:`dolda.sampler.probit`, the supervised z-sweep of
:mod:`dolda.sampler.supervised` and the topic kernels of :mod:`dolda.sampler.lda`.
Every random draw is keyed by ``(seed, iteration, block)``, so a chain resumed
from a saved state at iteration ``t`` continues exactly as an uninterrupted one.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import lda as topic_kernels
from . import probit as probit_blocks
from .likelihood import do_log_likelihood
from .supervised import sweep_supervised, sweep_supervised_mh


class TopicData(NamedTuple):
    """The fixed data of a DOLDA chain.

    Attributes
    ----------
    tokens : int32 (N,)        word ids ``w``, documents back to back.
    doc_ptr : int64 (D+1,)     document ``d`` owns ``tokens[doc_ptr[d]:doc_ptr[d+1]]``.
    n_words : int              ``V``.
    X : float64 (D, P_x)       covariates ``x_d``, intercept first.
    y : int64 (D,)             class index of every document.
    n_classes : int            ``L``.
    """

    tokens: np.ndarray
    doc_ptr: np.ndarray
    n_words: int
    X: np.ndarray
    y: np.ndarray
    n_classes: int

    @property
    def doc_lengths(self):
        return np.diff(self.doc_ptr)


class DOLDAConfig(NamedTuple):
    """Model and sampler settings."""

    n_topics: int
    alpha: float
    beta: float
    prior: probit_blocks.ProbitPrior
    z_sampler: str  # "exact" or "mh"
    n_jobs: int


class DOLDAState(NamedTuple):
    """One state of the chain.

    Attributes
    ----------
    z : int32 (N,)            topic indicators.
    ndk : int32 (D, K)        document-topic counts.
    phi : float64 (K, V)      topics ``Phi``.
    probit : ProbitState      ``a``, ``eta`` (L, P_x + K) and the shrinkage scales.
    """

    z: np.ndarray
    ndk: np.ndarray
    phi: np.ndarray
    probit: probit_blocks.ProbitState


class StepInfo(NamedTuple):
    """The two parts of the paper's log-likelihood (section 3.3) after a step."""

    loglik_do: float
    loglik_lda: float


def topic_proportions(ndk, doc_lengths):
    """``zbar_d = n_{d,.} / N_d`` (D, K); empty documents get a row of zeros."""
    n = np.maximum(doc_lengths, 1).astype(np.float64)
    return ndk / n[:, None]


def regressors(data: TopicData, ndk):
    """``U = [x_d, zbar_d]``, shape (D, P_x + K)."""
    return np.hstack([data.X, topic_proportions(ndk, data.doc_lengths)])


def init_state(seed: int, data: TopicData, config: DOLDAConfig) -> DOLDAState:
    """Random topic indicators (one stream per document), Phi drawn from their counts."""
    z, ndk = topic_kernels.init_topics(data.tokens, data.doc_ptr, config.n_topics, seed)
    nkw = topic_kernels.topic_word_counts(data.tokens, z, config.n_topics, data.n_words)
    phi = topic_kernels.draw_phi(nkw, config.beta, seed, -1)
    n_columns = data.X.shape[1] + config.n_topics
    probit = probit_blocks.initial_state(len(data.y), data.n_classes, n_columns)
    return DOLDAState(z, ndk, phi, probit)


def dolda_step(seed: int, iteration: int, state: DOLDAState, data: TopicData,
               config: DOLDAConfig) -> tuple[DOLDAState, StepInfo]:
    """One Gibbs iteration of DOLDA: a -> eta -> (tau, lambda) -> z -> Phi.

    The probit blocks see ``U = [X, zbar]`` from the current z; the z-sweep
    sees the new ``a`` and ``eta``; Phi is drawn from the new topic-word counts.
    The arrays ``z`` and ``ndk`` of ``state`` are updated in place.
    """
    U = regressors(data, state.ndk)
    gram = U.T @ U
    probit = probit_blocks.gibbs_step(seed, iteration, state.probit, U, gram, data.y,
                                      config.prior, config.n_jobs)
    n_x = data.X.shape[1]
    eta_x, eta_topics = probit.eta[:, :n_x], np.ascontiguousarray(probit.eta[:, n_x:])
    base = probit.a - data.X @ eta_x.T
    gram_topics = eta_topics.T @ eta_topics
    phi_wk = topic_kernels.word_major(state.phi)
    z, ndk = state.z, state.ndk
    if config.z_sampler == "mh":
        tables = topic_kernels.build_alias_tables(phi_wk)
        sweep_supervised_mh(data.tokens, data.doc_ptr, z, ndk, phi_wk, tables.prob,
                            tables.alias, tables.mass, config.alpha, eta_topics, base, seed,
                            iteration)
    else:
        sweep_supervised(data.tokens, data.doc_ptr, z, ndk, phi_wk, config.alpha, eta_topics,
                         base, gram_topics, seed, iteration, np.empty((0, config.n_topics)))
    nkw = topic_kernels.topic_word_counts(data.tokens, z, config.n_topics, data.n_words)
    phi = topic_kernels.draw_phi(nkw, config.beta, seed, iteration)
    U = regressors(data, ndk)
    info = StepInfo(
        loglik_do=float(do_log_likelihood(U @ probit.eta.T, data.y)),
        loglik_lda=float(topic_kernels.lda_log_likelihood(ndk, nkw, config.alpha, config.beta)),
    )
    return DOLDAState(z, ndk, phi, probit), info
