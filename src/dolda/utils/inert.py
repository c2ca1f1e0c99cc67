"""Options given where they have no effect.

A Dask-only option with the local backend, a word option with no word
covariates, ``calibration_holdout`` with probabilities that never read the map
it feeds: each is accepted by the estimator and changes nothing, so a user who
set it believes something happened.  :func:`check_inert` takes the flat
parameter dict of :meth:`dolda.DOLDA.get_params` and returns one finding per
inert option group, each with a message that names the option, says why it does
nothing and what would make it count.  The estimator turns the findings into
warnings (``level == "warning"``) or errors (``level == "error"``) before any
expensive work; the command line does the same for its options.

Only a value that differs from the default is reported: a default is never the
user's statement.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Inert", "check_inert", "inert_warnings", "inert_errors"]

class Inert(NamedTuple):
    """One finding: ``level`` "warning" or "error", the option ``names`` it concerns, and
    the one-line ``message``."""

    level: str
    names: tuple
    message: str


def _given(params, name, defaults) -> bool:
    """``name`` is set to something other than its default."""
    if name not in params:
        return False
    value, default = params[name], defaults[name]
    if isinstance(default, tuple) and isinstance(value, (list, tuple)):
        return tuple(value) != default
    if isinstance(value, str) or isinstance(default, str) or value is None or default is None:
        return not (type(value) is type(default) and value == default)
    try:
        return bool(value != default)
    except (TypeError, ValueError):  # an array alpha, for instance
        return True


def _listed(params, names, defaults):
    return [n for n in names if _given(params, n, defaults)]


def _show(params, names):
    return ", ".join(f"{n}={params[n]!r}" for n in names)


def _no_words(params, defaults) -> bool:
    n_words = params.get("n_words", defaults["n_words"])
    return (not isinstance(n_words, (str, bool)) and isinstance(n_words, (int, float))
            and n_words == 0)


def check_inert(params: dict, defaults: dict) -> list[Inert]:
    """The inert options of the DOLDA options ``params`` by their flat names
    (:func:`dolda.models.dolda.options.flat_params`), against their ``defaults``
    (:func:`dolda.models.dolda.options.flat_defaults`)."""
    found = []
    backend = params.get("backend", defaults["backend"])
    if backend == "local":
        names = _listed(params, ("client", "snapshot_every", "phi_transport"), defaults)
        if names:
            found.append(Inert("warning", tuple(names), (
                f"{_show(params, names)} only apply to backend='dask' and have no effect "
                "with backend='local'; pass backend='dask' or drop them")))
    if _no_words(params, defaults):
        names = _listed(params, ("word_features", "word_selection", "word_prior",
                                 "word_prior_variance"), defaults)
        if names:
            found.append(Inert("warning", tuple(names), (
                f"{_show(params, names)} configure the word covariates, and n_words=0 "
                "has none; pass n_words > 0 (or 'auto') or drop them")))
    elif (_given(params, "word_prior_variance", defaults)
          and params.get("word_prior", defaults["word_prior"]) == "horseshoe"):
        found.append(Inert("warning", ("word_prior_variance",), (
            f"word_prior_variance={params['word_prior_variance']!r} is the variance of the "
            "Gaussian word prior and has no effect with word_prior='horseshoe'; pass "
            "word_prior='normal' or 'both', or drop it")))
    if (_given(params, "calibration_holdout", defaults)
            and params.get("proba", defaults["proba"]) != "calibrated"):
        found.append(Inert("warning", ("calibration_holdout",), (
            f"calibration_holdout={params['calibration_holdout']!r} feeds the 'calibrated' "
            f"probabilities, which proba={params['proba']!r} does not use: it keeps rows out "
            "of the chain for nothing; pass proba='calibrated' or drop it")))
    if params.get("prior", defaults["prior"]) != "horseshoe":
        names = _listed(params, ("slab_scale", "slab_blocks", "global_scales"), defaults)
        if names:
            found.append(Inert("warning", tuple(names), (
                f"{_show(params, names)} shape the Horseshoe prior and have no effect with "
                f"prior={params['prior']!r}; pass prior='horseshoe' or drop them")))
    elif (params.get("slab_scale", defaults["slab_scale"]) is None
          and _given(params, "slab_blocks", defaults)):
        found.append(Inert("warning", ("slab_blocks",), (
            f"slab_blocks={params['slab_blocks']!r} names the blocks under the slab, and "
            "slab_scale=None has no slab; pass a slab_scale or drop slab_blocks")))
    if (params.get("checkpoint", defaults["checkpoint"]) is None
            and _given(params, "checkpoint_every", defaults)):
        found.append(Inert("warning", ("checkpoint_every",), (
            f"checkpoint_every={params['checkpoint_every']!r} has no effect without "
            "checkpoint=DIR; pass a checkpoint directory or drop it")))
    if params.get("two_step", False) is True:
        learned = [n for n, auto in (("alpha", ("auto", "auto_symmetric")), ("beta", ("auto",)))
                   if isinstance(params.get(n), str) and params.get(n) in auto]
        if learned:
            found.append(Inert("warning", tuple(learned), (
                f"{_show(params, learned)}: the two-step model does not learn them and uses "
                "the starting values; pass numbers or two_step=False")))
    sweeps = params.get("predict_sweeps", defaults["predict_sweeps"])
    burn = params.get("predict_burn_in", defaults["predict_burn_in"])
    if (isinstance(sweeps, int) and isinstance(burn, int) and not isinstance(burn, bool)
            and burn >= sweeps):
        found.append(Inert("error", ("predict_burn_in", "predict_sweeps"), (
            f"predict_burn_in={burn} discards all {sweeps} predict_sweeps, leaving none to "
            "average; pass predict_burn_in < predict_sweeps")))
    return found


def inert_warnings(params: dict, defaults: dict) -> list[str]:
    """The messages of the warning-level findings of :func:`check_inert`."""
    return [f.message for f in check_inert(params, defaults) if f.level == "warning"]


def inert_errors(params: dict, defaults: dict) -> list[str]:
    """The messages of the error-level findings of :func:`check_inert`."""
    return [f.message for f in check_inert(params, defaults) if f.level == "error"]
