"""The parallel linear-predictor kernels (:mod:`dolda.sampler.linear_predictors`) against
scipy: ``log F`` over its whole range, the sparse product, the fused DO pointwise
log-likelihood (the array path of :func:`pointwise_do_loglik` is the reference)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.special import log_ndtr as scipy_log_ndtr

from dolda.evaluate.diagnostics import pointwise_do_loglik
from dolda.sampler import linear_predictors as lp
from dolda.sampler.threads import using_threads


def test_log_ndtr_matches_scipy_from_the_far_left_tail_to_the_right():
    x = np.r_[np.linspace(-200, 40, 4001), -37.0, -36.999, 5.0, 5.001, 0.0]
    got = np.array([lp.log_ndtr(v) for v in x])
    want = scipy_log_ndtr(x)
    # relative error 1e-12 in the bulk, absolute 1e-10 in the asymptotic tail
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-10)


def test_do_score_matches_the_two_log_cdfs():
    x = np.r_[np.linspace(-60, 60, 2401), 0.0, 37.0, -37.0, 36.99]
    got = np.array([lp.do_score(v) for v in x])
    np.testing.assert_allclose(got, scipy_log_ndtr(x) - scipy_log_ndtr(-x),
                               rtol=1e-12, atol=1e-10)


def _design(seed=0, n=300, p=60, density=0.1):
    rng = np.random.default_rng(seed)
    U = sp.random(n, p, density=density, random_state=seed, format="csr")
    U.data *= 3.0
    return U, rng


@pytest.mark.parametrize("threads", [1, 2])
def test_csr_draw_products_are_scipys_product(threads):
    U, rng = _design()
    eta = rng.normal(size=(5, 7, U.shape[1])).astype(np.float32)
    out = np.empty((5, U.shape[0], 7))
    with using_threads(threads):
        lp.csr_draw_products(*lp.as_csr_arrays(U), lp.draws_by_column(eta), out)
    want = np.stack([U @ e.astype(np.float64).T for e in eta])
    np.testing.assert_allclose(out, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("threads", [1, 2])
def test_fused_pointwise_loglik_matches_the_array_path(threads):
    """The sparse (fused) path against the dense one on the same numbers, several slices
    of draws, large scores included (a planted sign error in the score or a wrong class
    index moves it by far more than the tolerance)."""
    U, rng = _design(1)
    S, L = 23, 7
    eta = rng.normal(scale=1.5, size=(S, L, U.shape[1])).astype(np.float32)
    y = rng.integers(0, L, U.shape[0])
    with using_threads(threads):
        got = pointwise_do_loglik(U, eta, y, max_block=3 * L * U.shape[1])
    want = pointwise_do_loglik(U.toarray(), eta, y)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    assert np.all(got <= 0)


@pytest.mark.parametrize("threads", [1, 2])
def test_ovr_row_loglik_matches_scipy(threads):
    rng = np.random.default_rng(4)
    mu = rng.normal(scale=4.0, size=(6, 50, 5))
    mu[0, 0, 0] = -45.0  # the asymptotic tail
    y = rng.integers(0, 5, 50)
    sign = np.where(np.arange(5)[None, :] == y[:, None], 1.0, -1.0)
    out = np.empty((6, 50))
    with using_threads(threads):
        lp.ovr_row_loglik(mu, y, out)
    np.testing.assert_allclose(out, scipy_log_ndtr(sign * mu).sum(axis=2), rtol=1e-12,
                               atol=1e-10)
