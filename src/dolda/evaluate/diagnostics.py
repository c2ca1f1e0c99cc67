"""Convergence diagnostics: topic alignment across chains, ArviZ export, R-hat and ESS,
and the inputs of pyLDAvis."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from ..utils.draws import BlockDraws


def hellinger(p, q):
    """Hellinger distances between the rows of ``p`` (A, V) and of ``q`` (B, V): (A, B)."""
    sp, sq = np.sqrt(p), np.sqrt(q)
    return np.sqrt(np.maximum(0.0, 1.0 - sp @ sq.T))


def align_topics(phi_ref, phi):
    """Permutation ``perm`` such that ``phi[perm]`` matches ``phi_ref`` topic by topic.

    Topic labels are arbitrary, so two chains may find the same topics in a
    different order (label switching).  ``perm`` minimises the total Hellinger
    distance between matched topics (Hungarian assignment), and
    ``phi[perm][k]`` is the topic of ``phi`` that plays the role of
    ``phi_ref[k]``.

    Parameters
    ----------
    phi_ref, phi : (K, V) topics of the reference chain and of another chain.

    Returns
    -------
    perm : int ndarray (K,)
    """
    _, cols = linear_sum_assignment(hellinger(phi_ref, phi))
    return cols


#: Top words per topic compared when topics are matched (what a reader sees of a topic).
TOP_WORDS = 10


def top_word_ids(phi, n=TOP_WORDS, topic_weights=None, lam=None):
    """The ids of the ``n`` top words of every topic: int (K, n), best first.

    Ranked as :meth:`dolda.DOLDA.top_words` shows them: by Sievert & Shirley's relevance with
    ``lam`` (default :data:`dolda.interpret.topics.DEFAULT_RELEVANCE`) over the word
    frequencies implied by ``topic_weights`` (K,) (equal weights when None); ``lam=1`` ranks
    by ``phi_{k,w}`` alone.
    """
    from ..interpret.topics import DEFAULT_RELEVANCE, relevance, word_probabilities

    phi = np.asarray(phi, dtype=np.float64)
    lam = DEFAULT_RELEVANCE if lam is None else lam
    score = phi if lam == 1 else relevance(phi, word_probabilities(phi, topic_weights), lam)
    n = min(int(n), phi.shape[1])
    top = np.argpartition(-score, n - 1, axis=1)[:, :n]
    order = np.argsort(-np.take_along_axis(score, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1)


def shared_top_words(top_ref, top):
    """``shared[k, j]``: how many top words topic ``k`` of ``top_ref`` (K, n) shares with
    topic ``j`` of ``top`` (K', n)."""
    top_ref, top = np.asarray(top_ref), np.asarray(top)
    V = int(max(top_ref.max(), top.max())) + 1
    a = np.zeros((len(top_ref), V), dtype=np.int32)
    b = np.zeros((len(top), V), dtype=np.int32)
    np.put_along_axis(a, top_ref, 1, axis=1)
    np.put_along_axis(b, top, 1, axis=1)
    return a @ b.T


def match_topics(phi_ref, phi, n=TOP_WORDS, weights_ref=None, weights=None):
    """Match the topics of ``phi`` to those of ``phi_ref`` by the top words a reader sees.

    Hungarian assignment maximising the number of shared top-``n`` words (the convention of
    stm's ``multiSTM`` and of Greene et al. 2014), ties broken by the smaller Hellinger
    distance.  Returns ``(perm, shared)``: ``phi[perm[k]]`` is matched to ``phi_ref[k]`` and
    shares ``shared[k]`` of its ``n`` top words.
    """
    top_ref = top_word_ids(phi_ref, n, weights_ref)
    top = top_word_ids(phi, n, weights)
    overlap = shared_top_words(top_ref, top).astype(np.float64)
    dist = hellinger(np.asarray(phi_ref, np.float64), np.asarray(phi, np.float64))
    _, perm = linear_sum_assignment(-(overlap + 0.5 * (1.0 - dist)))  # 0.5: below one word
    return perm, overlap[np.arange(len(perm)), perm].astype(np.int64)


# ------------------------------------------------------------------ ArviZ export
def _coord_labels(labels):
    """Class labels usable as xarray coordinates (objects become strings)."""
    labels = np.asarray(labels)
    return labels.astype(str) if labels.dtype == object else labels


def _by_chain(draws, n_chains, name):
    """(C * S, ...) pooled chain after chain -> (C, S, ...), a view in the draws' own float
    dtype (float32 draws are not copied to float64; the summaries below read them in
    float64)."""
    draws = np.asarray(draws)
    if draws.dtype.kind != "f":
        draws = draws.astype(np.float64)
    if draws.shape[0] % n_chains:
        raise ValueError(f"{name} has {draws.shape[0]} draws, not a multiple of the "
                         f"{n_chains} chains")
    return draws.reshape((n_chains, draws.shape[0] // n_chains) + draws.shape[1:])


def draws_to_inference_data(eta_draws, *, n_chains, classes, feature_names, tau_draws=None,
                            lambda_draws=None, lambda_features=None, loglik=None,
                            kept_iterations=None, attrs=None, log_likelihood=None,
                            observed=None):
    """Build an ArviZ ``InferenceData`` from pooled DO-probit draws.

    Parameters
    ----------
    eta_draws : ndarray (C * S, L, P)
        Kept draws of the coefficients ``eta``, chain after chain.
    n_chains : int
        ``C``.
    classes : array-like (L,)
        Class labels (coordinate ``class``).
    feature_names : sequence of str (P,)
        Coordinate ``feature``.
    tau_draws : ndarray (C * S, L) or None
        Global Horseshoe scales ``tau_l``.
    lambda_draws : ndarray (C * S, L, P') or None
        Local Horseshoe scales ``lambda_{lp}`` of the shrunk coefficients.
    lambda_features : sequence of str (P',) or None
        Coordinate ``shrunk_feature`` of ``lambda`` (the features under the
        Horseshoe, i.e. all but the intercept).
    loglik : dict of str -> ndarray (C, n_iter), or None
        Log-likelihood traces over *all* iterations, burn-in included.
    kept_iterations : int ndarray (S,) or None
        The iterations at which the draws were kept (``burn_in, burn_in + thin, ...``);
        used to put the log-likelihood of the kept draws next to the posterior.
    attrs : dict or None
        Stored in the attributes of every group.
    log_likelihood : ndarray (C * S, D) or None
        Pointwise log-likelihood of every observation at every kept draw, chain
        after chain; becomes the ``log_likelihood`` group (variable ``y``, dims
        chain, draw, document) that ``az.loo`` and ``az.waic`` read.
    observed : array-like (D,) or None
        The observed labels, stored as ``observed_data`` (variable ``y``).

    Returns
    -------
    arviz.InferenceData
        ``posterior``: ``eta`` (chain, draw, class, feature), ``tau`` (chain, draw,
        class), ``lambda`` (chain, draw, class, shrunk_feature), views of the draws in
        their own dtype (float32 for a fit; :func:`convergence_table` sums in float64).
        ``sample_stats``: for every trace ``name`` in ``loglik``, ``name``
        (chain, draw) at the kept draws, and ``name + "_trace"`` (chain,
        iteration) over all iterations, burn-in included.
    """
    import arviz as az
    import xarray as xr

    eta = _by_chain(eta_draws, n_chains, "eta_draws")
    n_draws = eta.shape[1]
    coords = {"chain": np.arange(n_chains), "draw": np.arange(n_draws),
              "class": _coord_labels(classes), "feature": np.asarray(feature_names, dtype=str)}
    if len(coords["feature"]) != eta.shape[3]:
        raise ValueError(f"{len(coords['feature'])} feature names for {eta.shape[3]} "
                         "columns of eta")
    posterior = {"eta": (("chain", "draw", "class", "feature"), eta)}
    if tau_draws is not None:
        dims = ("chain", "draw", "class") + (("scale_block",) if np.ndim(tau_draws) == 3
                                             else ())
        posterior["tau"] = (dims, _by_chain(tau_draws, n_chains, "tau"))
    if lambda_draws is not None:
        lam = _by_chain(lambda_draws, n_chains, "lambda_draws")
        coords["shrunk_feature"] = np.asarray(lambda_features, dtype=str)
        posterior["lambda"] = (("chain", "draw", "class", "shrunk_feature"), lam)
    attrs = dict(attrs or {})
    attrs.setdefault("inference_library", "dolda")
    groups = {"posterior": xr.Dataset(posterior, coords=coords, attrs=attrs)}
    if loglik:
        stats = {}
        n_iter = None
        for name, trace in loglik.items():
            trace = np.asarray(trace, dtype=np.float64).reshape(n_chains, -1)
            n_iter = trace.shape[1]
            stats[name + "_trace"] = (("chain", "iteration"), trace)
            if kept_iterations is not None and len(kept_iterations) == n_draws:
                stats[name] = (("chain", "draw"), trace[:, np.asarray(kept_iterations)])
        stat_coords = {"chain": coords["chain"], "draw": coords["draw"],
                       "iteration": np.arange(n_iter)}
        groups["sample_stats"] = xr.Dataset(stats, coords=stat_coords, attrs=attrs)
    if log_likelihood is not None:
        pointwise = _by_chain(log_likelihood, n_chains, "log_likelihood")
        if pointwise.shape[1] != n_draws:
            raise ValueError(f"log_likelihood has {pointwise.shape[1]} draws per chain, eta "
                             f"has {n_draws}")
        doc_coords = {"chain": coords["chain"], "draw": coords["draw"],
                      "document": np.arange(pointwise.shape[2])}
        groups["log_likelihood"] = xr.Dataset(
            {"y": (("chain", "draw", "document"), pointwise)}, coords=doc_coords, attrs=attrs)
        if observed is not None:
            groups["observed_data"] = xr.Dataset(
                {"y": (("document",), _coord_labels(np.asarray(observed)))},
                coords={"document": doc_coords["document"]}, attrs=attrs)
    return az.InferenceData(**groups)


# ------------------------------------------------------------------ pointwise log-likelihood
def pointwise_do_loglik(U, eta_draws, y_index, max_block=2e7):
    """``log P(y_d | u_d, eta^(s))`` under the DO probit, for every draw and document.

    ``P(y = l | mu) = F(mu_l) prod_{j != l} F(-mu_j) / Z(mu)``, i.e.
    ``softmax_l(log F(mu_l) - log F(-mu_l))`` with ``mu_l = u . eta_l`` (the
    quantity whose sum over documents is the ``do`` log-likelihood trace).

    Parameters
    ----------
    U : ndarray or scipy.sparse matrix (D, P)
        Regressors ``u_d``.
    eta_draws : ndarray (S, L, P), float32 or float64 (converted block by block)
    y_index : int array (D,)
        Class index of every document.
    max_block : float
        Bound on the ``S_block * D * L`` temporaries.

    Returns
    -------
    ndarray (S, D)
    """
    from scipy.special import log_ndtr, logsumexp

    from ..posterior.predictors import _draw_chunks

    if not isinstance(eta_draws, BlockDraws):  # a compact word block is read slice by
        eta_draws = np.asarray(eta_draws)      # slice, never assembled whole
    y_index = np.asarray(y_index, dtype=np.int64)
    n_docs = U.shape[0]
    if len(y_index) != n_docs:
        raise ValueError(f"{len(y_index)} labels for {n_docs} documents")
    out = np.empty((len(eta_draws), n_docs))
    if sp.issparse(U):
        # fused and parallel over documents (dolda.sampler.linear_predictors): no S x D x L
        # temporaries, 2-3x faster on 2 threads than the array path below
        from ..sampler import linear_predictors as lp

        U = sp.csr_matrix(U, dtype=np.float64)
        U.sort_indices()
        arrays = lp.as_csr_arrays(U)
        _, n_classes, n_columns = eta_draws.shape
        step = max(1, int(min(max_block, 4e6) // max(1, n_classes * n_columns)))
        for lo in range(0, len(eta_draws), step):
            eta_t = lp.draws_by_column(eta_draws[lo:lo + step])
            chunk = np.empty((len(eta_t), n_docs))
            lp.do_pointwise_loglik(*arrays, eta_t, y_index, chunk)
            out[lo:lo + len(eta_t)] = chunk
        return out
    rows = np.arange(n_docs)
    lo = 0
    for mu in _draw_chunks(U, eta_draws, max_block):  # (s, D, L) float64, slice by slice
        score = log_ndtr(mu) - log_ndtr(-mu)
        out[lo:lo + len(mu)] = score[:, rows, y_index] - logsumexp(score, axis=2)
        lo += len(mu)
    return out


def _label_index(classes, y, n_docs):
    """Labels ``y`` -> indices into ``classes``, or a one-line error."""
    values = np.asarray(y, dtype=object).ravel().tolist()
    if len(values) != n_docs:
        raise ValueError(f"y has {len(values)} labels for {n_docs} training documents")
    index = {c: i for i, c in enumerate(np.asarray(classes).tolist())}
    unknown = [v for v in values if v not in index]
    if unknown:
        raise ValueError(f"y holds {unknown[0]!r}, which is not a class of the model "
                         f"({list(index)})")
    return np.array([index[v] for v in values], dtype=np.int64)


def dolda_inference_data(model, y=None, X=None, texts=None):
    """ArviZ export of a fitted :class:`dolda.DOLDA`; see :meth:`dolda.DOLDA.to_inference_data`.

    With no arguments, the ``log_likelihood`` group holds the training documents' pointwise
    log-likelihood computed at the end of ``fit`` (``training_loglik_``; kept in model
    files), everything ``az.loo`` needs.  With the training labels ``y`` (and covariates
    ``X`` when the model has some), the ``log_likelihood`` group holds
    ``log P(y_d | u_d, eta^(s))`` (:func:`pointwise_do_loglik`) for every kept draw ``s`` and
    training
    document ``d``, so that ``az.loo``, ``az.waic`` and ``az.compare`` work.
    ``u_d = [1, x_d, zbar_d]`` uses the final topic proportions of the
    training documents, ``zbar_d = n_{d,.} / N_d`` (``doc_topic_counts_``), for
    every draw: the per-draw ``zbar`` is not kept, and once the chain has
    converged it moves little.  ``texts`` (the training documents) replaces
    them by ``model.transform(texts)``, which a two-step fit (no counts kept)
    needs.

    The eta-posterior that the sampler targets is a product of one-vs-rest
    probit likelihoods (see DESIGN), not of the DO probabilities, so PSIS-LOO
    is an importance-sampling approximation here; read its Pareto-k
    diagnostics.
    """
    from sklearn.utils.validation import check_is_fitted

    from ..utils.validation import check_burn_in

    check_is_fitted(model, "eta_draws_")
    n_chains = int(getattr(model, "n_chains_", 1))
    burn_in = check_burn_in(model.burn_in, model.n_iter_)
    kept = np.arange(burn_in, model.n_iter_)[::int(model.thin)]
    names = list(model.feature_names_)
    lam = model.lambda_draws_
    lam_names = names[1:]
    eta = model.eta_draws_
    if isinstance(eta, BlockDraws):  # the compact word block: lambda of the other columns
        lam_names = (names[:eta.start] + names[eta.stop:])[1:]
    if lam is not None:
        lam = lam[:, :, 1:]  # the intercept is not shrunk
    loglik = {f"loglik_{part}" if part != "total" else "loglik":
              model.loglik_[part].to_numpy().reshape(n_chains, -1)
              for part in ("total", "do", "lda")}
    attrs = {"model": "DOLDA", "n_iter": int(model.n_iter_), "burn_in": int(burn_in),
             "thin": int(model.thin), "n_chains": n_chains, "prior": str(prior_name(model)),
             "topic_alignment": "Hungarian matching of Phi to chain 0 on Hellinger distance"}
    pointwise = observed = None
    stored = getattr(model, "training_loglik_", None)
    if y is None and X is None and texts is None and stored is not None:
        # computed at the end of fit (:func:`training_pointwise_loglik`)
        pointwise = np.asarray(stored, dtype=np.float64)
    if y is not None:
        words = getattr(model, "word_features_", None)
        if texts is not None:
            zbar = np.asarray(model.transform(texts), dtype=np.float64)
        elif words is not None:
            raise ValueError("this model has word covariates (n_words), which the training "
                             "topic counts do not carry; pass the training texts to compute "
                             "the log-likelihood")
        else:
            counts = getattr(model, "doc_topic_counts_", None)
            if counts is None:
                raise ValueError("this model kept no training topic counts (two-step fit); "
                                 "pass the training texts to compute the log-likelihood")
            counts = np.asarray(counts, dtype=np.float64)
            zbar = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
        n_docs = zbar.shape[0]
        y_index = _label_index(model.classes_, y, n_docs)
        design, _ = model._covariates(X, n_docs, fit=False)
        if words is not None:  # [1, x, words, zbar], the order of feature_names_
            design = sp.hstack([design, words.transform(model._make_corpus(texts, fit=False))])
            U = sp.hstack([design, zbar], format="csr")
        else:
            U = np.hstack([design, zbar])
        pointwise = pointwise_do_loglik(U, model.eta_draws_, y_index)
        observed = np.asarray(y, dtype=object)
    return draws_to_inference_data(model.eta_draws_, n_chains=n_chains, classes=model.classes_,
                                   feature_names=names, tau_draws=model.tau_draws_,
                                   lambda_draws=lam, lambda_features=lam_names, loglik=loglik,
                                   kept_iterations=kept, attrs=attrs,
                                   log_likelihood=pointwise, observed=observed)


#: Largest draws x documents of the pointwise log-likelihood a fit keeps (float32: 80 MB).
MAX_POINTWISE = 2e7


def training_pointwise_loglik(model, Xd, y_index):
    """``log P(y_d | u_d, eta^(s))`` (S, D) float32 of the training documents, kept by ``fit``
    (``training_loglik_``) so that ``to_inference_data()`` with no arguments has the
    ``log_likelihood`` group ``az.loo`` needs; ``u_d = [1, x_d, words_d, zbar_d]`` from the
    chain's design ``Xd`` and the final topic counts, as :func:`dolda_inference_data` builds
    it from ``y``.  None when draws x documents exceeds :data:`MAX_POINTWISE`."""
    counts = model.doc_topic_counts_
    if len(model.eta_draws_) * counts.shape[0] > MAX_POINTWISE:
        return None
    return pointwise_do_loglik(count_regressors(Xd, counts), model.eta_draws_,
                               y_index).astype(np.float32)


def count_regressors(Xd, counts):
    """``U = [Xd, zbar]`` of the training documents with ``zbar`` from their topic counts
    ``counts`` (D, K) (a document with no tokens: zeros); CSR beside a sparse ``Xd``."""
    counts = np.asarray(counts, dtype=np.float64)
    zbar = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1.0)
    if sp.issparse(Xd):
        return sp.hstack([Xd, zbar], format="csr")
    return np.hstack([np.asarray(Xd, dtype=np.float64), zbar])


def probit_inference_data(model, feature_names=None, X=None, y=None):
    """ArviZ export of a fitted :class:`dolda.DOProbit`; see its ``to_inference_data``.

    With the training data ``X`` and ``y``, the ``log_likelihood`` group holds
    ``log P(y_d | x_d, eta^(s))`` for every kept draw and observation
    (:func:`pointwise_do_loglik`; summed over observations it is the
    ``loglik`` trace at that draw), for ``az.loo`` and ``az.waic``.  With
    ``likelihood="do"`` that is the likelihood the chain conditioned on, so
    PSIS-LOO estimates the DO model's own leave-one-out score; with the default
    one-vs-rest chain it scores the DO formula on draws of another posterior.
    """
    from sklearn.utils.validation import check_is_fitted

    from ..utils.validation import check_burn_in

    check_is_fitted(model, "eta_draws_")
    n_chains = int(getattr(model, "n_chains_", 1))
    names = [str(n) for n in model._feature_names(feature_names)]
    all_names = (["(intercept)"] if model.fit_intercept else []) + names
    burn_in = check_burn_in(model.burn_in, model.n_iter_)
    kept = np.arange(burn_in, model.n_iter_)[::int(model.thin)]
    attrs = {"model": "DOProbit", "n_iter": int(model.n_iter_), "burn_in": int(burn_in),
             "thin": int(model.thin), "n_chains": n_chains, "prior": str(prior_name(model))}
    pointwise = observed = None
    if (X is None) != (y is None):
        raise ValueError("pass both X and y (the training data) for the log_likelihood group")
    if y is not None:
        U = model._design(model._check_X(X))
        y_index = _label_index(model.classes_, y, U.shape[0])
        pointwise = pointwise_do_loglik(U, model.eta_draws_, y_index)
        observed = np.asarray(y, dtype=object)
    return draws_to_inference_data(
        model.eta_draws_, n_chains=n_chains, classes=model.classes_, feature_names=all_names,
        tau_draws=model.tau_draws_, lambda_draws=model.lambda_draws_, lambda_features=names,
        loglik={"loglik": np.asarray(model.loglik_).reshape(n_chains, -1)},
        kept_iterations=kept, attrs=attrs, log_likelihood=pointwise, observed=observed)


# ------------------------------------------------------------------ R-hat and ESS
def _split_single_chain(ds):
    """One chain (1, S) -> its two halves as two chains (2, S // 2), for split R-hat."""
    import xarray as xr

    n = ds.sizes["draw"] // 2
    first = ds.isel(chain=0, draw=slice(0, n)).assign_coords(draw=np.arange(n))
    second = ds.isel(chain=0, draw=slice(ds.sizes["draw"] - n, None)).assign_coords(
        draw=np.arange(n))
    return xr.concat([first, second], dim="chain").assign_coords(chain=[0, 1])


#: Draws per chain (per half of a single chain) below which arviz declines R-hat and ESS.
MIN_DRAWS_PER_CHAIN = 4


def convergence_table(idata, var_name="eta"):
    """R-hat and effective sample sizes of every coefficient, one row each.

    Parameters
    ----------
    idata : arviz.InferenceData or a fitted DOLDA / DOProbit
    var_name : str, default="eta"
        A posterior variable.

    Returns
    -------
    pandas.DataFrame
        One row per element of ``var_name`` (index: its non-sample
        coordinates, e.g. ``class, feature``), columns ``mean, sd, ess_bulk,
        ess_tail, r_hat``.  ``attrs["split_single_chain"]`` is True when the
        posterior has a single chain: R-hat and ESS are then computed on its
        two halves taken as two chains (split R-hat, which detects drift within
        the chain but not a second mode that the chain never visited).
        ``attrs["too_short"]`` says why R-hat and ESS are NaN when there are fewer than
        :data:`MIN_DRAWS_PER_CHAIN` draws per chain (empty otherwise).
    """
    import arviz as az

    if not isinstance(idata, az.InferenceData):
        idata = idata.to_inference_data()
    ds = idata.posterior[[var_name]]
    single = ds.sizes["chain"] == 1
    chains = _split_single_chain(ds) if single else ds
    # mean and sd accumulated in float64 (a fit's draws are float32; xarray's NaN-skipping
    # sd would sum in float32: a NaN draw makes them NaN, as it makes R-hat and ESS NaN);
    # R-hat and ESS work on ranks
    sample = dict(dim=("chain", "draw"), dtype=np.float64, skipna=False)
    n_draws = ds.sizes["chain"] * ds.sizes["draw"]
    # too few draws: NaN, said in attrs["too_short"], instead of numpy's "Degrees of
    # freedom <= 0" and arviz's shape warnings
    nan = ds.mean(**sample) * np.nan
    short = chains.sizes["draw"] < MIN_DRAWS_PER_CHAIN
    columns = {
        "mean": ds.mean(**sample) if n_draws else nan,
        "sd": ds.std(ddof=1, **sample) if n_draws >= 2 else nan,
        "ess_bulk": nan if short else az.ess(chains, method="bulk"),
        "ess_tail": nan if short else az.ess(chains, method="tail"),
        "r_hat": nan if short else az.rhat(chains),
    }
    frame = None
    for name, value in columns.items():
        col = value[var_name].to_series().rename(name)
        frame = col.to_frame() if frame is None else frame.join(col)
    frame.attrs["split_single_chain"] = bool(single)
    frame.attrs["too_short"] = (
        f"R-hat and ESS need at least {MIN_DRAWS_PER_CHAIN} draws per chain"
        f"{' half' if single else ''}; this posterior has {chains.sizes['draw']}: they are NaN"
        if short else "")
    return frame


def worst_rhat(model, topics_only=True):
    """The largest R-hat among the eta coefficients (NaN entries ignored).

    Parameters
    ----------
    model : fitted DOLDA or DOProbit, or arviz.InferenceData
    topics_only : bool, default=True
        Only the topic coefficients (features named ``"topic k"``); the
        intercept and covariates are left out.  Ignored when no feature is a topic.

    Returns
    -------
    float
    """
    table = convergence_table(model, "eta")
    r_hat = table["r_hat"]
    if topics_only:
        features = table.index.get_level_values("feature").astype(str)
        topics = features.str.startswith("topic ")
        if topics.any():
            r_hat = r_hat[topics]
    return float(np.nanmax(r_hat.to_numpy())) if r_hat.notna().any() else float("nan")


# ------------------------------------------------------------------ pyLDAvis
def export_pyldavis(model, texts=None):
    """The inputs of ``pyLDAvis.prepare`` for a fitted :class:`dolda.DOLDA` or :class:`dolda.LDA`.

    Parameters
    ----------
    model : fitted DOLDA or LDA
        Uses ``phi_`` (K, V), ``alpha``, ``vocabulary_`` and, without texts,
        ``doc_topic_counts_`` (D, K).
    texts : iterable of str, Corpus or None
        Documents to describe.  None uses the training documents through
        their final topic counts ``n_{d,k}``; texts are counted with the
        model's vocabulary and their theta sampled with Phi fixed, as
        ``transform`` does (``transform_sweeps`` or ``predict_sweeps`` sweeps).

    Returns
    -------
    dict
        ``topic_term_dists`` (K, V), rows ``phi_k`` summing to 1;
        ``doc_topic_dists`` (D, K), rows ``theta_d = (n_{d,k} + alpha_k) /
        (N_d + sum_k alpha_k)`` summing to 1; ``doc_lengths`` (D,) ``N_d``;
        ``vocab`` (V,) the words; ``term_frequency`` (V,) corpus counts of every
        word (without texts: the expected counts ``sum_k n_k phi_{k,w}`` of the
        training corpus, ``n_k`` the tokens of topic ``k``).

    Examples
    --------
    >>> import pyLDAvis                                       # doctest: +SKIP
    >>> from dolda.evaluate.diagnostics import export_pyldavis        # doctest: +SKIP
    >>> vis = pyLDAvis.prepare(**export_pyldavis(model), sort_topics=False)  # doctest: +SKIP
    >>> pyLDAvis.save_html(vis, "topics.html")                # doctest: +SKIP

    With ``sort_topics=False`` pyLDAvis numbers topic ``k`` as ``k + 1``.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "phi_")
    phi = np.asarray(model.phi_, dtype=np.float64)
    phi = phi / phi.sum(axis=1, keepdims=True)
    n_topics, n_words = phi.shape
    alpha = model._alpha() if hasattr(model, "_alpha") else model.alpha  # learned?
    alpha = np.broadcast_to(np.asarray(alpha, dtype=np.float64), (n_topics,))
    if texts is None:
        counts = getattr(model, "doc_topic_counts_", None)
        if counts is None:
            raise ValueError("this model kept no training topic counts (two-step fit); "
                             "pass texts")
        counts = np.asarray(counts, dtype=np.float64)
        lengths = counts.sum(axis=1)
        theta = (counts + alpha) / (lengths[:, None] + alpha.sum())
        term_frequency = counts.sum(axis=0) @ phi
    else:
        from ..utils.validation import check_burn_in, check_n_jobs
        from ..sampler.lda import predict_topic_proportions
        from ..sampler.threads import using_threads

        corpus = model.vocabulary_.transform(texts)
        lengths = corpus.doc_lengths.astype(np.float64)
        sweeps = int(getattr(model, "transform_sweeps", None)
                     or getattr(model, "predict_sweeps", None) or 50)
        burn_in = check_burn_in(getattr(model, "predict_burn_in", None), sweeps)
        with using_threads(check_n_jobs(getattr(model, "n_jobs", None))):
            theta = predict_topic_proportions(corpus.tokens, corpus.doc_ptr, phi, alpha, sweeps,
                                              burn_in, int(getattr(model, "seed_", 0)))
        term_frequency = np.bincount(corpus.tokens, minlength=n_words).astype(np.float64)
    theta = theta / theta.sum(axis=1, keepdims=True)
    return {"topic_term_dists": phi, "doc_topic_dists": theta,
            "doc_lengths": lengths.astype(np.int64), "vocab": list(model.vocabulary_.words),
            "term_frequency": term_frequency}


def prior_name(model):
    """The prior's name ("horseshoe" or "normal") of a DOLDA or a DOProbit."""
    if hasattr(model, "_flat_params"):
        return model._flat_params()["prior"]
    return model.prior
