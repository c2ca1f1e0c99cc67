"""The shard-local statistics of the eta-step with a sparse zbar equal the dense products."""

import numpy as np
import pytest

from dolda.sampler import shard as S
from dolda.sampler.threads import using_threads


def dense_regressors(shard, ndk):
    """Reference ``U_s = [x_d, zbar_d]``, zbar_d = n_{d,.} / N_d (zeros for empty documents)."""
    n = np.maximum(np.diff(shard.doc_ptr), 1).astype(np.float64)
    return np.hstack([shard.X, ndk / n[:, None]])


@pytest.fixture(scope="module")
def problem():
    rng = np.random.default_rng(1)
    n_docs, n_topics, n_x, n_classes = 400, 30, 3, 4
    lengths = rng.integers(0, 40, n_docs)
    lengths[:3] = 0  # empty documents: a row of zeros in zbar
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ndk = np.zeros((n_docs, n_topics), np.int32)
    for d in range(n_docs):
        used = rng.integers(1, n_topics)  # documents use few topics
        np.add.at(ndk[d], rng.integers(0, used, lengths[d]), 1)
    X = np.column_stack([np.ones(n_docs), rng.normal(size=(n_docs, n_x - 1))])
    shard = S.Shard(np.zeros(doc_ptr[-1], np.int32), doc_ptr, X, np.zeros(n_docs, np.int64),
                    0, 0, None, None)
    a = rng.normal(size=(n_docs, n_classes))
    eta = rng.normal(size=(n_classes, n_x + n_topics))
    return shard, ndk, a, eta


def test_sparse_regressors_equal_dense(problem):
    shard, ndk, _, _ = problem
    U = S.topic_regressors(shard, ndk)
    np.testing.assert_allclose(U.dense(), dense_regressors(shard, ndk), rtol=0, atol=1e-15)


def test_dense_and_sparse_paths_hold_the_same_zbar(problem):
    """One zbar kernel for both eta-step paths: the dense path's CSR is the sparse path's
    to the last bit, and its CSC is the same matrix by columns (documents increasing)."""
    from dolda.sampler import sparse_eta

    shard, ndk, _, _ = problem
    U = S.topic_regressors(shard, ndk)
    ref = sparse_eta.zbar_csr(shard.doc_ptr, ndk)
    for mine, theirs in ((U.rptr, ref.indptr), (U.ridx, ref.indices), (U.rval, ref.data)):
        np.testing.assert_array_equal(mine, theirs)
    csc = ref.tocsc()
    csc.sort_indices()
    for mine, theirs in ((U.cptr, csc.indptr), (U.cdoc, csc.indices), (U.cval, csc.data)):
        np.testing.assert_array_equal(mine, theirs)


def test_sparse_cross_products_equal_dense_and_are_symmetric(problem):
    shard, ndk, a, eta = problem
    U = S.topic_regressors(shard, ndk)
    gram, rhs = S.sparse_cross_products(U, a)
    dense = dense_regressors(shard, ndk)
    np.testing.assert_allclose(gram, dense.T @ dense, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rhs, (dense.T @ a).T, rtol=1e-12, atol=1e-12)
    assert np.array_equal(gram, gram.T)  # exactly: (p, q) and (q, p) sum the same products
    np.testing.assert_allclose(S.sparse_row_products(U, eta), dense @ eta.T, rtol=1e-12,
                               atol=1e-12)


def test_sparse_products_do_not_depend_on_the_thread_count(problem):
    shard, ndk, a, eta = problem
    out = []
    for n in (1, 2):
        with using_threads(n):
            U = S.topic_regressors(shard, ndk)
            out.append(S.sparse_cross_products(U, a) + (S.sparse_row_products(U, eta),))
    for one, two in zip(*out):
        np.testing.assert_array_equal(one, two)


def test_cross_products_are_the_sums_in_document_order_to_the_last_bit(problem):
    # the lower triangle is computed and mirrored; every entry must still be the sum of
    # u_dp u_dq over documents in increasing order (what the full rows summed, and what
    # the seeded chains' eta draws depend on); np.add.accumulate adds left to right
    shard, ndk, a, _ = problem
    U = S.topic_regressors(shard, ndk)
    dense = U.dense()  # zbar as the kernels hold it (n_dk / N_d)
    want_gram = np.add.accumulate(dense[:, :, None] * dense[:, None, :], axis=0)[-1]
    want_rhs = np.add.accumulate(dense[:, None, :] * a[:, :, None], axis=0)[-1]
    for n in (1, 2, 3):
        with using_threads(n):
            gram, rhs = S.sparse_cross_products(U, a)
        np.testing.assert_array_equal(gram, want_gram)
        np.testing.assert_array_equal(rhs, want_rhs)


def test_row_products_are_the_sums_over_columns_in_order_to_the_last_bit(problem):
    # mu_dl = sum_p u_dp eta_lp, covariates then topics in increasing order (the kernel
    # runs the L sums of a document side by side over eta^T; the order must not change)
    shard, ndk, _, eta = problem
    U = S.topic_regressors(shard, ndk)
    dense = U.dense()
    want = np.add.accumulate(dense[:, None, :] * eta[None, :, :], axis=2)[..., -1]
    for n in (1, 2, 3):
        with using_threads(n):
            np.testing.assert_array_equal(S.sparse_row_products(U, eta), want)
            np.testing.assert_array_equal(S.sparse_row_products(U, np.asfortranarray(eta)), want)
