"""The eta-step's Gaussian draws and the Horseshoe step, checked exactly (no Monte Carlo
for the Gaussians).

Every eta sampler maps its standard normals affinely to the draw:
``eta = m + A e``.  It is exact iff ``m = Q^{-1} b`` and ``A A^T = Q^{-1}``
(``Q = U^T U + diag(prec)``, ``b = U^T a``).  Both are read off one call: class
0 gets all-zero normals (its draw is ``m``) and class ``j`` the ``j``-th unit
vector (its draw minus ``m`` is column ``j`` of ``A``).  ``Q^{-1}`` and ``m``
are computed here with a dense solve.  The Horseshoe step is checked by
probability integral transforms of its draws under the inverse-gamma
conditionals written here.  Small and fast: the test selection of the mutation
runs over ``gaussian.py`` and ``probit_blocks.py`` (docs/MUTATION.md).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

from dolda.sampler import gaussian, preconditioner
from dolda.sampler import probit_blocks as P

pytestmark = pytest.mark.power


def _problem(n=25, n_levels=39, dense=False, seed=3):
    rng = np.random.default_rng(seed)
    level = rng.integers(0, n_levels, n)
    U = sp.hstack([np.ones((n, 1)), sp.csr_matrix(np.eye(n_levels)[level]),
                   sp.csr_matrix(rng.normal(size=(n, 1)))], format="csr")
    prec = np.exp(rng.uniform(-3, 3, U.shape[1]))
    prec[[3, 17]] = 1e8  # strongly shrunk columns
    a = rng.normal(size=n)
    return (U.toarray() if dense else U), prec, a


def _exact(U, prec, a):
    Ud = U.toarray() if sp.issparse(U) else U
    Q = Ud.T @ Ud + np.diag(prec)
    cov = np.linalg.inv(Q)
    return Q, cov, cov @ (Ud.T @ a)


def _check_affine(eta, n_inputs, cov, mean, rtol=1e-9):
    """``eta`` (1 + n_inputs, P): row 0 the zero input, row j unit input j - 1."""
    scale = np.max(np.abs(cov))
    np.testing.assert_allclose(eta[0], mean, rtol=rtol, atol=rtol * np.max(np.abs(mean)))
    A = (eta[1:] - eta[0]).T  # (P, n_inputs)
    assert A.shape[1] == n_inputs
    np.testing.assert_allclose(A @ A.T, cov, rtol=rtol, atol=rtol * scale)


def _unit_inputs(n_first, n_second):
    """Zero row, then unit vectors of the first block, then of the second."""
    eye = np.eye(n_first + n_second)
    rows = np.vstack([np.zeros(n_first + n_second), eye])
    return rows[:, :n_first].copy(), rows[:, n_first:].copy()


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_cholesky_draw_has_the_exact_mean_and_covariance(n_jobs):
    U, prec, a = _problem(dense=True)
    Q, cov, mean = _exact(U, prec, a)
    n_col = U.shape[1]
    normals, _ = _unit_inputs(n_col, 0)
    L = len(normals)
    eta = P.draw_coefficients(U.T @ U, np.tile(U.T @ a, (L, 1)), np.tile(prec, (L, 1)),
                              normals, n_jobs=n_jobs)
    _check_affine(eta, n_col, cov, mean)


@pytest.mark.parametrize("n, n_levels, dense, n_jobs", [
    (25, 39, True, 1),    # batched (D <= 64)
    (25, 39, False, 1),   # sparse, densified, batched
    (70, 80, True, 1),    # class by class (D > 64)
    (70, 80, False, 2),   # sparse, class by class on two threads
])
def test_bcm_draw_has_the_exact_mean_and_covariance(n, n_levels, dense, n_jobs):
    U, prec, a = _problem(n, n_levels, dense)
    _, cov, mean = _exact(U, prec, a)
    D, n_col = U.shape
    u_normals, delta = _unit_inputs(n_col, D)
    L = len(u_normals)
    eta = gaussian.draw_bcm(U, np.tile(a[:, None], (1, L)), np.tile(prec, (L, 1)),
                            u_normals, delta, n_jobs=n_jobs)
    _check_affine(eta, n_col + D, cov, mean, rtol=1e-7)


def test_bcm_class_by_class_on_a_sparse_matrix_too_big_to_densify(monkeypatch):
    monkeypatch.setattr(gaussian, "BCM_DENSIFY_MAX", 10)
    test_bcm_draw_has_the_exact_mean_and_covariance(70, 80, False, 1)


@pytest.mark.parametrize("warm", [False, True])
def test_cg_draw_has_the_exact_mean_and_covariance(warm):
    U, prec, a = _problem()
    _, cov, mean = _exact(U, prec, a)
    D, n_col = U.shape
    e1, e2 = _unit_inputs(D, n_col)
    L = len(e1)
    A = np.tile(a[:, None], (1, L))
    prec_l = np.tile(prec, (L, 1))
    start = np.random.default_rng(0).normal(size=(L, n_col)) if warm else None
    eta, iterations = gaussian.draw_pcg(gaussian.sparse_design(U), A, prec_l, e1, e2,
                                        start=start)
    assert np.all(iterations > 0)
    _check_affine(eta, D + n_col, cov, mean, rtol=1e-6)


def test_cg_of_a_zero_right_hand_side_is_zero_whatever_the_start():
    U, prec, _ = _problem()
    D, n_col = U.shape
    start = np.ones((1, n_col))
    eta, iterations = gaussian.draw_pcg(gaussian.sparse_design(U), np.zeros((D, 1)),
                                        prec[None], np.zeros((1, D)), np.zeros((1, n_col)),
                                        start=start)
    assert iterations[0] == 0 and np.all(eta == 0)


def test_cg_reports_non_convergence(caplog):
    U, prec, a = _problem()
    D, n_col = U.shape
    rng = np.random.default_rng(1)
    with caplog.at_level("WARNING", logger="dolda.sampler.gaussian"):
        _, iterations = gaussian.draw_pcg(gaussian.sparse_design(U), a[:, None], prec[None],
                                          rng.normal(size=(1, D)), rng.normal(size=(1, n_col)),
                                          max_iter=2)
    assert iterations[0] == -1
    assert "did not reach tolerance" in caplog.text


def test_sparse_design_holds_both_layouts_and_the_column_norms():
    U, _, _ = _problem()
    U = U.tocoo()
    U = sp.coo_matrix((np.r_[U.data, 0.5], (np.r_[U.row, 0], np.r_[U.col, 0])), shape=U.shape)
    d = gaussian.sparse_design(U)  # a duplicate entry is summed
    Ud = U.toarray()
    np.testing.assert_allclose(d.csr.toarray(), Ud)
    np.testing.assert_allclose(d.csr_t.toarray(), Ud.T)
    np.testing.assert_allclose(d.col_sq, (Ud ** 2).sum(axis=0))


@pytest.mark.parametrize("threads", [1, 2])
def test_block_gram_is_the_blocks_cross_products_for_every_thread_count(threads):
    """G_B = U_B^T U_B of a block that skips columns, with empty rows, rows with one block
    entry, and more output rows than bands; the same numbers whatever the thread count."""
    from dolda.sampler.threads import using_threads

    rng = np.random.default_rng(7)
    U = sp.random(60, 40, density=0.25, format="csr", random_state=8)
    U[5] = 0.0
    U[9] = 0.0
    U[9, 3] = 2.5
    U.eliminate_zeros()
    U.sort_indices()
    block = np.sort(rng.choice(40, size=19, replace=False))
    block[0] = 0
    position = np.full(40, -1, np.int64)
    position[block] = np.arange(len(block))
    dense = U.toarray()[:, block]
    with using_threads(threads):
        got = preconditioner.block_gram(U.indptr, U.indices, U.data, position, len(block))
    np.testing.assert_allclose(got, dense.T @ dense, rtol=1e-13, atol=1e-13)
    with using_threads(1):
        one = preconditioner.block_gram(U.indptr, U.indices, U.data, position, len(block))
    np.testing.assert_array_equal(got, one)
    design = gaussian.sparse_design(U, block)
    np.testing.assert_allclose(design.block_gram, dense.T @ dense, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("method", ["cholesky", "bcm", "cg"])
def test_draw_eta_draws_every_class_from_its_own_conditional(method):
    """Through :func:`probit.draw_eta` with its own random normals, two alternating classes
    (different utilities and precisions), 1000 draws each: whitened by the class's own
    ``Q_l`` and centred at its own mean, the draws have mean 0 and variance 1 (5 standard
    errors).  Catches normals or classes mixed up by the dispatcher."""
    U, prec, a = _problem(dense=(method == "cholesky"))
    Ud = U.toarray() if sp.issparse(U) else U
    rng = np.random.default_rng(2)
    L = 2000
    A = np.column_stack([a, -2 * a] * (L // 2))
    prec_l = np.vstack([prec, prec * 4] * (L // 2))
    gram = Ud.T @ Ud if method == "cholesky" else None
    eta, info = P.draw_eta(rng, method, U, gram, A, prec_l)
    assert eta.shape == (L, U.shape[1])
    assert ("cg_iterations" in info) == (method == "cg")
    for cls in range(2):
        _, cov, mean = _exact(U, prec_l[cls], A[:, cls])
        chol = np.linalg.cholesky(np.linalg.inv(cov))
        white = (eta[cls::2] - mean) @ chol  # iid N(0, I) when exact
        n = len(white)
        assert np.max(np.abs(white.mean(axis=0))) < 5 / np.sqrt(n)
        var = white.var(axis=0)
        assert np.max(np.abs(var - 1)) < 5 * np.sqrt(2 / n) + 0.02


def test_draw_eta_refuses_an_unknown_sampler():
    U, prec, a = _problem()
    with pytest.raises(ValueError, match="eta sampler must be one of"):
        P.draw_eta(np.random.default_rng(0), "qr", U, None, a[:, None], prec[None])


# ------------------------------------------------------------------ Horseshoe


def _ig_pit(x, shape, scale):
    """Probability integral transform of ``x ~ IG(shape, scale)``: uniform when right."""
    return stats.invgamma.cdf(x, shape, scale=scale)


def test_horseshoe_step_draws_each_scale_from_its_inverse_gamma_conditional():
    rng = np.random.default_rng(5)
    L, n_col = 3000, 4
    shrunk = np.array([False, True, True, True])
    prior = P.ProbitPrior(True, shrunk, 9.0)
    eta = rng.normal(scale=[3.0, 0.5, 1.0, 2.0], size=(L, n_col))
    lam2 = rng.gamma(0.7, size=(L, n_col))
    nu = rng.gamma(0.9, size=(L, n_col))
    tau2 = rng.gamma(0.8, size=L)
    xi = rng.gamma(1.1, size=L)
    new_lam2, new_tau2, new_nu, new_xi = P.draw_shrinkage(np.random.default_rng(6), prior,
                                                          eta, lam2, tau2, nu, xi)
    # the intercept's scales are untouched
    np.testing.assert_array_equal(new_lam2[:, 0], lam2[:, 0])
    np.testing.assert_array_equal(new_nu[:, 0], nu[:, 0])
    s = shrunk
    e2 = eta[:, s] ** 2
    pits = {
        "lam2": _ig_pit(new_lam2[:, s], 1.0, 1 / nu[:, s] + e2 / (2 * tau2[:, None])),
        "tau2": _ig_pit(new_tau2, (s.sum() + 1) / 2, 1 / xi + (e2 / (2 * new_lam2[:, s])).sum(1)),
        "nu": _ig_pit(new_nu[:, s], 1.0, 1 + 1 / new_lam2[:, s]),
        "xi": _ig_pit(new_xi, 1.0, 1 + 1 / new_tau2),
    }
    for name, u in pits.items():
        for col in np.atleast_2d(u.T):
            assert stats.kstest(col, "uniform").pvalue > 1e-4, name
    # inputs are not modified in place
    assert np.all(lam2 > 0) and not np.shares_memory(new_lam2, lam2)


def test_normal_prior_leaves_the_scales_alone():
    prior = P.ProbitPrior(False, np.array([False, True]), 2.0)
    ones = np.ones((3, 2))
    out = P.draw_shrinkage(np.random.default_rng(0), prior, ones * 5, ones, np.ones(3), ones,
                           np.ones(3))
    for got in out:
        np.testing.assert_array_equal(got, 1.0)
    prec = P.prior_precision(prior, ones * 7, np.ones(3) * 3)
    np.testing.assert_allclose(prec, 0.5)


def test_prior_precision_floors_the_horseshoe_variance():
    prior = P.ProbitPrior(True, np.array([False, True, True]), 4.0)
    lam2 = np.array([[1.0, 1e-200, 2.0]])
    prec = P.prior_precision(prior, lam2, np.array([0.5]))
    np.testing.assert_allclose(prec, [[0.25, 1 / P.MIN_PRIOR_VARIANCE, 1.0]])


# ------------------------------------------------------------------ DO rule


def test_do_probabilities_are_the_normalised_orthant_products():
    """``P(y = l) ∝ F(mu_l) prod_{j != l} F(-mu_j)``, written here with scipy's ``ndtr``
    (moderate means) and checked stable for extreme ones."""
    from scipy.special import ndtr

    rng = np.random.default_rng(8)
    mu = rng.normal(scale=1.5, size=(50, 4))
    F, G = ndtr(mu), ndtr(-mu)
    raw = np.stack([F[:, l] * np.prod(np.delete(G, l, axis=1), axis=1) for l in range(4)], 1)
    np.testing.assert_allclose(P.do_probabilities(mu), raw / raw.sum(axis=1, keepdims=True),
                               rtol=1e-12)
    far = P.do_probabilities(np.array([[60.0, -60.0, 0.0], [-70.0, -80.0, -75.0]]))
    assert np.all(np.isfinite(far))
    np.testing.assert_allclose(far.sum(axis=1), 1.0)
    assert far[0, 0] > 0.999 and far[1].argmax() == 0


@pytest.mark.parametrize("dense", [True, False])
def test_cholesky_eta_step_builds_the_gram_matrix_when_not_given(dense):
    """``gram=None``: the Cholesky sampler forms ``U^T U`` itself, for dense and sparse
    ``U``, and draws what it draws with the matrix given (same generator state)."""
    U, prec, a = _problem(dense=dense)
    Ud = U if dense else U.toarray()
    A, prec_l = np.column_stack([a, -a]), np.vstack([prec, 2 * prec])
    given, _ = P.draw_eta(np.random.default_rng(3), "cholesky", U, Ud.T @ Ud, A, prec_l)
    built, _ = P.draw_eta(np.random.default_rng(3), "cholesky", U, None, A, prec_l)
    np.testing.assert_allclose(built, given, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("iteration", [0, 1, 15])
def test_gibbs_step_is_a_then_eta_then_scales_each_from_its_own_stream(iteration):
    """One probit iteration composed here from its blocks: ``a`` given the previous eta,
    eta given this ``a`` and the previous scales, the scales given this eta, with the
    generators ``(seed, iteration * 16 + STEP_*)`` that keep the steps and iterations on
    separate streams (``iteration * 15 + STEP_ETA`` makes iteration 15's eta reuse
    iteration 14's Horseshoe stream: a mutant that survived the law tests)."""
    from dolda.sampler.rng import STEP_ETA, STEP_SHRINK, numpy_generator
    from dolda.sampler.truncnorm import draw_utilities

    U, _, _ = _problem(dense=True)
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, U.shape[0])
    prior = P.ProbitPrior(True, np.r_[False, np.ones(U.shape[1] - 1, bool)], 4.0)
    state = P.initial_state(U.shape[0], 3, U.shape[1])
    state = state._replace(eta=rng.normal(size=(3, U.shape[1])),
                           lam2=rng.gamma(1.0, size=(3, U.shape[1])), tau2=rng.gamma(1.0, size=3))
    gram = U.T @ U
    new = P.gibbs_step(21, iteration, state, U, gram, y, prior)
    mu = U @ state.eta.T
    a = draw_utilities(mu, y, 21, iteration, np.empty_like(mu))
    prec = P.prior_precision(prior, state.lam2, state.tau2)
    eta, _ = P.draw_eta(numpy_generator(21, iteration * 16 + STEP_ETA), "cholesky", U, gram, a,
                        prec)
    scales = P.draw_shrinkage(numpy_generator(21, iteration * 16 + STEP_SHRINK), prior, eta,
                              state.lam2, state.tau2, state.nu, state.xi)
    np.testing.assert_array_equal(new.a, a)
    np.testing.assert_allclose(new.eta, eta, rtol=1e-12)
    for got, want in zip((new.lam2, new.tau2, new.nu, new.xi), scales):
        np.testing.assert_allclose(got, want, rtol=1e-12)
