"""The unsupervised LDA chain: shards of documents, one sweep per shard, and the start of a
chain; re-exports the LDA kernels, which live one block of the paper per module:

* :mod:`.counts` -- initial z, n_{d,k} and n_{k,w} (dense, sparse, merged across shards).
* :mod:`.gamma` -- gamma variates for the Dirichlet draws.
* :mod:`.phi` -- the Phi step, phi_k ~ Dir(beta + n_k), word-major.
* :mod:`.alias` -- Walker alias tables of phi_{.,w}.
* :mod:`.sweeps` -- the unsupervised z-sweeps (dense and sparse).
* :mod:`.topic_likelihood` -- the LDA marginal log-likelihood.
* :mod:`.predict` -- topic proportions of new documents with Phi fixed.

Randomness: document ``d`` of sweep ``t`` draws from ``stream(seed, t*16 + STEP_Z, d)`` and topic
``k`` from ``stream(seed, t*16 + STEP_PHI, k)``; the topic-word counts are integer sums. Every
result is therefore identical for any number of threads.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .counts import (  # noqa: F401 (re-exported)
    SparseCounts,
    _INIT_PHI_BLOCK,
    _count,
    _init_topics,
    _merge_counts,
    _sparse_counts,
    init_topics,
    merge_sparse_counts,
    sparse_topic_word_counts,
    topic_word_counts,
    word_index,
)
from .gamma import (  # noqa: F401 (re-exported)
    _gamma_small_many,
    _int_power,
    _integer_inverse,
    _log_gamma_small_many,
    gamma_small,
    log_gamma_small,
)
from .phi import (  # noqa: F401 (re-exported)
    _FLOAT32_TINY,
    _draw_phi,
    _draw_phi_wk,
    _phi_step,
    _transpose,
    draw_phi,
    draw_phi_word_major,
    draw_topic_row,
    word_major,
)
from .alias import (  # noqa: F401 (re-exported)
    ALIAS_MIN_TOKENS,
    AliasTables,
    _ALIAS_CHUNK,
    _build_alias,
    _word_mass,
    alias_draw,
    alias_rows,
    build_alias_tables,
)
from .sweeps import (  # noqa: F401 (re-exported)
    SPARSE_MIN_TOPICS,
    resample_document_dense,
    resample_document_sparse,
    resolve_sampler,
    search_cumulative,
    sweep,
    sweep_dense,
    sweep_sparse,
)
from .topic_likelihood import (  # noqa: F401 (re-exported)
    _doc_loglik,
    _topic_loglik,
    _topic_part_sparse,
    combine_log_likelihood,
    lda_doc_log_likelihood,
    lda_log_likelihood,
    lda_log_likelihood_sparse,
    lda_topic_log_likelihood,
    lda_topic_log_likelihood_sparse,
)
from .predict import (  # noqa: F401 (re-exported)
    _predict,
    predict_topic_proportions,
)


class LDAShard(NamedTuple):
    """The fixed data of one shard: documents ``[doc_offset, doc_offset + D_s)``.

    Attributes
    ----------
    tokens : int32 (N_s,)       word ids of the shard's tokens.
    doc_ptr : int64 (D_s + 1,)  document pointer rebased to the shard (starts at 0).
    doc_offset : int            global index of the shard's first document.
    token_offset : int          global index of the shard's first token.
    word_ptr, order : int64     the shard's tokens grouped by word (:func:`word_index`).
    """

    tokens: np.ndarray
    doc_ptr: np.ndarray
    doc_offset: int
    token_offset: int
    word_ptr: np.ndarray
    order: np.ndarray

    @property
    def n_docs(self) -> int:
        return len(self.doc_ptr) - 1

    @property
    def docs(self) -> slice:
        """The shard's rows of a global (D, .) array."""
        return slice(self.doc_offset, self.doc_offset + self.n_docs)

    @property
    def token_range(self) -> slice:
        """The shard's part of a global (N,) array."""
        return slice(self.token_offset, self.token_offset + len(self.tokens))


def make_lda_shards(tokens, doc_ptr, n_words, bounds) -> list[LDAShard]:
    """Cut a corpus at the document ``bounds`` (:func:`dolda.sampler.shard.shard_bounds`)."""
    shards = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        t0, t1 = int(doc_ptr[lo]), int(doc_ptr[hi])
        part = np.ascontiguousarray(tokens[t0:t1], dtype=np.int32)
        word_ptr, order = word_index(part, n_words)
        shards.append(LDAShard(part, np.asarray(doc_ptr[lo:hi + 1] - doc_ptr[lo], np.int64),
                               int(lo), t0, word_ptr, order))
    return shards


def shard_sweep(seed, iteration, shard: LDAShard, z, ndk, phi_wk, tables, alpha):
    """The shard-local block of an LDA iteration; ``z`` and ``ndk`` are updated in place.

    Returns
    -------
    counts : SparseCounts   the shard's ``n_{k,w}`` after the sweep.
    loglik_doc : float      the shard's document part of the log-likelihood.
    """
    sweep(shard.tokens, shard.doc_ptr, z, ndk, phi_wk, alpha, seed, iteration, tables,
          shard.doc_offset)
    counts = sparse_topic_word_counts(shard.word_ptr, shard.order, z, ndk.shape[1])
    return counts, lda_doc_log_likelihood(ndk, alpha)




def initial_state(tokens, doc_ptr, n_words, n_topics, beta, seed, topics=None):
    """The start of an LDA chain: uniform z (one stream per document) and Phi from its counts.

    ``topics``: a given start ``(z, ndk)`` instead of the uniform one (copied).

    Returns
    -------
    z : int32 (N,), ndk : int32 (D, K)
    phi_wk : float32 (V, K)       Phi drawn with iteration -1 (:func:`draw_phi_word_major`).
    word_ptr, order : int64       the corpus' word index (:func:`word_index`).
    """
    word_ptr, order = word_index(tokens, n_words)
    if topics is None:
        z, ndk = init_topics(tokens, doc_ptr, n_topics, seed)
    else:
        z, ndk = np.array(topics[0], np.int32), np.array(topics[1], np.int32)
    counts = sparse_topic_word_counts(word_ptr, order, z, n_topics)
    phi_wk = np.empty((int(n_words), int(n_topics)), np.float32)
    draw_phi_word_major(counts, beta, seed, -1, phi_wk)
    return z, ndk, phi_wk, word_ptr, order
