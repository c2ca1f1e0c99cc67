"""The quality and model-choice commands of the ``dolda`` CLI: ``--out -`` and format checks,
``topics``/``explain --format``, ``score``, ``lda`` and ``tune``."""

import json
import re
from io import StringIO

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from dolda.cli import main
from dolda.datasets import simulate

FAST = ["--topics", "4", "--iterations", "30", "--quiet", "--seed", "3"]


def run(*args, **kwargs):
    return CliRunner().invoke(main, [str(a) for a in args], **kwargs)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=120, n_topics=4, n_classes=3, vocab_size=100, doc_length=30,
                    n_signal=1, covariates=True, random_state=0)


@pytest.fixture(scope="module")
def data_csv(sim, tmp_path_factory):
    frame = pd.DataFrame({"body": sim.texts, "genre": sim.y, "x_num": sim.X["x_num"],
                          "x_cat": sim.X["x_cat"].astype(str)})
    path = tmp_path_factory.mktemp("data") / "docs.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def model_dir(data_csv, tmp_path_factory):
    out = tmp_path_factory.mktemp("fit") / "model"
    result = run("fit", data_csv, "--text", "body", "--label", "genre",
                 "--covariates", "x_num,x_cat", *FAST, "--out", out)
    assert result.exit_code == 0, result.output
    assert re.search(r"training accuracy 0\.\d{3} \(in-sample", result.output)
    return out


# ------------------------------------------------------------------ --out
def test_predict_out_dash_writes_csv_to_stdout(model_dir, data_csv, tmp_path):
    result = run("predict", model_dir, data_csv, "--out", "-")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(StringIO(result.stdout))
    assert len(table) == 120 and list(table.columns[:2]) == ["row", "predicted"]
    assert "Predicted 120 documents" in result.stderr
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize("command", ["predict", "score"])
def test_unknown_output_extension_is_a_one_line_error(model_dir, data_csv, tmp_path, command):
    target = tmp_path / "x.xlsx"
    result = run(command, model_dir, data_csv, "--out", target)
    assert result.exit_code == 2
    assert ".xlsx" in result.output and "standard output" in result.output
    assert not target.exists()


def test_evaluate_json_to_stdout_and_extension_check(data_csv, tmp_path):
    bad = run("evaluate", data_csv, "--text", "body", "--label", "genre", "--folds", "2",
              *FAST, "--out", tmp_path / "cv.csv")
    assert bad.exit_code == 2 and "cv.csv" in bad.output
    result = run("evaluate", data_csv, "--text", "body", "--label", "genre", "--folds", "2",
                 *FAST, "--out", "-")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["folds"] == 2 and 0 <= doc["accuracy"] <= 1
    assert "cross-validation" in result.stderr


# ------------------------------------------------------------------ topics / explain
def test_topics_text_shows_covariate_effects(model_dir):
    result = run("topics", model_dir, "--words", "5")
    assert result.exit_code == 0, result.output
    assert len(re.findall(r"^\s+topic \d  (w\d{4} ){4}w\d{4}$", result.output, re.M)) == 4
    assert "relevance lambda = 0.6" in result.output
    assert "Covariate effects" in result.output
    assert re.search(r"^\s+x_num\s+[+-]\d\.\d{3}\s+\[[+-]\d\.\d{3}, [+-]\d\.\d{3}\]",
                     result.output, re.M)
    assert re.search(r"^\s+x_cat=\w+", result.output, re.M)


def test_topics_json_and_csv(model_dir, tmp_path):
    result = run("topics", model_dir, "--format", "json", "--words", "4", "--relevance", "1")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["relevance"] == 1.0 and len(doc["topics"]) == 4
    assert all(len(t["words"]) == 4 and t["label"] for t in doc["topics"])
    assert sum(t["share"] for t in doc["topics"]) == pytest.approx(1.0)
    assert set(doc["signal_topics"]) == {"class0", "class1", "class2"}
    features = {c["feature"] for c in doc["covariates"]["class0"]}
    assert "x_num" in features and any(f.startswith("x_cat=") for f in features)
    out = tmp_path / "topics.csv"
    result = run("topics", model_dir, "--format", "csv", "--out", out)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    # the word covariates are listed as their signal words (kind "word")
    assert set(table["kind"]) == {"topic", "covariate", "word"}
    assert table.loc[table["kind"] == "word", "signal"].all()
    assert len(table[table["kind"] == "topic"]) == 4 * 3  # topic x class
    # csv to a .json file is refused before any work
    bad = run("topics", model_dir, "--format", "csv", "--out", tmp_path / "t.json")
    assert bad.exit_code == 2 and "t.json" in bad.output


# ------------------------------------------------------------------ score
def test_score_on_a_labelled_file(model_dir, data_csv, tmp_path):
    out = tmp_path / "scores.json"
    result = run("score", model_dir, data_csv, "--out", out)
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert doc["n_docs"] == 120
    cm = np.array(doc["confusion_matrix"]["matrix"])
    assert cm.sum() == 120
    assert doc["accuracy"] == pytest.approx(np.trace(cm) / 120)
    assert 0 < doc["log_loss"] < 5 and 0 <= doc["macro_f1"] <= 1
    # the same numbers as predict + scikit-learn on its output
    pred = run("predict", model_dir, data_csv, "--out", "-")
    table = pd.read_csv(StringIO(pred.stdout))
    truth = pd.read_csv(data_csv)["genre"]
    assert doc["accuracy"] == pytest.approx((table["predicted"] == truth).mean())
    from sklearn.metrics import log_loss

    proba = table[[f"p_{c}" for c in doc["confusion_matrix"]["labels"]]].to_numpy()
    assert doc["log_loss"] == pytest.approx(
        log_loss(truth, proba, labels=doc["confusion_matrix"]["labels"]), rel=1e-6)
    assert "accuracy" in result.output and "log loss" in result.output


def test_score_names_the_probability_rule_and_the_calibration_map(model_dir, data_csv,
                                                                  tmp_path):
    """Each width of ``stacking_``, and none (a file saved before 0.2), in the text line and
    the JSON fields ``proba`` and ``calibration_map``."""
    import shutil

    from dolda import load

    model = load(model_dir)
    L = len(model.classes_)
    cases = [(np.zeros((L, L + 1)), "mu", "calibrated map on the class scores (mu), chosen"),
             (np.zeros((L, 2 * L + 1)), "mu, log F(mu)", "calibrated map on the class scores "
              "and their one-vs-rest log-probabilities (mu, log F(mu)), chosen"),
             (None, None, "the DO formula averaged over the draws: this model has no "
                          "calibration map")]
    for i, (stacking, kind, words) in enumerate(cases):
        model.stacking_ = stacking
        model.save(tmp_path / f"m{i}")
        shutil.copy(model_dir / "cli.json", tmp_path / f"m{i}" / "cli.json")
        result = run("score", tmp_path / f"m{i}", data_csv, "--out", tmp_path / f"s{i}.json")
        assert result.exit_code == 0, result.output
        assert f"  probabilities {words}" in result.output, kind
        doc = json.loads((tmp_path / f"s{i}.json").read_text())
        assert doc["proba"] == "calibrated" and doc["calibration_map"] == kind


def test_score_rejects_unknown_labels(model_dir, data_csv, tmp_path):
    frame = pd.read_csv(data_csv).head(10)
    frame.loc[3, "genre"] = "class9"
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    result = run("score", model_dir, path)
    assert result.exit_code == 1
    assert "'class9'" in result.output and "not a class" in result.output
    assert len(result.output.strip().splitlines()) == 1


# ------------------------------------------------------------------ lda / tune
def test_lda_command_fits_saves_and_topics_reads_it(data_csv, tmp_path):
    out = tmp_path / "lda"
    result = run("lda", data_csv, "--text", "body", "--topics", "4", "--iterations", "30",
                 "--quiet", "--out", out)
    assert result.exit_code == 0, result.output
    assert "Fitted LDA: 120 documents" in result.output
    assert len(re.findall(r"^\s+topic \d  ", result.output, re.M)) == 4
    from dolda import LDA, load

    assert isinstance(load(out), LDA)
    shown = run("topics", out, "--format", "json")
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.stdout)
    assert doc["model"] == "LDA" and len(doc["topics"]) == 4 and "signal_topics" not in doc


def test_tune_writes_table_and_plot(data_csv, tmp_path):
    out, plot = tmp_path / "k.csv", tmp_path / "k.png"
    result = run("tune", data_csv, "--text", "body", "--label", "genre", "--topics", "2,4",
                 "--folds", "2", "--iterations", "20", "--threads", "1", "--out", out,
                 "--plot", plot)
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out)
    assert table["topics"].tolist() == [2, 4]
    for col in ("accuracy", "coherence", "perplexity", "accuracy_sd", "seconds"):
        assert col in table and table[col].notna().all()
    assert (table["perplexity"] > 1).all() and (table["accuracy"] <= 1).all()
    assert "Best K" in result.output and len(re.findall(r"K=\d fold", result.output)) == 4
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tune_unsupervised_to_stdout_and_bad_grid(data_csv):
    result = run("tune", data_csv, "--text", "body", "--topics", "3", "--folds", "2",
                 "--iterations", "10", "--quiet", "--out", "-")
    assert result.exit_code == 0, result.output
    table = pd.read_csv(StringIO(result.stdout))
    assert "accuracy" not in table and table["topics"].tolist() == [3]
    bad = run("tune", data_csv, "--text", "body", "--topics", "1,5")
    assert bad.exit_code == 2 and "at least 2" in bad.output
