"""DOLDA's eta-step with sparse covariates (:mod:`dolda.sampler.sparse_eta`).

* The sparse shard products and the stacked design ``U = [X, zbar]`` equal the
  dense path's (to rounding).
* Chains: with the same sampler (Cholesky), a chain on sparse ``X`` and one on
  dense ``X`` agree to rounding over the first iterations (same topics, eta to
  1e-8); ``DOLDA(eta_sampler="cg")`` gives the same chain for dense and sparse input.
* Geweke (2004) joint-distribution test of the whole sparse eta block
  (:func:`dolda.sampler.sparse_eta.eta_step`: eta by CG or BCM, then the
  Horseshoe scales, with its own keyed random streams) on ``U = [X, zbar]``
  assembled from two shards' ``zbar``: 8,000 independent chains as the
  "classes", binomial standard errors, |z| < 4.5 as in ``tests/_geweke.py``.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from dolda import DOLDA
from dolda.datasets import simulate
from dolda.sampler import chain as dolda_chain
from dolda.sampler import probit as gibbs
from dolda.sampler import shard as shard_blocks
from dolda.sampler import sparse_eta

from _geweke import N_CHAINS, N_STEPS, QUANTILES, TOL, VARIANCE, indicators, prior_draws


def _data(sparse: bool, seed=0, n_topics=4):
    sim = simulate(n_docs=90, n_topics=n_topics, n_classes=3, vocab_size=80, doc_length=25,
                   random_state=seed)
    from dolda.corpus import Corpus

    corpus = Corpus(sim.texts, rare_share=0)
    rng = np.random.default_rng(seed)
    level = rng.integers(0, 6, corpus.n_docs)
    X = np.column_stack([np.ones(corpus.n_docs), rng.normal(size=corpus.n_docs),
                         np.eye(6)[level]])
    y = np.unique(sim.y, return_inverse=True)[1].astype(np.int64)
    data = dolda_chain.TopicData(corpus.tokens, corpus.doc_ptr, corpus.n_words,
                                 sp.csr_matrix(X) if sparse else X, y, 3)
    return data


def test_sparse_shard_products_equal_the_dense_ones():
    dense, sparse = _data(False), _data(True)
    rng = np.random.default_rng(1)
    ndk = rng.integers(0, 5, (len(dense.y), 4)).astype(np.int32)
    eta = rng.normal(size=(3, dense.X.shape[1] + 4))
    U = dolda_chain.regressors(dense, ndk)
    bounds = shard_blocks.shard_bounds(dense.doc_ptr, 3)
    shards = dolda_chain.whole_corpus_shards(sparse, 3)
    assert len(shards) == 3 and sp.issparse(shards[0].X)
    parts = [shard_blocks.utility_step(7, 2, sh, ndk[sh.docs], eta) for sh in shards]
    dparts = [shard_blocks.utility_step(7, 2, sh, ndk[sh.docs], eta)
              for sh in dolda_chain.whole_corpus_shards(dense, 3)]
    np.testing.assert_allclose(sparse_eta.design(sparse.X, [p[1] for p in parts]).toarray(),
                               U, rtol=0, atol=1e-15)
    for sh, lo in zip(shards, bounds):
        mu = sparse_eta.regressor_products(sh.X, sh.doc_ptr, ndk[sh.docs], eta)
        np.testing.assert_allclose(mu, U[sh.docs] @ eta.T, rtol=0, atol=1e-12)
    # the same utilities up to rounding of mu (same streams, keyed by document)
    for (a, _, a_again), (a_dense, _, _) in zip(parts, dparts):
        assert a is a_again
        np.testing.assert_allclose(a, a_dense, rtol=0, atol=1e-9)


def test_sparse_and_dense_covariates_give_the_same_chain_to_rounding():
    prior = gibbs.ProbitPrior(True, np.r_[False, np.ones(8 + 4 - 1, bool)], 100.0)
    config = dolda_chain.DOLDAConfig(4, 0.1, 0.05, prior, "exact", 1, "cholesky")
    states = []
    for sparse in (False, True):
        data = _data(sparse)
        state = dolda_chain.init_state(3, data, config)
        shards = dolda_chain.whole_corpus_shards(data, 2)
        for it in range(4):
            state, info = dolda_chain.dolda_step(3, it, state, data, config, shards)
        states.append((state, info))
    (dense, dinfo), (sparse, sinfo) = states
    np.testing.assert_array_equal(dense.z, sparse.z)
    np.testing.assert_allclose(dense.probit.eta, sparse.probit.eta, rtol=0, atol=1e-8)
    assert abs(dinfo.loglik_do - sinfo.loglik_do) < 1e-6


def test_dolda_cg_chain_is_the_same_for_dense_and_sparse_input():
    sim = simulate(n_docs=120, n_topics=3, n_classes=3, vocab_size=90, doc_length=25,
                   random_state=4)
    rng = np.random.default_rng(0)
    X = np.eye(30)[rng.integers(0, 30, len(sim.texts))]
    kw = dict(n_topics=3, n_iter=8, random_state=2, progress=False, rare_share=0,
              eta_sampler="cg")
    dense = DOLDA(**kw).fit(sim.texts, sim.y, X=X)
    sparse = DOLDA(**kw).fit(sim.texts, sim.y, X=sp.csr_matrix(X))
    assert dense.eta_sampler_ == sparse.eta_sampler_ == "cg"
    np.testing.assert_array_equal(dense.eta_draws_, sparse.eta_draws_)
    np.testing.assert_array_equal(dense.doc_topic_counts_, sparse.doc_topic_counts_)
    # the same chain; the calibrated probabilities differ only by the rounding of a dense
    # and a sparse matrix product
    np.testing.assert_allclose(dense.predict_proba(sim.texts[:10], X=X[:10]),
                               sparse.predict_proba(sim.texts[:10], X=sp.csr_matrix(X[:10])),
                               rtol=1e-12, atol=1e-15)


def test_auto_keeps_sparse_covariates_sparse_beyond_the_cholesky_limit():
    from dolda.model import SPARSE_CHOLESKY_MAX_COLUMNS

    sim = simulate(n_docs=60, n_topics=3, n_classes=2, vocab_size=60, doc_length=20,
                   random_state=1)
    for n_cols, expected in ((SPARSE_CHOLESKY_MAX_COLUMNS - 10, "cholesky"),
                             (SPARSE_CHOLESKY_MAX_COLUMNS + 10, "cg")):
        X = sp.random(60, n_cols, density=0.01, random_state=0, format="csr")
        model = DOLDA(n_topics=3, n_iter=3, progress=False, rare_share=0, random_state=0)
        model.fit(sim.texts, sim.y, X=X)
        assert model.eta_sampler_ == expected
        assert model.coef_.shape == (2, 1 + n_cols + 3)
    with pytest.raises(ValueError, match="eta_sampler"):
        DOLDA(eta_sampler="lu").fit(sim.texts, sim.y)


# ------------------------------------------------------------------ Geweke
def _geweke_problem():
    """X (12 x 5: intercept, numeric, 3-level one-hot) and two shards' zbar (K = 3)."""
    rng = np.random.default_rng(20260102)
    n = 12
    level = np.arange(n) % 3
    X = sp.csr_matrix(np.column_stack([np.ones(n), rng.normal(size=n), np.eye(3)[level]]))
    ndk = rng.integers(0, 4, (n, 3))
    doc_ptr = np.r_[0, np.cumsum(np.maximum(ndk.sum(axis=1), 1))]
    zbar = [sparse_eta.zbar_csr(doc_ptr[:7] - doc_ptr[0], ndk[:6]),
            sparse_eta.zbar_csr(doc_ptr[6:] - doc_ptr[6], ndk[6:])]
    shrunk = np.r_[False, np.ones(7, bool)]
    return X, zbar, shrunk


def geweke_z(method, seed=11, step=sparse_eta.eta_step):
    X, zbar, shrunk = _geweke_problem()
    U = sparse_eta.design(X, zbar)
    prior = gibbs.ProbitPrior(True, shrunk, VARIANCE)
    rng = np.random.default_rng(seed)
    cauchy_q = np.tan(np.pi * QUANTILES / 2)
    eta_ref = prior_draws(np.random.default_rng(seed + 1), True, shrunk, 2_000_000)[0]
    eta_cut = np.quantile(eta_ref, QUANTILES, axis=0).T
    expected = np.concatenate([indicators(eta_ref, eta_cut).mean(axis=0), QUANTILES,
                               np.tile(QUANTILES, int(shrunk.sum()))])
    eta, lam2, tau2, nu, xi = prior_draws(rng, True, shrunk, N_CHAINS)
    state = gibbs.ProbitState(None, eta, lam2, tau2, nu, xi)
    for it in range(N_STEPS):
        a = np.asarray(U @ state.eta.T) + rng.standard_normal((U.shape[0], N_CHAINS))
        state = step(seed, it, state, X, zbar, [a[:6], a[6:]], prior, method, 2)
    f = [indicators(state.eta, eta_cut), indicators(np.sqrt(state.tau2), cauchy_q),
         indicators(np.sqrt(state.lam2[:, shrunk]), cauchy_q)]
    observed = np.hstack(f).mean(axis=0)
    return (observed - expected) / np.sqrt(expected * (1 - expected) / N_CHAINS)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["cg", "bcm"])
def test_geweke_sparse_eta_block(method):
    z = geweke_z(method)
    assert len(z) == 8 * 5 + 5 + 7 * 5
    worst = np.max(np.abs(z))
    assert worst < TOL, f"Geweke test of the sparse eta block ({method}): max |z| = {worst:.2f}"
