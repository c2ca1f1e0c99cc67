"""The ``dolda`` command: fit, predict, evaluate, inspect and demo DOLDA from a shell.

Every command reads tables with :func:`read_table` (CSV, TSV or Parquet, chosen
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
import io
import json
import logging
import os
import shlex
import shutil
import tempfile
import time
import warnings
from pathlib import Path

import click

#: Model-directory file holding what the command line needs besides the model:
#: the names of the text and label columns it was fitted on.
CLI_META_FILE = "cli.json"
CSV_EXTENSIONS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
PARQUET_EXTENSIONS = (".parquet", ".pq")
#: Exit code of a run stopped by Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130
MAX_ROWS_SHOWN = 5

logger = logging.getLogger(__name__)


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


def read_table(path, encoding: str = "utf-8", text_columns=()):
    """Read a CSV/TSV (by extension ``.csv``, ``.tsv``, ``.tab``) or Parquet
    (``.parquet``, ``.pq``) file into a DataFrame.

    Parameters
    ----------
    path : path-like
    encoding : str, default="utf-8"
        Encoding of a CSV/TSV file; an undecodable byte raises a
        ClickException naming its row and line.
    text_columns : iterable of str
        Columns read as strings whatever they look like (categorical
        covariates whose levels look like numbers, for instance).
    """
    import pandas as pd

    path = Path(path)
    suffix = path.suffix.lower()
    text_columns = list(text_columns)
    if suffix in PARQUET_EXTENSIONS:
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # pyarrow raises its own error types
            raise click.ClickException(f"{path}: cannot read it as Parquet ({exc})") from None
        for col in text_columns:
            if col in frame.columns:
                values = frame[col]
                frame[col] = values.astype(str).where(values.notna())
        return frame
    if suffix not in CSV_EXTENSIONS:
        known = ", ".join(list(CSV_EXTENSIONS) + list(PARQUET_EXTENSIONS))
        raise click.ClickException(f"{path}: unknown table format {suffix or '(no extension)'!r}; "
                                   f"use one of {known}")
    sep = CSV_EXTENSIONS[suffix]
    text = _decode(path, path.read_bytes(), encoding, sep)
    if not text.strip():
        raise click.ClickException(f"{path} is empty")
    header = next(csv.reader(io.StringIO(text), delimiter=sep), [])
    dtype = {col: str for col in text_columns if col in header}
    try:
        return pd.read_csv(io.StringIO(text), sep=sep, dtype=dtype or None)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
        message = " ".join(str(exc).split())
        raise click.ClickException(f"{path}: cannot parse the table ({message})") from None


def _require_columns(frame, columns, path, option: str | None = None) -> None:
    for col in columns:
        if col not in frame.columns:
            via = f" (given by {option})" if option else ""
            raise click.ClickException(f"column {col!r}{via} is not in {path}; its columns are "
                                       f"{_columns_hint(frame)}")


def _texts(frame, column: str, path) -> list[str]:
    values = frame[column]
    texts = values.where(values.notna(), "").astype(str)
    if len(texts) == 0:
        raise click.ClickException(f"{path} has no rows")
    if not texts.str.strip().astype(bool).any():
        raise click.ClickException(f"text column {column!r} of {path} is empty: no row has any "
                                   "text")
    return texts.tolist()


def _labels(frame, column: str, path):
    import numpy as np

    values = frame[column]
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
    return frame[list(columns)].copy()


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
    except ValueError as exc:
        message = " ".join(str(exc).split())
        raise click.ClickException(f"{what}{message}") from None


def _atomic_write(path: Path, write) -> None:
    """Call ``write(tmp)`` on a temporary file beside ``path``, then rename it onto ``path``."""
    path = Path(path)
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
    from .io import _umask as read_umask

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


def _check_output_file(path: Path, option: str = "--out") -> Path:
    path = Path(path)
    if path.is_dir():
        raise click.BadParameter(f"{path} is a directory", param_hint=f"'{option}'")
    if not path.parent.is_dir():
        raise click.BadParameter(f"the directory {path.parent} does not exist",
                                 param_hint=f"'{option}'")
    return path


def _check_model_out(path: Path, overwrite: bool) -> Path:
    """Refuse early (before a long fit) an output directory that cannot be written."""
    from .io import HEADER_FILE

    path = Path(path)
    if path.exists():
        is_model = path.is_dir() and (path / HEADER_FILE).is_file()
        empty = path.is_dir() and not any(path.iterdir())
        if not (is_model or empty):
            raise click.BadParameter(f"{path} exists and is not a dolda model directory; "
                                     "refusing to replace it", param_hint="'--out'")
        if is_model and not overwrite:
            raise click.BadParameter(f"{path} already holds a model; pass --overwrite to "
                                     "replace it", param_hint="'--out'")
    if not path.parent.is_dir():
        raise click.BadParameter(f"the directory {path.parent} does not exist",
                                 param_hint="'--out'")
    return path


def _save_model(model, path: Path, cli_meta: dict) -> None:
    """Save ``model`` plus ``cli.json`` as one atomic directory at ``path``.

    The model is saved into a temporary directory beside ``path``, ``cli.json``
    is added, and the whole directory is renamed into place (an existing model
    directory is moved aside first and deleted afterwards).
    """
    path = Path(path)
    staging = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    old = None
    try:
        built = staging / "model"
        model.save(built)
        with open(built / CLI_META_FILE, "w", encoding="utf-8") as fh:
            json.dump(cli_meta, fh, indent=2)
            fh.write("\n")
        if path.exists():
            old = staging / "old"
            os.replace(path, old)
            try:
                os.replace(built, path)
            except BaseException:
                os.replace(old, path)
                raise
        else:
            os.replace(built, path)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _load_model(path):
    """A fitted DOLDA and its CLI metadata, or a one-line error."""
    from .io import ModelFormatError, load
    from .model import DOLDA

    path = Path(path)
    try:
        model = load(path)
    except ModelFormatError as exc:
        message = " ".join(str(exc).split())
        raise click.ClickException(f"{path} is not a dolda model: {message}") from None
    if not isinstance(model, DOLDA):
        raise click.ClickException(f"{path} holds a {type(model).__name__}, not a DOLDA model")
    meta = {}
    meta_path = path / CLI_META_FILE
    if meta_path.is_file():
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise click.ClickException(f"{meta_path} is unreadable ({exc})") from None
    return model, meta


def _model_covariates(model) -> tuple[list[str], set[str]]:
    """The covariate columns a model was fitted on and which of them are categorical."""
    encoder = getattr(model, "covariate_encoder_", None)
    if not getattr(model, "_has_covariates", False) or encoder is None:
        return [], set()
    return ([str(c) for c in encoder.feature_names_in_],
            {str(c) for c in getattr(encoder, "categories_", {})})


def _table(frame, floatfmt: str = "{:.3f}") -> str:
    formatters = {c: floatfmt.format for c in frame.columns if frame[c].dtype.kind == "f"}
    return frame.to_string(formatters=formatters)


# ================================================================ options
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
        click.option("--alpha", type=click.FloatRange(min=0, min_open=True), default=0.01,
                     show_default=True, help="Dirichlet prior of the topic proportions."),
        click.option("--beta", type=click.FloatRange(min=0, min_open=True), default=0.01,
                     show_default=True, help="Dirichlet prior of the topics."),
        click.option("--rare-share", type=click.FloatRange(0, 1, max_open=True), default=0.01,
                     show_default=True, help="Share of tokens, made of the rarest words, that "
                     "are removed from the vocabulary."),
        click.option("--min-df", type=click.IntRange(min=1), default=1, show_default=True,
                     help="Drop words found in fewer documents."),
        click.option("--min-count", "covariate_min_count", type=click.IntRange(min=1),
                     default=1, show_default=True,
                     help="Pool the levels of a categorical covariate seen in fewer training "
                          "rows into one '<column>=other' indicator."),
        click.option("--two-step", is_flag=True,
                     help="Fit LDA first and the probit on its topics afterwards "
                          "(the paper's comparison model) instead of the joint sampler."),
        click.option("--seed", type=int, default=0, show_default=True,
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
_MODEL = click.Path(exists=True, file_okay=False, path_type=Path)


def _estimator(opts, **extra):
    from .model import DOLDA

    return DOLDA(n_topics=opts["n_topics"], prior=opts["prior"], alpha=opts["alpha"],
                 beta=opts["beta"], n_iter=opts["n_iter"], burn_in=opts["burn_in"],
                 rare_share=opts["rare_share"], min_df=opts["min_df"],
                 covariate_min_count=opts["covariate_min_count"], two_step=opts["two_step"],
                 random_state=opts["seed"], n_jobs=opts["threads"],
                 progress=not opts["quiet"], **extra)


def _check_burn_in(opts) -> None:
    if opts["burn_in"] is not None and opts["burn_in"] >= opts["n_iter"]:
        raise click.BadParameter(f"must be smaller than --iterations ({opts['n_iter']}), "
                                 f"got {opts['burn_in']}", param_hint="'--burn-in'")


def _read_training_data(data, text_column, label_column, covariates, encoding):
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
    """``--scheduler``, ``--shards`` and ``--connect-timeout`` of ``fit``."""
    options = [
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Fit on the workers of the Dask scheduler at ADDRESS (e.g. "
                          "tcp://10.0.0.5:8786); needs dask[distributed] here and the same "
                          "dolda on every worker."),
        click.option("--shards", "n_shards", type=click.IntRange(min=1), default=None,
                     help="Document shards, the unit of distribution and recovery; the same "
                          "--seed and --shards give the same chain with or without "
                          "--scheduler  [default: one per ~1M tokens]."),
        click.option("--connect-timeout", type=click.FloatRange(min=0, min_open=True),
                     default=DEFAULT_CONNECT_TIMEOUT, show_default=True, metavar="SECONDS",
                     help="How long to wait for --scheduler to answer."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _worker_dolda_version():
    """Run on a worker: the dolda version it imports (fails there if it has none)."""
    from . import __version__

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
        from . import __version__

        other = sorted({v for v in versions.values() if v != __version__})
        if other:
            click.echo(f"Warning: workers run dolda {', '.join(other)}, this is "
                       f"{__version__}: install the same version everywhere", err=True)
        n_threads = sum(client.nthreads().values())
        yield (f"{len(versions)} workers, {n_threads} threads" if versions
               else "no workers yet: waiting for some")


# ================================================================ commands
@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dolda")
@click.option("--verbose", "-v", count=True, help="Log more (-v: info, -vv: debug).")
def main(verbose):
    """dolda: interpretable supervised topic models (Diagonal Orthant LDA).

    DATA files are CSV, TSV or Parquet, chosen by extension (.csv, .tsv, .parquet,
    .pq).  Rows are numbered from 0, the header not counted.  Run
    `dolda COMMAND --help` for the options of a command.
    """
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s: %(message)s")


@main.command()
@click.argument("data", type=_DATA)
@_data_options()
@click.option("--label", "label_column", required=True, metavar="COL",
              help="Column holding the class labels.")
@_model_options
@click.option("--checkpoint", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="Directory where the chain is saved every --checkpoint-every iterations "
                   "and on Ctrl-C.")
@click.option("--checkpoint-every", type=click.IntRange(min=1), default=100, show_default=True,
              help="Iterations between checkpoints.")
@click.option("--resume", type=_MODEL, default=None,
              help="Continue the chain saved in this checkpoint directory (same data and "
                   "options as the interrupted run).")
@click.option("--out", "-o", required=True, type=click.Path(path_type=Path),
              help="Directory to save the fitted model in.")
@click.option("--overwrite", is_flag=True, help="Replace an existing model at --out.")
@click.option("--chains", "n_chains", type=click.IntRange(min=1), default=1, show_default=True,
              help="Independent chains (run one after another); with 2 or more the worst "
                   "R-hat of the topic coefficients is reported.")
@_cluster_options
def fit(data, text_column, label_column, covariates, encoding, checkpoint, checkpoint_every,
        resume, out, overwrite, scheduler, n_shards, connect_timeout, **opts):
    """Fit DOLDA to the documents in DATA and save the model in --out.

    \b
    Example:
      dolda fit reviews.csv --text review --label rating --covariates year,genre \\
          --topics 30 --iterations 1000 --checkpoint ckpt --out model/

    Ctrl-C stops after the current iteration; with --checkpoint the chain is saved
    and the message says how to resume (exit code 130).

    With --scheduler the documents are cut into --shards shards that live on the
    workers of that Dask cluster for the whole fit (see docs/DISTRIBUTED.md); the
    same --seed and --shards give the same model with or without --scheduler.
    """
    from .model import FitInterrupted

    _check_burn_in(opts)
    out = _check_model_out(out, overwrite)
    if resume is not None and checkpoint is None:
        checkpoint = resume  # a second interruption keeps saving to the same place
    start = 0
    if resume is not None:
        from .io import ModelFormatError, read_header

        try:
            start = int(read_header(resume).get("meta", {}).get("next_iteration", 0))
        except ModelFormatError as exc:
            raise click.BadParameter(" ".join(str(exc).split()),
                                     param_hint="'--resume'") from None
    frame, texts, y, X = _read_training_data(data, text_column, label_column, covariates,
                                             encoding)
    model = _estimator(opts, n_chains=opts.pop("n_chains"),
                       checkpoint=None if checkpoint is None else str(checkpoint),
                       checkpoint_every=checkpoint_every, n_shards=n_shards,
                       backend="local" if scheduler is None else "dask")
    cluster = {"scheduler": scheduler, "n_shards": n_shards, "connect_timeout": connect_timeout}
    tic = time.perf_counter()
    try:
        with _dask_client(scheduler, connect_timeout) as workers, _echo_warnings(), \
                _library_errors():
            if workers is not None:
                click.echo(f"Fitting on the Dask cluster at {scheduler} ({workers})", err=True)
            model.fit(texts, y, X=X, resume=None if resume is None else str(resume))
    except FitInterrupted as exc:
        command = _resume_command(data, text_column, label_column, covariates, encoding,
                                  opts, checkpoint_every, exc.checkpoint, out, overwrite,
                                  cluster)
        click.echo(f"Interrupted: the chain so far is saved in {exc.checkpoint}.", err=True)
        click.echo(f"Resume with:\n  {command}", err=True)
        click.get_current_context().exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        click.echo("Interrupted; nothing was saved (pass --checkpoint DIR to be able to "
                   "resume).", err=True)
        click.get_current_context().exit(EXIT_INTERRUPTED)
    seconds = time.perf_counter() - tic
    with _echo_warnings(), _library_errors():
        accuracy = float((model.predict(texts, X=X) == y).mean())
    cli_meta = {"text_column": text_column, "label_column": label_column,
                "covariates": list(covariates), "data": str(data), "n_docs": len(texts)}
    _save_model(model, out, cli_meta)
    ran = model.n_iter_ - start
    rate = model.n_tokens_ * ran / seconds if seconds > 0 else float("nan")
    click.echo(f"Fitted DOLDA: {len(texts)} documents, {model.n_tokens_} tokens, "
               f"{len(model.vocabulary_.words)} words, {len(model.classes_)} classes, "
               f"{opts['n_topics']} topics")
    click.echo(f"  iterations        {model.n_iter_}" + (f" (resumed at {start})" if start else ""))
    if scheduler is not None:
        click.echo(f"  backend           dask at {scheduler}")
    click.echo(f"  time              {seconds:.1f} s ({rate:,.0f} tokens/s)")
    click.echo(f"  training accuracy {accuracy:.3f}")
    if model.n_chains_ > 1:
        from .diagnostics import worst_rhat

        with _echo_warnings(), _library_errors():
            rhat = worst_rhat(model, topics_only=True)
        flag = "" if rhat < 1.05 else "  (above 1.05: run more iterations)"
        click.echo(f"  worst R-hat       {rhat:.3f} over the topic coefficients, "
                   f"{model.n_chains_} chains{flag}")
    click.echo(f"Model saved to {out}")


def _resume_command(data, text_column, label_column, covariates, encoding, opts,
                    checkpoint_every, checkpoint, out, overwrite, cluster=None) -> str:
    args = ["dolda", "fit", str(data), "--text", text_column, "--label", label_column]
    if covariates:
        args += ["--covariates", ",".join(covariates)]
    if encoding.lower() not in ("utf-8", "utf8"):
        args += ["--encoding", encoding]
    args += ["--topics", str(opts["n_topics"]), "--prior", opts["prior"],
             "--iterations", str(opts["n_iter"])]
    if opts["burn_in"] is not None:
        args += ["--burn-in", str(opts["burn_in"])]
    args += ["--alpha", repr(opts["alpha"]), "--beta", repr(opts["beta"]),
             "--rare-share", repr(opts["rare_share"]), "--min-df", str(opts["min_df"]),
             "--min-count", str(opts["covariate_min_count"]), "--seed", str(opts["seed"])]
    if opts["two_step"]:
        args.append("--two-step")
    if opts["threads"] is not None:
        args += ["--threads", str(opts["threads"])]
    if opts["quiet"]:
        args.append("--quiet")
    cluster = cluster or {}
    if cluster.get("scheduler") is not None:
        args += ["--scheduler", cluster["scheduler"]]
        if cluster.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT) != DEFAULT_CONNECT_TIMEOUT:
            args += ["--connect-timeout", repr(cluster["connect_timeout"])]
    if cluster.get("n_shards") is not None:  # the shard layout is part of the chain
        args += ["--shards", str(cluster["n_shards"])]
    args += ["--checkpoint-every", str(checkpoint_every), "--resume", str(checkpoint),
             "--out", str(out)]
    if overwrite:
        args.append("--overwrite")
    return shlex.join(args)


@main.command()
@click.argument("model_dir", type=_MODEL)
@click.argument("data", type=_DATA)
@_data_options(for_predict=True)
@click.option("--id", "id_column", default=None, metavar="COL",
              help="Column copied to the output to identify the rows  [default: the row "
                   "number, as column 'row'].")
@click.option("--out", "-o", required=True, type=click.Path(path_type=Path),
              help="Output table (.csv, .tsv or .parquet).")
def predict(model_dir, data, text_column, covariates, encoding, id_column, out):
    """Predict the class of every document in DATA with the model in MODEL_DIR.

    Writes one row per document: the row number (or --id), the predicted class
    and one probability column p_<class> per class.  --text and --covariates
    default to the columns the model was fitted on.

    \b
    Example:
      dolda predict model/ new.csv --out predictions.csv
    """
    import pandas as pd

    out = _check_output_file(out)
    model, meta = _load_model(model_dir)
    text_column = text_column or meta.get("text_column")
    if text_column is None:
        raise click.UsageError("the model does not record its text column; pass --text COL")
    model_cov, categorical = _model_covariates(model)
    if covariates and len(covariates) != len(model_cov):
        raise click.BadParameter(
            f"the model has {len(model_cov)} covariate(s) ({', '.join(model_cov) or 'none'}), "
            f"got {len(covariates)} column(s)", param_hint="'--covariates'")
    source = covariates or model_cov  # columns of DATA holding the model's covariates
    frame = read_table(data, encoding,
                       text_columns=[s for s, m in zip(source, model_cov) if m in categorical])
    _require_columns(frame, [text_column], data, "--text")
    for col, name in zip(source, model_cov):
        if col not in frame.columns:
            used = "" if col == name else f" (for the model's covariate {name!r})"
            raise click.ClickException(
                f"covariate column {col!r}{used} used by the model is missing from {data}; "
                f"its columns are {_columns_hint(frame)}")
    if id_column is not None:
        _require_columns(frame, [id_column], data, "--id")
    texts = _texts(frame, text_column, data)
    X = None
    if model_cov:
        X = frame[list(source)].copy()
        X.columns = model_cov
    with _echo_warnings(), _library_errors():
        proba = model.predict_proba(texts, X=X)
    classes = list(model.classes_)
    result = pd.DataFrame({id_column: frame[id_column].to_numpy()} if id_column
                          else {"row": range(len(texts))})
    result["predicted"] = [classes[i] for i in proba.argmax(axis=1)]
    for j, label in enumerate(classes):
        result[f"p_{label}"] = proba[:, j]
    _write_table(result, out)
    counts = result["predicted"].value_counts()
    summary = ", ".join(f"{label}: {counts.get(label, 0)}" for label in classes)
    click.echo(f"Predicted {len(result)} documents ({summary}); written to {out}")


@main.command()
@click.argument("data", type=_DATA)
@_data_options()
@click.option("--label", "label_column", required=True, metavar="COL",
              help="Column holding the class labels.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Number of stratified cross-validation folds.")
@_model_options
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Also write the results as JSON to this file.")
def evaluate(data, text_column, label_column, covariates, encoding, folds, out, **opts):
    """Cross-validate DOLDA on DATA: accuracy, macro-F1 and the confusion matrix.

    The documents are split into --folds stratified folds; each fold is predicted
    by a model fitted on the others, and the scores are computed on these
    out-of-fold predictions.

    \b
    Example:
      dolda evaluate reviews.csv --text review --label rating --folds 5 --topics 30 \\
          --out cv.json
    """
    import numpy as np
    import pandas as pd
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score
    from sklearn.model_selection import StratifiedKFold

    _check_burn_in(opts)
    if out is not None:
        out = _check_output_file(out)
    frame, texts, y, X = _read_training_data(data, text_column, label_column, covariates,
                                             encoding)
    labels, counts = np.unique(y.astype(str) if y.dtype == object else y, return_counts=True)
    if counts.min() < folds:
        raise click.BadParameter(
            f"the smallest class ({labels[counts.argmin()]!r}) has {counts.min()} documents, "
            f"fewer than --folds {folds}", param_hint="'--folds'")
    texts = np.asarray(texts, dtype=object)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=opts["seed"])
    predicted = np.empty(len(y), dtype=object)
    per_fold = []
    tic = time.perf_counter()
    for fold, (train, test) in enumerate(splitter.split(texts, y)):
        model = _estimator(opts)
        with _echo_warnings(), _library_errors(f"fold {fold + 1}: "):
            model.fit(list(texts[train]), y[train],
                      X=None if X is None else X.iloc[train].reset_index(drop=True))
            pred = model.predict(list(texts[test]),
                                 X=None if X is None else X.iloc[test].reset_index(drop=True))
        predicted[test] = pred
        acc = accuracy_score(list(y[test]), list(pred))
        f1 = f1_score(list(y[test]), list(pred), average="macro")
        per_fold.append({"fold": fold + 1, "n_test": int(len(test)), "accuracy": float(acc),
                         "macro_f1": float(f1)})
        if not opts["quiet"]:
            click.echo(f"fold {fold + 1}/{folds}: accuracy {acc:.3f}, macro-F1 {f1:.3f}")
    seconds = time.perf_counter() - tic
    classes = list(pd.unique(pd.Series(y)).tolist())
    classes.sort(key=lambda c: (str(type(c)), c))
    y_true, y_pred = list(y), list(predicted)
    accuracy = float(accuracy_score(y_true, y_pred))
    macro_f1 = float(f1_score(y_true, y_pred, average="macro", labels=classes))
    cm = confusion_matrix(y_true, y_pred, labels=classes)
    fold_table = pd.DataFrame(per_fold).set_index("fold")
    fold_table.loc["all"] = [len(y), accuracy, macro_f1]
    fold_table["n_test"] = fold_table["n_test"].astype(int)
    click.echo(f"{folds}-fold cross-validation of DOLDA ({opts['n_topics']} topics, "
               f"{opts['n_iter']} iterations) on {len(y)} documents, {seconds:.1f} s")
    click.echo(_table(fold_table))
    click.echo(f"accuracy {accuracy:.3f}  macro-F1 {macro_f1:.3f}")
    click.echo("confusion matrix (rows: true class, columns: predicted class)")
    cm_frame = pd.DataFrame(cm, index=pd.Index([str(c) for c in classes], name="true"),
                            columns=[str(c) for c in classes])
    click.echo(cm_frame.to_string())
    if out is not None:
        result = {
            "data": str(data), "n_docs": int(len(y)), "folds": folds,
            "accuracy": accuracy, "macro_f1": macro_f1, "per_fold": per_fold,
            "confusion_matrix": {"labels": [_plain(c) for c in classes],
                                 "matrix": cm.tolist()},
            "options": {k: v for k, v in opts.items() if k != "quiet"},
            "text_column": text_column, "label_column": label_column,
            "covariates": list(covariates), "seconds": seconds,
        }
        _write_json(result, out)
        click.echo(f"Results written to {out}")


def _plain(value):
    """A JSON-friendly scalar (numpy scalars to Python)."""
    return value.item() if hasattr(value, "item") else value


@main.command()
@click.argument("model_dir", type=_MODEL)
@click.option("--words", "-w", "n_words", type=click.IntRange(min=1), default=10,
              show_default=True, help="Top words shown per topic.")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.95, show_default=True,
              help="A topic is a signal topic of a class when this credible interval of its "
                   "coefficient excludes 0.")
def topics(model_dir, n_words, level):
    """Show the top words of every topic and the signal topics of every class.

    \b
    Example:
      dolda topics model/ --words 8
    """
    import pandas as pd

    model, _ = _load_model(model_dir)
    words = model.top_words(n_words)
    click.echo(f"Top {words.shape[1]} words per topic:")
    width = max(len(str(t)) for t in words.index)
    for topic, row in words.iterrows():
        click.echo(f"  {str(topic):<{width}}  {' '.join(str(w) for w in row)}")
    click.echo("")
    click.echo(f"Signal topics per class ({level:.0%} interval of the coefficient excludes 0):")
    for label in model.classes_:
        signal = model.signal_topics(label, level=level, n_words=min(n_words, 8))
        click.echo(f"  {label}:" + ("" if len(signal) else " none"))
        if len(signal):
            shown = pd.DataFrame({
                "coef": signal["coef"].map("{:+.2f}".format),
                "interval": [f"[{lo:+.2f}, {hi:+.2f}]"
                             for lo, hi in zip(signal["lower"], signal["upper"])],
                "top words": signal["top_words"]})
            for line in shown.to_string(index=True, header=False).splitlines():
                click.echo(f"    {line}")


def _parse_covariate_values(items, model) -> "object":
    """``--covariate name=value`` pairs -> a one-row DataFrame in the model's column order."""
    import pandas as pd

    columns, categorical = _model_covariates(model)
    given = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected name=value, got {item!r}",
                                     param_hint="'--covariate'")
        given[name.strip()] = value
    unknown = [n for n in given if n not in columns]
    if unknown:
        known = ", ".join(columns) if columns else "none"
        raise click.BadParameter(f"the model has no covariate {unknown[0]!r} (its covariates: "
                                 f"{known})", param_hint="'--covariate'")
    missing = [c for c in columns if c not in given]
    if missing:
        raise click.BadParameter(f"the model needs covariate {missing[0]!r}: pass "
                                 f"--covariate {missing[0]}=VALUE", param_hint="'--covariate'")
    if not columns:
        return None
    row = {}
    for col in columns:
        value = given[col]
        if col in categorical:
            row[col] = [value]
        else:
            try:
                row[col] = [float(value)]
            except ValueError:
                raise click.BadParameter(f"covariate {col!r} is numeric, got {value!r}",
                                         param_hint="'--covariate'") from None
    return pd.DataFrame(row)


@main.command()
@click.argument("model_dir", type=_MODEL)
@click.argument("text")
@click.option("--covariate", "-c", "covariate_values", multiple=True, metavar="NAME=VALUE",
              help="Value of a covariate of the model (repeat for each covariate).")
@click.option("--top", type=click.IntRange(min=1), default=8, show_default=True,
              help="Contributions shown for the most probable class.")
def explain(model_dir, text, covariate_values, top):
    """Explain the prediction of one document TEXT ("-" reads it from stdin).

    Prints the class probabilities and the features (topics, covariates) that
    contribute most to the score of the most probable class: the feature's value
    in this document times its coefficient.

    \b
    Example:
      dolda explain model/ "a slow but moving family drama" -c year=1994 -c genre=Drama
    """
    model, _ = _load_model(model_dir)
    if text == "-":
        text = click.get_text_stream("stdin").read()
    if not text.strip():
        raise click.BadParameter("the text is empty", param_hint="'TEXT'")
    X_row = _parse_covariate_values(covariate_values, model)
    with _echo_warnings(), _library_errors():
        table = model.explain(text, X_row=None if X_row is None else X_row.iloc[0])
    proba = table.attrs["proba"]
    best = max(proba, key=proba.get)
    click.echo("Class probabilities:")
    for label, p in sorted(proba.items(), key=lambda kv: -kv[1]):
        click.echo(f"  {str(label):<12} {p:.3f}")
    rows = table[table["class"] == best].head(top)
    words = model.top_words(6)
    width = max([len("feature")] + [len(str(f)) for f in rows["feature"]])
    click.echo(f"\nLargest contributions to the score of {best!s} (value x coefficient):")
    click.echo(f"  {'feature':<{width}}  {'value':>7}  {'coef':>7}  {'contrib':>7}  top words")
    for feature, value, coef, contribution in zip(rows["feature"], rows["value"], rows["coef"],
                                                  rows["contribution"]):
        top_words = " ".join(words.loc[feature]) if feature in words.index else ""
        click.echo(f"  {str(feature):<{width}}  {value:7.3f}  {coef:+7.3f}  "
                   f"{contribution:+7.3f}  {top_words}".rstrip())


# ================================================================ demo
def _hellinger(p, q):
    import numpy as np

    return np.sqrt(0.5 * ((np.sqrt(p)[:, None, :] - np.sqrt(q)[None, :, :]) ** 2).sum(axis=2))


def match_topics(phi_fit, words_fit, phi_true, words_true):
    """Match fitted topics to true topics by the Hungarian algorithm on the Hellinger
    distance of their word distributions.

    Parameters
    ----------
    phi_fit : ndarray (K, V_fit)
        Fitted topics over the model's vocabulary ``words_fit``.
    phi_true : ndarray (K_true, V)
        True topics over ``words_true``; words the model dropped count as 0.

    Returns
    -------
    true_of_fit : dict int -> int
        The true topic matched to each fitted topic.
    distance : dict int -> float
        Hellinger distance of each matched pair (0 identical, 1 disjoint).
    """
    import numpy as np
    from scipy.optimize import linear_sum_assignment

    column = {str(w): j for j, w in enumerate(words_fit)}
    fit = np.zeros((phi_fit.shape[0], len(words_true)))
    for v, word in enumerate(words_true):
        j = column.get(str(word))
        if j is not None:
            fit[:, v] = phi_fit[:, j]
    fit /= np.maximum(fit.sum(axis=1, keepdims=True), 1e-300)
    cost = _hellinger(fit, phi_true)
    rows, cols = linear_sum_assignment(cost)
    return ({int(r): int(c) for r, c in zip(rows, cols)},
            {int(r): float(cost[r, c]) for r, c in zip(rows, cols)})


@main.command()
@click.option("--probit", is_flag=True,
              help="Run the DO probit demo on scikit-learn's digits instead.")
@click.option("--docs", "n_docs", type=click.IntRange(min=50), default=1000, show_default=True,
              help="Simulated documents (a quarter is held out for testing).")
@click.option("--topics", "-k", "n_topics", type=click.IntRange(min=2), default=10,
              show_default=True, help="Topics of the simulation and of the model.")
@click.option("--iterations", "-n", type=click.IntRange(min=2), default=None,
              help="Gibbs iterations  [default: 200; 600 with --probit].")
@click.option("--seed", default=1, show_default=True, help="Random seed.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Threads for the sampler  [default: all cores].")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def demo(probit, n_docs, n_topics, iterations, seed, threads, quiet):
    """Fit DOLDA to a corpus simulated from its own generative model (no download).

    Prints the accuracy on held-out simulated documents beside the Bayes
    classifier that knows the true parameters, how close the fitted topics are
    to the true ones (Hungarian matching on the Hellinger distance of Phi), and
    each class's recovered signal topics next to the true ones.  Takes well
    under a minute on two cores.

    With --probit: a DO probit with the Horseshoe prior on scikit-learn's digits.
    """
    if probit:
        _demo_probit(iterations or 600, seed, not quiet)
        return
    _demo_dolda(n_docs, n_topics, iterations or 200, seed, threads, not quiet)


def _demo_dolda(n_docs, n_topics, iterations, seed, threads, progress):
    import numpy as np

    from .datasets import simulate
    from .model import DOLDA

    sim = simulate(n_docs=n_docs, n_topics=n_topics, n_classes=3, vocab_size=50 * n_topics,
                   doc_length=80, n_signal=2, random_state=seed)
    n_test = n_docs // 4
    train, test = np.arange(n_docs - n_test), np.arange(n_docs - n_test, n_docs)
    texts = sim.texts
    click.echo(f"Simulated corpus: {n_docs} documents ({len(train)} for training, {n_test} "
               f"held out), {n_topics} topics, {len(sim.vocabulary)} words, "
               f"{len(sim.classes)} classes, {sim.params['n_signal']} signal topics per class")
    # the simulation's own Dirichlet parameters; keep every word (none is noise here)
    model = DOLDA(n_topics=n_topics, n_iter=iterations, alpha=sim.params["alpha"],
                  beta=sim.params["beta"], random_state=seed, n_jobs=threads,
                  progress=progress, rare_share=0.0)
    tic = time.perf_counter()
    model.fit([texts[i] for i in train], sim.y[train])
    took = time.perf_counter() - tic
    acc = model.score([texts[i] for i in test], sim.y[test])
    bayes = float(np.mean(sim.classes[np.argmax(sim.proba[test], axis=1)] == sim.y[test]))
    click.echo(f"DOLDA: {iterations} iterations in {took:.1f} s "
               f"({model.n_tokens_ * iterations / took:,.0f} tokens/s)")
    click.echo(f"Held-out accuracy: {acc:.3f}   (Bayes classifier with the true parameters: "
               f"{bayes:.3f})")

    true_of_fit, dist = match_topics(model.phi_, model.vocabulary_.words, sim.phi,
                                     sim.vocabulary)
    click.echo(f"Topics matched to the true ones: median Hellinger distance "
               f"{np.median(list(dist.values())):.3f} (0 = identical, 1 = disjoint)")
    K = sim.phi.shape[0]
    true_topics = sim.eta[:, -K:]
    click.echo("Signal topics per class, true vs recovered (sign and true topic number):")
    found = total = n_extra = 0
    for l, label in enumerate(sim.classes):
        true = {int(k): "+" if true_topics[l, k] > 0 else "-"
                for k in np.flatnonzero(true_topics[l])}
        signal = model.signal_topics(label)
        recovered = {}
        for name, sign in zip(signal.index, signal["sign"]):
            recovered[true_of_fit[int(str(name).split()[-1])]] = sign
        hits = sum(recovered.get(k) == s for k, s in true.items())
        found, total = found + hits, total + len(true)
        extra = sorted(set(recovered) - set(true))
        n_extra += len(extra)
        fmt = lambda d: " ".join(f"{s}{k}" for k, s in sorted(d.items())) or "none"  # noqa: E731
        click.echo(f"  {label}: true {fmt(true):<12} recovered {fmt(recovered):<16} "
                   f"{hits}/{len(true)} found" + (f", {len(extra)} extra" if extra else ""))
    click.echo(f"Recovered {found} of {total} true signal topics with the right sign.")
    if n_extra:
        click.echo("(Extra topics: the topic proportions sum to 1, so a shift shared by all "
                   "topic coefficients of a class and its intercept leaves the likelihood "
                   "unchanged; only the prior pins the topic coefficients to 0.)")


def _demo_probit(iterations, seed, progress):
    import numpy as np
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from .probit import DOProbit

    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    scaler = StandardScaler().fit(Xtr)
    Xtr, Xte = scaler.transform(Xtr), scaler.transform(Xte)
    click.echo(f"digits: {len(Xtr)} training and {len(Xte)} test images, 64 pixels, 10 classes")
    start = time.perf_counter()
    model = DOProbit(prior="horseshoe", n_iter=iterations, random_state=seed,
                     progress=progress).fit(Xtr, ytr)
    took = time.perf_counter() - start
    acc = model.score(Xte, yte)
    acc_lr = LogisticRegression(max_iter=5000).fit(Xtr, ytr).score(Xte, yte)
    click.echo(f"DOProbit (Horseshoe): test accuracy {acc:.3f}  ({iterations} iterations, "
               f"{took:.1f} s)")
    click.echo(f"LogisticRegression  : test accuracy {acc_lr:.3f}")
    lo, hi = np.quantile(model.eta_draws_[:, :, 1:], [0.025, 0.975], axis=0)
    kept = (lo > 0) | (hi < 0)
    click.echo(f"95% intervals excluding zero: {kept.sum()} of {kept.size} coefficients")
    for digit in (0, 1):
        idx = np.flatnonzero(kept[digit])
        order = idx[np.argsort(-np.abs(model.coef_[digit, idx]))][:6]
        parts = ", ".join(f"px{p // 8},{p % 8}:{model.coef_[digit, p]:+.2f}" for p in order)
        click.echo(f"  digit {digit}: strongest pixels {parts}")


if __name__ == "__main__":  # pragma: no cover
    main()


@main.command()
@click.argument("model_dir", type=_MODEL)
@click.option("--out", "-o", required=True, type=click.Path(path_type=Path),
              help="The HTML file to write.")
@click.option("--data", type=_DATA, default=None,
              help="Documents to explain in the report (CSV/TSV/Parquet); with --label also "
                   "the confusion matrix.")
@click.option("--text", "text_column", default=None, metavar="COL",
              help="Column of --data holding the documents  [default: the model's].")
@click.option("--label", "label_column", default=None, metavar="COL",
              help="Column of --data holding the true classes (for the confusion matrix).")
@click.option("--max-docs", type=click.IntRange(min=1), default=200, show_default=True,
              help="Documents with precomputed explanations in the search box.")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Encoding of a CSV/TSV file.")
def report(model_dir, out, data, text_column, label_column, max_docs, encoding):
    """Write a self-contained HTML report of the model in MODEL_DIR.

    Topics and top words, coefficient heat map and intervals, log-likelihood
    traces, R-hat/ESS, and (with --data) a document search with explanations
    and the confusion matrix.  The file needs no network.

    \b
    Example:
      dolda report model/ --out report.html --data test.csv --text review --label rating
    """
    out = _check_output_file(out)
    model, meta = _load_model(model_dir)
    texts = y = X = None
    if data is not None:
        text_column = text_column or meta.get("text_column")
        if text_column is None:
            raise click.UsageError("the model does not record its text column; pass --text COL")
        model_cov, categorical = _model_covariates(model)
        frame = read_table(data, encoding, text_columns=[c for c in model_cov if c in categorical])
        _require_columns(frame, [text_column], data, "--text")
        _require_columns(frame, model_cov, data)
        texts = _texts(frame, text_column, data)
        if label_column is not None:
            _require_columns(frame, [label_column], data, "--label")
            y = _labels(frame, label_column, data)
        if model_cov:
            X = frame[list(model_cov)].copy()
    elif label_column is not None:
        raise click.UsageError("--label needs --data")
    from .report import make_report

    with _echo_warnings(), _library_errors():
        make_report(model, out, texts=texts, y=y, X=X, max_documents=max_docs)
    click.echo(f"Report written to {out}")
