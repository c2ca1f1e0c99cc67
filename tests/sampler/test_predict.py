"""Prediction with Phi fixed: both kernels against enumeration, thread invariance, batch set-up."""

import itertools

import numpy as np
import pytest
from test_lda import _chi_square_p

from dolda.evaluate.heldout import document_completion
from dolda.sampler import predict as predict_module
from dolda.sampler import predict_sparse
from dolda.sampler.predict import (
    SPARSE_PREDICT_MIN_TOPICS,
    predict_topic_proportions,
    resolve_predict_method,
)
from dolda.sampler.threads import using_threads
from dolda.sampler.token_topics import token_topic_frequencies

#: The kernels under test: ``gather`` is the sparse kernel's path for documents too long for a
#: local copy of Phi, forced on every document.
KERNELS = ["dense", "sparse", "gather"]


def _use(method, monkeypatch):
    """The ``method=`` for kernel ``method`` (``gather``: the sparse kernel without its
    document-local copy of Phi)."""
    if method == "gather":
        monkeypatch.setattr(predict_sparse, "LOCAL_MAX_ENTRIES", 0)
        return "sparse"
    return method


def _conditional(phi, words, z, i, alpha, upto=None):
    """``p(z_i = k | ...) ∝ phi_{k,w_i} (n_{d,k}^{-i} + alpha)``, counting only the tokens
    ``j != i`` with ``j < upto`` (the sequential initialisation) or all when ``upto`` is None."""
    K = phi.shape[0]
    others = [z[j] for j in range(len(words)) if j != i and (upto is None or j < upto)]
    n = np.bincount(np.asarray(others, dtype=np.int64), minlength=K)
    p = phi[:, words[i]] * (n + alpha)
    return p / p.sum()


def _law_after_init_and_sweeps(phi, words, alpha, n_sweeps):
    """Law of n_{d,.} after the sequential initialisation and ``n_sweeps`` Gibbs sweeps,
    by enumerating every path (dict: count vector -> probability)."""
    K, n = phi.shape[0], len(words)
    law = {}
    for init in itertools.product(range(K), repeat=n):
        p_init = 1.0
        for i in range(n):
            p_init *= _conditional(phi, words, init, i, alpha, upto=i)[init[i]]
        states = {tuple(init): p_init}
        for _ in range(n_sweeps):
            nxt = {}
            for z0, p0 in states.items():
                partial = {z0: p0}
                for i in range(n):
                    step = {}
                    for z, p in partial.items():
                        cond = _conditional(phi, words, z, i, alpha)
                        for k in range(K):
                            z1 = z[:i] + (k,) + z[i + 1:]
                            step[z1] = step.get(z1, 0.0) + p * cond[k]
                    partial = step
                for z, p in partial.items():
                    nxt[z] = nxt.get(z, 0.0) + p
            states = nxt
        for z, p in states.items():
            key = tuple(np.bincount(z, minlength=K))
            law[key] = law.get(key, 0.0) + p
    return law


def _copies(words, copies):
    n = len(words)
    tokens = np.tile(np.asarray(words, np.int32), copies)
    return tokens, np.arange(copies + 1, dtype=np.int64) * n


@pytest.mark.parametrize("method", KERNELS)
@pytest.mark.parametrize("seed", [3, 4])
def test_draws_match_enumeration_after_init_and_one_sweep(method, seed, monkeypatch):
    method = _use(method, monkeypatch)
    # 40 000 copies of a 3-token document, K = 3: with n_sweeps=1, burn_in=0 the output
    # is (n_dk + alpha) / (N_d + K alpha) of the state after the sequential initialisation
    # and one Gibbs sweep, whose law (10 count vectors) is enumerated over all 729 paths.
    # alpha = 0.6 sends many draws through the sparse kernel's word bucket; word 1 appears
    # twice, so topics leave and re-enter the document's non-zero list.
    rng = np.random.default_rng(7)
    K, V, alpha = 3, 4, 0.6
    phi = rng.dirichlet(np.full(V, 0.8), size=K)
    words = [1, 3, 1]
    copies = 40_000
    tokens, doc_ptr = _copies(words, copies)
    theta = predict_topic_proportions(tokens, doc_ptr, phi, alpha, 1, 0, seed, method=method,
                                      rao_blackwell=False)
    ndk = np.rint(theta * (len(words) + K * alpha) - alpha).astype(np.int64)
    assert np.all(ndk.sum(axis=1) == len(words))
    law = _law_after_init_and_sweeps(phi, words, alpha, 1)
    keys = sorted(law)
    assert abs(sum(law.values()) - 1) < 1e-12
    index = {key: j for j, key in enumerate(keys)}
    observed = np.bincount([index[tuple(row)] for row in ndk], minlength=len(keys))
    # fixed seeds; fails only when the kernel's law differs (p < 1e-3)
    assert _chi_square_p(observed, [law[k] for k in keys], copies) > 1e-3


@pytest.mark.parametrize("method", KERNELS)
def test_word_bucket_over_several_blocks_matches_phi(method, monkeypatch):
    method = _use(method, monkeypatch)
    # one-token documents: every draw is p(k) ∝ phi_{k,w} alpha (no other token), i.e.
    # the sparse kernel's word bucket alone; K = 70 spans three blocks of its two-level scan
    rng = np.random.default_rng(8)
    K, V, alpha = 70, 5, 0.1
    phi = rng.dirichlet(np.full(V, 0.3), size=K)
    copies = 40_000
    tokens, doc_ptr = _copies([2], copies)
    theta = predict_topic_proportions(tokens, doc_ptr, phi, alpha, 1, 0, 6, method=method,
                                      rao_blackwell=False)
    topic = np.argmax(theta, axis=1)
    expected = phi[:, 2] / phi[:, 2].sum()
    assert _chi_square_p(np.bincount(topic, minlength=K), expected, copies) > 1e-3


@pytest.mark.parametrize("method", KERNELS)
def test_kept_sweeps_average_matches_enumeration(method, monkeypatch):
    method = _use(method, monkeypatch)
    # n_sweeps=3, burn_in=1: the output averages the counts of sweeps 2 and 3; its mean
    # over copies must equal the enumerated E[(n_dk + alpha) / (N_d + K alpha)] of those
    # sweeps (checked within 5 Monte Carlo standard errors).
    rng = np.random.default_rng(11)
    K, V, alpha = 2, 3, 0.3
    phi = rng.dirichlet(np.full(V, 0.5), size=K)
    words = [0, 2, 2]
    copies = 20_000
    tokens, doc_ptr = _copies(words, copies)
    theta = predict_topic_proportions(tokens, doc_ptr, phi, alpha, 3, 1, 5, method=method,
                                      rao_blackwell=False)
    n, expect = len(words), np.zeros(K)
    for sweeps in (2, 3):
        for key, p in _law_after_init_and_sweeps(phi, words, alpha, sweeps).items():
            expect += p * (np.asarray(key) + alpha) / (n + K * alpha) / 2
    se = theta.std(axis=0) / np.sqrt(copies)
    assert np.all(np.abs(theta.mean(axis=0) - expect) < 5 * se)


def _rao_blackwell_expectation(phi, words, alpha, n_sweeps, burn_in):
    """``E[theta]`` of the Rao-Blackwellised estimate, by enumerating every path: the law of
    the state before each token's update in the kept sweeps, and the conditional the token
    is drawn from there."""
    K, n = phi.shape[0], len(words)
    states = {}
    for init in itertools.product(range(K), repeat=n):
        p_init = 1.0
        for i in range(n):
            p_init *= _conditional(phi, words, init, i, alpha, upto=i)[init[i]]
        states[tuple(init)] = p_init
    expected_counts = np.zeros(K)
    for s in range(n_sweeps):
        for i in range(n):
            step = {}
            for z, p in states.items():
                cond = _conditional(phi, words, z, i, alpha)
                if s >= burn_in:
                    expected_counts += p * cond
                for k in range(K):
                    z1 = z[:i] + (k,) + z[i + 1:]
                    step[z1] = step.get(z1, 0.0) + p * cond[k]
            states = step
    kept = n_sweeps - burn_in
    return (expected_counts / kept + alpha) / (n + K * alpha)


@pytest.mark.parametrize("method", KERNELS)
def test_rao_blackwellised_average_matches_enumeration_with_less_noise(method, monkeypatch):
    method = _use(method, monkeypatch)
    # n_sweeps=3, burn_in=1, 20 000 copies of a 3-token document (K = 3, alpha = 0.6: the
    # sparse kernel's word bucket carries much of the mass): the mean of theta equals the
    # enumerated expectation of the conditionals of sweeps 2 and 3 (5 standard errors), and
    # the same draws averaged as counts are noisier (a smaller standard deviation over the
    # copies is what the conditionals buy).
    rng = np.random.default_rng(12)
    K, V, alpha = 3, 4, 0.6
    phi = rng.dirichlet(np.full(V, 0.8), size=K)
    words = [1, 3, 1]
    copies = 20_000
    tokens, doc_ptr = _copies(words, copies)
    rb = predict_topic_proportions(tokens, doc_ptr, phi, alpha, 3, 1, 5, method=method)
    counts = predict_topic_proportions(tokens, doc_ptr, phi, alpha, 3, 1, 5, method=method,
                                       rao_blackwell=False)
    expect = _rao_blackwell_expectation(phi, words, alpha, 3, 1)
    se = rb.std(axis=0) / np.sqrt(copies)
    assert np.all(np.abs(rb.mean(axis=0) - expect) < 5 * se)
    assert np.all(rb.std(axis=0) < 0.8 * counts.std(axis=0))
    np.testing.assert_allclose(rb.sum(axis=1), 1.0, rtol=1e-12)


@pytest.mark.parametrize("method", KERNELS)
@pytest.mark.parametrize("asymmetric", [False, True])
def test_rao_blackwellised_one_token_document_is_exact(method, asymmetric, monkeypatch):
    method = _use(method, monkeypatch)
    # a one-token document has no other token: every sweep's conditional is
    # alpha_k phi_{k,w} / sum_j alpha_j phi_{j,w}, so the estimate is that exactly, whatever
    # the draws (K = 70: the sparse kernel's word bucket over three blocks)
    rng = np.random.default_rng(3)
    K, V = 70, 6
    phi = rng.dirichlet(np.full(V, 0.3), size=K)
    alpha = rng.uniform(0.05, 0.5, K) if asymmetric else np.full(K, 0.1)
    tokens = np.array([2, 5, 2, 0], np.int32)
    doc_ptr = np.arange(5, dtype=np.int64)
    got = predict_topic_proportions(tokens, doc_ptr, phi, alpha, 4, 1, 9, method=method)
    p = alpha[:, None] * phi[:, tokens]
    p /= p.sum(axis=0)
    want = (p.T + alpha) / (1 + alpha.sum())
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-15)


def test_dense_and_sparse_agree_at_larger_k():
    # K = 60, a peaked Phi: the mean topic proportions of 3000 copies agree within
    # 5 standard errors of their difference (the two kernels draw different numbers)
    rng = np.random.default_rng(2)
    K, V, alpha = 60, 40, 0.05
    phi = rng.dirichlet(np.full(V, 0.05), size=K)
    words = list(rng.integers(0, V, size=25))
    tokens, doc_ptr = _copies(words, 3000)
    a = predict_topic_proportions(tokens, doc_ptr, phi, alpha, 6, 2, 1, method="dense")
    b = predict_topic_proportions(tokens, doc_ptr, phi, alpha, 6, 2, 1, method="sparse")
    se = np.sqrt((a.var(axis=0) + b.var(axis=0)) / len(a)) + 1e-12
    assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) < 5 * se + 1e-9)
    np.testing.assert_allclose(b.sum(axis=1), 1.0)


@pytest.mark.parametrize("method", KERNELS)
def test_same_result_for_one_and_two_threads(method, monkeypatch):
    method = _use(method, monkeypatch)
    rng = np.random.default_rng(0)
    K, V = 40, 200
    phi = rng.dirichlet(np.full(V, 0.1), size=K)
    lengths = rng.integers(0, 60, size=300)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(0, V, size=doc_ptr[-1]).astype(np.int32)
    with using_threads(1):
        one = predict_topic_proportions(tokens, doc_ptr, phi, 0.1, 8, 4, 9, method=method)
    with using_threads(2):
        two = predict_topic_proportions(tokens, doc_ptr, phi, 0.1, 8, 4, 9, method=method)
    np.testing.assert_array_equal(one, two)
    empty = lengths == 0
    assert empty.any()
    np.testing.assert_allclose(one[empty], 1.0 / K)


@pytest.mark.parametrize("method", KERNELS)
def test_batch_setup_uses_only_the_batch_words(method, monkeypatch):
    method = _use(method, monkeypatch)
    # The kernels read the columns of the batch's words, renumbered: adding unused words
    # to Phi (and shifting the token ids) leaves every draw unchanged, and one document
    # predicted alone equals its row of a batch (its stream depends on its index only).
    rng = np.random.default_rng(4)
    K, V = 12, 30
    phi = rng.dirichlet(np.full(V, 0.2), size=K)
    tokens = rng.integers(0, V, size=50).astype(np.int32)
    doc_ptr = np.array([0, 20, 50], np.int64)
    base = predict_topic_proportions(tokens, doc_ptr, phi, 0.2, 5, 2, 3, method=method)
    wide = np.hstack([rng.dirichlet(np.ones(7), size=K), phi])  # 7 unused words first
    shifted = predict_topic_proportions(tokens + 7, doc_ptr, wide, 0.2, 5, 2, 3, method=method)
    np.testing.assert_array_equal(base, shifted)
    alone = predict_topic_proportions(tokens[:20], doc_ptr[:2], phi, 0.2, 5, 2, 3,
                                      method=method)
    np.testing.assert_array_equal(alone[0], base[0])
    # small batches run on the serial kernel; the parallel one gives the same numbers
    monkeypatch.setattr(predict_module, "SERIAL_MAX_TOKENS", 0)
    parallel = predict_topic_proportions(tokens, doc_ptr, phi, 0.2, 5, 2, 3, method=method)
    np.testing.assert_array_equal(parallel, base)


def test_bad_input_is_named():
    phi = np.full((3, 4), 0.25)
    with pytest.raises(ValueError, match="token ids"):
        predict_topic_proportions(np.array([0, 4], np.int32), np.array([0, 2]), phi, 0.1, 2, 1, 0)
    with pytest.raises(ValueError, match="burn_in"):
        predict_topic_proportions(np.array([0], np.int32), np.array([0, 1]), phi, 0.1, 2, 2, 0)
    with pytest.raises(ValueError, match="method"):
        predict_topic_proportions(np.array([0], np.int32), np.array([0, 1]), phi, 0.1, 2, 1, 0,
                                  method="fast")


BAD_DOC_PTRS = [
    (np.array([0, 3, 1, 4]), r"non-decreasing: doc_ptr\[2\] = 1 < doc_ptr\[1\] = 3"),
    (np.array([0, 5, 4]), r"non-decreasing: doc_ptr\[2\] = 4 < doc_ptr\[1\] = 5"),
    (np.array([1, 4]), r"start at 0, got doc_ptr\[0\] = 1"),
    (np.array([0, 2]), r"end at len\(tokens\) = 4, got doc_ptr\[-1\] = 2"),
    (np.array([0, 2, 6]), r"end at len\(tokens\) = 4, got doc_ptr\[-1\] = 6"),
    (np.zeros((2, 2), np.int64), r"1-d array"),
]


@pytest.mark.parametrize("method", ["dense", "sparse"])
@pytest.mark.parametrize("doc_ptr, message", BAD_DOC_PTRS)
def test_bad_doc_ptr_is_named_before_any_kernel(doc_ptr, message, method, monkeypatch):
    # a decreasing doc_ptr made numpy raise "negative dimensions are not allowed"; one past
    # the tokens made the kernels read outside ``tokens`` (numba checks no bounds)
    def no_kernel(*args, **kwargs):
        raise AssertionError("a kernel ran")

    monkeypatch.setattr(predict_module, "_predict_chunk", no_kernel)
    tokens = np.array([0, 2, 1, 1], np.int32)
    phi = np.array([[0.5, 0.5, 0.0], [0.3, 0.2, 0.5]])
    with pytest.raises(ValueError, match=message) as info:
        predict_topic_proportions(tokens, doc_ptr, phi, 0.1, 4, 2, 0, method=method)
    assert "\n" not in str(info.value)
    with pytest.raises(ValueError, match=message):
        token_topic_frequencies(tokens, doc_ptr, phi, 0.1, 4, 2, 0)
    with pytest.raises(ValueError, match=message):
        document_completion(phi, 0.1, tokens, doc_ptr, 4, 2, 0)


def test_empty_batch_is_still_allowed():
    theta = predict_topic_proportions(np.zeros(0, np.int32), np.array([0]), np.full((2, 3), 1 / 3),
                                      0.1, 4, 2, 0)
    assert theta.shape == (0, 2)


@pytest.mark.parametrize("rao_blackwell", [True, False])
@pytest.mark.parametrize("method", ["dense", "sparse"])
def test_word_of_an_all_zero_phi_column_is_named(method, rao_blackwell, monkeypatch):
    # no topic emits word 2: its conditional is 0/0; the Rao-Blackwellised kernels raised a
    # bare ZeroDivisionError, the count estimate put the token on topic 0 (dense) or K - 1
    # (sparse).  Named before any kernel runs, for every public entry that sweeps.
    phi = np.array([[0.5, 0.5, 0.0, 0.0], [0.3, 0.7, 0.0, 0.0]])
    tokens = np.array([0, 2, 1], np.int32)
    doc_ptr = np.array([0, 3])
    message = r"column of word 2 is zero in every topic"
    with pytest.raises(ValueError, match=message) as info:
        predict_topic_proportions(tokens, doc_ptr, phi, 0.1, 10, 5, 0, method=method,
                                  rao_blackwell=rao_blackwell)
    assert "\n" not in str(info.value) and "(2 such words)" not in str(info.value)
    with pytest.raises(ValueError, match=message):
        token_topic_frequencies(tokens, doc_ptr, phi, 0.1, 10, 5, 0, rao_blackwell=rao_blackwell)
    with pytest.raises(ValueError, match=message):
        document_completion(phi, 0.1, np.array([2, 0, 1, 1]), np.array([0, 4]), 10, 5, 0)
    # columns that are not distributions' entries are named the same way
    for bad, what in ((np.nan, "NaN or infinite"), (-0.1, "negative")):
        wrong = phi.copy()
        wrong[0, 1] = bad
        with pytest.raises(ValueError, match=f"{what} values in the column of word 1"):
            predict_topic_proportions(tokens, doc_ptr, wrong, 0.1, 10, 5, 0, method=method)
        with pytest.raises(ValueError, match=f"{what} values in the column of word 1"):
            token_topic_frequencies(tokens, doc_ptr, wrong, 0.1, 10, 5, 0)
    # a zero column of a word the documents do not use changes nothing: the batch's
    # conditionals never read it (and a Phi wider than the vocabulary in use stays legal)
    used = np.array([0, 1, 1], np.int32)
    narrow = phi[:, :2]
    np.testing.assert_array_equal(
        predict_topic_proportions(used, doc_ptr, phi, 0.1, 10, 5, 0, method=method,
                                  rao_blackwell=rao_blackwell),
        predict_topic_proportions(used, doc_ptr, narrow, 0.1, 10, 5, 0, method=method,
                                  rao_blackwell=rao_blackwell))
    np.testing.assert_array_equal(
        token_topic_frequencies(used, doc_ptr, phi, 0.1, 10, 5, 0),
        token_topic_frequencies(used, doc_ptr, narrow, 0.1, 10, 5, 0))


@pytest.mark.parametrize("rao_blackwell", [True, False])
def test_token_topic_frequencies_read_only_the_batch_words_in_phis_own_type(rao_blackwell,
                                                                           monkeypatch):
    # the explanation sweep of a fitted model (float32 phi_, K x V) copied the whole of Phi to
    # a V x K float64 array on every call (660 MB at K = 1000 and 83k words): it now reads the
    # batch's words only, in float32, with the same estimate bit for bit (a float32 value
    # widens exactly in the kernel's float64 arithmetic)
    from dolda.sampler import token_topics

    rng = np.random.default_rng(5)
    phi32 = rng.dirichlet(np.full(40, 0.3), size=6).astype(np.float32)
    tokens = np.array([3, 17, 3, 39, 8, 8, 0, 17, 22], np.int32)
    doc_ptr = np.array([0, 4, 4, 9])
    seen = []
    kernel = token_topics._token_frequencies

    def spy(tok, ptr, phi_wk, *rest):
        seen.append((tok.copy(), phi_wk.dtype, phi_wk.shape))
        return kernel(tok, ptr, phi_wk, *rest)

    monkeypatch.setattr(token_topics, "_token_frequencies", spy)
    got = token_topic_frequencies(tokens, doc_ptr, phi32, 0.1, 12, 4, 3,
                                  rao_blackwell=rao_blackwell)
    wide = token_topic_frequencies(tokens, doc_ptr, phi32.astype(np.float64), 0.1, 12, 4, 3,
                                   rao_blackwell=rao_blackwell)
    np.testing.assert_array_equal(got, wide)
    local, dtype, shape = seen[0]
    assert dtype == np.float32 and shape == (6, 6)  # 6 distinct words, K = 6
    np.testing.assert_array_equal(np.unique(tokens)[local], tokens)
    # and against the full word-major float64 Phi the kernel read before, word ids unchanged
    full = np.zeros_like(got)
    kernel(tokens, doc_ptr, np.ascontiguousarray(phi32.astype(np.float64).T),
           np.full(6, 0.1), 12, 4, np.int64(3), full, rao_blackwell)
    np.testing.assert_array_equal(got, full)


def test_token_topic_frequencies_names_token_ids_out_of_range():
    # the kernel indexes Phi by word id without bounds checks
    with pytest.raises(ValueError, match=r"token ids must lie in \[0, 4\), got 0 .. 9"):
        token_topic_frequencies(np.array([0, 9], np.int32), np.array([0, 2]),
                                np.full((3, 4), 0.25), 0.1, 2, 1, 0)


def test_auto_picks_by_number_of_topics():
    assert resolve_predict_method("auto", SPARSE_PREDICT_MIN_TOPICS) == "sparse"
    assert resolve_predict_method("auto", SPARSE_PREDICT_MIN_TOPICS - 1) == "dense"
    assert resolve_predict_method("dense", 1000) == "dense"


@pytest.mark.parametrize("method", KERNELS)
def test_chunked_batch_gives_the_same_proportions(method, monkeypatch):
    method = _use(method, monkeypatch)
    # a batch cut into chunks (bounded word-major copy of Phi) predicts exactly as one piece:
    # every document keeps its own stream
    rng = np.random.default_rng(4)
    K, V = 40, 300
    phi = rng.dirichlet(np.full(V, 0.1), size=K).astype(np.float32)
    lengths = rng.integers(0, 30, 60)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(0, V, doc_ptr[-1]).astype(np.int32)
    whole = predict_topic_proportions(tokens, doc_ptr, phi, 0.1, 4, 2, 7, method=method)
    monkeypatch.setattr(predict_module, "CHUNK_ENTRIES", 50 * K)  # <= 50 distinct words a chunk
    bounds = predict_module.chunk_bounds(tokens.astype(np.int64), doc_ptr, V, 50)
    assert len(bounds) > 5
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        n_distinct = len(np.unique(tokens[doc_ptr[lo]:doc_ptr[hi]]))
        assert n_distinct <= 50 or hi - lo == 1
    chunked = predict_topic_proportions(tokens, doc_ptr, phi, 0.1, 4, 2, 7, method=method)
    np.testing.assert_array_equal(chunked, whole)

    # written into a strided view (the topic columns of a regressor matrix): the same values,
    # the other columns untouched, chunk by chunk through a small buffer
    U = np.full((len(lengths), 3 + K), -5.0)
    out = predict_topic_proportions(tokens, doc_ptr, phi, 0.1, 4, 2, 7, method=method,
                                    out=U[:, 3:])
    assert np.shares_memory(out, U)
    np.testing.assert_array_equal(U[:, 3:], whole)
    assert (U[:, :3] == -5.0).all()
    with pytest.raises(ValueError, match="out must be float64"):
        predict_topic_proportions(tokens, doc_ptr, phi, 0.1, 4, 2, 7, method=method,
                                  out=np.empty((len(lengths), K), np.float32))


@pytest.mark.parametrize("K,V", [(1000, 700), (7, 3), (50, 0), (300, 2000)])
def test_word_bucket_blocks_are_the_whole_array_expression(K, V, monkeypatch):
    # built a slice of rows at a time, bitwise the one-expression value
    monkeypatch.setattr(predict_module, "_BUCKET_ROWS_ENTRIES", 3 * K + 1)  # 3 rows a slice
    rng = np.random.default_rng(K)
    phi_wk = rng.random((V, K)).astype(np.float32)
    alpha = rng.random(K)
    starts = np.arange(0, K, predict_module.BLOCK)
    expected = (np.add.reduceat(phi_wk * alpha, starts, axis=1, dtype=np.float64) if V
                else np.zeros((0, len(starts))))
    got = predict_module.word_bucket_blocks(phi_wk, alpha)
    assert got.shape == expected.shape
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("rao_blackwell", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_local_copy_of_phi_draws_what_the_gather_kernel_draws(rao_blackwell, dtype, monkeypatch):
    # The sparse kernel sweeps a document on a local copy of Phi in slot order; the gather
    # kernel reads Phi's rows in topic-list order.  Same uniforms, same conditional, sums in
    # another order: the same draws unless a uniform falls within rounding of a boundary, so
    # the proportions agree to rounding.  Documents of up to 120 tokens over K = 40 topics
    # use 20-40 slots (several blocks of WEIGHT_BLOCK), with topics entering and leaving every
    # sweep (alpha = 0.3, a flat Phi); a bug in the slots' bookkeeping (a column, a count or
    # a Rao-Blackwellised sum not moved with its slot) changes the draws or the averages.
    rng = np.random.default_rng(21)
    K, V = 40, 90
    phi = rng.dirichlet(np.full(V, 0.5), size=K).astype(dtype)
    lengths = rng.integers(0, 120, size=80)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(0, V, size=doc_ptr[-1]).astype(np.int32)
    kw = dict(method="sparse", rao_blackwell=rao_blackwell)
    local = predict_topic_proportions(tokens, doc_ptr, phi, 0.3, 12, 4, 5, **kw)
    monkeypatch.setattr(predict_sparse, "LOCAL_MAX_ENTRIES", 0)
    gather = predict_topic_proportions(tokens, doc_ptr, phi, 0.3, 12, 4, 5, **kw)
    np.testing.assert_allclose(local, gather, rtol=1e-9, atol=1e-12)
    # the limit is per document: the long ones on the gather path, the others local
    monkeypatch.setattr(predict_sparse, "LOCAL_MAX_ENTRIES", 40 * 40)
    mixed = predict_topic_proportions(tokens, doc_ptr, phi, 0.3, 12, 4, 5, **kw)
    np.testing.assert_allclose(mixed, gather, rtol=1e-9, atol=1e-12)


def test_each_document_takes_the_kernel_its_local_copy_size_names(monkeypatch):
    # Guards the routing (mutation run of predict_sparse.py; the tests above pass whichever
    # kernel runs): a document's local copy is U x min(K, N_d) entries (U its distinct words);
    # within LOCAL_MAX_ENTRIES it is swept on the copy, past it by the gather kernel, per
    # document, and by default an ordinary document is local.  The two kernels' Rao-Blackwellised
    # sums round differently (slot sums added when a slot empties vs per token), so each row
    # is bitwise the one of the kernel that ran.  The gather rows are anchored by calling
    # _gather_document directly; then every row is checked at limits at and one below each
    # document's size, N_d below and above K.
    from dolda.sampler import rng as rng_module

    rng = np.random.default_rng(31)
    K, V, alpha = 12, 15, np.full(12, 0.3)
    phi = rng.dirichlet(np.full(V, 0.5), size=K)
    lengths = np.array([7, 20, 0, 13, 30])
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(0, V, doc_ptr[-1]).astype(np.int32)
    entries = np.array([len(np.unique(tokens[a:b])) * min(K, b - a)
                        for a, b in zip(doc_ptr[:-1], doc_ptr[1:])])
    np.testing.assert_array_equal(entries, [35, 168, 0, 96, 144])

    def run(limit=None):
        if limit is not None:
            monkeypatch.setattr(predict_sparse, "LOCAL_MAX_ENTRIES", int(limit))
        return predict_topic_proportions(tokens, doc_ptr, phi, alpha, 4, 1, 2, method="sparse")

    local_ids, phi_wk = predict_module.local_topics(tokens, phi)
    blocks = np.ascontiguousarray(predict_module.word_bucket_blocks(phi_wk, alpha))
    direct = np.full((len(lengths), K), 1.0 / K)
    for d in np.nonzero(lengths)[0]:
        a, b = doc_ptr[d], doc_ptr[d + 1]
        state = np.uint64(int(rng_module.stream(2, rng_module.STEP_PREDICT, d)) & (2**64 - 1))
        acc = np.zeros(K)
        predict_sparse._gather_document(local_ids[a:b], phi_wk, blocks, blocks.sum(axis=1),
                                        alpha, 4, 1, state, acc, True)
        predict_sparse.write_proportions(direct, d, acc, alpha, 4, 1, b - a)

    default = run()
    local, gather = run(10**9), run(0)
    np.testing.assert_array_equal(gather, direct)
    informative = lengths > 0
    assert np.all(np.any(local != gather, axis=1)[informative])  # the rows tell them apart
    np.testing.assert_array_equal(default, local)
    for limit in sorted({*entries[informative], *(entries[informative] - 1)}):
        want = np.where((entries <= limit)[:, None], local, gather)
        np.testing.assert_array_equal(run(limit), want, err_msg=f"limit {limit}")


@pytest.mark.parametrize("n_nz", [1, 7, 8, 9, 17, 40])
def test_slot_search_is_the_cumulative_search(n_nz):
    # _slot_weights / _search_slots over the first n_nz slots (the arrays are wider): the
    # slot np.searchsorted finds on the running sum of c_j L[u, j], for targets across
    # [0, mass); a target at or past the mass (rounding) gives the last slot, never one
    # beyond it
    from dolda.sampler.sweeps import WEIGHT_BLOCK

    rng = np.random.default_rng(n_nz)
    width = 48
    L_row = rng.random(width) + 0.01
    counts = rng.integers(1, 5, width).astype(np.float64)
    prob = np.full(width, 7.0)  # stale values beyond n_nz must not be read
    sums = np.full((width + WEIGHT_BLOCK - 1) // WEIGHT_BLOCK, 7.0)
    mass = predict_sparse._slot_weights(L_row, counts, n_nz, prob, sums)
    want = counts[:n_nz] * L_row[:n_nz]
    np.testing.assert_array_equal(prob[:n_nz], want)
    np.testing.assert_allclose(mass, want.sum(), rtol=1e-12)
    cum = np.cumsum(want)
    for target in np.linspace(0, mass, 300, endpoint=False)[1:]:
        j = int(np.searchsorted(cum, target, side="right"))
        if np.min(np.abs(cum - target)) > 1e-9:
            assert predict_sparse._search_slots(prob, sums, n_nz, target) == j
    assert predict_sparse._search_slots(prob, sums, n_nz, mass) == n_nz - 1
    assert predict_sparse._search_slots(prob, sums, n_nz, 1.5 * mass) == n_nz - 1


@pytest.mark.parametrize(
    "words", [[3], [0, 0, 0], [5, 1, 5, 0, 2, 1, 9, 0], [1, 2, 2, 7], [4, 3, 2, 1]])
def test_distinct_words_are_the_sorted_unique_words_and_each_tokens_index(words):
    # Guards _distinct_words (mutation run of predict_sparse.py): U = the number of distinct
    # words (the local copy's rows, and with min(K, N_d) the size that picks the kernel), the
    # words sorted once each, every token pointing at its own word's row; word 0 present
    # or not, every word repeated or none
    words = np.asarray(words, np.int32)
    local = np.full(len(words), -9, np.int32)
    distinct = np.full(len(words), -9, np.int32)
    n = predict_sparse._distinct_words(words, local, distinct)
    want_distinct, want_local = np.unique(words, return_inverse=True)
    assert n == len(want_distinct)
    np.testing.assert_array_equal(distinct[:n], want_distinct)
    np.testing.assert_array_equal(local, want_local)
