"""The blocked-Gibbs eta-step for word covariates (:mod:`dolda.sampler.word_step`).

* Exactness in distribution: the scan (dense block, then one word at a time) must leave
  ``N(m, Q^{-1})`` invariant and, from any start, converge to it.  Many classes with
  the same utilities and prior precisions are independent chains of the same Gaussian:
  after ``N_SCANS`` scans from eta = 0 their mean and covariance must match the closed
  form ``m = Q^{-1} U^T a``, ``Q^{-1}`` (|z| < 4.5 for every mean and every covariance
  entry, binomial-free normal-theory standard errors: ``sd_i / sqrt(n)`` for a mean,
  ``sqrt((S_ii S_jj + S_ij^2) / n)`` for a covariance).  The convergence factor of the
  scan on this problem is far below 0.5, so 30 scans leave a bias < 1e-9 sd.
  Planted bugs: dropping the word's own part ``col_sq * old`` from the conditional
  mean, or the prior variance in place of the precision, fail it (|z| > 10).
* The draws do not depend on the thread count (numba threads, Cholesky threads).
* The Geweke test of the whole sparse eta block with ``method="gibbs"`` is in
  ``tests/sampler/test_sparse_eta.py``.
"""

import numpy as np
import pytest
import scipy.sparse as sp

from dolda.sampler import word_step
from dolda.sampler.threads import using_threads

pytestmark = pytest.mark.power

N_CLASSES = 3000
N_SCANS = 30
TOL = 4.5


def _problem(seed=5):
    """U = [1, x, 5 words (log counts, two strongly shrunk), 3 topic proportions]."""
    rng = np.random.default_rng(seed)
    n = 40
    x = rng.normal(size=(n, 1))
    counts = rng.poisson(0.6, (n, 5)) * (rng.random((n, 5)) < 0.7)
    words = np.log1p(counts)
    zbar = rng.dirichlet(np.full(3, 0.7), n)
    X = sp.csr_matrix(np.hstack([np.ones((n, 1)), x, words]))
    prec = np.array([0.01, 0.5, 2.0, 1e8, 0.3, 5.0, 1e6, 0.02, 0.05, 0.1])
    a = rng.normal(size=n) + 0.8 * words[:, 0] - 0.5 * zbar[:, 1]
    return X, sp.csr_matrix(zbar), prec, a


def _closed_form(X, zbar, prec, a):
    U = np.hstack([X.toarray(), zbar.toarray()])
    cov = np.linalg.inv(U.T @ U + np.diag(prec))
    return cov @ (U.T @ a), cov


def _run(X, zbar, prec, a, seed=1, n_jobs=1, n_classes=N_CLASSES, n_scans=N_SCANS):
    wc = word_step.word_columns(X, 5)
    P = len(prec)
    eta = np.zeros((n_classes, P))
    A = np.tile(a[:, None], (1, n_classes))
    precs = np.tile(prec, (n_classes, 1))
    for it in range(n_scans):
        eta = word_step.draw_blocked(seed, it, wc, zbar, A, precs, eta, n_jobs)
    return eta


def moment_z(eta, mean, cov):
    n = len(eta)
    sd = np.sqrt(np.diag(cov))
    z_mean = (eta.mean(axis=0) - mean) / (sd / np.sqrt(n))
    emp = np.cov(eta, rowvar=False)
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / n)
    iu = np.triu_indices(len(mean))
    z_cov = ((emp - cov) / se)[iu]
    return np.concatenate([z_mean, z_cov])


def test_scans_converge_to_the_exact_gaussian_conditional():
    X, zbar, prec, a = _problem()
    mean, cov = _closed_form(X, zbar, prec, a)
    z = moment_z(_run(X, zbar, prec, a), mean, cov)
    assert len(z) == 10 + 55
    worst = np.max(np.abs(z))
    assert worst < TOL, f"blocked Gibbs moments off: max |z| = {worst:.2f}"


def test_one_scan_moves_every_coefficient_and_keeps_shrunk_words_at_zero():
    X, zbar, prec, a = _problem()
    eta = _run(X, zbar, prec, a, n_classes=4, n_scans=1)
    assert np.all(eta[:, [0, 1, 2, 4, 5, 7, 8, 9]] != 0.0)
    assert np.all(np.abs(eta[:, 3]) < 1e-3) and np.all(np.abs(eta[:, 6]) < 1e-2)


@pytest.mark.parametrize("threads", [1, 2])
def test_draws_do_not_depend_on_the_thread_count(threads):
    X, zbar, prec, a = _problem()
    with using_threads(1):
        ref = _run(X, zbar, prec, a, n_classes=7, n_scans=3)
    with using_threads(threads):
        got = _run(X, zbar, prec, a, n_classes=7, n_scans=3, n_jobs=threads)
    np.testing.assert_array_equal(got, ref)


def test_word_columns_refuses_the_intercept_as_a_word():
    X, _, _, _ = _problem()
    with pytest.raises(ValueError, match="n_word_columns"):
        word_step.word_columns(X, X.shape[1])


def test_auto_picks_gibbs_for_many_word_columns_and_cholesky_for_few():
    from dolda import DOLDA
    from dolda.models.dolda.design_stage import SPARSE_CHOLESKY_MAX_COLUMNS, chain_design

    class Words:  # what chain_design asks of the model: word covariates present
        word_features_ = object()

    p = DOLDA()._check_params()
    for n_x, expected in ((SPARSE_CHOLESKY_MAX_COLUMNS - 20, "cholesky"),
                          (SPARSE_CHOLESKY_MAX_COLUMNS + 1, "gibbs")):
        X = sp.random(30, n_x, density=0.05, random_state=0, format="csr")
        assert chain_design(Words(), X, 20, p, True)[1] == expected
    Words.word_features_ = None
    X = sp.random(30, SPARSE_CHOLESKY_MAX_COLUMNS + 1, density=0.05, random_state=0,
                  format="csr")
    assert chain_design(Words(), X, 20, p, True)[1] == "cg"


def _problem_with_levels(seed=7):
    """U = [1, x, 4 sparse one-hot levels (3 rows each), a common level, 3 words, 2 topics]:
    the sparse levels are swept with the words, x and the common level stay dense."""
    rng = np.random.default_rng(seed)
    n = 100
    x = rng.normal(size=(n, 1))
    levels = np.zeros((n, 4))
    rows = rng.permutation(n)[:12].reshape(4, 3)
    for j in range(4):
        levels[rows[j], j] = 1.0
    common = (rng.random((n, 1)) < 0.5).astype(float)
    words = np.log1p(rng.poisson(0.5, (n, 3)))
    zbar = rng.dirichlet(np.full(2, 0.7), n)
    X = sp.csr_matrix(np.hstack([np.ones((n, 1)), x, levels, common, words]))
    prec = np.array([0.01, 0.5, 0.3, 2.0, 1e6, 0.1, 0.4, 0.2, 1e5, 3.0, 0.05, 0.1])
    a = (rng.normal(size=n) + 0.9 * levels[:, 0] - 0.7 * levels[:, 3] + 0.6 * words[:, 0]
         - 0.5 * zbar[:, 1])
    return X, sp.csr_matrix(zbar), prec, a


def test_sparse_covariate_columns_are_swept_and_the_scan_stays_exact():
    """Sparse covariate columns join the single-site sweep (a reporter's one-hot level),
    dense ones stay in the joint block; the scan still converges to N(m, Q^-1).  Planted
    bugs: the swept columns' prior precisions taken from other columns (max |z| 1.3e7),
    or the dense block's draw written to its columns in reverse order (1.7e4), fail it."""
    X, zbar, prec, a = _problem_with_levels()
    wc = word_step.word_columns(X, 3)
    np.testing.assert_array_equal(wc.swept, [2, 3, 4, 5, 7, 8, 9])
    np.testing.assert_array_equal(wc.dense, [0, 1, 6])
    assert word_step.word_columns(X, 3, sweep_density=0).swept.tolist() == [7, 8, 9]
    mean, cov = _closed_form(X, zbar, prec, a)
    n_classes = N_CLASSES
    eta = np.zeros((n_classes, len(prec)))
    A = np.tile(a[:, None], (1, n_classes))
    precs = np.tile(prec, (n_classes, 1))
    for it in range(N_SCANS):
        eta = word_step.draw_blocked(3, it, wc, zbar, A, precs, eta, 2)
    worst = np.max(np.abs(moment_z(eta, mean, cov)))
    assert worst < TOL, f"blocked Gibbs with swept covariates off: max |z| = {worst:.2f}"


@pytest.mark.parametrize("n_rows, n_parts", [(1, 2), (9, 2), (60, 2), (60, 7)])
def test_dense_block_statistics_and_residual_update_are_the_algebra(n_rows, n_parts):
    """``U_A^T U_A``, ``(U_A^T r^T)^T`` and ``r -= eta_A U_A^T`` against scipy, with empty
    rows, every row range of the Gram's partial sums (a dropped row would show), and the
    same Gram for any number of parts up to rounding."""
    from dolda.sampler.linear_predictors import as_csr_arrays

    rng = np.random.default_rng(n_rows)
    UA = sp.random(n_rows, 6, density=0.5, format="lil", random_state=rng)
    UA[0, :] = 0
    UA = sp.csr_matrix(sp.hstack([np.ones((n_rows, 1)), UA]))
    UA.sort_indices()
    resid = rng.normal(size=(4, n_rows))
    arrays = as_csr_arrays(UA)
    gram, rhs = word_step._dense_block_statistics(*arrays, resid, UA.shape[1], n_parts)
    np.testing.assert_allclose(gram, (UA.T @ UA).toarray(), rtol=1e-13, atol=1e-13)
    assert np.array_equal(gram, gram.T)
    np.testing.assert_allclose(rhs, np.asarray(UA.T @ resid.T).T, rtol=1e-13, atol=1e-13)
    eta_a = rng.normal(size=(4, UA.shape[1]))
    out = resid.copy()
    word_step.subtract_row_products(*arrays, np.ascontiguousarray(eta_a.T), out)
    np.testing.assert_allclose(out, resid - np.asarray(UA @ eta_a.T).T, rtol=0, atol=1e-13)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_scan_starts_from_the_residual_of_the_words_alone(threads):
    """``words_residual`` gives ``a - W eta_w`` (the dense-block columns left out), empty
    rows included, the same bit for bit on any thread count and as the sums of
    ``subtract_row_products`` over ``X`` with those columns' coefficients zero."""
    from dolda.sampler.linear_predictors import as_csr_arrays

    rng = np.random.default_rng(3)
    X = sp.random(50, 9, density=0.3, format="lil", random_state=rng)
    X[4, :] = 0
    X = sp.csr_matrix(sp.hstack([np.ones((50, 1)), X]))
    wc = word_step.word_columns(X, 6)
    eta_w = rng.normal(size=(4, len(wc.swept)))
    a = rng.normal(size=(50, 4))
    with using_threads(threads):
        out = word_step.words_residual(wc, eta_w, a)
    assert out.shape == (4, 50)
    expected = a.T - np.asarray(X[:, wc.swept] @ eta_w.T).T
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-13)
    np.testing.assert_array_equal(out[:, 4], a[4])
    eta_t = np.zeros((X.shape[1], 4))
    eta_t[wc.swept] = eta_w.T
    ref = np.array(a.T, order="C")
    with using_threads(1):
        word_step.subtract_row_products(*as_csr_arrays(X), eta_t, ref)
    np.testing.assert_array_equal(out, ref)


def _scan_reference(ptr, rows, vals, col_sq, prec_w, eta_w, resid, seed, step, n_sweeps):
    """The single-site scan class by class in plain Python: the documented arithmetic."""
    from dolda.sampler.rng import normal, stream

    for l in range(eta_w.shape[0]):
        state = np.uint64(stream(seed, step, l))  # numba hands a uint64 back as a Python int
        r = resid[l]
        for _ in range(n_sweeps):
            for j in range(len(ptr) - 1):
                sl = slice(ptr[j], ptr[j + 1])
                s = 0.0
                for v, i in zip(vals[sl], rows[sl]):
                    s += v * r[i]
                old = eta_w[l, j]
                q = col_sq[j] + prec_w[l, j]
                z, state = normal(state)
                state = np.uint64(state)
                new = (s + col_sq[j] * old) / q + z / np.sqrt(q)
                for v, i in zip(vals[sl], rows[sl]):
                    r[i] -= v * (new - old)
                eta_w[l, j] = new


@pytest.mark.parametrize("n_classes", [1, 2, 3, 4, 5, 8, 9])
@pytest.mark.parametrize("threads", [1, 2])
def test_classes_swept_in_groups_draw_what_each_class_alone_draws(n_classes, threads):
    """Full groups of four and the short last group give every class exactly its own
    scan (same stream, same sums, same order), bit for bit, for two sweeps."""
    rng = np.random.default_rng(n_classes)
    X = sp.random(30, 8, density=0.3, format="csr", random_state=rng)
    X = sp.csr_matrix(sp.hstack([np.ones((30, 1)), X]))
    wc = word_step.word_columns(X, 7)
    eta_w = rng.normal(size=(n_classes, len(wc.swept)))
    prec_w = rng.gamma(2.0, size=eta_w.shape)
    resid = rng.normal(size=(n_classes, 30))
    ref_eta, ref_resid = eta_w.copy(), resid.copy()
    _scan_reference(wc.ptr, wc.rows, wc.vals, wc.col_sq, prec_w, ref_eta, ref_resid, 9, 21, 2)
    grouped = word_step.grouped_residuals(resid)
    G = word_step.CLASS_GROUP
    assert grouped.shape == (-(-n_classes // G), 30, G)
    with using_threads(threads):
        word_step.word_sweeps(wc.ptr, wc.rows, wc.vals, wc.col_sq, prec_w, eta_w, grouped, 9,
                              21, 2)
    np.testing.assert_array_equal(eta_w, ref_eta)
    for l in range(n_classes):
        np.testing.assert_array_equal(grouped[l // G, :, l % G], ref_resid[l])
