"""Simulators for the tests, written from the generative definitions alone.

Nothing here calls dolda (no ``do_probabilities``, no ``datasets.simulate``): a
bug in the library's prediction or simulation code cannot hide itself by
producing the data it is then tested on.  Every simulator returns the true
class probabilities of every row, computed from the definitions with scipy, so
calibration can be scored against the truth.

Label models (``mu = X_1 @ B.T``, ``X_1 = [1, X]``):

``"do"``
    Diagonal Orthant: ``a_l ~ N(mu_l, 1)`` independently, ``y = l`` when
    ``a_l`` is the only positive utility.  Labels are drawn by rejection from
    that definition; the truth is
    ``F(mu_l) prod_{j != l} F(-mu_j) / sum_s F(mu_s) prod_{j != s} F(-mu_j)``.
``"ovr"``
    Normalised one-vs-rest: ``P(y = l) ∝ F(mu_l)``.
``"logit"``
    Multinomial logit: ``P(y = l) ∝ exp(mu_l)``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special, stats

LABEL_MODELS = ("do", "ovr", "logit")


class Labelled(NamedTuple):
    X: np.ndarray      # (D, P) covariates, no intercept column
    y: np.ndarray      # (D,) int labels 0..L-1
    proba: np.ndarray  # (D, L) true class probabilities
    coef: np.ndarray   # (L, P + 1) true coefficients, column 0 the intercept


def true_probabilities(mu, model):
    """True ``P(y = l | mu)`` (D, L) of a label model, from scipy alone."""
    if model == "do":
        log_pos = stats.norm.logcdf(mu)
        log_neg = stats.norm.logcdf(-mu)
        s = log_pos - log_neg + log_neg.sum(axis=1, keepdims=True)
        return special.softmax(s, axis=1)
    if model == "ovr":
        p = stats.norm.cdf(mu)
        return p / p.sum(axis=1, keepdims=True)
    if model == "logit":
        return special.softmax(mu, axis=1)
    raise ValueError(f"unknown label model {model!r}")


def draw_do_labels(rng, mu, max_rounds=200):
    """Labels from the DO definition: redraw ``a ~ N(mu, I)`` until one utility is positive.

    Rows still without a label after ``max_rounds`` (all utilities far below
    zero make "exactly one positive" rare) are drawn from the exact
    probabilities instead.
    """
    y = np.full(len(mu), -1, dtype=np.int64)
    todo = np.arange(len(mu))
    for _ in range(max_rounds):
        if todo.size == 0:
            return y
        a = mu[todo] + rng.standard_normal((todo.size, mu.shape[1]))
        positive = a > 0
        one = positive.sum(axis=1) == 1
        y[todo[one]] = np.argmax(positive[one], axis=1)
        todo = todo[~one]
    if todo.size:
        y[todo] = _categorical(rng, true_probabilities(mu[todo], "do"))
    return y


def _categorical(rng, proba):
    u = rng.random(len(proba))[:, None]
    return np.minimum((u > np.cumsum(proba, axis=1)).sum(axis=1), proba.shape[1] - 1)


def draw_labels(rng, mu, model):
    """Labels (D,) and true probabilities (D, L) under ``model``."""
    proba = true_probabilities(mu, model)
    if model == "do":
        return draw_do_labels(rng, mu), proba
    return _categorical(rng, proba).astype(np.int64), proba


def simulate_labelled(n_rows, n_features=8, n_classes=5, model="logit", scale=1.0,
                      intercept=0.0, seed=0, coef=None):
    """Gaussian covariates ``X ~ N(0, I)`` and labels from ``model``.

    ``coef`` (L, P+1) defaults to ``scale * N(0, 1)`` slopes with intercept
    ``intercept``; pass the same ``coef`` and another seed for a test set.
    """
    rng = np.random.default_rng(seed)
    if coef is None:
        crng = np.random.default_rng(10_000 + seed)
        coef = np.column_stack([np.full(n_classes, float(intercept)),
                                scale * crng.standard_normal((n_classes, n_features))])
    X = rng.standard_normal((n_rows, coef.shape[1] - 1))
    mu = coef[:, 0] + X @ coef[:, 1:].T
    y, proba = draw_labels(rng, mu, model)
    return Labelled(X, y, proba, coef)


class Corpus(NamedTuple):
    texts: list        # D strings of words "w0 w5 ..."
    zbar: np.ndarray   # (D, K) true empirical topic proportions n_dk / N_d
    y: np.ndarray      # (D,) labels
    proba: np.ndarray  # (D, L) true probabilities given zbar
    phi: np.ndarray    # (K, V)
    eta: np.ndarray    # (L, K) topic coefficients (no intercept)


def simulate_corpus(n_docs, n_topics=4, n_classes=3, vocab_size=200, doc_length=60,
                    alpha=0.3, beta=0.05, scale=4.0, model="do", seed=0, phi=None, eta=None):
    """A labelled corpus from the DOLDA generative model (paper section 2).

    ``phi_k ~ Dir(beta)``, ``theta_d ~ Dir(alpha)``, ``z ~ Cat(theta_d)``,
    ``w ~ Cat(phi_z)``; labels from ``model`` with ``mu = zbar @ eta.T``, eta
    centred over topics (so the topic proportions, which sum to one, carry
    the signal, not an implicit intercept).
    """
    rng = np.random.default_rng(seed)
    prng = np.random.default_rng(20_000 + seed)
    if phi is None:
        phi = prng.dirichlet(np.full(vocab_size, beta), size=n_topics)
    if eta is None:
        eta = scale * prng.standard_normal((n_classes, n_topics))
        eta -= eta.mean(axis=1, keepdims=True)
    K, V = phi.shape
    theta = rng.dirichlet(np.full(K, alpha), size=n_docs)
    # inverse-CDF draws: z from theta_d, then w from phi_z
    cum_theta = np.cumsum(theta, axis=1)
    z = (rng.random((n_docs, doc_length))[:, :, None] > cum_theta[:, None, :]).sum(axis=2)
    z = np.minimum(z, K - 1)
    cum_phi = np.cumsum(phi, axis=1)
    u = rng.random((n_docs, doc_length))
    w = np.empty_like(z)
    for k in range(K):
        at = z == k
        w[at] = np.minimum(np.searchsorted(cum_phi[k], u[at], side="right"), V - 1)
    zbar = np.stack([np.bincount(row, minlength=K) for row in z]) / doc_length
    texts = [" ".join(f"w{v}" for v in row) for row in w]
    y, proba = draw_labels(rng, zbar @ eta.T, model)
    return Corpus(texts, zbar, y, proba, phi, eta)


def random_assignment(g, n_docs, max_length, n_words, n_topics, empty, min_length=1):
    """A corpus of random tokens and topics: ``(doc_ptr, tokens, z)``.

    Document lengths are uniform on ``[min_length, max_length)``, except document
    ``empty``, which has none; tokens are uniform on ``n_words`` words and ``z`` on
    ``n_topics`` topics (int32, as the kernels take them).
    """
    lengths = g.integers(min_length, max_length, n_docs)
    lengths[empty] = 0
    doc_ptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = g.integers(0, n_words, doc_ptr[-1]).astype(np.int32)
    z = g.integers(0, n_topics, doc_ptr[-1]).astype(np.int32)
    return doc_ptr, tokens, z
