"""dolda: interpretable supervised topic models.

DOLDA (Magnusson, Jonsson & Villani) joins Latent Dirichlet Allocation with a
multi-class Diagonal Orthant probit regression and a Horseshoe prior, fitted by
a partially collapsed, parallel Gibbs sampler.

Public names are imported lazily so that ``import dolda`` is cheap and compiles
no kernel until one is needed.
"""

from __future__ import annotations

import importlib

from .sampler.threads import limit_spin_wait

# before numba's OpenMP threads exist: they spin briefly, then sleep while they wait
# (a fit on a shared machine then slows by its share of the CPU)
limit_spin_wait()

__version__ = "0.1.0"

_LAZY = {
    "DOProbit": "dolda.models.probit.estimator",
    "Corpus": "dolda.design.corpus",
    "Vocabulary": "dolda.design.corpus",
    "LDA": "dolda.models.lda",
    "DOLDA": "dolda.models.dolda.estimator",
    "TwoStepDOLDA": "dolda.models.dolda.estimator",
    # DOLDA's parameter groups
    "Prior": "dolda.models.dolda.options",
    "Words": "dolda.models.dolda.options",
    "Text": "dolda.models.dolda.options",
    "Covariates": "dolda.models.dolda.options",
    "Sampler": "dolda.models.dolda.options",
    "Prediction": "dolda.models.dolda.options",
    "Checkpoint": "dolda.models.dolda.options",
    "Dask": "dolda.models.dolda.options",
    "experimental": "dolda.experimental",
    "load": "dolda.io",
    "datasets": "dolda.datasets",
    # modules users reach for after a fit (dolda.interpret.coherence.topic_coherence(...), ...)
    "calibration": "dolda.posterior.calibration",
    "coherence": "dolda.interpret.coherence",
    "diagnostics": "dolda.evaluate.diagnostics",
    "heldout": "dolda.evaluate.heldout",
    "topics": "dolda.interpret.topics",
    "tuning": "dolda.tuning",
}

__all__ = sorted(_LAZY) + ["__version__"]


def __getattr__(name):
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        value = module if _LAZY[name].endswith("." + name) else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dolda' has no attribute {name!r}")


def __dir__():
    return __all__
