"""The output policy of every ``dolda`` command that writes, checked before any work.

An output file (``--out``, ``--plot``) must lie in an existing directory that this
process can write (a temporary file is created and removed there), must not be one
of the command's input files (compared as files, whatever the spelling of the path),
and must not lie inside a model or checkpoint directory (it would damage it).  A
model output directory (``fit``/``lda --out``) obeys the last two as well, and a
``--checkpoint`` must be another directory than ``--out``, neither inside the other.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click


def _check_output_file(path: Path, option: str = "--out", inputs=()) -> Path:
    """The output policy of every command writing a file, checked before any work: the
    directory exists and can be written, the file is no input of the command
    (``inputs``) and lies in no model or checkpoint directory."""
    path = Path(path)
    if path.is_dir():
        raise click.BadParameter(f"{path} is a directory", param_hint=f"'{option}'")
    if not path.parent.is_dir():
        raise click.BadParameter(f"the directory {path.parent} does not exist",
                                 param_hint=f"'{option}'")
    _refuse_inside_model(path, option)
    for source, name in inputs:
        if source is not None and _same_path(path, source):
            raise click.BadParameter(f"{path} is also the {name}; writing it would replace "
                                     "the input: choose another file", param_hint=f"'{option}'")
    _probe_writable(path.parent, option)
    return path


def _is_model_directory(path: Path) -> bool:
    """A dolda model or checkpoint directory (its header and arrays are there)."""
    from ..io import ARRAYS_FILE, HEADER_FILE

    return (path / HEADER_FILE).is_file() and (path / ARRAYS_FILE).exists()


def _refuse_inside_model(path: Path, option: str) -> None:
    """Refuse an output inside a model or checkpoint directory (it would damage it)."""
    for parent in Path(os.path.abspath(path)).parents:
        if _is_model_directory(parent):
            raise click.BadParameter(
                f"{path} is inside the model or checkpoint directory {parent}; writing there "
                "would damage it: choose a path outside", param_hint=f"'{option}'")


def _same_path(a, b) -> bool:
    """``a`` and ``b`` name the same file (or, not existing yet, the same path)."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def _nested(a, b) -> bool:
    """``a`` and ``b`` are the same directory or one lies inside the other."""
    a, b = Path(os.path.realpath(a)), Path(os.path.realpath(b))
    return a == b or a in b.parents or b in a.parents


def _probe_writable(directory: Path, option: str) -> None:
    """Create and remove a temporary file in ``directory``: a directory that cannot be
    written is refused before the work, not after it."""
    try:
        fd, name = tempfile.mkstemp(prefix=".dolda-probe-", dir=directory)
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        raise click.BadParameter(f"cannot write in {directory}: "
                                 f"{exc.strerror or type(exc).__name__}",
                                 param_hint=f"'{option}'") from None
