"""The Dask backend: the DOLDA chain on the workers of a user's ``distributed.Client``.

What runs where
---------------
The documents are cut into shards (contiguous document ranges fixed by the
data, :func:`dolda.sampler.shard.shard_bounds`).  Each shard's tokens,
covariate rows and labels are scattered once to one worker; its chain state
(``z``, ``n_{d,k}``, and within an iteration the utilities ``a``) is a future
that stays on that worker, each iteration's task taking the previous one as
input.  One iteration is

1. on every shard: the a-step and the shard's ``U_s^T U_s`` and ``U_s^T a_s``
   (:func:`dolda.sampler.shard.utility_step`);
2. on the driver (this process): the sums over shards, ``eta`` and the
   Horseshoe scales (:func:`dolda.sampler.gibbs_iteration.eta_step`).  They need only
   the (P x P) and (L x P) sums, and P = P_x + K is small, so a Cholesky per
   class here costs less than one more round of messages;
3. broadcast of ``(eta, Phi, S = eta_topics^T eta_topics)`` to every worker;
4. on every shard: the supervised z-sweep, the shard's sparse ``n_{k,w}`` and
   its log-likelihood parts (:func:`dolda.sampler.shard.topic_step`);
5. on the driver: ``n_{k,w}`` summed (integers: exact in any order) and the
   log-likelihood completed (:func:`dolda.sampler.gibbs_iteration.topic_step_info`); the
   next Phi is the draw from these counts (K x V gamma variates, parallel over
   topics), made by every worker (below) and by the driver only when Phi
   itself has to travel or for a checkpoint (:meth:`DaskChain.phi`).

Per iteration the driver sends ``eta`` (L x P floats) with every task and
Phi plus ``S`` once to every worker.  The exact Phi travels as the summed
``n_{k,w}`` it was drawn from (:class:`dolda.sampler.phi.PhiRecipe`: a word and
a count per non-zero, at most one per token, where Phi is K x V floats and the
MH step's alias tables as many again); every worker repeats the draw, which
is a function of the counts, the seed and the iteration only, and builds the
alias tables itself, so it holds the driver's Phi bit for bit.  Phi itself
(with the tables) travels instead when it is the smaller of the two, and on
the first iteration of a fit (:attr:`ShardedDaskChain.phi_transport`).  With
the Pólya-urn Phi (``phi_sampler="polya"``) only its non-zeros travel
(:class:`dolda.sampler.polya.PhiNonZeros`: a topic id and a float32 per
non-zero and a pointer per word), from which every worker rebuilds the dense
view and the alias tables exactly.  Every shard returns ``(P x P + L x P)``
floats and its non-zero ``n_{k,w}`` (at most its token count of (int64,
int32) pairs).  Tokens, ``z`` and ``n_{d,k}`` never travel, except ``z``
every ``snapshot_every`` iterations (the recovery point).

Fault tolerance
---------------
Every ``snapshot_every`` iterations, and whenever :meth:`DaskChain.topics` is
called (checkpoints, the end of the fit), the driver gathers ``z`` of every
shard and keeps it with the global state (Phi, eta, scales) of that
iteration.  If a worker is lost (``KilledWorker``, a closed comm, a cancelled
future), every shard is rebuilt from that snapshot on the workers still (or
again) present and the iterations since the snapshot are run again.  The
chain is a deterministic function of the seed and the state, so the replayed
iterations are exactly those that were lost and the result is identical to an
undisturbed run.

The unsupervised chain of :class:`dolda.LDA` (:class:`DaskLDAChain`) uses the
same placement, snapshots and replay (:class:`ShardedDaskChain`) with a
single shard-local block: the z-sweep of the LDA kernel with the shard's
sparse ``n_{k,w}`` (:func:`dolda.sampler.lda.shard_sweep`); the driver adds
the counts and draws Phi, which reaches the workers as above.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from ..sampler import gibbs_iteration as dolda_chain
from ..sampler import lda as topic_kernels
from ..sampler.alpha import alpha_value
from ..sampler.phi import PhiRecipe
from ..sampler import shard as shard_blocks
from ._dask_shards import (
    ShardedDaskChain,
    broadcast,
    ShardState,
    _nbytes,
    _threads,
)

logger = logging.getLogger(__name__)


# ------------------------------------------------------------ worker side (tasks)
def _repeat_phi(recipe, table_rows, alpha=None):
    """The driver's exact Phi draw (a :class:`~dolda.sampler.phi.PhiRecipe`) repeated here,
    with the alias tables of the words ``table_rows`` gives one (None: no tables)."""
    phi_wk = recipe.draw()
    tables = (None if table_rows is None
              else topic_kernels.build_alias_tables(phi_wk, table_rows, alpha=alpha))
    return phi_wk, tables


def _utility(seed, iteration, shard, state, eta):
    from ..sampler.threads import using_threads

    with using_threads(_threads()):
        a, gram, rhs = shard_blocks.utility_step(seed, iteration, shard, state.ndk, eta)
    return ShardState(state.z, state.ndk, a), (gram, rhs)


def _topic(seed, iteration, shard, state, glob, alpha, z_sampler, with_loglik=True,
           table_rows=None):
    from ..sampler import polya
    from ..sampler.alpha import as_alpha
    from ..sampler.threads import using_threads

    # copies: a task never changes its input, so any re-run of it is exact
    z, ndk = state.z.copy(), state.ndk.copy()
    word_major = isinstance(glob.tables, polya.PhiNonZeros)
    with using_threads(_threads()):
        if isinstance(glob.phi_wk, PhiRecipe):  # table rows are given for the MH step only
            phi_wk, tables = _repeat_phi(glob.phi_wk, table_rows, alpha)
            glob = glob._replace(phi_wk=phi_wk, tables=tables)
        elif word_major:  # the sparse Pólya-urn Phi: rebuild the dense view and the alias tables
            phi_wk, sparse = glob.tables.expand()
            if z_sampler == "mh":  # the word-bucket tables of alpha_k phi_{k,w}
                sparse = polya.bucket_tables(sparse, as_alpha(alpha, glob.tables.n_topics))
            glob = glob._replace(phi_wk=phi_wk, tables=sparse if z_sampler == "mh" else None)
        stats = shard_blocks.topic_step(seed, iteration, shard, z, ndk, state.a, glob, alpha,
                                        z_sampler, word_major=word_major,
                                        with_loglik=with_loglik)
    return ShardState(z, ndk), stats


def _lda_sweep(seed, iteration, shard, state, glob, alpha, table_rows=None):
    from ..sampler.threads import using_threads

    phi_wk, tables = glob
    z, ndk = state.z.copy(), state.ndk.copy()
    with using_threads(_threads()):
        if isinstance(phi_wk, PhiRecipe):
            phi_wk, tables = _repeat_phi(phi_wk, table_rows)
        stats = topic_kernels.shard_sweep(seed, iteration, shard, z, ndk, phi_wk, tables, alpha)
    return ShardState(z, ndk), stats


class DaskChain(ShardedDaskChain):
    """A DOLDA chain whose shards live on the workers of a ``distributed.Client``.

    The cluster belongs to the caller: this class only submits tasks to
    ``client`` and releases its own data in :meth:`close`.

    Parameters
    ----------
    client : distributed.Client or None
        None: the current default client (``distributed.default_client()``).
    seed : int
    state : DOLDAState
        The state before the first iteration to run (full ``z`` and ``n_{d,k}``).
    data : TopicData
    config : DOLDAConfig
    n_shards : int or None
        Shard layout (:func:`dolda.sampler.gibbs_iteration.whole_corpus_shards`).
    snapshot_every : int, default=10
        Iterations between the driver's copies of ``z`` (recovery points): a
        lost worker costs at most this many replayed iterations.
    phi_transport : {"auto", "recipe", "dense"} or None, default=None
        What carries Phi to the workers (:attr:`ShardedDaskChain.phi_transport`;
        None: the class default).

    Attributes
    ----------
    traffic, recoveries
        See :class:`ShardedDaskChain`.
    """

    def __init__(self, client, seed, state, data, config, n_shards=None, snapshot_every=10,
                 phi_transport=None):
        self.data = data
        self.config = config
        shards = dolda_chain.whole_corpus_shards(data, n_shards)
        self._polya = config.phi_sampler == "polya"
        self._table_rows = dolda_chain.alias_table_rows(data, config)
        self._phi, self._probit = state.phi, state.probit
        self._recipe = None  # what Phi is drawn from, from the first iteration on
        self._constants = self._table_rows
        self._sparse = None
        if self._polya:
            from ..sampler import polya

            self._sparse = (state.phi_sparse if state.phi_sparse is not None
                            else polya.from_dense(state.phi))
        z_parts = [np.array(state.z[sh.token_range]) for sh in shards]
        super().__init__(client, seed, shards, z_parts, config.n_topics, snapshot_every,
                         phi_transport)

    def _global_state(self):
        if self._polya:  # the dense Phi is updated in place: keep the (immutable) sparse one
            return self._sparse, self._probit
        return self._phi, self._probit, self._recipe

    def _restore_global_state(self, state):
        if self._polya:
            from ..sampler import polya

            self._sparse, self._probit = state
            polya.write_dense(self._sparse, self._phi)
        else:
            self._phi, self._probit, self._recipe = state

    def _result(self, info):
        """``(DOLDAState, info)``: Phi and the probit state; ``z`` and ``ndk`` are None
        (they live on the workers, see :meth:`topics`), and so is Phi while the driver has
        not drawn it (see :meth:`phi`)."""
        return dolda_chain.DOLDAState(None, None, self._phi, self._probit, self._sparse,
                                      getattr(self, "_counts", None)), info

    def _iterate(self, iteration):
        """Run one iteration on the current shard futures; returns ``(state, info)``."""
        client, config, seed = self.client, self.config, self.seed
        eta = self._probit.eta
        states, stats = self._submit(
            _utility, "a", lambda s: (seed, iteration, self._shard_futures[s],
                                      self._states[s], eta))
        self._states = states
        parts = client.gather(stats)
        self.traffic["sent"] += _nbytes(eta) * len(self.shards)
        self.traffic["received"] += _nbytes(parts)
        probit = dolda_chain.global_eta_step(seed, iteration, self._probit,
                                             [(None,) + tuple(p) for p in parts], self.data,
                                             config)
        if self._polya:  # only the non-zeros of Phi travel; workers rebuild the rest
            from ..sampler import polya

            glob = dolda_chain.topic_globals(probit.eta, None, self.data.X.shape[1], "exact")
            glob = glob._replace(tables=polya.PhiNonZeros.of(self._sparse, config.n_topics))
        elif self._recipe_travels():
            # the counts Phi was drawn from travel; every worker repeats the draw (and
            # builds the alias tables) exactly
            glob = dolda_chain.topic_globals(probit.eta, None, self.data.X.shape[1], "exact")
            glob = glob._replace(phi_wk=self._recipe)
        else:
            glob = dolda_chain.topic_globals(probit.eta, self.phi(), self.data.X.shape[1],
                                             config.z_sampler, self._table_rows,
                                             alpha=config.alpha)
        with_loglik = dolda_chain.wants_loglik(iteration, config)
        glob_f = broadcast(client, glob, self._workers)
        self._pending.extend(glob_f.values())  # released with the iteration if a worker is lost
        self.traffic["sent"] += _nbytes(glob) * len(glob_f)
        states, stats = self._submit(
            _topic, "z", lambda s: (seed, iteration, self._shard_futures[s], self._states[s],
                                    self._copy(glob_f, s), config.alpha, config.z_sampler,
                                    with_loglik, self._copy(self._constants_f, s)))
        self._states = states
        parts = client.gather(stats)
        del glob_f
        self._pending = []
        self.traffic["received"] += _nbytes(parts)
        if self._polya:
            from ..sampler import polya

            self._counts = polya.merge_word_counts([part.nkw for part in parts],
                                                   config.n_topics)
            phi, self._sparse, info = dolda_chain.polya_phi_step(
                seed, iteration, parts, config, self.data.n_words, self._phi, self._sparse,
                self._counts)
        else:
            self._counts = dolda_chain.reduce_counts([part.nkw for part in parts],
                                                     config.n_topics, self.data.n_words)
            self._recipe = PhiRecipe(self._counts, config.beta, seed, iteration,
                                     self.data.n_words)
            # Phi itself is drawn only when it must travel or is asked for (phi())
            phi = None
            info = dolda_chain.topic_step_info(parts, self._counts, self.data.n_words,
                                               config.beta)
            if not with_loglik:
                info = dolda_chain.StepInfo(np.nan, np.nan)
        self._phi, self._probit = phi, probit
        self.traffic["iterations"] += 1
        return info


class DaskLDAChain(ShardedDaskChain):
    """An unsupervised LDA chain (:class:`dolda.LDA`) whose shards live on the workers.

    One iteration: the driver broadcasts ``Phi`` (word-major float32) and, for
    the sparse sweep, its alias tables -- or, after its first iteration, the counts
    Phi was drawn from, when smaller (:attr:`ShardedDaskChain.phi_transport`), from
    which every worker repeats the draw and builds the tables; every shard runs
    :func:`dolda.sampler.lda.shard_sweep` (z-sweep, sparse ``n_{k,w}``,
    document part of the log-likelihood); the driver adds the counts
    (:func:`~dolda.sampler.lda.merge_sparse_counts`) and keeps them as the recipe
    of the next Phi, which it draws itself (with the alias tables) only when Phi
    has to travel (:meth:`phi`).  Same ``z`` and ``Phi`` as the local loop of
    :class:`dolda.LDA`, for any shards and workers.

    Parameters
    ----------
    client : distributed.Client or None
    seed : int
    shards : list of LDAShard
        :func:`dolda.sampler.lda.make_lda_shards`.
    z : int32 (N,)
        Topic indicators of the whole corpus before the first iteration.
    phi_wk : float32 (V, K)
        Phi before the first iteration.
    alpha, beta : float
    table_rows : int32 (V,) or None
        Alias-table row of every word (:func:`dolda.sampler.lda.alias_rows` of
        the corpus word counts) for the sparse sweep; None: the dense sweep.
    snapshot_every : int, default=10
    phi_transport : {"auto", "recipe", "dense"} or None, default=None
        As :class:`DaskChain`.

    Attributes
    ----------
    traffic, recoveries
        See :class:`ShardedDaskChain`.
    timings : dict
        Seconds spent waiting for the shards (``"z_sweep"``: sweeps and
        transfers) and in the driver's Phi draw with the alias tables (``"phi_draw"``).
    """

    def __init__(self, client, seed, shards, z, phi_wk, alpha, beta, table_rows=None,
                 snapshot_every=10, phi_transport=None):
        self.alpha, self.beta = alpha_value(alpha), float(beta)
        self.n_words = phi_wk.shape[0]
        self._rows = self._constants = table_rows
        self._phi = phi_wk  # None while the driver has not drawn it (see phi())
        self._recipe = None  # what Phi is drawn from, after the first iteration
        self._counts = None  # n_{k,w} of the last iteration
        self._tables = None  # built when Phi itself has to travel
        z_parts = [np.array(z[sh.token_range], dtype=np.int32) for sh in shards]
        super().__init__(client, seed, shards, z_parts, phi_wk.shape[1], snapshot_every,
                         phi_transport)
        self.timings["z_sweep"] = 0.0

    def _global_state(self):
        return self._phi, self._tables, self._recipe, self._counts

    def _restore_global_state(self, state):
        self._phi, self._tables, self._recipe, self._counts = state

    def _result(self, loglik):
        """``(counts, loglik)`` of the iteration just run, as the local chain's
        :meth:`~dolda.backends.local.LocalLDAChain.step`."""
        return self._counts, loglik

    def _iterate(self, iteration):
        client, seed = self.client, self.seed
        tic = time.perf_counter()
        if self._recipe_travels():
            glob = (self._recipe, None)  # every worker repeats the draw and its tables
        else:
            phi = self.phi()
            if self._tables is None and self._rows is not None:
                self._tables = topic_kernels.build_alias_tables(phi, self._rows)
            glob = (phi, self._tables)
        glob_f = broadcast(client, glob, self._workers)
        self._pending.extend(glob_f.values())  # released with the iteration if a worker is lost
        self.traffic["sent"] += _nbytes(glob) * len(glob_f)
        states, stats = self._submit(
            _lda_sweep, "z", lambda s: (seed, iteration, self._shard_futures[s],
                                        self._states[s], self._copy(glob_f, s), self.alpha,
                                        self._copy(self._constants_f, s)))
        self._states = states
        parts = client.gather(stats)
        del glob_f
        self._pending = []
        self.traffic["received"] += _nbytes(parts)
        toc = time.perf_counter()
        counts = topic_kernels.merge_sparse_counts([p[0] for p in parts])
        self._recipe = PhiRecipe(counts, self.beta, seed, iteration, self.n_words)
        loglik = topic_kernels.combine_log_likelihood([p[1] for p in parts], counts,
                                                      self.n_words, self.beta)
        # Phi is drawn from the recipe only if it has to travel itself (phi())
        self._phi, self._tables, self._counts = None, None, counts
        self.timings["z_sweep"] += toc - tic
        self.traffic["iterations"] += 1
        return loglik
