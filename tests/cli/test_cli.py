"""The ``dolda`` command line, end to end on small simulated tables.

Models are tiny (4 topics, a few dozen iterations): these tests check the
plumbing (files, columns, messages, exit codes), not the statistics, which
``test_model.py`` covers.
"""

import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from dolda.cli import main
from dolda.datasets import simulate

FAST = ["--topics", "4", "--iterations", "30", "--quiet", "--seed", "3"]


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def leftovers(directory):
    """Files and directories in ``directory`` (temporary ones included)."""
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=150, n_topics=4, n_classes=3, vocab_size=120, doc_length=30,
                    n_signal=1, covariates=True, random_state=0)


@pytest.fixture(scope="module")
def table(sim):
    frame = pd.DataFrame({"doc_id": [f"d{i:03d}" for i in range(len(sim.texts))],
                          "body": sim.texts, "genre": sim.y,
                          "x_num": sim.X["x_num"], "x_cat": sim.X["x_cat"].astype(str)})
    return frame


@pytest.fixture(scope="module")
def data_csv(table, tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "docs.csv"
    table.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def model_dir(data_csv, tmp_path_factory):
    out = tmp_path_factory.mktemp("fit") / "model"
    result = run("fit", data_csv, "--text", "body", "--label", "genre",
                 "--covariates", "x_num,x_cat", *FAST, "--out", out)
    assert result.exit_code == 0, result.output
    assert "training accuracy" in result.output
    return out


# ------------------------------------------------------------------ help
def test_help_lists_commands():
    result = run("--help")
    assert result.exit_code == 0
    for command in ("fit", "predict", "evaluate", "topics", "explain", "demo"):
        assert command in result.output


@pytest.mark.parametrize("command", ["fit", "predict", "evaluate", "topics", "explain", "demo"])
def test_every_command_has_help(command):
    result = run(command, "--help")
    assert result.exit_code == 0, result.output
    assert "Example" in result.output or command == "demo"


# ------------------------------------------------------------------ demos
def test_demo_reports_accuracy_beside_logistic_regression():
    result = CliRunner().invoke(main, ["demo", "--probit", "--iterations", "200", "--quiet"])
    assert result.exit_code == 0, result.output
    acc = float(re.search(r"DOProbit \(Horseshoe\): test accuracy ([0-9.]+)", result.output)[1])
    acc_lr = float(re.search(r"LogisticRegression  : test accuracy ([0-9.]+)", result.output)[1])
    assert acc > 0.93 and acc_lr > 0.93


def test_demo_fits_dolda_on_a_simulated_corpus():
    """A small run of the default demo: held-out accuracy near the Bayes classifier's
    (within 0.15: 100 test documents, binomial s.e. ~0.05) and every line printed."""
    result = run("demo", "--docs", "400", "--iterations", "100", "--quiet")
    assert result.exit_code == 0, result.output
    acc, bayes = map(float, re.search(
        r"Held-out accuracy: ([0-9.]+) .*true parameters: ([0-9.]+)", result.output).groups())
    assert acc > bayes - 0.15, result.output
    assert re.search(r"median Hellinger distance 0\.[0-9]+", result.output)
    assert len(re.findall(r"class\d: true ", result.output)) == 3
    found, total = map(int, re.search(r"Recovered (\d+) of (\d+) true signal topics",
                                      result.output).groups())
    assert total == 6 and found >= 4, result.output

@pytest.mark.parametrize("command", ["fit", "predict", "score", "evaluate", "tune", "report",
                                     "lda"])
def test_every_help_lists_every_table_format(command):
    text = " ".join(run(command, "--help").output.split())
    for suffix in (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".parquet", ".jsonl", ".jsonl.gz",
                   ".json"):
        assert suffix in text, (command, suffix)


def test_compressed_csv_and_tsv_are_read_like_jsonl_gz(table, tmp_path):
    import gzip

    from dolda.cli._tables import read_table

    for name, sep in (("d.csv.gz", ","), ("d.tsv.gz", "\t")):
        with gzip.open(tmp_path / name, "wt", encoding="utf-8") as fh:
            table.to_csv(fh, index=False, sep=sep)
        pd.testing.assert_frame_equal(read_table(tmp_path / name), table, check_dtype=False)
    (tmp_path / "bad.csv.gz").write_bytes(b"not gzip")
    bad = run("fit", tmp_path / "bad.csv.gz", "--text", "body", "--label", "genre", *FAST,
              "--out", tmp_path / "m")
    assert bad.exit_code != 0 and "cannot decompress it as gzip" in bad.output


# ------------------------------------------------------------ end to end
def test_fit_saves_a_model_with_its_columns(model_dir):
    assert (model_dir / "model.json").is_file()
    meta = json.loads((model_dir / "cli.json").read_text())
    assert meta["text_column"] == "body" and meta["label_column"] == "genre"
    assert meta["covariates"] == ["x_num", "x_cat"]
    assert not [p for p in leftovers(model_dir.parent) if p.startswith(".")]


def test_fit_summary(data_csv, tmp_path):
    result = run("fit", data_csv, "--text", "body", "--label", "genre", *FAST,
                 "--out", tmp_path / "m")
    assert result.exit_code == 0, result.output
    assert re.search(r"iterations\s+30", result.output)
    assert re.search(r"time\s+[0-9.]+ s \([0-9,]+ tokens/s\)", result.output)
    acc = float(re.search(r"training accuracy ([0-9.]+)", result.output)[1])
    assert 0 <= acc <= 1
    from dolda import load
    from dolda.posterior.calibration import stacking_map

    kind = stacking_map(load(tmp_path / "m").stacking_)  # the map fit chose
    inputs = "the class scores" + (" and their one-vs-rest log-probabilities"
                                   if kind == "mu, log F(mu)" else "")
    assert (f"  probabilities     calibrated map on {inputs} ({kind}), chosen by leave-one-out "
            "log score with a parameter penalty\n") in result.output
    # a second fit to the same place needs --overwrite
    again = run("fit", data_csv, "--text", "body", "--label", "genre", *FAST,
                "--out", tmp_path / "m")
    assert again.exit_code != 0 and "--overwrite" in again.output


def test_predict_writes_class_and_probabilities(model_dir, data_csv, sim, tmp_path):
    out = tmp_path / "pred.csv"
    result = run("predict", model_dir, data_csv, "--out", out)
    assert result.exit_code == 0, result.output
    pred = pd.read_csv(out)
    assert list(pred.columns) == ["row", "predicted", "p_class0", "p_class1", "p_class2"]
    assert pred["row"].tolist() == list(range(len(sim.texts)))
    proba = pred[["p_class0", "p_class1", "p_class2"]].to_numpy()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
    best = np.array(["class0", "class1", "class2"])[proba.argmax(axis=1)]
    assert (pred["predicted"].to_numpy() == best).all()
    assert leftovers(tmp_path) == ["pred.csv"]


def test_predict_parquet_with_id_and_renamed_columns(model_dir, table, tmp_path):
    data = tmp_path / "new.parquet"
    table.rename(columns={"body": "review", "x_cat": "cat"}).head(20).to_parquet(data)
    out = tmp_path / "pred.parquet"
    result = run("predict", model_dir, data, "--text", "review", "--covariates", "x_num,cat",
                 "--id", "doc_id", "--out", out)
    assert result.exit_code == 0, result.output
    pred = pd.read_parquet(out)
    assert pred["doc_id"].tolist() == table["doc_id"].head(20).tolist()
    assert list(pred.columns[1:]) == ["predicted", "p_class0", "p_class1", "p_class2"]


def test_topics_lists_words_and_signal_topics(model_dir):
    result = run("topics", model_dir, "--words", "5")
    assert result.exit_code == 0, result.output
    assert len(re.findall(r"^\s+topic \d  (w\d{4} ){4}w\d{4}$", result.output, re.M)) == 4
    for label in ("class0", "class1", "class2"):
        assert re.search(rf"^\s+{label}:", result.output, re.M)


def _signal_words_of(model, label, level=0.95):
    """The word covariates among the library's signal covariates of ``label``."""
    table = model.signal_covariates(label, level=level)
    # a boolean row mask (an empty list would select no columns instead of no rows)
    return table.loc[np.array([str(c).startswith("word=") for c in table.index], dtype=bool)]


def test_topics_shows_the_signal_words_not_every_word(model_dir):
    """Word covariates are shown as signals (interval excludes 0), largest |coef| first, at
    most ``--signals`` per class as text; json lists every one with its repeats (the
    library's ``signal_covariates``), and the covariate effects keep the user's covariates
    (every word's effect was printed there, thousands of lines on a real corpus)."""
    from dolda import load

    model = load(model_dir)
    doc = json.loads(run("topics", model_dir, "--format", "json").stdout)
    assert doc["n_chains"] == 1
    assert set(doc["signal_words"]) == {"class0", "class1", "class2"}
    assert sum(len(v) for v in doc["signal_words"].values()) >= 3
    for label, items in doc["signal_words"].items():
        want = _signal_words_of(model, label)
        assert [c["feature"] for c in items] == [str(c) for c in want.index]
        np.testing.assert_allclose([c["coef"] for c in items], want["coef"])
        assert all(c["lower"] > 0 or c["upper"] < 0 for c in items)
        assert all(c["repeats"] == 1.0 for c in items)
        coefs = [abs(c["coef"]) for c in items]
        assert coefs == sorted(coefs, reverse=True)
    for items in doc["covariates"].values():
        assert {c["feature"] for c in items} >= {"x_num"}
        assert not any(c["feature"].startswith("word=") for c in items)

    text = run("topics", model_dir, "--signals", "2").output
    block = text.split("Signal words per class")[1]
    for label, items in doc["signal_words"].items():
        part = block.split(f"  {label}:")[1].split("\n  class")[0]
        shown = re.findall(r"^    (word=\S+)\s+[+-]\d\.\d{3}\s+\[", part, re.M)
        assert shown == [c["feature"] for c in items[:2]]
        assert (f"... and {len(items) - 2} more" in part) == (len(items) > 2)
    assert "chains" not in block.splitlines()[0]  # one chain: no repeats shown
    assert "word=" not in text.split("Signal words per class")[0]

    frame = pd.read_csv(io.StringIO(run("topics", model_dir, "--format", "csv").stdout))
    words = frame[frame["kind"] == "word"]
    assert len(words) == sum(len(v) for v in doc["signal_words"].values())
    assert words["signal"].all() and (words["repeats"] == 1.0).all()


def test_topics_of_several_chains_say_in_how_many_each_signal_repeats(data_csv, tmp_path):
    from dolda import load

    out = tmp_path / "model"
    assert run("fit", data_csv, "--text", "body", "--label", "genre", "--chains", "2",
               *FAST, "--out", out).exit_code == 0
    model = load(out)
    # an 80% interval: more signals, some in one chain only
    doc = json.loads(run("topics", out, "--format", "json", "--level", "0.8").stdout)
    assert doc["n_chains"] == 2
    text = run("topics", out, "--signals", "100", "--level", "0.8").output
    seen = 0
    for label, items in doc["signal_words"].items():
        want = _signal_words_of(model, label, level=0.8)
        np.testing.assert_allclose([c["repeats"] for c in items], want["repeats"])
        for c in items:
            assert c["repeats"] in (0.0, 0.5, 1.0)
            assert re.search(rf"^    {re.escape(c['feature'])}\s.*\]  "
                             rf"{round(2 * c['repeats'])}/2 chains$", text, re.M)
            seen += 1
    assert seen
    assert {c["repeats"] for v in doc["signal_words"].values() for c in v} == {0.5, 1.0}
    assert "n/2 chains" in text


def test_explain_prints_probabilities_and_contributions(model_dir, sim):
    result = run("explain", model_dir, sim.texts[0], "-c", "x_num=0.5", "-c", "x_cat=b")
    assert result.exit_code == 0, result.output
    probs = [float(p) for p in re.findall(r"^\s+class\d\s+([0-9.]+)$", result.output, re.M)]
    assert len(probs) == 3 and abs(sum(probs) - 1) < 2e-3
    assert "Largest contributions" in result.output
    assert re.search(r"topic \d|x_num|x_cat=b", result.output)


def test_explain_names_a_missing_covariate(model_dir, sim):
    result = run("explain", model_dir, sim.texts[0], "-c", "x_num=0.5")
    assert result.exit_code != 0
    assert "x_cat" in result.output


def test_evaluate_two_folds(data_csv, tmp_path):
    out = tmp_path / "cv.json"
    result = run("evaluate", data_csv, "--text", "body", "--label", "genre", "--folds", "2",
                 *FAST, "--out", out)
    assert result.exit_code == 0, result.output
    assert "confusion matrix" in result.output and "macro-F1" in result.output
    res = json.loads(out.read_text())
    assert res["folds"] == 2 and len(res["per_fold"]) == 2
    assert 0 <= res["accuracy"] <= 1 and 0 <= res["macro_f1"] <= 1
    cm = np.array(res["confusion_matrix"]["matrix"])
    assert cm.shape == (3, 3) and cm.sum() == 150
    assert res["confusion_matrix"]["labels"] == ["class0", "class1", "class2"]
    assert np.isclose(np.trace(cm) / cm.sum(), res["accuracy"])
    assert leftovers(tmp_path) == ["cv.json"]


def test_fit_interrupted_tells_how_to_resume(data_csv, tmp_path, monkeypatch):
    from dolda.models.dolda.estimator import DOLDA, FitInterrupted

    def interrupted(self, *args, **kwargs):
        raise FitInterrupted(self.checkpoint)

    monkeypatch.setattr(DOLDA, "fit", interrupted)
    ckpt, out = tmp_path / "ckpt", tmp_path / "model"
    result = run("fit", data_csv, "--text", "body", "--label", "genre", *FAST,
                 "--checkpoint", ckpt, "--out", out)
    assert result.exit_code == 130
    assert f"saved in {ckpt}" in result.output
    assert f"--resume {ckpt}" in result.output and "--topics 4" in result.output
    assert not out.exists()


def test_fit_passes_the_convergence_options_and_the_resume_command_keeps_them(
        data_csv, model_dir, tmp_path, monkeypatch):
    """--global-scales, --word-prior(-variance), --slab-scale, --slab-blocks, --topic-init and
    --init-iter reach the model
    (saved with it) and
    the command printed to resume an interrupted fit repeats them."""
    import dolda
    from dolda.models.dolda.estimator import DOLDA, FitInterrupted

    out = tmp_path / "model"
    options = ["--global-scales", "block", "--word-prior", "normal", "--word-prior-variance",
               "0.5", "--slab-scale", "1.5", "--slab-blocks", "words,topics", "--topic-init",
               "nmf", "--init-iter", "3"]
    result = run("fit", data_csv, "--text", "body", "--label", "genre", *FAST, *options,
                 "--out", out)
    assert result.exit_code == 0, result.output
    back = dolda.load(out)
    assert (back.global_scales, back.slab_scale, back.slab_blocks, back.topic_init,
            back.init_iter) == ("block", 1.5, "words,topics", "nmf", 3)
    assert (back.word_prior, back.word_prior_variance) == ("normal", 0.5)
    assert back.tau_draws_.ndim == 3  # one global scale per class and block
    plain = run("fit", data_csv, "--text", "body", "--label", "genre", *FAST,
                "--slab-scale", "none", "--out", tmp_path / "m5")
    assert plain.exit_code == 0, plain.output
    assert dolda.load(tmp_path / "m5").slab_scale is None
    default = dolda.load(model_dir)  # the default: a slab on the covariates and words
    assert (default.slab_scale, default.slab_blocks) == (2.5, "covariates,words")

    def interrupted(self, *args, **kwargs):
        raise FitInterrupted(self.checkpoint)

    monkeypatch.setattr(DOLDA, "fit", interrupted)
    result = run("fit", data_csv, "--text", "body", "--label", "genre", *FAST, *options,
                 "--checkpoint", tmp_path / "ck", "--out", tmp_path / "m2")
    assert result.exit_code == 130
    assert " ".join(options) in result.output, result.output
    bad = run("fit", data_csv, "--text", "body", "--label", "genre", *FAST,
              "--topic-init", "lda", "--out", tmp_path / "m3")
    assert bad.exit_code == 2 and "--topic-init" in bad.output
    bad = run("fit", data_csv, "--text", "body", "--label", "genre", *FAST,
              "--slab-scale", "0", "--out", tmp_path / "m4")
    assert bad.exit_code == 2 and "--slab-scale" in bad.output
    bad = run("fit", data_csv, "--text", "body", "--label", "genre", *FAST,
              "--slab-blocks", "words,intercept", "--out", tmp_path / "m6")
    assert bad.exit_code == 2 and "--slab-blocks" in bad.output and "'words,intercept'" in bad.output


# -------------------------------------------------------------- bad input
def fit_args(data, out, label="genre", text="body"):
    return ["fit", data, "--text", text, "--label", label, *FAST, "--out", out]


def test_single_class_label(table, tmp_path):
    data = tmp_path / "one.csv"
    table.assign(genre="drama").to_csv(data, index=False)
    result = run(*fit_args(data, tmp_path / "model"))
    assert result.exit_code != 0
    assert "label column 'genre' has a single class ('drama')" in result.output
    assert leftovers(tmp_path) == ["one.csv"]


def test_missing_labels(table, tmp_path):
    data = tmp_path / "missing.csv"
    table.assign(genre=table["genre"].where(table.index % 50 != 7)).to_csv(data, index=False)
    result = run(*fit_args(data, tmp_path / "model"))
    assert result.exit_code != 0
    assert "label column 'genre' of " in result.output
    assert "is empty at row(s) 7, 57, 107 (3 of 150 rows" in result.output
    assert leftovers(tmp_path) == ["missing.csv"]


def test_missing_covariate_at_predict(model_dir, table, tmp_path):
    data = tmp_path / "new.csv"
    table.drop(columns="x_cat").to_csv(data, index=False)
    result = run("predict", model_dir, data, "--out", tmp_path / "pred.csv")
    assert result.exit_code != 0
    assert "covariate column 'x_cat' used by the model is missing" in result.output
    assert leftovers(tmp_path) == ["new.csv"]


def test_unseen_covariate_level_warns(model_dir, table, tmp_path):
    data = tmp_path / "new.csv"
    table.head(10).assign(x_cat=["zzz"] * 3 + ["a"] * 7).to_csv(data, index=False)
    result = run("predict", model_dir, data, "--out", tmp_path / "pred.csv")
    assert result.exit_code == 0, result.output
    assert re.search(r"Warning: column 'x_cat'.*not seen in fit.*zzz", result.output)
    assert len(pd.read_csv(tmp_path / "pred.csv")) == 10


def test_non_utf8_bytes_name_the_row(table, tmp_path):
    data = tmp_path / "latin.csv"
    raw = table.to_csv(index=False).encode("utf-8").split(b"\n")
    raw[5] = raw[5].replace(b",", b",caf\xe9 ", 1)  # line 6 of the file = row 4
    data.write_bytes(b"\n".join(raw))
    result = run(*fit_args(data, tmp_path / "model"))
    assert result.exit_code != 0
    assert "row 4 (line 6, column" in result.output and "not valid utf-8" in result.output
    assert "0xe9" in result.output
    assert leftovers(tmp_path) == ["latin.csv"]
    # the same file read as latin-1 is fine as far as decoding goes
    assert run("fit", data, "--text", "nope", "--label", "genre", "--encoding", "latin-1",
               "--out", tmp_path / "model").output.count("not valid") == 0


def test_empty_text_column(table, tmp_path):
    data = tmp_path / "empty.csv"
    table.assign(body="").to_csv(data, index=False)
    result = run(*fit_args(data, tmp_path / "model"))
    assert result.exit_code != 0
    assert "text column 'body'" in result.output and "is empty" in result.output
    assert leftovers(tmp_path) == ["empty.csv"]


def test_not_a_model_directory(data_csv, tmp_path):
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("hello")
    result = run("predict", tmp_path / "junk", data_csv, "--out", tmp_path / "pred.csv")
    assert result.exit_code != 0
    assert "is not a dolda model" in result.output
    for command in (["topics", tmp_path / "junk"], ["explain", tmp_path / "junk", "text"]):
        again = run(*command)
        assert again.exit_code != 0 and "is not a dolda model" in again.output
    assert leftovers(tmp_path) == ["junk"]


def test_missing_column_lists_the_columns(data_csv, tmp_path):
    result = run(*fit_args(data_csv, tmp_path / "model", label="rating"))
    assert result.exit_code != 0
    assert ("column 'rating' (given by --label) is not in" in result.output
            and "'doc_id', 'body', 'genre', 'x_num', 'x_cat'" in result.output)
    result = run("fit", data_csv, "--text", "body", "--label", "genre",
                 "--covariates", "x_num,year", *FAST, "--out", tmp_path / "model")
    assert result.exit_code != 0 and "column 'year' (given by --covariates)" in result.output
    assert leftovers(tmp_path) == []


def test_output_into_a_missing_directory(model_dir, data_csv, tmp_path):
    result = run("predict", model_dir, data_csv, "--out", tmp_path / "no" / "pred.csv")
    assert result.exit_code != 0 and "does not exist" in result.output


def test_unknown_table_format(tmp_path):
    data = tmp_path / "docs.xlsx"
    data.write_text("x")
    result = run(*fit_args(data, tmp_path / "model"))
    assert result.exit_code != 0 and "unknown table format '.xlsx'" in result.output


def test_fit_min_count_pools_rare_levels(table, tmp_path):
    """--min-count pools the rare levels of a categorical covariate into '<column>=other'."""
    import dolda

    frame = table.copy()
    frame["source"] = ["big"] * 100 + ["mid"] * 44 + [f"rare{i}" for i in range(6)]
    path = tmp_path / "docs.csv"
    frame.to_csv(path, index=False)
    out = tmp_path / "model"
    result = run("fit", path, "--text", "body", "--label", "genre", "--covariates", "source",
                 "--min-count", "5", *FAST, "--out", out)
    assert result.exit_code == 0, result.output
    names = dolda.load(out).feature_names_
    assert [n for n in names if n.startswith("source=")] == \
        ["source=big", "source=mid", "source=other"]
    # the same model predicts a level it never saw (pooled into "other")
    frame.loc[0, "source"] = "never seen"
    frame.to_csv(path, index=False)
    result = run("predict", out, path, "--out", tmp_path / "pred.csv")
    assert result.exit_code == 0, result.output
    assert len(pd.read_csv(tmp_path / "pred.csv")) == len(frame)
