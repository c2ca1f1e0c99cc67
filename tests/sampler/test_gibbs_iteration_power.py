"""The DOLDA iteration (:mod:`dolda.sampler.gibbs_iteration`) assembled from its blocks, checked
block by block on a tiny corpus: each output is recomputed from the state the step returns and the
documented streams.  Written for the mutation run of ``gibbs_iteration.py`` (docs/MUTATION.md); fast
without numba too.
"""

import numpy as np
import pytest

from dolda.sampler import gibbs_iteration as chain, polya
from dolda.sampler import lda as kernels
from dolda.sampler import probit_blocks as probit_blocks
from dolda.sampler.likelihood import do_log_likelihood
from dolda.sampler.truncnorm import draw_utilities

pytestmark = pytest.mark.power

K, V, L = 3, 8, 3


def _setup(seed=0, n_docs=24, horseshoe=True, **config):
    g = np.random.default_rng(seed)
    lengths = g.integers(2, 9, n_docs)
    lengths[5] = 0
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = g.integers(0, V, doc_ptr[-1]).astype(np.int32)
    X = np.column_stack([np.ones(n_docs), g.normal(size=n_docs)])
    y = g.integers(0, L, n_docs).astype(np.int64)
    data = chain.TopicData(tokens, doc_ptr, V, X, y, L)
    shrunk = np.array([False] + [True] * (1 + K))
    prior = probit_blocks.ProbitPrior(horseshoe, shrunk, 4.0)
    cfg = chain.DOLDAConfig(K, 0.5, 0.2, prior, "exact", 1)._replace(**config)
    state = chain.init_state(seed, data, cfg)
    eta = g.normal(size=(L, 2 + K))
    return data, cfg, state._replace(probit=state.probit._replace(eta=eta))


def _copy(state):
    return state._replace(z=state.z.copy(), ndk=state.ndk.copy(), phi=state.phi.copy())


def _counts(data, z):
    word_ptr, order = kernels.word_index(data.tokens, V)
    return kernels.sparse_topic_word_counts(word_ptr, order, z, K)


def _dense_nkw(data, z):
    n = np.zeros((K, V), np.int64)
    np.add.at(n, (z, data.tokens), 1)
    return n


def test_small_helpers():
    ndk = np.array([[2, 0, 1], [0, 0, 0], [1, 1, 2], [0, 1, 0]])
    lengths = np.array([3, 0, 4, 1])
    np.testing.assert_array_equal(chain.topic_proportions(ndk, lengths),
                                  [[2 / 3, 0, 1 / 3], [0, 0, 0], [0.25, 0.25, 0.5], [0, 1, 0]])
    data = chain.TopicData(np.zeros(8, np.int32), np.array([0, 3, 3, 7, 8]), 1,
                           np.array([[1.0, 5.0]] * 4), np.zeros(4, np.int64), 2)
    np.testing.assert_array_equal(data.doc_lengths, lengths)
    np.testing.assert_array_equal(chain.regressors(data, ndk)[:, :2], data.X)
    np.testing.assert_array_equal(chain.regressors(data, ndk)[:, 2:],
                                  chain.topic_proportions(ndk, lengths))
    parts = [np.array([1e16]), np.array([1.0]), np.array([-1e16]), np.array([1.0])]
    assert chain.sum_in_order(parts)[0] == ((1e16 + 1.0) - 1e16) + 1.0
    assert chain.sum_in_order([2.5]) == 2.5
    cfg = chain.DOLDAConfig(K, 0.5, 0.2, None, "exact", 1)
    assert [chain.wants_loglik(t, cfg._replace(loglik_every=3)) for t in range(6)] == \
        [False, False, True, False, False, True]
    assert all(chain.wants_loglik(t, cfg._replace(loglik_every=0)) for t in range(3))
    assert all(chain.wants_loglik(t, cfg) for t in range(3))
    toks = np.array([0] * 200 + [1] * 3, np.int32)
    d2 = data._replace(tokens=toks, n_words=3)
    np.testing.assert_array_equal(chain.alias_table_rows(d2, cfg._replace(z_sampler="mh")),
                                  kernels.alias_rows(np.array([200, 3, 0])))


@pytest.mark.parametrize("horseshoe", [False, True])
def test_eta_step_is_the_probit_gibbs_step_from_the_reduced_statistics(horseshoe):
    """The reduced-statistics eta-step draws what DOProbit's Gibbs step draws with the dense
    Cholesky sampler, given the same ``a`` (its own stream ``STEP_A``)."""
    data, cfg, state = _setup(1, horseshoe=horseshoe)
    U = chain.regressors(data, state.ndk)
    probit = state.probit._replace(tau2=np.full(L, 0.7), lam2=np.full((L, 2 + K), 1.3))
    want = probit_blocks.gibbs_step(4, 6, probit, U, U.T @ U, data.y, cfg.prior)
    mu = np.ascontiguousarray(U @ probit.eta.T)
    a = draw_utilities(mu, data.y, 4, 6, np.empty_like(mu))
    got = chain.eta_step(4, 6, probit, U.T @ U, (U.T @ a).T, cfg.prior, 1)
    assert got.a.shape == (0, L)
    for name in ["eta", "lam2", "tau2", "nu", "xi"]:
        np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-9,
                                   atol=1e-12, err_msg=name)


def test_init_state_draws_z_uniformly_and_phi_at_iteration_minus_one():
    data, cfg, state = _setup(2)
    z, ndk = kernels.init_topics(data.tokens, data.doc_ptr, K, 2)
    np.testing.assert_array_equal(state.z, z)
    np.testing.assert_array_equal(state.ndk, ndk)
    want = kernels.draw_phi_word_major(_counts(data, z), cfg.beta, 2, -1,
                                       np.empty((V, K), np.float32))
    np.testing.assert_array_equal(state.phi, want)
    assert state.probit.eta.shape == (L, 2 + K) and state.phi_sparse is None
    polya_cfg = cfg._replace(phi_sampler="polya")
    ps = chain.init_state(2, data, polya_cfg)
    word_ptr, order = kernels.word_index(data.tokens, V)
    sparse = polya.polya_phi(polya.word_counts(word_ptr, order, z, K), K, cfg.beta, 2, -1)
    np.testing.assert_array_equal(ps.phi, polya.dense(sparse, K))
    for a, b in zip(ps.phi_sparse, sparse):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("z_sampler", ["exact", "mh", "cycle"])
def test_dolda_step_outputs_are_their_blocks_of_the_new_state(z_sampler):
    data, cfg, state = _setup(3, z_sampler=z_sampler)
    old = _copy(state)
    new, info = chain.dolda_step(7, 4, _copy(state), data, cfg)
    assert not np.array_equal(new.z, old.z)
    for d in range(len(data.doc_ptr) - 1):
        np.testing.assert_array_equal(
            new.ndk[d], np.bincount(new.z[data.doc_ptr[d]:data.doc_ptr[d + 1]], minlength=K))
    # a is the a-step of the previous z and eta
    U_old = chain.regressors(data, old.ndk)
    mu = np.ascontiguousarray(U_old @ old.probit.eta.T)
    np.testing.assert_allclose(new.probit.a, draw_utilities(mu, data.y, 7, 4, np.empty_like(mu)),
                               rtol=1e-10, atol=1e-10)
    # eta is the reduced-statistics step from that a
    U = U_old
    want = chain.eta_step(7, 4, old.probit, U.T @ U, (U.T @ new.probit.a).T, cfg.prior, 1)
    np.testing.assert_allclose(new.probit.eta, want.eta, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(new.probit.tau2, want.tau2, rtol=1e-9)
    # Phi from the new counts at this iteration's stream
    counts = _counts(data, new.z)
    for a, b in zip(new.counts, counts):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(
        new.phi, kernels.draw_phi_word_major(counts, cfg.beta, 7, 4, np.empty((V, K), np.float32)))
    # the log-likelihoods of the new state
    U_new = chain.regressors(data, new.ndk)
    assert info.loglik_do == pytest.approx(do_log_likelihood(U_new @ new.probit.eta.T, data.y),
                                           rel=1e-10)
    assert info.loglik_lda == pytest.approx(
        kernels.lda_log_likelihood(new.ndk, _dense_nkw(data, new.z), cfg.alpha, cfg.beta),
        rel=1e-10)


@pytest.mark.parametrize("z_sampler", ["exact", "mh", "cycle"])
def test_dolda_step_is_the_same_for_any_sharding(z_sampler):
    data, cfg, state = _setup(4, z_sampler=z_sampler)
    runs = []
    for n_shards in [None, 1, 3]:
        s = _copy(state)
        shards = None if n_shards is None else chain.whole_corpus_shards(data, n_shards)
        for it in range(2):
            s, info = chain.dolda_step(2, it, s, data, cfg, shards)
        runs.append((s, info))
    for s, info in runs[1:]:
        np.testing.assert_array_equal(s.z, runs[0][0].z)
        np.testing.assert_allclose(s.probit.eta, runs[0][0].probit.eta, rtol=1e-9, atol=1e-12)
        assert info.loglik_lda == pytest.approx(runs[0][1].loglik_lda, rel=1e-12)
        assert info.loglik_do == pytest.approx(runs[0][1].loglik_do, rel=1e-10)
    assert len(chain.whole_corpus_shards(data, 3)) == 3


@pytest.mark.parametrize("phi_sampler", ["exact", "polya"])
def test_log_likelihoods_only_on_the_wanted_iterations(phi_sampler):
    data, cfg, state = _setup(5, loglik_every=2, phi_sampler=phi_sampler)
    s = chain.init_state(5, data, cfg)._replace(probit=state.probit)
    s, info0 = chain.dolda_step(1, 0, s, data, cfg)
    assert np.isnan(info0.loglik_do) and np.isnan(info0.loglik_lda)
    s, info1 = chain.dolda_step(1, 1, s, data, cfg)
    assert np.isfinite(info1.loglik_do) and np.isfinite(info1.loglik_lda)


@pytest.mark.parametrize("z_sampler", ["exact", "mh"])
def test_polya_step_draws_phi_from_the_new_word_counts(z_sampler):
    data, cfg, state = _setup(6, phi_sampler="polya", z_sampler=z_sampler)
    s0 = chain.init_state(6, data, cfg)._replace(probit=state.probit)
    new, info = chain.dolda_step(3, 2, _copy(s0), data, cfg)
    word_ptr, order = kernels.word_index(data.tokens, V)
    wc = polya.word_counts(word_ptr, order, new.z, K)
    for a, b in zip(new.counts, wc):
        np.testing.assert_array_equal(a, b)
    sparse = polya.polya_phi(wc, K, cfg.beta, 3, 2)
    np.testing.assert_array_equal(new.phi, polya.dense(sparse, K))
    for a, b in zip(new.phi_sparse, sparse):
        np.testing.assert_array_equal(a, b)
    assert info.loglik_lda == pytest.approx(
        kernels.lda_log_likelihood(new.ndk, _dense_nkw(data, new.z), cfg.alpha, cfg.beta),
        rel=1e-10)
    U_new = chain.regressors(data, new.ndk)
    assert info.loglik_do == pytest.approx(do_log_likelihood(U_new @ new.probit.eta.T, data.y),
                                           rel=1e-10)
    # a resumed chain (no sparse Phi in the state) continues identically
    resumed, _ = chain.dolda_step(3, 2, _copy(s0)._replace(phi_sparse=None), data, cfg)
    np.testing.assert_array_equal(resumed.z, new.z)
    np.testing.assert_array_equal(resumed.phi, new.phi)


def test_topic_globals_send_the_topic_gram_and_the_right_tables():
    g = np.random.default_rng(7)
    eta = g.normal(size=(L, 2 + K))
    phi = g.dirichlet(np.ones(K), size=V).astype(np.float32)
    glob = chain.topic_globals(eta, phi, 2, "exact")
    np.testing.assert_allclose(glob.gram_topics, eta[:, 2:].T @ eta[:, 2:], rtol=1e-14)
    assert glob.tables is None and glob.phi_wk is phi and glob.eta is eta
    rows = kernels.alias_rows(np.array([500, 0, 3, 200, 1, 1, 1, 900]))
    for z_sampler in ("mh", "cycle"):
        mh = chain.topic_globals(eta, phi, 2, z_sampler, rows)
        for a, b in zip(mh.tables, kernels.build_alias_tables(phi, rows)):
            np.testing.assert_array_equal(a, b)
    sparse = polya.from_dense(phi)
    assert chain.topic_globals(eta, phi, 2, "mh", None, sparse).tables is sparse
    assert chain.topic_globals(eta, phi, 2, "exact", None, sparse).tables is None
    with pytest.raises(ValueError, match="needs the exact Phi"):
        chain.topic_globals(eta, phi, 2, "cycle", None, sparse)
