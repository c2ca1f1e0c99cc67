"""What the Dask chains share: shards placed on the workers, their state futures, snapshots
of ``z`` and exact replay after a lost worker (:class:`ShardedDaskChain`; the backend as a
whole is described in :mod:`dolda.backends.dask`).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import logging
import operator
import time
import uuid

import numpy as np

from ..sampler import shard as shard_blocks

logger = logging.getLogger(__name__)


#: How many times a single iteration may be retried after losing workers.
MAX_RECOVERIES = 5

#: Seconds a broadcast (Phi and its tables to every worker, once an iteration) may take,
#: the transfer included, before it counts as a lost worker.  Generous: Phi at K = 1000
#: and V = 80,000 is 0.3 GB.
SCATTER_TIMEOUT = 60.0

#: Seconds a scatter waits for its worker to be running (distributed's own ``timeout``).
WORKER_WAIT = 10.0


class WorkerGone(ConnectionError):
    """A worker the chain placed data on is no longer known to the scheduler."""


def broadcast(client, value, workers):
    """``value`` on each of ``workers``, one copy each: ``{worker: future}``.

    The driver scatters one copy to the first worker; every other worker gets its copy
    from there, by a task pinned to it whose only input is that copy (Dask's ordinary
    worker-to-worker transfer of a dependency), so that the driver's link carries one
    copy, not one per worker.  The scatter raises ``TimeoutError`` (a worker-loss error)
    when it takes more than :data:`SCATTER_TIMEOUT`, the transfer included, and
    :class:`WorkerGone` when the worker has left; a copy lost with its worker fails the
    tasks that read it, which the chain replays as it replays any lost worker.

    Never ``Client.scatter(..., broadcast=True)``: it ends in the scheduler's
    ``replicate``, which holds a scheduler-wide lock while it copies.  A replicate caught by
    a worker killed mid-copy never returned, kept the lock, and every later broadcast of the
    fit waited on it, so that the replay after the lost worker timed out six times and the
    fit failed (distributed 2026.8; CI, and reproduced here with tests/backends/test_dask.py's
    lost-worker test in a loop).  A bound on the client side cannot free a lock held in the
    scheduler; not taking it can."""
    targets = list(dict.fromkeys(workers))
    try:
        [first] = client.sync(client._scatter, [value], workers=targets[:1], hash=False,
                              timeout=WORKER_WAIT, callback_timeout=SCATTER_TIMEOUT)
    except KeyError as err:  # the scheduler's lookup of a worker that has left
        raise WorkerGone(f"worker {err} has left the cluster") from err
    copies = {targets[0]: first}
    for w in targets[1:]:
        copies[w] = client.submit(_same, first, key=f"dolda-copy-{uuid.uuid4().hex}",
                                  workers=[w], allow_other_workers=True, pure=False)
    return copies


def _same(value):
    """The task that copies a broadcast value onto its worker."""
    return value


class WorkerLeft(RuntimeError):
    """A worker left between the scheduler's list of workers and a placement on it."""


def _worker_loss_errors():
    """Exception types that mean "a worker (or its data) is gone", not a bug in a task."""
    from distributed import TimeoutError as DaskTimeoutError
    from distributed.comm.core import CommClosedError
    from distributed.scheduler import KilledWorker

    errors = [KilledWorker, CommClosedError, concurrent.futures.CancelledError, OSError,
              DaskTimeoutError, WorkerLeft]
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
    phi_transport : {"auto", "recipe", "dense"} or None
        This chain's :attr:`phi_transport` (None: the class default).

    Attributes
    ----------
    traffic : dict
        ``{"sent": bytes, "received": bytes, "iterations": n}`` counted from
        the sizes of the arrays broadcast to / gathered from the workers.
    recoveries : int
        How many times shards were rebuilt after losing workers.
    timings : dict
        ``"phi_draw"``: seconds in the driver's own Phi draws (:meth:`phi`); subclasses add
        their own entries.
    """

    #: How the exact Phi reaches the workers: ``"auto"`` sends the non-zero counts it was
    #: drawn from (:class:`~dolda.sampler.phi.PhiRecipe`; every worker repeats the draw)
    #: whenever they take fewer bytes than Phi, ``"recipe"`` always once the driver has
    #: drawn a Phi itself (the first iteration of a fit, or of a resumed one, sends Phi),
    #: ``"dense"`` never.  The chain is the same either way.
    phi_transport = "auto"

    def __init__(self, client, seed, shards, z_parts, n_topics, snapshot_every=10,
                 phi_transport=None):
        if phi_transport is not None:  # checked by dolda.backends.make_chain / make_lda_chain
            self.phi_transport = phi_transport
        if client is None:
            from distributed import default_client

            client = default_client()
        self.client = client
        self.seed = seed
        self.shards = shards
        self.n_topics = int(n_topics)
        self.snapshot_every = max(1, int(snapshot_every))
        self.timings = {"phi_draw": 0.0}
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
        self._constants_f = {}  # the subclass's ``_constants``: {worker: future}
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

    def phi(self):
        """Phi after the last completed iteration (float32 V x K), drawn here from the
        subclass's ``_recipe`` the first time it is needed: when Phi itself travels to the
        workers, or for a checkpoint.  The running means of Phi are Rao-Blackwellised from
        the counts, so while the counts travel the driver draws no Phi at all."""
        if self._phi is None:
            tic = time.perf_counter()
            self._phi = self._recipe.draw()
            self.timings["phi_draw"] += time.perf_counter() - tic
        return self._phi

    def _recipe_travels(self) -> bool:
        """Whether this iteration sends the counts Phi was drawn from (the subclass's
        ``_recipe``, a :class:`~dolda.sampler.phi.PhiRecipe`) instead of Phi: see
        :attr:`phi_transport`."""
        recipe = getattr(self, "_recipe", None)
        if recipe is None or self.phi_transport == "dense":
            return False
        phi_bytes = 4 * recipe.n_words * self.n_topics  # float32 V x K
        return self.phi_transport == "recipe" or recipe.nbytes < phi_bytes

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
            try:
                shard_f, z_f = self.client.scatter([shard, z], workers=[worker], hash=False)
            except KeyError as exc:  # the scheduler dropped that worker a moment ago
                raise WorkerLeft(f"worker {worker} left while its shard was placed") from exc
            self._shard_futures.append(shard_f)
            self._states.append(self.client.submit(
                _start, shard_f, z_f, self.n_topics, key=self._key("start", s),
                workers=[worker], allow_other_workers=True, pure=False))
            self.traffic["sent"] += _nbytes(shard) + _nbytes(z)
        constants = getattr(self, "_constants", None)  # fixed for the whole fit
        if constants is not None:
            self._constants_f = broadcast(self.client, constants, self._workers)
            self.traffic["sent"] += _nbytes(constants) * len(set(self._workers))

    def _copy(self, copies, shard):
        """The copy of a broadcast value (``{worker: future}``) on ``shard``'s worker, or
        None when nothing was broadcast."""
        return copies.get(self._workers[shard]) if copies else None

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
        futures = (list(self._shard_futures) + list(self._states) + self._pending
                   + list(self._constants_f.values()))
        self._shard_futures, self._states, self._pending = [], [], []
        self._constants_f = {}
        # Released, not cancelled: the scheduler forgets a key once no client wants it (and
        # stops its task if it is still running).  ``client.cancel`` of keys some of which
        # the loss of a worker has already forgotten could trip an assertion in the
        # scheduler's cancel handler (distributed 2026.8), which then dropped the client's
        # connection, and with it the data scattered for the replay (seen with a cold
        # numba cache, where the kill lands at another point of the iteration).
        for future in futures:
            future.release()

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
