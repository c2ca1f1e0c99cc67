"""The ``dolda`` command: fit, predict, evaluate, inspect and demo DOLDA from a shell.

Every command reads tables with :func:`read_table` (:data:`DATA_FORMATS`, chosen
by the file extension), checks its input before any work starts, and writes its
output atomically (a temporary file beside the target, renamed into place), so
that a failed or interrupted run never leaves a partial file.  Input errors are
reported as one line by :class:`click.ClickException` with a non-zero exit code.

Rows of a table are numbered from 0, the header not counted, as in the ``row``
column written by ``dolda predict``.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import io
import json
import logging
import os
import tempfile
import warnings
from pathlib import Path

import click

#: Model-directory file holding what the command line needs besides the model:
#: the names of the text and label columns it was fitted on.
CLI_META_FILE = "cli.json"
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
#: Exit code of a run stopped by Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130
MAX_ROWS_SHOWN = 5
#: A label column with a distinct value in every one of at least this many rows
#: is refused as an identifier.
MIN_ROWS_IDENTIFIER = 10

logger = logging.getLogger(__name__)

# the output policy and the signal handling live in their own modules
from ._policy import (  # noqa: E402,F401
    _check_output_file,
    _is_model_directory,
    _nested,
    _probe_writable,
    _refuse_inside_model,
    _same_path,
)
from ._signals import _interrupts  # noqa: E402,F401
from ._text import _refuse_ragged, decode_text  # noqa: E402,F401


# ================================================================ helpers
def _rows(index) -> str:
    """At most :data:`MAX_ROWS_SHOWN` row numbers, then an ellipsis."""
    index = [int(i) for i in index]
    shown = ", ".join(str(i) for i in index[:MAX_ROWS_SHOWN])
    return shown + (", ..." if len(index) > MAX_ROWS_SHOWN else "")


def _columns_hint(frame) -> str:
    return ", ".join(repr(str(c)) for c in frame.columns)


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


def read_table(path, encoding: str = "utf-8", text_columns=()):
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
    if suffix in PARQUET_EXTENSIONS or suffix in JSON_EXTENSIONS:
        try:
            if suffix in PARQUET_EXTENSIONS:
                frame = pd.read_parquet(path)
            else:
                frame = pd.read_json(path, lines=suffix != ".json", dtype=False,
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
    dtype = {col: str for col in text_columns if col in header}
    try:
        return pd.read_csv(io.StringIO(text), sep=sep, dtype=dtype or None, index_col=False)
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
    missing = missing.to_numpy()
    if missing.any():
        n = int(missing.sum())
        raise click.ClickException(
            f"texts and labels have different lengths: {len(values)} texts but "
            f"{len(values) - n} labels (label column {column!r} is empty at row(s) "
            f"{_rows(np.flatnonzero(missing))}); drop or label those rows")
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


def _short(value, width: int = 60) -> str:
    text = repr(value.tolist() if hasattr(value, "tolist") else value)
    return text if len(text) <= width else text[:width - 3] + "..."


@contextlib.contextmanager
def _echo_warnings():
    """Show each distinct warning raised inside the block once, on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            seen = set()
            for w in caught:
                text = str(w.message)
                if text not in seen:
                    seen.add(text)
                    click.echo(f"Warning: {text}", err=True)


@contextlib.contextmanager
def _library_errors(what: str = ""):
    """Turn the library's input errors (ValueError, which includes ModelFormatError)
    into one-line ClickExceptions."""
    try:
        yield
    except (ValueError, TypeError) as exc:  # the library's input errors
        message = " ".join(str(exc).split())
        raise click.ClickException(f"{what}{message}") from None
    except MemoryError:
        raise click.ClickException(
            f"{what}out of memory; lower --topics or use fewer documents or covariates") \
            from None


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


def _save_model(model, path: Path, cli_meta: dict) -> None:
    """Save ``model`` plus ``cli.json`` as one atomic directory at ``path``.

    ``dolda.io.save_model`` writes both into a temporary directory beside
    ``path`` and renames it into place (an existing model directory is moved
    aside first and deleted afterwards; see ``docs/FORMAT.md``).
    """
    from ..io import save_model

    data = (json.dumps(cli_meta, indent=2) + "\n").encode("utf-8")
    save_model(model, path, overwrite=True, extra_files={CLI_META_FILE: data})


#: Fields of ``cli.json`` and their types (all optional).
CLI_META_FIELDS = {"text_column": str, "label_column": str, "covariates": list,
                   "data": str, "n_docs": int}


def _check_cli_meta(meta, meta_path, model) -> dict:
    """``cli.json`` is untrusted input too: a JSON object with the documented fields."""
    if not isinstance(meta, dict):
        raise click.ClickException(f"{meta_path} is not a JSON object")
    for key, kind in CLI_META_FIELDS.items():
        value = meta.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            raise click.ClickException(f"{meta_path}: field {key!r} must be a "
                                       f"{kind.__name__}, got {type(value).__name__}")
    covariates = meta.get("covariates") or []
    if not all(isinstance(c, str) for c in covariates):
        raise click.ClickException(f"{meta_path}: field 'covariates' must be a list of "
                                   "column names")
    model_cov, _ = _model_covariates(model)
    if covariates and len(covariates) != len(model_cov):
        raise click.ClickException(f"{meta_path}: lists {len(covariates)} covariate(s) but "
                                   f"the model has {len(model_cov)}")
    return meta


def _load_model(path):
    """A fitted DOLDA and its CLI metadata, or a one-line error."""
    from ..io import atomic as _atomic
    from ..io import ModelFormatError, _is_complete, load
    from ..models.dolda.estimator import DOLDA

    path = Path(path)
    try:
        model = load(path)
    except ModelFormatError as exc:
        message = " ".join(str(exc).split())
        raise click.ClickException(f"{path} is not a dolda model: {message}") from None
    if not isinstance(model, DOLDA):
        raise click.ClickException(f"{path} holds a {type(model).__name__}, not a DOLDA model")
    meta = {}
    meta_path = _atomic.readable_path(path, _is_complete) / CLI_META_FILE
    if meta_path.is_symlink():
        raise click.ClickException(f"{meta_path} is a link; refusing to read it")
    if meta_path.is_file():
        if meta_path.stat().st_size > 1 << 20:
            raise click.ClickException(f"{meta_path} is larger than 1 MiB; not a dolda file")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"),
                              parse_constant=_refuse_json_constant)
        except (OSError, ValueError, RecursionError) as exc:
            message = " ".join(str(exc).split())
            raise click.ClickException(f"{meta_path} is unreadable ({message})") from None
        meta = _check_cli_meta(meta, meta_path, model)
    return model, meta


def _refuse_json_constant(name):
    raise ValueError(f"{name} is not allowed (strict JSON)")


def _model_covariates(model) -> tuple[list[str], set[str]]:
    """The covariate columns a model was fitted on and which of them are categorical."""
    encoder = getattr(model, "covariate_encoder_", None)
    if not getattr(model, "_has_covariates", False) or encoder is None:
        return [], set()
    return ([str(c) for c in encoder.feature_names_in_],
            {str(c) for c in getattr(encoder, "categories_", {})})


def read_model_documents(model, data, text_column, covariates, encoding, required=(),
                         as_text=()):
    """Read the documents of DATA that a fitted model predicts: its text column and the
    columns holding its covariates (``covariates`` renames them: DATA's column for each of
    the model's covariates, in the model's order), checked before any work.

    ``required`` are further ``(column, option)`` pairs that must exist (e.g. ``--label``);
    ``as_text`` columns are read as written (an ``--id`` of ``007`` stays ``007``).
    Returns ``(frame, texts, X)`` with ``X`` None for a model without covariates.
    """
    model_cov, categorical = _model_covariates(model)
    if covariates and len(covariates) != len(model_cov):
        raise click.BadParameter(
            f"the model has {len(model_cov)} covariate(s) ({', '.join(model_cov) or 'none'}), "
            f"got {len(covariates)} column(s)", param_hint="'--covariates'")
    source = covariates or model_cov  # columns of DATA holding the model's covariates
    frame = read_table(data, encoding,
                       text_columns=[s for s, m in zip(source, model_cov) if m in categorical]
                       + [c for c in as_text if c is not None])
    _require_columns(frame, [text_column], data, "--text")
    for column, option in required:
        _require_columns(frame, [column], data, option)
    for col, name in zip(source, model_cov):
        if col not in frame.columns:
            used = "" if col == name else f" (for the model's covariate {name!r})"
            raise click.ClickException(
                f"covariate column {col!r}{used} used by the model is missing from {data}; "
                f"its columns are {_columns_hint(frame)}")
    texts = _texts(frame, text_column, data)
    X = None
    if model_cov:
        X = frame[list(source)].copy()
        X.columns = model_cov
    return frame, texts, X


def _table(frame, floatfmt: str = "{:.3f}") -> str:
    formatters = {c: floatfmt.format for c in frame.columns if frame[c].dtype.kind == "f"}
    return frame.to_string(formatters=formatters)


# ================================================================ options
class _PositiveOrAuto(click.ParamType):
    """A float > 0 or one of the ``words`` (hyperparameters learned from the data)."""

    def __init__(self, words=("auto",)):
        self.words = tuple(words)
        self.name = "|".join(self.words) + "|FLOAT"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() in self.words:
            return value.strip().lower()
        words = " or ".join(repr(w) for w in self.words)
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither a number nor {words}", param, ctx)
        if not number > 0 or number == float("inf"):
            self.fail(f"{value!r} must be a finite number > 0 or {words}", param, ctx)
        if number > MAX_PRIOR:
            self.fail(f"{value!r} is too large (at most {MAX_PRIOR:g}; a prior this strong "
                      f"makes every distribution uniform) or use {words}", param, ctx)
        return number


class _FloatRange(click.FloatRange):
    """click's FloatRange without NaN and infinities (NaN passes every range check)."""

    def convert(self, value, param, ctx):
        number = super().convert(value, param, ctx)
        if number != number or number in (float("inf"), float("-inf")):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


#: ``--seed``: the library takes any int >= 0.
_SEED = click.IntRange(min=0)
#: ``--seed`` of the commands that also cut folds (scikit-learn's limit).
MAX_FOLD_SEED = 2**32 - 1


def _check_fold_seed(seed: int) -> None:
    if seed > MAX_FOLD_SEED:
        raise click.BadParameter(f"must be at most {MAX_FOLD_SEED} (it also seeds the folds), "
                                 f"got {seed}", param_hint="'--seed'")
#: The largest --beta / --alpha: beyond, every topic or document is uniform and the
#: prior's sums overflow (``--beta 1e308`` ended in NaN in Phi).
MAX_PRIOR = 1e6

_POSITIVE_OR_AUTO = _PositiveOrAuto()
_ALPHA_TYPE = _PositiveOrAuto(("auto", "auto_symmetric"))


class _CountOrAuto(click.ParamType):
    """An int >= 0 or the word 'auto' (the number of word covariates)."""

    name = "N|auto"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        try:
            number = int(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is neither a whole number nor 'auto'", param, ctx)
        if number < 0:
            self.fail(f"{value!r} must be >= 0 or 'auto'", param, ctx)
        return number


def _check_token_pattern(ctx, param, value):
    """``--token-pattern``: a regular expression whose matches are non-empty words."""
    if value is None:
        return None
    from ..design.corpus import check_token_pattern

    try:
        check_token_pattern(value)
    except ValueError as exc:
        raise click.BadParameter(" ".join(str(exc).split()), param_hint="'--token-pattern'") \
            from None
    import re

    regex = re.compile(value)
    if regex.groups > 1:
        raise click.BadParameter(f"{value!r} has {regex.groups} groups; a token pattern may "
                                 "have at most one (use (?:...) for grouping)",
                                 param_hint="'--token-pattern'")
    if regex.fullmatch(""):
        raise click.BadParameter(f"{value!r} matches the empty string; every token must have "
                                 "at least one character (use + rather than *)",
                                 param_hint="'--token-pattern'")
    return value


def _model_options(func):
    """The DOLDA options shared by ``fit`` and ``evaluate``."""
    options = [
        click.option("--topics", "-k", "n_topics", type=click.IntRange(min=2), default=20,
                     show_default=True, help="Number of topics K."),
        click.option("--prior", type=click.Choice(["horseshoe", "normal"]),
                     default="horseshoe", show_default=True,
                     help="Prior of the regression coefficients."),
        click.option("--iterations", "-n", "n_iter", type=click.IntRange(min=1), default=500,
                     show_default=True, help="Gibbs iterations, burn-in included."),
        click.option("--burn-in", "burn_in", type=click.IntRange(min=0), default=None,
                     help="Iterations discarded before averaging  [default: half]."),
        click.option("--alpha", type=_ALPHA_TYPE, default=0.01, show_default=True,
                     help="Dirichlet prior of the topic proportions, or 'auto' (one value "
                          "per topic, learned during the burn-in) or 'auto_symmetric' "
                          "(one value, learned)."),
        click.option("--beta", type=_POSITIVE_OR_AUTO, default=0.01, show_default=True,
                     help="Dirichlet prior of the topics, or 'auto' (learned during the "
                          "burn-in)."),
        click.option("--rare-share", type=_FloatRange(0, 1, max_open=True), default=0.01,
                     show_default=True, help="Share of tokens, made of the rarest words, that "
                     "are removed from the vocabulary."),
        click.option("--min-df", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Drop words found in fewer documents."),
        click.option("--max-df", type=_FloatRange(0, 1, min_open=True), default=1.0,
                     show_default=True,
                     help="Drop words found in more than this share of the documents."),
        click.option("--stop-words", "stop_words", multiple=True, metavar="english|none|FILE",
                     help="Stop words: 'english' (scikit-learn's list), 'none', or a file "
                          "with one word per line; repeat to combine  [default: english]."),
        click.option("--token-pattern", default=None, metavar="REGEX",
                     callback=_check_token_pattern,
                     help="Regular expression of a token  [default: words of 2+ characters "
                          "starting with a letter]."),
        click.option("--words", "n_words", type=_CountOrAuto(), default="auto",
                     show_default=True,
                     help="Words as covariates: the counts of this many most frequent "
                          "words enter the regression beside the topics ('word=<w>'); "
                          "'auto': one per two training documents, 2,000 to 5,000; "
                          "0: topics only."),
        click.option("--word-features", type=click.Choice(["log", "binary", "tfidf"]),
                     default="log", show_default=True,
                     help="How a word covariate counts: log(1 + count), 0/1, or tf-idf "
                          "(unit rows)."),
        click.option("--word-selection", type=click.Choice(["df", "chi2"]),
                     default="df", show_default=True,
                     help="Which words: most frequent (df), or most associated with the "
                          "label (chi2, words in 3+ training documents)."),
        click.option("--min-count", "covariate_min_count", type=click.IntRange(min=1),
                     default=1, show_default=True,
                     help="Pool the levels of a categorical covariate seen in fewer training "
                          "rows into one '<column>=other' indicator."),
        click.option("--two-step", is_flag=True,
                     help="Fit LDA first and the probit on its topics afterwards "
                          "(the paper's comparison model) instead of the joint sampler."),
        click.option("--calibration-holdout", "calibration_holdout",
                     type=_FloatRange(0, 0.5, min_open=True), default=None,
                     metavar="SHARE",
                     help="Fit the probability calibration on the last SHARE of the rows "
                          "(e.g. 0.2), held out of the chain: for rows in time order, such "
                          "as bug reports by filing date  [default: leave-one-out on all "
                          "rows]."),
        click.option("--seed", type=_SEED, default=0, show_default=True,
                     help="Random seed; the same seed gives the same chain for any --threads."),
        click.option("--threads", type=click.IntRange(min=1), default=None,
                     help="Threads for the sampler  [default: all cores]."),
        click.option("--quiet", "-q", is_flag=True, help="No progress bar."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


_COVARIATES_HELP = ("Comma-separated covariate columns (numeric columns are used as they "
                    "are, others are one-hot encoded).")
_PREDICT_COVARIATES_HELP = ("Comma-separated columns of DATA holding the model's covariates, "
                            "in the model's order  [default: the model's covariate names].")


def _data_options(for_predict=False):
    def decorate(func):
        options = [
            click.option("--text", "text_column", required=not for_predict, default=None,
                         metavar="COL",
                         help="Column holding the documents" + (
                             "  [default: the model's text column]." if for_predict else ".")),
            click.option("--covariates", "covariates", multiple=True, callback=_split_columns,
                         metavar="A,B",
                         help=_PREDICT_COVARIATES_HELP if for_predict else _COVARIATES_HELP),
            click.option("--encoding", default="utf-8", show_default=True,
                         help="Encoding of a CSV/TSV file."),
        ]
        for option in reversed(options):
            func = option(func)
        return func
    return decorate


_DATA = click.Path(exists=True, dir_okay=False, path_type=Path)
class _ModelPath(click.Path):
    """An existing model or checkpoint directory, or one whose complete copy was left
    beside it by an interrupted replacement (``docs/FORMAT.md``, Atomicity)."""

    def convert(self, value, param, ctx):
        from ..io import atomic as _atomic
        from ..io import _is_complete

        path = Path(value)
        if not path.exists() and _atomic.readable_path(path, _is_complete) != path:
            return path
        return super().convert(value, param, ctx)


_MODEL = _ModelPath(exists=True, file_okay=False, path_type=Path)


def _estimator(opts, **extra):
    from ..models.dolda.estimator import DOLDA

    return DOLDA(n_topics=opts["n_topics"], prior=opts["prior"], alpha=opts["alpha"],
                 beta=opts["beta"], n_iter=opts["n_iter"], burn_in=opts["burn_in"],
                 rare_share=opts["rare_share"], min_df=opts["min_df"],
                 max_df=opts["max_df"], stop_words=_stop_words(opts["stop_words"]),
                 token_pattern=opts["token_pattern"], n_words=opts["n_words"],
                 word_features=opts["word_features"], word_selection=opts["word_selection"],
                 covariate_min_count=opts["covariate_min_count"], two_step=opts["two_step"],
                 random_state=opts["seed"], n_jobs=opts["threads"],
                 calibration_holdout=opts.get("calibration_holdout"),
                 progress=not opts["quiet"], **extra)


def _stop_words(values):
    """``--stop-words`` values -> DOLDA's ``stop_words``: one choice, or the union of several."""
    from ..design.corpus import read_stop_words

    values = tuple(values) or ("english",)
    resolved = []
    for value in values:
        choice = None if value.lower() == "none" else value
        try:
            resolved.append(read_stop_words(choice))
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="'--stop-words'") from None
    if len(resolved) == 1:
        return resolved[0]
    words = set()
    for value in resolved:
        if value == "english":
            from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

            value = ENGLISH_STOP_WORDS
        words.update(value or ())
    return sorted(words)


def _check_burn_in(opts) -> None:
    if opts["burn_in"] is not None and opts["burn_in"] >= opts["n_iter"]:
        raise click.BadParameter(f"must be smaller than --iterations ({opts['n_iter']}), "
                                 f"got {opts['burn_in']}", param_hint="'--burn-in'")


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
    frame = read_table(data, encoding)
    _require_columns(frame, [text_column], data, "--text")
    _require_columns(frame, [label_column], data, "--label")
    texts = _texts(frame, text_column, data)
    y = _labels(frame, label_column, data)
    X = _covariates(frame, covariates, data)
    return frame, texts, y, X


#: Seconds ``dolda fit --scheduler`` waits for the scheduler to answer.
DEFAULT_CONNECT_TIMEOUT = 10.0


def _cluster_options(func):
    """``--scheduler``, ``--shards``, ``--phi-transport`` and ``--connect-timeout`` of
    ``fit``."""
    options = [
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Fit on the workers of the Dask scheduler at ADDRESS (e.g. "
                          "tcp://10.0.0.5:8786); needs dask[distributed] here and the same "
                          "dolda on every worker."),
        click.option("--shards", "n_shards", type=click.IntRange(min=1), default=None,
                     help="Document shards, the unit of distribution and recovery; the same "
                          "--seed and --shards give the same chain with or without "
                          "--scheduler  [default: one per ~1M tokens]."),
        click.option("--phi-transport", type=click.Choice(["auto", "recipe", "dense"]),
                     default="auto", show_default=True,
                     help="With --scheduler: send the workers the counts Phi was drawn from "
                          "(recipe: each worker repeats the draw) or Phi itself (dense); "
                          "auto: whichever is smaller. Same chain either way."),
        click.option("--connect-timeout", type=_FloatRange(min=0, min_open=True),
                     default=DEFAULT_CONNECT_TIMEOUT, show_default=True, metavar="SECONDS",
                     help="How long to wait for --scheduler to answer."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _worker_dolda_version():
    """Run on a worker: the dolda version it imports (fails there if it has none)."""
    from .. import __version__

    return __version__


@contextlib.contextmanager
def _dask_client(address, timeout: float):
    """A ``distributed.Client`` of the scheduler at ``address``, current inside the block.

    Yields None without an address, else a short description of the workers.
    The scheduler is probed first (one connection, ``timeout`` seconds) so that
    an unreachable address ends in one line, not in a half-built client.
    """
    if address is None:
        yield None
        return
    try:
        import asyncio
        import concurrent.futures

        from distributed import Client
        from distributed.comm import connect
    except ImportError:
        raise click.ClickException(
            "--scheduler needs dask.distributed, which is not installed: "
            "pip install 'dask[distributed]' (or dolda[dask])") from None

    async def probe():
        comm = await connect(address, timeout=timeout)
        await comm.close()

    try:
        asyncio.run(probe())
    except (OSError, ValueError, TypeError, asyncio.TimeoutError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise click.ClickException(f"cannot reach the Dask scheduler at {address} within "
                                   f"{timeout:g} s: {reason}") from None
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, ValueError) as exc:  # went away since the probe
        raise click.ClickException(f"cannot connect to the Dask scheduler at {address}: "
                                   f"{' '.join(str(exc).split())}") from None
    with client, client.as_current():
        try:
            versions = client.run(_worker_dolda_version)
        except Exception as exc:  # the worker could not unpickle or import dolda
            raise click.ClickException(
                f"the workers of {address} cannot run dolda ({type(exc).__name__}: "
                f"{' '.join(str(exc).split())}); install the same dolda on every "
                "worker") from None
        from .. import __version__

        other = sorted({v for v in versions.values() if v != __version__})
        if other:
            click.echo(f"Warning: workers run dolda {', '.join(other)}, this is "
                       f"{__version__}: install the same version everywhere", err=True)
        n_threads = sum(client.nthreads().values())
        try:
            yield (f"{len(versions)} workers, {n_threads} threads" if versions
                   else "no workers yet: waiting for some")
        except click.ClickException:
            raise
        except Exception as exc:
            # CommClosedError (an OSError), a cancelled future, or whatever the backend
            # trips on once the client gave up reconnecting: the scheduler went away
            comm = isinstance(exc, (OSError, asyncio.TimeoutError, asyncio.CancelledError,
                                    concurrent.futures.CancelledError))
            if not comm and client.status == "running":
                raise
            reason = " ".join(str(exc).split()) or type(exc).__name__
            raise click.ClickException(
                f"lost the Dask scheduler at {address} during the fit ({type(exc).__name__}: "
                f"{reason[:200]}); with --checkpoint, rerun with --resume once it is back"
            ) from None


def _plain(value):
    """A JSON-friendly scalar (numpy scalars to Python)."""
    return value.item() if hasattr(value, "item") else value
