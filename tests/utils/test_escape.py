"""The one output escaping policy (dolda.utils.escape) and the channels that use it."""

import json
import unicodedata
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dolda.utils.escape import (csv_cell, csv_frame, html_text, is_formula, json_dumps,
                                markdown_text, terminal, terminal_text)

EVIL = ['"><img src=x onerror=alert(1)>', "\x1b[2Jclear", "\x1b]52;c;aGVsbG8=\x07",
        "=cmd|' /C calc'!A0", "\u202eevil", "a\x9bb", "del\x7f", "[x](javascript:alert(1))"]


def _unsafe(text):
    return [c for c in text if unicodedata.category(c) in ("Cc", "Zl", "Zp")
            or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"]


@pytest.mark.parametrize("label", EVIL)
def test_terminal_shows_controls_visibly(label):
    out = terminal(label)
    assert not _unsafe(out)
    if "\x1b" in label:
        assert "\\x1b" in out


def test_terminal_text_keeps_layout_but_not_escapes():
    assert terminal_text("a\tb\nc\x1b[2J") == "a\tb\nc\\x1b[2J"
    assert terminal("a\nb") == "a\\x0ab"


@given(st.text())
def test_terminal_never_emits_a_control_character(s):
    assert not _unsafe(terminal(s))
    assert not [c for c in _unsafe(terminal_text(s)) if c not in "\n\t"]


@given(st.text())
def test_html_and_markdown_never_hold_markup(s):
    for out in (html_text(s), markdown_text(s)):
        assert "<" not in out and ">" not in out and '"' not in out
    assert not any(c in markdown_text(s) for c in "[]()`*_\\!")


def test_csv_formula_guard_keeps_numbers():
    assert [csv_cell(v) for v in ["=1+1", "+A1", "-2+3", "@SUM(A1)", "\tx", "\rx"]] == \
        ["'=1+1", "'+A1", "'-2+3", "'@SUM(A1)", "'\tx", "'\rx"]
    assert [csv_cell(v) for v in ["-1.5", "+3", "-2e-3", "abc", -1.5]] == \
        ["-1.5", "+3", "-2e-3", "abc", -1.5]
    frame = pd.DataFrame({"label": ["=x", "ok"], "p": [-0.5, 1.0]})
    out = csv_frame(frame)
    assert out["label"].tolist() == ["'=x", "ok"] and out["p"].tolist() == [-0.5, 1.0]
    assert frame["label"].tolist() == ["=x", "ok"]  # the input is not changed


@given(st.text())
def test_json_stays_exact(s):
    text = json_dumps({"label": s}, ensure_ascii=False)
    assert json.loads(text) == {"label": s}
    assert not _unsafe(text)


# ------------------------------------------------------------------ the OpenAPI description
def _service(classes, name="model"):
    return SimpleNamespace(model=SimpleNamespace(classes_=np.array(classes, dtype=object)),
                           model_dir=SimpleNamespace(name=name))


@given(st.lists(st.text(min_size=1), min_size=2, max_size=10))
@settings(max_examples=60, deadline=None)
def test_openapi_description_never_holds_a_tag(labels):
    pytest.importorskip("fastapi")
    from dolda.serve.app import _description

    text = _description(_service(labels, name="<b>dir</b>"))
    assert "<" not in text and "\x1b" not in text


def test_openapi_description_of_an_injected_label():
    pytest.importorskip("fastapi")
    from dolda.serve.app import _description

    text = _description(_service(EVIL))
    assert "<img" not in text and "&#60;img" in text and "](javascript" not in text
