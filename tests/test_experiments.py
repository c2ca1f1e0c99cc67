"""The experiment scripts' ``--quick`` modes, end to end, so that they cannot silently rot.

Each script runs on a small subset of the shared data (4 newsgroups, every 8th
message; the films' three largest genres; every 15th film for the covariates
run) with few iterations, writing into a temporary results folder; then the
report is built from those files.  The assertions check what the scripts
compute (covariates parsed from headers, baselines that beat chance, traces,
the Horseshoe's sparsity against the normal prior, the figures and tables of
the report), not only that they run.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

# the tests on the shared data; the simulated --quick runs below need none
needs_data = [
    pytest.mark.data,
    pytest.mark.skipif(not (DATA / "20newsgroups_bydate").is_dir(),
                       reason=f"shared data not found at {DATA}"),
]


def on_data(fn):
    for mark in needs_data:
        fn = mark(fn)
    return fn


@pytest.fixture()
def results(tmp_path, monkeypatch):
    from experiments import films, interpret, newsgroups, report

    out = tmp_path / "results"
    out.mkdir()
    for module in (newsgroups, films, interpret, report):
        monkeypatch.setattr(module, "RESULTS", out)
    return out


def test_header_covariates_parse_the_header():
    from experiments.newsgroups import header_covariates

    raw = ("From: someone@cs.example.ac.UK (Some One)\nSubject: hi\n"
           "Organization: Example   University\nLines: 4\n\n"
           "> quoted line\nmy own words here\n| also quoted\nthe end\n")
    body = "my own words here\nthe end\n"
    X = header_covariates([raw, "no header at all"], [body, "no header at all"])
    assert X.loc[0, "tld"] == "uk"
    assert X.loc[0, "organization"] == "example university"
    assert X.loc[0, "quoted_share"] == pytest.approx(0.5)
    assert X.loc[0, "log_words"] == pytest.approx(np.log1p(6))
    assert X.loc[1, "tld"] == "none" and X.loc[1, "organization"] == "none"


@on_data
def test_newsgroups_interpret_and_report_quick(results, tmp_path):
    from experiments import interpret, newsgroups, report

    models = tmp_path / "models"
    newsgroups.sweep(str(DATA), topics=[4], iterations=12, quick=True, threads=1,
                     save_models=models)
    runs, base = report.collect(results, quick=True)
    assert set(runs) == set(newsgroups.SETTINGS)
    for setting in newsgroups.SETTINGS:
        assert set(runs[setting][4]) == set(newsgroups.MODELS)
        # 4 groups: chance is ~0.25; the SVM on tf-idf must do far better
        assert base[setting]["svm_tfidf_accuracy"] > 0.6
        for name, r in runs[setting][4].items():
            assert 0.0 <= r["test_accuracy"] <= 1.0
            assert r["n_test"] > 100 and r["iterations"] == 12
            trace = r["loglik_lda"] if name == "two_step" else r["loglik_total"]
            # the default start is near a mode (PLSA): the trace need not climb, only be finite
            assert len(trace) == 12 and np.all(np.isfinite(trace))
        two = runs[setting][4]["two_step"]
        assert 0.0 <= two["lda_lr_accuracy"] <= 1.0 and two["lda_lr_C"] > 0
    # covariates only in the metadata setting, and the baselines saw them
    assert runs["metadata"][4]["dolda_horseshoe"]["n_covariates"] >= 3
    assert runs["stripped"][4]["dolda_horseshoe"]["n_covariates"] == 0
    assert base["metadata"]["n_features"] > base["stripped"]["n_features"]
    # stripping headers removes tokens
    assert (runs["stripped"][4]["dolda_horseshoe"]["n_tokens"]
            < runs["raw"][4]["dolda_horseshoe"]["n_tokens"])

    out, _ = interpret.interpret(models, "stripped", 4, data=str(DATA), quick=True)
    hs, nm = out["priors"]["horseshoe"], out["priors"]["normal"]
    assert hs["n_coefficients"] == nm["n_coefficients"] == 4 * 4
    assert hs["median_abs"] < nm["median_abs"]  # Horseshoe shrinks, the normal prior does not
    assert out["example"]["contributions"][0]["feature"] in (
        ["(intercept)"] + [f"topic {k}" for k in range(4)])
    for fig in ("fig_coef_hist_quick.png", "fig_coef_classes_quick.png"):
        assert (results / fig).read_bytes()[:4] == b"\x89PNG"

    md = report.build(results, tmp_path / "RESULTS_quick.md", quick=True)
    text = md.read_text()
    assert "## The paper's three claims" in text
    assert f"{base['raw']['svm_tfidf_accuracy']:.3f}" in text
    for setting in newsgroups.SETTINGS:
        acc = runs[setting][4]["dolda_horseshoe"]["test_accuracy"]
        assert f"| 4 | {acc:.3f} |" in text
    for fig in ("fig_newsgroups_accuracy_quick.png", "fig_newsgroups_traces_quick.png"):
        assert (results / fig).read_bytes()[:4] == b"\x89PNG"
        assert f"results/{fig}" in text


@on_data
def test_films_quick(results):
    from experiments import films

    result, path = films.plots(str(DATA), quick=True)
    assert path.is_file() and json.loads(path.read_text())["quick"] is True
    assert set(result["classes"]) == {"Comedy", "Drama", "Action"}
    acc = result["accuracy"]
    assert set(acc) == {"dolda_text", "dolda_text_covariates", "lr_tfidf",
                        "lr_tfidf_covariates", "majority"}
    assert all(len(v["folds"]) == 2 and 0 <= v["mean"] <= 1 for v in acc.values())
    full = result["full"]["dolda_text_covariates"]
    assert any(c.startswith("company=") for c in full["covariate_coef"])
    assert full["example"]["genre"] == "Action" and full["example"]["explanation"]

    genre = json.loads(films.covariates(str(DATA), iterations=10, quick=True).read_text())
    assert genre["data"]["n_columns_full"] > 500  # one-hot levels of 5 metadata fields
    assert set(genre["accuracy"]) == {"doprobit_horseshoe", "doprobit_normal",
                                      "logistic_regression"}
    assert all(0 < v["mean"] <= 1 for v in genre["accuracy"].values())


def test_debian_loader_keeps_one_document_per_source_and_splits_by_source(tmp_path):
    """A hand-written Packages / Translation-en pair: binary packages of one source
    share a description, so one document per source; sections outside the list
    (libs) are dropped; the long description's '.' separators are removed."""
    import gzip

    from experiments import debian

    (tmp_path / "Packages").write_text(
        "Package: zgame\nSource: zgame-src\nSection: games\nDescription-md5: a1\n\n"
        "Package: agame-data\nSource: zgame-src (1.0)\nSection: games\nDescription-md5: a2\n\n"
        "Package: libfoo1\nSection: libs\nDescription-md5: b1\n\n"
        "Package: mailer\nSection: contrib/mail\nDescription-md5: c1\n\n"
        "Package: orphan\nSection: games\nDescription-md5: zz\n\n")
    with gzip.open(tmp_path / "Translation-en.gz", "wt") as fh:
        fh.write("Package: zgame\nDescription-md5: a1\nDescription-en: A game\n long text\n"
                 " .\n more\n\nPackage: agame-data\nDescription-md5: a2\n"
                 "Description-en: Data of a game\n the data\n\nPackage: libfoo1\n"
                 "Description-md5: b1\nDescription-en: foo\n\nPackage: mailer\n"
                 "Description-md5: c1\nDescription-en: Mail tool\n sends mail\n")
    sources, texts, sections = debian.load_documents(tmp_path)
    assert sources == ["mailer", "zgame-src"]
    assert list(sections) == ["mail", "games"]
    assert texts == ["Mail tool sends mail", "Data of a game the data"]  # 'agame-data' < 'zgame'
    assert debian.is_test("zgame-src") == debian.is_test("zgame-src")  # stable, by name
    share = np.mean([debian.is_test(f"pkg{i}") for i in range(5000)])
    assert abs(share - debian.TEST_SHARE) < 0.03


@pytest.fixture()
def quick_results(tmp_path, monkeypatch):
    from experiments import accuracy, calibration

    for module in (accuracy, calibration):
        monkeypatch.setattr(module, "RESULTS", tmp_path)
    monkeypatch.setattr("experiments.word_prior.RESULTS", tmp_path)
    return tmp_path


def test_calibration_quick_scores_every_rule_beside_the_truth(quick_results):
    from experiments import calibration

    calibration.main(["simulated", "--quick"])
    out = json.loads((quick_results / "calibration_simulated_quick.json").read_text())
    assert out["quick"] is True and out["n_test"] == 500 and out["n_iter"] == 60
    [row] = out["rows"]
    for rule in ("truth", "logistic_regression", *calibration.RULES):
        assert 0 <= row[rule]["ece"] <= 1 and row[rule]["log_loss"] > 0
    # the truth's log loss is the floor any fitted rule is measured against
    assert row["truth"]["log_loss"] < min(row[r]["log_loss"] for r in calibration.RULES)


def test_word_prior_quick(quick_results):
    from experiments import word_prior

    [sur] = word_prior.main(["surrogates", "--quick"])
    assert sur["corpus"] == "simulated" and sur["n_train"] == 150
    assert all(1 / 3 < sur[k] <= 1 for k in ("ridge_alpha_1", "l1_svm_C_1", "svm"))
    [both] = word_prior.main(["both", "--quick", "--threads", "1"])
    assert both["sparse_words"] > 0 and both["dense_words"] > 0
    assert 0 <= both["test_accuracy"] <= 1
    assert (quick_results / "word_prior_both_quick.json").is_file()


def test_choose_k_quick(monkeypatch, tmp_path):
    from experiments import choose_k

    monkeypatch.setattr(choose_k, "ROOT", tmp_path)
    out = choose_k.main(["--quick", "--threads", "1"])
    assert out["grid"] == [2, 4] and [r["topics"] for r in out["table"]] == [2, 4]
    assert set(out["best"]) >= {"accuracy", "coherence"}
    assert json.loads((tmp_path / "experiments" / "results" / "choose_k_quick.json")
                      .read_text())["quick"] is True
