"""Tests aimed at single-point sampler bugs that the older suite let through (issue 14).

Each test names the bug it was shown to catch (planted by hand, run, reverted;
see docs/MUTATION.md).  They go through the stable entry points:
``dolda.sampler.lda`` (re-exported kernels), ``dolda.sampler.gibbs_iteration.dolda_step``,
``dolda.sampler.gaussian.draw_pcg``, ``DOProbit`` and ``DOLDA``.
"""

import numpy as np
import pytest
from scipy import stats

from dolda import DOLDA, DOProbit
from dolda.sampler import gibbs_iteration as chain, gaussian
from dolda.sampler import lda as kernels
from dolda.sampler import probit_blocks as probit_blocks
from dolda import Prediction, Text, Words

pytestmark = pytest.mark.power

# ------------------------------------------------------------------ alias tables


def test_every_partial_alias_table_reproduces_its_own_words_column():
    """Bug caught: table ``r`` built from word ``r`` instead of the ``r``-th word with a table."""
    rng = np.random.default_rng(0)
    K, V = 12, 9
    phi_wk = rng.dirichlet(np.full(K, 0.4), size=V)  # (V, K); columns differ per word
    has_table = np.array([0, 1, 0, 1, 1, 0, 0, 1, 0], bool)
    row = np.where(has_table, np.cumsum(has_table) - 1, -1).astype(np.int32)
    np.testing.assert_array_equal(row, kernels.alias_rows(has_table * 500, 128))
    t = kernels.build_alias_tables(phi_wk, row)
    assert t.prob.shape == (has_table.sum(), K)
    for w in np.flatnonzero(has_table):
        r = row[w]
        implied = t.prob[r] / K
        np.add.at(implied, t.alias[r], (1 - t.prob[r]) / K)
        np.testing.assert_allclose(implied, phi_wk[w] / phi_wk[w].sum(), atol=1e-12)
    np.testing.assert_allclose(t.mass, phi_wk.sum(axis=1), rtol=1e-12)


def test_alias_tables_of_many_words_are_all_built():
    """More table words than one parallel chunk (256) holds, some with tables, some
    without: every table still matches its column.  Mutants caught: chunk bounds and the
    chunk count (1025 rows: the last one is alone in the fifth chunk)."""
    rng = np.random.default_rng(4)
    V, K = 1400, 5
    phi_wk = rng.dirichlet(np.full(K, 0.5), size=V)
    has_table = np.zeros(V, bool)
    has_table[rng.choice(V, 4 * 256 + 1, replace=False)] = True  # one row past 4 chunks
    row = kernels.alias_rows(np.where(has_table, 200, 10))
    t = kernels.build_alias_tables(phi_wk, row)
    w = np.flatnonzero(has_table)
    implied = np.zeros((len(w), K))
    for i, r in enumerate(row[w]):
        implied[i] = t.prob[r] / K
        np.add.at(implied[i], t.alias[r], (1 - t.prob[r]) / K)
    np.testing.assert_allclose(implied, phi_wk[w] / phi_wk[w].sum(axis=1, keepdims=True),
                               atol=1e-12)


def test_a_single_alias_table_is_built():
    """One word with a table (one row, one chunk).  Mutant caught: a chunk count of 0."""
    phi_wk = np.array([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3], [0.25, 0.25, 0.5]])
    row = kernels.alias_rows(np.array([5, 300, 7]), 128)
    np.testing.assert_array_equal(row, [-1, 0, -1])
    # "at least min_tokens": the boundary is included
    np.testing.assert_array_equal(kernels.alias_rows(np.array([127, 128, 129]), 128), [-1, 0, 1])
    t = kernels.build_alias_tables(phi_wk, row)
    implied = t.prob[0] / 3
    np.add.at(implied, t.alias[0], (1 - t.prob[0]) / 3)
    np.testing.assert_allclose(implied, phi_wk[1], atol=1e-12)


def test_alias_table_of_an_all_zero_column_is_uniform():
    """A word whose float32 topic column underflowed to zeros gets a uniform table."""
    phi_wk = np.array([[0.2, 0.5, 0.3], [0.0, 0.0, 0.0]])
    t = kernels.build_alias_tables(phi_wk)
    np.testing.assert_allclose(t.prob[1], 1.0)
    np.testing.assert_array_equal(t.alias[1], [0, 1, 2])
    assert t.mass[1] == 0.0


def test_alias_draws_follow_the_column():
    """Draws from one table (through ``alias_draw``) follow ``phi_{.,w}``: chi-square."""
    from numba import njit

    from dolda.sampler.rng import stream

    @njit
    def draw_many(prob_row, alias_row, n, seed):
        out = np.empty(n, np.int64)
        state = stream(seed, 1, 0)
        for i in range(n):
            k, state = kernels.alias_draw(prob_row, alias_row, state)
            out[i] = k
        return out

    rng = np.random.default_rng(1)
    phi_wk = rng.dirichlet(np.full(7, 0.8), size=3)
    t = kernels.build_alias_tables(phi_wk)
    n = 60_000
    for w in range(3):
        counts = np.bincount(draw_many(t.prob[w], t.alias[w], n, 5 + w), minlength=7)
        expected = n * phi_wk[w] / phi_wk[w].sum()
        assert stats.chisquare(counts, expected).pvalue > 1e-4


# ------------------------------------------------------------------ CG eta-step


def test_cg_draw_solves_its_system_to_a_small_residual_computed_here():
    """Bug caught: CG tolerance 1e-2 instead of 1e-8 (the older test compared with the
    constant itself).  The relative residual and the error against a direct solve are
    computed here, from the system's definition."""
    import scipy.sparse as sp

    rng = np.random.default_rng(7)
    D, P, L = 300, 40, 3
    U = sp.random(D, P, density=0.15, random_state=3, format="csr") * 3.0
    U = sp.hstack([sp.csr_matrix(np.ones((D, 1))), U], format="csr")
    P += 1
    a = rng.normal(size=(D, L))
    prec = np.exp(rng.uniform(-3, 3, size=(L, P)))
    e1, e2 = rng.normal(size=(L, D)), rng.normal(size=(L, P))
    eta, _ = gaussian.draw_pcg(gaussian.sparse_design(U), a, prec, e1, e2)
    Ud = U.toarray()
    for l in range(L):
        Q = Ud.T @ Ud + np.diag(prec[l])
        c = Ud.T @ (a[:, l] + e1[l]) + np.sqrt(prec[l]) * e2[l]
        exact = np.linalg.solve(Q, c)
        assert np.linalg.norm(c - Q @ eta[l]) <= 1e-6 * np.linalg.norm(c)
        assert np.max(np.abs(eta[l] - exact)) <= 1e-6 * (1 + np.max(np.abs(exact)))


# ------------------------------------------------------------------ Phi draws

def _sparse_counts(nkw):
    rows, cols = np.nonzero(nkw)
    ptr = np.zeros(nkw.shape[0] + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=nkw.shape[0]), out=ptr[1:])
    return kernels.SparseCounts(ptr, cols.astype(np.int32), nkw[rows, cols].astype(np.int32))


def _ks_marginals(phi, counts, beta):
    """KS p-values of every column of ``phi`` (draws, V) against Beta(a_w, A - a_w)."""
    a = counts + beta
    return np.array([stats.kstest(phi[:, w], stats.beta(a[w], a.sum() - a[w]).cdf).pvalue
                     for w in range(len(counts))])


@pytest.mark.parametrize("beta", [0.5, 0.05])
@pytest.mark.parametrize("layout", ["topic-major", "word-major"])
@pytest.mark.parametrize("counts", [[0, 1, 5, 0, 20, 0, 2], [0, 0, 0, 0, 0, 0, 0]],
                         ids=["tokens", "empty-topic"])
def test_phi_marginals_are_their_exact_beta_laws(beta, layout, counts):
    """Each ``phi_{k,w}`` of ``Dir(beta + n_k)`` is ``Beta(beta + n_kw, sum - that)``.

    Kolmogorov-Smirnov over 3000 iid topics, every word (zero-count and
    non-zero entries), for the linear-space path (a topic with tokens) and the
    log-space path (an empty topic).  Bugs caught: beta dropped on non-zero
    counts; zero-count entries set to their mean instead of drawn.
    Threshold 1e-4 per column (7 columns, 8 cases: a false alarm has chance < 1e-2).
    """
    counts = np.array(counts, np.int32)
    n = 3000
    nkw = np.tile(counts, (n, 1))
    if layout == "topic-major":
        phi = kernels.draw_phi(nkw, beta, 11, 2)
    else:
        out = np.empty((len(counts), n), np.float32)
        phi = kernels.draw_phi_word_major(_sparse_counts(nkw), beta, 11, 2, out).T
        phi = phi.astype(np.float64)
    assert np.all(np.isfinite(phi))
    np.testing.assert_allclose(phi.sum(axis=1), 1.0, rtol=1e-5)
    p = _ks_marginals(phi, counts, beta)
    assert p.min() > 1e-4, p


# ------------------------------------------------------------------ transform


def test_transform_is_exactly_the_token_share_when_topics_do_not_share_words():
    """With topics on disjoint words every token's topic is known, so ``transform`` must be
    exactly ``n_dk / N_d``.  Bug caught: the smoothed ``(n + alpha) / (N + K alpha)``."""
    rng = np.random.default_rng(3)
    words = [[f"alpha{i}" for i in range(5)], [f"beta{i}" for i in range(5)],
             [f"gamma{i}" for i in range(5)]]
    docs, y = [], []
    for d in range(30):
        counts = rng.multinomial(12, rng.dirichlet([1, 1, 1]))
        docs.append(" ".join(w for k in range(3) for w in rng.choice(words[k], counts[k])))
        y.append(d % 2)
    model = DOLDA(n_topics=3, alpha=0.5, n_iter=4, random_state=0, progress=False, text=Text(rare_share=0.0), prediction=Prediction(sweeps=6)).fit(docs, y)
    vocab = model.vocabulary_.words
    phi = np.zeros((3, len(vocab)))
    for k in range(3):
        for w in words[k]:
            phi[k, vocab.index(w)] = 1.0
    model.phi_ = phi / phi.sum(axis=1, keepdims=True)
    new = ["alpha1 alpha2 beta3", "gamma0 gamma0 gamma1 alpha4", "beta0"]
    expected = np.array([[2, 1, 0], [1, 0, 3], [0, 1, 0]]) / np.array([[3], [4], [1]])
    np.testing.assert_allclose(model.transform(new), expected, atol=1e-12)


# ------------------------------------------------------------------ intercept


def _intercept_posterior_moments(n_pos, n_neg, variance):
    """Mean and sd of ``b ∝ N(b; 0, c) F(b)^n_pos F(-b)^n_neg`` by quadrature."""
    b = np.linspace(-12, 12, 20001)
    log_p = (-0.5 * b ** 2 / variance + n_pos * stats.norm.logcdf(b)
             + n_neg * stats.norm.logcdf(-b))
    w = np.exp(log_p - log_p.max())
    w /= w.sum()
    mean = np.sum(w * b)
    return mean, np.sqrt(np.sum(w * (b - mean) ** 2))


def test_horseshoe_never_shrinks_the_intercept():
    """With a covariate that is always 0 the slopes leave the likelihood alone, so under
    either prior the intercept of class ``l`` has the 1-D posterior
    ``N(b; 0, c) prod_d F(+-b)`` (computed by quadrature).  Five rows: the prior matters,
    and a Horseshoe prior on the intercept (spike at 0, heavy tails) moves its mean and
    sd.  Tolerance: 5 Monte Carlo standard errors of the mean (ESS from ArviZ) and 10%
    on the sd.  Bug caught: the intercept given the Horseshoe prior."""
    import arviz as az

    y = np.array([0, 0, 0, 0, 1])
    X = np.zeros((5, 1))
    for prior in ("horseshoe", "normal"):
        fit = DOProbit(prior=prior, prior_variance=1.0, n_iter=3000, burn_in=300, n_jobs=1,
                       random_state=3).fit(X, y)
        for l, (n_pos, n_neg) in enumerate([(4, 1), (1, 4)]):
            draws = fit.eta_draws_[:, l, 0]
            mean, sd = _intercept_posterior_moments(n_pos, n_neg, 1.0)
            ess = float(az.ess(draws[None]))
            assert abs(draws.mean() - mean) < 5 * sd / np.sqrt(ess), (prior, l)
            assert abs(draws.std() / sd - 1) < 0.1, (prior, l, draws.std(), sd)


def test_dolda_passes_the_horseshoe_an_unshrunk_intercept(monkeypatch):
    """The DOLDA chain is given a prior whose first column (the intercept) is not shrunk
    and whose covariate and topic columns are."""
    import pandas as pd

    seen = []
    real_step = chain.dolda_step

    def spy(seed, iteration, state, data, config, *args, **kwargs):
        seen.append(config.prior)
        return real_step(seed, iteration, state, data, config, *args, **kwargs)

    monkeypatch.setattr(chain, "dolda_step", spy)
    docs = ["apple pear apple", "pear pear fig", "fig apple kiwi", "kiwi kiwi pear"] * 3
    X = pd.DataFrame({"size": np.arange(12.0)})
    DOLDA(n_topics=2, n_iter=2, progress=False, random_state=0, text=Text(rare_share=0.0), words=Words(n=0)).fit(docs, [0, 1, 0, 1] * 3, X=X)
    assert seen and seen[0].horseshoe
    np.testing.assert_array_equal(seen[0].shrunk, [False, True, True, True])


def test_intercept_precision_is_the_fixed_prior_whatever_the_scales():
    rng = np.random.default_rng(2)
    shrunk = np.array([False, True, True, True])
    prior = probit_blocks.ProbitPrior(True, shrunk, 100.0)
    lam2, tau2 = rng.gamma(0.5, size=(2, 4)), rng.gamma(0.5, size=2)
    prec = probit_blocks.prior_precision(prior, lam2, tau2)
    np.testing.assert_allclose(prec[:, 0], 1 / 100.0)
    np.testing.assert_allclose(prec[:, 1:], 1 / (tau2[:, None] * lam2[:, 1:]))


# ------------------------------------------------------------------ z-step inputs


def _tiny_chain(n_docs=200, length=10, variance=1e-8, seed=0):
    """Two topics with identical word distributions (Phi gives no information), labels 0,
    a normal prior of variance ``variance`` on every coefficient."""
    rng = np.random.default_rng(seed)
    V, K = 6, 2
    tokens = rng.integers(0, V, n_docs * length).astype(np.int32)
    doc_ptr = np.arange(0, n_docs * length + 1, length, dtype=np.int64)
    X = np.ones((n_docs, 1))
    y = np.zeros(n_docs, np.int64)
    data = chain.TopicData(tokens, doc_ptr, V, X, y, 2)
    prior = probit_blocks.ProbitPrior(False, np.ones(1 + K, bool), variance)
    config = chain.DOLDAConfig(K, 1.0, 0.5, prior, "exact", 1)
    state = chain.init_state(seed, data, config)
    phi = np.full((V, K), 1.0 / V, np.float32)
    return data, config, state._replace(phi=phi)


@pytest.mark.parametrize("z_sampler", ["exact", "mh", "cycle"])
def test_z_step_uses_this_iterations_eta(z_sampler):
    """The previous eta pushes hard towards topic 1 (mu_0 <= -5 for y = 0, so r_0 >= 5 and
    g_1 - g_0 = 5 r_0 / N - ...); the eta drawn this iteration is ~0 (prior variance
    1e-8), so the z-step must see no supervision: topic shares stay 0.5 (+- 0.04, 4 sd
    of 2000 exchangeable tokens... conservatively).  Bug caught: z-step reading the
    previous iteration's eta.  The cycle kernel keeps more of the random start after one
    sweep (its share over 20 seeds: sd 0.015 around the start's 0.524, against 0.009 for the
    exact kernel), so it gets +- 0.08; with the bug planted its share is 0.92."""
    data, config, state = _tiny_chain()
    config = config._replace(z_sampler=z_sampler)
    eta_old = np.array([[0.0, -10.0, -5.0], [0.0, 10.0, 5.0]])
    state = state._replace(probit=state.probit._replace(eta=eta_old))
    new, _ = chain.dolda_step(5, 0, state, data, config)
    assert np.max(np.abs(new.probit.eta)) < 1e-2
    share = np.mean(new.z == 1)
    assert abs(share - 0.5) < (0.08 if z_sampler == "cycle" else 0.04), share


@pytest.mark.parametrize("z_sampler", ["exact", "mh", "cycle"])
def test_z_step_uses_this_iterations_utilities(z_sampler):
    """The step draws ``a`` afresh: the previous utilities in the state must not matter.
    Bug caught: the z-step reading ``state.probit.a`` (last iteration's a)."""
    data, config, state = _tiny_chain(variance=4.0)
    config = config._replace(z_sampler=z_sampler)
    eta = np.array([[0.3, -3.0, 2.0], [-0.2, 2.5, -1.0]])
    state = state._replace(probit=state.probit._replace(eta=eta))
    a_old = np.full((len(data.y), 2), 40.0)
    runs = []
    for a in (a_old, -a_old):
        s = state._replace(z=state.z.copy(), ndk=state.ndk.copy(), phi=state.phi.copy(),
                           probit=state.probit._replace(a=a))
        runs.append(chain.dolda_step(5, 3, s, data, config)[0])
    np.testing.assert_array_equal(runs[0].z, runs[1].z)
    np.testing.assert_array_equal(runs[0].probit.eta, runs[1].probit.eta)
