"""Geweke (2004) joint-distribution test of the whole DOLDA iteration (``chain.dolda_step``).

The state is ``theta = (Phi, z, eta, tau, lambda)`` (theta_d integrated out, ``a``
redrawn by every step); the data are the words ``w`` and labels ``y`` of a tiny
corpus (4 documents of 3 tokens, V = 3 words, K = 2 topics, L = 2 classes,
an intercept).  What the sampler targets (DESIGN.md section 2) is

    p(theta) p(w | z, Phi) prod_d prod_l F(mu_dl)^[y_d = l] F(-mu_dl)^[y_d != l],

the one-vs-rest probit product, with ``y_d`` one class.  Summed over the
labels, the theta-marginal of that joint is the prior *tilted* by
``prod_d Z(mu_d)`` (``Z`` the DO normaliser), and ``y | theta`` is the DO law.

* Marginal-conditional: 100 000 exact prior draws of theta (Phi ~ Dir(beta),
  theta_d ~ Dir(alpha), z, eta from its normal or Horseshoe prior), weighted by
  ``prod_d Z(mu_d)`` (importance sampling: ``Z <= 1``, so the weights are
  bounded), and data drawn given theta.
* Successive-conditional: alternate "draw (w, y) given theta" and
  ``dolda_step`` on those data.  Normal prior: one chain of 3000 steps,
  standard errors by batch means (40 batches).  Horseshoe: its heavy tails make
  one chain mix too slowly for batch means, so 600 independent chains of 3
  steps each, started from exact tilted-prior draws (rejection), whose final
  states are again draws from the joint if the step is right.

Both estimate the joint expectation of test functions of (theta, w, y): bounded
transforms of eta (``tanh``), ``log tau``, ``log lambda``, the topic shares
zbar, Phi, interactions eta x zbar (the z <-> eta coupling), and the data.
The weighted prior's standard error is from the delta method.  The test
passes when every |z| < 4.5 (about 30-40 test functions per case).

Power, checked by planting bugs (docs/MUTATION.md): Phi drawn from Dir(n)
instead of Dir(beta + n) gives max |z| = 8.1.  A z-step that reads the
previous eta (1.7) and a Horseshoe that also shrinks the intercept (2.4) move
the joint of so tiny a corpus too little to be seen here; the direct tests in
``test_sampler_power.py`` catch them.

Nothing here calls the library's prediction or simulation code: the DO
probabilities come from scipy.
"""

import numpy as np
import pytest
from scipy import special, stats

from dolda.sampler import gibbs_iteration as chain
from dolda.sampler import probit_blocks as probit_blocks
from dolda.sampler.threads import using_threads

D, N_D, V, K, L = 4, 3, 3, 2, 2
ALPHA, BETA, VARIANCE = 0.8, 0.7, 1.0
N_PRIOR = 100_000
N_STEPS = 3000
N_BATCHES = 40
N_CHAINS = 600  # Horseshoe: independent short chains ...
N_SHORT = 3      # ... of this many steps
Z_TOL = 4.5


def do_log_probabilities(mu):
    """log P(y = l | mu) of the DO model and log Z(mu), from scipy: (..., L), (...)."""
    log_pos, log_neg = stats.norm.logcdf(mu), stats.norm.logcdf(-mu)
    s = log_pos - log_neg + log_neg.sum(axis=-1, keepdims=True)
    log_z = special.logsumexp(s, axis=-1)
    return s - log_z[..., None], log_z


def prior_theta(rng, horseshoe, size):
    """Exact prior draws: phi (size, K, V), z (size, D, N_D), eta (size, L, 1+K), tau2, lam2."""
    phi = rng.dirichlet(np.full(V, BETA), size=(size, K))
    theta = rng.dirichlet(np.full(K, ALPHA), size=(size, D))
    z = (rng.random((size, D, N_D))[..., None] > np.cumsum(theta, -1)[:, :, None, :]).sum(-1)
    z = np.minimum(z, K - 1)
    eta = np.empty((size, L, 1 + K))
    eta[:, :, 0] = np.sqrt(VARIANCE) * rng.standard_normal((size, L))
    if horseshoe:
        nu = 1.0 / rng.standard_gamma(0.5, (size, L, K))
        lam2 = (1.0 / nu) / rng.standard_gamma(0.5, (size, L, K))
        xi = 1.0 / rng.standard_gamma(0.5, (size, L))
        tau2 = (1.0 / xi) / rng.standard_gamma(0.5, (size, L))
        eta[:, :, 1:] = np.sqrt(tau2[..., None] * lam2) * rng.standard_normal((size, L, K))
    else:
        nu = lam2 = np.ones((size, L, K))
        xi = tau2 = np.ones((size, L))
        eta[:, :, 1:] = np.sqrt(VARIANCE) * rng.standard_normal((size, L, K))
    return phi, z, eta, tau2, lam2, nu, xi


def zbar_of(z):
    return np.stack([(z == k).mean(-1) for k in range(K)], axis=-1)  # (..., D, K)


def linear_predictors(eta, zbar):
    """mu (..., D, L) = intercept + zbar . eta_topics."""
    return eta[..., None, :, 0] + np.einsum("...dk,...lk->...dl", zbar, eta[..., 1:])


def draw_data(rng, phi, z, eta):
    """Words (..., D, N_D) from phi_{z} and labels (..., D) from the DO law, vectorised."""
    flat = z.reshape(z.shape[:-2] + (D * N_D, 1))
    rows = np.take_along_axis(np.cumsum(phi, -1), flat, axis=-2)  # (..., D*N_D, V)
    rows = rows.reshape(z.shape + (V,))
    w = (rng.random(z.shape)[..., None] > rows).sum(-1)
    log_p, _ = do_log_probabilities(linear_predictors(eta, zbar_of(z)))
    u = rng.random(log_p.shape[:-1])[..., None]
    y = (u > np.cumsum(np.exp(log_p), -1)).sum(-1)
    return np.minimum(w, V - 1), np.minimum(y, L - 1)


def joint_functions(phi, z, eta, tau2, lam2, w, y, horseshoe):
    """(..., F) test functions of (theta, data): first and second moments (a bug that
    keeps the symmetries of the model leaves every mean at its symmetric value, so
    the second moments and the couplings carry the power)."""
    zbar = zbar_of(z)
    batch = eta.shape[:-2]
    te = np.tanh(eta[..., 1:])
    mu = linear_predictors(eta, zbar)
    flat_z = z.reshape(batch + (-1, 1))
    phi_z = np.take_along_axis(phi, flat_z, axis=-2)  # (..., D*N_D, V): phi_{z_dn, .}
    phi_zw = np.take_along_axis(phi_z, w.reshape(batch + (-1, 1)), axis=-1)[..., 0]
    first = (y == 0)
    f = [eta[..., 0], eta[..., 0] ** 2, te.reshape(batch + (-1,)), (te ** 2).reshape(batch + (-1,)),
         zbar[..., 0], (zbar[..., 0] ** 2).mean(-1),
         phi[..., 0, :2], phi[..., 1, :1], (phi ** 2).sum(-1).reshape(batch + (-1,)),
         phi_zw.mean(-1),                                             # words <-> topics
         (first * np.tanh(mu[..., 0] - mu[..., 1])).mean(-1),        # labels <-> eta, zbar
         (first * (zbar[..., 0] - 0.5)).mean(-1) * np.tanh(eta[..., 0, 1] - eta[..., 0, 2]),
         first.astype(float), (w[..., :1] == 0).astype(float)[..., 0]]
    if horseshoe:
        f += [np.log(tau2), np.log(lam2).reshape(batch + (-1,))]
    return np.concatenate([np.reshape(x, batch + (-1,)) for x in f], -1)


def prior_expectations(horseshoe, seed):
    """Weighted means and standard errors of the test functions under the target joint."""
    rng = np.random.default_rng(seed)
    phi, z, eta, tau2, lam2, _, _ = prior_theta(rng, horseshoe, N_PRIOR)
    _, log_z = do_log_probabilities(linear_predictors(eta, zbar_of(z)))
    weight = np.exp(log_z.sum(-1))
    weight /= weight.sum()
    w, y = draw_data(rng, phi, z, eta)
    g = joint_functions(phi, z, eta, tau2, lam2, w, y, horseshoe)
    mean = weight @ g
    se = np.sqrt((weight ** 2) @ (g - mean) ** 2)
    return mean, se


def tilted_draws(rng, horseshoe, n):
    """``n`` exact draws from the tilted prior, by rejection (accept with prob prod_d Z)."""
    kept = []
    while sum(len(k[0]) for k in kept) < n:
        draw = prior_theta(rng, horseshoe, 4 * n)
        _, log_z = do_log_probabilities(linear_predictors(draw[2], zbar_of(draw[1])))
        accept = rng.random(4 * n) < np.exp(log_z.sum(-1))
        kept.append([x[accept] for x in draw])
    return [np.concatenate([k[i] for k in kept])[:n] for i in range(len(kept[0]))]


def run_chain(rng, start, horseshoe, z_sampler, seed, n_steps, offset=0):
    """Successive-conditional simulator from ``start`` (one tilted-prior draw).

    Returns the test functions (n_steps, F) of (theta_t, data drawn given theta_t).
    """
    phi, z, eta, tau2, lam2, nu, xi = start
    shrunk = np.array([False] + [True] * K)
    prior = probit_blocks.ProbitPrior(horseshoe, shrunk, VARIANCE)
    config = chain.DOLDAConfig(K, ALPHA, BETA, prior, z_sampler, 1)
    ones = np.ones((L, 1))
    probit = probit_blocks.ProbitState(
        np.zeros((D, L)), eta, np.hstack([ones, lam2]), tau2,
        np.hstack([ones, nu]), xi)
    z_flat = z.reshape(-1).astype(np.int32)
    ndk = np.stack([np.bincount(z[d], minlength=K) for d in range(D)]).astype(np.int32)
    state = chain.DOLDAState(z_flat, ndk, np.ascontiguousarray(phi.T, np.float32), probit)
    doc_ptr = np.arange(0, D * N_D + 1, N_D, dtype=np.int64)
    X = np.ones((D, 1))
    g = []
    for t in range(n_steps + 1):
        phi_kv = state.phi.T.astype(np.float64)
        phi_kv /= phi_kv.sum(axis=1, keepdims=True)
        z = state.z.reshape(D, N_D)
        eta = state.probit.eta
        w, y = draw_data(rng, phi_kv, z, eta)
        p = state.probit
        if t > 0:
            g.append(joint_functions(phi_kv, z, eta, p.tau2, p.lam2[:, 1:], w, y, horseshoe))
        if t == n_steps:
            break
        data = chain.TopicData(w.reshape(-1).astype(np.int32), doc_ptr, V, X,
                               y.astype(np.int64), L)
        with using_threads(1):  # a tiny corpus: thread start-up would dominate
            state, _ = chain.dolda_step(seed, offset + t, state, data, config)
    return np.array(g)


def chain_expectations(horseshoe, z_sampler, seed, n_steps=N_STEPS):
    """Batch-means estimates of the test functions along one long chain."""
    rng = np.random.default_rng(seed)
    start = [x[0] for x in tilted_draws(rng, horseshoe, 1)]
    g = run_chain(rng, start, horseshoe, z_sampler, seed, n_steps)
    batches = g.reshape(N_BATCHES, -1, g.shape[1]).mean(axis=1)
    return g.mean(axis=0), batches.std(axis=0, ddof=1) / np.sqrt(N_BATCHES)


def replicate_expectations(horseshoe, z_sampler, seed, n_chains=N_CHAINS, n_steps=N_SHORT):
    """Means over independent short chains, each started from an exact tilted-prior draw.

    A step of a correct sampler leaves the joint invariant, so the state after
    ``n_steps`` steps is again a draw from it; the chains are independent, so
    the standard error is exact however slowly the sampler mixes (the
    Horseshoe's heavy tails make one long chain mix too slowly for batch means).
    """
    rng = np.random.default_rng(seed)
    starts = tilted_draws(rng, horseshoe, n_chains)
    g = np.array([run_chain(rng, [x[c] for x in starts], horseshoe, z_sampler, seed,
                            n_steps, offset=c * n_steps)[-1] for c in range(n_chains)])
    return g.mean(axis=0), g.std(axis=0, ddof=1) / np.sqrt(n_chains)


def geweke_z(horseshoe, z_sampler, seed=0):
    """z-scores of the successive-conditional estimates against the marginal-conditional ones."""
    p_mean, p_se = prior_expectations(horseshoe, seed + 100)
    if horseshoe:
        c_mean, c_se = replicate_expectations(horseshoe, z_sampler, seed)
    else:
        c_mean, c_se = chain_expectations(horseshoe, z_sampler, seed)
    return (c_mean - p_mean) / np.sqrt(c_se ** 2 + p_se ** 2 + 1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("z_sampler", ["exact", "mh", "cycle"])
@pytest.mark.parametrize("horseshoe", [False, True], ids=["normal", "horseshoe"])
def test_dolda_step_leaves_the_joint_distribution_invariant(horseshoe, z_sampler):
    z = geweke_z(horseshoe, z_sampler)
    assert np.all(np.isfinite(z))
    assert np.max(np.abs(z)) < Z_TOL, np.round(z, 2)
