"""The ``dolda`` command: fit, predict, evaluate, inspect and demo DOLDA from a shell.

One module per command group; shared table I/O, option groups and the Dask
client live in :mod:`dolda.cli._common`.
"""

from __future__ import annotations

from ._group import (  # noqa: F401
    _Main,
    _OneLineFormatter,
    _flush_stdout,
    _os_error_line,
    _silence_stdout,
    main,
)

# Commands register themselves on ``main`` when imported.
from . import demo, evaluate, explain, fit, inspect, predict, report, serve  # noqa: E402,F401,E501
from . import lda, score, tune  # noqa: E402,F401
from ._common import DEFAULT_CONNECT_TIMEOUT, read_table  # noqa: E402,F401
from .fit import _resume_command  # noqa: E402,F401
from .demo import match_topics  # noqa: E402,F401
