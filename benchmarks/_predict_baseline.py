"""The prediction kernel of the issue's baseline ("today" in ``bench_predict.py``), kept here
frozen so that later changes to ``dolda.sampler.predict`` do not move the reference: the dense
O(K) sweep with one running cumulative sum per token, int32 counts, and the drawn counts
averaged over the kept sweeps (the code of ``dolda.sampler.predict`` before 2026-11-26).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from dolda.sampler.rng import STEP_PREDICT, stream, uniform


@njit(cache=True)
def _document(tokens, start, stop, phi_wk, alpha, n_sweeps, burn_in, seed, d, out):
    n_topics = out.shape[1]
    n_d = stop - start
    if n_d == 0:
        for k in range(n_topics):
            out[d, k] = 1.0 / n_topics
        return
    state = stream(seed, STEP_PREDICT, d)
    ndk_row = np.zeros(n_topics, np.int32)
    cum = np.empty(n_topics)
    z = np.empty(n_d, np.int32)
    for s in range(-1, n_sweeps):  # s = -1: the sequential initialisation
        for i in range(n_d):
            if s >= 0:
                ndk_row[z[i]] -= 1
            row = phi_wk[tokens[start + i]]
            total = 0.0
            for k in range(n_topics):
                total += row[k] * (ndk_row[k] + alpha[k])
                cum[k] = total
            u, state = uniform(state)
            target = u * total
            k = 0
            while k < n_topics - 1 and cum[k] <= target:
                k += 1
            z[i] = k
            ndk_row[k] += 1
        if s >= burn_in:
            for k in range(n_topics):
                out[d, k] += ndk_row[k]
    kept = n_sweeps - burn_in
    total_alpha = 0.0
    for k in range(n_topics):
        total_alpha += alpha[k]
    for k in range(n_topics):
        out[d, k] = (out[d, k] + kept * alpha[k]) / (kept * (n_d + total_alpha))


@njit(cache=True, parallel=True)
def _predict(tokens, doc_ptr, phi_wk, alpha, n_sweeps, burn_in, seed, out):
    for d in prange(out.shape[0]):
        _document(tokens, doc_ptr[d], doc_ptr[d + 1], phi_wk, alpha, n_sweeps, burn_in, seed,
                  d, out)


def predict_today(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed):
    """The baseline call: the whole Phi copied word-major (float64), then the dense kernel."""
    out = np.zeros((len(doc_ptr) - 1, phi.shape[0]))
    phi_wk = np.ascontiguousarray(np.asarray(phi, dtype=np.float64).T)
    _predict(np.asarray(tokens, np.int32), np.asarray(doc_ptr, np.int64), phi_wk,
             np.full(phi.shape[0], float(alpha)), int(n_sweeps), int(burn_in), np.int64(seed),
             out)
    return out
