"""CG for all classes in lockstep (``dolda.sampler.cg_lockstep``) is the per-class CG.

The lockstep solver must reproduce :func:`dolda.sampler.gaussian._pcg_one` bit
for bit: the same iterates, restarts, iteration counts and failures, for
classes that finish at different rounds, with and without the block and
row-singleton preconditioner, from a warm start, with a class whose
right-hand side is zero, and whatever the number of threads.  The solution is
also checked against an independent dense solve.  Small and fast: the test
selection of the mutation run over ``cg_lockstep.py`` (docs/MUTATION.md).
"""

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from dolda.sampler import gaussian as g

pytestmark = pytest.mark.power


def _problem(seed, D=300, P=60, L=6, singleton_rows=5):
    rng = np.random.default_rng(seed)
    U = sp.random(D, P, density=0.08, random_state=seed, format="lil")
    U[:, 0] = 1.0  # intercept
    for i in range(singleton_rows):  # columns seen in one row only
        col = P - 1 - i
        U[:, col] = 0.0
        U[i, col] = 1.0 + i
    U = sp.csr_matrix(U)
    U.sort_indices()
    a = rng.normal(size=(D, L))
    # prior precisions of very different scales: classes need different iteration counts
    prec = rng.gamma(1.0, 1.0, size=(L, P)) * np.logspace(-3, 2, L)[:, None] + 1e-4
    e1 = rng.normal(size=(L, D))
    e2 = rng.normal(size=(L, P))
    return U, a, prec, e1, e2


def _both(design, a, prec, e1, e2, **kw):
    x1, i1 = g.draw_pcg(design, a, prec, e1, e2, lockstep=False, **kw)
    x2, i2 = g.draw_pcg(design, a, prec, e1, e2, lockstep=True, **kw)
    return (x1, i1), (x2, i2)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("preconditioned", [False, True])
def test_lockstep_is_bitwise_the_per_class_solver(seed, preconditioned):
    U, a, prec, e1, e2 = _problem(seed)
    block = np.r_[0, np.arange(40, 50)] if preconditioned else None
    design = g.sparse_design(U, block, singletons=preconditioned)
    (x1, i1), (x2, i2) = _both(design, a, prec, e1, e2)
    np.testing.assert_array_equal(i2, i1)
    assert len(set(i1.tolist())) > 1  # the classes finished at different rounds
    np.testing.assert_array_equal(x2, x1)
    # and the solutions are what a dense solve gives
    Q_base = (U.T @ U).toarray()
    for l in range(prec.shape[0]):
        Q = Q_base + np.diag(prec[l])
        c = U.T @ (a[:, l] + e1[l]) + np.sqrt(prec[l]) * e2[l]
        np.testing.assert_allclose(x2[l], np.linalg.solve(Q, c), rtol=1e-5, atol=1e-7)


def test_lockstep_failures_warm_start_and_zero_right_hand_side():
    U, a, prec, e1, e2 = _problem(3)
    a[:, 2] = 0.0
    e1[2] = 0.0
    e2[2] = 0.0  # class 2: c = 0, solution 0 in no iterations
    design = g.sparse_design(U)
    # an iteration cap most classes hit: -1, with the partial iterate kept alike
    (x1, i1), (x2, i2) = _both(design, a, prec, e1, e2, max_iter=4)
    np.testing.assert_array_equal(i2, i1)
    assert i1[2] == 0 and np.all(x2[2] == 0) and np.count_nonzero(i1 == -1) >= 3
    np.testing.assert_array_equal(x2, x1)
    # from a warm start near the solution: few iterations, still identical
    exact, _ = g.draw_pcg(design, a, prec, e1, e2)
    start = exact + 1e-3 * np.random.default_rng(4).normal(size=exact.shape)
    (x1, i1), (x2, i2) = _both(design, a, prec, e1, e2, start=start)
    np.testing.assert_array_equal(i2, i1)
    np.testing.assert_array_equal(x2, x1)
    # a start that already solves the system: zero iterations, x unchanged
    (x1, i1), (x2, i2) = _both(design, a, prec, e1, e2, start=x2)
    assert np.all(i2 == 0) and np.all(i1 == 0)
    np.testing.assert_array_equal(x2, x1)


@pytest.mark.parametrize("tol", [1e-15, 1e-16])
def test_lockstep_restarts_like_the_per_class_solver(tol):
    # At tolerances near the rounding floor CG's recurrence claims convergence that
    # the true residual denies: CG restarts, some classes more than once (at 1e-15
    # one class converges only after its second restart) and some give up after
    # CG_MAX_RESTARTS (-1).  Both solvers must restart and give up alike.
    U, a, prec, e1, e2 = _problem(1, D=200, P=40, L=4)
    design = g.sparse_design(U)
    (x1, i1), (x2, i2) = _both(design, a, prec, e1, e2, tol=tol)
    np.testing.assert_array_equal(i2, i1)
    np.testing.assert_array_equal(x2, x1)
    if tol == 1e-16:
        assert np.any(i1 == -1)


def test_lockstep_does_not_depend_on_the_number_of_threads():
    U, a, prec, e1, e2 = _problem(6, L=7)
    design = g.sparse_design(U, np.r_[0, np.arange(30, 40)], singletons=True)
    n = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        x1, i1 = g.draw_pcg(design, a, prec, e1, e2)
    finally:
        numba.set_num_threads(n)
    x2, i2 = g.draw_pcg(design, a, prec, e1, e2)
    np.testing.assert_array_equal(i2, i1)
    np.testing.assert_array_equal(x2, x1)
