"""The topic proportions of documents under a fitted DOLDA's Phi, and the regressors
``U = [X, zbar]`` built from them: what :meth:`dolda.DOLDA.transform` and prediction
compute for new documents, and what the posterior summary computes for the training
documents (the calibration map is fitted on them as prediction sees them).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from ...design.estimator_input import split_documents
from ...design.regressors import SparseDenseDesign
from ...sampler.alpha import as_alpha
from ...sampler.threads import using_threads
from ...utils.heap import release_free_heap
from ...utils.validation import check_n_jobs
from . import design_stage as _inputs
from .state import fitted_alpha


def topic_proportions(model, corpus, out=None, phi=None):
    """The topic proportions ``zbar`` (D, K) of a :class:`Corpus` under ``model``'s fitted
    Phi (:meth:`dolda.DOLDA.transform`; ``phi``: another (K, V) Phi, e.g. one chain's),
    written into ``out`` (D, K) when given (e.g. the topic columns of a regressor matrix: no
    D x K copy)."""
    from ...sampler.lda import predict_topic_proportions

    burn = (model.predict_sweeps // 2 if model.predict_burn_in is None
            else model.predict_burn_in)
    alpha = fitted_alpha(model)
    with using_threads(check_n_jobs(model.n_jobs)):
        theta = predict_topic_proportions(corpus.tokens, corpus.doc_ptr,
                                          model.phi_ if phi is None else phi, alpha,
                                          int(model.predict_sweeps), int(burn),
                                          int(model.seed_), out=out)
    # theta averages (n_dk + alpha_k) / (N_d + sum alpha); the regression uses the
    # empirical proportions n_dk / N_d, an exact linear function of it.
    n_d = corpus.doc_lengths.astype(np.float64)[:, None]
    K = theta.shape[1]
    alpha = as_alpha(fitted_alpha(model), K)
    zbar = theta  # in place: no further D x K temporaries
    zbar *= n_d + alpha.sum()
    zbar -= alpha
    zbar /= np.maximum(n_d, 1.0)
    zbar[n_d[:, 0] == 0] = 0.0  # no words: no topic information, as in training
    return np.clip(zbar, 0.0, 1.0, out=zbar)


def regressor_matrix(model, corpus, Xd, phi=None):
    """``U = [Xd, zbar]`` (D, P) of ``corpus``: zbar is written straight into U's topic
    columns when Xd is dense (one D x P array, not zbar and a stacked copy); beside a
    sparse Xd (word covariates, sparse one-hot levels) the two stay separate blocks
    (:class:`dolda.design.regressors.SparseDenseDesign`: the dense zbar is not copied into
    sparse storage, and its products run in BLAS)."""
    if sp.issparse(Xd):
        U = SparseDenseDesign(Xd, topic_proportions(model, corpus, phi=phi))
    else:
        Xd = np.asarray(Xd, dtype=np.float64)
        U = np.empty((Xd.shape[0], Xd.shape[1] + model.phi_.shape[0]))
        U[:, :Xd.shape[1]] = Xd
        topic_proportions(model, corpus, out=U[:, Xd.shape[1]:], phi=phi)
    # the sampler's chunks of Phi columns and its threads' scratch are freed now; glibc
    # keeps their pages (0.05-0.1 GB on 20 Newsgroups at K = 1000) resident otherwise,
    # under what the calibration map or the class probabilities allocate next
    release_free_heap(corpus.n_tokens)
    return U


def document_regressors(model, X, covariates=None):
    """``u_d = [1, x_d, words_d, zbar_d]`` (D, P) of documents ``X`` (as in ``fit``) under a
    fitted DOLDA: its vocabulary, covariate encoder, word features and Phi."""
    corpus, Xd = document_design(model, X, covariates)
    return regressor_matrix(model, corpus, Xd)


def document_design(model, X, covariates=None):
    """``(corpus, Xd)``: documents ``X`` encoded by a fitted DOLDA, before the topics."""
    check_is_fitted(model, "phi_")
    texts, covariates = split_documents(X, model.text_column, model.covariate_columns,
                                        covariates)
    corpus = _inputs.make_corpus(model, texts, fit=False)
    Xd, _ = _inputs.covariate_design(model, covariates, corpus.n_docs, fit=False)
    Xd, _ = _inputs.add_word_features(model, corpus, Xd, [])
    return corpus, Xd
