"""DOLDA's eta-step with sparse covariates (:mod:`dolda.sampler.sparse_eta`).

* The sparse shard products and the stacked design ``U = [X, zbar]`` equal the
  dense path's (to rounding).
* Chains: with the same sampler (Cholesky), a chain on sparse ``X`` and one on
  dense ``X`` agree to rounding over the first iterations (same topics, eta to
  1e-8); ``DOLDA(eta_sampler="cg")`` gives the same chain for dense and sparse input.
* Geweke (2004) joint-distribution test of the whole sparse eta block
  (:func:`dolda.sampler.sparse_eta.eta_step`: eta by CG, BCM or one blocked-Gibbs
  scan (:mod:`dolda.sampler.word_step`: a planted bug that leaves the words out of the
  dense block's right-hand side fails it with |z| = 38), then the
  Horseshoe scales, with its own keyed random streams) on ``U = [X, zbar]``
  assembled from two shards' ``zbar``: 8,000 independent chains as the
  "classes", binomial standard errors, |z| < 4.5 as in ``tests/_geweke.py``.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from dolda import DOLDA
from dolda.datasets import simulate
from dolda.sampler import gibbs_iteration as dolda_chain
from dolda.sampler import probit_blocks as gibbs
from dolda.sampler import shard as shard_blocks
from dolda.sampler import preconditioner, sparse_eta

from _geweke import N_CHAINS, N_STEPS, QUANTILES, TOL, VARIANCE, indicators, prior_draws
from dolda import Sampler, Text, Words
from _flat import flat_dolda


def _data(sparse: bool, seed=0, n_topics=4):
    sim = simulate(n_docs=90, n_topics=n_topics, n_classes=3, vocab_size=80, doc_length=25,
                   random_state=seed)
    from dolda.design.corpus import Corpus

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
    dense = flat_dolda(**kw).fit(sim.texts, sim.y, X=X)
    sparse = flat_dolda(**kw).fit(sim.texts, sim.y, X=sp.csr_matrix(X))
    assert dense.eta_sampler_ == sparse.eta_sampler_ == "cg"
    np.testing.assert_array_equal(dense.eta_draws_, sparse.eta_draws_)
    np.testing.assert_array_equal(dense.doc_topic_counts_, sparse.doc_topic_counts_)
    # the same chain; the calibrated probabilities differ only by the rounding of a dense
    # and a sparse matrix product
    np.testing.assert_allclose(dense.predict_proba(sim.texts[:10], X=X[:10]),
                               sparse.predict_proba(sim.texts[:10], X=sp.csr_matrix(X[:10])),
                               rtol=1e-12, atol=1e-15)


def test_auto_keeps_sparse_covariates_sparse_beyond_the_cholesky_limit():
    from dolda.models.dolda.estimator import SPARSE_CHOLESKY_MAX_COLUMNS

    sim = simulate(n_docs=60, n_topics=3, n_classes=2, vocab_size=60, doc_length=20,
                   random_state=1)
    for n_cols, expected in ((SPARSE_CHOLESKY_MAX_COLUMNS - 10, "cholesky"),
                             (SPARSE_CHOLESKY_MAX_COLUMNS + 10, "cg")):
        X = sp.random(60, n_cols, density=0.01, random_state=0, format="csr")
        model = DOLDA(n_topics=3, n_iter=3, progress=False, random_state=0, text=Text(rare_share=0), words=Words(n=0))
        model.fit(sim.texts, sim.y, X=X)
        assert model.eta_sampler_ == expected
        assert model.coef_.shape == (2, 1 + n_cols + 3)
    with pytest.raises(ValueError, match="Sampler.eta"):
        DOLDA(sampler=Sampler(eta="lu")).fit(sim.texts, sim.y)


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


def _gibbs_step(*args, **kw):
    """The blocked Gibbs eta-step with the problem's 3-level one-hot columns as "words"."""
    return sparse_eta.eta_step(*args, **kw, n_word_columns=3)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["cg", "bcm", "gibbs"])
def test_geweke_sparse_eta_block(method):
    z = geweke_z(method, step=_gibbs_step if method == "gibbs" else sparse_eta.eta_step)
    assert len(z) == 8 * 5 + 5 + 7 * 5
    worst = np.max(np.abs(z))
    assert worst < TOL, f"Geweke test of the sparse eta block ({method}): max |z| = {worst:.2f}"


# ------------------------------------------------------------------ CG block preconditioner
def _collinear_problem(seed, n_docs=600, levels=40, n_topics=12, n_classes=3):
    """DOLDA's ``U = [1, one-hot, zbar, two rare one-hot fields]``: each one-hot field and
    the topic proportions sum to the intercept, and the rare fields' 2 x 400 levels are
    mostly seen in one row (row-singleton groups).  Prior precisions span 1e-8 (flat
    topics: the intercept-minus-topics direction is bent only by the prior) to 1e100."""
    from dolda.sampler import gaussian

    rng = np.random.default_rng(seed)
    level = rng.integers(0, levels, n_docs)
    rare = [np.eye(400)[rng.integers(0, 400, n_docs)] for _ in range(2)]
    X = sp.hstack([sp.csr_matrix(np.ones((n_docs, 1))),
                   sp.csr_matrix(np.eye(levels)[level])]).tocsr()
    ndk = np.stack([rng.multinomial(50, p)
                    for p in rng.dirichlet(np.full(n_topics, 0.3), n_docs)])
    U = sparse_eta.design(X, [sparse_eta.zbar_csr(np.arange(n_docs + 1) * 50, ndk)])
    U = sp.hstack([U, sp.csr_matrix(np.hstack(rare))], format="csr")
    n_cols = U.shape[1]
    prec = 10.0 ** rng.uniform(-2, 4, (n_classes, n_cols))
    prec[:, 0] = 0.01
    prec[:, 1 + levels:1 + levels + n_topics] = 10.0 ** rng.uniform(-8, -4,
                                                                    (n_classes, n_topics))
    prec[:, 1:6] = 1e100
    a = rng.normal(size=(n_docs, n_classes))
    e1 = rng.normal(size=(n_classes, n_docs))
    e2 = rng.normal(size=(n_classes, n_cols))
    block = sparse_eta.block_columns(X.shape[1], n_topics)
    return U, prec, a, e1, e2, block, gaussian


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_block_preconditioned_cg_meets_the_tolerance_checked_independently(seed):
    """The residual of the returned solution, recomputed here with dense numpy, is within
    CG_TOL (Jacobi-scaled, relative); a loose tolerance or a solver that stops on its own
    recursive estimate fails this."""
    U, prec, a, e1, e2, block, gaussian = _collinear_problem(seed)
    design = gaussian.sparse_design(U, block, singletons=True)
    assert len(design.group_ptr) > 20   # rows with two levels seen only there
    eta, iterations = gaussian.draw_pcg(design, a, prec, e1, e2)
    Ud = U.toarray()
    for l in range(prec.shape[0]):
        Q = Ud.T @ Ud + np.diag(prec[l])
        c = Ud.T @ (a[:, l] + e1[l]) + np.sqrt(prec[l]) * e2[l]
        r = c - Q @ eta[l]
        d_inv = 1.0 / np.diag(Q)
        rel = np.sqrt(r @ (d_inv * r)) / np.sqrt(c @ (d_inv * c))
        assert rel <= gaussian.CG_TOL * 1.001, (l, rel)
        assert 0 < iterations[l] < gaussian.CG_MAX_ITER
    # the same system as the Jacobi-only solver (solutions agree to the tolerance) ...
    jacobi, jacobi_iterations = gaussian.draw_pcg(gaussian.sparse_design(U), a, prec, e1, e2)
    scale = np.sqrt(np.diag(Ud.T @ Ud)[None, :] + prec)
    assert np.max(np.abs((eta - jacobi) * scale)) < 1e-5
    # ... in markedly fewer iterations (the collinear direction lies in the exact block)
    assert np.all(iterations <= 0.75 * jacobi_iterations), (iterations, jacobi_iterations)


def test_block_preconditioner_factors_the_block_of_q():
    """``S^{-1} C C^T S^{-1}`` from the packed factor and scales is ``Q_l``'s block."""
    U, prec, a, e1, e2, block, gaussian = _collinear_problem(3)
    design = gaussian.sparse_design(U, block)
    chol, scale = preconditioner.block_factors(design, prec)
    n_block = len(block)
    assert chol.shape == (prec.shape[0], n_block * (n_block + 1) // 2)
    Ud = U.toarray()[:, block]
    for l in range(prec.shape[0]):
        q_block = Ud.T @ Ud + np.diag(prec[l, block])
        factor = np.zeros((n_block, n_block))
        factor[np.tril_indices(n_block)] = chol[l]
        np.testing.assert_allclose(scale[l], 1 / np.sqrt(np.diag(q_block)), rtol=1e-14)
        rebuilt = (factor @ factor.T) / np.outer(scale[l], scale[l])
        np.testing.assert_allclose(rebuilt, q_block, rtol=1e-12,
                                   atol=1e-12 * np.abs(q_block).max())
    with pytest.raises(ValueError, match="block"):
        gaussian.sparse_design(U, [0, 0])


def test_block_preconditioner_falls_back_to_jacobi_on_a_singular_block():
    """Two equal block columns and a negligible prior: the scaled block is singular in
    floating point, so the factor is the identity and the block is preconditioned by
    ``diag(Q)^{-1}`` like the other columns."""
    from dolda.sampler import gaussian

    col = np.random.default_rng(0).uniform(0.5, 1.5, (20, 1))
    U = sp.csr_matrix(np.hstack([col, col, np.ones((20, 1))]))
    prec = np.array([[1e-20, 1e-20, 1.0]])
    design = gaussian.sparse_design(U, [0, 1])
    chol, scale = preconditioner.block_factors(design, prec)
    np.testing.assert_array_equal(chol[0], [1.0, 0.0, 1.0])  # the packed identity
    r = np.array([1.0, -2.0, 3.0])
    z = gaussian.apply_preconditioner(design, prec[0], r)
    np.testing.assert_allclose(z, r / (design.col_sq + prec[0]), rtol=1e-14)


def test_block_cg_eta_step_is_the_jacobi_one_to_the_tolerance():
    """``eta_step(preconditioner=...)``: both draws solve the same perturbed system."""
    X, zbar, shrunk = _geweke_problem()
    prior = gibbs.ProbitPrior(True, shrunk, 100.0)
    rng = np.random.default_rng(4)
    state = gibbs.initial_state(12, 3, 8)._replace(eta=rng.normal(size=(3, 8)))
    a = rng.normal(size=(12, 3))
    out = {}
    for pre in sparse_eta.PRECONDITIONERS:
        info = {}
        out[pre] = sparse_eta.eta_step(5, 2, state, X, zbar, [a[:6], a[6:]], prior, "cg", 1,
                                       pre, info)
        assert np.all(info["cg_iterations"] > 0)
    np.testing.assert_allclose(out["block"].eta, out["jacobi"].eta, rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="preconditioner"):
        sparse_eta.eta_step(5, 2, state, X, zbar, [a[:6], a[6:]], prior, "cg", 1, "ilu")


def test_preconditioner_is_the_exact_inverse_of_its_blocks_of_q():
    """M^{-1} r against a dense solve with M built from Q by the definition: Q's block on
    the intercept and topics, Q's block on every row's singleton columns, diag(Q) elsewhere."""
    from dolda.sampler import gaussian

    rng = np.random.default_rng(7)
    n_docs, n_levels = 30, 50                  # two 50-level fields: many levels seen once
    X = sp.hstack([sp.csr_matrix(np.ones((n_docs, 1))),
                   sp.csr_matrix(np.eye(n_levels)[rng.integers(0, n_levels, n_docs)]
                                 * rng.uniform(0.5, 2, (n_docs, 1))),
                   sp.csr_matrix(np.eye(n_levels)[rng.integers(0, n_levels, n_docs)])]).tocsr()
    ndk = rng.integers(0, 4, (n_docs, 5))
    U = sparse_eta.design(X, [sparse_eta.zbar_csr(np.r_[0, np.cumsum(ndk.sum(1))], ndk)])
    block = sparse_eta.block_columns(X.shape[1], 5)
    design = gaussian.sparse_design(U, block, singletons=True)
    assert len(design.group_ptr) > 3          # several rows with two singleton columns
    Ud = U.toarray()
    Q = Ud.T @ Ud
    prec = 10.0 ** rng.uniform(-6, 6, U.shape[1])
    Q[np.diag_indices_from(Q)] += prec
    M = np.diag(np.diag(Q))
    groups = [block] + [design.group_cols[design.group_ptr[g]:design.group_ptr[g + 1]]
                        for g in range(len(design.group_ptr) - 1)]
    for cols in groups:
        assert np.all((Ud[:, cols] != 0).sum(axis=0) >= 1)
        M[np.ix_(cols, cols)] = Q[np.ix_(cols, cols)]
    for cols in groups[1:]:                    # singleton columns: one non-zero, the same row
        rows = np.nonzero(Ud[:, cols])[0]
        assert len(rows) == len(cols) and len(set(rows)) == 1
    r = rng.normal(size=U.shape[1])
    z = gaussian.apply_preconditioner(design, prec, r)
    np.testing.assert_allclose(M @ z, r, rtol=1e-7, atol=1e-7 * np.abs(r).max())


def _random_csr(rng, n_rows, n_cols, density, empty_rows=(0, 3)):
    A = sp.random(n_rows, n_cols, density=density, format="lil", random_state=rng)
    for r in empty_rows:
        A[r, :] = 0
    A = sp.csr_matrix(A)
    A.sort_indices()
    return A


@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (57, 40)])
def test_csr_products_equal_scipys_bit_for_bit(shape):
    """The threaded product sums each row's nonzeros in stored order, as scipy does."""
    rng = np.random.default_rng(shape[0])
    A = _random_csr(rng, *shape, 0.3, empty_rows=(0,))
    B = rng.normal(size=(5, shape[1]))
    expected = np.asarray(A @ B.T)
    np.testing.assert_array_equal(sparse_eta.csr_products(A, B), expected)
    np.testing.assert_array_equal(sparse_eta.covariate_products(A, B), expected)


def test_zbar_csr_is_the_row_normalised_counts_with_empty_documents_as_zero_rows():
    rng = np.random.default_rng(3)
    ndk = (rng.integers(0, 4, (30, 6)) * (rng.random((30, 6)) < 0.4)).astype(np.int32)
    ndk[[0, 7]] = 0  # empty documents
    doc_ptr = np.r_[0, np.cumsum(ndk.sum(axis=1))].astype(np.int64)
    zbar = sparse_eta.zbar_csr(doc_ptr, ndk)
    n = np.maximum(ndk.sum(axis=1), 1)[:, None]
    np.testing.assert_array_equal(zbar.toarray(), ndk / n)
    assert zbar.nnz == np.count_nonzero(ndk) and zbar.has_sorted_indices
    # reused statistics: the same mu as from scratch
    eta = rng.normal(size=(3, 2 + 6))
    X = _random_csr(rng, 30, 2, 0.5)
    xp = sparse_eta.covariate_products(X, eta[:, :2])
    np.testing.assert_array_equal(
        sparse_eta.regressor_products(X, doc_ptr, ndk, eta, zbar=zbar, x_products=xp),
        sparse_eta.regressor_products(X, doc_ptr, ndk, eta))
    np.testing.assert_allclose(sparse_eta.regressor_products(X, doc_ptr, ndk, eta),
                               np.hstack([X.toarray(), ndk / n]) @ eta.T, rtol=0, atol=1e-13)
