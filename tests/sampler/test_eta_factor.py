"""The dense eta-step factors ``Q_l`` in place with LAPACK (``probit.draw_coefficients``).

It must give the very draws of the code it replaced, ``scipy.linalg.cholesky`` +
``cho_solve`` + ``solve_triangular`` on a fresh copy of ``gram + diag(prec_l)`` per class
(written out below as the reference): the same LAPACK routines on the same numbers, so the
tests ask for equality to the last bit (the brief allowed 1e-10), on the serial and the
threaded path, and on a seeded DOLDA chain whose z-sweeps read the eta drawn.
"""

import threading

import numpy as np
import pytest
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular
from threadpoolctl import threadpool_limits

from dolda.sampler import gibbs_iteration as chain
from dolda.sampler import probit_blocks as probit_blocks


def reference_coefficients(gram, rhs, prec, normals, n_jobs=1):
    """The eta-step as it was: one fresh C-ordered copy of Q_l per class, scipy's wrappers,
    on one BLAS thread (as the old code ran every class from PARALLEL_MIN_COLUMNS columns
    on; a multi-threaded factorisation rounds differently, so a machine whose BLAS runs
    several threads by default would otherwise compare two different computations)."""
    rows = []
    with threadpool_limits(limits=1, user_api="blas"):
        for l in range(rhs.shape[0]):
            q = gram.copy()
            q[np.diag_indices_from(q)] += prec[l]
            c = cholesky(q, lower=True, check_finite=False)
            mean = cho_solve((c, True), rhs[l], check_finite=False)
            rows.append(mean + solve_triangular(c, normals[l], lower=True, trans="T",
                                                check_finite=False))
    return np.stack(rows)


def _problem(n_rows, n_cols, n_classes, seed=0):
    g = np.random.default_rng(seed)
    U = g.normal(size=(n_rows, n_cols)) * g.uniform(0.1, 2.0, n_cols)
    gram = U.T @ U
    # not exactly symmetric, as a sparse product may leave it: only the lower triangle counts
    gram[np.triu_indices(n_cols, 1)] *= 1.0 + 1e-9 * g.normal(size=n_cols * (n_cols - 1) // 2)
    rhs = g.normal(size=(n_classes, n_cols)) @ np.diag(np.sqrt(np.diag(gram)))
    prec = np.exp(g.normal(0.0, 3.0, size=(n_classes, n_cols)))
    normals = g.standard_normal((n_classes, n_cols))
    return gram, rhs, prec, normals


@pytest.mark.parametrize("n_cols", [40, probit_blocks.PARALLEL_MIN_COLUMNS + 44])
@pytest.mark.parametrize("n_jobs", [1, 2, 3])
@pytest.mark.parametrize("order", ["C", "F"])
def test_the_draw_is_the_scipy_cholesky_draw_to_the_last_bit(n_cols, n_jobs, order):
    gram, rhs, prec, normals = _problem(n_cols + 30, n_cols, 5)
    want = reference_coefficients(gram, rhs, prec, normals)
    got = probit_blocks.draw_coefficients(np.asarray(gram, order=order), rhs, prec, normals,
                                          n_jobs=n_jobs)
    np.testing.assert_array_equal(got, want)
    # and the inputs are left alone (the factorisation works in scratch arrays)
    np.testing.assert_array_equal(gram, _problem(n_cols + 30, n_cols, 5)[0])


def test_the_draw_is_the_conditional_mean_plus_the_factor_noise():
    # the algebra, not only the agreement with the old code: eta = Q^-1 b + C^-T z
    gram, rhs, prec, normals = _problem(80, 30, 3, seed=1)
    eta = probit_blocks.draw_coefficients(gram, rhs, prec, normals)
    for l in range(3):
        q = np.tril(gram) + np.tril(gram, -1).T + np.diag(prec[l])
        c = np.linalg.cholesky(q)
        np.testing.assert_allclose(eta[l], np.linalg.solve(q, rhs[l])
                                   + np.linalg.solve(c.T, normals[l]), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("n_cols", [20, probit_blocks.PARALLEL_MIN_COLUMNS])
def test_a_matrix_that_is_not_positive_definite_is_refused(n_cols):
    gram = np.eye(n_cols)
    prec = np.ones((2, n_cols))
    prec[1, 3] = -5.0
    with pytest.raises(LinAlgError):
        probit_blocks.draw_coefficients(gram, np.zeros((2, n_cols)), prec,
                                        np.zeros((2, n_cols)), n_jobs=2)



@pytest.mark.parametrize("n_jobs", [0, 1, 2, 3, 7])
def test_classes_are_shared_among_n_jobs_threads_the_caller_taking_the_first_share(
        monkeypatch, n_jobs):
    # draw_coefficients' documented split: below PARALLEL_MIN_COLUMNS (and by default,
    # n_jobs = 1) one share of every class on the calling thread; from it, class l on share
    # l mod n (n = min(n_jobs, L)), share 0 on the calling thread and each other share once
    # on a worker; on both sides of the threshold and at it
    calls = []
    real = probit_blocks._draw_classes

    def spy(gram_f, prec, rhs, normals, classes, out, nogil=False):
        calls.append((threading.get_ident(), list(classes), nogil))
        return real(gram_f, prec, rhs, normals, classes, out, nogil)

    monkeypatch.setattr(probit_blocks, "_draw_classes", spy)
    main = threading.get_ident()
    least = probit_blocks.PARALLEL_MIN_COLUMNS
    for n_cols, jobs in ((40, n_jobs), (least - 1, n_jobs), (least, n_jobs),
                         (least + 44, n_jobs), (least + 44, None)):
        calls.clear()
        gram, rhs, prec, normals = _problem(n_cols + 10, n_cols, 5, seed=2)
        kwargs = {} if jobs is None else {"n_jobs": jobs}  # None: the default, one thread
        with threadpool_limits(limits=2, user_api="blas"):  # the draw may not use them
            got = probit_blocks.draw_coefficients(gram, rhs, prec, normals, **kwargs)
        np.testing.assert_array_equal(got, reference_coefficients(gram, rhs, prec, normals))
        n = 1 if n_cols < least or jobs is None else max(1, min(jobs, 5))  # 0: one
        assert sorted(tuple(c) for _, c, _ in calls) == [tuple(range(j, 5, n)) for j in range(n)]
        assert [c for t, c, _ in calls if t == main] == [list(range(0, 5, n))]
        # shared among threads, LAPACK is called without the GIL (lapack_nogil)
        assert all(nogil == (n > 1) for _, _, nogil in calls)


def _chain(n_topics, n_jobs, seed=3, n_docs=150):
    g = np.random.default_rng(seed)
    lengths = g.integers(20, 60, n_docs)
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    n_words = 200
    tokens = g.integers(0, n_words, doc_ptr[-1]).astype(np.int32)
    n_classes = 4
    y = g.integers(0, n_classes, n_docs).astype(np.int64)
    data = chain.TopicData(tokens, doc_ptr, n_words, np.ones((n_docs, 1)), y, n_classes)
    shrunk = np.r_[False, np.ones(n_topics, bool)]
    prior = probit_blocks.ProbitPrior(True, shrunk, 100.0)
    config = chain.DOLDAConfig(n_topics, 0.1, 0.01, prior, "exact", n_jobs)
    return data, config, chain.init_state(seed, data, config)


def _run(data, config, state, n_iter):
    shards = chain.whole_corpus_shards(data, 2)
    trace = []
    for it in range(n_iter):
        state, _ = chain.dolda_step(3, it, state, data, config, shards)
        trace.append((state.probit.eta.copy(), state.probit.tau2.copy(), state.z.copy()))
    return trace


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_a_seeded_dolda_chain_draws_what_the_old_eta_step_drew(monkeypatch, n_jobs):
    # P = 1 + 300 columns: the threaded path; the z-sweeps read each eta, so any
    # difference in a draw would spread to the topics of the later iterations
    n_topics = probit_blocks.PARALLEL_MIN_COLUMNS + 44
    new = _run(*_chain(n_topics, n_jobs), 4)
    monkeypatch.setattr(probit_blocks, "draw_coefficients", reference_coefficients)
    old = _run(*_chain(n_topics, n_jobs), 4)
    for (eta_new, tau_new, z_new), (eta_old, tau_old, z_old) in zip(new, old):
        np.testing.assert_allclose(eta_new, eta_old, rtol=0, atol=1e-10)
        np.testing.assert_array_equal(eta_new, eta_old)  # in fact bit for bit
        np.testing.assert_array_equal(tau_new, tau_old)
        np.testing.assert_array_equal(z_new, z_old)
