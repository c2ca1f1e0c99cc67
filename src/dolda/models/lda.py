"""Unsupervised LDA fitted by the partially collapsed parallel Gibbs sampler.

Each iteration draws every topic indicator given the sampled topics ``Phi``
(documents in parallel), then ``Phi`` given the indicators (topics in
parallel): paper section 3.1 without the supervised factor, and the sampler
of Magnusson, Jonsson, Villani & Broman (2018), "Sparse partially collapsed
MCMC for parallel inference in topic models".  The kernels live in
:mod:`dolda.sampler.lda`; this module never imports numba.
"""

from __future__ import annotations

import logging
import time

import numpy as np
import pandas as pd
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
)
from sklearn.utils.validation import check_is_fitted, check_non_negative, validate_data

from ..design.corpus import TOKEN_PATTERN, Corpus, Vocabulary
from ..design.estimator_input import corpus_from_counts, is_count_matrix, vocabulary_of_columns
from ..interpret.topics import (
    DEFAULT_LABEL_WORDS,
    DEFAULT_RELEVANCE,
    model_top_words,
    model_topic_labels,
)
from ..sampler import lda as kernels
from ..sampler import phi_mean
from ..sampler.rng import seed_from
from ..sampler.threads import obeys_n_jobs, using_threads
from ..utils.fitted import NotFittedAttributes
from ..utils.validation import (
    check_alpha,
    check_burn_in,
    check_choice,
    check_model_size,
    check_n_jobs,
    check_positive_float,
    check_positive_int,
)

logger = logging.getLogger(__name__)

SAMPLERS = ("auto", "dense", "sparse")

__all__ = ["LDA", "SAMPLERS"]


class LDA(NotFittedAttributes, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Latent Dirichlet Allocation by partially collapsed Gibbs sampling.

    The model: ``phi_k ~ Dir(beta)``, ``theta_d ~ Dir(alpha)``,
    ``z_{d,i} ~ Cat(theta_d)``, ``w_{d,i} ~ Cat(phi_{z_{d,i}})``.  theta is
    integrated out, Phi is sampled, so documents are resampled in parallel and
    the chain is the same for any number of threads.

    A drop-in for :class:`sklearn.decomposition.LatentDirichletAllocation`
    where that makes sense: ``X`` may be raw texts (tokenized by the options
    below) or a document-term matrix of counts (scipy.sparse, ndarray or
    numeric DataFrame, e.g. from ``CountVectorizer``, whose columns are then
    the vocabulary), so ``make_pipeline(CountVectorizer(), LDA())`` works;
    ``components_``, ``get_feature_names_out`` (``lda0`` ...),
    ``set_output(transform="pandas")``, ``perplexity`` and ``score`` are there.

    Parameters
    ----------
    n_topics : int, default=20
        ``K`` (at least 2).
    alpha : float or array-like (K,), default=0.1
        Dirichlet prior of the document-topic proportions theta: symmetric, or
        one ``alpha_k > 0`` per topic.
    beta : float, default=0.01
        Symmetric Dirichlet prior of the topics Phi.
    n_iter : int, default=200
        Gibbs iterations, burn-in included.
    burn_in : int or None, default=None
        Iterations not averaged into ``phi_`` (None: half).
    sampler : {"auto", "dense", "sparse"}, default="auto"
        z-sweep: ``"dense"`` costs O(K) per token, ``"sparse"`` O(K_d) per
        token (alias tables + document non-zero topics).  Both draw from the
        same conditional.  ``"auto"`` picks sparse from
        ``dolda.sampler.lda.SPARSE_MIN_TOPICS`` (100) topics on.
    transform_sweeps : int, default=50
        Default number of sweeps of :meth:`transform` (the conditionals of the kept sweeps
        averaged: Rao-Blackwellised).
    random_state : int, numpy Generator or None
        Seed; the same int gives the same chain for any ``n_jobs``.
    n_jobs : int or None
        Threads of the parallel kernels (None or -1: all cores).
    progress : bool, default=True
        Show a tqdm progress bar.
    token_pattern, lowercase, stop_words, rare_share, min_df, max_df
        Options of the :class:`~dolda.design.corpus.Vocabulary` built by :meth:`fit`
        from raw texts (ignored when ``fit`` receives a :class:`Corpus`).
    backend : {"local", "dask"}, default="local"
        Where the z-sweeps run: ``"local"`` in this process (numba threads),
        ``"dask"`` on the workers of ``client``, the documents cut into shards
        that stay there for the whole fit while this process draws Phi (see
        ``docs/DISTRIBUTED.md``).  z and Phi are the same on both backends
        for a seed, whatever ``n_shards`` and the number of workers.
    client : distributed.Client or None, default=None
        The Dask client for ``backend="dask"`` (None: the current default
        client).  Not saved with the model.
    n_shards : int or None, default=None
        Document shards.  ``"dask"``: None takes about one per million
        tokens.  ``"local"``: the log-likelihood trace is then added up per
        shard, so that it matches a Dask fit with the same ``n_shards`` to the
        last bit (None: one sum over the corpus).
    snapshot_every : int, default=10
        ``backend="dask"``: iterations between the copies of z kept by this
        process; a lost worker is rebuilt from the last one and the
        iterations since are replayed (same chain as an undisturbed run).
    phi_transport : {"auto", "recipe", "dense"}, default="auto"
        ``backend="dask"``: what carries Phi to the workers each iteration, the
        non-zero counts it was drawn from (every worker repeats the draw) or Phi
        itself; ``"auto"``: whichever is smaller.  Same chain either way (see
        :class:`dolda.DOLDA` and ``docs/DISTRIBUTED.md``).

    Attributes
    ----------
    phi_ : ndarray (K, V)
        Posterior mean of Phi after the burn-in (rows sum to one), Rao-Blackwellised as
        DOLDA's: the mean over the kept iterations of
        ``E[phi_{k,w} | z] = (beta + n_{k,w}) / (V beta + n_k)``, which has no more variance
        than the mean of the Phi draws and is kept sparse while the chain runs
        (:mod:`dolda.sampler.phi_mean`), not as a dense V x K running sum.
    components_ : ndarray (K, V)
        Alias of ``phi_`` (scikit-learn's name).
    loglik_ : ndarray (n_iter,)
        LDA marginal log-likelihood ``log p(w, z)`` after every iteration.
    vocabulary_ : Vocabulary
    doc_topic_counts_ : ndarray int32 (D, K)
        Final ``n_{d,k}`` of the training documents.
    z_ : ndarray int32 (N,)
        Final topic indicators of the training tokens.
    n_iter_ : int
    sampler_ : {"dense", "sparse"}
        The z-sweep used.
    seed_ : int
        The chain seed derived from ``random_state``.
    timings_ : dict
        Seconds spent in the z-sweeps and in the Phi draws (with alias tables).
    n_features_in_ : int
        ``V``; only when fitted on a document-term matrix.
    feature_names_in_ : ndarray of str (V,)
        Only when fitted on a DataFrame of counts with string column names;
        they are the words of ``vocabulary_`` (otherwise ``x0, x1, ...``).

    Notes
    -----
    No ``partial_fit``: the partially collapsed Gibbs sampler needs every
    document's topic indicators at every iteration (Phi is drawn from the
    counts of the whole corpus), so there is no exact update from a
    mini-batch; an online method (stochastic variational Bayes, as in
    scikit-learn's ``learning_method="online"``) would be a different
    algorithm with a different answer.  Refit on all documents instead.
    """

    def __init__(self, n_topics=20, *, alpha=0.1, beta=0.01, n_iter=200, burn_in=None,
                 sampler="auto", transform_sweeps=50, random_state=None, n_jobs=None,
                 progress=True, token_pattern=TOKEN_PATTERN, lowercase=True,
                 stop_words="english", rare_share=0.01, min_df=1, max_df=1.0,
                 backend="local", client=None, n_shards=None, snapshot_every=10,
                 phi_transport="auto"):
        self.n_topics = n_topics
        self.alpha = alpha
        self.beta = beta
        self.n_iter = n_iter
        self.burn_in = burn_in
        self.sampler = sampler
        self.transform_sweeps = transform_sweeps
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.progress = progress
        self.token_pattern = token_pattern
        self.lowercase = lowercase
        self.stop_words = stop_words
        self.rare_share = rare_share
        self.min_df = min_df
        self.max_df = max_df
        self.backend = backend
        self.client = client
        self.n_shards = n_shards
        self.snapshot_every = snapshot_every
        self.phi_transport = phi_transport

    # ------------------------------------------------------------- inputs
    def _check_params(self):
        from ..backends import BACKENDS, PHI_TRANSPORTS

        n_iter = check_positive_int(self.n_iter, "n_iter")
        n_topics = check_positive_int(self.n_topics, "n_topics", minimum=2)
        return dict(
            backend=check_choice(self.backend, "backend", BACKENDS),
            n_shards=(None if self.n_shards is None
                      else check_positive_int(self.n_shards, "n_shards")),
            snapshot_every=check_positive_int(self.snapshot_every, "snapshot_every"),
            phi_transport=check_choice(self.phi_transport, "phi_transport", PHI_TRANSPORTS),
            n_topics=n_topics,
            alpha=check_alpha(self.alpha, n_topics),
            beta=check_positive_float(self.beta, "beta"),
            n_iter=n_iter,
            burn_in=check_burn_in(self.burn_in, n_iter),
            sampler=kernels.resolve_sampler(check_choice(self.sampler, "sampler", SAMPLERS),
                                            n_topics),
            n_jobs=check_n_jobs(self.n_jobs),
        )

    def _fit_corpus(self, texts) -> Corpus:
        for name in ("n_features_in_", "feature_names_in_"):  # from an earlier fit
            if name in vars(self):
                delattr(self, name)
        if is_count_matrix(texts):
            X = validate_data(self, texts, reset=True, accept_sparse="csr", dtype=None,
                              ensure_all_finite=True)
            check_non_negative(X, "LDA (document-term matrix X)")
            names = getattr(self, "feature_names_in_", None)
            if names is None:
                names = [f"x{j}" for j in range(X.shape[1])]
            self.vocabulary_ = vocabulary_of_columns(names)
            return corpus_from_counts(X, self.vocabulary_)
        if isinstance(texts, Corpus):
            self.vocabulary_ = texts.vocabulary
            return texts
        self.vocabulary_ = Vocabulary(token_pattern=self.token_pattern, lowercase=self.lowercase,
                                      stop_words=self.stop_words, rare_share=self.rare_share,
                                      min_df=self.min_df, max_df=self.max_df)
        return self.vocabulary_.fit_transform(texts)

    # ---------------------------------------------------------------- fit
    @obeys_n_jobs
    def fit(self, X, y=None):
        """Run the Gibbs sampler on the documents ``X``.

        Parameters
        ----------
        X : iterable of str, pandas Series, token lists, Corpus (D,), or counts (D, V)
            Raw documents, or a document-term matrix of word counts (sparse,
            ndarray or numeric DataFrame; the columns are the vocabulary and
            the vocabulary options are not used).
        y : ignored

        Returns
        -------
        self
        """
        from ..backends import make_lda_chain

        p = self._check_params()
        corpus = self._fit_corpus(X)
        K, V = p["n_topics"], corpus.n_words
        check_model_size(K, V, corpus.n_docs, corpus.n_tokens)
        tokens, doc_ptr = corpus.tokens, corpus.doc_ptr
        seed = seed_from(self.random_state)
        self.seed_ = seed
        self.sampler_ = p["sampler"]
        loglik = np.empty(p["n_iter"])
        n_kept = 0
        bar = chain = None
        if self.progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=p["n_iter"], desc=f"LDA K={K}", unit="it")
        try:
            with using_threads(p["n_jobs"]):
                chain = make_lda_chain(p["backend"], seed, tokens, doc_ptr, V, K, p["alpha"],
                                       p["beta"], p["sampler"] == "sparse", p["n_shards"],
                                       self.client, p["snapshot_every"], p["phi_transport"])
                running = phi_mean.empty(V, K)
                for it in range(p["n_iter"]):
                    t0 = time.perf_counter()
                    counts, loglik[it] = chain.step(it)
                    t1 = time.perf_counter()
                    if it >= p["burn_in"]:
                        running = phi_mean.add(running, counts, p["beta"])
                        n_kept += 1
                    if bar is not None:
                        bar.update(1)
                        bar.set_postfix(loglik=f"{loglik[it]:.6g}",
                                        tok_s=f"{len(tokens) / max(t1 - t0, 1e-9):.3g}")
                z, ndk = chain.topics()
        finally:
            if chain is not None:
                chain.close()
            if bar is not None:
                bar.close()
        t_z, t_phi = chain.timings["z_sweep"], chain.timings["phi_draw"]
        self.phi_ = phi_mean.dense_mean(running, np.float64)
        self.loglik_ = loglik
        self.z_ = z
        self.doc_topic_counts_ = ndk
        self.n_iter_ = p["n_iter"]
        self.n_tokens_ = corpus.n_tokens
        self.timings_ = {"z_sweep": t_z, "phi_draw": t_phi}
        logger.info("LDA fitted: K=%d, V=%d, N=%d, %d iterations, %.3g tokens/s",
                    K, V, corpus.n_tokens, p["n_iter"],
                    corpus.n_tokens * p["n_iter"] / max(t_z + t_phi, 1e-9))
        return self

    @property
    def components_(self):
        """Alias of ``phi_`` (K, V)."""
        check_is_fitted(self, "phi_")
        return self.phi_

    @property
    def _n_features_out(self):
        """``K``: the columns of :meth:`transform` (for ``get_feature_names_out``)."""
        return self.phi_.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # The main input is text, as for CountVectorizer.  A document-term matrix of
        # non-negative integer counts is accepted too (sparse included), but not the
        # arbitrary float arrays the numeric estimator checks feed, so two_d_array
        # stays False; tests/models/test_sklearn_lda.py checks the matrix path itself.
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.input_tags.sparse = True
        tags.input_tags.positive_only = True
        return tags

    # ----------------------------------------------------------- transform
    def _corpus(self, X) -> Corpus:
        """``X`` (texts or counts) as a Corpus over ``vocabulary_``."""
        check_is_fitted(self, "phi_")
        fitted_on_counts = hasattr(self, "n_features_in_")
        if is_count_matrix(X):
            if not fitted_on_counts:
                raise ValueError("this LDA was fitted on texts; pass texts, not a "
                                 "document-term matrix")
            X = validate_data(self, X, reset=False, accept_sparse="csr", dtype=None,
                              ensure_all_finite=True)
            check_non_negative(X, "LDA (document-term matrix X)")
            return corpus_from_counts(X, self.vocabulary_)
        if fitted_on_counts and not isinstance(X, Corpus):
            raise ValueError(f"this LDA was fitted on a document-term matrix; pass one with "
                             f"its {self.n_features_in_} columns, not texts")
        return self.vocabulary_.transform(X)

    @obeys_n_jobs
    def transform(self, X, n_sweeps=None, burn_in=None):
        """Topic proportions of documents with Phi fixed at ``phi_`` (paper section 3.3).

        Parameters
        ----------
        X : iterable of str, pandas Series, token lists, Corpus (D,), or counts (D, V)
            The same kind of input as in :meth:`fit`.  Words not in the
            vocabulary are dropped (counted in ``vocabulary_.n_unseen_``).
        n_sweeps : int or None
            Sweeps of z per document (None: ``transform_sweeps``).
        burn_in : int or None
            Sweeps discarded before averaging (None: half of ``n_sweeps``).

        Returns
        -------
        theta : ndarray (D, K)
            ``(E[n_{d,k}] + alpha) / (N_d + K alpha)``, ``E[n_{d,k}]`` the sum over
            the tokens of their conditional ``p(z_i = k | z_-i)``, averaged over the kept
            sweeps (Rao-Blackwellised); rows sum to one (``1/K`` for an empty document).  Columns
            :meth:`get_feature_names_out`; a DataFrame under
            ``set_output(transform="pandas")``.
        """
        check_is_fitted(self, "phi_")
        n_sweeps = check_positive_int(self.transform_sweeps if n_sweeps is None else n_sweeps,
                                      "n_sweeps")
        burn_in = check_burn_in(burn_in, n_sweeps)
        corpus = self._corpus(X)
        with using_threads(check_n_jobs(self.n_jobs)):
            return kernels.predict_topic_proportions(corpus.tokens, corpus.doc_ptr, self.phi_,
                                                     self.alpha, n_sweeps, burn_in,
                                                     self.seed_)

    @obeys_n_jobs
    def fit_transform(self, X, y=None, **kwargs):
        """:meth:`fit`, then :meth:`transform` of the same documents."""
        if is_count_matrix(X):
            return self.fit(X).transform(X, **kwargs)
        corpus = self._fit_corpus(X) if not isinstance(X, Corpus) else X
        return self.fit(corpus).transform(corpus, **kwargs)

    # ------------------------------------------------------- held-out fit
    def score(self, X, y=None, n_sweeps=None):
        """Held-out log-likelihood of documents ``X`` by document completion (higher is better).

        Each document is cut into its first ``floor(N_d / 2)`` tokens (observed)
        and the rest (held out); ``theta_d`` is estimated from the observed
        half with Phi fixed at ``phi_`` (the Gibbs sampler of
        :meth:`transform`) and the held-out half is scored:
        ``sum_d sum_{i held out} log sum_k theta_dk phi_{k, w_di}``
        (:func:`dolda.evaluate.heldout.document_completion`, Wallach et al. 2009).
        Unlike scikit-learn's ``LatentDirichletAllocation.score`` (a
        variational lower bound on ``log p(X)``) this is an estimate of the
        predictive log-likelihood of the held-out half; it is comparable
        across models fitted on the same vocabulary, e.g. to choose
        ``n_topics`` with GridSearchCV.

        Parameters
        ----------
        X : as in :meth:`transform` (D,) or (D, V)
        y : ignored
        n_sweeps : int or None
            Sweeps of z for the observed halves (None: ``transform_sweeps``).

        Returns
        -------
        float
        """
        return self._completion(X, n_sweeps)[0]

    def perplexity(self, X, n_sweeps=None):
        """``exp(-score(X) / number of held-out tokens)``: lower is better.

        The per-token perplexity of the held-out halves (see :meth:`score`);
        ``V`` for topics that are uniform over the vocabulary.
        """
        loglik, n_scored = self._completion(X, n_sweeps)
        if n_scored == 0:
            raise ValueError("no document has a known token: nothing to hold out")
        return float(np.exp(-loglik / n_scored))

    def _completion(self, X, n_sweeps):
        from ..evaluate.heldout import document_completion

        check_is_fitted(self, "phi_")
        n_sweeps = check_positive_int(self.transform_sweeps if n_sweeps is None else n_sweeps,
                                      "n_sweeps")
        corpus = self._corpus(X)
        with using_threads(check_n_jobs(self.n_jobs)):
            loglik, n_tokens = document_completion(self.phi_, self.alpha, corpus.tokens,
                                                   corpus.doc_ptr, n_sweeps, n_sweeps // 2,
                                                   self.seed_)
        return float(loglik.sum()), int(n_tokens.sum())

    # ------------------------------------------------------- interpretation
    def top_words(self, n=10, as_frame=False, relevance=DEFAULT_RELEVANCE):
        """The ``n`` most relevant words of every topic.

        Words are ranked by Sievert & Shirley's relevance with lambda =
        ``relevance`` (:func:`dolda.interpret.topics.relevance`); ``relevance=1`` ranks by
        ``phi_{k,w}`` alone.

        Returns
        -------
        list of K lists of str, or a DataFrame (K, n) when ``as_frame``.
        """
        check_is_fitted(self, "phi_")
        n = check_positive_int(n, "n")
        top = model_top_words(self, n, relevance)
        if as_frame:
            return pd.DataFrame(top, index=[f"topic {k}" for k in range(len(top))],
                                columns=[f"word {i + 1}" for i in range(top.shape[1])])
        return [list(row) for row in top]

    def topic_labels(self, n_words=DEFAULT_LABEL_WORDS, relevance=DEFAULT_RELEVANCE):
        """Short distinct labels of the topics (their most relevant words), list of K str.

        See :func:`dolda.interpret.topics.topic_labels`.
        """
        check_is_fitted(self, "phi_")
        return model_topic_labels(self, n_words, relevance)

    # --------------------------------------------------------- persistence
    def _to_state(self):
        """Metadata and arrays for :func:`dolda.io.save_model` (no pickle)."""
        from .. import io

        check_is_fitted(self, "phi_")
        meta = {
            # the client is a live connection, not part of the model
            "params": io.encode_params({name: value for name, value
                                        in self.get_params(deep=False).items()
                                        if name != "client"}),
            "vocabulary": self.vocabulary_.to_dict(),
            "seed": int(self.seed_),
            "n_iter": int(self.n_iter_),
            "n_tokens": int(self.n_tokens_),
            "sampler": self.sampler_,
            "n_features_in": (int(self.n_features_in_) if hasattr(self, "n_features_in_")
                              else None),
            "feature_names_in": io.encode_strings(getattr(self, "feature_names_in_", None)),
        }
        arrays = {"phi": self.phi_, "loglik": self.loglik_,
                  "doc_topic_counts": self.doc_topic_counts_, "z": self.z_}
        return meta, arrays

    @classmethod
    def _from_state(cls, meta, arrays):
        """Rebuild a fitted LDA from :meth:`_to_state` output (see :func:`dolda.load`)."""
        from .. import io

        model = cls(**io.decode_params(meta["params"]))
        model.vocabulary_ = Vocabulary.from_dict(meta["vocabulary"])
        model.seed_ = meta["seed"]
        model.n_iter_ = meta["n_iter"]
        model.n_tokens_ = meta["n_tokens"]
        model.sampler_ = meta["sampler"]
        if meta.get("n_features_in") is not None:  # fitted on a document-term matrix
            model.n_features_in_ = int(meta["n_features_in"])
            names = io.decode_strings(meta.get("feature_names_in"))
            if names is not None:
                model.feature_names_in_ = names
        model.phi_ = arrays["phi"]
        model.loglik_ = arrays["loglik"]
        model.doc_topic_counts_ = arrays.get("doc_topic_counts")
        model.z_ = arrays.get("z")
        model.timings_ = {}
        return model

    def save(self, path, overwrite=False):
        """Save the fitted model as a directory; read it back with ``dolda.load``."""
        from ..io import save_model

        return save_model(self, path, overwrite=overwrite)
