"""The cached supervised z conditional equals a brute-force recomputation of the paper's formula."""

import numpy as np
import pytest

from dolda.sampler.supervised import CACHE_MAX_SHIFT, sweep_supervised


def tiny_problem(seed=0, n_docs=6, n_topics=4, n_classes=3, n_words=9, n_cov=2):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 9, n_docs)
    lengths[0] = 0  # an empty document is skipped
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = rng.integers(0, n_words, doc_ptr[-1]).astype(np.int32)
    z = rng.integers(0, n_topics, doc_ptr[-1]).astype(np.int32)
    ndk = np.zeros((n_docs, n_topics), np.int32)
    for d in range(n_docs):
        np.add.at(ndk[d], z[doc_ptr[d]:doc_ptr[d + 1]], 1)
    phi = rng.dirichlet(np.ones(n_words) * 0.5, n_topics)  # (K, V)
    X = np.column_stack([np.ones(n_docs), rng.normal(size=(n_docs, n_cov - 1))])
    eta_x = rng.normal(size=(n_classes, n_cov))
    eta_t = rng.normal(scale=3.0, size=(n_classes, n_topics))
    a = rng.normal(scale=2.0, size=(n_docs, n_classes))
    return dict(tokens=tokens, doc_ptr=doc_ptr, z=z, ndk=ndk, phi=phi, X=X, eta_x=eta_x,
                eta_t=eta_t, a=a, alpha=0.3)


def brute_force_conditional(p, d, i, z, alpha=None):
    """Paper's formula, recomputed from scratch: for every k set z_i = k, rebuild
    zbar_d and mu_d, and evaluate phi_{k,w} (n_dk^{-i} + alpha_k) prod_l N(a_dl; mu_dl, 1).
    ``alpha``: a scalar or one value per topic (K,); None: ``p["alpha"]``."""
    alpha = np.broadcast_to(p["alpha"] if alpha is None else alpha, p["phi"].shape[:1])
    start, stop = p["doc_ptr"][d], p["doc_ptr"][d + 1]
    n_topics = p["phi"].shape[0]
    logp = np.empty(n_topics)
    for k in range(n_topics):
        zz = z[start:stop].copy()
        zz[i - start] = k
        counts = np.bincount(zz, minlength=n_topics)
        counts_minus = counts.copy()
        counts_minus[k] -= 1
        mu = p["X"][d] @ p["eta_x"].T + p["eta_t"] @ (counts / (stop - start))
        loglik = -0.5 * np.sum((p["a"][d] - mu) ** 2)
        logp[k] = np.log(p["phi"][k, p["tokens"][i]]) + np.log(counts_minus[k] + alpha[k]) + loglik
    w = np.exp(logp - logp.max())
    return w / w.sum()


@pytest.mark.parametrize("max_shift", [0.0, np.inf, CACHE_MAX_SHIFT],
                         ids=["log-space", "products", "auto"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cached_conditional_equals_brute_force_for_every_token_and_topic(seed, max_shift):
    """Both document paths (log space; exp factors kept as products) give the paper's
    conditional for every token and topic, across a sequence of sweeps."""
    p = tiny_problem(seed)
    z0 = p["z"].copy()
    z = p["z"].copy()
    ndk = p["ndk"].copy()
    base = p["a"] - p["X"] @ p["eta_x"].T
    record = np.zeros((len(z), p["phi"].shape[0]))
    for iteration in range(3):  # a sequence of sweeps: the cache must stay right
        before = z.copy()
        sweep_supervised(p["tokens"], p["doc_ptr"], z, ndk, np.ascontiguousarray(p["phi"].T),
                         p["alpha"], p["eta_t"], base, p["eta_t"].T @ p["eta_t"], 11, iteration,
                         record, 0, max_shift)
        for d in range(len(p["doc_ptr"]) - 1):
            start, stop = p["doc_ptr"][d], p["doc_ptr"][d + 1]
            for i in range(start, stop):
                # state seen by token i: earlier tokens already updated, later ones not yet
                state = np.concatenate([z[:i], before[i:]])
                np.testing.assert_allclose(record[i], brute_force_conditional(p, d, i, state),
                                           rtol=1e-9, atol=1e-12)
    assert not np.array_equal(z, z0)
    for d in range(len(p["doc_ptr"]) - 1):
        counts = np.bincount(z[p["doc_ptr"][d]:p["doc_ptr"][d + 1]], minlength=ndk.shape[1])
        np.testing.assert_array_equal(ndk[d], counts)


def _exact_joint(p, d):
    """p(z_d | phi, eta, a) by enumerating every assignment of document d's tokens."""
    import itertools

    from scipy.special import gammaln

    start, stop = p["doc_ptr"][d], p["doc_ptr"][d + 1]
    K = p["phi"].shape[0]
    words = p["tokens"][start:stop]
    states = list(itertools.product(range(K), repeat=stop - start))
    logp = np.empty(len(states))
    for s, zz in enumerate(states):
        counts = np.bincount(zz, minlength=K)
        mu = p["X"][d] @ p["eta_x"].T + p["eta_t"] @ (counts / (stop - start))
        logp[s] = (np.log(p["phi"][list(zz), words]).sum() + gammaln(counts + p["alpha"]).sum()
                   - 0.5 * np.sum((p["a"][d] - mu) ** 2))
    w = np.exp(logp - logp.max())
    return states, w / w.sum()


def _three_token_problem():
    """Document 0 has 3 tokens (27 assignments to enumerate), document 1 two; K = 3, L = 2.
    Returns the problem, its z and n_dk."""
    p = tiny_problem(seed=4, n_docs=2, n_topics=3, n_classes=2, n_words=5)
    p["doc_ptr"] = np.array([0, 3, 5], np.int64)
    p["tokens"] = np.array([0, 1, 1, 2, 4], np.int32)
    p["eta_t"] = np.array([[2.0, -1.0, 0.5], [-1.5, 1.0, 1.0]])
    z = np.array([0, 0, 0, 1, 1], np.int32)
    ndk = np.array([[3, 0, 0], [0, 2, 0]], np.int32)
    return p, z, ndk


@pytest.mark.parametrize("kernel", ["exact", "mh", "mh-partial-tables"])
def test_sweeps_sample_the_exact_joint_posterior_of_z(kernel):
    """Both z kernels leave p(z | Phi, eta, a) invariant: over 40,000 sweeps the
    visited assignments of a 3-token document match the enumerated posterior
    (total variation < 0.02; Monte Carlo error ~ 0.005)."""
    from dolda.sampler.lda import build_alias_tables
    from dolda.sampler.supervised import sweep_supervised_mh

    p, z, ndk = _three_token_problem()
    base = p["a"] - p["X"] @ p["eta_x"].T
    phi_wk = np.ascontiguousarray(p["phi"].T, dtype=np.float32)  # the chain's Phi layout
    p["phi"] = phi_wk.T.astype(np.float64)  # the enumeration sees the float32 values
    K = phi_wk.shape[1]
    if kernel == "mh-partial-tables":  # words 1 and 2 have no table: linear-scan proposals
        tables = build_alias_tables(phi_wk, np.array([0, -1, -1, 1, 2], np.int32))
    else:
        tables = build_alias_tables(phi_wk)  # every word has a table
    prob, alias, mass, row = tables.prob, tables.alias, tables.mass, tables.row
    gram = p["eta_t"].T @ p["eta_t"]
    states, exact = _exact_joint(p, 0)
    index = {s: i for i, s in enumerate(states)}
    counts = np.zeros(len(states))
    n_sweeps = 40_000
    for it in range(n_sweeps):
        if kernel == "exact":
            sweep_supervised(p["tokens"], p["doc_ptr"], z, ndk, phi_wk, p["alpha"], p["eta_t"],
                             base, gram, 3, it, np.empty((0, K)))
        else:
            sweep_supervised_mh(p["tokens"], p["doc_ptr"], z, ndk, phi_wk, prob, alias, mass,
                                row, p["alpha"], p["eta_t"], base, 3, it)
        counts[index[tuple(z[:3])]] += 1
    tv = 0.5 * np.abs(counts / n_sweeps - exact).sum()
    assert tv < 0.02, f"total variation {tv:.4f}"


def sweep_with_scaled_coefficients(scale, seed=5):
    """One recorded supervised sweep of ``tiny_problem(seed)`` with ``eta_t * scale``;
    asserts every recorded conditional is finite and equals the brute-force one.
    Returns ``(problem, gram, z)``."""
    p = tiny_problem(seed=seed)
    p["eta_t"] = p["eta_t"] * scale
    gram = p["eta_t"].T @ p["eta_t"]
    z, ndk = p["z"].copy(), p["ndk"].copy()
    base = p["a"] - p["X"] @ p["eta_x"].T
    record = np.zeros((len(z), p["phi"].shape[0]))
    before = z.copy()
    sweep_supervised(p["tokens"], p["doc_ptr"], z, ndk, np.ascontiguousarray(p["phi"].T),
                     p["alpha"], p["eta_t"], base, gram, 11, 0, record)
    assert np.isfinite(record).all()
    for d in range(len(p["doc_ptr"]) - 1):
        for i in range(p["doc_ptr"][d], p["doc_ptr"][d + 1]):
            state = np.concatenate([z[:i], before[i:]])
            np.testing.assert_allclose(record[i], brute_force_conditional(p, d, i, state),
                                       rtol=1e-9, atol=1e-12)
    return p, gram, z


def test_large_coefficients_fall_back_to_log_space_and_stay_exact():
    """With |eta| ~ 30 the products would overflow in short documents; those documents
    take the log-space path (bound 3 max S_kk / N_d > CACHE_MAX_SHIFT) and every
    recorded conditional still equals the brute-force one."""
    p, gram, _ = sweep_with_scaled_coefficients(10.0)
    lengths = np.diff(p["doc_ptr"])
    assert np.any(3 * gram.diagonal().max() / lengths[lengths > 0] > CACHE_MAX_SHIFT)


def test_doubly_sparse_mh_kernel_samples_the_exact_joint_posterior_of_z():
    """The MH kernel on a sparse (Pólya-urn style) Phi leaves p(z | Phi, eta, a) invariant,
    zeros included: topic 2 cannot emit word 1, the chain starts in a zero-probability
    state (token of word 1 in topic 2) and must leave it.  40,000 sweeps, TV < 0.02."""
    from dolda.sampler.polya import from_dense
    from dolda.sampler.supervised import sweep_supervised_mh_sparse

    p = tiny_problem(seed=4, n_docs=2, n_topics=3, n_classes=2, n_words=5)
    p["doc_ptr"] = np.array([0, 3, 5], np.int64)
    p["tokens"] = np.array([0, 1, 1, 2, 4], np.int32)
    p["eta_t"] = np.array([[2.0, -1.0, 0.5], [-1.5, 1.0, 1.0]])
    phi = p["phi"].copy()
    phi[2, 1] = 0.0
    phi[0, 0] = 0.0
    phi /= phi.sum(axis=1, keepdims=True)
    phi_wk = np.ascontiguousarray(phi.T, dtype=np.float32)
    p["phi"] = phi_wk.T.astype(np.float64)  # the enumeration sees the float32 values
    z = np.array([2, 2, 0, 1, 1], np.int32)
    ndk = np.array([[1, 0, 2], [0, 2, 0]], np.int32)
    base = p["a"] - p["X"] @ p["eta_x"].T
    sp = from_dense(phi_wk)
    with np.errstate(divide="ignore"):
        states, exact = _exact_joint(p, 0)
    index = {s: i for i, s in enumerate(states)}
    counts = np.zeros(len(states))
    n_sweeps = 40_000
    for it in range(n_sweeps):
        sweep_supervised_mh_sparse(p["tokens"], p["doc_ptr"], z, ndk, phi_wk, sp.ptr, sp.topics,
                                   sp.prob, sp.alias, sp.mass, p["alpha"], p["eta_t"], base, 3,
                                   it)
        counts[index[tuple(z[:3])]] += 1
    assert counts[exact == 0].sum() <= 1  # only the starting state, left at once
    tv = 0.5 * np.abs(counts / n_sweeps - exact).sum()
    assert tv < 0.02, f"total variation {tv:.4f}"


def _cycle_tv(alpha, partial_tables, n_cycles=1, n_sweeps=40_000, seed=3, scan_rare=True,
              long_doc=False):
    """Total variation between the visited assignments of document 0 (3 tokens) over
    ``n_sweeps`` cycle-MH sweeps and the enumerated p(z_0 | Phi, eta, a) (the problem of
    :func:`test_sweeps_sample_the_exact_joint_posterior_of_z`, with ``alpha``).
    ``long_doc``: document 0 has 7 tokens and K = 2 (128 states), longer than the
    kernel's look-ahead (``AHEAD`` tokens), so its uniforms drawn early are exercised."""
    from dolda.sampler.alpha import as_alpha
    from dolda.sampler.cycle import _sweep_supervised_cycle
    from dolda.sampler.lda import build_alias_tables

    if long_doc:
        p = tiny_problem(seed=4, n_docs=2, n_topics=2, n_classes=2, n_words=5)
        p["doc_ptr"] = np.array([0, 7, 9], np.int64)
        p["tokens"] = np.array([0, 1, 1, 2, 4, 3, 0, 2, 4], np.int32)
        p["eta_t"] = np.array([[2.0, -1.0], [-1.5, 1.0]])
        z = np.array([0, 0, 0, 0, 0, 0, 0, 1, 1], np.int32)
        ndk = np.array([[7, 0], [0, 2]], np.int32)
        alpha = alpha if np.ndim(alpha) == 0 else np.asarray(alpha)[:2]
    else:
        p, z, ndk = _three_token_problem()
    p["alpha"] = alpha
    K = ndk.shape[1]
    base = p["a"] - p["X"] @ p["eta_x"].T
    phi_wk = np.ascontiguousarray(p["phi"].T, dtype=np.float32)  # the chain's Phi layout
    p["phi"] = phi_wk.T.astype(np.float64)  # the enumeration sees the float32 values
    rows = np.array([0, -1, -1, 1, 2], np.int32) if partial_tables else None
    t = build_alias_tables(phi_wk, rows, alpha=alpha)  # the word bucket alpha_k phi_{k,w}
    states, exact = _exact_joint(p, 0)
    index = {s: i for i, s in enumerate(states)}
    counts = np.zeros(len(states))
    n_0 = p["doc_ptr"][1]
    for it in range(n_sweeps):
        _sweep_supervised_cycle(p["tokens"], p["doc_ptr"], z, ndk, phi_wk, t.prob, t.alias,
                                t.mass, t.row, as_alpha(alpha, K), p["eta_t"], base, seed, it,
                                0, n_cycles, scan_rare)
        counts[index[tuple(z[:n_0])]] += 1
    return 0.5 * np.abs(counts / n_sweeps - exact).sum()


@pytest.mark.parametrize("n_cycles", [1, 3])
@pytest.mark.parametrize("tables", ["all", "partial-scan", "partial-prior"])
@pytest.mark.parametrize("alpha", [0.3, (0.1, 0.6, 1.7)], ids=["symmetric", "asymmetric"])
def test_cycle_sweep_samples_the_exact_joint_posterior_of_z(alpha, tables, n_cycles):
    """The cycle-MH kernel (word and document proposals) leaves p(z | Phi, eta, a)
    invariant, with symmetric and asymmetric alpha, with and without alias tables (words
    1 and 2 then take the linear-scan word proposal, or the prior proposal alpha_k with
    scan_rare=False): over 40,000 sweeps of the 3-token
    document the total variation to the enumerated posterior is < 0.02 (Monte Carlo
    error ~ 0.005).  Planted bugs, statistic with them (seed 3, n_cycles 1, tables all):
    see the commit message."""
    alpha = np.asarray(alpha) if isinstance(alpha, tuple) else alpha
    tv = _cycle_tv(alpha, tables != "all", n_cycles, scan_rare=tables != "partial-prior")
    assert tv < 0.02, f"total variation {tv:.4f}"


@pytest.mark.parametrize("alpha", [0.3, (0.2, 1.1)], ids=["symmetric", "asymmetric"])
def test_cycle_sweep_is_exact_on_a_document_longer_than_its_look_ahead(alpha):
    """The uniforms of a token's first step pair are drawn AHEAD tokens early: a 7-token
    document (K = 2, 128 states, partial tables, prior proposal for the rare words) over
    40,000 sweeps, TV to the enumerated posterior < 0.03 (Monte Carlo error ~ 0.01 with
    128 states).  Planted bug: the document step reusing the word step's early uniform."""
    alpha = np.asarray(alpha) if isinstance(alpha, tuple) else alpha
    tv = _cycle_tv(alpha, True, 1, scan_rare=False, long_doc=True)
    assert tv < 0.03, f"total variation {tv:.4f}"



def test_document_bucket_pick_is_the_first_cumulative_weight_above_the_target():
    """The MH kernels' document-bucket draw (:func:`_pick_nonzero`, a branch-free count of
    the cumulative weights at or below the target) returns the topic a walk that stops at
    the first cumulative weight above the target returns: zero weights (repeated
    cumulative values) are never drawn, a target exactly on a cumulative value goes to the
    next topic, and a target at or past the total (rounding) gives the last topic.
    Planted bugs caught: counting from the second weight (off by one), ``<`` for ``<=``."""
    from dolda.sampler.supervised import _document_bucket, _pick_nonzero

    def walk(cum, n, target):
        j = 0
        while j < n - 1 and cum[j] <= target:
            j += 1
        return j

    rng = np.random.default_rng(0)
    for _ in range(300):
        n_topics = int(rng.integers(1, 40))
        n_nz = int(rng.integers(1, n_topics + 1))
        nz = rng.permutation(n_topics)[:n_nz].astype(np.int32)
        ndk_row = np.zeros(n_topics, np.int32)
        ndk_row[nz] = rng.integers(1, 6, n_nz)
        phi_row = rng.random(n_topics).astype(np.float32)
        phi_row[rng.random(n_topics) < 0.3] = 0.0  # zero weights, as float32 Phi has
        cum = np.empty(n_topics)
        total = _document_bucket(ndk_row, phi_row, nz, n_nz, cum)
        targets = np.concatenate([rng.random(5) * total, cum[:n_nz], [0.0, total, 2 * total]])
        for target in targets:
            j = walk(cum, n_nz, target)
            assert _pick_nonzero(cum, nz, n_nz, target) == nz[j]
            if target < total:
                assert ndk_row[nz[j]] * phi_row[nz[j]] > 0.0  # a zero weight is never drawn
