"""The shard-local blocks of a DOLDA iteration (:mod:`dolda.sampler.shard`) against dense
recomputations and against the unsharded corpus; written for the mutation run of
``shard.py`` (docs/MUTATION.md).  Tiny corpora: fast without numba too.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from dolda.sampler import lda as kernels
from dolda.sampler import polya
from dolda.sampler import shard as S
from dolda.sampler.likelihood import do_log_likelihood
from dolda.sampler.truncnorm import draw_utilities

from _simulate import random_assignment

pytestmark = pytest.mark.power


def _dense_u(doc_ptr, X, ndk):
    n = np.maximum(np.diff(doc_ptr), 1).astype(np.float64)
    return np.hstack([np.asarray(X.todense()) if sp.issparse(X) else X, ndk / n[:, None]])


def _data(seed=0, n_docs=9, K=3, V=7, L=3):
    g = np.random.default_rng(seed)
    doc_ptr, tokens, z = random_assignment(g, n_docs, 9, V, K, empty=4)
    ndk = S.doc_topic_counts(doc_ptr, z, K)
    X = np.column_stack([np.ones(n_docs), g.normal(size=n_docs)])
    y = g.integers(0, L, n_docs).astype(np.int64)
    eta = g.normal(size=(L, 2 + K))
    phi_wk = g.dirichlet(np.ones(K), size=V).astype(np.float32)
    return tokens, doc_ptr, z, ndk, X, y, eta, phi_wk


def test_doc_topic_counts_and_row_products_are_the_dense_ones():
    tokens, doc_ptr, z, ndk, X, y, eta, _ = _data()
    for d in range(len(doc_ptr) - 1):
        np.testing.assert_array_equal(ndk[d], np.bincount(z[doc_ptr[d]:doc_ptr[d + 1]],
                                                          minlength=3))
    assert ndk.dtype == np.int32 and ndk.sum() == len(z)
    U = _dense_u(doc_ptr, X, ndk)
    np.testing.assert_allclose(S.row_products(U, eta), U @ eta.T, rtol=1e-13, atol=1e-13)


def test_shard_bounds_balance_tokens_and_never_leave_a_shard_empty(monkeypatch):
    g = np.random.default_rng(4)
    lengths = g.integers(1, 30, 60)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    N = int(doc_ptr[-1])
    for n_shards in [1, 2, 3, 7, 60]:
        b = S.shard_bounds(doc_ptr, n_shards)
        assert b.dtype == np.int64 and b[0] == 0 and b[-1] == 60
        assert len(b) == n_shards + 1 and np.all(np.diff(b) > 0)
        sizes = np.diff(doc_ptr[b])
        assert np.all(np.abs(sizes - N / n_shards) <= 2 * lengths.max()), sizes
    assert len(S.shard_bounds(doc_ptr, 500)) == 61  # at most one shard per document
    np.testing.assert_array_equal(S.shard_bounds(doc_ptr, None), [0, 60])
    monkeypatch.setattr(S, "DEFAULT_SHARD_TOKENS", 100)
    assert len(S.shard_bounds(doc_ptr, None)) - 1 == -(-N // 100)
    # a huge last document is a shard of its own, the others share the other shard
    np.testing.assert_array_equal(S.shard_bounds(np.array([0, 1, 2, 3, 100], np.int64), 2),
                                  [0, 3, 4])
    # every token in one document: the token targets collapse, equal document counts instead
    b = S.shard_bounds(np.array([0, 0, 0, 100, 100], np.int64), 4)
    np.testing.assert_array_equal(b, [0, 1, 2, 3, 4])


def test_make_shards_cuts_every_array_at_the_bounds():
    tokens, doc_ptr, z, ndk, X, y, eta, _ = _data(1)
    bounds = np.array([0, 4, 5, 9])
    shards = S.make_shards(tokens, doc_ptr, X, y, bounds, 7)
    for sh, lo, hi in zip(shards, bounds[:-1], bounds[1:]):
        t0, t1 = doc_ptr[lo], doc_ptr[hi]
        np.testing.assert_array_equal(sh.tokens, tokens[t0:t1])
        np.testing.assert_array_equal(sh.doc_ptr, doc_ptr[lo:hi + 1] - doc_ptr[lo])
        np.testing.assert_array_equal(sh.X, X[lo:hi])
        np.testing.assert_array_equal(sh.y, y[lo:hi])
        assert (sh.doc_offset, sh.token_offset, sh.n_docs) == (lo, t0, hi - lo)
        assert sh.docs == slice(lo, hi) and sh.token_range == slice(t0, t1)
        wp, order = kernels.word_index(tokens[t0:t1], 7)
        np.testing.assert_array_equal(sh.word_ptr, wp)
        np.testing.assert_array_equal(sh.order, order)


@pytest.mark.parametrize("sparse_x", [False, True])
def test_utility_step_draws_the_documented_rows_and_their_statistics(sparse_x):
    tokens, doc_ptr, z, ndk, X, y, eta, _ = _data(2)
    Xs = sp.csr_matrix(X) if sparse_x else X
    shards = S.make_shards(tokens, doc_ptr, Xs, y, np.array([0, 3, 9]), 7)
    U = _dense_u(doc_ptr, X, ndk)
    mu = U @ eta.T
    a_all = draw_utilities(np.ascontiguousarray(mu), y, 8, 6, np.empty_like(mu))
    for sh in shards:
        a, s1, s2 = S.utility_step(8, 6, sh, ndk[sh.docs], eta)
        np.testing.assert_allclose(a, a_all[sh.docs], rtol=1e-10, atol=1e-10)
        Us = U[sh.docs]
        if sparse_x:
            np.testing.assert_allclose(s1.toarray(), Us[:, 2:], rtol=1e-14)
            assert s2 is a
        else:
            np.testing.assert_allclose(s1, Us.T @ Us, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(s2, (Us.T @ a).T, rtol=1e-12, atol=1e-12)


def test_utility_step_names_non_finite_predictors():
    tokens, doc_ptr, z, ndk, X, y, eta, _ = _data(3)
    X = X.copy()
    X[2, 1] = 1e308
    eta[:, 1] = 1e308
    sh = S.make_shards(tokens, doc_ptr, X, y, np.array([0, 9]), 7)[0]
    with pytest.raises(ValueError, match="non-finite at iteration 4"):
        S.utility_step(1, 4, sh, ndk, eta)


def _globals(eta, phi_wk, n_x, kind):
    eta_t = eta[:, n_x:]
    if kind == "exact":
        tables = None
    elif kind in ("alias", "cycle"):
        tables = kernels.build_alias_tables(phi_wk)
    else:
        tables = polya.from_dense(phi_wk)
    return S.TopicGlobals(eta, phi_wk, eta_t.T @ eta_t, tables)


@pytest.mark.parametrize("kind", ["exact", "alias", "polya", "cycle"])
@pytest.mark.parametrize("sparse_x", [False, True])
def test_topic_step_of_shards_is_the_corpus_step_with_its_counts_and_likelihoods(kind, sparse_x):
    tokens, doc_ptr, z, ndk, X, y, eta, phi_wk = _data(4)
    Xs = sp.csr_matrix(X) if sparse_x else X
    a = np.random.default_rng(0).normal(size=(9, 3))
    glob = _globals(eta, phi_wk, 2, kind)
    z_sampler = {"exact": "exact", "cycle": "cycle"}.get(kind, "mh")
    whole = S.make_shards(tokens, doc_ptr, Xs, y, np.array([0, 9]), 7)[0]
    zw, nw = z.copy(), ndk.copy()
    st = S.topic_step(3, 5, whole, zw, nw, a, glob, 0.4, z_sampler)
    assert not np.array_equal(zw, z)
    np.testing.assert_array_equal(nw, S.doc_topic_counts(doc_ptr, zw, 3))
    for x, w in zip(st.nkw, kernels.sparse_topic_word_counts(whole.word_ptr, whole.order, zw, 3)):
        np.testing.assert_array_equal(x, w)
    U = _dense_u(doc_ptr, X, nw)
    assert st.loglik_do == pytest.approx(do_log_likelihood(U @ eta.T, y), rel=1e-10)
    assert st.loglik_doc == pytest.approx(kernels.lda_doc_log_likelihood(nw, 0.4), rel=1e-12)
    zs, ns = z.copy(), ndk.copy()
    for sh in S.make_shards(tokens, doc_ptr, Xs, y, np.array([0, 2, 6, 9]), 7):
        part = S.topic_step(3, 5, sh, zs[sh.token_range], ns[sh.docs], a[sh.docs], glob, 0.4,
                            z_sampler, word_major=True, with_loglik=False)
        assert np.isnan(part.loglik_do) and np.isnan(part.loglik_doc)
        want = polya.word_counts(sh.word_ptr, sh.order, zs[sh.token_range], 3)
        for x, w in zip(part.nkw, want):
            np.testing.assert_array_equal(x, w)
    np.testing.assert_array_equal(zs, zw)
    np.testing.assert_array_equal(ns, nw)


@pytest.mark.parametrize("kind", ["exact", "alias", "cycle"])
@pytest.mark.parametrize("sparse_x", [False, True])
def test_topic_step_sees_the_utilities_net_of_the_covariates(kind, sparse_x):
    """The z-step depends on ``a - X eta_x^T`` only: moving an amount from the covariate
    coefficients into the utilities leaves the sweep unchanged, and a different ``a`` with the
    same covariates does not."""
    tokens, doc_ptr, z, ndk, X, y, eta, phi_wk = _data(5)
    eta = eta * 2.0
    a = np.random.default_rng(1).normal(size=(9, 3)) * 3.0
    z_sampler = {"exact": "exact", "cycle": "cycle"}.get(kind, "mh")
    runs = []
    for eta_x, a_used in [(eta[:, :2], a), (np.zeros((3, 2)), a - X @ eta[:, :2].T),
                          (eta[:, :2], a - X @ eta[:, :2].T)]:
        e = np.hstack([eta_x, eta[:, 2:]])
        Xs = sp.csr_matrix(X) if sparse_x else X
        sh = S.make_shards(tokens, doc_ptr, Xs, y, np.array([0, 9]), 7)[0]
        zz, nn = z.copy(), ndk.copy()
        S.topic_step(3, 2, sh, zz, nn, a_used, _globals(e, phi_wk, 2, kind), 0.4, z_sampler,
                     with_loglik=False)
        runs.append(zz)
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(runs[0], runs[2])


def _chain_problem(sparse_x, seed=11, n_docs=30, K=3, V=9, L=3):
    from dolda.sampler import gibbs_iteration as chain
    from dolda.sampler import probit_blocks as probit_blocks

    g = np.random.default_rng(seed)
    lengths = g.integers(0, 10, n_docs)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = g.integers(0, V, doc_ptr[-1]).astype(np.int32)
    words = (g.random((n_docs, 6)) < 0.3) * g.integers(1, 4, (n_docs, 6))
    X = np.column_stack([np.ones(n_docs), g.normal(size=n_docs), np.log1p(words)])
    n_words = 6 if sparse_x else 0
    X = sp.csr_matrix(X) if sparse_x else X
    y = g.integers(0, L, n_docs).astype(np.int64)
    data = chain.TopicData(tokens, doc_ptr, V, X, y, L)
    shrunk = np.array([False] + [True] * (X.shape[1] - 1 + K))
    prior = probit_blocks.ProbitPrior(True, shrunk, 4.0)
    cfg = chain.DOLDAConfig(K, 0.5, 0.2, prior, "mh", 1, eta_sampler="gibbs" if sparse_x
                            else "cholesky", n_word_columns=n_words)
    state = chain.init_state(seed, data, cfg)
    eta = g.normal(size=(L, X.shape[1] + K))
    return chain, data, cfg, state._replace(probit=state.probit._replace(eta=eta))


@pytest.mark.parametrize("sparse_x", [False, True])
def test_the_remembered_mu_leaves_the_chain_the_same_to_the_last_bit(sparse_x, monkeypatch):
    """utility_step takes topic_step's mu instead of forming it again; a chain that always
    forms it must be the same bit for bit, and the memo must have been used."""
    chain, data, cfg, state = _chain_problem(sparse_x)
    runs = []
    for memo in (True, False):
        S._MU_MEMO.clear()
        hits = []
        recall = S._recall_mu

        def counted(*args, _recall=recall, _memo=memo):
            mu = _recall(*args) if _memo else None
            hits.append(mu is not None)
            return mu

        monkeypatch.setattr(S, "_recall_mu", counted)
        s = state._replace(z=state.z.copy(), ndk=state.ndk.copy(), phi=state.phi.copy())
        shards = chain.whole_corpus_shards(data)  # once, as the backends do
        infos = []
        for it in range(4):
            s, info = chain.dolda_step(5, it, s, data, cfg, shards)
            infos.append(info)
        runs.append((s, infos, hits))
    (s1, i1, h1), (s0, i0, h0) = runs
    assert h1 == [False, True, True, True] and not any(h0)
    np.testing.assert_array_equal(s1.z, s0.z)
    np.testing.assert_array_equal(s1.probit.eta, s0.probit.eta)
    np.testing.assert_array_equal(s1.probit.a, s0.probit.a)
    np.testing.assert_array_equal(s1.phi, s0.phi)
    assert [i.loglik_do for i in i1] == [i.loglik_do for i in i0]


def test_the_remembered_mu_is_refused_for_another_eta_zbar_or_x_and_used_once():
    tokens, doc_ptr, z, ndk, X, y, eta, _ = _data(3)
    shard = S.make_shards(tokens, doc_ptr, X, y, [0, len(doc_ptr) - 1], 7)[0]
    U = S.topic_regressors(shard, ndk)
    zb = (U.rptr, U.ridx, U.rval)
    mu = S.sparse_row_products(U, eta)

    def recall(shard_, eta_, zb_):
        S._MU_MEMO.clear()
        S._remember_mu(shard, eta, zb, mu)
        return S._recall_mu(shard_, eta_, zb_)

    assert recall(shard, eta.copy(), tuple(a.copy() for a in zb)) is mu
    eta2 = eta.copy()
    eta2[1, 2] = np.nextafter(eta2[1, 2], np.inf)
    assert recall(shard, eta2, zb) is None
    assert recall(shard, eta[:, :-1], zb) is None
    rval = zb[2].copy()
    rval[0] = np.nextafter(rval[0], 0.0)
    assert recall(shard, eta, (zb[0], zb[1], rval)) is None
    assert recall(shard, eta, (zb[0], zb[1], zb[2][:-1])) is None
    assert recall(shard._replace(X=shard.X.copy()), eta, zb) is None
    S._MU_MEMO.clear()
    S._remember_mu(shard, eta, zb, mu)
    assert S._recall_mu(shard, eta, zb) is mu and S._recall_mu(shard, eta, zb) is None


def test_a_chain_that_closes_leaves_nothing_remembered():
    from dolda.backends.local import LocalChain

    chain, data, cfg, state = _chain_problem(True)
    S._MU_MEMO.clear()
    runner = LocalChain(5, state, data, cfg)
    runner.step(0)
    assert len(S._MU_MEMO) == len(runner.shards) > 0
    runner.close()
    assert not S._MU_MEMO
