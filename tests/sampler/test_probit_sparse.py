"""The many-columns eta samplers (BCM, preconditioned CG) and sparse input to DOProbit.

* Geweke (2004) joint-distribution test of each new sampler with both priors,
  run exactly like ``tests/sampler/test_probit_geweke.py`` (independent chains as the
  "classes" of one problem, binomial standard errors, |z| < 4.5) on a small
  regressor matrix with an intercept, a numeric column and a full one-hot
  block (collinear with the intercept, so only the prior makes ``Q``
  invertible -- the hard case for CG).
* Exactness: on a small sparse problem, 20,000 draws from each sampler have
  the exact mean ``Q^{-1} b`` and covariance ``Q^{-1}``, including columns with
  prior precision 1e100 (Monte Carlo tolerance: 5 standard errors).
* DOProbit: sparse and dense X give the same chain; CG, BCM and Cholesky give
  the same posterior; draws do not depend on the thread count.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from dolda import DOProbit
from dolda.sampler import gaussian
from dolda.sampler import probit_blocks as gibbs

from _geweke import geweke_z as _geweke_z, TOL


def _one_hot_problem():
    """U (12 x 5): intercept, a numeric column, a 3-level one-hot block."""
    rng = np.random.default_rng(20260102)
    n = 12
    level = np.arange(n) % 3
    U = np.column_stack([np.ones(n), rng.normal(size=n), np.eye(3)[level]])
    shrunk = np.array([False, True, True, True, True])
    return sp.csr_matrix(U), shrunk


def geweke_z(method, horseshoe, seed=11):
    U, shrunk = _one_hot_problem()
    design = gaussian.sparse_design(U)

    def draw(rng, eta, a, prec):
        return gibbs.draw_eta(rng, method, U, None, a, prec, start=eta, design=design,
                              n_jobs=2)[0]

    return _geweke_z(U, shrunk, horseshoe, draw, seed)


@pytest.mark.slow
@pytest.mark.parametrize("horseshoe", [True, False], ids=["horseshoe", "normal"])
@pytest.mark.parametrize("method", ["bcm", "cg"])
def test_geweke_joint_distribution(method, horseshoe):
    z = geweke_z(method, horseshoe)
    assert len(z) == (50 if horseshoe else 25)
    worst = np.max(np.abs(z))
    assert worst < TOL, f"Geweke test of {method} failed: max |z| = {worst:.2f}"


# ------------------------------------------------------------------ exactness
def _exact_problem():
    rng = np.random.default_rng(3)
    n, n_levels = 25, 39
    level = rng.integers(0, n_levels, n)
    U = sp.hstack([np.ones((n, 1)), sp.csr_matrix(np.eye(n_levels)[level])], format="csr")
    U = sp.hstack([U, sp.csr_matrix(rng.normal(size=(n, 1)))], format="csr")  # P = 41 > D
    prec = np.exp(rng.uniform(-4, 4, U.shape[1]))
    prec[[3, 17]] = 1e100  # Horseshoe-style: shrunk to nothing
    a = rng.normal(size=n)
    return U, prec, a


@pytest.mark.parametrize("method", ["cholesky", "bcm", "cg"])
def test_draws_have_the_exact_mean_and_covariance(method):
    U, prec, a = _exact_problem()
    n_draws = 20_000
    Ud = U.toarray()
    Q = Ud.T @ Ud + np.diag(prec)
    chol = np.linalg.cholesky(Q)
    mean = np.linalg.solve(Q, Ud.T @ a)
    rng = np.random.default_rng(4)
    A = np.repeat(a[:, None], n_draws, axis=1)
    P = np.repeat(prec[None], n_draws, axis=0)
    eta, _ = gibbs.draw_eta(rng, method, U, None, A, P, n_jobs=2)
    # whitened draws C^T (eta - m) must be iid N(0, I)
    white = (eta - mean) @ chol
    n = n_draws
    assert np.max(np.abs(white.mean(axis=0))) < 5 / np.sqrt(n)
    cov = white.T @ white / n
    off = cov - np.eye(len(prec))
    assert np.max(np.abs(np.diag(off))) < 5 * np.sqrt(2 / n)
    assert np.max(np.abs(off[~np.eye(len(prec), dtype=bool)])) < 5 / np.sqrt(n)
    assert np.all(np.abs(eta[:, [3, 17]]) < 1e-45)


def test_cg_solves_to_the_stated_tolerance_with_huge_precisions():
    U, prec, a = _exact_problem()
    rng = np.random.default_rng(5)
    prec = np.vstack([prec, np.full_like(prec, 1e-6)])  # second class: nearly flat prior
    e1, e2 = rng.normal(size=(2, U.shape[0])), rng.normal(size=(2, U.shape[1]))
    A = np.column_stack([a, a])
    eta, iterations = gaussian.draw_pcg(gaussian.sparse_design(U), A, prec, e1, e2)
    Ud = U.toarray()
    for l in range(2):
        Q = Ud.T @ Ud + np.diag(prec[l])
        c = Ud.T @ (a + e1[l]) + np.sqrt(prec[l]) * e2[l]
        r = c - Q @ eta[l]
        m_inv = 1 / np.diag(Q)
        assert np.sqrt(r @ (m_inv * r)) <= gaussian.CG_TOL * np.sqrt(c @ (m_inv * c)) * 1.01
        assert 0 < iterations[l] < gaussian.CG_MAX_ITER
    # warm start at the answer: no iteration needed
    _, again = gaussian.draw_pcg(gaussian.sparse_design(U), A, prec, e1, e2, start=eta)
    assert np.all(again == 0)


def test_bcm_sparse_and_dense_regressors_agree():
    U, prec, a = _exact_problem()
    rng = np.random.default_rng(6)
    P = np.vstack([prec, prec * 3])
    A = np.column_stack([a, -a])
    un, dn = rng.normal(size=P.shape), rng.normal(size=(2, U.shape[0]))
    np.testing.assert_allclose(gaussian.draw_bcm(U, A, P, un, dn),
                               gaussian.draw_bcm(U.toarray(), A, P, un, dn, n_jobs=2),
                               rtol=1e-9, atol=1e-12)


# ------------------------------------------------------------------ DOProbit
def _one_hot_data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    g1, g2 = rng.integers(0, 12, n), rng.integers(0, 8, n)
    X = np.column_stack([np.eye(12)[g1], np.eye(8)[g2], rng.normal(size=n)])
    score = np.column_stack([(g1 < 3) * 2.0, (g2 == 0) * 2.0 + X[:, -1], np.zeros(n)])
    y = np.argmax(score + rng.normal(size=(n, 3)), axis=1)
    return X, y


def test_sparse_and_dense_input_give_the_same_chain():
    X, y = _one_hot_data()
    for prior in ("horseshoe", "normal"):
        kw = dict(prior=prior, n_iter=40, random_state=3, eta_sampler="cholesky")
        dense = DOProbit(**kw).fit(X, y)
        sparse = DOProbit(**kw).fit(sp.csr_matrix(X), y)
        np.testing.assert_allclose(sparse.eta_draws_, dense.eta_draws_, rtol=1e-7, atol=1e-9)
        np.testing.assert_allclose(sparse.predict_proba(sp.csr_matrix(X)),
                                   dense.predict_proba(X), rtol=1e-7, atol=1e-12)
        np.testing.assert_allclose(sparse.decision_function(sp.csr_matrix(X)),
                                   dense.decision_function(X), rtol=1e-7, atol=1e-9)


@pytest.mark.slow
def test_cg_and_bcm_reach_the_cholesky_posterior():
    """Posterior means agree within 0.35 posterior sd (two chains' Monte Carlo error).
    A unit prior variance keeps quasi-separated levels (a class never seen with a
    level) from the slow-mixing heavy tails that would dominate the comparison."""
    X, y = _one_hot_data(n=150)
    Xs = sp.csr_matrix(X)
    fits = {m: DOProbit(prior="normal", prior_variance=1.0, n_iter=1500, burn_in=300,
                        eta_sampler=m, random_state=i).fit(Xs, y)
            for i, m in enumerate(("cholesky", "bcm", "cg"))}
    ref = fits["cholesky"].eta_draws_
    for m in ("bcm", "cg"):
        diff = np.abs(fits[m].eta_draws_.mean(axis=0) - ref.mean(axis=0))
        np.testing.assert_array_less(diff, 0.35 * ref.std(axis=0))


@pytest.mark.parametrize("method", ["cg", "bcm"])
def test_same_seed_same_draws_whatever_the_threads(method):
    X, y = _one_hot_data(n=150)
    Xs = sp.csr_matrix(X)
    one = DOProbit(n_iter=15, random_state=9, n_jobs=1, eta_sampler=method).fit(Xs, y)
    two = DOProbit(n_iter=15, random_state=9, n_jobs=2, eta_sampler=method).fit(Xs, y)
    np.testing.assert_array_equal(one.eta_draws_, two.eta_draws_)
    assert one.eta_sampler_ == method


def test_auto_choice_by_shape():
    assert gibbs.choose_eta_sampler(8600, 120, sparse=False) == "cholesky"
    assert gibbs.choose_eta_sampler(8600, 120, sparse=True) == "cholesky"
    assert gibbs.choose_eta_sampler(8600, 25_000, sparse=True) == "cg"
    assert gibbs.choose_eta_sampler(300, 5000, sparse=False) == "bcm"
    X, y = _one_hot_data(n=100)
    assert DOProbit(n_iter=4).fit(sp.csr_matrix(X), y).eta_sampler_ == "cholesky"


def test_bad_eta_sampler_names_the_choices():
    X, y = _one_hot_data(n=50)
    with pytest.raises(ValueError, match="eta_sampler must be one of 'auto', 'cholesky'"):
        DOProbit(n_iter=4, eta_sampler="qr").fit(X, y)


def test_coefficients_by_name():
    X, y = _one_hot_data()
    names = [f"g1={i}" for i in range(12)] + [f"g2={i}" for i in range(8)] + ["z"]
    m = DOProbit(n_iter=300, random_state=1).fit(sp.csr_matrix(X), np.array(["a", "b", "c"])[y])
    frame = m.coef_frame(names)
    assert frame.shape == (3, 21) and list(frame.index) == ["a", "b", "c"]
    assert frame.loc["a", "g1=0"] == m.coef_[0, 0]
    summary = m.coef_summary(names)
    assert len(summary) == 63
    assert set(summary.columns) == {"class", "feature", "mean", "lower", "upper", "excludes_zero"}
    chosen = summary[summary.excludes_zero]
    assert {"g1=0", "g1=1", "g1=2"} <= set(chosen.loc[chosen["class"] == "a", "feature"])
    assert "g2=0" in set(chosen.loc[chosen["class"] == "b", "feature"])
    assert list(m.coef_frame().columns[:2]) == ["x0", "x1"]
    with pytest.raises(ValueError, match="feature_names has 2 names, but the model has 21"):
        m.coef_frame(["a", "b"])


def test_auto_choice_follows_the_measured_thresholds():
    """The boundaries of ``choose_eta_sampler`` (benchmarks/results/eta_scaling.md)."""
    sparse_max = gibbs.CHOLESKY_MAX_COLUMNS_SPARSE
    assert gibbs.choose_eta_sampler(10_810, sparse_max, sparse=True) == "cholesky"
    assert gibbs.choose_eta_sampler(10_810, sparse_max + 1, sparse=True) == "cg"
    assert gibbs.choose_eta_sampler(500, 10_001, sparse=True) == "cg"  # never BCM when sparse
    assert gibbs.choose_eta_sampler(100, gibbs.CHOLESKY_MAX_COLUMNS, sparse=False) == "cholesky"
    assert gibbs.choose_eta_sampler(2000, 5001, sparse=False) == "bcm"
    assert gibbs.choose_eta_sampler(2001, 5001, sparse=False) == "cholesky"
    assert gibbs.choose_eta_sampler(10_810, 5001, sparse=False) == "cholesky"
    assert gibbs.choose_eta_sampler(10_810, gibbs.CHOLESKY_MAX_COLUMNS_DENSE + 1,
                                    sparse=False) == "cg"
    rng = np.random.default_rng(0)
    n, p = 60, sparse_max + 20
    X = sp.csr_matrix((np.ones(n), (np.arange(n), rng.integers(0, p, n))), shape=(n, p))
    y = rng.integers(0, 2, n)
    assert DOProbit(n_iter=2).fit(X, y).eta_sampler_ == "cg"
    assert DOProbit(n_iter=2).fit(X[:, :sparse_max - 1], y).eta_sampler_ == "cholesky"
