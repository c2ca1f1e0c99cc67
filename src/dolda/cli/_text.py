"""Reading text without guessing: standard input decoded by ``--encoding`` like a file,
and CSV/TSV records whose width differs from the header refused with their line."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import click


def decode_text(data: bytes, encoding: str, what: str = "standard input") -> str:
    """Decode one text (standard input) by the rules of :func:`read_table`: an
    undecodable byte or an unknown ``--encoding`` is one line naming it."""
    codec = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise click.ClickException(
            f"{what} (line {line}, column {column}) is not valid {encoding}: byte "
            f"0x{data[exc.start]:02x}; pass --encoding (e.g. --encoding latin-1)") from None
    except LookupError:
        raise click.BadParameter(f"unknown encoding {encoding!r}",
                                 param_hint="'--encoding'") from None


def _refuse_ragged(text: str, sep: str, path: Path) -> None:
    """Every record of a CSV/TSV text has as many fields as its header: pandas would
    otherwise take a surplus first field as the index (shifting every column) or fill
    missing fields with NaN, silently."""
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, 1 << 30))  # long documents are legal cells
    try:
        reader = csv.reader(io.StringIO(text), delimiter=sep)
        width = None
        for record in reader:
            if not record:  # a blank line, skipped by pandas too
                continue
            if width is None:
                width = len(record)
                continue
            if len(record) != width:
                row = reader.line_num
                raise click.ClickException(
                    f"{path}: cannot parse the table: line {row} has {len(record)} "
                    f"field(s) but the header has {width}; quote a cell that holds "
                    f"{'a tab' if sep == chr(9) else repr(sep)} or fix the row")
    except csv.Error as exc:
        raise click.ClickException(f"{path}: cannot parse the table: line {reader.line_num}: "
                                   f"{exc}") from None
    finally:
        csv.field_size_limit(limit)
