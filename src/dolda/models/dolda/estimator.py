"""DOLDA: Diagonal Orthant Latent Dirichlet Allocation (the supervised topic model).

LDA topics joined with a multi-class Diagonal Orthant probit regression on the
documents' empirical topic proportions (and optional covariates), with a
Horseshoe (or normal) prior per class, fitted by the partially collapsed
Gibbs sampler of Magnusson, Jonsson & Villani (paper sections 2-3).
"""

from __future__ import annotations

import logging
from os import PathLike

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.metrics import accuracy_score
from sklearn.utils.validation import check_is_fitted

from ...design.estimator_input import legacy_covariates_keyword, split_documents
from ...posterior import calibration
from ...posterior.scores import log_odds_scores
from ...sampler.rng import chain_seed, seed_from  # noqa: F401 (re-exported)
from ...sampler.threads import obeys_n_jobs
from ...utils.validation import check_choice
from . import design_stage as _dolda_inputs
from . import proportions as _proportions
from . import modes as _modes
from . import state as _state
from . import summary as _summary
from .chain_stage import (  # noqa: F401 (MH_MIN_TOPICS, FitInterrupted re-exported)
    MH_MIN_TOPICS,
    FitInterrupted,
    resolved_z_sampler,
    run_chain,
    run_chains,
)
from .design_stage import INTERCEPT, SPARSE_CHOLESKY_MAX_COLUMNS, fit_design  # noqa: F401
from .interpret import DOLDAInterpretation, topic_name  # noqa: F401
from .params import (  # noqa: F401 (the parameters' choices, re-exported)
    ALPHA_AUTO,
    GLOBAL_SCALES,
    PHI_SAMPLERS,
    PRIORS,
    PROBA_RULES,
    Z_SAMPLERS,
    check_params,
)
from .state import AUTO_ALPHA_START, AUTO_BETA_START, DOLDAState, alpha_mode  # noqa: F401
from .summary import combine_chains, summarize  # noqa: F401 (combine_chains re-exported)
from . import options as _options
from .two_step import fit_two_step

logger = logging.getLogger(__name__)

_D = _options.PLAIN_DEFAULTS  # the defaults of the parameters that are not groups

#: The options the stages read as attributes (the flat names whose parameter is not a group).
_FLAT_ATTRIBUTES = frozenset(_options.FLAT) - frozenset(_options.SHADOWED)


class DOLDA(DOLDAInterpretation, DOLDAState, ClassNamePrefixFeaturesOutMixin, ClassifierMixin,
            TransformerMixin, BaseEstimator):
    """Supervised topic model: LDA + Diagonal Orthant probit with Horseshoe shrinkage.

    Documents ``d`` have tokens ``w_{d,n}`` with topics ``z_{d,n}``; topics
    ``phi_k ~ Dir(beta)``, proportions ``theta_d ~ Dir(alpha)``.  The class of
    a document is the single positive utility among
    ``a_{d,l} ~ N(u_d . eta_l, 1)``, ``u_d = [1, x_d, zbar_d]``, where
    ``zbar_d`` are the empirical topic proportions.  Every class has its own
    ``eta_l``; under the Horseshoe prior each class keeps few signal topics.

    Parameters
    ----------
    n_topics : int, default=20
        ``K``, the number of topics.
    alpha : float, array-like (K,), "auto" or "auto_symmetric", default=0.01
        Dirichlet prior of theta (the paper's 0.01): symmetric, or one ``alpha_k > 0`` per
        topic.  ``"auto"``: an asymmetric ``alpha`` learned during the burn-in (Minka's fixed
        point every 10 iterations, as MALLET; Wallach et al. 2009), then kept fixed;
        ``"auto_symmetric"``: one learned value.  The values used are ``alpha_``.  Try
        ``"auto"`` on long, topic-rich documents.
    beta : float or "auto", default=0.01
        Symmetric Dirichlet prior of Phi; ``"auto"``: learned as alpha; used: ``beta_``.
    prior : Prior or None, default=None
        The coefficients' prior (None: ``Prior()``, the Horseshoe with a slab on the word and
        covariate columns).  :class:`dolda.Prior`.
    words : Words or None, default=None
        Words as covariates beside the topics (None: ``Words()``, the ``"auto"`` number of
        most frequent words, log counts, under the Horseshoe; ``Words(n=0)``: the paper's
        topics-only model).  :class:`dolda.Words`.
    text : Text or None, default=None
        Tokenising and the vocabulary (stop words, token pattern, rare-word pruning, the text
        column of a DataFrame).  :class:`dolda.Text`.
    covariates : Covariates or None, default=None
        Which DataFrame columns are covariates, and the pooling of rare levels.
        :class:`dolda.Covariates`.
    n_iter : int, default=500
        Gibbs iterations of each chain, burn-in included.
    burn_in : int or None, default=None
        Iterations discarded (None: half of ``n_iter``).
    thin : int, default=1
        Keep every ``thin``-th draw of eta after the burn-in.
    n_chains : int, default=1
        Independent chains; their topics are matched to chain 0's by their top words
        (Hungarian assignment) and their draws pooled; ``convergence_`` and
        :meth:`to_inference_data` compare them.
    topic_init : {"nmf", "random"}, default="nmf"
        Where the topic indicators start.  ``"nmf"``: one deterministic start, every token
        in its most probable topic under probabilistic LSA fitted to the document-word counts
        (a Kullback-Leibler non-negative factorisation), the same for every seed, chain and
        ``n_jobs`` (:mod:`dolda.sampler.topic_start`), so that the topics a reader sees come
        back across seeds.  ``"random"``: uniformly at random on the chain's seed (each seed
        finds its own mode; several such chains show other modes).
    sampler : Sampler or None, default=None
        The Gibbs blocks (z, eta and Phi steps, the log-likelihood trace, document shards).
        :class:`dolda.Sampler`.
    prediction : Prediction or None, default=None
        How new documents are folded in (sweeps, burn-in, Phi window).
        :class:`dolda.Prediction`.
    proba : {"calibrated", "ovr", "do"}, default="calibrated"
        How :meth:`predict_proba` turns the one-vs-rest linear predictors ``mu_l = u . eta_l``
        into probabilities (``docs/``, calibration): ``"calibrated"``, a multinomial-logit map
        of ``mu`` fitted at the end of ``fit`` on leave-one-out predictors of the training
        rows (``stacking_``); ``"ovr"``, normalised one-vs-rest probabilities; ``"do"``, the
        paper's DO formula (overconfident).  The argmax is the same; switch with
        ``set_params(proba=...)`` without refitting.
    calibration_holdout : float or None, default=None
        A share ``f`` in (0, 0.5]: the last ``round(f D)`` training rows, in the order given,
        are kept out of the chain and the calibration map is fitted on their out-of-sample
        predictors.  For rows in time order (bug reports by filing date), where new documents
        drift from the old; classes only in the held-out rows are not learned.
    checkpoint : path, Checkpoint or None, default=None
        Save the chain while it runs (every 100 iterations and on Ctrl-C) to this directory;
        continue with ``fit(..., resume=path)``.  :class:`dolda.Checkpoint`.
    backend : "local" or Dask, default="local"
        Sample the document shards in this process (numba threads) or on the workers of a Dask
        cluster (``Dask(client)``); the same seed gives the same chain on both.
        :class:`dolda.Dask`.
    experimental : Experimental or None, default=None
        Options measured and not adopted, for studies (:class:`dolda.experimental.Experimental`).
    random_state : int, numpy Generator or None
        Seed: the same int gives the same chain for any ``n_jobs``.
    n_jobs : int or None
        Threads for the parallel kernels (None or -1: every CPU the process may run on).
    progress : bool, default=True
        Show a progress bar with the log-likelihood and tokens per second.

    Attributes
    ----------
    classes_ : ndarray (L,)
    vocabulary_ : Vocabulary
    feature_names_ : list of str (P,)
        ``"(intercept)"``, covariate columns, ``"topic 0"`` ... ``"topic K-1"``.
    coef_ : pandas.DataFrame (L, P)
        Posterior mean of eta, rows = classes, columns = ``feature_names_``.
    eta_draws_ : float32 ndarray (C * S, L, P), or BlockDraws with word covariates
        Kept draws of all chains, chain after chain (topics aligned): the chain's
        float64 state rounded to float32 (``dolda.utils.draws``; a model loaded from an
        older file with float64 draws keeps them as saved).  With word covariates a
        :class:`dolda.utils.draws.BlockDraws`: the word columns rounded to float16, the
        others float32, read like the (S, L, P) float32 array (slices are assembled on
        indexing; ``np.asarray`` builds the whole array).
    n_chains_ : int
    topic_alignment_ : ndarray (C, K)
        ``topic_alignment_[c][k]``: the topic of chain ``c`` shown as topic ``k``.
    topic_shared_words_ : int ndarray (C, K)
        How many of its 10 top words each chain's matched topic shares with chain 0's (topics
        are matched by these counts; a topic recurs in a chain from 7 on).
    topic_hellinger_ : ndarray (C, K)
        The matched topics' Hellinger distance to chain 0's (a secondary figure).
    chain_weights_ : ndarray (C,)
        The chains' stacking weights: on the simplex, maximising the summed PSIS-LOO log
        predictive density of the training labels (``[1.0]`` for one chain).
    effective_chains_ : float
        ``1 / sum(chain_weights_ ** 2)``.
    chain_loo_ : dict or None
        Per chain ``elpd_loo`` and Pareto-k counts, and the stacked elpd (not kept in model
        files).
    chain_phi_ : ndarray (C, K, V) or None
        Each chain's Phi (topics matched to chain 0's), for the mixture prediction; None
        with one chain.
    tau_draws_ : float32 ndarray (S, L), (S, L, G) with ``global_scales="block"``, or None
    lambda_draws_ : float32 ndarray (S, L, P) or None
        With word covariates (and the joint sampler): (S, L, P - n_words), the columns that
        are not words (``lambda_word_stats_`` summarises the words').
    lambda_word_stats_ : float64 ndarray (2, L, n_words) or None
        The word columns' local scales over the last ``phi_draws`` iterations of each chain
        (the window of ``phi_``): posterior mean of lambda, and its root mean square; None
        without word covariates.
    lambda_word_rows_, lambda_word_row_ids_ : float32 (S, D_s, L), int64 (D_s,) or None
        For the training rows holding a word column no other row holds: ``sum_j u_dj^2
        lambda_lj^2`` over those columns at every kept draw (what the calibration map's
        leave-one-out pass reads of the word columns' lambda), and those rows.
    phi_ : ndarray (K, V) float32
        Posterior mean of Phi over the last ``phi_draws`` iterations (the mean of
        ``E[phi | z]``; rows sum to 1).
    doc_topic_counts_ : ndarray (D, K)
        Final ``n_{d,k}`` of the training documents.
    loglik_ : pandas.DataFrame (C * n_iter, 3)
        Indexed by (chain, iteration): ``do`` (probit part), ``lda`` (LDA
        marginal), ``total``.
    convergence_ : dict
        Split R-hat and ESS of the log-likelihood and the coefficients, whether
        the chain looks converged and what to do if not
        (:func:`dolda.evaluate.convergence.chain_convergence`); logged at the end of ``fit``.
    eta_sampler_ : str
        The eta-step used (``eta_sampler`` resolved).
    word_features_ : WordFeatures or None
        The word covariates (``n_words > 0``).
    timings_ : dict
        ``iteration_seconds`` (C, n_iter): wall time of every Gibbs iteration
        of the joint sampler (NaN for iterations run before a resume).
    stacking_ : ndarray (L, L + 1) or (L, 2 L + 1)
        The ``proba="calibrated"`` map ``[b, W]``: ``P(y = l) = softmax(b + W f(mu))_l``,
        ``f(mu) = mu`` or ``[mu, log F(mu)]``, whichever scored better out of sample
        (``dolda.posterior.calibration.stacking_map(stacking_)`` tells which).
    """

    #: Parameters newer than some model files: their value there (io.params_as_saved).
    _ABSENT_PARAMS = {"slab_scale": None, "slab_blocks": "all", "word_prior": "horseshoe",
                      "word_prior_variance": 1.0}

    #: False: the joint sampler; the two-step comparison model is :class:`TwoStepDOLDA`.
    _two_step = False

    def __init__(self, n_topics=_D["n_topics"], *, alpha=_D["alpha"], beta=_D["beta"],
                 prior=None, words=None, text=None, covariates=None, n_iter=_D["n_iter"],
                 burn_in=_D["burn_in"], thin=_D["thin"], n_chains=_D["n_chains"],
                 topic_init=_D["topic_init"], sampler=None, prediction=None, proba=_D["proba"],
                 calibration_holdout=_D["calibration_holdout"], checkpoint=None,
                 backend="local", experimental=None, random_state=_D["random_state"],
                 n_jobs=_D["n_jobs"], progress=_D["progress"]):
        self.n_topics = n_topics
        self.alpha = alpha
        self.beta = beta
        self.prior = prior
        self.words = words
        self.text = text
        self.covariates = covariates
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.n_chains = n_chains
        self.topic_init = topic_init
        self.sampler = sampler
        self.prediction = prediction
        self.proba = proba
        self.calibration_holdout = calibration_holdout
        self.checkpoint = checkpoint
        self.backend = backend
        self.experimental = experimental
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.progress = progress

    def __getattr__(self, name):
        # the stages read every option by its flat name (options.FLAT), wherever it lives
        if name in _FLAT_ATTRIBUTES:
            return _options.flat_value(self, name)
        if name == "two_step":
            return type(self)._two_step
        return super().__getattr__(name)  # a fitted attribute before fit: NotFittedError

    def set_params(self, **params):
        """Set parameters, as scikit-learn's; ``group__field`` reaches a field of a group left
        at None (``set_params(prior__slab_scale=1.0)``) by starting from the group's defaults."""
        for key in params:
            name, nested, _ = key.partition("__")
            if nested and name in _options.GROUPS and getattr(self, name, None) is None:
                setattr(self, name, _options.GROUPS[name]())
            elif nested and name == "checkpoint" and isinstance(self.checkpoint, (str, PathLike)):
                self.checkpoint = _options.Checkpoint(self.checkpoint)
            elif nested and name == "backend" and isinstance(self.backend, str):
                self.backend = _options.Dask()
        return super().set_params(**params)

    def _flat_params(self):
        """Every option by its flat name (:func:`dolda.models.dolda.options.flat_params`)."""
        return _options.flat_params(self)

    @classmethod
    def _saved_param_names(cls):
        """The (flat) option names a model file holds."""
        return list(_options.PLAIN) + list(_options.FLAT) + ["backend", "two_step"]

    @classmethod
    def _from_params(cls, params):
        """The estimator of a model file's (flat) parameters."""
        return _options.from_flat(cls, params)

    # ------------------------------------------------------------ checks
    def _check_params(self):
        """The checked parameters (:func:`dolda.models.dolda.params.check_params`)."""
        return check_params(self)

    def _resolved_z_sampler(self, n_topics):
        return resolved_z_sampler(self.z_sampler, n_topics)

    # ------------------------------------------------------------ inputs
    # (:mod:`dolda.models.dolda.design_stage`: the texts, covariates and word covariates as the
    # chain and prediction need them)
    def _make_corpus(self, texts, fit: bool):
        return _dolda_inputs.make_corpus(self, texts, fit)

    def _covariates(self, X, n_docs: int, fit: bool):
        return _dolda_inputs.covariate_design(self, X, n_docs, fit)

    def _add_word_features(self, corpus, Xd, names, p=None, y_index=None):
        return _dolda_inputs.add_word_features(self, corpus, Xd, names, p, y_index)

    def _design(self, Xd, n_topics, p, sparse_input):
        return _dolda_inputs.chain_design(self, Xd, n_topics, p, sparse_input)

    # --------------------------------------------------------------- fit
    @obeys_n_jobs
    @legacy_covariates_keyword
    def fit(self, X, y, covariates=None, resume=None, sample_weight=None):
        """Fit DOLDA to documents ``X`` with labels ``y`` and optional covariates.

        Parameters
        ----------
        X : iterable of str, pandas Series, token lists, Corpus, or DataFrame (D,)
            The documents; a DataFrame holds them in ``text_column`` and the
            covariates in its other columns (or ``covariate_columns``).
        y : array-like (D,)
            Class labels (str, int, bool, ...): ``classes_`` keeps their dtype.
        covariates : array-like, pandas DataFrame, sparse matrix or None (D, P)
            Extra covariates beside non-DataFrame documents; categorical
            DataFrame columns are one-hot encoded (``"director=Jackie Chan"``).
            The former keyword ``X=`` still works, with a DeprecationWarning.
        resume : path or None
            A checkpoint directory written by an interrupted fit with the same
            data and parameters: the chain continues where it stopped and ends
            exactly as an uninterrupted run with the same seed.  A checkpoint
            of a *finished* fit can be extended: with a larger ``n_iter`` the
            chain continues and ends exactly where one run of ``n_iter``
            iterations would (:mod:`dolda.models.dolda.extend`; extend by at least
            ``phi_draws`` iterations).
        sample_weight : None
            Only None (or all ones) is accepted.  A weight ``w_d`` would mean
            "document d counted w_d times": its probit likelihood raised to
            ``w_d`` in the a/eta-steps and its tokens counted ``w_d`` times in
            the z/Phi-steps.  The probit data augmentation has no exact form
            for a non-integer power, and an integer weight is exactly a
            repeated row, so repeat the documents instead.

        Returns
        -------
        self
        """
        p = self._check_params()
        if sample_weight is not None and not np.all(np.asarray(sample_weight) == 1):
            raise ValueError("DOLDA does not support sample_weight: the probit augmentation "
                             "has no exact weighted form; repeat documents for integer weights")
        # the stages, in order, each a module of dolda.models.dolda (docs/ARCHITECTURE.md)
        design = fit_design(self, X, y, covariates, p)  # inputs -> the chain's design
        if self._two_step:
            fit_two_step(self, design, p)  # LDA, then DOProbit on its topic proportions
            _summary.fit_calibration_map(self, design.corpus, design.Xd, design.y_index,
                                         design.held)
            return self
        chains = run_chains(self, design, p, resume)  # the chain(s)
        summarize(self, chains, design, p)  # pooled draws, calibration map, convergence
        return self

    # ------------------------------------------- the stages, one method each
    # (kept for callers and profilers: fit calls the stage modules themselves)
    def _scale_block_of_columns(self, all_blocks=False):
        """The global-scale block of every column (None: one shared scale); ``all_blocks``:
        the names of the blocks present instead."""
        return _dolda_inputs.fitted_scale_blocks(self, all_blocks)

    def _report_convergence(self):
        """``convergence_`` (:func:`dolda.models.dolda.summary.report_convergence`), logged."""
        _summary.report_convergence(self)

    def _fit_proba_stacking(self, corpus, Xd, y_index, held=None):
        """``stacking_``, the calibration map
        (:func:`dolda.models.dolda.summary.fit_calibration_map`)."""
        _summary.fit_calibration_map(self, corpus, Xd, y_index, held)

    def _combine_chains(self, chains, n_iter):
        """Align every chain's topics to chain 0 (label switching), then pool the draws
        (:func:`dolda.models.dolda.summary.combine_chains`)."""
        combine_chains(self, chains, n_iter)

    def _run_chain(self, data, config, p, seed, resume, checkpoint, chain):
        """Run (or resume) one chain (:func:`dolda.models.dolda.chain_stage.run_chain`)."""
        return run_chain(self, data, config, p, seed, resume, checkpoint, chain)

    def _set_loglik(self, loglik):
        """``loglik`` (C, n_iter, 2) or (n_iter, 2) -> DataFrame indexed by (chain, iteration)."""
        _state.set_loglik(self, loglik)

    def _finish(self, eta_draws):
        """``coef_``: the posterior mean of ``eta_draws``."""
        _state.set_coef(self, eta_draws)

    # ------------------------------------------------------ prediction
    @obeys_n_jobs
    def transform(self, X):
        """Topic proportions of new documents (paper section 3.3), shape (D, K).

        The topic indicators are sampled with Phi fixed at ``phi_`` and no
        supervision, ``p(z = k) ∝ phibar_{k,w} (n_{dk} + alpha)``, for
        ``predict_sweeps`` sweeps; the proportions ``zbar_d = n_{d,.} / N_d`` (what the
        regression was fitted on) are estimated over the sweeps after ``predict_burn_in``
        by their Rao-Blackwellised average (each token's conditional, not its draw,
        counted: the same mean, less Monte Carlo noise).  A document with no
        known word gets zeros.  ``X`` is as in :meth:`fit` (a DataFrame's
        covariate columns are not used here); the output columns are
        :meth:`get_feature_names_out` (``dolda0`` ...), and
        ``set_output(transform="pandas")`` gives a DataFrame.
        """
        check_is_fitted(self, "phi_")
        texts, _ = split_documents(X, self.text_column, [], None)
        return self._topic_proportions(self._make_corpus(texts, fit=False))

    def _topic_proportions(self, corpus, out=None):
        """:meth:`transform` of a :class:`Corpus`, written into ``out`` (D, K) when given
        (e.g. the topic columns of a regressor matrix: no D x K copy;
        :func:`dolda.models.dolda.proportions.topic_proportions`)."""
        return _proportions.topic_proportions(self, corpus, out)

    def _regressor_matrix(self, corpus, Xd):
        """``U = [Xd, zbar]`` (D, P) of ``corpus``
        (:func:`dolda.models.dolda.proportions.regressor_matrix`)."""
        return _proportions.regressor_matrix(self, corpus, Xd)

    @property
    def _n_features_out(self):
        """``K``: the columns of :meth:`transform` (for ``get_feature_names_out``)."""
        return self.phi_.shape[0]

    def _alpha(self):
        """The alpha of the fitted chain (learned with ``alpha="auto"``): a float or (K,)."""
        return _state.fitted_alpha(self)

    def _alpha_mode(self):
        """How alpha is learned: ``"asymmetric"`` (``"auto"``), ``"symmetric"``, or False."""
        return alpha_mode(self.alpha)

    def _regressors(self, X, covariates=None):
        """``u_d = [1, x_d, words_d, zbar_d]`` (D, P) of documents ``X`` (as in :meth:`fit`;
        :func:`dolda.models.dolda.proportions.document_regressors`)."""
        return _proportions.document_regressors(self, X, covariates)

    def _class_probabilities(self, U):
        """Class probabilities (D, L) of regressor rows ``U`` (D, P) by the rule ``proba``."""
        check_choice(self.proba, "proba", PROBA_RULES)
        return calibration.class_probabilities(U, self.eta_draws_, self.proba,
                                               getattr(self, "stacking_", None))

    @obeys_n_jobs
    @legacy_covariates_keyword
    def predict_proba(self, X, covariates=None):
        """Class probabilities by the rule ``proba`` (default calibrated), shape (D, L).

        With several chains: the mixture of the chains' predictive distributions, each under
        its own Phi and draws, with the chains' stacking weights ``chain_weights_``
        (:mod:`dolda.models.dolda.modes`).

        ``X`` and ``covariates`` are as in :meth:`fit`.  See
        :mod:`dolda.posterior.calibration` and docs/CALIBRATION.md for the rules.
        """
        check_is_fitted(self, "eta_draws_")
        if _modes.is_mixture(self):  # several chains: the mixture of their predictions
            check_choice(self.proba, "proba", PROBA_RULES)
            return _modes.mixture_probabilities(self, X, covariates)
        return self._class_probabilities(self._regressors(X, covariates))

    @legacy_covariates_keyword
    def predict_log_proba(self, X, covariates=None):
        """Logarithm of :meth:`predict_proba`, shape (D, L)."""
        return np.log(self.predict_proba(X, covariates))

    @legacy_covariates_keyword
    def decision_function(self, X, covariates=None):
        """Scores whose argmax (sign, for two classes) is :meth:`predict`.

        Derived from :meth:`predict_proba`: two classes give the log-odds
        ``log p_1 - log p_0``, shape (D,); more classes the centred
        log-probabilities ``log p_l - mean_j log p_j``, shape (D, L), whose
        softmax is :meth:`predict_proba`.
        """
        return log_odds_scores(self.predict_proba(X, covariates))

    @obeys_n_jobs
    @legacy_covariates_keyword
    def predict(self, X, covariates=None):
        """The most probable class of every document, shape (D,)."""
        proba = self.predict_proba(X, covariates)
        return self.classes_[np.argmax(proba, axis=1)]

    @obeys_n_jobs
    @legacy_covariates_keyword
    def score(self, X, y, covariates=None, sample_weight=None):
        """Accuracy of :meth:`predict` on documents ``X`` with true labels ``y``."""
        return float(accuracy_score(y, self.predict(X, covariates), sample_weight=sample_weight))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # X is text, as for CountVectorizer: documents (or a DataFrame with a text
        # column), never a numeric 2-D array, so the numeric estimator checks do not apply
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.input_tags.sparse = True  # a document-term matrix of counts (vocabulary=)
        return tags



class TwoStepDOLDA(DOLDA):
    """The paper's comparison model: LDA first, then the DO probit on its topic proportions.

    The same parameters, attributes and methods as :class:`DOLDA`; the chain of the joint
    sampler is replaced by :class:`dolda.LDA`'s chain and a :class:`dolda.DOProbit` fitted on
    the proportions that prediction computes (``alpha="auto"`` and ``beta="auto"`` use their
    starting values, and ``topic_init`` does not apply).
    """

    _two_step = True
    #: Saved as a DOLDA file whose parameters say ``two_step``: it loads as a TwoStepDOLDA.
    _model_type = "dolda.DOLDA"


DOLDA._two_step_variant = TwoStepDOLDA  # what a file or the CLI's --two-step builds
