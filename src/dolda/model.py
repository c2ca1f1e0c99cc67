"""DOLDA: Diagonal Orthant Latent Dirichlet Allocation (the supervised topic model).

LDA topics joined with a multi-class Diagonal Orthant probit regression on the
documents' empirical topic proportions (and optional covariates), with a
Horseshoe (or normal) prior per class, fitted by the partially collapsed
Gibbs sampler of Magnusson, Jonsson & Villani (paper sections 2-3).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ._validation import (
    check_burn_in,
    check_choice,
    check_n_jobs,
    check_positive_float,
    check_positive_int,
)
from .probit import PRIORS, DOProbit, average_do_probabilities, encode_labels
from .sampler import chain as dolda_chain
from .sampler import lda as topic_kernels
from .sampler import probit as probit_blocks
from .sampler.rng import chain_seed, seed_from  # noqa: F401 (chain_seed re-exported)
from .sampler.threads import obeys_n_jobs, using_threads

logger = logging.getLogger(__name__)

Z_SAMPLERS = ("auto", "exact", "mh")
#: From this many topics on, "auto" uses the Metropolis-Hastings z-step.
MH_MIN_TOPICS = 200
INTERCEPT = "(intercept)"


def _topic_name(k: int) -> str:
    return f"topic {k}"


class FitInterrupted(KeyboardInterrupt):
    """Ctrl-C during ``fit``: the chain so far was saved to ``checkpoint``."""

    def __init__(self, checkpoint):
        super().__init__(f"fit interrupted; checkpoint saved to {checkpoint}; "
                         f"continue with fit(..., resume={str(checkpoint)!r})")
        self.checkpoint = checkpoint


class _DeferredInterrupt:
    """Turn the first Ctrl-C into a flag checked between iterations.

    The chain state is only consistent between Gibbs iterations, so the fit
    finishes the current iteration, writes a checkpoint and stops.  A second
    Ctrl-C interrupts at once.  Outside the main thread signals cannot be
    caught, and Ctrl-C behaves as usual.
    """

    def __init__(self):
        self.requested = False
        self._old = None

    def _handler(self, signum, frame):
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        logger.warning("interrupt received: stopping after this iteration "
                       "(press Ctrl-C again to stop at once)")

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGINT, self._handler)
        return self

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGINT, self._old)
        return False


class DOLDA(ClassifierMixin, BaseEstimator):
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
    alpha, beta : float, default=0.01
        Dirichlet priors of theta and Phi (the paper's 0.01).
    prior_variance : float, default=100.0
        ``c``: variance of the intercept's prior (and of all coefficients
        under ``prior="normal"``).
    n_iter : int, default=500
        Gibbs iterations, burn-in included.
    burn_in : int or None, default=None
        Iterations discarded (None: half of ``n_iter``).
    thin : int, default=1
        Keep every ``thin``-th draw of eta after the burn-in.
    z_sampler : {"auto", "exact", "mh"}, default="auto"
        ``"exact"``: Gibbs draw from the full supervised conditional, O(K) per
        token with the cached update.  ``"mh"``: Metropolis-Hastings with the
        sparse LDA proposal, O(K_d + L) per token.  ``"auto"``: "mh" from
        ``K >= 200`` on.
    two_step : bool, default=False
        Fit LDA first and the DO probit on its topic proportions afterwards
        (the paper's comparison model) instead of the joint sampler.
    predict_sweeps : int, default=50
        Sweeps of the unsupervised z-sampler for a new document (paper section 3.3).
    predict_burn_in : int or None, default=None
        Sweeps discarded before averaging (None: half of ``predict_sweeps``).
    phi_draws : int, default=20
        ``Phi`` used for prediction is the mean of the last ``phi_draws`` draws.
    checkpoint : path or None, default=None
        Directory where the chain is saved every ``checkpoint_every``
        iterations and on Ctrl-C; continue with ``fit(..., resume=checkpoint)``.
    checkpoint_every : int, default=100
    n_chains : int, default=1
        Independent chains (run one after the other, each on all threads).
        Their topics are aligned to chain 0 by matching Phi (Hungarian
        assignment on Hellinger distance) before the draws are pooled; see
        :meth:`to_inference_data` for R-hat and ESS.
    rare_share : float, default=0.01
        Share of tokens made of the rarest word types that are removed (paper: 1%).
    min_df, max_df : int or float
        Document-frequency bounds of the vocabulary.
    covariate_min_count : int, default=1
        With a DataFrame ``X``: levels of a categorical column seen fewer than
        this many times in ``fit`` are pooled into one ``"column=other"``
        indicator (and so are levels first seen at prediction), see
        :class:`dolda.covariates.CovariateEncoder`.  1: every level its own column.
    random_state : int, numpy Generator or None
        Seed: the same int gives the same chain for any ``n_jobs``.
    n_jobs : int or None
        Threads for the parallel kernels (None or -1: all cores).
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

    Attributes
    ----------
    classes_ : ndarray (L,)
    vocabulary_ : Vocabulary
    feature_names_ : list of str (P,)
        ``"(intercept)"``, covariate columns, ``"topic 0"`` ... ``"topic K-1"``.
    coef_ : pandas.DataFrame (L, P)
        Posterior mean of eta, rows = classes, columns = ``feature_names_``.
    eta_draws_ : ndarray (C * S, L, P)
        Kept draws of all chains, chain after chain (topics aligned).
    n_chains_ : int
    topic_alignment_ : ndarray (C, K)
        ``topic_alignment_[c][k]``: the topic of chain ``c`` shown as topic ``k``.
    tau_draws_ : ndarray (S, L) or None
    lambda_draws_ : ndarray (S, L, P) or None
    phi_ : ndarray (K, V)
        Mean of the last ``phi_draws`` draws of Phi (rows sum to 1).
    doc_topic_counts_ : ndarray (D, K)
        Final ``n_{d,k}`` of the training documents.
    loglik_ : pandas.DataFrame (C * n_iter, 3)
        Indexed by (chain, iteration): ``do`` (probit part), ``lda`` (LDA
        marginal), ``total``.
    timings_ : dict
        ``iteration_seconds`` (C, n_iter): wall time of every Gibbs iteration
        of the joint sampler (NaN for iterations run before a resume).
    """

    def __init__(self, n_topics=20, prior="horseshoe", alpha=0.01, beta=0.01,
                 prior_variance=100.0, n_iter=500, burn_in=None, thin=1, z_sampler="auto",
                 two_step=False, predict_sweeps=50, predict_burn_in=None, phi_draws=20,
                 checkpoint=None, checkpoint_every=100, rare_share=0.01, min_df=1,
                 max_df=1.0, covariate_min_count=1, n_chains=1, random_state=None,
                 n_jobs=None, progress=True,
                 backend="local", client=None, n_shards=None, snapshot_every=10):
        self.n_topics = n_topics
        self.prior = prior
        self.alpha = alpha
        self.beta = beta
        self.prior_variance = prior_variance
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.thin = thin
        self.z_sampler = z_sampler
        self.two_step = two_step
        self.predict_sweeps = predict_sweeps
        self.predict_burn_in = predict_burn_in
        self.phi_draws = phi_draws
        self.checkpoint = checkpoint
        self.checkpoint_every = checkpoint_every
        self.rare_share = rare_share
        self.min_df = min_df
        self.max_df = max_df
        self.covariate_min_count = covariate_min_count
        self.n_chains = n_chains
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.progress = progress
        self.backend = backend
        self.client = client
        self.n_shards = n_shards
        self.snapshot_every = snapshot_every

    # ------------------------------------------------------------ checks
    def _check_params(self):
        n_topics = check_positive_int(self.n_topics, "n_topics", minimum=2)
        check_choice(self.prior, "prior", PRIORS)
        check_choice(self.z_sampler, "z_sampler", Z_SAMPLERS)
        n_iter = check_positive_int(self.n_iter, "n_iter")
        from .backends import BACKENDS

        check_choice(self.backend, "backend", BACKENDS)
        return dict(
            n_shards=(None if self.n_shards is None
                      else check_positive_int(self.n_shards, "n_shards")),
            snapshot_every=check_positive_int(self.snapshot_every, "snapshot_every"),
            n_topics=n_topics,
            alpha=check_positive_float(self.alpha, "alpha"),
            beta=check_positive_float(self.beta, "beta"),
            variance=check_positive_float(self.prior_variance, "prior_variance"),
            n_iter=n_iter,
            burn_in=check_burn_in(self.burn_in, n_iter),
            thin=check_positive_int(self.thin, "thin"),
            n_jobs=check_n_jobs(self.n_jobs),
            predict_sweeps=check_positive_int(self.predict_sweeps, "predict_sweeps"),
            phi_draws=check_positive_int(self.phi_draws, "phi_draws"),
            checkpoint_every=check_positive_int(self.checkpoint_every, "checkpoint_every"),
            n_chains=check_positive_int(self.n_chains, "n_chains"),
            covariate_min_count=check_positive_int(self.covariate_min_count,
                                                   "covariate_min_count"),
        )

    def _resolved_z_sampler(self, n_topics):
        if self.z_sampler == "auto":
            return "mh" if n_topics >= MH_MIN_TOPICS else "exact"
        return self.z_sampler

    # ------------------------------------------------------------ inputs
    def _make_corpus(self, texts, fit: bool):
        from .corpus import Corpus, Vocabulary

        if isinstance(texts, Corpus):
            if fit:
                self.vocabulary_ = texts.vocabulary
            elif texts.vocabulary is not self.vocabulary_ and \
                    texts.vocabulary.words != self.vocabulary_.words:
                raise ValueError("this Corpus was built with another vocabulary; pass the "
                                 "texts, or a Corpus from model.vocabulary_.transform(texts)")
            return texts
        if fit:
            self.vocabulary_ = Vocabulary(rare_share=self.rare_share, min_df=self.min_df,
                                          max_df=self.max_df)
            return self.vocabulary_.fit_transform(texts)
        return self.vocabulary_.transform(texts)

    def _covariates(self, X, n_docs: int, fit: bool):
        """Design matrix ``[1, x_d]`` (D, P_x) and its column names.

        ``X`` may be a DataFrame (categorical columns one-hot encoded by
        :class:`dolda.covariates.CovariateEncoder`), a 1-D or 2-D array, or any
        scipy.sparse matrix.  Arrays and sparse matrices are numeric columns
        named ``x0 ... x{p-1}``; a sparse matrix takes no DataFrame detour and
        is densified here, because DOLDA's design ``[1, X, zbar]`` changes with
        the topics every iteration and its eta-step is the dense Cholesky of the
        (P_x + K) x (P_x + K) precision per class.  That is meant for tens to
        hundreds of covariates: for thousands of sparse one-hot covariates use
        :class:`dolda.DOProbit` (BCM / CG eta samplers on sparse CSR), or pool
        rare levels with ``covariate_min_count``.  A model fitted on
        an array or sparse matrix predicts from either; a model fitted on a
        DataFrame needs a DataFrame.
        """
        import warnings

        import scipy.sparse as sp

        from .covariates import CovariateEncoder

        if fit:
            self._has_covariates = X is not None
        if X is None:
            if not fit and self._has_covariates:
                raise ValueError("this model was fitted with covariates X; pass X to predict")
            return np.ones((n_docs, 1)), [INTERCEPT]
        if not fit and not self._has_covariates:
            raise ValueError("this model was fitted without covariates; do not pass X")
        if sp.issparse(X):
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D, got shape {X.shape}")
            n_cols = X.shape[1]
            plain = [f"x{j}" for j in range(n_cols)]
            if fit:
                # an encoder over numeric columns x0..x{p-1} (identity), fitted on no rows:
                # it names the columns and is saved with the model like any other
                self.covariate_encoder_ = CovariateEncoder().fit(
                    pd.DataFrame(np.zeros((0, n_cols)), columns=plain))
            else:
                enc = self.covariate_encoder_
                fitted_plain = (not enc.categories_ and all(
                    enc.mean_[c] == 0.0 and enc.scale_[c] == 1.0 for c in enc.mean_))
                if not fitted_plain:
                    raise ValueError("this model was fitted on a DataFrame of covariates; "
                                     "pass a DataFrame to predict")
                if n_cols != enc.n_features_out_:
                    raise ValueError(f"X has {n_cols} columns, but the model was fitted "
                                     f"with {enc.n_features_out_}")
            M = X.toarray().astype(np.float64, copy=False)
            if not np.all(np.isfinite(M)):
                raise ValueError("X has missing or infinite values")
        else:
            if not isinstance(X, pd.DataFrame):
                arr = np.asarray(X)
                if arr.ndim == 1:
                    arr = arr[:, None]
                if arr.ndim != 2:
                    raise ValueError(f"X must be a 2-D array or a DataFrame, got shape "
                                     f"{arr.shape}")
                X = pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])])
            if fit:
                self.covariate_encoder_ = CovariateEncoder(min_count=self.covariate_min_count)
                M = self.covariate_encoder_.fit_transform(X)
            else:
                M = self.covariate_encoder_.transform(X)
            if hasattr(M, "toarray"):
                M = M.toarray()
            M = np.asarray(M, dtype=np.float64)
        if M.shape[0] != n_docs:
            raise ValueError(f"texts and X have different lengths: {n_docs} texts, "
                             f"{M.shape[0]} rows of X")
        if fit and M.shape[1] > probit_blocks.CHOLESKY_MAX_COLUMNS:
            warnings.warn(f"DOLDA with {M.shape[1]} covariate columns: its eta-step factors a "
                          f"dense ({M.shape[1]} + K)^2 matrix per class and iteration; for "
                          f"many sparse covariates use DOProbit, or pool rare levels with "
                          f"covariate_min_count (CLI: --min-count)",
                          UserWarning, stacklevel=3)
        names = [INTERCEPT] + [str(c) for c in self.covariate_encoder_.get_feature_names_out()]
        return np.hstack([np.ones((n_docs, 1)), M]), names

    # --------------------------------------------------------------- fit
    @obeys_n_jobs
    def fit(self, texts, y, X=None, resume=None):
        """Fit DOLDA to documents ``texts`` with labels ``y`` and optional covariates ``X``.

        Parameters
        ----------
        texts : iterable of str, pandas Series, token lists, or Corpus (D,)
        y : array-like (D,)
            Class labels of any hashable type.
        X : array-like, pandas DataFrame or None (D, P)
            Extra covariates; categorical DataFrame columns are one-hot encoded
            (``"director=Jackie Chan"``).
        resume : path or None
            A checkpoint directory written by an interrupted fit with the same
            data and parameters: the chain continues where it stopped and ends
            exactly as an uninterrupted run with the same seed.

        Returns
        -------
        self
        """
        p = self._check_params()
        corpus = self._make_corpus(texts, fit=True)
        n_docs = corpus.n_docs
        self.classes_, y_index = encode_labels(y, n_docs)
        Xd, names = self._covariates(X, n_docs, fit=True)
        K = p["n_topics"]
        self.feature_names_ = names + [_topic_name(k) for k in range(K)]
        n_x = Xd.shape[1]
        shrunk = np.ones(n_x + K, dtype=bool)
        shrunk[0] = False
        prior = probit_blocks.ProbitPrior(self.prior == "horseshoe", shrunk, p["variance"])
        data = dolda_chain.TopicData(corpus.tokens, corpus.doc_ptr, corpus.n_words, Xd,
                                     y_index, len(self.classes_))
        self.n_tokens_ = int(len(corpus.tokens))
        if self.two_step:
            return self._fit_two_step(corpus, data, p, prior)
        config = dolda_chain.DOLDAConfig(K, p["alpha"], p["beta"], prior,
                                         self._resolved_z_sampler(K), p["n_jobs"])
        base_seed = seed_from(self.random_state)
        chains = []
        for c in range(p["n_chains"]):
            ckpt = self.checkpoint
            if ckpt is not None and p["n_chains"] > 1:
                ckpt = Path(ckpt) / f"chain{c}"
            chain_resume = resume
            if resume is not None and p["n_chains"] > 1:
                chain_resume = Path(resume) / f"chain{c}"
                if not (chain_resume / "model.json").exists():
                    chain_resume = None  # this chain had not started
            chains.append(self._run_chain(data, config, p, chain_seed(base_seed, c),
                                          chain_resume, ckpt, c))
        self._combine_chains(chains, p["n_iter"])
        return self

    def _combine_chains(self, chains, n_iter):
        """Align every chain's topics to chain 0 (label switching), then pool the draws."""
        from .diagnostics import align_topics

        K = chains[0]["phi"].shape[0]
        n_x = chains[0]["eta_draws"].shape[2] - K
        perms = [np.arange(K)] + [align_topics(chains[0]["phi"], ch["phi"]) for ch in chains[1:]]
        for ch, perm in zip(chains, perms):
            cols = np.concatenate([np.arange(n_x), n_x + perm])
            ch["phi"] = ch["phi"][perm]
            ch["eta_draws"] = ch["eta_draws"][:, :, cols]
            if ch["lambda_draws"] is not None:
                ch["lambda_draws"] = ch["lambda_draws"][:, :, cols]
            ch["ndk"] = ch["ndk"][:, perm]
        self.n_chains_ = len(chains)
        self.topic_alignment_ = np.array(perms)
        self.seed_ = chains[0]["seed"]
        self.n_iter_ = n_iter
        self.eta_draws_ = np.concatenate([ch["eta_draws"] for ch in chains])
        horseshoe = chains[0]["tau_draws"] is not None
        self.tau_draws_ = (np.concatenate([ch["tau_draws"] for ch in chains])
                           if horseshoe else None)
        self.lambda_draws_ = (np.concatenate([ch["lambda_draws"] for ch in chains])
                              if horseshoe else None)
        phi = np.mean([ch["phi"] for ch in chains], axis=0)
        self.phi_ = phi / phi.sum(axis=1, keepdims=True)
        self.doc_topic_counts_ = chains[0]["ndk"]
        self._set_loglik(np.stack([ch["loglik"] for ch in chains]))
        self.timings_ = {"iteration_seconds": np.stack([ch["seconds"] for ch in chains])}
        self._finish(self.eta_draws_)

    def _run_chain(self, data, config, p, seed, resume, checkpoint, chain):
        """Run (or resume) one chain; returns its draws as a dict."""
        from . import io

        n_iter, burn_in, thin = p["n_iter"], p["burn_in"], p["thin"]
        keep = np.arange(burn_in, n_iter)[::thin]
        n_keep, K = len(keep), config.n_topics
        n_cols = data.X.shape[1] + K
        horseshoe = config.prior.horseshoe
        phi_from = max(burn_in, n_iter - p["phi_draws"])
        if resume is not None:
            meta, arr = io.load_checkpoint(resume)
            self._check_resume(meta, data, n_iter)
            start = int(meta["next_iteration"])
            if int(meta["seed"]) != seed:
                raise ValueError(f"the checkpoint {resume} belongs to a chain with another "
                                 "seed: pass the same random_state as the interrupted fit")
            state = dolda_chain.DOLDAState(
                arr["z"].astype(np.int32), arr["ndk"].astype(np.int32), arr["phi"],
                probit_blocks.ProbitState(np.zeros((len(data.y), data.n_classes)), arr["eta"],
                                          arr["lam2"], arr["tau2"], arr["nu"], arr["xi"]))
            eta_draws, loglik, phi_sum = arr["eta_draws"], arr["loglik"], arr["phi_sum"]
            tau_draws, lam_draws = arr.get("tau_draws"), arr.get("lambda_draws")
        else:
            start = 0
            with using_threads(config.n_jobs):
                state = dolda_chain.init_state(seed, data, config)
            eta_draws = np.zeros((n_keep, data.n_classes, n_cols))
            tau_draws = np.zeros((n_keep, data.n_classes)) if horseshoe else None
            lam_draws = np.zeros((n_keep, data.n_classes, n_cols)) if horseshoe else None
            loglik = np.full((n_iter, 2), np.nan)
            phi_sum = np.zeros((data.n_words, K))  # word-major, as the chain's Phi

        from .backends import make_chain

        runner = make_chain(self.backend, seed, state, data, config, p["n_shards"],
                            self.client, p["snapshot_every"])

        def save_checkpoint(next_iteration):
            z, ndk = runner.topics()
            meta = {"seed": seed, "next_iteration": int(next_iteration), "n_iter": n_iter,
                    "n_tokens": int(len(data.tokens)), "n_docs": int(len(data.y)),
                    "params": io.encode_params(self.get_params(deep=False))}
            arrays = {"z": z, "ndk": ndk, "phi": state.phi,
                      "eta": state.probit.eta, "lam2": state.probit.lam2,
                      "tau2": state.probit.tau2, "nu": state.probit.nu, "xi": state.probit.xi,
                      "eta_draws": eta_draws, "tau_draws": tau_draws,
                      "lambda_draws": lam_draws, "loglik": loglik, "phi_sum": phi_sum}
            return io.save_checkpoint(checkpoint, meta, arrays)

        bar = None
        if self.progress:
            from tqdm.auto import tqdm

            desc = "DOLDA" if p["n_chains"] == 1 else f"DOLDA chain {chain + 1}/{p['n_chains']}"
            bar = tqdm(total=n_iter, initial=start, desc=desc, unit="it")
        slot = int(np.searchsorted(keep, start))
        seconds = np.full(n_iter, np.nan)  # wall time of every iteration run here
        tic = time.perf_counter()
        with _DeferredInterrupt() as interrupt, using_threads(config.n_jobs):
            try:
                for it in range(start, n_iter):
                    t_it = time.perf_counter()
                    state, info = runner.step(it)
                    loglik[it] = (info.loglik_do, info.loglik_lda)
                    if slot < n_keep and it == keep[slot]:
                        eta_draws[slot] = state.probit.eta
                        if horseshoe:
                            tau_draws[slot] = np.sqrt(state.probit.tau2)
                            lam_draws[slot] = np.sqrt(state.probit.lam2)
                        slot += 1
                    if it >= phi_from:
                        topic_kernels.accumulate(state.phi, phi_sum)
                    seconds[it] = time.perf_counter() - t_it
                    if bar is not None:
                        rate = len(data.tokens) * (it + 1 - start) / (time.perf_counter() - tic)
                        bar.set_postfix(loglik=f"{info.loglik_do + info.loglik_lda:.4g}",
                                        tokens_per_s=f"{rate:.3g}", refresh=False)
                        bar.update(1)
                    if interrupt.requested and it + 1 < n_iter:
                        if checkpoint is None:
                            raise KeyboardInterrupt(
                                "fit interrupted (pass checkpoint=... to be able to resume)")
                        save_checkpoint(it + 1)
                        raise FitInterrupted(self.checkpoint)
                    if checkpoint is not None and (
                            (it + 1) % p["checkpoint_every"] == 0 or it + 1 == n_iter):
                        save_checkpoint(it + 1)
                ndk = runner.topics()[1].copy()
            finally:
                runner.close()
                if bar is not None:
                    bar.close()

        phi = np.ascontiguousarray(phi_sum.T) / max(1, n_iter - phi_from)
        return {"seed": seed, "eta_draws": eta_draws, "tau_draws": tau_draws,
                "lambda_draws": lam_draws, "phi": phi / phi.sum(axis=1, keepdims=True),
                "ndk": ndk, "loglik": loglik, "seconds": seconds}

    def _check_resume(self, meta, data, n_iter):
        if meta.get("n_tokens") != len(data.tokens) or meta.get("n_docs") != len(data.y):
            raise ValueError(
                "the checkpoint was written for other data: it has "
                f"{meta.get('n_docs')} documents and {meta.get('n_tokens')} tokens, the data "
                f"given has {len(data.y)} and {len(data.tokens)}")
        if meta.get("n_iter") != n_iter:
            raise ValueError(f"the checkpoint was written with n_iter={meta.get('n_iter')}, "
                             f"this model has n_iter={n_iter}")

    def _set_loglik(self, loglik):
        """``loglik`` (C, n_iter, 2) or (n_iter, 2) -> DataFrame indexed by (chain, iteration)."""
        loglik = np.asarray(loglik, dtype=np.float64)
        if loglik.ndim == 2:
            loglik = loglik[None]
        n_chains, n_iter, _ = loglik.shape
        index = pd.MultiIndex.from_product([range(n_chains), range(n_iter)],
                                           names=["chain", "iteration"])
        flat = loglik.reshape(-1, 2)
        self.loglik_ = pd.DataFrame({"do": flat[:, 0], "lda": flat[:, 1],
                                     "total": flat.sum(axis=1)}, index=index)

    def _finish(self, eta_draws):
        mean = eta_draws.mean(axis=0)
        self.coef_ = pd.DataFrame(mean, index=pd.Index(self.classes_, name="class"),
                                  columns=self.feature_names_)

    def _fit_two_step(self, corpus, data, p, prior):
        """LDA first, then the DO probit on the final topic proportions (paper section 4)."""
        from .lda import LDA

        lda = LDA(n_topics=p["n_topics"], alpha=p["alpha"], beta=p["beta"],
                  n_iter=p["n_iter"], burn_in=p["burn_in"], random_state=self.random_state,
                  n_jobs=self.n_jobs, progress=self.progress)
        lda.fit(corpus)
        self.lda_ = lda
        self.phi_ = lda.phi_
        zbar = lda.transform(corpus)
        U = np.hstack([data.X, zbar])
        probit = DOProbit(prior=self.prior, n_iter=p["n_iter"], burn_in=p["burn_in"],
                          thin=p["thin"], prior_variance=p["variance"], fit_intercept=False,
                          random_state=self.random_state, n_jobs=self.n_jobs).fit(U, data.y)
        self.seed_ = probit.seed_
        self.n_iter_ = p["n_iter"]
        self.eta_draws_ = probit.eta_draws_
        self.tau_draws_ = probit.tau_draws_
        self.lambda_draws_ = probit.lambda_draws_
        self.doc_topic_counts_ = None
        self.n_chains_ = 1
        ll = np.column_stack([probit.loglik_, np.asarray(lda.loglik_)[-len(probit.loglik_):]])
        self._set_loglik(ll)
        self._finish(self.eta_draws_)
        return self

    # ------------------------------------------------------ prediction
    @obeys_n_jobs
    def transform(self, texts):
        """Topic proportions of new documents (paper section 3.3), shape (D, K).

        The topic indicators are sampled with Phi fixed at ``phi_`` and no
        supervision, ``p(z = k) ∝ phibar_{k,w} (n_{dk} + alpha)``, for
        ``predict_sweeps`` sweeps; the empirical proportions
        ``zbar_d = n_{d,.} / N_d`` (what the regression was fitted on) are
        averaged over the sweeps after ``predict_burn_in``.  A document with no
        known word gets zeros.
        """
        check_is_fitted(self, "phi_")
        corpus = self._make_corpus(texts, fit=False)
        from .sampler.lda import predict_topic_proportions

        burn = (self.predict_sweeps // 2 if self.predict_burn_in is None
                else self.predict_burn_in)
        with using_threads(check_n_jobs(self.n_jobs)):
            theta = predict_topic_proportions(corpus.tokens, corpus.doc_ptr, self.phi_,
                                              float(self.alpha), int(self.predict_sweeps),
                                              int(burn), int(self.seed_))
        # theta averages (n_dk + alpha) / (N_d + K alpha); the regression uses the
        # empirical proportions n_dk / N_d, an exact linear function of it.
        n_d = corpus.doc_lengths.astype(np.float64)[:, None]
        K = theta.shape[1]
        zbar = (theta * (n_d + K * self.alpha) - self.alpha) / np.maximum(n_d, 1.0)
        zbar[n_d[:, 0] == 0] = 0.0  # no words: no topic information, as in training
        return np.clip(zbar, 0.0, 1.0)

    def _regressors(self, texts, X):
        zbar = self.transform(texts)
        Xd, _ = self._covariates(X, zbar.shape[0], fit=False)
        return np.hstack([Xd, zbar])

    @obeys_n_jobs
    def predict_proba(self, texts, X=None):
        """DO class probabilities averaged over the kept eta draws, shape (D, L)."""
        check_is_fitted(self, "eta_draws_")
        return average_do_probabilities(self._regressors(texts, X), self.eta_draws_)

    @obeys_n_jobs
    def predict(self, texts, X=None):
        """The most probable class of every document, shape (D,)."""
        proba = self.predict_proba(texts, X)
        return self.classes_[np.argmax(proba, axis=1)]

    @obeys_n_jobs
    def score(self, texts, y, X=None):
        """Accuracy of :meth:`predict` on ``texts`` with true labels ``y``."""
        return float(np.mean(self.predict(texts, X) == np.asarray(y)))

    # ------------------------------------------------------ interpretation
    def top_words(self, n=10):
        """The ``n`` most probable words of every topic: DataFrame (K, n), rows ``topic k``."""
        check_is_fitted(self, "phi_")
        words = np.asarray(self.vocabulary_.words)
        order = np.argsort(-self.phi_, axis=1)[:, :n]
        return pd.DataFrame(words[order], index=[_topic_name(k) for k in range(len(order))],
                            columns=[f"word {i + 1}" for i in range(order.shape[1])])

    def coef_interval(self, level=0.95):
        """Equal-tailed credible intervals of eta: two DataFrames (lower, upper) like ``coef_``."""
        check_is_fitted(self, "eta_draws_")
        q = (1 - level) / 2
        lo, hi = np.quantile(self.eta_draws_, [q, 1 - q], axis=0)
        mk = lambda a: pd.DataFrame(a, index=self.coef_.index, columns=self.coef_.columns)  # noqa: E731
        return mk(lo), mk(hi)

    def signal_topics(self, label, level=0.95, n_words=8):
        """Topics whose coefficient for class ``label`` stands out of the shrinkage.

        A topic is a signal topic when the ``level`` credible interval of its
        coefficient excludes zero.  Returns a DataFrame sorted by |coefficient|
        with the coefficient, its interval, its sign and the topic's top words.
        """
        check_is_fitted(self, "eta_draws_")
        if label not in set(self.classes_.tolist()):
            raise ValueError(f"unknown class {label!r}; classes are {list(self.classes_)}")
        lo, hi = self.coef_interval(level)
        topics = [c for c in self.coef_.columns if c.startswith("topic ")]
        mean = self.coef_.loc[label, topics]
        lo, hi = lo.loc[label, topics], hi.loc[label, topics]
        keep = (lo > 0) | (hi < 0)
        words = self.top_words(n_words)
        out = pd.DataFrame({"coef": mean[keep], "lower": lo[keep], "upper": hi[keep]})
        out["sign"] = np.where(out["coef"] > 0, "+", "-")
        out["top_words"] = [" ".join(words.loc[t]) for t in out.index]
        return out.reindex(out["coef"].abs().sort_values(ascending=False).index)

    @obeys_n_jobs
    def explain(self, text, X_row=None):
        """Why one document gets its class: each feature's contribution to each class score.

        The score of class ``l`` is ``mu_l = u . eta_l`` with the posterior mean
        of eta; the contribution of feature ``p`` is ``u_p eta_{lp}``.

        Returns
        -------
        pandas.DataFrame
            Columns ``class, feature, value, coef, contribution``, sorted by
            class probability (most probable class first) and then by
            |contribution|; ``attrs["proba"]`` holds the class probabilities.
        """
        check_is_fitted(self, "eta_draws_")
        texts = [text] if isinstance(text, str) else text
        if len(texts) != 1:
            raise ValueError("explain takes one document")
        X = None
        if X_row is not None:
            X = X_row.to_frame().T if isinstance(X_row, pd.Series) else X_row
            if not isinstance(X, pd.DataFrame):
                X = np.atleast_2d(np.asarray(X_row, dtype=float))
        u = self._regressors(texts, X)[0]
        proba = average_do_probabilities(u[None], self.eta_draws_)[0]
        rows = []
        for l in np.argsort(-proba):
            contrib = u * self.coef_.values[l]
            for j in np.argsort(-np.abs(contrib)):
                if u[j] == 0:
                    continue
                rows.append((self.classes_[l], self.feature_names_[j], u[j],
                             self.coef_.values[l, j], contrib[j]))
        out = pd.DataFrame(rows, columns=["class", "feature", "value", "coef", "contribution"])
        out.attrs["proba"] = dict(zip(self.classes_.tolist(), proba.tolist()))
        return out

    # ------------------------------------------------------ persistence
    def _to_state(self):
        """Metadata and arrays for :func:`dolda.io.save_model` (no pickle)."""
        from . import io

        check_is_fitted(self, "eta_draws_")
        meta = {
            "params": io.encode_params(self.get_params(deep=False)),
            "classes": io.encode_labels(self.classes_),
            "feature_names": list(self.feature_names_),
            "vocabulary": self.vocabulary_.to_dict(),
            "covariates": (self.covariate_encoder_.to_dict()
                           if getattr(self, "_has_covariates", False) else None),
            "seed": int(self.seed_),
            "n_iter": int(self.n_iter_),
            "n_tokens": int(self.n_tokens_),
            "n_chains": int(self.n_chains_),
        }
        arrays = {"eta_draws": self.eta_draws_, "tau_draws": self.tau_draws_,
                  "lambda_draws": self.lambda_draws_, "phi": self.phi_,
                  "doc_topic_counts": self.doc_topic_counts_,
                  "loglik": self.loglik_[["do", "lda"]].to_numpy().reshape(
                      self.n_chains_, -1, 2)}
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        """Rebuild a fitted DOLDA from :meth:`_to_state` output (see :func:`dolda.load`)."""
        from . import io
        from .corpus import Vocabulary

        model = cls(**io.decode_params(meta["params"]))
        model.classes_ = io.decode_labels(meta["classes"])
        model.feature_names_ = list(meta["feature_names"])
        model.vocabulary_ = Vocabulary.from_dict(meta["vocabulary"])
        model._has_covariates = meta.get("covariates") is not None
        if model._has_covariates:
            from .covariates import CovariateEncoder

            model.covariate_encoder_ = CovariateEncoder.from_dict(meta["covariates"])
        model.seed_ = meta["seed"]
        model.n_iter_ = meta["n_iter"]
        model.n_tokens_ = meta["n_tokens"]
        model.n_chains_ = int(meta.get("n_chains", 1))
        model.eta_draws_ = arrays["eta_draws"]
        model.tau_draws_ = arrays.get("tau_draws")
        model.lambda_draws_ = arrays.get("lambda_draws")
        model.phi_ = arrays["phi"]
        model.doc_topic_counts_ = arrays.get("doc_topic_counts")
        model._set_loglik(arrays["loglik"])
        model._finish(model.eta_draws_)
        return model

    def save(self, path, overwrite=False):
        """Save the fitted model as a directory (``docs/FORMAT.md``); read it with ``dolda.load``."""
        from .io import save_model

        return save_model(self, path, overwrite=overwrite)

    # ------------------------------------------------------ diagnostics and report
    def to_inference_data(self):
        """The posterior draws as an ArviZ ``InferenceData``, for R-hat, ESS and plots.

        Chains are comparable because their topics were aligned during ``fit``:
        each chain's Phi is matched to chain 0's by the Hungarian assignment on
        the Hellinger distances between topics
        (:func:`dolda.diagnostics.align_topics`), and the chain's topic columns
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
        """
        from .diagnostics import dolda_inference_data

        return dolda_inference_data(self)

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
        from .report import make_report

        return make_report(self, path, texts=texts, y=y, X=X, max_documents=max_documents)
