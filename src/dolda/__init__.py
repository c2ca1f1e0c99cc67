"""dolda: interpretable supervised topic models.

DOLDA (Magnusson, Jonsson & Villani) joins Latent Dirichlet Allocation with a
multi-class Diagonal Orthant probit regression and a Horseshoe prior, fitted by
a partially collapsed, parallel Gibbs sampler.

Public names are imported lazily so that ``import dolda`` is cheap and compiles
no kernel until one is needed.
"""

from __future__ import annotations

import importlib
import sys

from .sampler.threads import limit_spin_wait

# before numba's OpenMP threads exist: they spin briefly, then sleep while they wait
# (a fit on a shared machine then slows by its share of the CPU; issue 37)
limit_spin_wait()

__version__ = "0.1.0"

_LAZY = {
    "DOProbit": "dolda.models.probit.estimator",
    "Corpus": "dolda.design.corpus",
    "Vocabulary": "dolda.design.corpus",
    "LDA": "dolda.models.lda",
    "DOLDA": "dolda.models.dolda.estimator",
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


# -- old module paths (issue 35): the flat layout's modules moved into folders; their old dotted
# paths (``import dolda.model``, ``from dolda.calibration import ...``, and the class paths
# that skops or pickle files hold, ``dolda.model.DOLDA``) import the moved module itself.
_MOVED = {
    "dolda._atomic": "dolda.io.atomic",
    "dolda._codec": "dolda.io.codec",
    "dolda._crossfit": "dolda.posterior.crossfit",
    "dolda._design": "dolda.design.regressors",
    "dolda._dolda_chain": "dolda.models.dolda.chain",
    "dolda._dolda_inputs": "dolda.models.dolda.inputs",
    "dolda._dolda_interpret": "dolda.models.dolda.interpret",
    "dolda._dolda_state": "dolda.models.dolda.state",
    "dolda._draws": "dolda.utils.draws",
    "dolda._heap": "dolda.utils.heap",
    "dolda._holdout": "dolda.posterior.holdout",
    "dolda._inputs": "dolda.design.inputs",
    "dolda._npz": "dolda.io.npz",
    "dolda._phases": "dolda.utils.phases",
    "dolda._probit_chain": "dolda.models.probit.chain",
    "dolda._schema": "dolda.io.schema",
    "dolda._validation": "dolda.utils.validation",
    "dolda.calibration": "dolda.posterior.calibration",
    "dolda.coherence": "dolda.interpret.coherence",
    "dolda.convergence": "dolda.evaluate.convergence",
    "dolda.corpus": "dolda.design.corpus",
    "dolda.covariates": "dolda.design.covariates",
    "dolda.diagnostics": "dolda.evaluate.diagnostics",
    "dolda.explain": "dolda.interpret.explain",
    "dolda.extend": "dolda.models.dolda.extend",
    "dolda.heldout": "dolda.evaluate.heldout",
    "dolda.lda": "dolda.models.lda",
    "dolda.model": "dolda.models.dolda.estimator",
    "dolda.probit": "dolda.models.probit.estimator",
    "dolda.report": "dolda.interpret.report",
    "dolda.report.convergence": "dolda.interpret.report.convergence",
    "dolda.report.figures": "dolda.interpret.report.figures",
    "dolda.report.page": "dolda.interpret.report.page",
    "dolda.report.plots": "dolda.interpret.report.plots",
    "dolda.report.topics_map": "dolda.interpret.report.topics_map",
    "dolda.rhat": "dolda.evaluate.rhat",
    "dolda.stability": "dolda.interpret.stability",
    "dolda.topics": "dolda.interpret.topics",
    "dolda.word_features": "dolda.design.word_features",
}


class _MovedModules:
    """Meta-path finder: an old module path is the moved module (the same object)."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in _MOVED:
            from importlib.util import spec_from_loader

            return spec_from_loader(name, _MovedModules)
        return None

    @staticmethod
    def create_module(spec):
        module = importlib.import_module(_MOVED[spec.name])
        _MovedModules._spec = module.__spec__  # the import system sets __spec__ next
        return module

    @staticmethod
    def exec_module(module):
        module.__spec__ = _MovedModules._spec


sys.meta_path.insert(0, _MovedModules)  # before the path finder: one module, not a copy


def __getattr__(name):
    if name in _LAZY:
        module = importlib.import_module(_LAZY[name])
        value = module if _LAZY[name].endswith("." + name) else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dolda' has no attribute {name!r}")


def __dir__():
    return __all__
