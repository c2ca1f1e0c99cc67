"""The DOLDA Gibbs iteration: a -> eta -> (tau, lambda) -> z -> Phi (paper section 3.1).

A chain state is a :class:`DOLDAState`; :func:`dolda_step` maps a state to the
next one and returns an info record.  The blocks are the DO-probit blocks of
:mod:`dolda.sampler.probit_blocks`, the supervised z-sweep of
:mod:`dolda.sampler.supervised` and the topic kernels of :mod:`dolda.sampler.lda`.
Every random draw is keyed by ``(seed, iteration, block)``, so a chain resumed
from a saved state at iteration ``t`` continues exactly as an uninterrupted one.

The iteration is split into shard-local blocks (:mod:`dolda.sampler.shard`:
the a-step with its statistics, the z-sweep with its counts) and global blocks
(:func:`eta_step`, :func:`topic_globals`, :func:`phi_step`), so that the
local loop and the distributed one (:mod:`dolda.backends`) share one
implementation and give the same chain.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from ..utils.heap import release_in_iteration
from . import lda as topic_kernels
from . import polya
from . import probit_blocks as probit_blocks
from . import shard as shard_blocks
from . import sparse_eta
from .alpha import as_alpha
from .rng import STEP_ETA, STEP_SHRINK, numpy_generator


class TopicData(NamedTuple):
    """The fixed data of a DOLDA chain.

    Attributes
    ----------
    tokens : int32 (N,)        word ids ``w``, documents back to back.
    doc_ptr : int64 (D+1,)     document ``d`` owns ``tokens[doc_ptr[d]:doc_ptr[d+1]]``.
    n_words : int              ``V``.
    X : float64 (D, P_x)       covariates ``x_d``, intercept first (a CSR matrix
                               with a sparse eta sampler).
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
    alpha: object  # float, or float64 (K,): the per-topic alpha_k (asymmetric prior)
    beta: float
    prior: probit_blocks.ProbitPrior
    z_sampler: str  # "exact", "mh" or "cycle"
    n_jobs: int
    #: With a sparse ``TopicData.X`` (:mod:`dolda.sampler.sparse_eta`): "cg", "bcm"
    #: or "cholesky" (of ``U^T U`` from the sparse ``U``).  A dense ``X`` always
    #: takes the reduced-statistics Cholesky path (:func:`eta_step`).
    eta_sampler: str = "cholesky"
    phi_sampler: str = "exact"  # "exact" (Dirichlet) or "polya" (sparse Pólya urn)
    loglik_every: int = 1  # log-likelihoods at iterations t with (t + 1) % loglik_every == 0
    #: the last ``n_word_columns`` columns of ``X`` are word covariates: what
    #: ``eta_sampler="gibbs"`` updates one by one (:mod:`dolda.sampler.word_step`)
    n_word_columns: int = 0


class DOLDAState(NamedTuple):
    """One state of the chain.

    Attributes
    ----------
    z : int32 (N,)            topic indicators.
    ndk : int32 (D, K)        document-topic counts.
    phi : float32 (V, K)      topics ``Phi``, word-major (``phi[w, k] = phi_{k,w}``):
                              the layout the z-sweeps read, drawn in place by
                              :func:`dolda.sampler.lda.draw_phi_word_major`.
    probit : ProbitState      ``a``, ``eta`` (L, P_x + K) and the shrinkage scales.
    phi_sparse : SparsePhi or None
                              with ``phi_sampler="polya"``: the same Phi by word,
                              non-zeros only, with its alias tables
                              (:mod:`dolda.sampler.polya`); None: derived from
                              ``phi`` when needed (a resumed chain).
    """

    z: np.ndarray
    ndk: np.ndarray
    phi: np.ndarray
    probit: probit_blocks.ProbitState
    phi_sparse: object = None
    #: the topic-word counts ``n_{k,w}`` Phi was drawn from (SparseCounts by topic, or
    #: WordCounts by word with the Pólya-urn Phi), for the running mean of Phi
    #: (:mod:`dolda.sampler.phi_mean`); None for a state not made by a step
    counts: object = None


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


def init_state(seed: int, data: TopicData, config: DOLDAConfig, topics=None) -> DOLDAState:
    """Random topic indicators (one stream per document), Phi drawn from their counts.

    ``topics``: a given start ``(z, ndk)`` instead of the random one (copied; e.g. the
    deterministic start of :mod:`dolda.sampler.topic_start`); Phi is still drawn on ``seed``.
    """
    if topics is None:
        z, ndk = topic_kernels.init_topics(data.tokens, data.doc_ptr, config.n_topics, seed)
    else:
        z, ndk = np.array(topics[0], np.int32), np.array(topics[1], np.int32)
    word_ptr, order = topic_kernels.word_index(data.tokens, data.n_words)
    n_columns = data.X.shape[1] + config.n_topics
    probit = probit_blocks.initial_state(
        len(data.y), data.n_classes, n_columns,
        None if config.prior is None or config.prior.blocks is None else config.prior.n_blocks)
    if config.prior is not None:
        probit = probit_blocks.fixed_scales(config.prior, probit)
    if config.phi_sampler == "polya":
        counts = polya.word_counts(word_ptr, order, z, config.n_topics)
        sparse = polya.polya_phi(counts, config.n_topics, config.beta, seed, -1)
        return DOLDAState(z, ndk, polya.dense(sparse, config.n_topics), probit, sparse)
    counts = topic_kernels.sparse_topic_word_counts(word_ptr, order, z, config.n_topics)
    phi = topic_kernels.draw_phi_word_major(
        counts, config.beta, seed, -1, np.empty((data.n_words, config.n_topics), np.float32))
    return DOLDAState(z, ndk, phi, probit)


def whole_corpus_shards(data: TopicData, n_shards=None) -> list[shard_blocks.Shard]:
    """The shards of ``data``: ``n_shards`` contiguous document ranges (None: from the data size).

    The layout is a function of the data and ``n_shards`` only, so the local and
    the Dask backend, with any number of threads or workers, run the same chain.
    """
    bounds = shard_blocks.shard_bounds(data.doc_ptr, n_shards)
    return shard_blocks.make_shards(data.tokens, data.doc_ptr, data.X, data.y, bounds,
                                    data.n_words)


def sum_in_order(parts):
    """Sum a list of arrays (or floats) left to right: a fixed order, fixed rounding."""
    total = parts[0]
    for part in parts[1:]:
        total = total + part
    return total


def eta_step(seed: int, iteration: int, probit: probit_blocks.ProbitState, gram, rhs,
             prior: probit_blocks.ProbitPrior, n_jobs: int) -> probit_blocks.ProbitState:
    """The global part of the DO-probit block: eta, then the Horseshoe scales.

    Runs on the driver: it needs only the reduced ``U^T U`` (P x P) and
    ``U^T a`` (L x P), and a Cholesky factorisation per class of a P x P
    matrix is far cheaper than shipping ``U`` anywhere.  The draws are those of
    :func:`dolda.sampler.probit_blocks.gibbs_step` with the dense Cholesky sampler.
    The returned state carries no utilities (``a`` stays on the shards).
    """
    rng_eta = numpy_generator(seed, iteration * 16 + STEP_ETA)
    normals = rng_eta.standard_normal(probit.eta.shape)
    prec = probit_blocks.prior_precision(prior, probit.lam2, probit.tau2)
    eta = probit_blocks.draw_coefficients(gram, rhs, prec, normals, n_jobs)
    rng_shrink = numpy_generator(seed, iteration * 16 + STEP_SHRINK)
    lam2, tau2, nu, xi = probit_blocks.draw_shrinkage(rng_shrink, prior, eta, probit.lam2,
                                                      probit.tau2, probit.nu, probit.xi)
    return probit_blocks.ProbitState(np.empty((0, eta.shape[0])), eta, lam2, tau2, nu, xi)


def global_eta_step(seed: int, iteration: int, probit, parts, data: TopicData,
                    config: DOLDAConfig) -> probit_blocks.ProbitState:
    """:func:`eta_step` from the shards' ``(a, gram, rhs)`` (dense ``X``), or, with
    ``X`` a sparse matrix, :func:`dolda.sampler.sparse_eta.eta_step` from their
    ``(a, zbar, a)`` with ``config.eta_sampler``."""
    if sp.issparse(data.X):
        return sparse_eta.eta_step(seed, iteration, probit, data.X, [p[1] for p in parts],
                                   [p[2] for p in parts], config.prior, config.eta_sampler,
                                   config.n_jobs, n_word_columns=config.n_word_columns)
    return eta_step(seed, iteration, probit, sum_in_order([p[1] for p in parts]),
                    sum_in_order([p[2] for p in parts]), config.prior, config.n_jobs)


#: The z-samplers that read the word-bucket alias tables of ``alpha_k phi_{k,w}``.
TABLE_SAMPLERS = ("mh", "cycle")
CYCLE_POLYA_ERROR = ('z_sampler="cycle" needs the exact Phi (phi_sampler="exact"); '
                     'use z_sampler="mh" with phi_sampler="polya"')


def topic_globals(eta, phi, n_x: int, z_sampler: str, table_row=None,
                  phi_sparse=None, alpha=None) -> shard_blocks.TopicGlobals:
    """What every shard needs for its z-sweep, computed once on the driver.

    ``S = eta_topics^T eta_topics`` and the alias tables are computed here and
    not on each shard, so every shard sees exactly the same numbers.  With
    ``z_sampler="mh"`` or ``"cycle"`` (:data:`TABLE_SAMPLERS`), ``table_row``
    (:func:`alias_table_rows`) says which words get an alias table (the frequent
    ones; None: every word).  With a Pólya-urn Phi (``phi_sparse``, a
    :class:`dolda.sampler.polya.SparsePhi`) the tables are its per-word alias
    tables over the non-zeros.  Either way they are the word-bucket tables of
    ``alpha_k phi_{k,w}`` (``alpha``: float or float (K,); None: 1), the form
    the MH and cycle z-steps read.
    """
    eta_topics = np.ascontiguousarray(eta[:, n_x:])
    if z_sampler == "cycle" and phi_sparse is not None:
        raise ValueError(CYCLE_POLYA_ERROR)
    if z_sampler not in TABLE_SAMPLERS:
        tables = None
    elif phi_sparse is not None:
        tables = (phi_sparse if alpha is None
                  else polya.bucket_tables(phi_sparse, as_alpha(alpha, eta_topics.shape[1])))
    else:
        tables = topic_kernels.build_alias_tables(phi, table_row, alpha=alpha)
    return shard_blocks.TopicGlobals(eta, phi, eta_topics.T @ eta_topics, tables)


def wants_loglik(iteration: int, config: DOLDAConfig) -> bool:
    """Whether iteration ``t`` computes the log-likelihoods: ``(t + 1) % loglik_every == 0``."""
    return (int(iteration) + 1) % max(1, int(config.loglik_every)) == 0


def alias_table_rows(data: TopicData, config: DOLDAConfig):
    """Table row of every word for the MH and cycle z-steps with the exact Phi (None for another
    z-step or the Pólya-urn Phi, which builds its own tables): words with at least
    :data:`dolda.sampler.lda.ALIAS_MIN_TOKENS` tokens get a table, the others
    are proposed by a linear scan (as in the LDA engine's sparse sweep).  Fixed for a fit:
    the chains count it once and hand it to every iteration."""
    if config.z_sampler not in TABLE_SAMPLERS or config.phi_sampler == "polya":
        return None
    return topic_kernels.alias_rows(np.bincount(data.tokens, minlength=data.n_words))


def topic_log_likelihood(counts: topic_kernels.SparseCounts, n_words: int, beta: float) -> float:
    """The topic part of the LDA log-likelihood from sparse ``n_{k,w}`` (parallel over topics)."""
    part = np.empty(len(counts.ptr) - 1)
    topic_kernels._topic_part_sparse(counts.ptr, counts.counts, int(n_words), float(beta), part)
    return float(np.sum(part))


def reduce_counts(parts, n_topics: int, n_words: int) -> topic_kernels.SparseCounts:
    """Sum the shards' sparse ``n_{k,w}`` (integers: exact in any order).

    :func:`dolda.sampler.lda.merge_sparse_counts`; ``n_topics`` and ``n_words``
    are kept for the callers' sake (the layout carries both).
    """
    return topic_kernels.merge_sparse_counts(parts)


def phi_step(seed: int, iteration: int, stats, config: DOLDAConfig, n_words: int, out=None,
             nkw=None):
    """The global topic block: reduce the shards' ``n_{k,w}``, draw Phi, finish the log-likelihood.

    Integer counts add exactly in any order; the float log-likelihood parts
    are summed in shard order.  Phi is drawn straight into a new word-major
    float32 array from the sparse counts (no K x V float64 intermediate):
    ``out`` (V, K) float32 when given (overwritten in place), a new one otherwise.

    Returns
    -------
    phi : float32 (V, K)
    info : StepInfo
    """
    if nkw is None:  # the sum of the shards' counts (given: already reduced by the caller)
        nkw = reduce_counts([part.nkw for part in stats], config.n_topics, n_words)
    if out is None:
        out = np.empty((n_words, config.n_topics), np.float32)
    phi = topic_kernels.draw_phi_word_major(nkw, config.beta, seed, iteration, out)
    return phi, topic_step_info(stats, nkw, n_words, config.beta)


def topic_step_info(stats, nkw, n_words: int, beta: float) -> StepInfo:
    """The shards' log-likelihood parts, summed in shard order, and the topic part from
    the summed ``nkw``: the ``info`` of :func:`phi_step`, which needs no Phi."""
    doc_part = float(sum_in_order([part.loglik_doc for part in stats]))
    return StepInfo(
        loglik_do=float(sum_in_order([part.loglik_do for part in stats])),
        loglik_lda=(doc_part + topic_log_likelihood(nkw, n_words, beta)
                    if not np.isnan(doc_part) else np.nan),
    )


def polya_phi_step(seed: int, iteration: int, stats, config: DOLDAConfig, n_words: int,
                   out, previous=None, counts=None):
    """The global topic block with the Pólya-urn Phi (``config.phi_sampler == "polya"``).

    The shards' word-major ``n_{k,w}`` (:class:`dolda.sampler.polya.WordCounts`)
    are merged (integers: exact), Phi drawn sparsely
    (:func:`dolda.sampler.polya.polya_phi`) and written into the dense
    word-major ``out`` in place, clearing only the non-zeros of ``previous``
    (the draw ``out`` holds; None: ``out`` is zeroed).  The log-likelihood
    parts are NaN on the iterations that skip them (:func:`wants_loglik`).

    Returns
    -------
    phi : float32 (V, K)   ``out``.
    phi_sparse : SparsePhi
    info : StepInfo
    """
    if counts is None:  # given: the shards' counts already merged by the caller
        counts = polya.merge_word_counts([part.nkw for part in stats], config.n_topics)
    sparse = polya.polya_phi(counts, config.n_topics, config.beta, seed, iteration)
    polya.write_dense(sparse, out, previous)
    if wants_loglik(iteration, config):
        info = StepInfo(
            loglik_do=float(sum_in_order([part.loglik_do for part in stats])),
            loglik_lda=float(sum_in_order([part.loglik_doc for part in stats])
                             + polya.topic_log_likelihood_words(counts, config.n_topics,
                                                                config.beta)))
    else:
        info = StepInfo(np.nan, np.nan)
    return out, sparse, info


def dolda_step(seed: int, iteration: int, state: DOLDAState, data: TopicData,
               config: DOLDAConfig, shards=None, table_rows=None) -> tuple[DOLDAState, StepInfo]:
    """One Gibbs iteration of DOLDA: a -> eta -> (tau, lambda) -> z -> Phi.

    The probit blocks see ``U = [X, zbar]`` from the current z; the z-sweep
    sees the new ``a`` and ``eta``; Phi is drawn from the new topic-word counts.
    The arrays ``z``, ``ndk`` and ``phi`` of ``state`` are updated in place (Phi
    after the sweeps that read it: no V x K allocation per iteration).

    The iteration is written as shard-local blocks
    (:func:`dolda.sampler.shard.utility_step`, :func:`dolda.sampler.shard.topic_step`)
    and global blocks (:func:`eta_step`, :func:`topic_globals`, :func:`phi_step`);
    here the shards run one after the other in this process (each on all
    threads), the Dask backend (:mod:`dolda.backends.dask`) runs the very same
    blocks on the workers.

    Parameters
    ----------
    shards : list of Shard or None
        The document shards (:func:`whole_corpus_shards`); None: the default layout.
    table_rows : int32 (V,) or None
        :func:`alias_table_rows` of ``data`` (fixed for a fit: a chain passes it to every
        iteration instead of counting the words again); None: counted here.
    """
    if shards is None:
        shards = whole_corpus_shards(data)
    z, ndk = state.z, state.ndk
    parts = [shard_blocks.utility_step(seed, iteration, sh, ndk[sh.docs], state.probit.eta)
             for sh in shards]
    probit = global_eta_step(seed, iteration, state.probit, parts, data, config)
    polya_phi = config.phi_sampler == "polya"
    sparse = state.phi_sparse
    if polya_phi and sparse is None:
        sparse = polya.from_dense(state.phi)
    rows = alias_table_rows(data, config) if table_rows is None else table_rows
    glob = topic_globals(probit.eta, state.phi, data.X.shape[1], config.z_sampler, rows,
                         sparse if polya_phi else None, config.alpha)
    with_loglik = wants_loglik(iteration, config)
    stats = [shard_blocks.topic_step(seed, iteration, sh, z[sh.token_range], ndk[sh.docs], part[0],
                                     glob, config.alpha, config.z_sampler,
                                     word_major=polya_phi, with_loglik=with_loglik)
             for sh, part in zip(shards, parts)]
    probit = probit._replace(a=np.concatenate([part[0] for part in parts]))
    if polya_phi:
        counts = polya.merge_word_counts([part.nkw for part in stats], config.n_topics)
        phi, sparse, info = polya_phi_step(seed, iteration, stats, config, data.n_words,
                                           state.phi, sparse, counts)
        return DOLDAState(z, ndk, phi, probit, sparse, counts), info
    nkw = reduce_counts([part.nkw for part in stats], config.n_topics, data.n_words)
    release_in_iteration(data.n_words, config.n_topics)  # the sweeps' scratch, before the Phi draw's
    phi, info = phi_step(seed, iteration, stats, config, data.n_words, state.phi, nkw)
    if not with_loglik:
        info = StepInfo(np.nan, np.nan)
    return DOLDAState(z, ndk, phi, probit, None, nkw), info
