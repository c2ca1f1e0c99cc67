"""The local backend: all shards in this process, parallel inside each shard (numba threads).

:class:`LocalChain` runs the DOLDA chain, :class:`LocalLDAChain` the chain of :class:`dolda.LDA`.
"""

from __future__ import annotations

import time

import numpy as np

from ..sampler import gibbs_iteration as dolda_chain
from ..sampler import lda as topic_kernels
from ..sampler.alpha import alpha_value


class LocalChain:
    """A DOLDA chain whose shards run one after the other in this process.

    The shards are views of the global ``z`` and ``n_{d,k}``, so nothing is
    copied; each shard-local block uses all numba threads.

    Parameters
    ----------
    seed : int
    state : DOLDAState
    data : TopicData
    config : DOLDAConfig
    n_shards : int or None
        Shard layout (:func:`dolda.sampler.gibbs_iteration.whole_corpus_shards`).
    """

    def __init__(self, seed, state, data, config, n_shards=None):
        self.seed = seed
        self.state = state
        self.data = data
        self.config = config
        self.shards = dolda_chain.whole_corpus_shards(data, n_shards)
        self._table_rows = dolda_chain.alias_table_rows(data, config)  # counted once

    def step(self, iteration: int):
        """Run iteration ``iteration``; returns ``(state, info)``."""
        self.state, info = dolda_chain.dolda_step(self.seed, iteration, self.state, self.data,
                                                  self.config, self.shards, self._table_rows)
        return self.state, info

    def topics(self):
        """``(z, ndk)`` after the last completed iteration (the live arrays)."""
        return self.state.z, self.state.ndk

    def phi(self):
        """Phi after the last completed iteration (float32 V x K)."""
        return self.state.phi

    def close(self):
        """Release the linear predictors the shards' last log-likelihood left for the next
        a-step (:func:`dolda.sampler.shard.forget_mu`)."""
        from ..sampler.shard import forget_mu

        forget_mu(self.shards)


class LocalLDAChain:
    """The chain of :class:`dolda.LDA` in this process: whole-corpus sweeps on all numba threads.

    Each iteration sweeps every document (document ``d`` on the stream of its
    global index, so the draws do not depend on any shard layout), counts
    ``n_{k,w}``, draws Phi in place and refreshes the alias tables of the
    sparse sweep.  With ``bounds`` (a shard layout) the document part of the
    log-likelihood is added up per shard as on the Dask backend
    (:class:`dolda.backends.dask.DaskLDAChain`), so the two give the same trace
    to the last bit; without, it is one sum over the corpus.

    Parameters
    ----------
    seed : int
    tokens, doc_ptr : the corpus (CSR)
    n_words, n_topics : int
    alpha : float or float (K,)
    beta : float
    sparse : bool
        Sparse (alias-table) sweep instead of the dense one.
    bounds : int64 (S + 1,) or None
        Document bounds of the shards (:func:`dolda.sampler.shard.shard_bounds`).
    topics : (z, ndk) or None
        Start from these topic indicators instead of uniform random ones.

    Attributes
    ----------
    timings : dict
        Seconds in the z-sweeps and in the Phi draws (with the alias tables).
    """

    def __init__(self, seed, tokens, doc_ptr, n_words, n_topics, alpha, beta, sparse,
                 bounds=None, topics=None):
        self.seed = seed
        self.tokens, self.doc_ptr = tokens, doc_ptr
        self.n_words, self.n_topics = int(n_words), int(n_topics)
        self.alpha, self.beta = alpha_value(alpha), float(beta)
        self.bounds = bounds
        self.z, self.ndk, self.phi_wk, self.word_ptr, self.order = topic_kernels.initial_state(
            tokens, doc_ptr, n_words, n_topics, beta, seed, topics)
        rows = topic_kernels.alias_rows(np.diff(self.word_ptr))
        self.tables = topic_kernels.build_alias_tables(self.phi_wk, rows) if sparse else None
        self.timings = {"z_sweep": 0.0, "phi_draw": 0.0}

    def step(self, iteration: int):
        """Run iteration ``iteration``; returns ``(counts, loglik)``: the iteration's
        ``n_{k,w}`` (:class:`~dolda.sampler.counts.SparseCounts`, which Phi was drawn from
        and :class:`dolda.LDA` averages ``E[phi | z]`` over) and its log-likelihood.  Phi
        is the live array :attr:`phi_wk`."""
        k = topic_kernels
        t0 = time.perf_counter()
        k.sweep(self.tokens, self.doc_ptr, self.z, self.ndk, self.phi_wk, self.alpha, self.seed,
                iteration, self.tables)
        t1 = time.perf_counter()
        counts = k.sparse_topic_word_counts(self.word_ptr, self.order, self.z, self.n_topics)
        k.draw_phi_word_major(counts, self.beta, self.seed, iteration, self.phi_wk)
        if self.tables is not None:
            k.build_alias_tables(self.phi_wk, out=self.tables)
        t2 = time.perf_counter()
        self.timings["z_sweep"] += t1 - t0
        self.timings["phi_draw"] += t2 - t1
        if self.bounds is None:
            loglik = k.lda_log_likelihood_sparse(self.ndk, counts, self.n_words, self.alpha,
                                                 self.beta)
        else:
            parts = [k.lda_doc_log_likelihood(self.ndk[lo:hi], self.alpha)
                     for lo, hi in zip(self.bounds[:-1], self.bounds[1:])]
            loglik = k.combine_log_likelihood(parts, counts, self.n_words, self.beta)
        return counts, loglik

    def topics(self):
        """``(z, ndk)`` after the last completed iteration (the live arrays)."""
        return self.z, self.ndk

    def close(self):
        """Nothing to release."""
