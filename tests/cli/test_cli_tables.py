"""Labels read as the strings they are, and the CLI's output channels escaped
(dolda.cli._tables, dolda.cli._output)."""

import json
import unicodedata

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dolda import DOLDA
from dolda.cli import main
from dolda.cli._tables import _labels, read_table
from dolda.datasets import simulate

NA_LIKE = ["NA", "None", "null", "nan", "N/A", "NULL", "1", "01"]
EVIL = ['"><img src=x onerror=alert(1)>', "\x1b[2Jclear\x1b]52;c;aGVsbG8=\x07", "=1+1"]


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=90, n_topics=3, n_classes=3, vocab_size=50, doc_length=25,
                    n_signal=1, covariates=False, random_state=3)


@pytest.fixture(scope="module")
def evil_model(sim, tmp_path_factory):
    y = np.array(EVIL, dtype=object)[np.searchsorted(np.unique(sim.y), sim.y)]
    model = DOLDA(n_topics=3, n_iter=30, random_state=0, n_jobs=1, progress=False)
    model.fit(sim.texts, y)
    root = tmp_path_factory.mktemp("evil")
    model.save(root / "model")
    pd.DataFrame({"text": sim.texts, "label": y}).to_csv(root / "data.csv", index=False)
    return root


def _csv(tmp_path, labels, name="d.csv"):
    import csv

    path = tmp_path / name
    # every cell quoted: pandas' writer leaves a lone carriage return unquoted
    pd.DataFrame({"text": [f"w{i} x" for i in range(len(labels))],
                  "label": labels}).to_csv(path, index=False, quoting=csv.QUOTE_ALL)
    return path


def test_number_like_and_na_like_labels_stay_classes(tmp_path):
    labels = NA_LIKE * 3
    path = _csv(tmp_path, labels)
    frame = read_table(path, label_columns=["label"])
    assert frame["label"].tolist() == labels
    assert sorted(set(_labels(frame, "label", path))) == sorted(NA_LIKE)


def test_other_columns_keep_pandas_missing_values(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("text,label,x\na b,NA,NA\nc d,1,2\n")
    frame = read_table(path, label_columns=["label"])
    assert frame["label"].tolist() == ["NA", "1"] and frame["x"].isna().tolist() == [True, False]


def test_json_labels_mixing_numbers_and_strings(tmp_path):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps({"text": f"w{i}", "label": v}) + "\n"
                            for i, v in enumerate([1, "01", "NA", "null"] * 3)))
    frame = read_table(path, label_columns=["label"])
    assert sorted(set(_labels(frame, "label", path))) == ["01", "1", "NA", "null"]


@pytest.mark.bad_input
@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_missing_label_is_refused_naming_its_row(tmp_path, suffix):
    import click

    labels = ["a", "b"] * 6
    if suffix == ".csv":
        labels[4] = ""
        path = _csv(tmp_path, labels)
    else:
        path = tmp_path / "d.jsonl"
        path.write_text("".join(json.dumps({"text": "w", "label": None if i == 4 else v}) + "\n"
                                for i, v in enumerate(labels)))
    frame = read_table(path, label_columns=["label"])
    with pytest.raises(click.ClickException) as info:
        _labels(frame, "label", path)
    message = info.value.message
    assert "\n" not in message and "row(s) 4" in message and "'label'" in message


_LABEL = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
                 min_size=1, max_size=12).filter(lambda s: s.strip() != "")


@given(st.lists(_LABEL, min_size=2, max_size=6, unique=True))
@settings(max_examples=60, deadline=None)
def test_any_label_survives_a_csv_round_trip(tmp_path_factory, labels):
    path = _csv(tmp_path_factory.mktemp("rt"), labels * 2)
    frame = read_table(path, label_columns=["label"])
    assert frame["label"].tolist() == labels * 2


# ------------------------------------------------------------------ the commands' output
def _unsafe(text):
    return [c for c in text if unicodedata.category(c) == "Cc" and c not in "\n\t"]


@pytest.mark.parametrize("args", [["topics", "{m}"], ["topics", "{m}", "--format", "csv"],
                                  ["explain", "{m}", "w0001 w0002 w0003"],
                                  ["predict", "{m}", "{d}", "--text", "text", "--out", "-"],
                                  ["score", "{m}", "{d}", "--text", "text", "--label",
                                   "label"]])
def test_commands_print_no_control_characters(evil_model, args):
    args = [a.format(m=evil_model / "model", d=evil_model / "data.csv") for a in args]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert not _unsafe(result.output)
    assert "\\x1b" in result.output


def test_predict_csv_guards_formulas_unless_raw(evil_model, tmp_path):
    base = ["predict", str(evil_model / "model"), str(evil_model / "data.csv"), "--text", "text"]
    assert CliRunner().invoke(main, base + ["--out", str(tmp_path / "p.csv")]).exit_code == 0
    raw = (tmp_path / "p.csv").read_text()
    assert ",'=1+1," in raw and ",=1+1," not in raw
    out = pd.read_csv(tmp_path / "p.csv")
    assert out.filter(like="p_").to_numpy().dtype.kind == "f"  # numbers stay numbers
    assert CliRunner().invoke(main, base + ["--out", str(tmp_path / "r.csv"),
                                            "--raw-csv"]).exit_code == 0
    assert ",=1+1," in (tmp_path / "r.csv").read_text()


def test_inert_cli_options_are_warned(evil_model):
    result = CliRunner().invoke(main, ["topics", str(evil_model / "model"), "--format",
                                       "json", "--signals", "3"])
    assert result.exit_code == 0 and "--signals has no effect" in result.output
