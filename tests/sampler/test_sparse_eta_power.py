"""The sparse eta-step applies the preconditioner it is asked for (mutation run of
``sparse_eta.py``, docs/MUTATION.md)."""

import numpy as np
import scipy.sparse as sp

from dolda.sampler import probit_blocks as probit_blocks
from dolda.sampler import sparse_eta

import pytest

pytestmark = pytest.mark.power


def test_block_preconditioner_is_applied_and_pays_on_the_intercept_topic_direction():
    """``U = [1, x, zbar]`` under a nearly flat prior: the topic proportions sum to the
    intercept, so ``Q`` is nearly singular along a direction the exact intercept-and-topics
    block removes.  No covariate column is seen in a single row (no row-singleton blocks), so
    without the block the preconditioner is Jacobi: the block must cut CG's iterations by
    half at least, and both draws give the same linear predictors to the solver tolerance."""
    rng = np.random.default_rng(3)
    n_docs, n_topics = 80, 6
    X = sp.csr_matrix(np.column_stack([np.ones(n_docs), rng.normal(size=n_docs)]))
    lengths = np.full(n_docs, 30)
    ndk = np.stack([rng.multinomial(30, p) for p in rng.dirichlet(np.full(n_topics, 0.5),
                                                                  n_docs)])
    zbar = [sparse_eta.zbar_csr(np.r_[0, np.cumsum(lengths[:40])], ndk[:40]),
            sparse_eta.zbar_csr(np.r_[0, np.cumsum(lengths[40:])], ndk[40:])]
    P = X.shape[1] + n_topics
    prior = probit_blocks.ProbitPrior(False, np.zeros(P, bool), 1e8)
    state = probit_blocks.initial_state(n_docs, 2, P)
    a = rng.normal(size=(n_docs, 2))
    out, its = {}, {}
    for pre in sparse_eta.PRECONDITIONERS:
        info = {}
        out[pre] = sparse_eta.eta_step(4, 1, state, X, zbar, [a[:40], a[40:]], prior, "cg", 1,
                                       pre, info)
        its[pre] = info["cg_iterations"]
    assert np.all(its["block"] <= 0.5 * its["jacobi"]), its
    U = sparse_eta.design(X, zbar).toarray()
    mu = {pre: U @ out[pre].eta.T for pre in out}  # the well-determined part of the draw
    assert np.max(np.abs(mu["block"] - mu["jacobi"])) < 1e-4 * np.max(np.abs(mu["jacobi"]))


def test_block_preconditioner_takes_the_row_singleton_blocks_and_jacobi_does_not():
    """``U = [1, x, two rare one-hot fields (300 levels each), zbar]``, 80 rows: most rows hold
    two levels seen in that row only, whose 2 x 2 block of ``Q`` is nearly singular under the
    nearly flat Horseshoe scales given to those columns (lambda^2 up to 1e6).  The intercept
    and topic columns are well conditioned (precision 1), so the block preconditioner's gain
    comes from its row-singleton blocks alone: at least half of Jacobi's iterations saved
    (measured: 77 against 699 and 489), and the "jacobi" peer must not take them."""
    rng = np.random.default_rng(5)
    n_docs, n_topics, levels = 80, 4, 300
    rare = [np.eye(levels)[rng.integers(0, levels, n_docs)] for _ in range(2)]
    X = sp.csr_matrix(np.hstack([np.ones((n_docs, 1)), rng.normal(size=(n_docs, 1))] + rare))
    ndk = np.stack([rng.multinomial(30, p) for p in rng.dirichlet(np.full(n_topics, 0.5),
                                                                  n_docs)])
    zbar = [sparse_eta.zbar_csr(np.arange(n_docs + 1) * 30, ndk)]
    P = X.shape[1] + n_topics
    shrunk = np.ones(P, bool)
    shrunk[0] = False
    prior = probit_blocks.ProbitPrior(True, shrunk, 1.0)
    lam2 = np.ones((2, P))
    lam2[:, 2:2 + 2 * levels] = 10.0 ** rng.uniform(0, 6, (2, 2 * levels))
    state = probit_blocks.initial_state(n_docs, 2, P)._replace(lam2=lam2)
    a = rng.normal(size=(n_docs, 2))
    its = {}
    for pre in sparse_eta.PRECONDITIONERS:
        info = {}
        sparse_eta.eta_step(4, 1, state, X, zbar, [a], prior, "cg", 1, pre, info)
        its[pre] = info["cg_iterations"]
    assert np.all(its["block"] <= 0.5 * its["jacobi"]), its


def test_topic_proportions_of_a_shard_are_counts_over_lengths():
    """``zbar_d = n_{d,.} / N_d`` as CSR; an empty document is a zero row, a one-token document
    a unit row."""
    doc_ptr = np.array([0, 3, 3, 4, 6])
    ndk = np.array([[2, 0, 1], [0, 0, 0], [0, 1, 0], [1, 0, 1]])
    z = sparse_eta.zbar_csr(doc_ptr, ndk)
    assert sp.issparse(z) and z.format == "csr" and z.nnz == 5
    np.testing.assert_array_equal(z.toarray(), [[2 / 3, 0, 1 / 3], [0, 0, 0], [0, 1, 0],
                                                [0.5, 0, 0.5]])
