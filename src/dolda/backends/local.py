"""The local backend: all shards in this process, parallel inside each shard (numba threads)."""

from __future__ import annotations

from ..sampler import chain as dolda_chain


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
        Shard layout (:func:`dolda.sampler.chain.whole_corpus_shards`).
    """

    def __init__(self, seed, state, data, config, n_shards=None):
        self.seed = seed
        self.state = state
        self.data = data
        self.config = config
        self.shards = dolda_chain.whole_corpus_shards(data, n_shards)

    def step(self, iteration: int):
        """Run iteration ``iteration``; returns ``(state, info)``."""
        self.state, info = dolda_chain.dolda_step(self.seed, iteration, self.state, self.data,
                                                  self.config, self.shards)
        return self.state, info

    def topics(self):
        """``(z, ndk)`` after the last completed iteration (the live arrays)."""
        return self.state.z, self.state.ndk

    def close(self):
        """Nothing to release."""
