"""The ``dolda`` command: fit, predict, evaluate, inspect and demo DOLDA from a shell.

One module per command group; below them the shared parts: reading tables (``_tables``),
writing files (``_files``), loading models (``_models``), shared options (``_options``),
the Dask client (``_dask``), the output policy (``_policy``), and what all of them share
(``_common``).
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
from ._dask import DEFAULT_CONNECT_TIMEOUT  # noqa: E402,F401
from ._tables import read_table  # noqa: E402,F401
from .fit import _resume_command  # noqa: E402,F401
from .demo import match_topics  # noqa: E402,F401
