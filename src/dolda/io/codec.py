"""JSON encoding of what a model file's header holds: estimator parameters, class labels
with their dtype, string lists, and non-finite floats (``{"__float__": "nan"}``).

Used by :mod:`dolda.io` and by each estimator's ``_to_state`` / ``_from_state``
(through the names :mod:`dolda.io` re-exports).
"""

from __future__ import annotations

import logging
import math
import numbers

import numpy as np

logger = logging.getLogger("dolda.io")


class ModelFormatError(ValueError):
    """A path is not a readable dolda model or checkpoint directory.

    Raised for a missing or malformed ``model.json``, a checksum mismatch
    (corrupt or edited ``arrays.npz``), an unknown type tag, a format version
    newer than this dolda supports, or arrays that would need pickle.
    """


def _to_json(value, where: str):
    """Plain JSON value for ``value``: numpy scalars and small arrays become
    Python numbers and lists; non-finite floats become ``{"__float__": "nan"}``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: dict keys must be str, got {key!r}")
            out[key] = _to_json(item, f"{where}[{key!r}]")
        return out
    if isinstance(value, (list, tuple)):
        return [_to_json(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, np.ndarray) and value.dtype != object:
        return _to_json(value.tolist(), where)
    raise TypeError(f"{where}: {type(value).__name__} is not JSON-encodable "
                    "(put arrays in the arrays dict, not in meta)")


def _from_json(value):
    if isinstance(value, dict):
        if set(value) == {"__float__"}:
            text = value["__float__"]
            if text not in ("nan", "inf", "-inf"):
                raise ModelFormatError(f"{{'__float__': {text!r}}} is not a non-finite float "
                                       "encoding (expected 'nan', 'inf' or '-inf')")
            return float(text)
        return {key: _from_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_from_json(item) for item in value]
    return value


def encode_params(params: dict) -> dict:
    """JSON-encodable copy of estimator parameters (``get_params(deep=False)``).

    Numbers, strings, booleans, None and lists/tuples/dicts of them are kept;
    a parameter that cannot be written as JSON (e.g. a ``numpy.random.Generator``
    as ``random_state``) is stored as None and listed under ``"__dropped__"``,
    with a log message.

    Parameters
    ----------
    params : dict
        Parameter name -> value.

    Returns
    -------
    dict
    """
    out, dropped = {}, []
    for name, value in params.items():
        try:
            out[name] = _to_json(value, name)
        except TypeError:
            out[name] = None
            dropped.append(name)
    if dropped:
        logger.warning("parameters %s cannot be stored as JSON and are saved as None", dropped)
        out["__dropped__"] = dropped
    return out


def decode_params(encoded: dict) -> dict:
    """Inverse of :func:`encode_params` (tuples come back as lists)."""
    return {k: _from_json(v) for k, v in encoded.items() if k != "__dropped__"}


def params_as_saved(cls, encoded: dict) -> dict:
    """The constructor parameters a file was written with: :func:`decode_params`, plus, for
    a parameter added after the file was written (absent from it), the value that
    reproduces what the file's model was fitted with (``cls._ABSENT_PARAMS``), which a
    later change of the default must not alter (``DOLDA.slab_scale``: a file without it
    was fitted without the slab)."""
    params = decode_params(encoded)
    for name, value in getattr(cls, "_ABSENT_PARAMS", {}).items():
        params.setdefault(name, value)
    return params


def encode_labels(classes) -> dict:
    """Class labels as JSON with their dtype, so that int/str/bool/float labels round-trip.

    Parameters
    ----------
    classes : array-like (L,)
        Labels; numeric, boolean, numpy strings, or an object array of str.

    Returns
    -------
    dict
        ``{"dtype": <numpy dtype string>, "values": [...]}``.

    Raises
    ------
    TypeError
        For labels that are neither numbers, booleans nor strings (they could
        only be stored with pickle).
    """
    classes = np.asarray(classes)
    kind = classes.dtype.kind
    if kind == "O":
        if all(isinstance(v, str) for v in classes):
            values = [str(v) for v in classes]
        elif all(isinstance(v, (numbers.Integral, np.integer))
                 and not isinstance(v, (bool, np.bool_)) for v in classes):
            values = [int(v) for v in classes]
        elif all(isinstance(v, (bool, np.bool_)) for v in classes):
            # Python bools (y=[True, False]) are saved as a bool array
            return {"dtype": np.dtype(bool).str, "values": [bool(v) for v in classes]}
        elif all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
                 and math.isfinite(v) for v in classes):
            return {"dtype": np.dtype(np.float64).str, "values": [float(v) for v in classes]}
        else:
            types = sorted({type(v).__name__ for v in classes})
            raise TypeError(f"labels of type {types} cannot be saved without pickle; "
                            "use str or int labels")
    elif kind in "biufU":
        values = _to_json(classes.tolist(), "classes")
    else:
        raise TypeError(f"labels of dtype {classes.dtype} cannot be saved; use str or int labels")
    return {"dtype": classes.dtype.str if kind != "O" else "object", "values": values}


def decode_labels(encoded: dict) -> np.ndarray:
    """Inverse of :func:`encode_labels`: an array with the original dtype."""
    values = _from_json(encoded["values"])
    if encoded["dtype"] == "object":
        out = np.empty(len(values), dtype=object)
        out[:] = values
        return out
    return np.asarray(values, dtype=np.dtype(encoded["dtype"]))


def encode_strings(values) -> list[str] | None:
    """A list of str (feature names, vocabulary words) as JSON; None stays None."""
    if values is None:
        return None
    return [str(v) for v in values]


def decode_strings(encoded) -> np.ndarray | None:
    """Inverse of :func:`encode_strings`: an object array of str (scikit-learn's
    convention for ``feature_names_in_``), or None."""
    if encoded is None:
        return None
    out = np.empty(len(encoded), dtype=object)
    out[:] = list(encoded)
    return out


def fitted_from_state(cls, meta: dict, arrays: dict):
    """A new ``cls`` with what every saved dolda estimator holds: its parameters, classes,
    seed, iteration and chain counts, the kept draws of eta (and the Horseshoe's tau and
    lambda, None under the normal prior) and the calibration map (None in files saved
    before 0.2).  Each estimator's ``_from_state`` adds its own attributes."""
    params = params_as_saved(cls, meta["params"])
    model = cls._from_params(params) if hasattr(cls, "_from_params") else cls(**params)
    model.classes_ = decode_labels(meta["classes"])
    model.seed_ = meta["seed"]
    model.n_iter_ = meta["n_iter"]
    model.n_chains_ = int(meta.get("n_chains", 1))
    model.eta_draws_ = arrays["eta_draws"]
    model.tau_draws_ = arrays.get("tau_draws")
    model.lambda_draws_ = arrays.get("lambda_draws")
    model.stacking_ = arrays.get("stacking")
    return model
