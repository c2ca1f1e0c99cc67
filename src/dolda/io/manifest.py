"""Writing the manifest of a several-chain checkpoint (:func:`dolda.io.save_checkpoint_manifest`).

The directory holds one checkpoint directory per chain, each replaced atomically by
:func:`dolda.io.save_checkpoint`; the manifest is the directory's own header and an empty
array file, each written to a temporary file, flushed and renamed over the old one, so
that a process killed at any moment leaves the old manifest or the new one.
"""

from __future__ import annotations

import io
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from . import schema_checkpoint as _checkpoint_schema


def _replace_file(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _umask() -> int:
    from .atomic import umask

    return umask()


def _empty_npz() -> bytes:
    buf = io.BytesIO()
    np.savez(buf)
    return buf.getvalue()


def write_manifest(path: Path, header: dict, arrays_file: str, header_file: str) -> Path:
    """``header`` (the JSON-ready base header with its meta) as ``path/header_file``, with
    an empty ``path/arrays_file``; returns ``path``."""
    import hashlib

    from .atomic import fsync_dir as _fsync_dir

    path.mkdir(parents=True, exist_ok=True)
    for leftover in path.glob(f".{header_file}.tmp-*"):  # of a killed write
        leftover.unlink(missing_ok=True)
    for leftover in path.glob(f".{arrays_file}.tmp-*"):
        leftover.unlink(missing_ok=True)
    empty = _empty_npz()
    npz = path / arrays_file
    if not npz.is_file() or npz.stat().st_size != len(empty) or npz.read_bytes() != empty:
        _replace_file(npz, empty)
    header = dict(header)
    header["arrays"] = {}
    header["arrays_file"] = arrays_file
    header["arrays_sha256"] = hashlib.sha256(empty).hexdigest()
    header[_checkpoint_schema.HEADER_SHA256] = _checkpoint_schema.header_digest(header)
    _replace_file(path / header_file,
                  (json.dumps(header, indent=2, allow_nan=False) + "\n").encode("utf-8"))
    _fsync_dir(path)
    return path
