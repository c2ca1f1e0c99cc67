"""The sparse eta-step applies the preconditioner it is asked for (mutation run of
``sparse_eta.py``, docs/MUTATION.md)."""

import numpy as np
import scipy.sparse as sp

from dolda.sampler import probit as probit_blocks
from dolda.sampler import sparse_eta


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
