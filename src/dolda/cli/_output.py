"""Output side of the ``dolda`` command: where tables and JSON go, and in which format.

``--out -`` writes to standard output (CSV for a table, JSON for a document), so
that ``dolda predict model/ new.csv --out - | head`` works; the human-readable
summary lines then go to standard error.  Any other ``--out`` path is checked
before the work starts: its extension must name a format the command can write
(``.csv``, ``.tsv``, ``.tab``, ``.parquet``, ``.pq`` for tables; ``.json`` for
JSON), otherwise the command stops with a one-line error instead of writing,
say, CSV into ``results.xlsx``.  Files are written atomically.

What is written goes through :mod:`dolda.utils.escape`: text for the terminal
shows control characters as visible escapes, JSON is exact (and inert on a
terminal), and the text cells of a CSV/TSV table that a spreadsheet would
evaluate as a formula get a leading ``'`` unless the command was given
``--raw-csv``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import click

from ..utils.escape import csv_frame, json_dumps, terminal_text
from ._files import _write_json, _write_table
from ._policy import _check_output_file
from ._tables import CSV_EXTENSIONS, PARQUET_EXTENSIONS

#: The ``--out`` value meaning standard output.
STDOUT = "-"
TABLE_EXTENSIONS = tuple(CSV_EXTENSIONS) + PARQUET_EXTENSIONS
JSON_EXTENSIONS = (".json",)
#: ``--format`` choices of the inspecting commands.
FORMATS = ("text", "json", "csv")


def is_stdout(path) -> bool:
    """True for ``--out -``."""
    return path is not None and str(path) == STDOUT


def check_out(path, kinds=("table",), option: str = "--out", inputs=()):
    """Check an output path before any work: ``-`` (stdout) or a writable file whose
    extension is one of the ``kinds`` ("table", "json"), that is none of the ``inputs``
    (``(path, name)`` pairs) and lies in no model directory; returns the path or ``"-"``."""
    if path is None or is_stdout(path):
        return path if path is None else STDOUT
    path = Path(path)
    if path.is_dir():
        raise click.BadParameter(f"{path} is a directory; give a file name", param_hint=option)
    allowed = []
    if "table" in kinds:
        allowed += TABLE_EXTENSIONS
    if "json" in kinds:
        allowed += JSON_EXTENSIONS
    suffix = path.suffix.lower()
    if suffix not in allowed:
        raise click.BadParameter(
            f"cannot write {suffix or 'a file without extension'!s} files ({path.name}); "
            f"use one of {', '.join(allowed)}, or - for standard output",
            param_hint=f"'{option}'")
    return _check_output_file(path, option, inputs)


def _default(value):
    """JSON encoder for numpy scalars and arrays; NaN and inf become null."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _finite(obj):
    """Replace NaN/inf floats by None, recursively (JSON has no NaN)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    if hasattr(obj, "item") and getattr(obj, "ndim", 1) == 0:
        return _finite(obj.item())
    if hasattr(obj, "tolist"):
        return _finite(obj.tolist())
    return obj


def json_text(obj) -> str:
    """``obj`` as indented JSON (numpy values converted, NaN as null)."""
    return json_dumps(_finite(obj), indent=2, default=_default)


def write_json(obj, path) -> None:
    """Write ``obj`` as JSON to ``path`` (atomically) or to stdout for ``-``."""
    if is_stdout(path):
        click.echo(json_text(obj))
        return
    _write_json(json.loads(json_text(obj)), Path(path))


def write_table(frame, path, formula_guard: bool = True) -> None:
    """Write a DataFrame to ``path`` by its extension (atomically), or CSV to stdout for ``-``.

    CSV/TSV text cells that a spreadsheet would evaluate get a leading ``'`` unless
    ``formula_guard`` is False (:func:`dolda.utils.escape.csv_frame`); Parquet and JSON
    are written exactly; CSV on standard output shows control characters as escapes."""
    if is_stdout(path):
        table = csv_frame(frame) if formula_guard else frame
        click.echo(terminal_text(table.to_csv(index=False)), nl=False)
        return
    path = Path(path)
    if path.suffix.lower() in JSON_EXTENSIONS:
        write_json(frame.to_dict(orient="records"), path)
        return
    if formula_guard and path.suffix.lower() not in PARQUET_EXTENSIONS:
        frame = csv_frame(frame)
    _write_table(frame, path)


def emit(path, text: str) -> None:
    """A human-readable line: to stdout normally, to stderr when stdout carries the data."""
    click.echo(terminal_text(text), err=is_stdout(path))


def write_formatted(fmt: str, out, text_lines, obj, frame, formula_guard: bool = True) -> None:
    """Write a result in ``fmt``: the text lines, the JSON document ``obj`` or the table
    ``frame``, to ``out`` (None or ``-``: stdout)."""
    if fmt == "text":
        body = terminal_text("\n".join(text_lines) + "\n")
        if out is None or is_stdout(out):
            click.echo(body, nl=False)
        else:
            from ._files import _atomic_write

            _atomic_write(Path(out), lambda tmp: Path(tmp).write_text(body, encoding="utf-8"))
    elif fmt == "json":
        write_json(obj, STDOUT if out is None else out)
    else:
        write_table(frame, STDOUT if out is None else out, formula_guard)


def check_format_out(fmt: str, out):
    """``--format`` and ``--out`` together: a file's extension must fit the format."""
    if out is None or is_stdout(out):
        return out
    kinds = {"json": ("json",), "csv": ("table",), "text": ()}[fmt]
    if fmt == "text":
        path = Path(out)
        if path.suffix.lower() not in (".txt", ""):
            raise click.BadParameter(f"--format text writes plain text; use a .txt file or "
                                     f"pick --format json/csv for {path.name}",
                                     param_hint="'--out'")
        return _check_output_file(path)
    return check_out(out, kinds)
