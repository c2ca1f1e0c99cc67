"""Writing the ``dolda`` command's output files atomically (a temporary file beside the
target, renamed into place, under the output's lock), so that a failed or interrupted run
never leaves a partial file; and the locks of ``--out`` model and ``--checkpoint``
directories, checked before any work.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import tempfile
from pathlib import Path

import click

from ._policy import _probe_writable, _refuse_inside_model
from ._tables import CSV_EXTENSIONS, PARQUET_EXTENSIONS


def _atomic_write(path: Path, write) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it onto ``path``.

    Under the output's lock (:func:`dolda.io.atomic.output_lock`), so the temporary files
    a killed run left beside ``path`` (``.<name>.*.tmp``) are removed first."""
    from ..io import atomic as _atomic

    path = Path(path)
    try:
        with _atomic.output_lock(path, "output file"):
            for stale in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
                with contextlib.suppress(OSError):
                    stale.unlink()
            _write_beside(path, write)
    except _atomic.OutputLocked as exc:
        raise click.ClickException(str(exc)) from None


def _write_beside(path: Path, write) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    from ..io import _umask as read_umask

    return read_umask()


def _write_table(frame, path: Path) -> None:
    suffix = path.suffix.lower()
    if suffix in PARQUET_EXTENSIONS:
        _atomic_write(path, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        sep = CSV_EXTENSIONS.get(suffix, ",")
        _atomic_write(path, lambda tmp: frame.to_csv(tmp, sep=sep, index=False))


def _write_json(obj, path: Path) -> None:
    def write(tmp):
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(obj, fh, indent=2)
            fh.write("\n")

    _atomic_write(path, write)


def _check_model_out(path: Path, overwrite: bool) -> Path:
    """Refuse early (before a long fit) an output directory that cannot be written.

    Takes the output's lock for the rest of the command (released when the
    command ends), so a second ``dolda fit`` writing the same ``--out`` stops
    at once with one line instead of racing this one; a model left beside
    ``path`` by an interrupted replacement is put back first.
    """
    from ..io import atomic as _atomic
    from ..io import HEADER_FILE, _is_complete

    path = Path(path)
    if not path.parent.is_dir():
        raise click.BadParameter(f"the directory {path.parent} does not exist",
                                 param_hint="'--out'")
    _refuse_inside_model(path, "--out")
    _probe_writable(path.parent, "--out")
    _hold_lock(path, "model directory", "'--out'")
    _atomic.recover(path, _is_complete)
    if path.exists():
        is_model = path.is_dir() and (path / HEADER_FILE).is_file()
        empty = path.is_dir() and not any(path.iterdir())
        if not (is_model or empty):
            raise click.BadParameter(f"{path} exists and is not a dolda model directory; "
                                     "refusing to replace it", param_hint="'--out'")
        if is_model and not overwrite:
            raise click.BadParameter(f"{path} already holds a model; pass --overwrite to "
                                     "replace it", param_hint="'--out'")
    return path


def _hold_lock(path: Path, what: str, param_hint: str) -> None:
    """Lock ``path`` (see :func:`dolda.io.atomic.output_lock`) until the command ends."""
    from ..io import atomic as _atomic

    lock = _atomic.output_lock(path, what)
    try:
        lock.__enter__()
    except _atomic.OutputLocked as exc:
        raise click.BadParameter(str(exc), param_hint=param_hint) from None
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(lambda: lock.__exit__(None, None, None))


def _lock_checkpoint(path) -> None:
    """Lock a ``--checkpoint`` directory for the whole fit (two fits never share one)."""
    if path is not None:
        path = Path(path)
        if not path.parent.is_dir():
            raise click.BadParameter(f"the directory {path.parent} does not exist",
                                     param_hint="'--checkpoint'")
        _probe_writable(path.parent, "--checkpoint")
        _hold_lock(path, "checkpoint directory", "'--checkpoint'")
        from ..io import atomic as _atomic
        from ..io import _is_complete

        _atomic.recover(path, _is_complete)  # the .tmp-*/.old-* of a killed run
