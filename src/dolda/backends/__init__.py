"""Execution backends of the DOLDA chain: where the shard-local blocks run.

* ``"local"`` (:class:`dolda.backends.local.LocalChain`): every shard in this
  process, one after the other, each on all numba threads.
* ``"dask"`` (:class:`dolda.backends.dask.DaskChain`): the shards live on the
  workers of a user's ``distributed.Client`` for the whole fit.

Both run the same blocks of :mod:`dolda.sampler.gibbs_iteration` and
:mod:`dolda.sampler.shard` on the same shard layout, so a seed gives the same
chain on either backend, for any number of threads or workers.  A chain object
has ``step(iteration) -> (state, info)``, ``topics() -> (z, ndk)`` and ``close()``.

:func:`make_lda_chain` does the same for the unsupervised chain of
:class:`dolda.LDA` (``step(iteration) -> (phi_wk, loglik)``).
"""

from __future__ import annotations

BACKENDS = ("local", "dask")

#: How the exact Phi reaches the Dask workers (:attr:`dolda.backends._dask_shards.ShardedDaskChain.phi_transport`).
PHI_TRANSPORTS = ("auto", "recipe", "dense")


def make_chain(backend: str, seed, state, data, config, n_shards=None, client=None,
               snapshot_every: int = 10, phi_transport: str = "auto"):
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
    phi_transport : {"auto", "recipe", "dense"}
        ``"dask"`` only: what carries Phi to the workers (:data:`PHI_TRANSPORTS`).
    """
    if backend == "local":
        from .local import LocalChain

        return LocalChain(seed, state, data, config, n_shards)
    if backend == "dask":
        from ..utils.validation import check_choice
        from .dask import DaskChain

        check_choice(phi_transport, "phi_transport", PHI_TRANSPORTS)

        return DaskChain(client, seed, state, data, config, n_shards, snapshot_every,
                         phi_transport)
    raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")


def make_lda_chain(backend: str, seed, tokens, doc_ptr, n_words, n_topics, alpha, beta,
                   sparse: bool, n_shards=None, client=None, snapshot_every: int = 10,
                   phi_transport: str = "auto"):
    """Start the chain of :class:`dolda.LDA` on ``backend``.

    The z-sweeps draw document ``d`` from the stream of its global index, so z
    and Phi are the same on both backends for any ``n_shards``, threads or
    workers; the log-likelihood trace is added up per shard, and is identical
    to the last bit for the same ``n_shards``.

    Parameters
    ----------
    backend : {"local", "dask"}
    seed : int
    tokens : int32 (N,), doc_ptr : int64 (D + 1,)
    n_words, n_topics : int
    alpha, beta : float
    sparse : bool
        The sparse (alias-table) z-sweep instead of the dense one.
    n_shards : int or None
        ``"local"``: None sums the log-likelihood over the whole corpus (no
        shards); ``"dask"``: None takes the layout from the corpus size
        (:func:`dolda.sampler.shard.shard_bounds`).
    client : distributed.Client or None
        ``"dask"`` only; None takes the current default client.
    snapshot_every : int
        ``"dask"`` only: iterations between the driver's copies of z.
    phi_transport : {"auto", "recipe", "dense"}
        ``"dask"`` only: what carries Phi to the workers (:data:`PHI_TRANSPORTS`).
    """
    from ..sampler.shard import shard_bounds

    if backend == "local":
        from .local import LocalLDAChain

        bounds = None if n_shards is None else shard_bounds(doc_ptr, n_shards)
        return LocalLDAChain(seed, tokens, doc_ptr, n_words, n_topics, alpha, beta, sparse,
                             bounds)
    if backend == "dask":
        import numpy as np

        from ..utils.validation import check_choice
        from ..sampler import lda as topic_kernels
        from .dask import DaskLDAChain

        check_choice(phi_transport, "phi_transport", PHI_TRANSPORTS)

        z, _, phi_wk, word_ptr, _ = topic_kernels.initial_state(tokens, doc_ptr, n_words,
                                                                n_topics, beta, seed)
        shards = topic_kernels.make_lda_shards(tokens, doc_ptr, n_words,
                                               shard_bounds(doc_ptr, n_shards))
        rows = topic_kernels.alias_rows(np.diff(word_ptr)) if sparse else None
        return DaskLDAChain(client, seed, shards, z, phi_wk, alpha, beta, rows, snapshot_every,
                            phi_transport)
    raise ValueError(f"backend must be one of {BACKENDS}; got {backend!r}")
