"""Execution backends of the DOLDA chain: where the shard-local blocks run.

* ``"local"`` (:class:`dolda.backends.local.LocalChain`): every shard in this
  process, one after the other, each on all numba threads.
* ``"dask"`` (:class:`dolda.backends.dask.DaskChain`): the shards live on the
  workers of a user's ``distributed.Client`` for the whole fit.

Both run the same blocks of :mod:`dolda.sampler.chain` and
:mod:`dolda.sampler.shard` on the same shard layout, so a seed gives the same
chain on either backend, for any number of threads or workers.  A chain object
has ``step(iteration) -> (state, info)``, ``topics() -> (z, ndk)`` and ``close()``.
"""

from __future__ import annotations

BACKENDS = ("local", "dask")


def make_chain(backend: str, seed, state, data, config, n_shards=None, client=None,
               snapshot_every: int = 10):
    """Start a chain on ``backend`` from ``state`` (fresh or resumed).

    Parameters
    ----------
    backend : {"local", "dask"}
    seed : int
    state : DOLDAState
        The chain state before the first iteration to run (z, ndk full size).
    data : TopicData
    config : DOLDAConfig
    n_shards : int or None
        Number of document shards (None: from the corpus size).
    client : distributed.Client or None
        ``"dask"`` only; None takes the current default client.
    snapshot_every : int
        ``"dask"`` only: iterations between the driver's copies of z (recovery points).
    """
    if backend == "local":
        from .local import LocalChain

        return LocalChain(seed, state, data, config, n_shards)
    if backend == "dask":
        from .dask import DaskChain

        return DaskChain(client, seed, state, data, config, n_shards, snapshot_every)
    raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")
