"""The ``dolda`` command: fit, predict, evaluate, inspect and demo DOLDA from a shell.

One module per command group; shared table I/O, option groups and the Dask
client live in :mod:`dolda.cli._common`.
"""

from __future__ import annotations

import logging

import click

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


# Commands register themselves on ``main`` when imported.
from . import demo, evaluate, explain, fit, inspect, predict, report, serve  # noqa: E402,F401,E501
from . import lda, score, tune  # noqa: E402,F401
from ._common import DEFAULT_CONNECT_TIMEOUT, read_table  # noqa: E402,F401
from .fit import _resume_command  # noqa: E402,F401
from .demo import match_topics  # noqa: E402,F401
