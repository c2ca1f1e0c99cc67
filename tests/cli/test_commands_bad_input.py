"""Issue 34: every command after ``fit`` attacked again (output policy, parsing, messages).

Each row is one case: the command, its arguments, what is expected (``"error"``,
``"ok"``, ``"warn"``), the pattern the error line (or the output) must match, and the
class the case fell in when the attack found it ("raw message" or "unclear", the class
of an error line that does not match).  Every case runs on fresh copies of the model,
the checkpoint and the data in its own directory ``{t}``, and the files it could
destroy are fingerprinted before and after ("data lost").  ``tests/_bad_input.py``
counts the classes per command; ``DOLDA_BAD_INPUT_TALLY=FILE`` also writes them to a
JSON file, which is how the before/after table of the issue was made.

Every case failed on the code before this change (checked by running this file with
``PYTHONPATH`` on the old tree).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _bad_input import check_case, class_summary, run_cli, tally
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dolda

pytestmark = pytest.mark.bad_input

WORDS = ("apple pear fig kiwi plum lime grape melon berry cherry mango papaya quince "
         "lemon orange banana").split()
N = 30
FAST = ["-k", "3", "-n", "2", "--quiet", "--seed", "1"]


def _frame(n=N, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": [f"doc{i}" for i in range(n)],
        "text": [" ".join(rng.choice(WORDS, 6)) for _ in range(n)],
        "label": np.array(["red", "green", "blue"])[np.arange(n) % 3],
        "num": np.round(rng.normal(size=n), 3),
        "cat": rng.choice(["u", "v", "w"], n),
    })


def _write_data(root: Path) -> None:
    f = _frame()
    f.to_csv(root / "ok.csv", index=False)
    f.to_json(root / "ok.json", orient="records")
    lines = (root / "ok.csv").read_text().splitlines()
    # an unquoted comma in the text of every row: pandas took the first column as index
    (root / "shifted.csv").write_text("\n".join(
        [lines[0]] + [ln.replace(" ", ", ", 1) for ln in lines[1:]]) + "\n")
    # one row with an extra field (line 5) and one with a field missing (line 4)
    extra = list(lines)
    extra[4] = extra[4] + ",surplus"
    (root / "extra.csv").write_text("\n".join(extra) + "\n")
    short = list(lines)
    short[3] = short[3].rsplit(",", 1)[0]
    (root / "short.csv").write_text("\n".join(short) + "\n")
    g = f.copy()
    g["cat"] = g["cat"].astype(object)
    g.loc[3, "cat"] = None
    g.to_csv(root / "missing_cat.csv", index=False)


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """Data files, a model with both kinds of covariates and a checkpoint (fitted once)."""
    root = tmp_path_factory.mktemp("base")
    _write_data(root)
    out = run_cli(["fit", root / "ok.csv", "--text", "text", "--label", "label",
                   "--covariates", "num,cat", *FAST, "--checkpoint", root / "ck",
                   "--out", root / "m"])
    assert out[0] == "ok", out[1]
    out = run_cli(["lda", root / "ok.csv", "--text", "text", "-k", "2", "-n", "2", "--quiet",
                   "--out", root / "lda"])
    assert out[0] == "ok", out[1]
    return root


def unwritable_dir(root: Path) -> Path:
    """A directory this process cannot create files in (root ignores permissions: /sys,
    read-only in containers)."""
    if os.geteuid() != 0:
        d = root / "readonly"
        d.mkdir()
        d.chmod(0o555)
        return d
    try:
        Path("/sys/.dolda-probe").write_text("")
    except OSError:
        return Path("/sys")
    Path("/sys/.dolda-probe").unlink()
    pytest.skip("no directory that root cannot write")


@pytest.fixture
def t(base, tmp_path):
    """The case's directory: fresh copies of everything a case may damage."""
    for name in ("m", "ck", "lda"):
        shutil.copytree(base / name, tmp_path / name)
    for name in base.iterdir():
        if name.is_file():
            shutil.copy(name, tmp_path / name.name)
    return tmp_path


def _args(template, t, ro=None):
    return [str(a).format(t=t, ro=ro) for a in template]


FIT = ["fit", "{t}/ok.csv", "--text", "text", "--label", "label", *FAST]
EV = ["evaluate", "{t}/ok.csv", "--text", "text", "--label", "label", "--folds", "2", *FAST]
TUNE = ["tune", "{t}/ok.csv", "--text", "text", "--label", "label", "--topics", "2",
        "--folds", "2", "-n", "2", "--quiet"]
COV = ["-c", "num=0.5", "-c", "cat=u"]
MODEL = ("{t}/m",)
DATA = ("{t}/ok.csv",)

# (command, case, args, expect, pattern, class when found, protected paths)
CASES = [
    # ---------------------------------------------------------------- 1. output policy
    ("predict", "out into the model directory",
     ["predict", "{t}/m", "{t}/ok.csv", "--out", "{t}/m/p.csv"], "error",
     "inside the model", "unclear", MODEL),
    ("predict", "out onto its own input",
     ["predict", "{t}/m", "{t}/ok.csv", "--out", "{t}/ok.csv"], "error",
     "also the DATA file", "unclear", DATA),
    ("predict", "out onto its input by another spelling",
     ["predict", "{t}/m", "{t}/ok.csv", "--out", "{t}/m/../ok.csv"], "error",
     "also the DATA file", "unclear", DATA),
    ("predict", "out in a checkpoint directory",
     ["predict", "{t}/m", "{t}/ok.csv", "--out", "{t}/ck/p.csv"], "error",
     "inside the model or checkpoint", "unclear", ("{t}/ck",)),
    ("predict", "out directory not writable",
     ["predict", "{t}/m", "{t}/ok.csv", "--out", "{ro}/p.csv"], "error",
     "--out.*cannot write in", "unclear", ()),
    ("score", "out onto the model's model.json",
     ["score", "{t}/m", "{t}/ok.csv", "--out", "{t}/m/model.json"], "error",
     "inside the model", "unclear", MODEL),
    ("score", "out onto its own input (JSON data)",
     ["score", "{t}/m", "{t}/ok.json", "--out", "{t}/ok.json"], "error",
     "also the DATA file", "unclear", ("{t}/ok.json",)),
    ("score", "out directory not writable",
     ["score", "{t}/m", "{t}/ok.csv", "--out", "{ro}/s.json"], "error", "cannot write in",
     "unclear", ()),
    ("topics", "json onto the model's model.json",
     ["topics", "{t}/m", "--format", "json", "--out", "{t}/m/model.json"], "error",
     "inside the model", "unclear", MODEL),
    ("topics", "text into the model directory",
     ["topics", "{t}/m", "--out", "{t}/m/topics.txt"], "error", "inside the model",
     "unclear", MODEL),
    ("topics", "csv into an LDA model directory",
     ["topics", "{t}/lda", "--format", "csv", "--out", "{t}/lda/t.csv"], "error",
     "inside the model", "unclear", ("{t}/lda",)),
    ("topics", "out directory not writable",
     ["topics", "{t}/m", "--format", "json", "--out", "{ro}/t.json"], "error",
     "cannot write in", "unclear", ()),
    ("report", "out onto the model's model.json",
     ["report", "{t}/m", "--out", "{t}/m/model.json"], "error", "inside the model",
     "unclear", MODEL),
    ("report", "out onto --data",
     ["report", "{t}/m", "--data", "{t}/ok.csv", "--out", "{t}/ok.csv"], "error",
     "also the --data file", "unclear", DATA),
    ("report", "out directory not writable",
     ["report", "{t}/m", "--out", "{ro}/r.html"], "error", "cannot write in", "unclear", ()),
    ("evaluate", "out onto its own input (JSON data)",
     EV[:1] + ["{t}/ok.json"] + EV[2:] + ["--out", "{t}/ok.json"], "error",
     "also the DATA file", "unclear", ("{t}/ok.json",)),
    ("evaluate", "out into the model directory", EV + ["--out", "{t}/m/cv.json"], "error",
     "inside the model", "unclear", MODEL),
    ("evaluate", "out directory not writable", EV + ["--out", "{ro}/cv.json"], "error",
     "cannot write in", "unclear", ()),
    ("tune", "out onto its own input", TUNE + ["--out", "{t}/ok.csv"], "error",
     "also the DATA file", "unclear", DATA),
    ("tune", "out directory not writable", TUNE + ["--out", "{ro}/k.csv"], "error",
     "cannot write in", "unclear", ()),
    ("fit", "checkpoint and out the same directory",
     FIT + ["--checkpoint", "{t}/c1", "--out", "{t}/c1"], "error",
     "--checkpoint.*must be different", "unclear", ()),
    ("fit", "checkpoint inside out", FIT + ["--checkpoint", "{t}/o/ck", "--out", "{t}/o"],
     "error", "does not exist|must be different", "unclear", ()),
    ("fit", "resume a checkpoint into itself",
     FIT + ["--resume", "{t}/ck", "--out", "{t}/ck", "--overwrite"], "error",
     "must be different", "unclear", ("{t}/ck",)),
    ("fit", "out inside a model directory", FIT + ["--out", "{t}/m/inner"], "error",
     "inside the model", "unclear", MODEL),
    ("lda", "out inside a model directory",
     ["lda", "{t}/ok.csv", "--text", "text", "-k", "2", "-n", "2", "--quiet", "--out",
      "{t}/m/lda"], "error", "inside the model", "unclear", MODEL),
    # ---------------------------------------------------------- 2. parsing, decoding
    ("predict", "unquoted comma in every row (pandas made column 1 the index)",
     ["predict", "{t}/m", "{t}/shifted.csv", "--id", "id", "--out", "{t}/p.csv"], "error",
     r"line 2 has 6 field\(s\) but the header has 5", "unclear", ()),
    ("predict", "one row with a surplus field",
     ["predict", "{t}/m", "{t}/extra.csv", "--out", "{t}/p.csv"], "error",
     r"line 5 has 6 field\(s\) but the header has 5", "raw message", ()),
    ("predict", "one row with a field missing",
     ["predict", "{t}/m", "{t}/short.csv", "--out", "{t}/p.csv"], "error",
     r"line 4 has 4 field\(s\)", "unclear", ()),
    ("score", "unquoted comma in every row",
     ["score", "{t}/m", "{t}/shifted.csv"], "error", r"line 2 has 6 field", "unclear", ()),
    ("fit", "unquoted comma in every row",
     ["fit", "{t}/shifted.csv"] + FIT[2:] + ["--out", "{t}/o"], "error",
     r"line 2 has 6 field", "unclear", ()),
    ("predict", "missing value of a categorical covariate",
     ["predict", "{t}/m", "{t}/missing_cat.csv", "--out", "{t}/p.csv"], "warn",
     r"column 'cat': 1 missing value.*row\(s\) \[3\]", "unclear", ()),
    ("score", "missing value of a categorical covariate",
     ["score", "{t}/m", "{t}/missing_cat.csv"], "warn", r"'cat': 1 missing value",
     "unclear", ()),
    ("report", "missing value of a categorical covariate",
     ["report", "{t}/m", "--data", "{t}/missing_cat.csv", "--out", "{t}/r.html"], "warn",
     r"'cat': 1 missing value", "unclear", ()),
    ("explain", "stdin not UTF-8", ["explain", "{t}/m", "-", *COV], "error",
     r"standard input \(line 1, column 4\) is not valid utf-8.*--encoding", "raw message", ()),
    ("explain", "stdin latin-1 with --encoding", ["explain", "{t}/m", "-", *COV, "--encoding",
                                                  "latin-1"], "ok", None, "unclear", ()),
    ("explain", "stdin with an unknown --encoding", ["explain", "{t}/m", "-", *COV,
                                                     "--encoding", "klingon"], "error",
     "--encoding.*unknown encoding", "unclear", ()),
    # ------------------------------------------------------------------ 6. messages
    ("fit", "beta 1e308", FIT + ["--beta", "1e308", "--out", "{t}/o"], "error",
     "'--beta'.*too large", "unclear", ()),
    ("fit", "alpha 1e308", FIT + ["--alpha", "1e308", "--out", "{t}/o"], "error",
     "'--alpha'.*too large", "unclear", ()),
    ("lda", "beta 1e308", ["lda", "{t}/ok.csv", "--text", "text", "-k", "2", "-n", "2",
                           "--quiet", "--beta", "1e308", "--out", "{t}/o"], "error",
     "'--beta'", "unclear", ()),
    ("fit", "rare-share nan", FIT + ["--rare-share", "nan", "--out", "{t}/o"], "error",
     "'--rare-share'.*not a finite number", "unclear", ()),
    ("fit", "max-df nan", FIT + ["--max-df", "nan", "--out", "{t}/o"], "error",
     "'--max-df'.*not a finite number", "unclear", ()),
    ("fit", "token-pattern not a regex", FIT + ["--token-pattern", "[", "--out", "{t}/o"],
     "error", "'--token-pattern'.*not a valid regular expression", "unclear", ()),
    ("fit", "token-pattern matching the empty string",
     FIT + ["--token-pattern", r"\w*", "--out", "{t}/o"], "error",
     "'--token-pattern'.*empty string", "unclear", ()),
    ("fit", "token-pattern with two groups",
     FIT + ["--token-pattern", r"(\w)(\w+)", "--out", "{t}/o"], "error",
     "'--token-pattern'.*2 groups", "unclear", ()),
    ("topics", "level nan", ["topics", "{t}/m", "--level", "nan"], "error",
     "'--level'.*not a finite number", "unclear", ()),
    ("topics", "relevance nan", ["topics", "{t}/m", "--relevance", "nan"], "error",
     "'--relevance'.*not a finite number", "unclear", ()),
    ("lda", "alpha inf", ["lda", "{t}/ok.csv", "--text", "text", "-k", "2", "-n", "2",
                          "--quiet", "--alpha", "inf", "--out", "{t}/o"], "error",
     "'--alpha'", "unclear", ()),
    ("evaluate", "seed -1", EV + ["--seed", "-1"], "error", "'--seed'", "unclear", ()),
    ("evaluate", "seed 2**40", EV + ["--seed", str(2**40)], "error", "'--seed'.*at most",
     "unclear", ()),
    ("tune", "seed 2**40", TUNE + ["--seed", str(2**40)], "error", "'--seed'", "unclear", ()),
    ("serve", "header-timeout 0", ["serve", "{t}/m", "--header-timeout", "0"], "error",
     "Invalid value for '--header-timeout'", "unclear", ()),
    ("serve", "body-timeout nan", ["serve", "{t}/m", "--body-timeout", "nan"], "error",
     "Invalid value for '--body-timeout'", "unclear", ()),
]


@pytest.mark.parametrize("command, name, template, expect, pattern, kind, protect", CASES,
                         ids=[f"{c[0]}: {c[1]}" for c in CASES])
def test_command_case(t, command, name, template, expect, pattern, kind, protect):
    ro = unwritable_dir(t) if "{ro}" in " ".join(template) else None
    args = _args(template, t, ro)
    stdin = None
    if command == "explain":
        stdin = "caf\xe9 apple pear".encode("latin-1")
    before = sorted(p.name for p in t.iterdir())
    check_case(command, args, expect, pattern, kind, input=stdin,
               protect=[Path(str(p).format(t=t)) for p in protect])
    if expect == "error":  # nothing left behind (probe files, locks, partial outputs)
        assert sorted(p.name for p in t.iterdir()) == before


def test_ids_are_copied_as_written(t):
    """``--id`` values that look like numbers keep their text (``007`` was written ``7``)."""
    f = _frame()
    f["id"] = [f"{i:03d}" for i in range(N)]
    f.to_csv(t / "zeros.csv", index=False)

    def same_ids(out):
        return pd.read_csv(t / "p.csv", dtype=str)["id"].tolist() == f["id"].tolist()

    check_case("predict", _args(["predict", "{t}/m", "{t}/zeros.csv", "--id", "id", "--out",
                                 "{t}/p.csv"], t), "ok", check=same_ids)


def test_stale_temporary_files_of_an_output_are_removed(t):
    """A killed run leaves ``.p.csv.XXXX.tmp`` beside its output: the next run removes it."""
    (t / ".p.csv.abcd1234.tmp").write_text("half a table")
    output = check_case("predict", _args(["predict", "{t}/m", "{t}/ok.csv", "--out",
                                          "{t}/p.csv"], t), "ok",
                        check=lambda out: not (t / ".p.csv.abcd1234.tmp").exists())
    assert "Predicted" in output
    assert not [p for p in t.iterdir() if p.name.startswith(".p.csv")]


def test_stale_checkpoint_leftovers_are_removed(t):
    """A fit killed while writing its checkpoint leaves ``.ck.tmp-*``; the next fit with
    that --checkpoint removes it (and the lock file of the dead process).  (This held
    before issue 34 too, at the first checkpoint written: a guard, not counted.)"""
    (t / ".c2.tmp-dead").mkdir()
    (t / ".c2.tmp-dead" / "model.json").write_text("{")
    (t / ".c2.lock").write_text("999999")
    outcome, output, _ = run_cli(_args(FIT + ["--checkpoint", "{t}/c2", "--out", "{t}/o"], t))
    assert outcome == "ok", output
    assert not (t / ".c2.tmp-dead").exists() and not (t / ".c2.lock").exists()
    assert (t / "c2" / "model.json").is_file()


def _env():
    return dict(os.environ, PYTHONPATH=str(Path(dolda.__file__).parents[1]),
                OMP_NUM_THREADS="1", NUMBA_NUM_THREADS="1")


@pytest.mark.parametrize("name, args", [
    ("predict to standard output", ["predict", "{t}/m", "{t}/ok.csv", "--out", "-"]),
    ("topics", ["topics", "{t}/m"]),
    ("help", ["--help"]),
])
@pytest.mark.parametrize("sink", ["disk full", "broken pipe"])
def test_write_errors_on_standard_output_are_one_line(t, name, args, sink):
    """``> /dev/full`` and a closed pipe: one ``Error:`` line, exit 1, no traceback."""
    if sink == "disk full" and not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    command = "predict" if name.startswith("predict") else name
    if sink == "disk full":
        out = open("/dev/full", "w")
    else:
        r, w = os.pipe()
        os.close(r)  # the reader is gone before the first write
        out = os.fdopen(w, "w")
    with out:
        proc = subprocess.run([sys.executable, "-m", "dolda.cli", *_args(args, t)],
                              stdout=out, stderr=subprocess.PIPE, text=True, env=_env(),
                              timeout=300)
    err = proc.stderr
    errors = [ln for ln in err.splitlines() if ln.startswith("Error:")]
    if "Traceback" in err or "Exception ignored" in err:
        tally(command, "traceback")
    elif len(errors) != 1 or proc.returncode != 1:
        tally(command, "unclear")
    else:
        tally(command, "as expected")
    assert "Traceback" not in err and "Exception ignored" not in err, err[-2000:]
    assert proc.returncode == 1 and len(errors) == 1, err[-2000:]
    assert ("No space left" if sink == "disk full" else "broken pipe") in errors[0]


# ------------------------------------------------------------ property-based
ROW = st.tuples(st.text(alphabet="ab", min_size=1, max_size=4),
                st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join),
                st.sampled_from(["red", "green", "blue"]),
                st.floats(-5, 5).map(lambda x: f"{x:.3f}"), st.sampled_from(["u", "v", "w"]),
                st.sampled_from([0, 0, 0, 0, 1, 2, -1, -2]))


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(rows=st.lists(ROW, min_size=1, max_size=8))
def test_generated_csv_shapes(base, tmp_path_factory, rows):
    """Rows under the header ``id,text,label,num,cat`` with fields added (an unquoted
    comma in the text) or dropped: a table whose every record has 5 fields is read with
    its ``id`` column intact; any other is refused with the line of the first record
    whose width differs."""
    root = tmp_path_factory.mktemp("shape")
    lines, bad_line = ["id,text,label,num,cat"], None
    for i, (ident, text, label, num, cat, change) in enumerate(rows):
        fields = [ident, text, label, num, cat]
        if change > 0:  # a comma inside the text, unquoted
            words = text.split(" ")
            fields[1:2] = [" ".join(words[:1])] + ["x" * (j + 1) for j in range(change)]
        elif change < 0:
            fields = fields[:change]
        if len(fields) != 5 and bad_line is None:
            bad_line = i + 2
        lines.append(",".join(fields))
    (root / "g.csv").write_text("\n".join(lines) + "\n")
    outcome, output, _ = run_cli(["predict", base / "m", root / "g.csv", "--id", "id",
                                  "--out", root / "p.csv"])
    assert outcome in ("ok", "clear error"), output[-3000:]
    if bad_line is not None:
        assert outcome == "clear error", output
        error = next(ln for ln in output.splitlines() if ln.startswith("Error:"))
        assert f"line {bad_line} has " in error, error
    else:
        assert outcome == "ok", output
        written = pd.read_csv(root / "p.csv", dtype={"id": str})
        assert written["id"].tolist() == [r[0] for r in rows]
    shutil.rmtree(root, ignore_errors=True)


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.binary(max_size=60), encoding=st.sampled_from(["utf-8", "latin-1", "ascii"]))
def test_generated_bytes_on_explain_stdin(base, data, encoding):
    """Any bytes on ``explain -``: an explanation, or one line (undecodable, empty)."""
    outcome, output, _ = run_cli(["explain", base / "m", "-", *COV, "--encoding", encoding],
                                 input=data)
    assert outcome in ("ok", "clear error"), output[-3000:]
    try:
        text = data.decode("utf-8-sig" if encoding == "utf-8" else encoding)
    except UnicodeDecodeError:
        assert outcome == "clear error" and "is not valid" in output, output
        return
    if not text.strip():
        assert outcome == "clear error" and "empty" in output, output


NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                   st.sampled_from(["nan", "inf", "-inf", "1e308", "-0", "0", "1", "abc"]))


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(option=st.sampled_from(["--level", "--relevance"]), value=NUMBER)
def test_generated_option_values_of_topics(base, option, value):
    """Any value of a float option: the output, or one line naming the option."""
    outcome, output, _ = run_cli(["topics", base / "m", option, str(value)])
    assert outcome in ("ok", "clear error"), output[-3000:]
    try:
        number = float(value)
    except ValueError:
        number = float("nan")
    low_ok = number > 0 if option == "--level" else number >= 0
    legal = np.isfinite(number) and low_ok and (number < 1 if option == "--level"
                                                else number <= 1)
    if legal:
        assert outcome == "ok", output
    else:
        assert outcome == "clear error" and option in output, output


def test_zz_command_classes():
    from _bad_input import CLASSES

    print("\n" + class_summary("issue 34 (commands)"))
    bad = {w: dict(c) for w, c in CLASSES.items() if set(c) - {"as expected"}}
    assert not bad, bad
