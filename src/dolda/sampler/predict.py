"""Topic proportions of new documents with Phi fixed (paper section 3.3): unsupervised z-sweeps,
averaged after a burn-in.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .rng import STEP_PREDICT, stream, uniform
from .phi import word_major
from .sweeps import fill_cumulative, resample_document_dense, search_cumulative


@njit(cache=True, parallel=True)
def _predict(tokens, doc_ptr, phi_wk, alpha, n_sweeps, burn_in, seed, out):
    n_docs, n_topics = out.shape
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        n_d = stop - start
        if n_d == 0:
            for k in range(n_topics):
                out[d, k] = 1.0 / n_topics
            continue
        state = stream(seed, STEP_PREDICT, d)
        ndk_row = np.zeros(n_topics, np.int32)
        cum = np.empty(n_topics)
        z = np.empty(n_d, np.int32)
        # initialise sequentially from p(k) ∝ phi_{k,w} (n_{d,k} + alpha)
        for i in range(n_d):
            total = fill_cumulative(phi_wk[tokens[start + i]], ndk_row, alpha, cum)
            u, state = uniform(state)
            k = search_cumulative(cum, n_topics, u * total)
            z[i] = k
            ndk_row[k] += 1
        acc = np.zeros(n_topics)
        local_tokens = tokens[start:stop]
        for s in range(n_sweeps):
            state = resample_document_dense(0, n_d, local_tokens, z, ndk_row, phi_wk, alpha,
                                            cum, state)
            if s >= burn_in:
                for k in range(n_topics):
                    acc[k] += ndk_row[k]
        kept = n_sweeps - burn_in
        denom = kept * (n_d + n_topics * alpha)
        for k in range(n_topics):
            out[d, k] = (acc[k] + kept * alpha) / denom


def predict_topic_proportions(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed):
    """Topic proportions of documents with Phi fixed (paper section 3.3).

    The indicators are drawn from ``p(z = k) ∝ phi_{k,w} (n_{d,k}^{-i} + alpha)``
    for ``n_sweeps`` sweeps; ``(n_{d,k} + alpha) / (N_d + K alpha)`` is averaged
    over the sweeps after ``burn_in``.  Document ``d`` uses the single stream
    ``stream(seed, STEP_PREDICT, d)``.

    Parameters
    ----------
    tokens : int32 (N,), doc_ptr : int64 (D+1,)
        The documents (CSR).
    phi : float (K, V)
        ``Phi``, e.g. the posterior mean of the kept draws.
    alpha : float
    n_sweeps, burn_in : int
        ``0 <= burn_in < n_sweeps``.
    seed : int

    Returns
    -------
    theta : float64 (D, K)
        Rows sum to one; an empty document gets ``1/K`` everywhere.
    """
    n_sweeps, burn_in = int(n_sweeps), int(burn_in)
    if not 0 <= burn_in < n_sweeps:
        raise ValueError(f"need 0 <= burn_in < n_sweeps, got burn_in={burn_in}, "
                         f"n_sweeps={n_sweeps}")
    phi_wk = word_major(phi)
    out = np.empty((len(doc_ptr) - 1, phi.shape[0]), np.float64)
    _predict(np.ascontiguousarray(tokens, dtype=np.int32),
             np.ascontiguousarray(doc_ptr, dtype=np.int64), phi_wk, float(alpha),
             n_sweeps, burn_in, np.int64(seed), out)
    return out


# -------------------------------------------------------------------- shards
# The LDA iteration cut into a shard-local block and a global one, for the
# distributed backend (:mod:`dolda.backends`): every shard sweeps its own
# documents (streams keyed by the global document index) and returns its sparse
# n_{k,w} and the document part of the log-likelihood; the driver adds the
# counts (integers: exact in any order) and draws Phi.  Same z, same Phi as the
# whole-corpus loop of :class:`dolda.LDA` for any number of shards.
