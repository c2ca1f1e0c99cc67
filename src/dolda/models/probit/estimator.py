"""DOProbit: Bayesian multi-class Diagonal Orthant probit regression.

A reference-class-free multi-class probit (Johndrow, Lum & Dunson 2013) with
one coefficient vector per class and either a Horseshoe prior (one global
``tau_l`` per class, one local ``lambda_{lp}`` per class and coefficient) or a
plain normal prior, fitted by Gibbs sampling.  This is the supervised block of
DOLDA (paper section 3.1, steps 1-4), usable on its own.
"""

from __future__ import annotations

import logging
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from ...posterior import calibration
from ...posterior.crossfit import check_fold_rows, check_folds, crossfit_stacking
from ...sampler import probit_blocks as gibbs
from ...sampler.rng import chain_seed, seed_from
from ...utils.fitted import NotFittedAttributes
from ...sampler.threads import obeys_n_jobs
from ...utils.draws import draw_mean, draw_quantiles
from ...utils.validation import (
    check_burn_in,
    check_choice,
    check_covariate_scale,
    check_labels,
    check_n_jobs,
    check_positive_float,
    check_positive_int,
    one_line_errors,
)
from .probit_chain import ChainSettings, run_chain
from ...utils.labels import encode_labels
from ...posterior.scores import (  # noqa: F401 (their old home)
    average_do_probabilities,
    check_do_size,
    coefficient_prior_sd,
    fit_proba_stacking,
    log_odds_scores,
    proba_stacking_draws,
)

logger = logging.getLogger(__name__)

PRIORS = gibbs.PRIORS
LIKELIHOODS = ("ovr", "do")

#: Below this share of accepted Langevin moves a ``likelihood="do"`` fit warns.
LOW_ACCEPTANCE = 0.02
PROBA_RULES = calibration.PROBA_RULES
ETA_SAMPLERS = ("auto",) + gibbs.ETA_SAMPLERS


class DOProbit(NotFittedAttributes, ClassifierMixin, BaseEstimator):
    """Multi-class Diagonal Orthant probit regression with a Horseshoe or normal prior.

    For class ``l`` and row ``x_d`` the latent utility is
    ``a_{dl} ~ N(x_d . eta_l + eta_{l0}, 1)``; the class is the single positive
    utility.  No class is a reference class: every class has its own
    coefficients, and under the Horseshoe prior each class keeps only the
    covariates that matter for it.

    Parameters
    ----------
    prior : {"horseshoe", "normal"}, default="horseshoe"
        ``"horseshoe"``: ``eta_{lp} ~ N(0, tau_l^2 lambda_{lp}^2)`` with
        ``tau_l, lambda_{lp} ~ C+(0, 1)``; the intercept gets N(0, prior_variance).
        ``"normal"``: N(0, prior_variance) on every coefficient.
    n_iter : int, default=2000
        Gibbs iterations in all, burn-in included.
    burn_in : int or None, default=None
        Iterations discarded at the start; None means ``n_iter // 2``.
    thin : int, default=1
        Keep every ``thin``-th draw after the burn-in.
    prior_variance : float, default=100.0
        ``c``, the variance of the normal prior (and of the intercept's prior).
    fit_intercept : bool, default=True
        Add an intercept ``eta_{l0}`` per class.
    random_state : int, numpy Generator or None, default=None
        Seed of the chain.  The same int gives the same draws, whatever ``n_jobs``.
    n_jobs : int or None, default=None
        Threads for the parallel steps (None or -1: all cores).
    progress : bool, default=False
        Show a tqdm progress bar during ``fit``.
    n_chains : int, default=1
        Independent chains, run one after the other with the seeds
        ``dolda.sampler.rng.chain_seed(seed, c)`` (chain 0 is the single-chain
        fit); their draws are pooled chain after chain.  R-hat and ESS:
        :meth:`to_inference_data`.
    eta_sampler : {"auto", "cholesky", "bcm", "cg"}, default="auto"
        How each ``eta_l ~ N(Q_l^{-1} U^T a_l, Q_l^{-1})`` is drawn.
        ``"cholesky"``: dense Cholesky of the P x P ``Q_l`` (O(P^3) per class);
        ``"bcm"``: Bhattacharya-Chakraborty-Mallick (2016), O(D^2 P), for
        ``P >> D``; ``"cg"``: perturbation-optimisation solved by
        Jacobi-preconditioned conjugate gradients with sparse mat-vecs,
        O(nnz(X)) per CG iteration, exact to a relative residual of 1e-8.
        ``"auto"`` keeps Cholesky up to 500 columns of a sparse X (CG beyond)
        and, for a dense X, up to 1000 columns, then BCM when there are at most
        2000 rows and twice as many columns as rows, Cholesky up to 8000
        columns, CG beyond (see :func:`dolda.sampler.probit_blocks.choose_eta_sampler`
        and ``benchmarks/results/eta_scaling.md``).  All are exact.
    proba : {"calibrated", "ovr", "do"}, default="calibrated"
        How :meth:`predict_proba` turns the L one-vs-rest linear predictors
        ``mu_l = u . eta_l`` into class probabilities (``docs/CALIBRATION.md``).
        ``"calibrated"``: a multinomial-logit map of ``mu`` (or of
        ``[mu, log F(mu)]``, whichever scores better out of sample) averaged over
        the draws, fitted in ``fit`` on the training rows' leave-one-out ``mu``
        (``stacking_``); ``"ovr"``: ``F(mu_l) / sum_j F(mu_j)`` averaged over
        the draws; ``"do"``: the paper's DO formula averaged over the draws
        (overconfident: the sampler fits one-vs-rest probits, and the DO
        formula sharpens them a second time).  The class predicted by
        ``"ovr"`` and ``"do"`` is the same; all three are available after
        one fit (``set_params(proba=...)``).
    calibration_folds : int or None, default=None
        None: the ``"calibrated"`` map is fitted on leave-one-out predictors of the training
        rows (importance sampling over the chain's draws; no extra cost).  An int ``K`` in
        [2, 20]: it is fitted on cross-fitted predictors instead: the training rows are split
        into ``K`` folds stratified by class (seeded by ``random_state``), a chain (``n_chains``
        chains) runs on the rows outside each fold, and each fold's rows are predicted by
        their chain.  Costs ``K`` extra fits (the folds' draws are dropped once used).  For
        many one-hot levels seen in a few rows each, where leave-one-out cannot leave a row
        out of its levels' coefficients and the default map is overconfident (films
        metadata: ``docs/CALIBRATION.md``, "Cross-fitted map").
    likelihood : {"ovr", "do"}, default="ovr"
        What the chain conditions on.  ``"ovr"``: the paper's Gibbs sampler, whose
        posterior is that of ``L`` one-vs-rest binary probits (DESIGN.md section 2);
        any prior and size.  ``"do"``: the Diagonal Orthant likelihood itself, normaliser
        included, by Metropolis-adjusted Langevin moves preconditioned by the Fisher
        information at the posterior mode (:mod:`dolda.sampler.do_posterior`); at most
        2000 coefficients (classes x columns).  With it the ``"calibrated"`` rule may keep the
        DO formula itself (the model's posterior predictive) when it scores better out of
        sample than a fitted map; on labels from the DO model it halves the excess log loss
        (``docs/CALIBRATION.md``, "The DO likelihood").

    Attributes
    ----------
    classes_ : ndarray (L,)
        The class labels, sorted.
    coef_ : ndarray (L, n_features)
        Posterior mean of ``eta_l`` (without the intercept).
    intercept_ : ndarray (L,)
        Posterior mean of the intercepts (zeros when ``fit_intercept=False``).
    eta_draws_ : float32 ndarray (S, L, P)
        Kept draws of eta; column 0 is the intercept when ``fit_intercept``.  The
        chain runs in float64; its kept draws are rounded to float32 (``dolda.utils.draws``;
        a model loaded from an older file with float64 draws keeps them as saved).
    tau_draws_ : float32 ndarray (S, L) or None
        Kept draws of the global scale ``tau_l`` (Horseshoe only).
    lambda_draws_ : float32 ndarray (S, L, n_features) or None
        Kept draws of the local scales ``lambda_{lp}`` (Horseshoe only).
    loglik_ : ndarray (n_iter,)
        DO probit log-likelihood of the training data at every iteration.
    n_chains_ : int
        ``C``: the draw arrays hold ``C * S`` draws and ``loglik_`` holds
        ``C * n_iter`` values, chain after chain.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when X was a DataFrame with string column names.
    eta_sampler_ : str
        The eta sampler used (``"auto"`` resolved; ``"mala"`` with ``likelihood="do"``).
    stacking_ : ndarray (L, L + 1), (L, 2 L + 1) or (L, 3 L + 1)
        The ``proba="calibrated"`` map ``[b, W]``: ``P(y = l) = softmax(b + W f(mu))_l``,
        ``f(mu) = mu`` or ``[mu, log F(mu)]``, whichever scored better out of sample
        (``dolda.posterior.calibration.stacking_map(stacking_)`` tells which).

    X may be a dense array, a numeric DataFrame or a scipy.sparse CSR matrix
    (e.g. from :class:`dolda.design.covariates.CovariateEncoder`); a sparse X stays
    sparse, the intercept included.

    Notes
    -----
    The Gibbs sampler targets the one-vs-rest augmented posterior of Johndrow
    et al. (2013); the DO normalisation enters through ``predict_proba``, or, with
    ``likelihood="do"``, the chain itself.
    """

    def __init__(self, *, prior="horseshoe", n_iter=2000, burn_in=None, thin=1,
                 prior_variance=100.0, fit_intercept=True, random_state=None,
                 n_jobs=None, progress=False, eta_sampler="auto", n_chains=1,
                 proba="calibrated", calibration_folds=None, likelihood="ovr"):
        self.prior = prior
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.prior_variance = prior_variance
        self.fit_intercept = fit_intercept
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.progress = progress
        self.n_chains = n_chains
        self.eta_sampler = eta_sampler
        self.proba = proba
        self.calibration_folds = calibration_folds
        self.likelihood = likelihood

    # ------------------------------------------------------------------ fit
    def _check_params(self):
        check_choice(self.prior, "prior", PRIORS)
        check_choice(self.eta_sampler, "eta_sampler", ETA_SAMPLERS)
        check_choice(self.proba, "proba", PROBA_RULES)
        check_choice(self.likelihood, "likelihood", LIKELIHOODS)
        check_folds(self.calibration_folds)
        n_iter = check_positive_int(self.n_iter, "n_iter")
        burn_in = check_burn_in(self.burn_in, n_iter)
        thin = check_positive_int(self.thin, "thin")
        variance = check_positive_float(self.prior_variance, "prior_variance")
        return n_iter, burn_in, thin, variance, check_n_jobs(self.n_jobs)

    def _chain_settings(self, n_iter, burn_in, thin, variance, n_jobs):
        return ChainSettings(self.prior == "horseshoe", bool(self.fit_intercept), variance,
                             n_iter, burn_in, thin, self.eta_sampler, n_jobs,
                             bool(self.progress), self.likelihood)

    def _calibration_map(self, U, y_index, settings):
        """``stacking_``: the leave-one-out map, or with ``calibration_folds`` the
        cross-fitted one (``dolda.posterior.crossfit``; its chains run as this fit's, one progress bar
        each with ``progress``)."""
        n_classes = len(self.classes_)
        n_folds = check_folds(self.calibration_folds)
        if n_folds is None:
            return fit_proba_stacking(U, self.eta_draws_, y_index, n_classes,
                                      self._prior_sd(settings.variance),
                                      likelihood=settings.likelihood)
        n_chains = check_positive_int(self.n_chains, "n_chains")

        def sample(U_rows, y_rows, seed):
            return np.concatenate([run_chain(U_rows, y_rows, n_classes, chain_seed(seed, c),
                                             settings).eta for c in range(n_chains)])

        return crossfit_stacking(U, y_index, n_classes, n_folds, self.seed_, sample,
                                 logger.info, likelihood=settings.likelihood)

    def _design(self, X):
        """``U = [1, X]`` (or ``X``); sparse CSR stays sparse CSR."""
        if sp.issparse(X):
            X = sp.csr_matrix(X)
            if self.fit_intercept:
                ones = sp.csr_matrix(np.ones((X.shape[0], 1)))
                X = sp.hstack([ones, X], format="csr")
            X.sort_indices()
            return X
        if self.fit_intercept:
            return np.hstack([np.ones((X.shape[0], 1)), X])
        return np.ascontiguousarray(X)

    @obeys_n_jobs
    def fit(self, X, y):
        """Run the Gibbs sampler on ``X`` (D x n_features) and labels ``y`` (D,).

        Returns
        -------
        self
        """
        if check_positive_int(self.n_chains, "n_chains") > 1:
            return self._fit_chains(X, y)
        self.n_chains_ = 1
        n_iter, burn_in, thin, variance, n_jobs = self._check_params()
        X = one_line_errors(validate_data, self, X, reset=True, dtype=np.float64,
                            ensure_min_samples=2, ensure_all_finite=True, accept_sparse="csr")
        check_covariate_scale(X, getattr(self, "feature_names_in_", None))
        self.classes_, y_index = encode_labels(y, X.shape[0], self)
        check_labels(self.classes_, y_index)
        check_fold_rows(X.shape[0], check_folds(self.calibration_folds))
        U = self._design(X)
        n_classes = len(self.classes_)
        check_do_size(self.likelihood, n_classes, U.shape[1])
        seed = seed_from(self.random_state)
        self.seed_ = seed
        settings = self._chain_settings(n_iter, burn_in, thin, variance, n_jobs)
        chain = run_chain(U, y_index, n_classes, seed, settings)
        self.eta_sampler_ = chain.eta_sampler
        if chain.acceptance is not None:
            logger.info("DOProbit: %.0f%% of the DO posterior's Langevin moves accepted",
                        100 * chain.acceptance)
            if chain.acceptance < LOW_ACCEPTANCE:
                warnings.warn(f"likelihood='do': only {chain.acceptance:.1%} of the "
                              "Langevin moves were accepted, so the kept draws "
                              "repeat; raise n_iter or use likelihood='ovr'", stacklevel=2)
        self.eta_draws_ = chain.eta
        self.tau_draws_ = chain.tau
        self.lambda_draws_ = chain.lam
        self.loglik_ = chain.loglik
        mean = draw_mean(chain.eta)
        start = 1 if self.fit_intercept else 0
        self.coef_ = mean[:, start:]
        self.intercept_ = mean[:, 0] if self.fit_intercept else np.zeros(n_classes)
        self.n_iter_ = n_iter
        self.stacking_ = self._calibration_map(U, y_index, settings)
        n_keep = len(chain.eta)
        logger.info("DOProbit: %d iterations, %d draws kept", n_iter, n_keep)
        return self

    # -------------------------------------------------------------- predict
    def _check_X(self, X):
        check_is_fitted(self, "eta_draws_")
        X = one_line_errors(validate_data, self, X, reset=False, dtype=np.float64,
                            ensure_all_finite=True, accept_sparse="csr")
        check_covariate_scale(X, getattr(self, "feature_names_in_", None))
        return X

    def linear_predictor(self, X):
        """Posterior-mean linear predictors ``mu_{dl} = u_d . E[eta_l]``, shape (D, L)."""
        U = self._design(self._check_X(X))
        return calibration.posterior_mean_predictors(U, self.eta_draws_)

    @obeys_n_jobs
    def decision_function(self, X):
        """Scores whose argmax (sign, for two classes) is :meth:`predict`.

        Derived from :meth:`predict_proba` (the DO probabilities averaged over
        the draws), so that scores, probabilities and predictions always agree:
        two classes give the log-odds ``log p_1 - log p_0``, shape (D,);
        more classes the centred log-probabilities ``log p_l - mean_j log p_j``,
        shape (D, L), whose softmax is :meth:`predict_proba`.  The linear
        predictors ``u . E[eta_l]`` are :meth:`linear_predictor`.
        """
        return log_odds_scores(self.predict_proba(X))

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`, shape (D, L)."""
        return np.log(self.predict_proba(X))

    @obeys_n_jobs
    def predict_proba(self, X):
        """Class probabilities by the rule ``proba`` (default calibrated), shape (D, L).

        ``"do"``: for every kept draw ``eta^(s)``,
        ``P(y = l) = F(mu_l) prod_{j != l} F(-mu_j) / sum_s F(mu_s) prod_{j != s} F(-mu_j)``
        with ``mu_l = u . eta_l^(s)``, averaged over draws; ``"ovr"``:
        ``F(mu_l) / sum_j F(mu_j)`` averaged over draws; ``"calibrated"``:
        ``softmax(b + W mu)`` at the posterior-mean ``mu`` (``stacking_``).
        """
        U = self._design(self._check_X(X))
        check_choice(self.proba, "proba", PROBA_RULES)
        return calibration.class_probabilities(U, self.eta_draws_, self.proba,
                                               getattr(self, "stacking_", None))

    @obeys_n_jobs
    def predict(self, X):
        """The class with the largest probability under ``proba``, shape (D,)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True  # CSR stays CSR through the design and the eta-step
        return tags

    # ------------------------------------------------------ reading by name
    def _feature_names(self, feature_names):
        check_is_fitted(self, "eta_draws_")
        if feature_names is None:
            feature_names = getattr(self, "feature_names_in_", None)
        if feature_names is None:
            return np.array([f"x{j}" for j in range(self.n_features_in_)], dtype=object)
        names = np.asarray(feature_names, dtype=object)
        if names.shape != (self.n_features_in_,):
            raise ValueError(f"feature_names has {names.size} names, but the model has "
                             f"{self.n_features_in_} features")
        return names

    def coef_frame(self, feature_names=None):
        """Posterior means of the coefficients by name, as a pandas DataFrame.

        Parameters
        ----------
        feature_names : sequence of str (n_features,) or None
            Column names, e.g. ``CovariateEncoder.get_feature_names_out()``.
            None uses ``feature_names_in_`` (X was a DataFrame) or ``x0, x1, ...``.

        Returns
        -------
        pandas.DataFrame (L, n_features)
            Rows are ``classes_``, columns the feature names; the intercept is left out
            (it is ``intercept_``).
        """
        import pandas as pd

        names = self._feature_names(feature_names)
        return pd.DataFrame(self.coef_, index=pd.Index(self.classes_, name="class"),
                            columns=pd.Index(names, name="feature"))

    def coef_summary(self, feature_names=None, level=0.95):
        """Posterior mean and central credible interval of every coefficient, by name.

        Parameters
        ----------
        feature_names : sequence of str (n_features,) or None
            As in :meth:`coef_frame`.
        level : float, default=0.95
            Probability of the central interval.

        Returns
        -------
        pandas.DataFrame (L * n_features rows)
            Columns ``class, feature, mean, lower, upper, excludes_zero``;
            ``excludes_zero`` is True when the interval lies on one side of 0
            (the Horseshoe's "selected" coefficients).
        """
        import pandas as pd

        names = self._feature_names(feature_names)
        if not 0.0 < float(level) < 1.0:
            raise ValueError(f"level must be in (0, 1), got {level}")
        start = 1 if self.fit_intercept else 0
        draws = self.eta_draws_[:, :, start:]
        tail = (1.0 - float(level)) / 2.0
        lower, upper = draw_quantiles(draws, [tail, 1.0 - tail])
        n_classes, n_features = lower.shape
        return pd.DataFrame({
            "class": np.repeat(self.classes_, n_features),
            "feature": np.tile(names, n_classes),
            "mean": self.coef_.ravel(),
            "lower": lower.ravel(),
            "upper": upper.ravel(),
            "excludes_zero": ((lower > 0) | (upper < 0)).ravel(),
        })

    # ---------------------------------------------------------- persistence
    def _to_state(self):
        """Metadata and arrays for :func:`dolda.io.save_model` (no pickle)."""
        from ... import io

        check_is_fitted(self, "eta_draws_")
        meta = {
            "params": io.encode_params(self.get_params(deep=False)),
            "classes": io.encode_labels(self.classes_),
            "n_features_in": int(self.n_features_in_),
            "feature_names_in": io.encode_strings(getattr(self, "feature_names_in_", None)),
            "seed": int(self.seed_),
            "n_iter": int(self.n_iter_),
            "n_chains": int(getattr(self, "n_chains_", 1)),
        }
        arrays = {"eta_draws": self.eta_draws_, "tau_draws": self.tau_draws_,
                  "lambda_draws": self.lambda_draws_, "loglik": self.loglik_,
                  "coef": self.coef_, "intercept": self.intercept_,
                  "stacking": getattr(self, "stacking_", None)}
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        """Rebuild a fitted DOProbit from :meth:`_to_state` output (see :func:`dolda.load`)."""
        from ...io.codec import decode_strings, fitted_from_state

        model = fitted_from_state(cls, meta, arrays)
        model.n_features_in_ = meta["n_features_in"]
        names = decode_strings(meta.get("feature_names_in"))
        if names is not None:
            model.feature_names_in_ = names
        model.loglik_ = arrays["loglik"]
        model.coef_ = arrays["coef"]
        model.intercept_ = arrays["intercept"]
        return model

    def save(self, path, overwrite=False):
        """Save the fitted model as a directory (``docs/FORMAT.md``); read it with ``dolda.load``.

        Returns
        -------
        pathlib.Path
        """
        from ...io import save_model

        return save_model(self, path, overwrite=overwrite)

    # ------------------------------------------------------ chains and diagnostics
    def _fit_chains(self, X, y):
        """Run ``n_chains`` chains one after the other and pool their draws."""
        from sklearn.base import clone

        n_chains = check_positive_int(self.n_chains, "n_chains")
        settings = self._chain_settings(*self._check_params())
        n_folds = check_folds(self.calibration_folds)
        if n_folds is not None:
            check_fold_rows(_num_samples(X), n_folds)
        base = seed_from(self.random_state)
        fits = [clone(self).set_params(n_chains=1, random_state=chain_seed(base, c),
                                       calibration_folds=None).fit(X, y)
                for c in range(n_chains)]
        for name, value in vars(fits[0]).items():
            if name.endswith("_") and not name.startswith("_"):
                setattr(self, name, value)

        def pooled(name):
            if getattr(fits[0], name) is None:
                return None
            return np.concatenate([getattr(fit, name) for fit in fits])

        self.eta_draws_ = pooled("eta_draws_")
        self.tau_draws_ = pooled("tau_draws_")
        self.lambda_draws_ = pooled("lambda_draws_")
        self.loglik_ = pooled("loglik_")
        mean = draw_mean(self.eta_draws_)
        start = 1 if self.fit_intercept else 0
        self.coef_ = mean[:, start:]
        self.intercept_ = mean[:, 0] if self.fit_intercept else np.zeros(len(self.classes_))
        self.seed_ = base
        self.n_chains_ = n_chains
        X = validate_data(self, X, reset=False, dtype=np.float64, ensure_all_finite=True,
                          accept_sparse="csr")
        _, y_index = encode_labels(y, X.shape[0])
        self.stacking_ = self._calibration_map(self._design(X), y_index, settings)
        return self

    def _prior_sd(self, variance):
        """The coefficients' prior sd at every kept draw (:func:`coefficient_prior_sd`)."""
        return coefficient_prior_sd(self.tau_draws_, self.lambda_draws_, variance,
                                    1 if self.fit_intercept else 0)

    def to_inference_data(self, feature_names=None, X=None, y=None):
        """The posterior draws as an ArviZ ``InferenceData``, for R-hat, ESS and plots.

        Parameters
        ----------
        feature_names : sequence of str (n_features,) or None
            As in :meth:`coef_frame`.
        X, y : training data or None
            Given both, the result also has a ``log_likelihood`` group (chain,
            draw, document) for ``az.loo`` / ``az.waic``.

        Returns
        -------
        arviz.InferenceData
            ``posterior``: ``eta`` (chain, draw, class, feature), the features
            being ``"(intercept)"`` (with ``fit_intercept``) and the feature
            names; for the Horseshoe also ``tau`` (chain, draw, class) and
            ``lambda`` (chain, draw, class, shrunk_feature) without the
            intercept.  ``sample_stats``: ``loglik`` (chain, draw), the DO
            log-likelihood at the kept draws, and ``loglik_trace`` (chain,
            iteration) over all ``n_iter`` iterations, burn-in included.
        """
        from ...evaluate.diagnostics import probit_inference_data

        return probit_inference_data(self, feature_names, X=X, y=y)
