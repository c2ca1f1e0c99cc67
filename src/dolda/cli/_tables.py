"""Reading the input tables of the ``dolda`` command: CSV / TSV (optionally compressed),
Parquet and JSON by extension (:func:`read_table`, :data:`DATA_FORMATS`), and the checked
columns a command takes from them (texts, labels, covariates).

Rows of a table are numbered from 0, the header not counted, as in the ``row``
column written by ``dolda predict``.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import click

from ._common import _columns_hint, _rows, _short
from ._text import _refuse_ragged

CSV_EXTENSIONS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
#: Compressed CSV/TSV, read by extension (``reports.csv.gz``), as ``.jsonl.gz`` is.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma"}
PARQUET_EXTENSIONS = (".parquet", ".pq")
#: JSON tables: one object per line (JSON Lines, optionally gzipped), or one
#: JSON document (a list of row objects, or an object of columns).
JSON_EXTENSIONS = (".jsonl", ".jsonl.gz", ".ndjson", ".json")
#: The table formats, as every command's ``--help`` lists them.
DATA_FORMATS = ("Tables (DATA, --data) are CSV or TSV (.csv, .tsv, .tab; compressed "
                ".csv.gz, .tsv.gz, also .bz2, .xz), Parquet (.parquet, .pq), JSON Lines "
                "(.jsonl, .jsonl.gz, .ndjson) or JSON (.json), chosen by extension.")
#: A label column with a distinct value in every one of at least this many rows
#: is refused as an identifier.
MIN_ROWS_IDENTIFIER = 10


def _decode(path: Path, data: bytes, encoding: str, sep: str) -> str:
    """Decode the bytes of a text table; an undecodable byte names its line and row."""
    codec = "utf-8-sig" if encoding.lower().replace("_", "-") in ("utf-8", "utf8") else encoding
    try:
        return data.decode(codec)
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - line_start + 1
        before = data[:line_start].decode(codec, errors="replace")
        records = sum(1 for _ in csv.reader(io.StringIO(before), delimiter=sep))
        where = "the header" if records == 0 else f"row {records - 1}"
        raise click.ClickException(
            f"{path}: {where} (line {line}, column {column}) is not valid {encoding}: "
            f"byte 0x{data[exc.start]:02x}; re-save the file as {encoding} or pass "
            f"--encoding (e.g. --encoding latin-1)") from None
    except LookupError:
        raise click.BadParameter(f"unknown encoding {encoding!r}",
                                 param_hint="'--encoding'") from None


def _table_suffix(path: Path) -> str:
    name = path.name.lower()
    for suffix in JSON_EXTENSIONS:
        if name.endswith(suffix):
            return suffix
    for csv_suffix in CSV_EXTENSIONS:
        for packed in COMPRESSIONS:
            if name.endswith(csv_suffix + packed):
                return csv_suffix + packed
    return path.suffix.lower()


def _table_bytes(path: Path, suffix: str) -> bytes:
    """The bytes of a CSV/TSV file, decompressed when ``suffix`` ends in a compression."""
    import importlib

    data = path.read_bytes()
    for packed, module in COMPRESSIONS.items():
        if suffix.endswith(packed):
            try:
                return importlib.import_module(module).decompress(data)
            except (OSError, EOFError, ValueError) as exc:  # gzip, bz2 and lzma's errors
                raise click.ClickException(
                    f"{path}: cannot decompress it as {module} ({exc})") from None
    return data


def read_table(path, encoding: str = "utf-8", text_columns=(), label_columns=()):
    """Read a CSV/TSV (by extension ``.csv``, ``.tsv``, ``.tab``, each optionally
    compressed: ``.csv.gz``, ``.tsv.bz2``, ``.csv.xz``), Parquet (``.parquet``, ``.pq``) or
    JSON (``.jsonl``, ``.jsonl.gz``, ``.ndjson``, ``.json``) file into a DataFrame.

    Parameters
    ----------
    path : path-like
    encoding : str, default="utf-8"
        Encoding of a CSV/TSV file; an undecodable byte raises a
        ClickException naming its row and line.
    text_columns : iterable of str
        Columns read as strings whatever they look like (categorical
        covariates whose levels look like numbers, for instance).
    label_columns : iterable of str
        Columns read as the strings they are: in a CSV/TSV file, ``01`` stays
        ``01`` (not the number 1) and ``NA``, ``None``, ``null``, ``nan`` stay
        those words; only an empty cell is missing.  In Parquet and JSON a
        value keeps its type and only a null is missing.

    Raises
    ------
    click.ClickException
        Unknown extension, unreadable or empty file, or duplicated column names
        (which pandas would silently rename or shadow).
    """
    import pandas as pd

    path = Path(path)
    suffix = _table_suffix(path)
    text_columns = list(text_columns)
    label_columns = list(label_columns)
    if suffix in PARQUET_EXTENSIONS or suffix in JSON_EXTENSIONS:
        try:
            if suffix in PARQUET_EXTENSIONS:
                frame = pd.read_parquet(path)
            else:
                frame = pd.read_json(path, lines=suffix != ".json", dtype=False,
                                     # a label column called "date" stays as written
                                     convert_dates=not label_columns,
                                     encoding=encoding,
                                     compression="gzip" if suffix.endswith(".gz") else None)
        except Exception as exc:  # pyarrow and the json parser raise their own error types
            kind = "Parquet" if suffix in PARQUET_EXTENSIONS else "JSON"
            message = " ".join(str(exc).split())[:300]
            raise click.ClickException(f"{path}: cannot read it as {kind} ({message})") \
                from None
        _refuse_duplicated(list(frame.columns), path)
        if frame.shape[1] == 0:
            raise click.ClickException(f"{path} is empty")
        for col in text_columns:
            if col in frame.columns:
                values = frame[col]
                frame[col] = values.astype(str).where(values.notna())
        return frame
    plain = suffix
    for packed in COMPRESSIONS:
        plain = plain.removesuffix(packed) if plain != packed else plain
    if plain not in CSV_EXTENSIONS:
        known = ", ".join(list(CSV_EXTENSIONS) + [".csv.gz", ".tsv.gz"]
                          + list(PARQUET_EXTENSIONS) + list(JSON_EXTENSIONS))
        raise click.ClickException(f"{path}: unknown table format {suffix or '(no extension)'!r}; "
                                   f"use one of {known}")
    sep = CSV_EXTENSIONS[plain]
    text = _decode(path, _table_bytes(path, suffix), encoding, sep)
    if not text.strip():
        raise click.ClickException(f"{path} is empty")
    header = next(csv.reader(io.StringIO(text), delimiter=sep), [])
    _refuse_duplicated(header, path)
    _refuse_ragged(text, sep, path)
    dtype = {col: str for col in text_columns + label_columns if col in header}
    na = {}
    if any(col in header for col in label_columns):
        # per-column NA words: every column keeps pandas' list but the label columns,
        # where a class may well be called "NA" or "None"
        from pandas._libs.parsers import STR_NA_VALUES

        na = {"keep_default_na": False,
              "na_values": {col: ([""] if col in label_columns else sorted(STR_NA_VALUES))
                            for col in header}}
    try:
        return pd.read_csv(io.StringIO(text), sep=sep, dtype=dtype or None, index_col=False,
                           **na)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        message = " ".join(str(exc).split())
        raise click.ClickException(f"{path}: cannot parse the table ({message})") from None


def _refuse_duplicated(columns, path) -> None:
    seen, dup = set(), []
    for col in columns:
        if col in seen and col not in dup:
            dup.append(col)
        seen.add(col)
    if dup:
        raise click.ClickException(f"{path}: column name(s) {', '.join(repr(str(c)) for c in dup)} "
                                   "appear more than once in the header; rename the copies")


def _nested_cells(values):
    """Row numbers whose cell holds a list, array, dict or set (Parquet list/struct cells)."""
    import numpy as np

    if values.dtype != object:
        return []
    nested = [i for i, v in enumerate(values.to_numpy())
              if isinstance(v, (list, tuple, dict, set, np.ndarray))]
    return nested


def _require_columns(frame, columns, path, option: str | None = None) -> None:
    for col in columns:
        if col not in frame.columns:
            via = f" (given by {option})" if option else ""
            raise click.ClickException(f"column {col!r}{via} is not in {path}; its columns are "
                                       f"{_columns_hint(frame)}")


def _texts(frame, column: str, path) -> list:
    """The documents of ``column``: strings, or token lists (a list column of
    strings, e.g. from Parquet or JSON, is passed on as pre-tokenized documents)."""
    import numpy as np

    values = frame[column]
    if len(values) == 0:
        raise click.ClickException(f"{path} has no rows")
    nested = _nested_cells(values)
    if nested:
        docs, bad = [], []
        for i, v in enumerate(values.to_numpy()):
            if isinstance(v, (list, tuple, np.ndarray)) and all(isinstance(t, str) for t in v):
                docs.append([str(t) for t in v])
            elif v is None or (isinstance(v, float) and v != v):
                docs.append([])
            elif isinstance(v, str):
                docs.append(v)
            else:
                bad.append(i)
        if bad:
            raise click.ClickException(
                f"text column {column!r} of {path} holds values that are neither text nor "
                f"lists of words at row(s) {_rows(bad)} (e.g. {_short(values.iloc[bad[0]])})")
        if not any(len(d) for d in docs):
            raise click.ClickException(f"text column {column!r} of {path} is empty: no row "
                                       "has any text")
        return docs
    texts = values.where(values.notna(), "").astype(str)
    if not texts.str.strip().astype(bool).any():
        raise click.ClickException(f"text column {column!r} of {path} is empty: no row has any "
                                   "text")
    return texts.tolist()


def _labels(frame, column: str, path):
    import numpy as np

    values = frame[column]
    nested = _nested_cells(values)
    if nested:
        raise click.ClickException(
            f"label column {column!r} of {path} holds lists or records at row(s) "
            f"{_rows(nested)} (e.g. {_short(values.iloc[nested[0]])}); a label is one value")
    missing = values.isna()
    if values.dtype.kind not in "biufc":
        missing = missing | values.astype(str).str.strip().eq("")
    refuse_missing_labels(missing.to_numpy(), column, path)
    values = _uniform_labels(values)
    levels = values.unique()
    if len(levels) < 2:
        raise click.ClickException(
            f"label column {column!r} has a single class ({levels[0]!r}); a classifier needs "
            "documents of at least 2 classes")
    if len(levels) == len(values) >= MIN_ROWS_IDENTIFIER:
        raise click.ClickException(
            f"label column {column!r} of {path} has a different value in every row "
            f"({len(levels)} classes for {len(values)} documents): it looks like an "
            "identifier, not a class; pass the class column to --label")
    return np.array(values.to_numpy())  # a writable copy (pandas may hand out a view)


def refuse_missing_labels(missing, column, path) -> None:
    """One line naming the rows whose label is missing (an empty CSV cell, a JSON or
    Parquet null); a label that reads ``NA`` or ``None`` is a class, not missing."""
    import numpy as np

    rows = np.flatnonzero(missing)
    if len(rows):
        raise click.ClickException(
            f"label column {column!r} of {path} is empty at row(s) {_rows(rows)} "
            f"({len(rows)} of {len(missing)} rows: an empty cell or a null); drop or label "
            "those rows")


def _uniform_labels(values):
    """Labels of one type: a column mixing numbers and strings (JSON ``1`` and ``"01"``)
    is read as the strings, so that ``1`` and ``01`` stay two classes and sort."""
    if values.dtype == object:
        kinds = {type(v) for v in values.to_numpy()}
        if len(kinds) > 1 and str in kinds:
            return values.map(lambda v: v if isinstance(v, str) else str(v))
    return values


def _split_columns(ctx, param, value):
    """``--covariates A,B`` (also repeatable) -> ["A", "B"]."""
    if not value:
        return []
    names = []
    for item in value:
        for name in item.split(","):
            name = name.strip()
            if name and name not in names:
                names.append(name)
    return names


def _covariates(frame, columns, path, option="--covariates"):
    if not columns:
        return None
    _require_columns(frame, columns, path, option)
    for col in columns:
        nested = _nested_cells(frame[col])
        if nested:
            raise click.ClickException(
                f"covariate column {col!r} of {path} holds lists or records at row(s) "
                f"{_rows(nested)} (e.g. {_short(frame[col].iloc[nested[0]])}); a covariate "
                "is one number or one category per row")
    return frame[list(columns)].copy()


def _read_training_data(data, text_column, label_column, covariates, encoding):
    if text_column == label_column:
        raise click.BadParameter(f"{label_column!r} is also the --text column; the labels "
                                 "must come from another column", param_hint="'--label'")
    if label_column in covariates:
        raise click.BadParameter(f"the label column {label_column!r} cannot be a covariate: "
                                 "the model would read the answer (target leak)",
                                 param_hint="'--covariates'")
    if text_column in covariates:
        raise click.BadParameter(f"the text column {text_column!r} cannot be a covariate "
                                 "(every document would be its own category)",
                                 param_hint="'--covariates'")
    frame = read_table(data, encoding, label_columns=[label_column])
    _require_columns(frame, [text_column], data, "--text")
    _require_columns(frame, [label_column], data, "--label")
    texts = _texts(frame, text_column, data)
    y = _labels(frame, label_column, data)
    X = _covariates(frame, covariates, data)
    return frame, texts, y, X
