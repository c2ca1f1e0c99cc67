"""The unsupervised z-sweeps given Phi: p(z_{d,i}=k) ∝ phi_{k,w} (n_{d,k}^{-i} + alpha_k), dense
O(K) per token or sparse O(K_d) with alias tables; one document per parallel task, one random
stream per (seed, iteration, document), so any thread count gives the same chain.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .rng import STEP_Z, stream, uniform
from .alias import alias_draw, bucket_tables
from .alpha import as_alpha
from .prefetch import AHEAD, prefetch, prefetch_row, prefetch_whole_row


#: ``sampler="auto"`` uses the sparse sweep from this many topics on (see
#: ``benchmarks/results/lda_throughput.md`` for the measurement behind it).
SPARSE_MIN_TOPICS = 100


@njit(cache=True, inline="always")
def search_cumulative(cum, n, target):
    """Smallest ``j < n`` with ``cum[j] > target`` (the last index if none).

    ``cum`` is non-decreasing, so that index is the count of ``cum[j] <= target`` over
    ``j < n - 1``: counted without a data-dependent branch, which is faster than a walk
    stopping at the target, whose exit the CPU cannot predict (``benchmarks/results/z_mh.md``).
    """
    j = 0
    for t in range(n - 1):
        j += cum[t] <= target
    return j


#: Topics per block of :func:`fill_weights` / :func:`search_weights`.
WEIGHT_BLOCK = 8


@njit(cache=True, inline="always")
def fill_weights(phi_row, ndk_row, alpha, prob, block_sums):
    """``prob[k] = phi_{k,w} (n_{d,k} + alpha_k)`` and their sums over blocks of
    :data:`WEIGHT_BLOCK` topics; returns the total.

    Laid out for speed: the products are one loop without a carried dependency
    (vectorised), and the sums run as short independent chains, one per block, instead of
    one running cumulative sum of K additions.  ``ndk_row`` is best float64
    (no conversion per topic); ``block_sums`` has ``ceil(K / WEIGHT_BLOCK)`` entries.
    """
    for k in range(len(prob)):
        prob[k] = phi_row[k] * (ndk_row[k] + alpha[k])
    return block_totals(prob, block_sums)


@njit(cache=True, inline="always")
def block_totals(prob, block_sums):
    """``block_sums[b] = sum of prob`` over block ``b`` of :data:`WEIGHT_BLOCK` entries (one
    short chain of additions per block: the blocks overlap); returns their sum, in order."""
    return block_totals_n(prob, len(prob), block_sums)


@njit(cache=True, inline="always")
def block_totals_n(prob, n, block_sums):
    """:func:`block_totals` of the first ``n`` entries of ``prob`` (into the first
    ``ceil(n / WEIGHT_BLOCK)`` of ``block_sums``): the sparse kernels' weights fill a prefix
    of a scratch array (a slice in the inner loop would cost more than the sums)."""
    total = 0.0
    for b in range((n + WEIGHT_BLOCK - 1) // WEIGHT_BLOCK):
        lo = b * WEIGHT_BLOCK
        acc = 0.0
        for k in range(lo, min(lo + WEIGHT_BLOCK, n)):
            acc += prob[k]
        block_sums[b] = acc
        total += acc
    return total


@njit(cache=True, inline="always")
def search_weights(prob, block_sums, target):
    """The topic whose interval of the cumulated weights of :func:`fill_weights` holds
    ``target`` (in ``[0, total)``): a walk over the blocks, then within the block.  When
    rounding leaves ``target`` beyond the last weight, the last topic of positive weight
    (a Pólya-urn Phi can have zero entries)."""
    return search_weights_n(prob, len(prob), block_sums, target)


@njit(cache=True, inline="always")
def search_weights_n(prob, n, block_sums, target):
    """:func:`search_weights` over the first ``n`` entries of ``prob`` and the block sums of
    :func:`block_totals_n`."""
    n_blocks = (n + WEIGHT_BLOCK - 1) // WEIGHT_BLOCK
    b = 0
    acc = block_sums[0]
    while acc <= target and b < n_blocks - 1:
        b += 1
        acc += block_sums[b]
    acc -= block_sums[b]
    k = b * WEIGHT_BLOCK
    last = min(k + WEIGHT_BLOCK, n) - 1
    acc += prob[k]
    while acc <= target and k < last:
        k += 1
        acc += prob[k]
    while k > 0 and prob[k] <= 0.0:  # only past the end: a walk that stops has acc > target
        k -= 1
    return k


@njit(cache=True)
def resample_document_dense(start, stop, tokens, z, ndk_row, phi_wk, alpha, cum, state):
    """Gibbs-resample the tokens ``start:stop`` of one document in order; returns the state.

    ``ndk_row`` (K,) is updated in place, ``cum`` (K,) is scratch space (the weights of
    :func:`fill_weights`, summed by blocks).  The sweep counts in a float64 copy of the row
    and writes it back at the end.
    """
    n_topics = len(ndk_row)
    counts = np.empty(n_topics)
    for k in range(n_topics):
        counts[k] = ndk_row[k]
    block_sums = np.empty((n_topics + WEIGHT_BLOCK - 1) // WEIGHT_BLOCK)
    for i in range(start, stop):
        if i + AHEAD < stop:  # the row of Phi of a token ahead starts loading now
            prefetch_whole_row(phi_wk, tokens[i + AHEAD])
        counts[z[i]] -= 1.0
        total = fill_weights(phi_wk[tokens[i]], counts, alpha, cum, block_sums)
        u, state = uniform(state)
        k1 = search_weights(cum, block_sums, u * total)
        z[i] = k1
        counts[k1] += 1.0
    for k in range(n_topics):
        ndk_row[k] = int(counts[k])
    return state


@njit(cache=True, parallel=True)
def sweep_dense(tokens, doc_ptr, z, ndk, phi_wk, alpha, seed, iteration, doc_offset=0):
    """One exact Gibbs sweep over all tokens, documents in parallel, O(K) per token.

    Parameters
    ----------
    tokens : int32 (N,)       word ids ``w_{d,i}`` (CSR data).
    doc_ptr : int64 (D+1,)    document ``d`` owns ``tokens[doc_ptr[d]:doc_ptr[d+1]]``.
    z : int32 (N,)            topic indicators, updated in place.
    ndk : int32 (D, K)        ``n_{d,k}``, updated in place (each document its own row).
    phi_wk : float64 (V, K)   ``Phi^T`` (word-major).
    alpha : float64 (K,)      Dirichlet prior of theta, ``alpha_k``.
    seed, iteration : int     document ``d`` uses ``stream(seed, iteration*16+STEP_Z, d)``.
    doc_offset : int          global index of document 0 when the arrays are one shard of a
                              corpus: document ``d`` then draws from the stream of
                              ``doc_offset + d``, so any sharding gives the same sweep.
    """
    n_docs, n_topics = ndk.shape
    step = iteration * 16 + STEP_Z
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        if stop == start:
            continue
        cum = np.empty(n_topics)
        state = stream(seed, step, doc_offset + d)
        resample_document_dense(start, stop, tokens, z, ndk[d], phi_wk, alpha, cum, state)


@njit(cache=True)
def resample_document_sparse(start, stop, tokens, z, ndk_row, phi_wk, prob, alias, mass,
                             table_row, alpha, nz, pos, cum, state):
    """Sparse exact Gibbs resampling of one document's tokens; returns the state.

    ``p(k) ∝ alpha_k phi_{k,w} + n_{d,k} phi_{k,w}``: with probability
    ``mass_w / (mass_w + sum_k n_{d,k} phi_{k,w})``, ``mass_w = sum_k alpha_k phi_{k,w}``,
    the topic comes from the word's alias table of ``alpha_k phi_{k,w}`` (or, for a
    word without one, a linear scan of ``alpha_k phi_{k,w}``), otherwise from the
    document's non-zero topics.  ``nz``, ``pos`` and ``cum`` (K,) are scratch space.
    """
    n_topics = len(ndk_row)
    n_nz = 0
    for k in range(n_topics):
        if ndk_row[k] > 0:
            nz[n_nz] = k
            pos[k] = n_nz
            n_nz += 1
        else:
            pos[k] = -1
    for i in range(start, stop):
        w = tokens[i]
        if i + AHEAD < stop:  # the row of Phi of a token ahead starts loading now
            prefetch_row(phi_wk, tokens[i + AHEAD], nz, n_nz)
            prefetch(mass, tokens[i + AHEAD])
        k0 = z[i]
        ndk_row[k0] -= 1
        if ndk_row[k0] == 0:  # swap-remove k0 from the non-zero list
            j = pos[k0]
            last = nz[n_nz - 1]
            nz[j] = last
            pos[last] = j
            pos[k0] = -1
            n_nz -= 1
        phi_row = phi_wk[w]
        doc_mass = 0.0
        for j in range(n_nz):
            k = nz[j]
            doc_mass += ndk_row[k] * phi_row[k]
            cum[j] = doc_mass
        word_mass = mass[w]
        u, state = uniform(state)
        target = u * (word_mass + doc_mass)
        if target < word_mass or n_nz == 0:
            r = table_row[w]
            if r >= 0:
                k1, state = alias_draw(prob[r], alias[r], state)
            else:
                u2, state = uniform(state)
                target = u2 * word_mass
                k1 = 0
                acc = alpha[0] * phi_row[0]
                while acc <= target and k1 < n_topics - 1:
                    k1 += 1
                    acc += alpha[k1] * phi_row[k1]
        else:
            k1 = nz[search_cumulative(cum, n_nz, target - word_mass)]
        z[i] = k1
        if ndk_row[k1] == 0:
            nz[n_nz] = k1
            pos[k1] = n_nz
            n_nz += 1
        ndk_row[k1] += 1
    return state


@njit(cache=True, parallel=True)
def sweep_sparse(tokens, doc_ptr, z, ndk, phi_wk, prob, alias, mass, table_row, alpha, seed,
                 iteration, doc_offset=0):
    """One sparse exact Gibbs sweep, documents in parallel, O(K_d) per token.

    Samples the same conditional as :func:`sweep_dense`; ``prob``, ``alias``,
    ``mass``, ``table_row`` are the word-bucket :class:`AliasTables` of ``alpha_k phi_{k,w}``
    (:func:`dolda.sampler.alias.build_alias_tables` with ``alpha``).  Other arguments as
    :func:`sweep_dense`.
    """
    n_docs, n_topics = ndk.shape
    step = iteration * 16 + STEP_Z
    for d in prange(n_docs):
        start, stop = doc_ptr[d], doc_ptr[d + 1]
        if stop == start:
            continue
        nz = np.empty(n_topics, np.int32)
        pos = np.empty(n_topics, np.int32)
        cum = np.empty(n_topics)
        state = stream(seed, step, doc_offset + d)
        resample_document_sparse(start, stop, tokens, z, ndk[d], phi_wk, prob, alias, mass,
                                 table_row, alpha, nz, pos, cum, state)


def resolve_sampler(sampler: str, n_topics: int) -> str:
    """``"auto"`` -> ``"sparse"`` from :data:`SPARSE_MIN_TOPICS` topics on, else ``"dense"``."""
    if sampler == "auto":
        return "sparse" if n_topics >= SPARSE_MIN_TOPICS else "dense"
    return sampler


def sweep(tokens, doc_ptr, z, ndk, phi_wk, alpha, seed, iteration, tables=None, doc_offset=0):
    """One z-sweep: sparse when alias ``tables`` are given, dense otherwise.

    ``alpha`` is a float or float (K,); ``tables`` the plain tables of
    ``phi_{.,w}`` (:func:`dolda.sampler.alias.build_alias_tables` without alpha),
    turned into the word-bucket tables here (:func:`dolda.sampler.alias.bucket_tables`).
    ``doc_offset``: global index of the first document when the arrays are a
    shard (see :func:`sweep_dense`).
    """
    alpha = as_alpha(alpha, ndk.shape[1])
    if tables is None:
        sweep_dense(tokens, doc_ptr, z, ndk, phi_wk, alpha, np.int64(seed),
                    np.int64(iteration), np.int64(doc_offset))
    else:
        tables = bucket_tables(tables, phi_wk, alpha)
        sweep_sparse(tokens, doc_ptr, z, ndk, phi_wk, tables.prob, tables.alias, tables.mass,
                     tables.row, alpha, np.int64(seed), np.int64(iteration),
                     np.int64(doc_offset))


# ------------------------------------------------------------ log-likelihood
