"""The ``dolda`` click group and its logging and output set-up.

Every command module registers itself on :func:`main` by importing it from here;
:mod:`dolda.cli` imports the group and then the command modules, so no command
module imports the package that imports it.
"""

from __future__ import annotations

import logging

import click


class _OneLineFormatter(logging.Formatter):
    """``LEVEL: message``, with an attached exception as ``(Type: text)`` instead of its
    traceback: libraries (distributed, when a scheduler goes away) log with ``exc_info``,
    and a command's output promises one line per problem.  ``-vv`` keeps tracebacks."""

    def format(self, record):
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            record = logging.makeLogRecord({**record.__dict__, "exc_info": None,
                                            "exc_text": None, "stack_info": None})
            record.msg = f"{record.getMessage()} ({type(exc).__name__}: {exc})"
            record.args = None
        return super().format(record)


class _Main(click.Group):
    """The command group; an operating-system error while writing (a full disk, standard
    output closed by ``| head``, a file system gone read-only) ends with one line."""

    def main(self, *args, **kwargs):
        try:
            return super().main(*args, **kwargs)
        except OSError as exc:  # while writing the help or a usage message
            import sys

            _silence_stdout()
            click.echo(f"Error: {_os_error_line(exc)}", err=True)
            sys.exit(1)

    def make_context(self, *args, **kwargs):
        try:  # --help and usage errors are written while the arguments are parsed
            return super().make_context(*args, **kwargs)
        except OSError as exc:
            _silence_stdout()
            raise click.ClickException(_os_error_line(exc)) from None

    def invoke(self, ctx):
        try:
            value = super().invoke(ctx)
            _flush_stdout()
            return value
        except OSError as exc:
            _silence_stdout()
            raise click.ClickException(_os_error_line(exc)) from None
        except click.ClickException as exc:
            # a message may quote a label, a column name or a word read from a file
            from ..utils.escape import terminal

            exc.message = terminal(exc.message)
            raise


def _flush_stdout():
    import sys

    if sys.stdout is not None:
        sys.stdout.flush()


def _silence_stdout():
    """Point standard output at /dev/null: the interpreter's last flush of a broken pipe
    or a full disk must not print a second error."""
    import os
    import sys

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _os_error_line(exc: OSError) -> str:
    import errno

    where = f" {exc.filename}" if exc.filename else " standard output"
    if isinstance(exc, BrokenPipeError) or exc.errno == errno.EPIPE:
        return "standard output was closed before the output was complete (broken pipe)"
    reason = exc.strerror or " ".join(str(exc).split()) or type(exc).__name__
    return f"cannot write{where}: {reason}"


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="dolda")
@click.option("--verbose", "-v", count=True, help="Log more (-v: info, -vv: debug).")
def main(verbose):
    """dolda: interpretable supervised topic models (Diagonal Orthant LDA).

    DATA files are CSV or TSV (.csv, .tsv, .tab; compressed .csv.gz, .tsv.gz, .bz2,
    .xz), Parquet (.parquet, .pq), JSON Lines (.jsonl, .jsonl.gz, .ndjson) or JSON
    (.json), chosen by extension.  Rows are numbered from 0, the header not counted.  Run
    `dolda COMMAND --help` for the options of a command.
    """
    level = (logging.WARNING, logging.INFO, logging.DEBUG)[min(verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s: %(message)s")
    if verbose < 2:
        for handler in logging.getLogger().handlers:
            handler.setFormatter(_OneLineFormatter("%(levelname)s: %(message)s"))
