"""One escaping policy for every output channel of the package.

Class labels, topic labels, words and covariate names come from training data
or from a model file, so any of them may hold markup, terminal control
sequences or a spreadsheet formula.  Each channel has one function here, and
every writer of that channel goes through it:

* **terminal** (:func:`terminal`, :func:`terminal_text`): every control
  character (C0, DEL, C1), the bidirectional overrides and the line/paragraph
  separators are shown as a visible escape (``\\x1b``, ``\\u202e``) and never
  emitted, so a label cannot clear the screen, write the clipboard (OSC 52)
  or reorder what the reader sees.  :func:`terminal_text` keeps the newlines
  and tabs of a whole block of output that the program laid out itself.
* **HTML** (:func:`html_text`): ``& < > " '`` as character references (safe
  in text and in quoted attributes), braces too (the report's placeholders
  use them), control characters other than newline and tab shown as for the
  terminal.
* **Markdown rendered as HTML** (:func:`markdown_text`, for the service's
  OpenAPI description, which ReDoc and Swagger UI render): every ASCII
  punctuation character as a numeric character reference, which CommonMark
  shows literally, so a label can open neither a tag nor a link nor code.
* **CSV for spreadsheets** (:func:`csv_cell`, :func:`csv_frame`): a text cell
  starting with ``=``, ``+``, ``-``, ``@``, tab or carriage return is
  prefixed with ``'`` so that a spreadsheet shows it instead of evaluating
  it; numbers (numeric columns, and text cells that are plain decimal
  numbers such as ``-1.5``) are left as they are.
* **JSON** (:func:`json_dumps`) stays exact: the value read back is the value
  written; DEL and the C1 controls, which :mod:`json` leaves raw, are written
  as ``\\u`` escapes so that a document printed to a terminal is inert too.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata

__all__ = ["terminal", "terminal_text", "html_text", "markdown_text", "csv_cell",
           "csv_frame", "json_dumps", "is_formula", "FORMULA_STARTS"]

#: Characters that reorder text (bidirectional embeddings, overrides and isolates).
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
#: First characters that make a spreadsheet evaluate a cell.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_JSON_RAW = re.compile("[\u007f-\u009f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def _is_unsafe(ch: str) -> bool:
    return unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI


def _visible(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escape_unsafe(text: str, keep: str = "") -> str:
    if text.isprintable() and not any(ch in _BIDI for ch in text):
        return text  # the common case, without a per-character loop
    return "".join(_visible(ch) if ch not in keep and _is_unsafe(ch) else ch for ch in text)


def terminal(value) -> str:
    """``str(value)`` with every control character (newline and tab included), bidi
    override and line separator shown as a visible ``\\xNN`` / ``\\uNNNN`` escape:
    for one label, word or name inside a line of terminal output."""
    return _escape_unsafe(str(value))


def terminal_text(text) -> str:
    """A block of terminal output (lines the program laid out): as :func:`terminal`,
    but its newlines and tabs are kept."""
    return _escape_unsafe(str(text), keep="\n\t")


_HTML_EXTRA = str.maketrans({"{": "&#123;", "}": "&#125;"})


def html_text(value) -> str:
    """``value`` as HTML text, safe in element content and in quoted attributes."""
    return html.escape(_escape_unsafe(str(value), keep="\n\t"), quote=True).translate(
        _HTML_EXTRA)


_MARKDOWN = str.maketrans({chr(c): f"&#{c};" for c in range(0x21, 0x7f)
                           if not chr(c).isalnum()})


def markdown_text(value) -> str:
    """``value`` as literal text inside Markdown that is rendered to HTML: every ASCII
    punctuation character as a numeric reference, controls shown as escapes."""
    return terminal(value).translate(_MARKDOWN)


def is_formula(value) -> bool:
    """True for a text a spreadsheet would evaluate (``=1+1``, ``@SUM(A1)``, ``-2+3``),
    False for a plain number such as ``-1.5`` and for anything not a str."""
    return (isinstance(value, str) and value.startswith(FORMULA_STARTS)
            and _PLAIN_NUMBER.fullmatch(value) is None)


def csv_cell(value):
    """``value`` for a CSV cell a spreadsheet may open: a formula-like text gets a
    leading ``'``; everything else is returned unchanged."""
    return "'" + value if is_formula(value) else value


def csv_frame(frame):
    """A copy of the DataFrame ``frame`` with :func:`csv_cell` applied to the cells of its
    text (object, string, category) columns, and to its column names; numeric columns are
    untouched, so negative numbers stay numbers.  ``frame`` itself is returned when no
    cell needs the prefix."""
    import pandas as pd

    columns = [c for c in frame.columns
               if not (pd.api.types.is_numeric_dtype(frame[c])
                       or pd.api.types.is_bool_dtype(frame[c]))]
    hits = [c for c in columns if frame[c].map(is_formula).any()]
    names_hit = any(is_formula(c) for c in frame.columns)
    if not hits and not names_hit:
        return frame
    out = frame.copy()
    for c in hits:
        values = out[c].astype(object)
        out[c] = values.map(csv_cell)
    if names_hit:
        out.columns = [csv_cell(c) for c in out.columns]
    return out


def json_dumps(obj, **kwargs) -> str:
    """:func:`json.dumps` whose output is safe to print: the same JSON value, with DEL,
    the C1 controls, bidi overrides and U+2028/U+2029 written as ``\\u`` escapes (the
    C0 controls are escaped by :mod:`json` itself)."""
    text = json.dumps(obj, **kwargs)
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
