"""The ``dolda`` command: fit, predict, evaluate, inspect and demo DOLDA from a shell.

One module per command group; shared table I/O, option groups and the Dask
client live in :mod:`dolda.cli._common`.
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
    if verbose < 2:
        for handler in logging.getLogger().handlers:
            handler.setFormatter(_OneLineFormatter("%(levelname)s: %(message)s"))


# Commands register themselves on ``main`` when imported.
from . import demo, evaluate, explain, fit, inspect, predict, report, serve  # noqa: E402,F401,E501
from . import lda, score, tune  # noqa: E402,F401
from ._common import DEFAULT_CONNECT_TIMEOUT, read_table  # noqa: E402,F401
from .fit import _resume_command  # noqa: E402,F401
from .demo import match_topics  # noqa: E402,F401
