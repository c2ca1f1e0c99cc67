"""The first step of a DOLDA fit: its parameters checked, each refused in one line that names
it, before any work (:func:`check_params`).
"""

from __future__ import annotations

from ...design.inputs import check_covariate_columns
from ...design.word_features import WORD_FEATURES, WORD_SELECTIONS, check_n_words
from ...posterior.calibration import PROBA_RULES
from ...posterior.holdout import check_holdout
from ...sampler import chain as dolda_chain
from ...sampler import probit as probit_blocks
from ...sampler.topic_start import TOPIC_INITS
from ...utils.validation import (
    check_alpha,
    check_burn_in,
    check_choice,
    check_n_jobs,
    check_positive_float,
    check_positive_int,
)
from .state import AUTO_ALPHA_START, AUTO_BETA_START

PRIORS = probit_blocks.PRIORS
Z_SAMPLERS = ("auto", "exact", "mh", "cycle")
PHI_SAMPLERS = ("exact", "polya")
#: The Horseshoe global-scale layouts (``global_scales``).
GLOBAL_SCALES = ("shared", "block")
#: The priors of the word coefficients (``word_prior``): the Horseshoe, the fixed Gaussian
#: ``N(0, word_prior_variance)`` (:attr:`dolda.sampler.probit.ProbitPrior.gaussian`), or both:
#: the selected words under the Horseshoe plus every word's tf-idf under the Gaussian.
WORD_PRIORS = ("horseshoe", "normal", "both")
#: The strings ``alpha`` takes: learned asymmetric (one ``alpha_k`` per topic) or symmetric.
ALPHA_AUTO = ("auto", "auto_symmetric")


def alpha_start(alpha, n_topics):
    """The checked ``alpha``: a float or float64 (K,); the start value when learned."""
    alpha = check_alpha(alpha, n_topics, auto=ALPHA_AUTO)
    return AUTO_ALPHA_START if isinstance(alpha, str) else alpha


#: The column blocks a slab can cover (``slab_blocks``); "all" is every one of them.
SLAB_BLOCKS = ("covariates", "words", "topics")


def check_slab_blocks(value):
    """``slab_blocks`` as a tuple of names from :data:`SLAB_BLOCKS` ("all": all of them; a
    comma-separated string as the command line gives it)."""
    given = value
    if isinstance(value, str):
        value = SLAB_BLOCKS if value == "all" else tuple(v.strip() for v in value.split(","))
    try:
        names = tuple(value)
    except TypeError:
        names = None
    if not names or any(not isinstance(n, str) or n not in SLAB_BLOCKS for n in names):
        allowed = ", ".join(repr(b) for b in SLAB_BLOCKS)
        raise ValueError(f"slab_blocks must be 'all' or some of {allowed}; got {given!r}")
    return tuple(b for b in SLAB_BLOCKS if b in names)


def check_params(model):
    """The parameters of ``model`` (a DOLDA) checked, as a dict ``p`` the stages read."""
    n_topics = check_positive_int(model.n_topics, "n_topics", minimum=2)
    check_choice(model.prior, "prior", PRIORS)
    check_choice(model.z_sampler, "z_sampler", Z_SAMPLERS)
    check_choice(model.proba, "proba", PROBA_RULES)
    check_choice(model.phi_sampler, "phi_sampler", PHI_SAMPLERS)
    check_choice(model.global_scales, "global_scales", GLOBAL_SCALES)
    if model.z_sampler == "cycle" and model.phi_sampler == "polya":
        raise ValueError(dolda_chain.CYCLE_POLYA_ERROR)
    check_covariate_columns(model.covariate_columns)
    n_iter = check_positive_int(model.n_iter, "n_iter")
    from ...backends import BACKENDS, PHI_TRANSPORTS

    check_choice(model.backend, "backend", BACKENDS)
    check_choice(model.phi_transport, "phi_transport", PHI_TRANSPORTS)
    return dict(
        calibration_holdout=check_holdout(model.calibration_holdout),
        loglik_every=check_positive_int(model.loglik_every, "loglik_every"),
        n_shards=(None if model.n_shards is None
                  else check_positive_int(model.n_shards, "n_shards")),
        snapshot_every=check_positive_int(model.snapshot_every, "snapshot_every"),
        phi_transport=model.phi_transport,
        n_topics=n_topics,
        alpha=alpha_start(model.alpha, n_topics),
        beta=(AUTO_BETA_START if isinstance(model.beta, str) and model.beta == "auto"
              else check_positive_float(model.beta, "beta")),
        variance=check_positive_float(model.prior_variance, "prior_variance"),
        slab=(None if model.slab_scale is None
              else check_positive_float(model.slab_scale, "slab_scale") ** 2),
        slab_blocks=check_slab_blocks(model.slab_blocks),
        word_prior=check_choice(model.word_prior, "word_prior", WORD_PRIORS),
        word_prior_variance=check_positive_float(model.word_prior_variance,
                                                 "word_prior_variance"),
        n_iter=n_iter,
        burn_in=check_burn_in(model.burn_in, n_iter),
        thin=check_positive_int(model.thin, "thin"),
        n_jobs=check_n_jobs(model.n_jobs),
        predict_sweeps=check_positive_int(model.predict_sweeps, "predict_sweeps"),
        phi_draws=check_positive_int(model.phi_draws, "phi_draws"),
        checkpoint_every=check_positive_int(model.checkpoint_every, "checkpoint_every"),
        n_chains=check_positive_int(model.n_chains, "n_chains"),
        init_iter=check_positive_int(model.init_iter, "init_iter", minimum=0),
        topic_init=check_choice(model.topic_init, "topic_init", TOPIC_INITS),
        covariate_min_count=check_positive_int(model.covariate_min_count,
                                               "covariate_min_count"),
        n_words=check_n_words(model.n_words),
        eta_sampler=check_choice(model.eta_sampler, "eta_sampler",
                                 ("auto", "gibbs") + probit_blocks.ETA_SAMPLERS),
        word_features=check_choice(model.word_features, "word_features", WORD_FEATURES),
        word_selection=check_choice(model.word_selection, "word_selection", WORD_SELECTIONS),
    )
