"""Reading a model's ``arrays.npz`` as untrusted input: headers first, data after.

:func:`read_npz` opens the zip archive, checks every member's name and its
``.npy`` header (format version, dtype, shape, declared size against the
member's real size) against the manifest of ``model.json`` and against a
memory cap, and only then reads the data, with ``allow_pickle=False``.  An
archive that declares a 5 GiB array therefore fails in microseconds with one
line instead of allocating first.  Every failure is a
:class:`dolda.io.ModelFormatError` (raised through the ``error`` callback).
"""

from __future__ import annotations

import math
import os
import zipfile

import numpy as np
from numpy.lib import format as npy_format

#: Largest ``.npy`` header read (numpy's own default limit).
MAX_HEADER_SIZE = 10_000
#: Dtype kinds a model file may hold: bool, ints, unsigned, floats, fixed-width str.
ALLOWED_KINDS = "biufU"
#: Deflate's largest possible expansion (its maximal blocks turn 258 bytes into 2 bits:
#: under 1032:1); a member declaring more uncompressed bytes than this many times its
#: compressed size plus a header's is lying about its size.
MAX_INFLATE_RATIO = 1032
#: Environment variable overriding the cap on the total bytes of a model's arrays.
MAX_BYTES_ENV = "DOLDA_MAX_MODEL_BYTES"


def max_model_bytes() -> int:
    """Cap on the total size of the arrays of one model file, in bytes.

    ``$DOLDA_MAX_MODEL_BYTES`` when set, else half of the physical memory
    (or 8 GiB when that cannot be read).
    """
    value = os.environ.get(MAX_BYTES_ENV)
    if value:
        try:
            return int(float(value))
        except ValueError:
            pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB" if n >= 2**30 else f"{n / 2**20:.1f} MiB"


def _read_header(fh):
    version = npy_format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = npy_format.read_array_header_1_0(
            fh, max_header_size=MAX_HEADER_SIZE)
    elif version == (2, 0):
        shape, fortran, dtype = npy_format.read_array_header_2_0(
            fh, max_header_size=MAX_HEADER_SIZE)
    else:
        raise ValueError(f"unsupported .npy format version {version}")
    return shape, fortran, dtype


def _check_member_sizes(path, members, error) -> None:
    """Every member's declared size is one its bytes on disk can hold, before any is read:
    a stored member holds exactly its bytes, a deflated one at most
    :data:`MAX_INFLATE_RATIO` times its compressed bytes (what the file's own size bounds)."""
    size = os.path.getsize(path)
    for key, info in members.items():
        if info.compress_type == zipfile.ZIP_STORED:
            ok = info.compress_size == info.file_size
        else:
            ok = info.file_size <= MAX_INFLATE_RATIO * info.compress_size + MAX_HEADER_SIZE
        if not ok or info.header_offset + info.compress_size > size:
            raise error(f"array {key!r} declares {info.file_size} bytes, more than its "
                        f"{info.compress_size} bytes in the {size}-byte {path.name} can hold")


def read_npz(path, manifest: dict, error, max_bytes: int | None = None) -> dict:
    """The arrays of ``path`` after checking them against ``manifest``.

    Parameters
    ----------
    path : Path
        The ``arrays.npz`` file.
    manifest : dict
        ``name -> {"dtype": str, "shape": [int, ...]}`` from ``model.json``
        (already checked for types).
    error : callable
        ``error(message)`` returns the exception to raise (a ModelFormatError).
    max_bytes : int or None
        Cap on the total array bytes (default :func:`max_model_bytes`).

    Returns
    -------
    dict of str -> ndarray
    """
    max_bytes = max_model_bytes() if max_bytes is None else max_bytes
    total = sum(np.dtype(spec["dtype"]).itemsize * math.prod(spec["shape"])
                for spec in manifest.values())
    if total > max_bytes:
        raise error(f"its arrays declare {_gib(total)} in all, more than the "
                    f"{_gib(max_bytes)} allowed (set ${MAX_BYTES_ENV} to raise the cap)")
    try:
        archive = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        raise error(f"{path.name} is not a readable zip archive ({exc})") from None
    with archive:
        members = {}
        for info in archive.infolist():
            name = info.filename
            if info.is_dir() or not name.endswith(".npy") or "/" in name or "\\" in name:
                raise error(f"{path.name} holds {name!r}, which is not an array member "
                            "(<name>.npy)")
            key = name[:-4]
            if key in members:
                raise error(f"{path.name} holds the array {key!r} twice")
            members[key] = info
        if set(members) != set(manifest):
            raise error(f"{path.name} holds arrays {sorted(members)}, but model.json lists "
                        f"{sorted(manifest)}")
        _check_member_sizes(path, members, error)
        plans = {}
        for key, info in members.items():
            spec = manifest[key]
            try:
                with archive.open(info) as fh:
                    shape, fortran, dtype = _read_header(fh)
                    header_len = fh.tell()
            except Exception as exc:  # ValueError, zipfile/zlib errors, EOFError
                raise error(f"array {key!r} has no valid .npy header "
                            f"({type(exc).__name__}: {exc})") from None
            if dtype.hasobject or dtype.kind not in ALLOWED_KINDS or dtype.names is not None:
                raise error(f"array {key!r} has dtype {dtype}, which a model file never holds "
                            "(object arrays would need pickle)")
            if dtype.str != spec["dtype"] or list(shape) != list(spec["shape"]):
                raise error(f"array {key!r} is {dtype.str}{list(shape)} but model.json says "
                            f"{spec['dtype']}{list(spec['shape'])}")
            nbytes = dtype.itemsize * math.prod(shape)
            if info.file_size != header_len + nbytes:
                raise error(f"array {key!r} declares {nbytes} bytes of data but its member "
                            f"holds {info.file_size - header_len}")
            plans[key] = info
        arrays = {}
        for key, info in plans.items():
            try:
                with archive.open(info) as fh:
                    arrays[key] = npy_format.read_array(fh, allow_pickle=False,
                                                        max_header_size=MAX_HEADER_SIZE)
            except Exception as exc:
                raise error(f"array {key!r} cannot be read ({type(exc).__name__}: {exc})") \
                    from None
    return arrays
