"""Held-out log-likelihood of documents under fitted topics: document completion.

``log p(w_d | Phi)`` of a new document has no closed form (theta_d must be
integrated out).  The *document completion* estimator (Wallach, Murray,
Salakhutdinov & Mimno 2009, "Evaluation methods for topic models") sidesteps
it: split each document into an observed part and a held-out part, estimate
``theta_d`` from the observed part with Phi fixed, and score the held-out
part,

    log p(w_d^held | w_d^obs, Phi) ~= sum_{i held} log sum_k theta_dk phi_{k, w_di},

with ``theta_dk = E[theta_dk | w_d^obs, Phi]``, the posterior mean estimated by
the unsupervised Gibbs sampler of prediction (paper section 3.3).  A document
with one held-out token is scored exactly in the limit of many sweeps; with
more, the held-out tokens are scored with the same point estimate of theta
(a plug-in approximation).  Here the observed part is the tokens at even
positions and the held-out part those at odd positions, so both halves cover
the whole document.
"""

from __future__ import annotations

import numpy as np

__all__ = ["document_completion", "split_alternate"]


def split_alternate(tokens, doc_ptr):
    """Even-position tokens (observed) and odd-position tokens (held out) of every document.

    Parameters
    ----------
    tokens : int (N,), doc_ptr : int64 (D+1,)
        The documents in CSR layout.

    Returns
    -------
    (obs_tokens, obs_ptr), (held_tokens, held_ptr)
        Two corpora in CSR layout with the same D documents;
        document d has ``ceil(N_d / 2)`` observed and ``floor(N_d / 2)`` held-out tokens.
    """
    tokens = np.asarray(tokens)
    doc_ptr = np.asarray(doc_ptr, dtype=np.int64)
    lengths = np.diff(doc_ptr)
    position = np.arange(len(tokens)) - np.repeat(doc_ptr[:-1], lengths)
    held = position % 2 == 1
    n_held = lengths // 2
    held_ptr = np.concatenate([[0], np.cumsum(n_held)]).astype(np.int64)
    obs_ptr = np.concatenate([[0], np.cumsum(lengths - n_held)]).astype(np.int64)
    return (tokens[~held], obs_ptr), (tokens[held], held_ptr)


def document_completion(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed):
    """Document-completion estimate of the held-out log-likelihood.

    Parameters
    ----------
    tokens : int32 (N,), doc_ptr : int64 (D+1,)
        Documents over the model's vocabulary (CSR layout).
    phi : float (K, V)
        ``Phi``, rows sum to one.
    alpha : float
        Dirichlet prior of theta.
    n_sweeps, burn_in : int
        Gibbs sweeps over the observed halves, and those discarded.
    seed : int

    Returns
    -------
    loglik : float
        ``sum_d sum_{odd i} log sum_k theta_dk phi_{k, w_di}``.
    n_scored : int
        Number of held-out tokens scored (``sum_d floor(N_d / 2)``).
    """
    from .sampler.lda import predict_topic_proportions

    (obs, obs_ptr), (held, held_ptr) = split_alternate(tokens, doc_ptr)
    theta = predict_topic_proportions(np.ascontiguousarray(obs, dtype=np.int32), obs_ptr,
                                      phi, float(alpha), int(n_sweeps), int(burn_in), int(seed))
    doc_of = np.repeat(np.arange(len(held_ptr) - 1), np.diff(held_ptr))
    phi_t = np.ascontiguousarray(np.asarray(phi, dtype=np.float64).T)  # (V, K)
    total = 0.0
    chunk = max(1, 2_000_000 // max(1, phi_t.shape[1]))
    for start in range(0, len(held), chunk):
        w = held[start:start + chunk]
        p = np.einsum("nk,nk->n", theta[doc_of[start:start + chunk]], phi_t[w])
        total += float(np.log(p).sum())
    return total, len(held)
