"""Held-out log-likelihood and perplexity of LDA and DOLDA by document completion.

The estimator ("document completion", Wallach et al. 2009, "Evaluation methods
for topic models", section 4; the form used by Asuncion et al. 2009, "On
smoothing and inference for topic models"): every held-out document ``d`` is
cut in two, the first ``floor(N_d / 2)`` tokens ``w_d^(1)`` (observed) and the
rest ``w_d^(2)`` (held out).  With the topics fixed at the fitted ``Phi``,

1. the topic indicators of ``w_d^(1)`` are Gibbs-sampled from
   ``p(z = k) ∝ phi_{k,w} (n_{d,k}^{-i} + alpha)`` (theta integrated out), and
   ``theta_hat_d`` is the average of ``(n_{d,k} + alpha) / (N_d^(1) + K alpha)``
   over the sweeps after the burn-in (the kernel of ``transform``);
2. every held-out token is scored by the mixture it would be drawn from,
   ``log p(w_{d,i}^(2) | w_d^(1)) ≈ log sum_k theta_hat_{d,k} phi_{k,w}``.

The perplexity is ``exp(- sum_d log p(w_d^(2) | w_d^(1)) / sum_d |w_d^(2)|)``:
lower is better; a model that knows nothing scores ``V`` (the uniform
distribution), and one with the true topics and proportions
``exp(entropy)`` of the words.  Words not in the model's vocabulary are
dropped before the split (counted in ``n_unseen``).  The labels play no part:
a DOLDA is scored as the topic model it contains, so LDA and DOLDA fits are
compared on the same scale.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

#: Held-out tokens scored per block (bounds the (n, K) temporary).
_BLOCK = 1 << 16


class HeldOut(NamedTuple):
    """Result of :func:`heldout_log_likelihood`.

    Attributes
    ----------
    loglik : ndarray (D,)
        ``log p(w_d^(2) | w_d^(1))`` of every document (0 with no held-out token).
    n_tokens : int ndarray (D,)
        Held-out tokens ``|w_d^(2)|`` of every document.
    n_unseen : int
        Tokens dropped because their word is not in the vocabulary.
    """

    loglik: np.ndarray
    n_tokens: np.ndarray
    n_unseen: int

    @property
    def perplexity(self) -> float:
        """``exp(-sum(loglik) / sum(n_tokens))``."""
        total = int(self.n_tokens.sum())
        if total == 0:
            raise ValueError("no held-out token to score: no document has a word of the "
                             "model's vocabulary")
        return float(np.exp(-self.loglik.sum() / total))


def split_halves(tokens, doc_ptr):
    """Cut every document into its first ``floor(N_d / 2)`` tokens and the rest.

    Returns
    -------
    observed_tokens, observed_ptr, heldout_tokens, heldout_doc
        The observed halves as a CSR corpus, and the held-out tokens with the
        index of their document.
    """
    tokens = np.asarray(tokens)
    doc_ptr = np.asarray(doc_ptr, dtype=np.int64)
    lengths = np.diff(doc_ptr)
    doc = np.repeat(np.arange(len(lengths)), lengths)
    position = np.arange(len(tokens)) - doc_ptr[:-1][doc]
    observed = position < (lengths // 2)[doc]
    observed_ptr = np.concatenate([[0], np.cumsum(lengths // 2)])
    return (tokens[observed].astype(np.int32), observed_ptr.astype(np.int64),
            tokens[~observed].astype(np.int64), doc[~observed])


def document_completion(phi, alpha, tokens, doc_ptr, n_sweeps=50, burn_in=None, seed=0):
    """Document-completion log-likelihood of every document (see the module notes).

    Parameters
    ----------
    phi : float array (K, V)
        The topics ``Phi`` (rows sum to one).
    alpha : float or float (K,)
        Dirichlet prior of theta (symmetric or per topic).
    tokens : int array (N,), doc_ptr : int array (D + 1,)
        The documents as word ids (CSR).
    n_sweeps : int, default=50
        Gibbs sweeps over the observed halves.
    burn_in : int or None
        Sweeps discarded before averaging theta (None: half).
    seed : int

    Returns
    -------
    loglik : ndarray (D,)
    n_tokens : int ndarray (D,)
    """
    from ..utils.validation import check_burn_in, check_doc_ptr, check_positive_int
    from ..sampler.lda import predict_topic_proportions

    phi = np.asarray(phi, dtype=np.float64)
    if phi.ndim != 2:
        raise ValueError(f"phi must be a (K, V) matrix, got shape {phi.shape}")
    n_sweeps = check_positive_int(n_sweeps, "n_sweeps")
    burn_in = check_burn_in(burn_in, n_sweeps)
    tokens = np.asarray(tokens)
    doc_ptr = check_doc_ptr(doc_ptr, len(tokens))
    obs_tokens, obs_ptr, held, held_doc = split_halves(tokens, doc_ptr)
    if len(held) and (held.min() < 0 or held.max() >= phi.shape[1]):
        raise ValueError(f"word ids must lie in [0, {phi.shape[1]})")
    theta = predict_topic_proportions(obs_tokens, obs_ptr, phi, alpha, n_sweeps,
                                      burn_in, int(seed))
    n_docs = len(doc_ptr) - 1
    log_p = np.empty(len(held))
    phi_wk = np.ascontiguousarray(phi.T)
    for lo in range(0, len(held), _BLOCK):
        hi = min(lo + _BLOCK, len(held))
        p = np.einsum("ik,ik->i", theta[held_doc[lo:hi]], phi_wk[held[lo:hi]])
        with np.errstate(divide="ignore"):
            log_p[lo:hi] = np.log(p)
    loglik = np.bincount(held_doc, weights=log_p, minlength=n_docs)
    n_tokens = np.bincount(held_doc, minlength=n_docs).astype(np.int64)
    return loglik, n_tokens


def heldout_log_likelihood(model, texts, n_sweeps=None, burn_in=None, random_state=None):
    """Document-completion log-likelihood of ``texts`` under a fitted LDA or DOLDA.

    Parameters
    ----------
    model : fitted :class:`dolda.LDA` or :class:`dolda.DOLDA`
        Uses ``phi_``, ``alpha`` and ``vocabulary_``.
    texts : iterable of str, token lists, or Corpus (D,)
        Held-out documents (labels are not needed).
    n_sweeps : int or None
        Sweeps over the observed halves (None: the model's ``transform_sweeps``
        or ``predict_sweeps``).
    burn_in : int or None
        None: half of ``n_sweeps``.
    random_state : int or None
        Seed of the sweeps (None: the model's ``seed_``, so the result is
        reproducible).

    Returns
    -------
    HeldOut
        Per-document ``loglik`` and ``n_tokens``, ``n_unseen``, and the
        ``perplexity`` property.
    """
    from sklearn.utils.validation import check_is_fitted

    from ..utils.validation import check_n_jobs
    from ..sampler.threads import using_threads

    check_is_fitted(model, "phi_")
    if n_sweeps is None:
        n_sweeps = getattr(model, "transform_sweeps", None) or getattr(model, "predict_sweeps",
                                                                      50)
    seed = int(getattr(model, "seed_", 0)) if random_state is None else int(random_state)
    corpus = model.vocabulary_.transform(texts)
    alpha = model._alpha() if hasattr(model, "_alpha") else model.alpha  # learned?
    with using_threads(check_n_jobs(getattr(model, "n_jobs", None))):
        loglik, n_tokens = document_completion(model.phi_, alpha, corpus.tokens,
                                               corpus.doc_ptr, n_sweeps, burn_in, seed)
    return HeldOut(loglik, n_tokens, int(getattr(corpus, "n_unseen", 0) or 0))


def perplexity(model, texts, n_sweeps=None, burn_in=None, random_state=None) -> float:
    """Held-out perplexity of ``texts`` under a fitted LDA or DOLDA (document completion).

    ``exp(-sum_d log p(w_d^(2) | w_d^(1)) / sum_d |w_d^(2)|)``; see
    :func:`heldout_log_likelihood` for the arguments.  Lower is better.
    """
    return heldout_log_likelihood(model, texts, n_sweeps, burn_in, random_state).perplexity
