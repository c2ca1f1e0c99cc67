"""The first step of a DOLDA fit: its parameters checked, each refused in one line that names
it, before any work (:func:`check_params`).
"""

from __future__ import annotations

from ...design.estimator_input import check_covariate_columns
from ...design.word_features import WORD_FEATURES, WORD_SELECTIONS, check_n_words
from ...posterior.calibration import PROBA_RULES
from ...posterior.holdout import check_holdout
from ...sampler import gibbs_iteration as dolda_chain
from ...sampler import probit_blocks as probit_blocks
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
#: ``N(0, word_prior_variance)`` (:attr:`dolda.sampler.probit_blocks.ProbitPrior.gaussian`),
#: or both: the selected words under the Horseshoe plus every word's tf-idf under the Gaussian.
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


#: How an error names each option: the parameter, or its group's field, as the user set it.
def _display(flat_name):
    from .options import FLAT, GROUPS

    if flat_name not in FLAT:
        return flat_name
    where, field = FLAT[flat_name]
    return f"{GROUPS[where].__name__}.{field}"


#: The choices of the public groups; the other values of the kernels are Experimental's.
PUBLIC_Z_SAMPLERS = ("auto", "exact", "mh")
PUBLIC_ETA_SAMPLERS = ("auto", "gibbs", "cholesky")


def check_groups(model):
    """Every group parameter is its group (or None; a path for ``checkpoint``, "local" or a
    :class:`Dask` for ``backend``), and the public groups hold only public choices."""
    from os import PathLike

    from .options import GROUPS, Dask, group

    for name, cls in GROUPS.items():
        value = getattr(model, name)
        if name == "checkpoint" and isinstance(value, (str, PathLike)):
            continue
        if name == "backend":
            if value != "local" and not isinstance(value, Dask):
                raise ValueError(f"backend must be 'local' or a dolda.Dask(...); got {value!r}")
            continue
        if value is not None and not isinstance(value, cls):
            raise ValueError(f"{name} must be a dolda.{cls.__name__}(...) or None; "
                             f"got {value!r}")
    sampler, experimental = group(model, "sampler"), group(model, "experimental")
    check_choice(sampler.z, "Sampler.z", PUBLIC_Z_SAMPLERS)
    check_choice(sampler.eta, "Sampler.eta", PUBLIC_ETA_SAMPLERS)
    if experimental.z_sampler is not None:
        check_choice(experimental.z_sampler, "Experimental.z_sampler", Z_SAMPLERS)
    if experimental.eta_sampler is not None:
        check_choice(experimental.eta_sampler, "Experimental.eta_sampler",
                     ("auto", "gibbs") + probit_blocks.ETA_SAMPLERS)


def _refuse_or_warn_inert(flat):
    """Options set where they change nothing: a warning each (an error where the fit could
    not run), before any work (:mod:`dolda.utils.inert`)."""
    import warnings

    from ...utils.inert import check_inert
    from .options import flat_defaults

    for finding in check_inert(flat, flat_defaults()):
        if finding.level == "error":
            raise ValueError(finding.message)
        warnings.warn(finding.message, UserWarning, stacklevel=4)


def check_params(model):
    """The parameters of ``model`` (a DOLDA) checked, as a dict ``p`` the stages read; each
    refusal names the parameter as the user set it (``Prior.slab_scale``)."""
    from .options import flat_params

    check_groups(model)
    f = flat_params(model)
    n = _display
    n_topics = check_positive_int(f["n_topics"], "n_topics", minimum=2)
    check_choice(f["prior"], n("prior"), PRIORS)
    check_choice(f["proba"], "proba", PROBA_RULES)
    check_choice(f["phi_sampler"], n("phi_sampler"), PHI_SAMPLERS)
    check_choice(f["global_scales"], n("global_scales"), GLOBAL_SCALES)
    if f["z_sampler"] == "cycle" and f["phi_sampler"] == "polya":
        raise ValueError(dolda_chain.CYCLE_POLYA_ERROR)
    check_covariate_columns(f["covariate_columns"])
    n_iter = check_positive_int(f["n_iter"], "n_iter")
    from ...backends import BACKENDS, PHI_TRANSPORTS

    check_choice(f["backend"], "backend", BACKENDS)
    check_choice(f["phi_transport"], n("phi_transport"), PHI_TRANSPORTS)
    checkpoint_every = check_positive_int(f["checkpoint_every"], n("checkpoint_every"))
    _refuse_or_warn_inert(f)
    return dict(
        calibration_holdout=check_holdout(f["calibration_holdout"]),
        loglik_every=check_positive_int(f["loglik_every"], n("loglik_every")),
        n_shards=(None if f["n_shards"] is None
                  else check_positive_int(f["n_shards"], n("n_shards"))),
        snapshot_every=check_positive_int(f["snapshot_every"], n("snapshot_every")),
        phi_transport=f["phi_transport"],
        n_topics=n_topics,
        alpha=alpha_start(f["alpha"], n_topics),
        beta=(AUTO_BETA_START if isinstance(f["beta"], str) and f["beta"] == "auto"
              else check_positive_float(f["beta"], "beta")),
        variance=check_positive_float(f["prior_variance"], n("prior_variance")),
        slab=(None if f["slab_scale"] is None
              else check_positive_float(f["slab_scale"], n("slab_scale")) ** 2),
        slab_blocks=check_slab_blocks(f["slab_blocks"]),
        word_prior=check_choice(f["word_prior"], n("word_prior"), WORD_PRIORS),
        word_prior_variance=check_positive_float(f["word_prior_variance"],
                                                 n("word_prior_variance")),
        n_iter=n_iter,
        burn_in=check_burn_in(f["burn_in"], n_iter),
        thin=check_positive_int(f["thin"], "thin"),
        n_jobs=check_n_jobs(f["n_jobs"]),
        predict_sweeps=check_positive_int(f["predict_sweeps"], n("predict_sweeps")),
        phi_draws=check_positive_int(f["phi_draws"], n("phi_draws")),
        checkpoint_every=checkpoint_every,
        n_chains=check_positive_int(f["n_chains"], "n_chains"),
        init_iter=check_positive_int(f["init_iter"], n("init_iter"), minimum=0),
        topic_init=check_choice(f["topic_init"], "topic_init", TOPIC_INITS),
        covariate_min_count=check_positive_int(f["covariate_min_count"],
                                               n("covariate_min_count")),
        n_words=check_n_words(f["n_words"]),
        eta_sampler=check_choice(f["eta_sampler"], n("eta_sampler"),
                                 ("auto", "gibbs") + probit_blocks.ETA_SAMPLERS),
        word_features=check_choice(f["word_features"], n("word_features"), WORD_FEATURES),
        word_selection=check_choice(f["word_selection"], n("word_selection"), WORD_SELECTIONS),
    )
