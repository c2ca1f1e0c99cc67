"""Exact tests of the prediction driver (:mod:`dolda.sampler.predict`) written for its mutation
run (docs/MUTATION.md)."""

import numpy as np
import pytest

from dolda.sampler import predict

pytestmark = pytest.mark.power



def _documents(tokens, doc_ptr, seed, out, K):
    """The replays' documents: ``(d, words, state)`` with the kernel's stream of document
    ``d``; an empty document gets ``1 / K`` in ``out`` and is skipped."""
    from dolda.sampler import rng

    for d in range(len(doc_ptr) - 1):
        words = tokens[doc_ptr[d]:doc_ptr[d + 1]]
        if len(words) == 0:
            out[d] = 1.0 / K
            continue
        yield d, words, np.uint64(int(rng.stream(seed, rng.STEP_PREDICT, d)) & (2**64 - 1))

def _greedy_bounds(tokens, doc_ptr, max_words):
    """Consecutive chunks, each as long as its distinct words fit ``max_words`` (a document
    with more is a chunk of its own): plain Python sets."""
    bounds, words = [0], set()
    for d in range(len(doc_ptr) - 1):
        doc = set(tokens[doc_ptr[d]:doc_ptr[d + 1]].tolist())
        if words and len(words | doc) > max_words:
            bounds.append(d)
            words = set(doc)
        else:
            words |= doc
    bounds.append(len(doc_ptr) - 1)
    return bounds


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("max_words", [3, 8, 20])
def test_chunk_bounds_are_the_greedy_chunks_of_at_most_max_words(seed, max_words):
    g = np.random.default_rng(seed)
    lengths = g.integers(0, 12, 25)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = g.integers(0, 30, doc_ptr[-1]).astype(np.int64)
    got = predict.chunk_bounds(tokens, doc_ptr, 30, max_words)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, _greedy_bounds(tokens, doc_ptr, max_words))


def test_a_batch_that_fits_is_one_chunk():
    doc_ptr = np.array([0, 2, 4], np.int64)
    tokens = np.array([0, 1, 2, 3], np.int64)
    np.testing.assert_array_equal(predict.chunk_bounds(tokens, doc_ptr, 4, 4), [0, 2])
    np.testing.assert_array_equal(predict.chunk_bounds(tokens[:2], doc_ptr[:2], 4, 1), [0, 1])


def _reference_dense(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed, rao_blackwell):
    """The dense prediction in plain Python from the documented stream
    ``stream(seed, STEP_PREDICT, d)``: sequential initialisation from
    ``p(k) ∝ phi_{k,w} (n_{d,k} + alpha)``, ``n_sweeps`` Gibbs sweeps, the average of
    ``(n_{d,k} + alpha) / (N_d + K alpha)`` over the sweeps after ``burn_in``, ``n_{d,k}`` the
    drawn counts or, ``rao_blackwell``, the sum of the conditionals the tokens were drawn
    from; ``1/K`` for an empty document."""
    from dolda.sampler import rng

    K = phi.shape[0]
    out = np.empty((len(doc_ptr) - 1, K))

    def conditional(w, ndk):
        p = phi[:, w] * (ndk + alpha)
        return p / p.sum()

    def draw(w, ndk, state):
        cum = np.cumsum(phi[:, w] * (ndk + alpha))
        u, state = rng.uniform(state)
        hit = np.nonzero(cum > u * cum[-1])[0]
        return (int(hit[0]) if len(hit) else K - 1), np.uint64(int(state) & (2**64 - 1))

    for d, words, state in _documents(tokens, doc_ptr, seed, out, K):
        ndk, z = np.zeros(K), []
        for w in words:
            k, state = draw(w, ndk, state)
            z.append(k)
            ndk[k] += 1
        acc = np.zeros(K)
        for s in range(n_sweeps):
            for i, w in enumerate(words):
                ndk[z[i]] -= 1
                if rao_blackwell and s >= burn_in:
                    acc += conditional(w, ndk)
                z[i], state = draw(w, ndk, state)
                ndk[z[i]] += 1
            if not rao_blackwell and s >= burn_in:
                acc += ndk
        kept = n_sweeps - burn_in
        out[d] = (acc + kept * alpha) / (kept * (len(words) + K * alpha))
    return out


@pytest.mark.parametrize("rao_blackwell", [True, False])
def test_dense_prediction_replays_the_documented_draws(rao_blackwell):
    """Empty, one-token and longer documents; ``method="dense"`` must run the dense kernel
    (the sparse one draws the same law from the same stream, but other numbers); both
    estimators from the same draws."""
    g = np.random.default_rng(8)
    K, V = 4, 9
    phi = g.dirichlet(np.full(V, 0.5), size=K)
    lengths = np.array([5, 0, 1, 7, 1, 3])
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = g.integers(0, V, doc_ptr[-1]).astype(np.int32)
    got = predict.predict_topic_proportions(tokens, doc_ptr, phi, 0.3, 6, 2, 11, method="dense",
                                            rao_blackwell=rao_blackwell)
    want = _reference_dense(tokens, doc_ptr, phi, 0.3, 6, 2, 11, rao_blackwell)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("method", ["dense", "sparse"])
def test_empty_documents_get_uniform_proportions_in_every_kernel(method):
    phi = np.random.default_rng(1).dirichlet(np.ones(6), size=5)
    doc_ptr = np.array([0, 0, 2, 2, 3], np.int64)
    tokens = np.array([1, 4, 2], np.int32)
    out = predict.predict_topic_proportions(tokens, doc_ptr, phi, 0.2, 3, 1, 0, method=method)
    np.testing.assert_array_equal(out[[0, 2]], np.full((2, 5), 0.2))
    assert np.all(out[[1, 3]] != 0.2)


@pytest.mark.parametrize("bad", [[0, 9, 3], [0, -1, 3]])
def test_token_ids_out_of_range_on_either_side_are_named_before_chunking(bad, monkeypatch):
    """A batch large enough to be cut into chunks (the chunking indexes a table by word id):
    one id out of range, on either side, is refused by name."""
    monkeypatch.setattr(predict, "CHUNK_ENTRIES", 2 * 3)  # at most 2 distinct words a chunk
    phi = np.full((3, 9), 1 / 9)
    tokens = np.array([1, 2, 3, 4, 5, 6] + bad, np.int64)
    doc_ptr = np.array([0, 2, 4, 6, 9], np.int64)
    with pytest.raises(ValueError, match="token ids"):
        predict.predict_topic_proportions(tokens, doc_ptr, phi, 0.1, 2, 1, 0)


def _reference_sparse(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed, rao_blackwell,
                      seen=None):
    """The sparse prediction in plain Python from the same stream: a token's uniform ``u``
    picks, on ``u (doc_mass + m_w)``, first among the document's non-zero topics in the
    order of their list (a topic is appended when its count rises from 0 and swap-removed,
    the last entry taking its place, when it falls to 0), then among all topics in order
    for the word bucket ``alpha_k phi_{k,w}``; the estimate as in :func:`_reference_dense`.
    ``seen``, a list, gets the number of non-zero topics at each draw."""
    from dolda.sampler import rng

    K = phi.shape[0]
    out = np.empty((len(doc_ptr) - 1, K))

    def draw(w, ndk, nz, state):
        if seen is not None:
            seen.append(len(nz))
        doc = np.cumsum([ndk[k] * phi[k, w] for k in nz]) if nz else np.zeros(0)
        doc_mass = doc[-1] if nz else 0.0
        word = np.cumsum(alpha * phi[:, w])
        u, state = rng.uniform(state)
        state = np.uint64(int(state) & (2**64 - 1))
        target = u * (word[-1] + doc_mass)
        if target < doc_mass:
            return nz[min(int(np.searchsorted(doc, target, side="right")), len(nz) - 1)], state
        return min(int(np.searchsorted(word, target - doc_mass, side="right")), K - 1), state

    def add(k, ndk, nz):
        if ndk[k] == 0:
            nz.append(k)
        ndk[k] += 1

    def remove(k, ndk, nz):
        ndk[k] -= 1
        if ndk[k] == 0:
            j = nz.index(k)
            nz[j] = nz[-1]
            nz.pop()

    for d, words, state in _documents(tokens, doc_ptr, seed, out, K):
        ndk, nz, z = np.zeros(K), [], []
        for w in words:
            k, state = draw(w, ndk, nz, state)
            z.append(k)
            add(k, ndk, nz)
        acc = np.zeros(K)
        for s in range(n_sweeps):
            for i, w in enumerate(words):
                remove(z[i], ndk, nz)
                if rao_blackwell and s >= burn_in:
                    p = phi[:, w] * (ndk + alpha)
                    acc += p / p.sum()
                z[i], state = draw(w, ndk, nz, state)
                add(z[i], ndk, nz)
            if not rao_blackwell and s >= burn_in:
                acc += ndk
        kept = n_sweeps - burn_in
        out[d] = (acc + kept * alpha) / (kept * (len(words) + alpha.sum()))
    return out


@pytest.mark.parametrize("rao_blackwell", [True, False])
def test_sparse_prediction_replays_the_documented_draws(rao_blackwell):
    """The sparse kernel token by token (K = 40: the word bucket's scan over two blocks of 32;
    per-topic alpha, large enough for both buckets to be drawn from): its own draws and both
    estimators, the Rao-Blackwellised one with the document bucket's share added per sweep
    and the word bucket's once per token."""
    g = np.random.default_rng(9)
    K, V = 40, 9
    phi = g.dirichlet(np.full(V, 0.5), size=K)
    alpha = g.uniform(0.02, 0.3, K)
    lengths = np.array([5, 0, 1, 9, 1, 3])
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = g.integers(0, V, doc_ptr[-1]).astype(np.int32)
    got = predict.predict_topic_proportions(tokens, doc_ptr, phi, alpha, 6, 2, 11,
                                            method="sparse", rao_blackwell=rao_blackwell)
    want = _reference_sparse(tokens, doc_ptr, phi, alpha, 6, 2, 11, rao_blackwell)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("rao_blackwell", [True, False])
@pytest.mark.parametrize("K", [8, 9, 16, 17])
def test_sparse_replay_when_a_long_document_fills_every_slot(K, rao_blackwell):
    """Guards the local copy's slot arrays (mutation run of ``predict_sparse.py``): a document
    longer than K whose other tokens hold every topic has all ``min(K, N_d) = K`` slots full at
    a draw, its weights over ``ceil(K / WEIGHT_BLOCK)`` blocks; K = 8, 16 end on a full block,
    K = 9, 17 on a block of one slot, so one block sum too few or too many allocated or written
    reads or writes past the arrays (the replay above has N_d <= 9 < K: never a full copy)."""
    g = np.random.default_rng(30 + K)
    V = 6
    phi = g.dirichlet(np.full(V, 50.0), size=K)  # flat, with a large alpha: every topic
    alpha = g.uniform(3.0, 6.0, K)                # stays in use
    lengths = np.array([70, 3, 45])
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = g.integers(0, V, doc_ptr[-1]).astype(np.int32)
    got = predict.predict_topic_proportions(tokens, doc_ptr, phi, alpha, 5, 2, 4,
                                            method="sparse", rao_blackwell=rao_blackwell)
    seen = []
    want = _reference_sparse(tokens, doc_ptr, phi, alpha, 5, 2, 4, rao_blackwell, seen)
    assert max(seen) == K and seen.count(K) > 20  # the copy is full at many draws
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)


@pytest.mark.parametrize("rao_blackwell", [True, False])
@pytest.mark.parametrize("method", ["dense", "sparse"])
def test_a_one_topic_phi_gives_every_document_proportion_one(method, rao_blackwell):
    """K = 1 (the kernels take any K; the estimators ask for 2 or more): one block of weights,
    every draw topic 0, theta 1 (to rounding); an empty document too."""
    phi = np.full((1, 5), 0.2)
    tokens = np.array([4, 0, 0, 2, 1], np.int32)
    doc_ptr = np.array([0, 3, 3, 4, 5], np.int64)
    got = predict.predict_topic_proportions(tokens, doc_ptr, phi, 0.5, 4, 1, 3, method=method,
                                            rao_blackwell=rao_blackwell)
    np.testing.assert_allclose(got, np.ones((4, 1)), rtol=1e-13, atol=0)
