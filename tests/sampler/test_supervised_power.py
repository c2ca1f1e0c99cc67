"""The supervised z-sweep with coefficients so large that the cached products overflow.

``sweep_supervised`` keeps ``exp(S_jk / N_d^2)`` products only when the bound
``3 max_k S_kk / N_d`` is at most ``CACHE_MAX_SHIFT``; otherwise it works in log
space.  ``test_supervised_z.py`` checks |eta| ~ 30, where the products are
still finite; here |eta| ~ 300 (``exp(S/N^2)`` is ``inf`` in a one-token
document), so a broken bound (a mutant computed ``max S_kk`` as 0: every
document cached) gives NaN.  Every recorded conditional must still be the
brute-force one.  Small and fast.

The other tests pin the cached path's edges for the mutation run of 2026-11-26
(docs/MUTATION.md): K = 1 and K = 9 (its blocks of 8 weights), utilities thousands
away from the fit (the shift by ``max_k g_k`` of both paths), alpha = 1e-100 (the
exact refresh of a topic that empties), a word no topic can emit (the ``total <= 0``
guard of both paths) and a document changing topic over 1024 times (the rescale
``F[k0] * G[k1]`` must carry no common factor).
"""

import numpy as np
import pytest

from dolda.sampler.supervised import sweep_supervised
from test_supervised_z import brute_force_conditional, sweep_with_scaled_coefficients, tiny_problem

pytestmark = pytest.mark.power


def test_huge_coefficients_take_the_log_space_path_and_stay_exact():
    p, gram, z = sweep_with_scaled_coefficients(100.0)
    assert gram.diagonal().max() > 710  # exp(S_kk) overflows: cached products would be inf
    assert z.min() >= 0 and z.max() < p["phi"].shape[0]

PATHS = dict(products=np.inf, log_space=0.0)  # max_shift forcing one document path


def recorded_sweeps(p, max_shift, n_sweeps=2, seed=11):
    """``n_sweeps`` recorded exact sweeps of problem ``p``; returns the records, the state
    each token saw (earlier tokens updated, later not yet) and the final ``z``, ``ndk``."""
    z, ndk = p["z"].copy(), p["ndk"].copy()
    base = p["a"] - p["X"] @ p["eta_x"].T
    phi_wk = np.ascontiguousarray(p["phi"].T)
    out = []
    for iteration in range(n_sweeps):
        before = z.copy()
        record = np.zeros((len(z), p["phi"].shape[0]))
        sweep_supervised(p["tokens"], p["doc_ptr"], z, ndk, phi_wk, p["alpha"], p["eta_t"],
                         base, p["eta_t"].T @ p["eta_t"], seed, iteration, record, 0, max_shift)
        for i in range(len(z)):
            out.append((i, record[i], np.concatenate([z[:i], before[i:]])))
    return out, z, ndk


def _document_of(p, i):
    return int(np.searchsorted(p["doc_ptr"], i, side="right") - 1)


@pytest.mark.parametrize("n_topics", [1, 9])
def test_cached_path_is_exact_with_one_topic_and_with_a_second_weight_block(n_topics):
    """The cached path sums its weights in blocks of WEIGHT_BLOCK = 8 topics
    (``ceil(K / 8)`` block sums): K = 1 (one short block) and K = 9 (a second block of
    one topic) are its edges; every recorded conditional is the brute-force one
    (rtol 1e-9).  The other tests have K <= 4, a single block."""
    p = tiny_problem(seed=3, n_topics=n_topics)
    out, z, ndk = recorded_sweeps(p, PATHS["products"])
    for i, rec, state in out:
        np.testing.assert_allclose(rec, brute_force_conditional(p, _document_of(p, i), i, state),
                                   rtol=1e-9, atol=1e-12)
    if n_topics > 1:
        assert not np.array_equal(z, p["z"])
        # the second block's topic weighs in: a conditional gives it more than 5%
        assert max(rec[n_topics - 1] for _, rec, _ in out) > 0.05


def residual_conditional(p, d, i, z):
    """The paper's conditional from scratch, in the form that keeps its precision when the
    residuals are large: with ``r0 = a_d - X_d eta_x - eta_t n_d^{-i} / N_d`` (token ``i``
    left out), ``-|a_d - mu_d|^2 / 2 = -|r0|^2 / 2 + eta_{.,k} . r0 / N_d
    - |eta_{.,k}|^2 / (2 N_d^2)`` for ``z_i = k``; the first term is common to every k and
    dropped (``brute_force_conditional`` sums squares of ~1e3 and loses ~1e-9)."""
    start, stop = p["doc_ptr"][d], p["doc_ptr"][d + 1]
    n_d, n_topics = stop - start, p["phi"].shape[0]
    others = np.bincount(np.delete(z[start:stop], i - start), minlength=n_topics)
    r0 = p["a"][d] - p["X"][d] @ p["eta_x"].T - p["eta_t"] @ others / n_d
    logp = (np.log(p["phi"][:, p["tokens"][i]]) + np.log(others + p["alpha"])
            + p["eta_t"].T @ r0 / n_d - 0.5 * (p["eta_t"] ** 2).sum(axis=0) / n_d**2)
    w = np.exp(logp - logp.max())
    return w / w.sum()


@pytest.mark.parametrize("path", list(PATHS))
def test_residuals_of_thousands_put_the_log_factors_beyond_exp_range_and_stay_exact(path):
    """Utilities ~4000 away from the covariates' fit, the offset's sign alternating by
    document, put every ``g_k`` of a document below -745 (``exp`` underflows to 0) or
    above 709 (it overflows), spread over >1000: each path must shift by ``max_k g_k``
    (the largest factor exactly 1).  Every recorded conditional equals the reference
    (rtol 1e-9, atol 1e-12) and is finite.  |eta| ~ 1, so every document is cacheable."""
    p = tiny_problem(seed=6)
    p["eta_t"] = p["eta_t"] / 3.0
    sign = np.where(np.arange(len(p["doc_ptr"]) - 1) % 2 == 0, 1.0, -1.0)
    p["a"] = p["a"] + 4000.0 * sign[:, None] * np.array([1.0, -0.75, 0.9])
    gram = p["eta_t"].T @ p["eta_t"]
    lengths = np.diff(p["doc_ptr"])
    assert 3 * gram.diagonal().max() / lengths[lengths > 0].min() <= 30.0  # auto: cached
    g_max, g_spread = [], []
    for d in np.flatnonzero(lengths):
        r = p["a"][d] - p["X"][d] @ p["eta_x"].T - p["eta_t"] @ p["ndk"][d] / lengths[d]
        g = p["eta_t"].T @ r / lengths[d] - 0.5 * gram.diagonal() / lengths[d] ** 2
        g_max.append(g.max())
        g_spread.append(g.max() - g.min())
    assert min(g_max) < -745 and max(g_max) > 709 and max(g_spread) > 1000
    out, _, _ = recorded_sweeps(p, PATHS[path])
    for i, rec, state in out:
        assert np.isfinite(rec).all()
        np.testing.assert_allclose(rec, residual_conditional(p, _document_of(p, i), i, state),
                                   rtol=1e-9, atol=1e-12)


def test_cached_path_keeps_a_tiny_alpha_exact_when_a_topic_empties():
    """alpha = 1e-100: when a token leaves the last token of its topic, that topic's
    factor must become alpha E exactly (the refresh), not ``(1 + alpha) E - E``, which
    cancels to 0 or to a rounding residue ~1e-16 E.  The recorded conditionals of the
    products path equal the brute-force ones entry by entry, relative tolerance only
    (rtol 1e-9, atol 0), so the ~1e-100 entries count."""
    p = tiny_problem(seed=7)
    p["alpha"] = 1e-100
    out, z, ndk = recorded_sweeps(p, PATHS["products"])
    tiny = 0
    for i, rec, state in out:
        expected = brute_force_conditional(p, _document_of(p, i), i, state)
        tiny += np.sum((expected > 0) & (expected < 1e-90))
        np.testing.assert_allclose(rec, expected, rtol=1e-9, atol=0)
    assert tiny > 20  # plenty of ~alpha entries, among them topics just emptied


@pytest.mark.parametrize("n_topics", [4, 8])
@pytest.mark.parametrize("path", list(PATHS))
def test_a_word_no_topic_can_emit_keeps_its_tokens_topics(path, n_topics):
    """A Pólya-urn Phi can give a word zero probability in every topic: its conditional
    has total 0 and the token keeps its topic (not topic 0, not the last topic, where a
    search over zero weights ends).  Word 0's tokens sit in topics 1 and 2.  K = 8 fills
    the cached path's one block of weights exactly: one block sum more and the search
    over zero weights would walk into it, past the K weights."""
    p = tiny_problem(seed=8, n_topics=n_topics)
    p["phi"][:, 0] = 0.0
    p["phi"] /= p["phi"].sum(axis=1, keepdims=True)
    w0 = np.flatnonzero(p["tokens"] == 0)
    assert len(w0) >= 2
    p["z"][w0] = 1 + np.arange(len(w0)) % 2
    for d in range(len(p["doc_ptr"]) - 1):
        p["ndk"][d] = np.bincount(p["z"][p["doc_ptr"][d]:p["doc_ptr"][d + 1]],
                                  minlength=n_topics)
    z, ndk = p["z"].copy(), p["ndk"].copy()
    base = p["a"] - p["X"] @ p["eta_x"].T
    for iteration in range(3):
        sweep_supervised(p["tokens"], p["doc_ptr"], z, ndk, np.ascontiguousarray(p["phi"].T),
                         p["alpha"], p["eta_t"], base, p["eta_t"].T @ p["eta_t"], 11, iteration,
                         np.empty((0, n_topics)), 0, PATHS[path])
    np.testing.assert_array_equal(z[w0], p["z"][w0])
    assert not np.array_equal(z, p["z"])  # the other tokens do move
    for d in range(len(p["doc_ptr"]) - 1):
        np.testing.assert_array_equal(
            ndk[d], np.bincount(z[p["doc_ptr"][d]:p["doc_ptr"][d + 1]], minlength=n_topics))


def test_a_long_document_changes_topic_over_1024_times_and_its_factors_stay_finite():
    """The cached path rescales ``E`` and ``B`` by ``F[k0] * G[k1]`` at every change of
    topic.  A common factor in that rescale (``G = 2 / F``, say) cancels from every
    conditional, but compounds: past 1024 changes in one document it overflows.  One
    document of 1500 tokens, near-uniform Phi, |eta| ~ 0.3: well over 1024 changes in
    one sweep, and every recorded conditional equals the reference (rtol 1e-9)."""
    rng = np.random.default_rng(12)
    p = tiny_problem(seed=9, n_docs=1)
    n = 1500
    p["doc_ptr"] = np.array([0, n], np.int64)
    p["tokens"] = rng.integers(0, 9, n).astype(np.int32)
    p["z"] = rng.integers(0, 4, n).astype(np.int32)
    p["ndk"] = np.bincount(p["z"], minlength=4).astype(np.int32)[None, :]
    p["phi"] = rng.dirichlet(np.full(9, 50.0), 4)
    p["eta_t"] = p["eta_t"] / 10.0
    out, z, _ = recorded_sweeps(p, PATHS["products"], n_sweeps=1)
    assert np.sum(z != p["z"]) > 1100
    for i, rec, state in out:
        assert np.isfinite(rec).all()
        np.testing.assert_allclose(rec, residual_conditional(p, 0, i, state), rtol=1e-9)


@pytest.mark.parametrize("path", list(PATHS))
def test_every_draw_is_its_documented_uniform_searched_in_its_recorded_conditional(path):
    """Each token's new topic is the first k whose cumulated conditional exceeds the
    token's uniform, the i-th draw of its document's stream
    ``stream(seed, iteration * 16 + STEP_Z, d)``: exact, token by token, for both paths
    (K = 5, three sweeps, the conditionals themselves checked by the tests above).  The
    joint-posterior test of ``test_supervised_z.py`` samples the cached path only (its
    3-token document is cacheable), so this is the log-space path's only draw test."""
    from dolda.sampler.rng import STEP_Z, stream, uniform

    p = tiny_problem(seed=2, n_docs=12, n_topics=5)
    z, ndk = p["z"].copy(), p["ndk"].copy()
    base = p["a"] - p["X"] @ p["eta_x"].T
    n_checked = n_moved = 0
    for iteration in range(3):
        before = z.copy()
        record = np.zeros((len(z), 5))
        sweep_supervised(p["tokens"], p["doc_ptr"], z, ndk, np.ascontiguousarray(p["phi"].T),
                         p["alpha"], p["eta_t"], base, p["eta_t"].T @ p["eta_t"], 11, iteration,
                         record, 0, PATHS[path])
        for d in range(len(p["doc_ptr"]) - 1):
            state = stream(11, iteration * 16 + STEP_Z, d)
            for i in range(p["doc_ptr"][d], p["doc_ptr"][d + 1]):
                # numba returns uint64 as a Python int (int64 below 2^63): keep it uint64
                u, state = uniform(np.uint64(int(state) & (2**64 - 1)))
                cum = np.cumsum(record[i])
                assert np.min(np.abs(cum[:-1] - u)) > 1e-9  # no draw on a rounding edge
                assert z[i] == np.searchsorted(cum, u, side="right"), (iteration, i)
                n_checked += 1
                n_moved += z[i] != before[i]
    assert n_checked > 100 and n_moved > 50
    assert np.all(np.isin(np.arange(5), z))  # every topic drawn, the first and last included
