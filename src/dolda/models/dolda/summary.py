"""Stage 4 of a DOLDA fit: the posterior summary of its chains.

:func:`summarize` runs it in order: :func:`combine_chains` aligns the chains' topics (label
switching) and pools their draws into the fitted attributes; the training documents'
pointwise log-likelihood (for ``az.loo``); :func:`fit_calibration_map`, the
``proba="calibrated"`` map; :func:`report_convergence`, the verdict ``convergence_``,
logged.  Each works on a :class:`dolda.DOLDA` and sets its fitted attributes.
"""

from __future__ import annotations

import functools
import logging

import numpy as np

from ...posterior import calibration
from ...posterior.holdout import TIME_ORDER, holdout_stacking
from ...posterior.scores import coefficient_prior_sd, proba_stacking_draws
from ...sampler.alpha import alpha_value, as_alpha
from ...utils.draws import BlockDraws
from ...utils.heap import release_free_heap
from ...utils.phases import phase
from ...utils.validation import check_positive_float
from .design_stage import fitted_scale_blocks
from .kept import word_stats
from .proportions import document_regressors, regressor_matrix
from .state import alpha_mode, set_coef, set_loglik

logger = logging.getLogger("dolda.models.dolda.estimator")


def summarize(model, chains, design, p):
    """Stage 4 of ``model.fit``: pool ``chains`` (the list is emptied, so that the chains'
    arrays are freed), then the training pointwise log-likelihood, the calibration map and
    the convergence verdict (``design``: :class:`dolda.models.dolda.design_stage.FitDesign`)."""
    with phase(f"stacking weights of the {len(chains)} chain(s) (PSIS-LOO of the training "
               "labels)", model.progress):
        stack_chains(model, chains, design.Xd, design.y_index)
    with phase("pooling the draws and the topic-word distributions", model.progress):
        combine_chains(model, chains, p["n_iter"])
        chains.clear()
        release_free_heap(design.corpus.n_tokens)  # the chains' working arrays are freed
    with phase(f"pointwise log-likelihood of the {design.corpus.n_docs:,} training documents "
               "(for az.loo)", model.progress):
        from ...evaluate.diagnostics import training_pointwise_loglik

        model.training_loglik_ = training_pointwise_loglik(model, design.Xd, design.y_index)
        one_chain_loo(model)
    fit_calibration_map(model, design.corpus, design.Xd, design.y_index, design.held)
    report_convergence(model)


def _every(draws, step):
    """Every ``step``-th draw of ``draws`` (an array or a compact :class:`BlockDraws`)."""
    if step == 1:
        return draws
    if isinstance(draws, BlockDraws):
        return BlockDraws(draws.rest[::step], draws.words[::step], draws.start)
    return draws[::step]


def stack_chains(model, chains, Xd, y_index):
    """``chain_weights_`` (C,), ``effective_chains_`` and ``chain_loo_`` (per chain: its
    elpd_loo and Pareto k counts): each chain scored by the PSIS-LOO log predictive density
    of the training labels under its own topic counts and draws, and the chains stacked
    (:mod:`dolda.posterior.chain_stacking`).  A chain's draws are thinned evenly so that
    draws x documents stays within :data:`dolda.evaluate.diagnostics.MAX_POINTWISE`.  One
    chain weighs 1; its ``chain_loo_`` is read off ``training_loglik_`` (:func:`one_chain_loo`)
    rather than computed twice."""
    from ...evaluate.diagnostics import MAX_POINTWISE, count_regressors, pointwise_do_loglik

    model.chain_weights_, model.effective_chains_, model.chain_loo_ = np.ones(1), 1.0, None
    if len(chains) == 1:
        return
    n_docs = len(y_index)
    logliks = []
    for ch in chains:
        draws = ch["eta_draws"]
        step = max(1, int(np.ceil(len(draws) * n_docs * len(chains) / MAX_POINTWISE)))
        logliks.append(pointwise_do_loglik(count_regressors(Xd, ch["ndk"]),
                                           _every(draws, step), y_index))
    if min(len(ll) for ll in logliks) < 2:  # a chain of one kept draw: nothing to stack on
        model.chain_weights_ = np.full(len(chains), 1.0 / len(chains))
        model.effective_chains_ = float(len(chains))
        return
    model.chain_loo_ = _loo_summary(model, logliks)


def one_chain_loo(model):
    """``chain_loo_`` of a one-chain fit, from its ``training_loglik_`` (the same pointwise
    log-likelihood :func:`stack_chains` would compute)."""
    pointwise = model.training_loglik_
    if int(model.n_chains_) == 1 and pointwise is not None and len(pointwise) >= 2:
        model.chain_loo_ = _loo_summary(model, [pointwise])


def _loo_summary(model, logliks):
    from ...posterior.chain_stacking import chain_stacking

    out = chain_stacking(logliks)
    model.chain_weights_ = out["weights"]
    model.effective_chains_ = out["effective_chains"]
    return {"elpd_loo": out["elpd_loo"], "stacked_elpd_loo": out["stacked_elpd_loo"],
            "pareto_k": out["pareto_k"]}


def report_convergence(model):
    """``convergence_`` (:func:`dolda.evaluate.convergence.chain_convergence`), logged."""
    from ...evaluate.convergence import chain_convergence

    with phase("convergence diagnostics (split R-hat and ESS)", model.progress):
        model.convergence_ = chain_convergence(model)
        # what is reported, across chains: class levels, signal-topic contrasts, unstable
        # topics (dolda.interpret.stability; figures only, the verdict is chain_convergence's)
        from ...interpret.stability import reported_convergence

        model.convergence_.update({f"reported_{key}": value for key, value
                                   in reported_convergence(model).items()})
    (logger.info if model.convergence_["converged"] else logger.warning)(
        "DOLDA: %s", model.convergence_["message"])


def fit_calibration_map(model, corpus, Xd, y_index, held=None):
    """``stacking_``: the ``proba="calibrated"`` map, fitted on the training documents'
    regressors recomputed as for new documents (unsupervised z, :meth:`dolda.DOLDA.transform`),
    or, with ``calibration_holdout`` a share, on the held-out latest rows ``held`` (``(texts, y,
    covariates)``, :mod:`dolda.posterior.holdout`); with ``calibration_holdout="time"``, the
    leave-one-out map rescaled on the latest rows (:mod:`dolda.posterior.drift`)."""
    n_classes = len(model.classes_)
    if held is not None:
        with phase(f"fitting the calibration map on the {len(held[1]):,} held-out rows "
                   f"({n_classes} classes)", model.progress):
            model.stacking_ = holdout_stacking(
                model, *held, regressors=functools.partial(document_regressors, model))
        return
    with phase(f"topic proportions of the {corpus.n_docs:,} training documents, as "
               "for new ones (for the calibration map)", model.progress):
        U = regressor_matrix(model, corpus, Xd)
    rows = getattr(model, "lambda_word_row_ids_", None)
    eta = model.eta_draws_
    prior_sd = coefficient_prior_sd(model.tau_draws_, model.lambda_draws_,
                                    check_positive_float(model.prior_variance,
                                                         "prior_variance"),
                                    blocks=fitted_scale_blocks(model),
                                    word_block=(None if not isinstance(eta, BlockDraws)
                                                else (eta.start, eta.stop, rows,
                                                      model.lambda_word_rows_)))
    # fit_proba_stacking in two steps, so that U (its D x K topic proportions: 0.09 GB
    # on 20 Newsgroups at K = 1000) is released before the map's fit, which reads only
    # the leave-one-out draws
    with phase(f"leave-one-out predictors of the {corpus.n_docs:,} training documents",
               model.progress):
        loo = proba_stacking_draws(U, model.eta_draws_, y_index, n_classes, prior_sd)
    U = None
    n_draws = loo.mu.shape[0]
    kind = "full"
    if n_classes > calibration.FULL_MAP_MAX_CLASSES:
        kind, n_draws = "per-class", min(n_draws, calibration.per_class_draws(
            corpus.n_docs, n_classes))
    with phase(f"fitting the calibration map ({kind}, {n_classes} classes x "
               f"{corpus.n_docs:,} documents x {n_draws} draws)", model.progress):
        model.stacking_ = calibration.select_stacking(loo, y_index, n_classes)
    if getattr(model, "calibration_holdout", None) == TIME_ORDER:
        from ...posterior import drift

        n_latest = len(drift.latest_rows(len(y_index)))
        with phase(f"rescaling the calibration map on the latest {n_latest:,} training "
                   "documents (rows in time order)", model.progress):
            model.stacking_, _, _ = drift.drift_map(model.stacking_, loo, y_index)


def _pooled(chains, key):
    """The chains' ``key`` draws stacked along the draw axis; a single chain's array itself."""
    if len(chains) == 1:
        return chains[0][key]
    if isinstance(chains[0][key], BlockDraws):
        out = BlockDraws.concatenate([ch[key] for ch in chains])
    else:
        out = np.concatenate([ch[key] for ch in chains])
    for ch in chains:
        ch[key] = None  # not used after pooling: free each chain's copy
    return out


def combine_chains(model, chains, n_iter):
    """Align every chain's topics to chain 0 (label switching), then pool the draws into
    ``model``'s fitted attributes (draws, ``phi_``, ``alpha_``, ``beta_``, ``loglik_``,
    ``coef_``, the alignment)."""
    from ...evaluate.diagnostics import TOP_WORDS, hellinger, match_topics

    K = chains[0]["phi"].shape[0]
    # topics matched to chain 0's by the top words a reader sees (dolda.interpret.stability)
    weights = [np.asarray(ch["ndk"], np.float64).sum(axis=0) for ch in chains]
    shared = np.full((len(chains), K), TOP_WORDS, dtype=np.int64)
    perms = [np.arange(K)]
    for c, ch in enumerate(chains[1:], start=1):
        perm, shared[c] = match_topics(chains[0]["phi"], ch["phi"], TOP_WORDS, weights[0],
                                       weights[c])
        perms.append(perm)
    model.topic_shared_words_ = shared
    # the secondary figure: the whole distributions' distance
    hell = np.zeros((len(chains), K))
    for c, (ch, perm) in enumerate(zip(chains[1:], perms[1:]), start=1):
        hell[c] = np.diag(hellinger(np.asarray(chains[0]["phi"], np.float64),
                                    np.asarray(ch["phi"], np.float64)[perm]))
    model.topic_hellinger_ = hell
    for ch, perm in zip(chains, perms):
        if np.array_equal(perm, np.arange(K)):
            continue  # chain 0 (and any chain already aligned): no copies of its arrays
        ch["phi"] = ch["phi"][perm]
        eta = ch["eta_draws"]
        # the topics are the last K of the stored (float32) columns in either layout
        rest = eta.rest if isinstance(eta, BlockDraws) else eta
        n_rest = rest.shape[2] - K
        cols = np.concatenate([np.arange(n_rest), n_rest + perm])
        ch["eta_draws"] = (BlockDraws(rest[:, :, cols], eta.words, eta.start)
                           if isinstance(eta, BlockDraws) else eta[:, :, cols])
        if ch["lambda_draws"] is not None:
            ch["lambda_draws"] = ch["lambda_draws"][:, :, cols]
        ch["ndk"] = ch["ndk"][:, perm]
    model.n_chains_ = len(chains)
    model.topic_alignment_ = np.array(perms)
    model.seed_ = chains[0]["seed"]
    model.n_iter_ = n_iter
    # one chain: its arrays as they are (S x L x P draws are the largest arrays of a fit
    # with word covariates: 0.12 GB each (float32) for eta and lambda at K = 1000, 5,000
    # words); several: one float32 concatenation
    model.eta_draws_ = _pooled(chains, "eta_draws")
    horseshoe = chains[0]["tau_draws"] is not None
    model.tau_draws_ = _pooled(chains, "tau_draws") if horseshoe else None
    model.lambda_draws_ = _pooled(chains, "lambda_draws") if horseshoe else None
    # the word columns' local scales: summaries over each chain's last iterations
    sums = chains[0]["lambda_word_sums"]
    for ch in chains[1:]:
        sums = None if sums is None else sums + ch["lambda_word_sums"]
    model.lambda_word_stats_ = word_stats(sums, sum(ch["window"] for ch in chains))
    model.lambda_word_rows_ = (_pooled(chains, "lambda_word_rows")
                               if chains[0]["lambda_word_rows"] is not None else None)
    model.lambda_word_row_ids_ = chains[0]["lambda_word_row_ids"]
    # the mean of the chains' Phi, renormalised: summed into chain 0's array in place (the
    # chains' draws are not used after this), no stacked or K x V temporary copies
    # every chain's own Phi, for the mixture of the chains' predictions (chains are modes:
    # dolda.models.dolda.modes); the pooled mean below is what topics and explanations show
    model.chain_phi_ = (None if len(chains) == 1 else
                        np.stack([np.asarray(ch["phi"], np.float64) for ch in chains]))
    if model.chain_phi_ is not None:
        model.chain_phi_ /= model.chain_phi_.sum(axis=2, keepdims=True)
    phi = chains[0]["phi"]
    for ch in chains[1:]:
        phi += ch["phi"]
        ch["phi"] = None
    phi /= phi.sum(axis=1, keepdims=True)
    model.phi_ = phi
    model.doc_topic_counts_ = chains[0]["ndk"]
    # per-topic alphas follow their topics through the alignment
    alphas = [ch["alpha"] if np.ndim(ch["alpha"]) == 0 else np.asarray(ch["alpha"])[perm]
              for ch, perm in zip(chains, perms)]
    alpha = (np.mean([as_alpha(a, K) for a in alphas], axis=0)
             if alpha_mode(model.alpha) == "asymmetric" else np.mean(alphas, axis=0))
    model.alpha_ = alpha_value(alpha)
    model.beta_ = float(np.mean([ch["beta"] for ch in chains]))
    set_loglik(model, np.stack([ch["loglik"] for ch in chains]))
    model.timings_ = {"iteration_seconds": np.stack([ch["seconds"] for ch in chains])}
    set_coef(model, model.eta_draws_)
