"""Saving and loading fitted models and sampler checkpoints, without pickle.

A saved model is a *directory* with two files (the format is specified in
``docs/FORMAT.md``):

``model.json``
    A JSON header: the format name and ``format_version``, a type tag such as
    ``"dolda.DOProbit"``, the dolda version that wrote it, a UTC timestamp, the
    estimator's metadata (parameters, class labels with their dtype, feature
    names, vocabulary, ...), a manifest of the arrays (name, dtype, shape) and
    the SHA-256 of ``arrays.npz``.
``arrays.npz``
    The numeric arrays, written with :func:`numpy.savez` and read back with
    ``allow_pickle=False``: object arrays are refused in both directions, so
    loading a model file never executes code.

Writes are atomic: everything is written into a temporary directory beside the
target, flushed to disk and then renamed into place, so an interrupted or
failed save leaves either the old directory or the new one, never a partial one.

Each estimator class that can be saved implements

* ``_to_state(self) -> (meta, arrays)``: ``meta`` a JSON-encodable dict (use
  :func:`encode_params`, :func:`encode_labels`, :func:`encode_strings`),
  ``arrays`` a dict of name -> numeric :class:`numpy.ndarray` (or None, which
  is skipped and comes back as a missing key);
* ``_from_state(cls, meta, arrays)``: the classmethod that rebuilds it;

and is listed in the registry (:data:`MODEL_TYPES`, or :func:`register_model_type`).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import importlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from . import atomic as _atomic, npz as _npz, schema as _schema, schema_values as _values
from .atomic import fsync_dir as _fsync_dir, umask as _umask
from . import schema_checkpoint as _checkpoint_schema
from .codec import (
    ModelFormatError,
    _from_json,
    _to_json,
    decode_labels,
    decode_params,
    params_as_saved,
    decode_strings,
    encode_labels,
    encode_params,
    encode_strings,
)

logger = logging.getLogger(__name__)

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "FORMAT_VERSION_PLAIN",
    "MODEL_TYPES",
    "ModelFormatError",
    "decode_labels",
    "decode_params",
    "params_as_saved",
    "decode_strings",
    "encode_labels",
    "encode_params",
    "encode_strings",
    "load",
    "load_checkpoint",
    "read_header",
    "register_model_type",
    "save_checkpoint",
    "save_checkpoint_manifest",
    "save_model",
]

#: Value of the ``"format"`` field of every ``model.json``.
FORMAT_NAME = "dolda-model"
#: The newest on-disk format version this dolda reads.  Version 2: the compact word block
#: of DOLDA's draws (``eta_word_draws`` float16, ``lambda_word_stats``), which a
#: version-1 reader would not know how to read; files without it are written as version
#: :data:`FORMAT_VERSION_PLAIN`, so that an older dolda still reads them.
FORMAT_VERSION = 2
#: The version of files that do not use the compact word block.
FORMAT_VERSION_PLAIN = 1
#: The arrays that make a file version 2.
VERSION_2_ARRAYS = ("eta_word_draws",)
#: File names inside a model or checkpoint directory.
HEADER_FILE = "model.json"
ARRAYS_FILE = "arrays.npz"
#: Type tag of the directories written by :func:`save_checkpoint`.
CHECKPOINT_TYPE = "dolda.Checkpoint"

#: Type tag -> ``"module:ClassName"`` of the estimator class that reads it.
#: Classes are imported only when a file of that type is loaded.
MODEL_TYPES: dict[str, str] = {
    "dolda.DOProbit": "dolda.models.probit.estimator:DOProbit",
    "dolda.LDA": "dolda.models.lda:LDA",
    "dolda.DOLDA": "dolda.models.dolda.estimator:DOLDA",
}

_CHUNK = 1 << 20
#: Largest ``model.json`` read (a vocabulary of millions of words fits easily).
MAX_HEADER_BYTES = 1 << 30


# ---------------------------------------------------------------- registry
def register_model_type(tag: str, target: str | type) -> None:
    """Map the type tag ``tag`` to an estimator class.

    Parameters
    ----------
    tag : str
        The ``"type"`` written to ``model.json``, e.g. ``"mypackage.MyModel"``.
    target : str or type
        The class, or ``"module:ClassName"`` to import it lazily.  The class
        must provide ``_to_state`` and the classmethod ``_from_state``.
    """
    if isinstance(target, type):
        target = f"{target.__module__}:{target.__qualname__}"
    if not isinstance(tag, str) or not tag or ":" not in target:
        raise ValueError(f"register_model_type needs a non-empty tag and 'module:Class', "
                         f"got {tag!r} -> {target!r}")
    MODEL_TYPES[tag] = target


def _import_class(tag: str) -> type:
    try:
        target = MODEL_TYPES[tag]
    except KeyError:
        known = ", ".join(sorted(MODEL_TYPES))
        raise ModelFormatError(
            f"unknown model type {tag!r}; this dolda ({_dolda_version()}) knows {known}. "
            "The file may come from a newer dolda or from an extension that is not imported."
        ) from None
    module_name, _, qualname = target.partition(":")
    try:
        obj = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise ModelFormatError(
            f"model type {tag!r} maps to {target}, which cannot be imported: {exc}"
        ) from exc
    return obj


def _type_tag(estimator) -> str:
    cls = type(estimator)
    if "_model_type" in vars(cls):  # a variant stored as its parent, told apart by params
        return cls._model_type
    name = f"{cls.__module__}:{cls.__qualname__}"
    for tag, target in MODEL_TYPES.items():
        if target == name:
            return tag
    # a subclass of a registered class is not silently saved as its parent
    raise TypeError(
        f"{cls.__qualname__} has no dolda model type; register it with "
        "dolda.io.register_model_type(tag, cls)"
    )


def _dolda_version() -> str:
    from .. import __version__

    return __version__


# ---------------------------------------------------------- file plumbing
def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _chmod_like_mkdir(path: Path) -> None:
    os.chmod(path, 0o777 & ~_umask())


def _check_arrays(arrays: dict) -> dict:
    out = {}
    for name, array in arrays.items():
        if array is None:
            continue
        if not isinstance(name, str) or not name or "/" in name:
            raise ValueError(f"array names must be non-empty str without '/', got {name!r}")
        array = np.asarray(array)
        if array.dtype.hasobject:
            raise TypeError(f"array {name!r} has dtype object, which needs pickle; "
                            "store strings in meta or as a fixed-width str array")
        out[name] = array
    return out


def _is_model_dir(path: Path) -> bool:
    return path.is_dir() and (path / HEADER_FILE).is_file()


def _write_directory(path, header: dict, arrays: dict, *, overwrite: bool,
                     compress: bool, extra_files: dict | None = None) -> Path:
    """Write ``header`` + ``arrays`` (+ ``extra_files``) as a model directory at
    ``path``, atomically and under the output lock (see :mod:`dolda.io.atomic`)."""
    path = Path(path)
    arrays = _check_arrays(arrays)
    header = _to_json(header, "meta")
    parent = path.parent
    parent.mkdir(parents=True, exist_ok=True)
    try:
        lock = _atomic.output_lock(path, "model directory")
        lock.__enter__()
    except _atomic.OutputLocked as exc:
        raise ModelFormatError(str(exc)) from None
    try:
        _atomic.recover(path, _is_complete)
        if path.exists():
            if not overwrite:
                raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
            if not (_is_model_dir(path) or (path.is_dir() and not any(path.iterdir()))):
                raise FileExistsError(
                    f"{path} exists and is not a dolda model directory; refusing to replace it")
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=parent))
        try:
            _chmod_like_mkdir(tmp)  # mkdtemp makes it 0700; a model dir is an ordinary dir
            npz = tmp / ARRAYS_FILE
            with open(npz, "wb") as fh:
                (np.savez_compressed if compress else np.savez)(fh, **arrays)
                fh.flush()
                os.fsync(fh.fileno())
            for name, data in (extra_files or {}).items():
                if name in (HEADER_FILE, ARRAYS_FILE) or "/" in name or name.startswith("."):
                    raise ValueError(f"extra file name {name!r} is not allowed")
                with open(tmp / name, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
            header = dict(header)
            header["arrays"] = {name: {"dtype": a.dtype.str, "shape": list(a.shape)}
                                for name, a in arrays.items()}
            header["arrays_file"] = ARRAYS_FILE
            header["arrays_sha256"] = _sha256(npz)
            if header.get("type") == CHECKPOINT_TYPE:  # a checkpoint's header is covered too
                header[_checkpoint_schema.HEADER_SHA256] = \
                    _checkpoint_schema.header_digest(json.loads(json.dumps(header)))
            # model.json last: a directory holding it is complete
            with open(tmp / HEADER_FILE, "w", encoding="utf-8") as fh:
                json.dump(header, fh, indent=2, allow_nan=False)
                fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            _fsync_dir(tmp)
            _atomic.replace_directory(tmp, path, _fsync_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
    finally:
        lock.__exit__(None, None, None)
    return path


def _is_complete(path: Path) -> bool:
    """A directory whose header and arrays read cleanly (used to pick a copy to recover)."""
    try:
        _read_directory(path, _recover=False)
    except Exception:  # any failure: not a usable copy
        return False
    return True


def read_header(path) -> dict:
    """Read and check the ``model.json`` of a model or checkpoint directory.

    Parameters
    ----------
    path : str or path-like
        The directory (or its ``model.json``).

    Returns
    -------
    dict
        The header, with ``format_version`` checked.

    Raises
    ------
    ModelFormatError
        When ``path`` is not a model directory, the JSON is missing or
        malformed, or the format version is newer than this dolda reads.
    """
    return _read_header(path, recover=True)


def _read_header(path, recover: bool) -> dict:
    path = Path(path)
    if path.is_file() and path.name == HEADER_FILE:
        path = path.parent
    if recover:
        path = _atomic.readable_path(path, _is_complete)
    if not path.exists():
        raise ModelFormatError(f"{path} does not exist")
    if not path.is_dir():
        raise ModelFormatError(
            f"{path} is not a dolda model directory (a model is a directory holding "
            f"{HEADER_FILE} and {ARRAYS_FILE})")
    header_path = path / HEADER_FILE
    if not header_path.is_file():
        raise ModelFormatError(
            f"{path} is not a dolda model directory: it has no {HEADER_FILE}")
    _inside(path, header_path)
    size = header_path.stat().st_size
    if size > MAX_HEADER_BYTES:
        raise ModelFormatError(f"{header_path} is {size} bytes, more than the "
                               f"{MAX_HEADER_BYTES} a model header may have")
    try:
        with open(header_path, encoding="utf-8") as fh:
            header = json.load(fh, parse_constant=_refuse_constant)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError,
            RecursionError) as exc:
        message = " ".join(str(exc).split())
        raise ModelFormatError(f"{header_path} is not valid JSON ({message}); "
                               "the file is corrupt or was not written by dolda") from None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise ModelFormatError(f"{header_path} is not a dolda model header "
                               f"(expected \"format\": \"{FORMAT_NAME}\")")
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ModelFormatError(f"{header_path} has an invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        writer = header.get("dolda_version", "an unknown version")
        raise ModelFormatError(
            f"{path} uses model format version {version} (written by dolda {writer}); "
            f"this dolda ({_dolda_version()}) reads format versions up to {FORMAT_VERSION}. "
            "Upgrade dolda to load it (pip install --upgrade dolda).")
    for key in ("type", "arrays_sha256", "arrays"):
        if key not in header:
            raise ModelFormatError(f"{header_path} lacks the required field {key!r}")
    try:
        _schema.check_header(header, ARRAYS_FILE)
        if header["type"] == CHECKPOINT_TYPE:
            _checkpoint_schema.check_header_digest(header)
    except _schema.SchemaError as exc:
        raise _error(header_path, exc) from None
    return header


def _refuse_constant(name):
    raise ValueError(f"{name} is not allowed in a model file (strict JSON)")


def _error(where, message) -> ModelFormatError:
    """A ModelFormatError on one line, naming ``where``."""
    return ModelFormatError(f"{where}: {' '.join(str(message).split())}")


def _inside(directory: Path, file: Path) -> None:
    """Refuse a file of a model directory that is (or links to) something outside it."""
    try:
        real_dir = directory.resolve(strict=True)
        real = file.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise _error(file, f"cannot be resolved ({exc})") from None
    if real.parent != real_dir or not real.is_file():
        raise _error(file, "is a link to a file outside the model directory; "
                     "refusing to read it")


def _read_directory(path, _recover: bool = True, cls=None) -> tuple[dict, dict]:
    """Header and arrays of a model directory, checked against the schema."""
    path = Path(path)
    if path.is_file() and path.name == HEADER_FILE:
        path = path.parent
    if _recover:
        path = _atomic.readable_path(path, _is_complete)
    header = _read_header(path, recover=False)
    npz = path / ARRAYS_FILE
    if not npz.is_file():
        raise ModelFormatError(f"{path} lacks its array file {npz.name}")
    _inside(path, npz)
    meta = header.get("meta", {})
    tag = header["type"]
    try:
        if tag == CHECKPOINT_TYPE:
            facts = _checkpoint_schema.check_checkpoint_manifest(meta, header["arrays"])
        else:
            facts = _schema.check_manifest(tag, cls or _import_class(tag), meta,
                                           header["arrays"])
    except (_schema.SchemaError, ModelFormatError) as exc:
        raise _error(path / HEADER_FILE, exc) from None
    digest = _sha256(npz)
    if digest != header["arrays_sha256"]:
        raise ModelFormatError(
            f"checksum mismatch for {npz}: expected sha256 {header['arrays_sha256']}, "
            f"found {digest}; the file is corrupt or was modified after saving")
    arrays = _npz.read_npz(npz, header["arrays"], lambda message: _error(npz, message))
    try:
        _values.check_values(tag, facts, arrays, checkpoint=tag == CHECKPOINT_TYPE)
    except _schema.SchemaError as exc:
        raise _error(npz, exc) from None
    return header, arrays


def _base_header(type_tag: str, arrays=None) -> dict:
    """The header's fixed fields; the format version is the oldest that can read
    ``arrays`` (version 2 only with the compact word block)."""
    compact = arrays is not None and any(arrays.get(n) is not None for n in VERSION_2_ARRAYS)
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION if compact else FORMAT_VERSION_PLAIN,
        "type": type_tag,
        "dolda_version": _dolda_version(),
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


# --------------------------------------------------------------- public API
def save_model(estimator, path, overwrite: bool = False, compress: bool = False,
               extra_files: dict | None = None) -> Path:
    """Save a fitted dolda estimator as a model directory.

    Parameters
    ----------
    estimator : DOProbit, LDA or DOLDA
        A fitted estimator whose class is registered in :data:`MODEL_TYPES`.
    path : str or path-like
        The directory to create (missing parent directories are created).
    overwrite : bool, default=False
        Replace an existing model directory at ``path``.  A path that exists
        and is not a dolda model (nor an empty directory) is never replaced.
    compress : bool, default=False
        Write ``arrays.npz`` with :func:`numpy.savez_compressed`.
    extra_files : dict of str -> bytes or None
        More files written into the directory in the same atomic replacement
        (the command line's ``cli.json``).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    FileExistsError
        ``path`` exists and ``overwrite`` is False, or it is not a model directory.
    TypeError
        The estimator's class is not registered, or its state needs pickle.
    sklearn.exceptions.NotFittedError
        The estimator is not fitted.

    Notes
    -----
    The write is atomic: files go to a temporary directory beside ``path``
    that is renamed into place once complete.  When replacing an existing
    model the old directory is moved aside first; a process killed before the
    new one is renamed in leaves both complete copies beside ``path``, and
    :func:`load` reads the new one (the next save restores it and deletes the
    leftovers).  A second process saving to the same ``path`` at the same
    time gets a :class:`ModelFormatError` naming the lock.
    """
    tag = _type_tag(estimator)
    meta, arrays = estimator._to_state()
    header = _base_header(tag, arrays)
    header["meta"] = meta
    return _write_directory(path, header, arrays, overwrite=overwrite, compress=compress,
                            extra_files=extra_files)


def load(path):
    """Load an estimator saved by :func:`save_model` (``dolda.load``).

    Parameters
    ----------
    path : str or path-like
        A model directory (or its ``model.json``).

    Returns
    -------
    estimator
        A fitted instance of the class named by the file's type tag.

    Raises
    ------
    ModelFormatError
        Not a model directory, corrupt header or arrays (checksum mismatch),
        unknown type tag, or a format version newer than this dolda reads.
    """
    tag = read_header(path)["type"]
    if tag == CHECKPOINT_TYPE:
        raise ModelFormatError(f"{path} is a sampler checkpoint, not a model; "
                               "read it with dolda.io.load_checkpoint")
    cls = _import_class(tag)
    header, arrays = _read_directory(path, cls=cls)
    if header["type"] != tag:  # replaced between the two reads
        raise ModelFormatError(f"{path} changed while it was read; try again")
    try:
        return cls._from_state(header.get("meta", {}), arrays)
    except ModelFormatError:
        raise
    except Exception as exc:  # the schema should have caught it: still one line
        raise _error(path, f"cannot rebuild a {tag} from the stored state "
                     f"({type(exc).__name__}: {exc})") from None


def save_checkpoint(path, meta: dict, arrays: dict, compress: bool = False) -> Path:
    """Write a sampler checkpoint (always replacing an older one), atomically.

    Same directory format as a model, with type ``"dolda.Checkpoint"``.  Safe
    to call from a ``KeyboardInterrupt`` handler: an interrupted write leaves
    the previous checkpoint intact.

    Parameters
    ----------
    path : str or path-like
        The checkpoint directory.
    meta : dict
        JSON-encodable metadata (iteration, seed, parameters, ...); numpy
        scalars are converted, non-finite floats are kept.
    arrays : dict of str -> ndarray
        Numeric arrays (chain state, draws so far).  None values are skipped.
    compress : bool, default=False
        Compress ``arrays.npz``.

    Returns
    -------
    pathlib.Path
    """
    if not isinstance(meta, dict):
        raise TypeError(f"meta must be a dict, got {type(meta).__name__}")
    header = _base_header(CHECKPOINT_TYPE, arrays)
    header["meta"] = meta
    return _write_directory(path, header, arrays, overwrite=True, compress=compress)


def save_checkpoint_manifest(path, meta: dict) -> Path:
    """Write the manifest of a several-chain checkpoint: ``model.json`` (and an empty
    ``arrays.npz``) in ``path``, beside the chains' own checkpoint directories, each file
    replaced atomically (the chains' directories are left as they are).

    Parameters
    ----------
    path : str or path-like
        The checkpoint directory that holds ``chain0/``, ``chain1/``, ...
    meta : dict
        JSON-encodable metadata (``chains``, ``chain_iterations``, ``fingerprint``, ...:
        :func:`dolda.models.dolda.resume.manifest_meta`).

    Returns
    -------
    pathlib.Path
    """
    from .manifest import write_manifest

    header = _base_header(CHECKPOINT_TYPE)
    header["meta"] = meta
    return write_manifest(Path(path), _to_json(header, "meta"), ARRAYS_FILE, HEADER_FILE)


def load_checkpoint(path) -> tuple[dict, dict]:
    """Read a checkpoint written by :func:`save_checkpoint`.

    Parameters
    ----------
    path : str or path-like
        The checkpoint directory.

    Returns
    -------
    meta : dict
        The metadata as saved (tuples come back as lists).
    arrays : dict of str -> ndarray

    Raises
    ------
    ModelFormatError
        As :func:`load`; also when the directory holds a model, not a checkpoint.
    """
    header, arrays = _read_directory(path)
    if header["type"] != CHECKPOINT_TYPE:
        raise ModelFormatError(f"{path} holds a {header['type']} model, not a checkpoint; "
                               "read it with dolda.load")
    return _from_json(header.get("meta", {})), arrays
