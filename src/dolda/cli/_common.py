"""What every ``dolda`` command shares, below the modules that read tables (``_tables``),
write files (``_files``), load models (``_models``), define options (``_options``) and
reach a Dask cluster (``_dask``): the short forms of rows and values in messages, warnings
and library errors as one line each, plain tables and JSON scalars.

Every command reads tables with :func:`dolda.cli._tables.read_table`, checks its input
before any work starts, and writes its output atomically (:mod:`dolda.cli._files`), so
that a failed or interrupted run never leaves a partial file.  Input errors are reported
as one line by :class:`click.ClickException` with a non-zero exit code.
"""

from __future__ import annotations

import contextlib
import warnings

import click

from ..utils.escape import terminal

#: Exit code of a run stopped by Ctrl-C (128 + SIGINT), as shells report it.
EXIT_INTERRUPTED = 130
MAX_ROWS_SHOWN = 5


# ================================================================ helpers
def _rows(index) -> str:
    """At most :data:`MAX_ROWS_SHOWN` row numbers, then an ellipsis."""
    index = [int(i) for i in index]
    shown = ", ".join(str(i) for i in index[:MAX_ROWS_SHOWN])
    return shown + (", ..." if len(index) > MAX_ROWS_SHOWN else "")


def _columns_hint(frame) -> str:
    return ", ".join(repr(str(c)) for c in frame.columns)


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
                    click.echo(f"Warning: {terminal(text)}", err=True)


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


def _table(frame, floatfmt: str = "{:.3f}") -> str:
    formatters = {c: floatfmt.format for c in frame.columns if frame[c].dtype.kind == "f"}
    return frame.to_string(formatters=formatters)


def _plain(value):
    """A JSON-friendly scalar (numpy scalars to Python)."""
    return value.item() if hasattr(value, "item") else value


def warn_inert(ctx, name: str, flag: str, why: str) -> None:
    """Warn (one line on stderr) that ``flag`` (the parameter ``name``), given on the
    command line, has no effect here and say why: an option that silently does nothing
    reads as if it had worked."""
    from click.core import ParameterSource

    if ctx is not None and ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE:
        click.echo(f"Warning: {flag} has no effect {why}", err=True)
