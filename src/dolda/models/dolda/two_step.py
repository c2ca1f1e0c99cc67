"""Stage 3 of a DOLDA fit with ``two_step=True``, in place of the joint chain: the paper's
comparison model (section 4), LDA first (:class:`dolda.LDA`), then the DO probit
(:class:`dolda.DOProbit`) on the final topic proportions.  Sets the fitted attributes the
joint chain's pooling sets (:mod:`dolda.models.dolda.summary`), with one chain.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...sampler.alpha import alpha_value
from ..probit.estimator import DOProbit
from .state import set_coef, set_loglik
from .options import flat_value


def fit_two_step(model, design, p):
    """LDA on ``design.corpus``, then DOProbit on ``[X, zbar]`` (``design``:
    :class:`dolda.models.dolda.design_stage.FitDesign`, ``p`` the checked parameters)."""
    from ..lda import LDA

    corpus, data = design.corpus, design.data
    lda = LDA(n_topics=p["n_topics"], alpha=p["alpha"], beta=p["beta"],
              n_iter=p["n_iter"], burn_in=p["burn_in"], random_state=model.random_state,
              n_jobs=model.n_jobs, progress=model.progress)
    lda.fit(corpus)
    model.lda_ = lda
    model.phi_ = lda.phi_
    zbar = lda.transform(corpus)
    U = (sp.hstack([data.X, zbar], format="csr") if sp.issparse(data.X)
         else np.hstack([data.X, zbar]))
    probit = DOProbit(prior=flat_value(model, "prior"), n_iter=p["n_iter"],
                      burn_in=p["burn_in"],
                      thin=p["thin"], prior_variance=p["variance"], fit_intercept=False,
                      random_state=model.random_state, n_jobs=model.n_jobs).fit(U, data.y)
    model.seed_ = probit.seed_
    model.scale_blocks_ = None  # DOProbit's one global scale per class
    model.n_iter_ = p["n_iter"]
    model.eta_draws_ = probit.eta_draws_
    model.tau_draws_ = probit.tau_draws_
    model.lambda_draws_ = probit.lambda_draws_
    model.lambda_word_stats_ = None  # DOProbit keeps every draw of every lambda
    model.lambda_word_rows_ = model.lambda_word_row_ids_ = None
    model.doc_topic_counts_ = None
    model.alpha_, model.beta_ = alpha_value(p["alpha"]), p["beta"]
    model.n_chains_ = 1
    ll = np.column_stack([probit.loglik_, np.asarray(lda.loglik_)[-len(probit.loglik_):]])
    set_loglik(model, ll)
    set_coef(model, model.eta_draws_)
    return model
