"""Exact tests of the unsupervised z-sweeps (:mod:`dolda.sampler.sweeps`) and of the LDA chain's
shard blocks (:mod:`dolda.sampler.lda`), written for their mutation runs (docs/MUTATION.md).

The dense sweep is replayed token by token in plain Python from the documented streams
(``stream(seed, 16 t + STEP_Z, doc_offset + d)``) and the formula
``p(k) ∝ phi_{k,w} (n_{d,k}^{-i} + alpha)``; the sparse sweep, whose draws are laid out
differently, is checked by its shard invariance here and by its law in ``test_lda.py``.
Everything goes through the public wrappers (``sweeps.sweep``, ``lda.shard_sweep``, ...),
scalar alpha.
"""

import numpy as np
import pytest

from dolda.sampler import lda as kernels
from dolda.sampler import rng, sweeps

from _simulate import random_assignment

pytestmark = pytest.mark.power


def _corpus(seed=0, n_docs=7, K=4, V=9):
    """Documents of 0-12 tokens (document 2 empty), random z and its counts, random Phi."""
    g = np.random.default_rng(seed)
    doc_ptr, tokens, z = random_assignment(g, n_docs, 13, V, K, empty=2)
    ndk = np.zeros((n_docs, K), np.int32)
    for d in range(n_docs):
        np.add.at(ndk[d], z[doc_ptr[d]:doc_ptr[d + 1]], 1)
    phi_wk = g.dirichlet(np.full(K, 0.8), size=V)  # any positive (V, K) works
    return tokens, doc_ptr, z, ndk, phi_wk


def _reference_dense_sweep(tokens, doc_ptr, z, ndk, phi_wk, alpha, seed, iteration,
                           doc_offset=0):
    """The dense sweep in plain Python: sequential within a document, ``k`` = the first index
    whose cumulative weight exceeds ``u * total``."""
    z, ndk = z.copy(), ndk.copy()
    K = ndk.shape[1]
    for d in range(len(doc_ptr) - 1):
        state = rng.stream(seed, iteration * 16 + rng.STEP_Z, doc_offset + d)
        state = np.uint64(int(state) & (2**64 - 1))  # numba returns uint64 as a Python int
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            ndk[d, z[i]] -= 1
            w = np.array([phi_wk[tokens[i], k] * (ndk[d, k] + alpha) for k in range(K)])
            u, state = rng.uniform(state)
            state = np.uint64(int(state) & (2**64 - 1))
            cum = np.cumsum(w)
            k1 = int(np.argmax(cum > u * cum[-1])) if cum[-1] > u * cum[-1] else K - 1
            z[i] = k1
            ndk[d, k1] += 1
    return z, ndk


@pytest.mark.parametrize("iteration,alpha", [(0, 0.5), (5, 0.05)])
def test_dense_sweep_replays_token_by_token_from_the_documented_streams(iteration, alpha):
    tokens, doc_ptr, z, ndk, phi_wk = _corpus()
    want_z, want_ndk = _reference_dense_sweep(tokens, doc_ptr, z, ndk, phi_wk, alpha, 13,
                                              iteration)
    sweeps.sweep(tokens, doc_ptr, z, ndk, phi_wk, alpha, 13, iteration)
    np.testing.assert_array_equal(z, want_z)
    np.testing.assert_array_equal(ndk, want_ndk)


def test_dense_sweep_of_a_shard_uses_the_global_document_streams():
    tokens, doc_ptr, z, ndk, phi_wk = _corpus(1)
    lo = 3
    t0 = doc_ptr[lo]
    want_z, want_ndk = _reference_dense_sweep(tokens[t0:], doc_ptr[lo:] - t0, z[t0:], ndk[lo:],
                                              phi_wk, 0.3, 2, 4, doc_offset=lo)
    zs, ns = z[t0:].copy(), ndk[lo:].copy()
    sweeps.sweep(tokens[t0:], doc_ptr[lo:] - t0, zs, ns, phi_wk, 0.3, 2, 4, doc_offset=lo)
    np.testing.assert_array_equal(zs, want_z)
    np.testing.assert_array_equal(ns, want_ndk)


def _tables(phi_wk, kind):
    if kind == "dense":
        return None
    if kind == "alias":
        return kernels.build_alias_tables(phi_wk)
    return kernels.build_alias_tables(phi_wk, np.full(len(phi_wk), -1, np.int32))  # scans


@pytest.mark.parametrize("kind", ["dense", "alias", "scan"])
def test_sweeping_shards_with_their_offsets_equals_sweeping_the_corpus(kind):
    """Split at documents 3 and 5: the shards (``doc_offset``) give the whole-corpus sweep,
    z and counts exactly; the counts stay those of z."""
    tokens, doc_ptr, z, ndk, phi_wk = _corpus(2, n_docs=8, K=5)
    tables = _tables(phi_wk, kind)
    zw, nw = z.copy(), ndk.copy()
    sweeps.sweep(tokens, doc_ptr, zw, nw, phi_wk, 0.2, 9, 2, tables)
    for lo, hi in [(0, 3), (3, 5), (5, 8)]:
        t0, t1 = doc_ptr[lo], doc_ptr[hi]
        zs, ns = z[t0:t1].copy(), ndk[lo:hi].copy()
        sweeps.sweep(tokens[t0:t1], doc_ptr[lo:hi + 1] - t0, zs, ns, phi_wk, 0.2, 9, 2, tables,
                     doc_offset=lo)
        np.testing.assert_array_equal(zs, zw[t0:t1])
        np.testing.assert_array_equal(ns, nw[lo:hi])
    for d in range(8):
        np.testing.assert_array_equal(
            nw[d], np.bincount(zw[doc_ptr[d]:doc_ptr[d + 1]], minlength=5))
    assert not np.array_equal(zw, z)  # something moved


@pytest.mark.parametrize("kind", ["alias", "scan"])
def test_sparse_sweep_streams_depend_on_iteration_and_seed(kind):
    tokens, doc_ptr, z, ndk, phi_wk = _corpus(3, n_docs=6, K=6)
    tables = _tables(phi_wk, kind)
    runs = {}
    for seed, it in [(1, 0), (1, 0), (1, 1), (2, 0)]:
        zz, nn = z.copy(), ndk.copy()
        sweeps.sweep(tokens, doc_ptr, zz, nn, phi_wk, 0.4, seed, it, tables)
        runs.setdefault((seed, it), []).append(zz)
    np.testing.assert_array_equal(*runs[(1, 0)])
    assert not np.array_equal(runs[(1, 0)][0], runs[(1, 1)][0])
    assert not np.array_equal(runs[(1, 0)][0], runs[(2, 0)][0])


def test_sparse_sweep_with_a_one_topic_phi_column_always_draws_that_topic():
    """A word present in one topic only: every sampler must put all its tokens there, whatever
    the document counts (the doc bucket has weight 0 elsewhere, the word bucket mass is that
    topic's)."""
    tokens, doc_ptr, z, ndk, phi_wk = _corpus(4, n_docs=6, K=5, V=6)
    phi_wk[2] = 0.0
    phi_wk[2, 3] = 0.7
    for kind in ["dense", "alias", "scan"]:
        zz, nn = z.copy(), ndk.copy()
        sweeps.sweep(tokens, doc_ptr, zz, nn, phi_wk, 0.5, 4, 1, _tables(phi_wk, kind))
        assert np.all(zz[tokens == 2] == 3), kind


def _reference_sparse_scan_sweep(tokens, doc_ptr, z, ndk, phi_wk, mass, alpha, seed, iteration):
    """The sparse sweep for words without alias tables, in plain Python: per token, with
    probability ``alpha m_w / (alpha m_w + sum_k n_{d,k} phi_{k,w})`` a linear scan of
    ``phi_{.,w}`` (a second uniform), otherwise the document bucket over the non-zero topics
    in their swap-remove order; stream ``stream(seed, 16 t + STEP_Z, d)``."""
    z, ndk = z.copy(), ndk.copy()
    K = ndk.shape[1]
    for d in range(len(doc_ptr) - 1):
        if doc_ptr[d] == doc_ptr[d + 1]:
            continue
        state = np.uint64(int(rng.stream(seed, iteration * 16 + rng.STEP_Z, d)) & (2**64 - 1))

        def uniform():
            nonlocal state
            u, s = rng.uniform(state)
            state = np.uint64(int(s) & (2**64 - 1))
            return u

        nz = [k for k in range(K) if ndk[d, k] > 0]
        for i in range(doc_ptr[d], doc_ptr[d + 1]):
            w, k0 = tokens[i], z[i]
            ndk[d, k0] -= 1
            if ndk[d, k0] == 0:  # swap-remove
                j = nz.index(k0)
                nz[j] = nz[-1]
                nz.pop()
            cum = np.cumsum([ndk[d, k] * phi_wk[w, k] for k in nz]) if nz else np.zeros(0)
            doc_mass = cum[-1] if nz else 0.0
            word_mass = alpha * mass[w]
            target = uniform() * (word_mass + doc_mass)
            if target < word_mass or not nz:
                target = uniform() * mass[w]
                k1, acc = 0, float(phi_wk[w, 0])
                while acc <= target and k1 < K - 1:
                    k1 += 1
                    acc += phi_wk[w, k1]
            else:
                hit = np.nonzero(cum > target - word_mass)[0]
                k1 = nz[int(hit[0]) if len(hit) else len(nz) - 1]
            z[i] = k1
            if ndk[d, k1] == 0:
                nz.append(k1)
            ndk[d, k1] += 1
    return z, ndk


@pytest.mark.parametrize("iteration,alpha", [(0, 0.5), (6, 0.05)])
def test_sparse_sweep_replays_token_by_token_from_the_documented_streams(iteration, alpha):
    tokens, doc_ptr, z, ndk, phi_wk = _corpus(9, n_docs=8, K=6)
    tables = _tables(phi_wk, "scan")
    want_z, want_ndk = _reference_sparse_scan_sweep(tokens, doc_ptr, z, ndk, phi_wk,
                                                    tables.mass, alpha, 21, iteration)
    sweeps.sweep(tokens, doc_ptr, z, ndk, phi_wk, alpha, 21, iteration, tables)
    np.testing.assert_array_equal(z, want_z)
    np.testing.assert_array_equal(ndk, want_ndk)


def test_resolve_sampler_switches_at_the_documented_number_of_topics():
    n = sweeps.SPARSE_MIN_TOPICS
    assert n == 100
    assert sweeps.resolve_sampler("auto", n - 1) == "dense"
    assert sweeps.resolve_sampler("auto", n) == "sparse"
    assert sweeps.resolve_sampler("auto", 10 * n) == "sparse"
    assert sweeps.resolve_sampler("dense", 10**4) == "dense"
    assert sweeps.resolve_sampler("sparse", 2) == "sparse"


# ------------------------------------------------------------------ lda.py shard blocks


def test_lda_shards_cut_the_corpus_at_the_bounds():
    tokens, doc_ptr, _, _, _ = _corpus(5, n_docs=7, V=9)
    bounds = np.array([0, 2, 3, 7])
    shards = kernels.make_lda_shards(tokens, doc_ptr, 9, bounds)
    assert len(shards) == 3
    for sh, lo, hi in zip(shards, bounds[:-1], bounds[1:]):
        t0, t1 = doc_ptr[lo], doc_ptr[hi]
        np.testing.assert_array_equal(sh.tokens, tokens[t0:t1])
        assert sh.tokens.dtype == np.int32
        np.testing.assert_array_equal(sh.doc_ptr, doc_ptr[lo:hi + 1] - t0)
        assert sh.doc_offset == lo and sh.token_offset == t0
        assert sh.n_docs == hi - lo
        assert sh.docs == slice(lo, hi) and sh.token_range == slice(t0, t1)
        word_ptr, order = kernels.word_index(tokens[t0:t1].astype(np.int32), 9)
        np.testing.assert_array_equal(sh.word_ptr, word_ptr)
        np.testing.assert_array_equal(sh.order, order)


@pytest.mark.parametrize("kind", ["dense", "alias"])
def test_shard_sweeps_give_the_corpus_sweep_its_counts_and_its_likelihood(kind):
    tokens, doc_ptr, z, ndk, phi_wk = _corpus(6, n_docs=8, K=4)
    tables = _tables(phi_wk, kind)
    zw, nw = z.copy(), ndk.copy()
    sweeps.sweep(tokens, doc_ptr, zw, nw, phi_wk, 0.3, 5, 7, tables)
    shards = kernels.make_lda_shards(tokens, doc_ptr, 9, np.array([0, 3, 4, 8]))
    parts, logliks = [], []
    for sh in shards:
        zs, ns = z[sh.token_range], ndk[sh.docs]  # views: updated in place
        counts, loglik = kernels.shard_sweep(5, 7, sh, zs, ns, phi_wk, tables, 0.3)
        parts.append(counts)
        logliks.append(loglik)
        assert loglik == pytest.approx(kernels.lda_doc_log_likelihood(ns, 0.3), rel=1e-12)
        whole = kernels.sparse_topic_word_counts(sh.word_ptr, sh.order, zs, 4)
        for a, b in zip(counts, whole):
            np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(z, zw)
    np.testing.assert_array_equal(ndk, nw)
    merged = kernels.merge_sparse_counts(parts)
    word_ptr, order = kernels.word_index(tokens, 9)
    for a, b in zip(merged, kernels.sparse_topic_word_counts(word_ptr, order, zw, 4)):
        np.testing.assert_array_equal(a, b)
    assert sum(logliks) == pytest.approx(kernels.lda_doc_log_likelihood(nw, 0.3), rel=1e-12)


def test_initial_state_is_uniform_z_and_the_iteration_minus_one_phi():
    tokens, doc_ptr, _, _, _ = _corpus(7, n_docs=6, K=3, V=9)
    z, ndk, phi_wk, word_ptr, order = kernels.initial_state(tokens, doc_ptr, 9, 3, 0.1, 17)
    z0, ndk0 = kernels.init_topics(tokens, doc_ptr, 3, 17)
    np.testing.assert_array_equal(z, z0)
    np.testing.assert_array_equal(ndk, ndk0)
    wp, od = kernels.word_index(tokens, 9)
    np.testing.assert_array_equal(word_ptr, wp)
    np.testing.assert_array_equal(order, od)
    counts = kernels.sparse_topic_word_counts(wp, od, z0, 3)
    want = kernels.draw_phi_word_major(counts, 0.1, 17, -1, np.empty((9, 3), np.float32))
    assert phi_wk.dtype == np.float32 and phi_wk.shape == (9, 3)
    np.testing.assert_array_equal(phi_wk, want)
    np.testing.assert_allclose(phi_wk.sum(axis=0), 1.0, rtol=1e-5)


@pytest.mark.parametrize("K", [1, 7, 8, 9, 70])
def test_block_search_is_the_cumulative_search_and_never_picks_a_zero_weight(K):
    # search_weights over block_totals: the topic np.searchsorted finds on the running sum,
    # for targets across [0, total); a target at or past the total (rounding) gives the
    # last topic of positive weight, not a trailing zero (a Pólya-urn Phi has zeros)
    from dolda.sampler.sweeps import WEIGHT_BLOCK, block_totals, search_weights

    rng = np.random.default_rng(K)
    prob = rng.random(K)
    prob[rng.random(K) < 0.3] = 0.0
    prob[0] = max(prob[0], 0.1)
    if K > 2:
        prob[-2:] = 0.0
    sums = np.empty((K + WEIGHT_BLOCK - 1) // WEIGHT_BLOCK)
    total = block_totals(prob, sums)
    np.testing.assert_allclose(total, prob.sum(), rtol=1e-12)
    cum = np.cumsum(prob)
    for target in np.linspace(0, total, 200, endpoint=False)[1:]:
        want = int(np.searchsorted(cum, target, side="right"))
        if abs(cum[min(want, K - 1)] - target) > 1e-9 and (want == 0 or
                                                           abs(cum[want - 1] - target) > 1e-9):
            assert search_weights(prob, sums, target) == want
    last_positive = int(np.flatnonzero(prob > 0)[-1])
    assert search_weights(prob, sums, total) == last_positive
    assert search_weights(prob, sums, total * 1.5) == last_positive
