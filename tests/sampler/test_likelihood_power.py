"""The monitoring log-likelihoods (``dolda.sampler.likelihood`` and ``topic_likelihood``)
against formulas written here with scipy.

Small and fast: they are also the test selections of the mutation runs over
those two modules (docs/MUTATION.md).
"""

import math

import numpy as np
import pytest
from scipy.special import gammaln, log_ndtr, logsumexp

from dolda.sampler import counts as C
from dolda.sampler import topic_likelihood as T
from dolda.sampler.likelihood import do_log_likelihood, log_normal_cdf, log_normal_odds

pytestmark = pytest.mark.power

# ----------------------------------------------------------------- DO probit


@pytest.mark.parametrize("x", [-1e4, -300.0, -45.0, -30.5, -30.0, -29.99, -29.0, -8.0, -1.0,
                               0.0, 0.3, 5.0, 30.0, 40.0])
def test_log_normal_cdf_matches_scipy_on_both_sides_of_the_series_switch(x):
    """erfc above -30; below, the three-term Mills series, whose truncation error is
    ~2e-8 in absolute terms at -30 (15/x^6) and shrinks further out: 1e-7 there."""
    if x > -30.0:
        assert log_normal_cdf(x) == pytest.approx(float(log_ndtr(x)), rel=1e-13, abs=1e-15)
    else:
        assert abs(log_normal_cdf(x) - float(log_ndtr(x))) < 1e-7


@pytest.mark.parametrize("x", [0.0, 1e-300, 1e-9, 0.3, 1.0, 5.0, 8.0, 29.0, 29.99, 30.0, 30.5,
                               45.0, 300.0, 1e4])
def test_log_normal_odds_is_the_difference_of_the_two_log_cdfs(x):
    """``log F(x) - log F(-x)`` from one tail (``erfc`` below 30, the Mills series from 30 on,
    where the tail's own log carries the whole value); odd in ``x``, exactly."""
    for v in (x, -x):
        want = float(log_ndtr(v) - log_ndtr(-v))
        got = log_normal_odds(v)
        if abs(v) < 30.0:
            assert got == pytest.approx(want, rel=1e-13, abs=1e-15)
        else:
            assert abs(got - want) < 1e-7
    assert log_normal_odds(-x) == -log_normal_odds(x)
    assert math.isnan(log_normal_odds(float("nan")))
    assert log_normal_odds(float("inf")) == math.inf and log_normal_odds(-math.inf) == -math.inf


def test_do_log_likelihood_matches_scipy_over_several_row_blocks():
    rng = np.random.default_rng(1)
    mu = rng.normal(scale=3.0, size=(2100, 4))  # blocks of 1024: two full, one partial
    mu[:3] = [[-45.0, 40.0, 0.0, -3.0], [35.0, -31.0, 2.0, 1.0], [-60.0, -50.0, -40.0, -35.0]]
    y = rng.integers(0, 4, len(mu))
    scores = log_ndtr(mu) - log_ndtr(-mu)
    rows = scores[np.arange(len(mu)), y] - logsumexp(scores, axis=1)
    assert do_log_likelihood(mu, y) == pytest.approx(float(rows.sum()), rel=1e-12, abs=1e-6)
    # each block counted once: the last row alone, and rows 1023-1025 across a block edge
    for sl in (slice(2099, 2100), slice(1023, 1026), slice(0, 1)):
        assert do_log_likelihood(np.ascontiguousarray(mu[sl]), y[sl]) == pytest.approx(
            float(rows[sl].sum()), rel=1e-12, abs=1e-6)


# ----------------------------------------------------------------------- LDA


def _counts(seed=0, D=7, K=4, V=9):
    rng = np.random.default_rng(seed)
    ndk = rng.integers(0, 6, size=(D, K)).astype(np.int32)
    nkw = rng.integers(0, 4, size=(K, V)).astype(np.int32)
    nkw[nkw == 1] = 0
    nkw[0] = 0  # an empty topic
    ndk[2] = 0  # an empty document
    return ndk, nkw


def _doc_ref(ndk, alpha):
    K = ndk.shape[1]
    return sum(gammaln(K * alpha) - gammaln(row.sum() + K * alpha)
               + np.sum(gammaln(row + alpha) - gammaln(alpha)) for row in ndk)


def _topic_ref(nkw, beta):
    V = nkw.shape[1]
    return sum(gammaln(V * beta) - gammaln(row.sum() + V * beta)
               + np.sum(gammaln(row + beta) - gammaln(beta)) for row in nkw)


def _sparse(nkw):
    rows, cols = np.nonzero(nkw)
    ptr = np.zeros(nkw.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=nkw.shape[0]), out=ptr[1:])
    return C.SparseCounts(ptr, cols.astype(np.int32), nkw[rows, cols].astype(np.int32))


@pytest.mark.parametrize("alpha, beta", [(0.3, 0.05), (2.0, 1.5)])
def test_lda_log_likelihood_parts_match_the_gammaln_formula(alpha, beta):
    ndk, nkw = _counts()
    doc, topic = _doc_ref(ndk, alpha), _topic_ref(nkw, beta)
    assert T.lda_doc_log_likelihood(ndk, alpha) == pytest.approx(doc, rel=1e-12)
    assert T.lda_topic_log_likelihood(nkw, beta) == pytest.approx(topic, rel=1e-12)
    assert T.lda_log_likelihood(ndk, nkw, alpha, beta) == pytest.approx(doc + topic, rel=1e-12)
    sc, V = _sparse(nkw), nkw.shape[1]
    assert T.lda_topic_log_likelihood_sparse(sc, V, beta) == pytest.approx(topic, rel=1e-12)
    assert T.lda_log_likelihood_sparse(ndk, sc, V, alpha, beta) == pytest.approx(
        doc + topic, rel=1e-12)


def test_shard_parts_combine_to_the_whole_likelihood():
    ndk, nkw = _counts(1, D=12)
    alpha, beta = 0.4, 0.02
    parts = [T.lda_doc_log_likelihood(ndk[a:b], alpha) for a, b in ((0, 5), (5, 6), (6, 12))]
    got = T.combine_log_likelihood(parts, _sparse(nkw), nkw.shape[1], beta)
    assert got == pytest.approx(_doc_ref(ndk, alpha) + _topic_ref(nkw, beta), rel=1e-12)
    assert math.isfinite(got)
