"""DOLDA: Diagonal Orthant Latent Dirichlet Allocation (the supervised topic model).

LDA topics joined with a multi-class Diagonal Orthant probit regression on the
documents' empirical topic proportions (and optional covariates), with a
Horseshoe (or normal) prior per class, fitted by the partially collapsed
Gibbs sampler of Magnusson, Jonsson & Villani (paper sections 2-3).
"""

from __future__ import annotations

import logging

import numpy as np
from sklearn.base import (
    BaseEstimator,
    ClassifierMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.metrics import accuracy_score
from sklearn.utils.validation import check_is_fitted

from ...design.inputs import legacy_covariates_keyword, split_documents
from ...posterior import calibration
from ...posterior.scores import log_odds_scores
from ...sampler.rng import chain_seed, seed_from  # noqa: F401 (re-exported)
from ...sampler.threads import obeys_n_jobs
from ...utils.validation import check_choice
from . import inputs as _dolda_inputs
from . import proportions as _proportions
from . import state as _state
from . import summary as _summary
from .chain import (  # noqa: F401 (MH_MIN_TOPICS, FitInterrupted re-exported)
    MH_MIN_TOPICS,
    FitInterrupted,
    resolved_z_sampler,
    run_chain,
    run_chains,
)
from .inputs import INTERCEPT, SPARSE_CHOLESKY_MAX_COLUMNS, fit_design  # noqa: F401
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
from .two_step import fit_two_step

logger = logging.getLogger(__name__)


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
        ``K``.
    prior : {"horseshoe", "normal"}, default="horseshoe"
    alpha : float, array-like (K,), "auto" or "auto_symmetric", default=0.01
        Dirichlet prior of theta (the paper's 0.01): symmetric, or one
        ``alpha_k > 0`` per topic.  ``"auto"``: an asymmetric ``alpha`` (K,)
        learned from the data during the burn-in (Minka's fixed point for the
        Dirichlet-multinomial every 10 iterations, as MALLET's hyperparameter
        optimisation; Wallach et al. 2009), starting from 0.1, then kept fixed.
        ``"auto_symmetric"``: the same for one symmetric value.  The values used
        are ``alpha_`` (a float, or an array (K,)).
    beta : float or "auto", default=0.01
        Symmetric Dirichlet prior of Phi; ``"auto"``: learned as alpha (symmetric),
        starting from 0.01; the value used is ``beta_``.  The two-step model uses
        the starting values.
    prior_variance : float, default=100.0
        ``c``: variance of the intercept's prior (and of all coefficients
        under ``prior="normal"``).
    n_iter : int, default=500
        Gibbs iterations, burn-in included.
    burn_in : int or None, default=None
        Iterations discarded (None: half of ``n_iter``).
    thin : int, default=1
        Keep every ``thin``-th draw of eta after the burn-in.
    slab_scale : float or None, default=2.5
        The Horseshoe times a Gaussian slab ``N(0, s^2)`` on the shrunk coefficients of
        ``slab_blocks`` ("all" or some of "covariates", "words", "topics"; by default not
        the topics), so rare words cannot wander (README); None: the paper's Horseshoe.
    word_prior : {"horseshoe", "normal", "both"}, default="horseshoe"
        The words' prior: the Horseshoe (a few decisive words per class);
        ``N(0, word_prior_variance)`` on every word coefficient (a Bayesian ridge; the
        words get a scale block of their own held there, and no slab), for many words that
        each lean a little (pair it with ``word_features="tfidf"``); or both: the
        ``n_words`` words under the Horseshoe plus every word's tf-idf (``"dense=<w>"``
        columns) under the Gaussian.  README, "Word priors", has what each gains where.
    word_prior_variance : float, default=1.0
        ``v`` of the Gaussian words (``word_prior`` "normal" or "both"; unused otherwise).
    global_scales : {"shared", "block"}, default="shared"
        The Horseshoe's global scale: one ``tau_l`` per class over topics, covariates
        and words (the paper's), or one per class and block of columns present
        (``"block"``: covariates, words, topics; ``scale_blocks_`` names them and
        ``tau_draws_`` is then (S, L, G)), so that thousands of word columns do not set
        the shrinkage of the K topics (issue 32; ``benchmarks/results/block_scales.md``).
    phi_sampler : {"exact", "polya"}, default="exact"
        The Phi step: ``"exact"`` draws ``phi_k ~ Dir(beta + n_k)`` (O(K V));
        ``"polya"`` the sparse Pólya-urn approximation of Terenin et al.
        (2019), O(non-zero counts + K V beta), stored sparse and read by the
        MH z-step through per-word alias tables over the non-zeros.
    loglik_every : int, default=1
        Compute the two log-likelihood parts (``loglik_``) only at iterations
        ``t`` with ``(t + 1) % loglik_every == 0`` (NaN elsewhere).
    z_sampler : {"auto", "exact", "mh", "cycle"}, default="auto"
        ``"exact"``: Gibbs draw from the full supervised conditional, O(K) per
        token with the cached update.  ``"mh"``: Metropolis-Hastings with the
        sparse LDA proposal, O(K_d + L) per token.  ``"cycle"``: cycle
        Metropolis-Hastings (LightLDA's alternating word and document proposals,
        :mod:`dolda.sampler.cycle`), O(L) per token, exact Phi only; on 20
        Newsgroups it mixes worse per second than "mh" at K = 100 and 1000
        (``benchmarks/results/z_cycle.md``), so "auto" never picks it.  ``"auto"``: "mh" from
        ``K >= 50`` on (both sample the exact conditional; the faster one).
    two_step : bool, default=False
        Fit LDA first and the DO probit on its topic proportions afterwards
        (the paper's comparison model) instead of the joint sampler.
    predict_sweeps : int, default=50
        Sweeps of the unsupervised z-sampler for a new document (paper section 3.3); the
        topic proportions average the conditionals of the kept sweeps (Rao-Blackwellised).
        More sweeps buy a little accuracy at proportional cost: on 20 Newsgroups (K = 50),
        200 instead of 50 gave +0.4 points of accuracy and -0.025 log loss, 20 gave -0.6
        points (``experiments/results/predict_estimator*.json``).
    predict_burn_in : int or None, default=None
        Sweeps discarded before averaging (None: half of ``predict_sweeps``).
    phi_draws : int, default=20
        ``Phi`` used for prediction is the posterior mean estimated from the last
        ``phi_draws`` iterations: the mean of ``E[phi_k | z] = (beta + n_k) / (V beta + n_k.)``
        (Rao-Blackwellised; kept sparse, :mod:`dolda.sampler.phi_mean`).
    checkpoint : path or None, default=None
        Directory where the chain is saved every ``checkpoint_every``
        iterations and on Ctrl-C; continue with ``fit(..., resume=checkpoint)``.
    checkpoint_every : int, default=100
    init_iter : int, default=0
        Iterations of unsupervised LDA (:class:`dolda.LDA`'s sweeps, on ``n_jobs``
        threads) run before the supervised chain, which starts from their topics (never
        kept as draws; ``n_iter`` still counts the supervised chain).  0: the random
        start.  With ``topic_init="nmf"`` they continue from the NMF start.
    topic_init : {"random", "nmf"}, default="random"
        ``"random"``: uniform on the chain's seed.  ``"nmf"``: one deterministic start, the
        same for every seed, chain and ``n_jobs`` (:mod:`dolda.sampler.topic_start`): the
        explanation then reproduces *within the mode it leads to*, and identical starts
        weaken R-hat across chains.  The posterior is unchanged; ignored with
        ``two_step``.  Costs about 6 s at K = 20, 70 s at K = 100 on 20 Newsgroups.
    n_chains : int, default=1
        Independent chains (run one after the other, each on all threads).
        Their topics are aligned to chain 0 by matching Phi (Hungarian
        assignment on Hellinger distance) before the draws are pooled; see
        :meth:`to_inference_data` for R-hat and ESS.
    rare_share : float, default=0.01
        Share of tokens made of the rarest word types that are removed (paper: 1%).
    min_df, max_df : int or float
        Document-frequency bounds of the vocabulary.
    stop_words : "english", None, list of str or path, default="english"
        Words removed before counting: scikit-learn's English list, none, the
        given words, or the words of a text file (one per line; ``#`` starts
        a comment) -- e.g. stack-trace vocabulary of bug reports.
    token_pattern : str or None, default=None
        Regular expression of a token (None: :data:`dolda.design.corpus.TOKEN_PATTERN`,
        words of two or more characters starting with a letter).
    n_words : int, "auto" or "all", default="auto"
        Words as covariates: the counts of the ``n_words`` vocabulary words of
        highest document frequency enter the regression beside the topics as
        sparse covariates named ``"word=<w>"``, with the same prior as the
        topics (the Horseshoe keeps the few decisive ones), see
        :mod:`dolda.design.word_features`.  0: topics (and ``X``) only, the paper's
        model.  ``"auto"``: one word per two training documents, at least
        2,000 and at most 5,000 (:func:`dolda.design.word_features.resolve_n_words`;
        the measurements behind it are in the README); ``"all"``: every word of the
        kept vocabulary (tens of thousands of columns; the word block of the kept draws is
        stored compactly, :mod:`dolda.models.dolda.kept`); the words used are
        ``word_features_.words_``.
    word_features : {"log", "binary", "tfidf"}, default="log"
        How a word's count enters: ``log(1 + n_{d,w})``, an indicator, or
        l2-normalised sublinear tf-idf (better on 20 Newsgroups stripped, mixed on
        the bug reports over two seeds: see the README).
    word_selection : {"df", "chi2"}, default="df"
        Which ``n_words`` words: highest document frequency, or most associated
        with the class on the training documents (chi-squared of presence
        against label, words in 3 or more documents), see
        :mod:`dolda.design.word_features`.
    eta_sampler : {"auto", "gibbs", "cholesky", "cg", "bcm"}, default="auto"
        The eta-step.  ``"gibbs"`` (``"auto"`` with word covariates and more than
        :data:`dolda.models.dolda.inputs.SPARSE_CHOLESKY_MAX_COLUMNS` columns): one exact
        blocked-Gibbs scan per iteration, the intercept, covariates and topics
        drawn jointly given the word coefficients, then every word coefficient
        from its own conditional with a kept residual, O(nnz) per class
        (:mod:`dolda.sampler.word_step`; ``benchmarks/results/word_step.md``).
        ``"cholesky"``: dense ``[1, X]`` and a P x P
        factorisation per class (tens to hundreds of covariates).
        ``"cg"`` / ``"bcm"``: ``X`` kept sparse (CSR) end to end and eta drawn
        by perturbation-optimisation with conjugate gradients or by
        Bhattacharya et al.'s sampler (:mod:`dolda.sampler.sparse_eta`), for
        thousands of word or one-hot columns.  ``"auto"``:
        :func:`dolda.sampler.probit.choose_eta_sampler` on the shape of ``U``.
    covariate_min_count : int, default=1
        With a DataFrame ``X``: levels of a categorical column seen fewer than
        this many times in ``fit`` are pooled into one ``"column=other"``
        indicator (and so are levels first seen at prediction), see
        :class:`dolda.design.covariates.CovariateEncoder`.  1: every level its own column.
    text_column : hashable, default="text"
        When ``X`` is a DataFrame: the column holding the documents.
    vocabulary : sequence of str or None, default=None
        When ``X`` is a document-term matrix of counts (sparse, numeric array, or numeric
        DataFrame without ``text_column``; e.g. ``make_pipeline(CountVectorizer(),
        DOLDA())``): the words of its columns, e.g. ``vectorizer.get_feature_names_out()``.
        None: a DataFrame's column names, else ``x0, x1, ...`` (as :class:`dolda.LDA`).
        The vocabulary options (``stop_words``, ``min_df`` ...) do not apply to a matrix.
    covariate_columns : list or None, default=None
        When ``X`` is a DataFrame: its covariate columns (None: every column
        but ``text_column``; ``[]``: none).  With a DataFrame ``X``,
        ``fit(df, y)``, ``predict(df)``, ``score(df, y)`` carry the covariates
        through Pipeline, GridSearchCV and cross_val_score.
    random_state : int, numpy Generator or None
        Seed: the same int gives the same chain for any ``n_jobs``.
    n_jobs : int or None
        Threads for the parallel kernels (None or -1: every CPU the process may run on,
        its affinity mask, e.g. ``taskset`` or a container's cpuset).  Waiting threads
        spin briefly, then sleep (``import dolda`` sets ``GOMP_SPINCOUNT=10000`` unless a
        policy is set), so on a busy machine 2 threads are not slower than 1.
    progress : bool, default=True
        Show a progress bar with the log-likelihood and tokens per second.
    backend : {"local", "dask"}, default="local"
        Where the document shards are sampled: ``"local"`` in this process
        (numba threads), ``"dask"`` on the workers of ``client`` (see
        ``docs/DISTRIBUTED.md``).  The same seed and ``n_shards`` give the same
        chain on both, for any number of threads or workers.
    client : distributed.Client or None, default=None
        The Dask client for ``backend="dask"`` (None: the current default
        client).  dolda never starts or stops clusters.
    n_shards : int or None, default=None
        Number of contiguous document shards; None: one per about 10^6 tokens
        (a function of the data alone, never of the number of workers).
    snapshot_every : int, default=10
        ``backend="dask"``: iterations between the copies of z kept on the
        driver; after a lost worker at most this many iterations are replayed.
    phi_transport : {"auto", "recipe", "dense"}, default="auto"
        ``backend="dask"``: what carries the exact Phi to the workers each
        iteration.  ``"recipe"``: the non-zero topic-word counts it was drawn from,
        and every worker repeats the draw (15x fewer bytes on 20 Newsgroups at
        K = 100, for a draw on every worker); ``"dense"``: Phi itself (V x K
        float32), drawn once on the driver, which suits many single-threaded workers
        on a fast network; ``"auto"``: whichever is smaller.  The chain is the
        same either way (``docs/DISTRIBUTED.md``).
    proba : {"calibrated", "ovr", "do"}, default="calibrated"
        How :meth:`predict_proba` turns the one-vs-rest linear predictors
        ``mu_l = u . eta_l`` into class probabilities (``docs/CALIBRATION.md``):
        ``"calibrated"``, a multinomial-logit map of ``mu`` (or of
        ``[mu, log F(mu)]``, whichever scores better out of sample) averaged over
        the draws, fitted at the end of ``fit`` on the training documents'
        regressors as prediction computes them (:meth:`transform`), leave-one-out
        over the draws (``stacking_``); ``"ovr"``, normalised one-vs-rest probabilities;
        ``"do"``, the paper's DO formula (overconfident).  Switch with
        ``set_params(proba=...)`` without refitting.
    calibration_holdout : float or None, default=None
        None: the ``"calibrated"`` map is fitted on leave-one-out predictors of every
        training row.  A share ``f`` in (0, 0.5]: the last ``round(f D)`` training rows, in
        the order given, are kept out of the chain and the map is fitted on their
        out-of-sample predictors.  For data in time order (bug reports by filing date), where
        new documents drift from the old (measured in ``docs/CALIBRATION.md``,
        "Time-ordered data").  The chain sees ``1 - f`` of the rows; classes only in the
        held-out rows are not learned.

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

    def __init__(self, n_topics=20, prior="horseshoe", alpha=0.01, beta=0.01,
                 prior_variance=100.0, n_iter=500, burn_in=None, thin=1, z_sampler="auto",
                 two_step=False, predict_sweeps=50, predict_burn_in=None, phi_draws=20,
                 checkpoint=None, checkpoint_every=100, rare_share=0.01, min_df=1,
                 max_df=1.0, covariate_min_count=1, n_chains=1, random_state=None,
                 stop_words="english", token_pattern=None, n_words="auto", word_features="log",
                 word_selection="df", eta_sampler="auto",
                 n_jobs=None, progress=True,
                 text_column="text", covariate_columns=None,
                 backend="local", client=None, n_shards=None, snapshot_every=10,
                 proba="calibrated", phi_sampler="exact", loglik_every=1,
                 global_scales="shared", init_iter=0, topic_init="random",
                 calibration_holdout=None, phi_transport="auto", vocabulary=None,
                 slab_scale=2.5, slab_blocks=("covariates", "words"), word_prior="horseshoe",
                 word_prior_variance=1.0):
        self.vocabulary = vocabulary
        self.word_prior, self.word_prior_variance = word_prior, word_prior_variance
        self.slab_scale, self.slab_blocks = slab_scale, slab_blocks
        self.init_iter, self.topic_init = init_iter, topic_init
        self.calibration_holdout = calibration_holdout
        self.phi_sampler, self.global_scales = phi_sampler, global_scales
        self.loglik_every = loglik_every
        self.n_topics, self.prior, self.alpha, self.beta = n_topics, prior, alpha, beta
        self.prior_variance = prior_variance
        self.n_iter, self.burn_in, self.thin = n_iter, burn_in, thin
        self.z_sampler, self.two_step = z_sampler, two_step
        self.predict_sweeps, self.predict_burn_in = predict_sweeps, predict_burn_in
        self.phi_draws = phi_draws
        self.checkpoint, self.checkpoint_every = checkpoint, checkpoint_every
        self.rare_share, self.min_df, self.max_df = rare_share, min_df, max_df
        self.covariate_min_count = covariate_min_count
        self.text_column, self.covariate_columns = text_column, covariate_columns
        self.n_chains, self.random_state = n_chains, random_state
        self.n_jobs, self.progress = n_jobs, progress
        self.backend, self.client, self.n_shards = backend, client, n_shards
        self.snapshot_every, self.phi_transport = snapshot_every, phi_transport
        self.stop_words, self.token_pattern = stop_words, token_pattern
        self.n_words, self.word_features = n_words, word_features
        self.word_selection, self.eta_sampler = word_selection, eta_sampler
        self.proba = proba

    # ------------------------------------------------------------ checks
    def _check_params(self):
        """The checked parameters (:func:`dolda.models.dolda.params.check_params`)."""
        return check_params(self)

    def _resolved_z_sampler(self, n_topics):
        return resolved_z_sampler(self.z_sampler, n_topics)

    # ------------------------------------------------------------ inputs
    # (:mod:`dolda.models.dolda.inputs`: the texts, covariates and word covariates as the chain
    # and prediction need them)
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
        if self.two_step:
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
        """Run (or resume) one chain (:func:`dolda.models.dolda.chain.run_chain`)."""
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

        ``X`` and ``covariates`` are as in :meth:`fit`.  See
        :mod:`dolda.posterior.calibration` and docs/CALIBRATION.md for the rules.
        """
        check_is_fitted(self, "eta_draws_")
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

