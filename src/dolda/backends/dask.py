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
   Horseshoe scales (:func:`dolda.sampler.chain.eta_step`).  They need only
   the (P x P) and (L x P) sums, and P = P_x + K is small, so a Cholesky per
   class here costs less than one more round of messages;
3. broadcast of ``(eta, Phi^T, S = eta_topics^T eta_topics)`` to every worker;
4. on every shard: the supervised z-sweep, the shard's sparse ``n_{k,w}`` and
   its log-likelihood parts (:func:`dolda.sampler.shard.topic_step`);
5. on the driver: ``n_{k,w}`` summed (integers: exact in any order), Phi drawn
   (K x V gamma variates, parallel over topics on the driver's threads) and the
   log-likelihood completed (:func:`dolda.sampler.chain.phi_step`).

Per iteration the driver sends ``eta`` (L x P floats) with every task and
``Phi`` (K x V floats) plus ``S`` once to every worker -- or, with the
Pólya-urn Phi (``phi_sampler="polya"``), only its non-zeros
(:class:`dolda.sampler.polya.PhiNonZeros`: a topic id and a float32 per
non-zero and a pointer per word), from which every worker rebuilds the dense
view and the alias tables exactly; every shard returns
``(P x P + L x P)`` floats and its non-zero ``n_{k,w}`` (at most its token
count of (int64, int32) pairs).  Tokens, ``z`` and ``n_{d,k}`` never travel,
except ``z`` every ``snapshot_every`` iterations (the recovery point).

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
the counts and draws Phi (and the alias tables of the sparse sweep).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import operator
import time
import uuid

import numpy as np

from ..sampler import chain as dolda_chain
from ..sampler import lda as topic_kernels
from ..sampler.alpha import alpha_value
from ..sampler import shard as shard_blocks

logger = logging.getLogger(__name__)

#: How many times a single iteration may be retried after losing workers.
MAX_RECOVERIES = 5


def _worker_loss_errors():
    """Exception types that mean "a worker (or its data) is gone", not a bug in a task."""
    from distributed import TimeoutError as DaskTimeoutError
    from distributed.comm.core import CommClosedError
    from distributed.scheduler import KilledWorker

    errors = [KilledWorker, CommClosedError, concurrent.futures.CancelledError, OSError,
              DaskTimeoutError]
    try:
        from distributed.client import FutureCancelledError

        errors.append(FutureCancelledError)
    except ImportError:  # older distributed
        pass
    try:
        from asyncio import CancelledError as AsyncCancelledError

        errors.append(AsyncCancelledError)
    except ImportError:
        pass
    return tuple(errors)


# ------------------------------------------------------------ worker side
class ShardState:
    """A shard's chain state in worker memory: ``z``, ``n_{d,k}`` and the utilities ``a``."""

    __slots__ = ("z", "ndk", "a")

    def __init__(self, z, ndk, a=None):
        self.z = z
        self.ndk = ndk
        self.a = a


def _threads():
    from distributed import get_worker

    try:
        return max(1, int(get_worker().state.nthreads))
    except (AttributeError, ValueError):  # pragma: no cover - older distributed
        return max(1, int(getattr(get_worker(), "nthreads", 1)))


def _start(shard, z, n_topics):
    from ..sampler.threads import using_threads

    with using_threads(_threads()):
        ndk = shard_blocks.doc_topic_counts(shard.doc_ptr, z, n_topics)
    return ShardState(np.array(z, dtype=np.int32), ndk)


def _utility(seed, iteration, shard, state, eta):
    from ..sampler.threads import using_threads

    with using_threads(_threads()):
        a, gram, rhs = shard_blocks.utility_step(seed, iteration, shard, state.ndk, eta)
    return ShardState(state.z, state.ndk, a), (gram, rhs)


def _topic(seed, iteration, shard, state, glob, alpha, z_sampler, with_loglik=True):
    from ..sampler import polya
    from ..sampler.alpha import as_alpha
    from ..sampler.threads import using_threads

    # copies: a task never changes its input, so any re-run of it is exact
    z, ndk = state.z.copy(), state.ndk.copy()
    word_major = isinstance(glob.tables, polya.PhiNonZeros)
    with using_threads(_threads()):
        if word_major:  # the sparse Pólya-urn Phi: rebuild the dense view and the alias tables
            phi_wk, sparse = glob.tables.expand()
            if z_sampler == "mh":  # the word-bucket tables of alpha_k phi_{k,w}
                sparse = polya.bucket_tables(sparse, as_alpha(alpha, glob.tables.n_topics))
            glob = glob._replace(phi_wk=phi_wk, tables=sparse if z_sampler == "mh" else None)
        stats = shard_blocks.topic_step(seed, iteration, shard, z, ndk, state.a, glob, alpha,
                                        z_sampler, word_major=word_major,
                                        with_loglik=with_loglik)
    return ShardState(z, ndk), stats


def _lda_sweep(seed, iteration, shard, state, glob, alpha):
    from ..sampler.threads import using_threads

    phi_wk, tables = glob
    z, ndk = state.z.copy(), state.ndk.copy()
    with using_threads(_threads()):
        stats = topic_kernels.shard_sweep(seed, iteration, shard, z, ndk, phi_wk, tables, alpha)
    return ShardState(z, ndk), stats


def _topics_of(state):
    return state.z, state.ndk


# ------------------------------------------------------------ driver side
def _nbytes(obj) -> int:
    """Bytes of the numpy arrays inside ``obj`` (tuples, NamedTuples, lists)."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (tuple, list)):
        return sum(_nbytes(item) for item in obj)
    if isinstance(obj, (float, int)):
        return 8
    return 0


class ShardedDaskChain:
    """What the DOLDA and the LDA chain on Dask share: shards placed on the
    workers, their state futures, snapshots of ``z`` and exact replay.

    A subclass sets its global state (what the driver draws) before calling
    ``__init__`` and implements :meth:`_iterate` (one iteration on the current
    shard futures), :meth:`_global_state` / :meth:`_restore_global_state`
    (what a snapshot keeps besides ``z``) and :meth:`_result` (what
    :meth:`step` returns).  The cluster belongs to the caller: only tasks are
    submitted to ``client``, and :meth:`close` releases this chain's data.

    Parameters
    ----------
    client : distributed.Client or None
        None: the current default client (``distributed.default_client()``).
    seed : int
    shards : list
        Shard objects with ``doc_ptr`` and ``token_range`` (any NamedTuple).
    z_parts : list of int32 arrays
        Every shard's topic indicators before the first iteration to run.
    n_topics : int
    snapshot_every : int
        Iterations between the driver's copies of ``z`` (recovery points).

    Attributes
    ----------
    traffic : dict
        ``{"sent": bytes, "received": bytes, "iterations": n}`` counted from
        the sizes of the arrays broadcast to / gathered from the workers.
    recoveries : int
        How many times shards were rebuilt after losing workers.
    """

    def __init__(self, client, seed, shards, z_parts, n_topics, snapshot_every=10):
        if client is None:
            from distributed import default_client

            client = default_client()
        self.client = client
        self.seed = seed
        self.shards = shards
        self.n_topics = int(n_topics)
        self.snapshot_every = max(1, int(snapshot_every))
        self.traffic = {"sent": 0, "received": 0, "iterations": 0}
        self.recoveries = 0
        self._errors = _worker_loss_errors()
        self._tag = uuid.uuid4().hex[:12]
        self._counter = itertools.count()
        self._shard_futures = []
        self._states = []
        self._pending = []  # futures of the iteration in progress
        self._workers = []
        self._next = None  # first iteration not yet run
        self._snapshot = None
        self._set_snapshot(None, z_parts)
        self._place(z_parts)

    # ------------------------------------------------------- subclass hooks
    def _iterate(self, iteration):  # pragma: no cover - abstract
        """Run one iteration on the current shard futures; returns its info."""
        raise NotImplementedError

    def _global_state(self):  # pragma: no cover - abstract
        """What a snapshot keeps besides ``z`` (the driver's draws)."""
        raise NotImplementedError

    def _restore_global_state(self, state):  # pragma: no cover - abstract
        raise NotImplementedError

    def _result(self, info):  # pragma: no cover - abstract
        """What :meth:`step` returns after a completed iteration."""
        raise NotImplementedError

    # ---------------------------------------------------------- placement
    def _key(self, name, shard):
        return f"dolda-{self._tag}-{name}-{next(self._counter)}-{shard}"

    def _place(self, z_parts):
        """Scatter every shard's data and ``z`` to a worker; build its state future there."""
        self._release()
        workers = sorted(self.client.scheduler_info(n_workers=-1)["workers"])
        if not workers:
            self.client.wait_for_workers(1, timeout=120)
            workers = sorted(self.client.scheduler_info(n_workers=-1)["workers"])
        self._workers = [workers[s % len(workers)] for s in range(len(self.shards))]
        self._shard_futures, self._states = [], []
        for s, (shard, z, worker) in enumerate(zip(self.shards, z_parts, self._workers)):
            shard_f, z_f = self.client.scatter([shard, z], workers=[worker], hash=False)
            self._shard_futures.append(shard_f)
            self._states.append(self.client.submit(
                _start, shard_f, z_f, self.n_topics, key=self._key("start", s),
                workers=[worker], allow_other_workers=True, pure=False))
            self.traffic["sent"] += _nbytes(shard) + _nbytes(z)

    def _submit(self, func, name, args_of_shard):
        """One task per shard (state future first), split into (state, statistics) futures."""
        states, stats = [], []
        for s, worker in enumerate(self._workers):
            pair = self.client.submit(func, *args_of_shard(s), key=self._key(name, s),
                                      workers=[worker], allow_other_workers=True, pure=False)
            self._pending.append(pair)
            states.append(self.client.submit(operator.getitem, pair, 0,
                                             key=self._key(name + "-state", s),
                                             workers=[worker], allow_other_workers=True))
            stats.append(self.client.submit(operator.getitem, pair, 1,
                                            key=self._key(name + "-stats", s),
                                            workers=[worker], allow_other_workers=True))
        self._pending.extend(stats)
        return states, stats

    def _release(self):
        futures = list(self._shard_futures) + list(self._states) + self._pending
        self._shard_futures, self._states, self._pending = [], [], []
        if futures:
            try:
                self.client.cancel(futures)
            except self._errors:  # pragma: no cover - the cluster is going away anyway
                pass

    # ---------------------------------------------------------- snapshots
    def _set_snapshot(self, iteration, z_parts):
        self._snapshot = (iteration, z_parts, self._global_state())

    def _gather_topics(self):
        futures = [self.client.submit(_topics_of, st, key=self._key("topics", s),
                                      workers=[w], allow_other_workers=True)
                   for s, (st, w) in enumerate(zip(self._states, self._workers))]
        self._pending.extend(futures)
        parts = self.client.gather(futures)
        self._pending = []
        self.traffic["received"] += _nbytes(parts)
        return parts

    # ---------------------------------------------------------- iteration
    def step(self, iteration: int):
        """Run iteration ``iteration`` (replayed from the last snapshot after a lost
        worker); returns :meth:`_result`."""
        if self._next is None:
            self._next = iteration
            self._snapshot = (iteration,) + self._snapshot[1:]
        if iteration != self._next:
            raise ValueError(f"iteration {iteration} requested, {self._next} expected")
        lost = None
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                if lost is not None:
                    self._recover(iteration)
                info = self._iterate(iteration)
                if (iteration + 1) % self.snapshot_every == 0:
                    self._set_snapshot(iteration + 1, [z for z, _ in self._gather_topics()])
                break
            except self._errors as err:
                if attempt == MAX_RECOVERIES:
                    raise
                lost = True
                logger.warning("lost a worker at iteration %d (%s: %s); replaying from "
                               "iteration %d", iteration, type(err).__name__, err,
                               self._snapshot[0])
        self._next = iteration + 1
        return self._result(info)

    def _recover(self, iteration):
        """Rebuild every shard from the snapshot and replay up to ``iteration`` (excluded)."""
        self.recoveries += 1
        start, z_parts, state = self._snapshot
        self._restore_global_state(state)
        self._place(z_parts)
        for it in range(start, iteration):
            self._iterate(it)

    def topics(self):
        """``(z, ndk)`` of the whole corpus after the last completed iteration (gathered).

        Also a recovery point: later failures replay from here.
        """
        lost = None
        for attempt in range(MAX_RECOVERIES + 1):
            try:
                if lost is not None:
                    self._recover(self._next if self._next is not None else self._snapshot[0])
                parts = self._gather_topics()
                break
            except self._errors:
                if attempt == MAX_RECOVERIES:
                    raise
                lost = True
        z_parts = [z for z, _ in parts]
        if self._next is not None:
            self._set_snapshot(self._next, z_parts)
        return np.concatenate(z_parts), np.concatenate([ndk for _, ndk in parts])

    def close(self):
        """Release every future this chain holds on the cluster (the cluster stays up)."""
        self._release()


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
        Shard layout (:func:`dolda.sampler.chain.whole_corpus_shards`).
    snapshot_every : int, default=10
        Iterations between the driver's copies of ``z`` (recovery points): a
        lost worker costs at most this many replayed iterations.

    Attributes
    ----------
    traffic, recoveries
        See :class:`ShardedDaskChain`.
    """

    def __init__(self, client, seed, state, data, config, n_shards=None, snapshot_every=10):
        self.data = data
        self.config = config
        shards = dolda_chain.whole_corpus_shards(data, n_shards)
        self._polya = config.phi_sampler == "polya"
        self._table_rows = (dolda_chain.alias_table_rows(data)
                            if config.z_sampler == "mh" and not self._polya else None)
        self._phi, self._probit = state.phi, state.probit
        self._sparse = None
        if self._polya:
            from ..sampler import polya

            self._sparse = (state.phi_sparse if state.phi_sparse is not None
                            else polya.from_dense(state.phi))
        z_parts = [np.array(state.z[sh.token_range]) for sh in shards]
        super().__init__(client, seed, shards, z_parts, config.n_topics, snapshot_every)

    def _global_state(self):
        if self._polya:  # the dense Phi is updated in place: keep the (immutable) sparse one
            return self._sparse, self._probit
        return self._phi, self._probit

    def _restore_global_state(self, state):
        if self._polya:
            from ..sampler import polya

            self._sparse, self._probit = state
            polya.write_dense(self._sparse, self._phi)
        else:
            self._phi, self._probit = state

    def _result(self, info):
        """``(DOLDAState, info)``: Phi and the probit state; ``z`` and ``ndk`` are None
        (they live on the workers, see :meth:`topics`)."""
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
        else:
            glob = dolda_chain.topic_globals(probit.eta, self._phi, self.data.X.shape[1],
                                             config.z_sampler, self._table_rows,
                                             alpha=config.alpha)
        with_loglik = dolda_chain.wants_loglik(iteration, config)
        [glob_f] = client.scatter([glob], broadcast=True, hash=False)
        self._pending.append(glob_f)  # cancelled with the iteration if a worker is lost
        self.traffic["sent"] += _nbytes(glob) * len(set(self._workers))
        states, stats = self._submit(
            _topic, "z", lambda s: (seed, iteration, self._shard_futures[s], self._states[s],
                                    glob_f, config.alpha, config.z_sampler, with_loglik))
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
            phi, info = dolda_chain.phi_step(seed, iteration, parts, config, self.data.n_words,
                                             nkw=self._counts)
            if not with_loglik:
                info = dolda_chain.StepInfo(np.nan, np.nan)
        self._phi, self._probit = phi, probit
        self.traffic["iterations"] += 1
        return info


class DaskLDAChain(ShardedDaskChain):
    """An unsupervised LDA chain (:class:`dolda.LDA`) whose shards live on the workers.

    One iteration: the driver broadcasts ``Phi`` (word-major float32) and, for
    the sparse sweep, its alias tables; every shard runs
    :func:`dolda.sampler.lda.shard_sweep` (z-sweep, sparse ``n_{k,w}``,
    document part of the log-likelihood); the driver adds the counts
    (:func:`~dolda.sampler.lda.merge_sparse_counts`), draws Phi on its own
    threads and builds the next alias tables.  Same ``z`` and ``Phi`` as the
    local loop of :class:`dolda.LDA`, for any shards and workers.

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

    Attributes
    ----------
    traffic, recoveries
        See :class:`ShardedDaskChain`.
    timings : dict
        Seconds spent waiting for the shards (``"z_sweep"``: sweeps and
        transfers) and in the driver's Phi draw with the alias tables (``"phi_draw"``).
    """

    def __init__(self, client, seed, shards, z, phi_wk, alpha, beta, table_rows=None,
                 snapshot_every=10):
        self.alpha, self.beta = alpha_value(alpha), float(beta)
        self.n_words = phi_wk.shape[0]
        self._rows = table_rows
        self._phi = phi_wk
        self._tables = (None if table_rows is None
                        else topic_kernels.build_alias_tables(phi_wk, table_rows))
        self.timings = {"z_sweep": 0.0, "phi_draw": 0.0}
        z_parts = [np.array(z[sh.token_range], dtype=np.int32) for sh in shards]
        super().__init__(client, seed, shards, z_parts, phi_wk.shape[1], snapshot_every)

    def _global_state(self):
        return self._phi, self._tables

    def _restore_global_state(self, state):
        self._phi, self._tables = state

    def _result(self, loglik):
        """``(phi_wk, loglik)`` of the iteration just run."""
        return self._phi, loglik

    def _iterate(self, iteration):
        client, seed = self.client, self.seed
        tic = time.perf_counter()
        glob = (self._phi, self._tables)
        [glob_f] = client.scatter([glob], broadcast=True, hash=False)
        self._pending.append(glob_f)  # cancelled with the iteration if a worker is lost
        self.traffic["sent"] += _nbytes(glob) * len(set(self._workers))
        states, stats = self._submit(
            _lda_sweep, "z", lambda s: (seed, iteration, self._shard_futures[s],
                                        self._states[s], glob_f, self.alpha))
        self._states = states
        parts = client.gather(stats)
        del glob_f
        self._pending = []
        self.traffic["received"] += _nbytes(parts)
        toc = time.perf_counter()
        counts = topic_kernels.merge_sparse_counts([p[0] for p in parts])
        phi = topic_kernels.draw_phi_word_major(
            counts, self.beta, seed, iteration,
            np.empty((self.n_words, self.n_topics), np.float32))
        tables = (None if self._rows is None
                  else topic_kernels.build_alias_tables(phi, self._rows))
        loglik = topic_kernels.combine_log_likelihood([p[1] for p in parts], counts,
                                                      self.n_words, self.beta)
        self._phi, self._tables = phi, tables
        self.timings["z_sweep"] += toc - tic
        self.timings["phi_draw"] += time.perf_counter() - toc
        self.traffic["iterations"] += 1
        return loglik
