"""dolda: interpretable supervised topic models.

DOLDA (Magnusson, Jonsson & Villani) joins Latent Dirichlet Allocation with a
multi-class Diagonal Orthant probit regression and a Horseshoe prior, fitted by
a partially collapsed, parallel Gibbs sampler.

Public names are imported lazily so that ``import dolda`` is cheap and compiles
no kernel until one is needed.
"""

from __future__ import annotations

import importlib

from .sampler.threads import prefer_passive_wait

# before numba's OpenMP threads exist: they sleep while they wait instead of spinning
# (a fit on a shared machine then slows by its share of the CPU; issue 37)
prefer_passive_wait()

__version__ = "0.1.0"

_LAZY = {
    "DOProbit": "dolda.probit",
    "Corpus": "dolda.corpus",
    "Vocabulary": "dolda.corpus",
    "LDA": "dolda.lda",
    "DOLDA": "dolda.model",
    "load": "dolda.io",
    "datasets": "dolda.datasets",
    # modules users reach for after a fit (dolda.coherence.topic_coherence(...), ...)
    "calibration": "dolda.calibration",
    "coherence": "dolda.coherence",
    "diagnostics": "dolda.diagnostics",
    "heldout": "dolda.heldout",
    "topics": "dolda.topics",
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
