"""The HTML report: self-contained, safe JSON, its statistics, and working in Chromium."""

import json
import re
import types
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from _browser import browser, console_errors, save_screenshot, wait_for
from dolda import DOLDA
from dolda.datasets import simulate
from dolda.interpret.report import (
    json_for_script,
    plot_coefficients,
    plot_topic_heatmap,
    plot_trace,
)
from dolda.interpret.report.convergence import bulk_ess, convergence_summary, split_rhat
from dolda.interpret.report.topics_map import (
    classical_mds,
    jensen_shannon_distances,
    relevance,
    relevance_candidates,
)
from dolda import Words

NASTY = "x </script><script>alert(1)</script> <!-- y --> & \u2028 \u2029 \"q\" \\ end"


@pytest.fixture(scope="module")
def fitted():
    sim = simulate(n_docs=160, n_topics=3, n_classes=3, vocab_size=90, doc_length=30,
                   random_state=2)
    model = DOLDA(n_topics=3, alpha=0.5, beta=0.1, n_iter=120, n_chains=2, random_state=0, progress=False, n_jobs=1, words=Words(n=0)).fit(sim.texts[:120], sim.y[:120])
    texts = list(sim.texts[120:])
    texts[1] = texts[1] + " " + NASTY
    return model, texts, np.asarray(sim.y[120:])


@pytest.fixture(scope="module")
def report(fitted, tmp_path_factory):
    model, texts, y = fitted
    ids = [f"DOC-{i}" for i in range(len(texts))]
    from dolda.interpret.report import make_report

    return make_report(model, tmp_path_factory.mktemp("report") / "report.html", texts=texts,
                       y=y, ids=ids, max_documents=25)


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self._in = [], [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "script":
            self._in = [attrs, ""]

    def handle_endtag(self, tag):
        if tag == "script" and self._in is not None:
            self.scripts.append(tuple(self._in))
            self._in = None

    def handle_data(self, data):
        if self._in is not None:
            self._in[1] += data


def test_report_is_self_contained_and_its_data_is_intact(report, fitted):
    model, texts, y = fitted
    page = report.read_text(encoding="utf-8")
    parser = _Collect()
    parser.feed(page)
    for tag, attrs in parser.tags:
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            assert not value.startswith(("http://", "https://", "//")), (tag, value)
        assert not (tag == "link" and attrs.get("rel") == "stylesheet")
    # BokehJS inline once, the figures' data, the report's data
    assert page.count("/* BEGIN bokeh.min.js */") == 1
    assert "cdn.bokeh.org" not in page.split("/* BEGIN bokeh.min.js */")[0]
    data = [s for a, s in parser.scripts if a.get("id") == "report-data"]
    assert len(data) == 1
    R = json.loads(data[0])
    # the document with "</script>" and "<!--" survived intact: the element did not end early
    assert NASTY in R["docs"][1][1]
    assert [d[0] for d in R["docs"]] == [f"DOC-{i}" for i in range(len(texts))]
    assert len(R["explained"]) == 25
    assert {d[5] >= 0 for d in R["docs"][:25]} == {True}
    assert all(d[5] == -1 for d in R["docs"][25:])
    ex = R["explained"][0]
    for c in ex["classes"]:
        assert len(c["weights"]) == len(ex["tokens"])
    assert len(R["topics"]) == 3 and len(R["classes"]) == 3
    for title in ("Model", "Topics", "Classes and topics", "Documents",
                  "Accuracy and confusions", "Calibration", "Convergence"):
        assert f"<h2>{title}</h2>" in page
    assert "Expected calibration error" in page
    assert page.count("data-root-id") >= 5  # map, heat map, confusion, reliability, trace


def _section(page, title):
    return page.split(f"<h2>{title}</h2>", 1)[1].split("</section>", 1)[0]


def test_report_names_the_probability_rule_and_the_calibration_map(report, fitted, tmp_path):
    """The model facts and the calibration section say which rule and which map
    ``predict_proba`` uses: the fitted map, each width of ``stacking_``, none (older files)."""
    import contextlib
    import copy

    from dolda.posterior.calibration import stacking_map
    from dolda.interpret.report import make_report

    model, texts, y = fitted
    L = len(model.classes_)
    rich = "calibrated map on the class scores and their one-vs-rest log-probabilities"
    plain = "calibrated map on the class scores (mu), chosen by leave-one-out log score"
    chosen = rich if stacking_map(model.stacking_) == "mu, log F(mu)" else plain
    calib = _section(report.read_text(encoding="utf-8"), "Calibration")
    assert f"<p>Probabilities: {chosen}" in calib and "CALIBRATION.md" in calib
    cases = [(np.zeros((L, L + 1)), "calibrated", plain),
             (np.zeros((L, 2 * L + 1)), "calibrated", rich),
             (None, "calibrated", "the DO formula averaged over the draws: this model has no "
                                  "calibration map"),
             (np.zeros((L, 2 * L + 1)), "ovr", "normalised one-vs-rest probabilities")]
    for i, (stacking, rule, words) in enumerate(cases):
        other = copy.copy(model)
        other.stacking_, other.proba = stacking, rule
        old_file = pytest.warns(UserWarning, match="no calibration map") \
            if stacking is None else contextlib.nullcontext()
        with old_file:
            page = make_report(other, tmp_path / f"r{i}.html", texts=texts[:6], y=y[:6],
                               max_documents=2).read_text(encoding="utf-8")
        assert f"<dt>probabilities</dt><dd>{words}" in _section(page, "Model"), rule
        assert f"<p>Probabilities: {words}" in _section(page, "Calibration"), rule
    assert rich not in page and plain not in page  # not for ovr
    page = make_report(model, tmp_path / "bare.html").read_text(encoding="utf-8")
    assert f"<dt>probabilities</dt><dd>{chosen}" in page  # without documents too


def test_json_for_script_is_valid_json_that_cannot_close_the_element():
    obj = {"t": NASTY, "k<!--": ["</SCRIPT>", "&amp;"]}
    text = json_for_script(obj)
    assert json.loads(text) == obj
    for bad in ("<", ">", "&", "\u2028", "\u2029"):
        assert bad not in text
    with pytest.raises(ValueError):
        json_for_script({"x": float("nan")})


def test_split_rhat_and_bulk_ess_match_arviz():
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(1)
    C, S, n = 3, 80, 5
    x = np.zeros((C, S, n))
    e = rng.normal(size=(C, S, n))
    for t in range(1, S):
        x[:, t] = 0.7 * x[:, t - 1] + e[:, t]
    x[1, :, 0] += 1.5  # a chain stuck elsewhere
    got = split_rhat(x)
    want = [float(az.rhat(x[:, :, j])) for j in range(n)]
    np.testing.assert_allclose(got, want, rtol=1e-10)
    assert got[0] > 1.1
    ess = bulk_ess(x)
    ref = np.array([float(az.ess(x[:, :, j], method="bulk")) for j in range(n)])
    # same estimator up to the details of the truncation of the autocorrelation sum
    np.testing.assert_allclose(ess, ref, rtol=0.15)
    assert np.isnan(split_rhat(np.ones((2, 10, 1))))[0]


def test_convergence_summary_advises(fitted):
    model = fitted[0]
    s = convergence_summary(model)
    assert s["verdict"] in ("converged", "not converged", "too short to judge")
    if s["verdict"] != "converged":
        # fitted without a checkpoint: the advice is a refit that can be run as printed
        assert s["more_iterations"] >= 50 and "--checkpoint DIR" in s["advice"][1]
        assert "continue this chain" not in " ".join(s["advice"])  # no checkpoint to resume
    assert s["advice"] == model.convergence_["advice"]  # the verdict the fit logged
    # a chain cut short and drifting: the advice names a number of iterations
    short = types.SimpleNamespace(**{k: getattr(model, k) for k in (
        "classes_", "feature_names_", "coef_", "n_chains_")})
    rng = np.random.default_rng(0)
    S = 40
    drift = np.linspace(0, 3, S)[:, None, None]
    short.eta_draws_ = (model.eta_draws_[:S] + drift * (np.abs(model.coef_.to_numpy()) > 0))
    short.eta_draws_ = np.concatenate([short.eta_draws_, short.eta_draws_ + 0.01 *
                                       rng.normal(size=short.eta_draws_.shape)])
    short.n_iter_, short.burn_in = 80, 40
    short.loglik_ = pd.DataFrame({"total": np.r_[np.linspace(-900, -500, 80),
                                                 np.linspace(-900, -500, 80)]},
                                 index=pd.MultiIndex.from_product([[0, 1], range(80)],
                                                                  names=["chain",
                                                                         "iteration"]))

    def coef_interval(level=0.95):
        q = (1 - level) / 2
        lo, hi = np.quantile(short.eta_draws_, [q, 1 - q], axis=0)
        mk = lambda a: pd.DataFrame(a, index=model.coef_.index, columns=model.coef_.columns)  # noqa: E731,E501
        return mk(lo), mk(hi)

    short.coef_interval = coef_interval
    s = convergence_summary(short)
    assert s["verdict"] == "not converged"
    assert re.search(r"Refit with about \d+ iterations and a checkpoint: --iterations \d+ "
                     r"--checkpoint DIR", s["advice"][1]), s["advice"]
    assert s["more_iterations"] >= 40
    assert "log-likelihood still drifts" in s["advice"][0]


def test_topic_map_math():
    from scipy.spatial.distance import jensenshannon

    rng = np.random.default_rng(3)
    phi = rng.dirichlet(np.full(40, 0.3), size=6)
    d = jensen_shannon_distances(phi)
    assert np.allclose(d, d.T) and np.allclose(np.diag(d), 0)
    assert np.isclose(d[1, 4], jensenshannon(phi[1], phi[4], base=2))
    # classical MDS reproduces planar distances exactly
    points = rng.normal(size=(7, 2))
    dist = np.linalg.norm(points[:, None] - points[None], axis=2)
    coords = classical_mds(dist)
    np.testing.assert_allclose(np.linalg.norm(coords[:, None] - coords[None], axis=2), dist,
                               atol=1e-9)
    shares = np.full(6, 1 / 6)
    # lambda = 1 ranks by probability within the topic; every grid top word is a candidate
    assert np.array_equal(np.argsort(-relevance(phi, shares, 1.0), axis=1),
                          np.argsort(-np.log(phi), axis=1))
    cand = relevance_candidates(phi, shares, n_words=5)
    for k in range(6):
        assert set(np.argsort(-phi[k])[:5]) <= set(cand[k].tolist())
        lift = np.argsort(-relevance(phi, shares, 0.0)[k])[:5]
        assert set(lift) <= set(cand[k].tolist())


def test_many_classes_show_top_confusions_not_the_full_matrix():
    from dolda.interpret.report import _accuracy_sections

    rng = np.random.default_rng(0)
    labels = np.array([f"c{i:02d}" for i in range(30)], dtype=object)
    y = rng.choice(labels, size=600)
    predicted = np.where(rng.random(600) < 0.6, y, rng.choice(labels, size=600))
    predicted[:40] = "c01"
    y[:40] = "c00"  # the largest confusion: c00 -> c01
    proba = rng.dirichlet(np.ones(30), size=600)
    model = types.SimpleNamespace(classes_=labels)
    classes = [{"label": str(c), "signal": 0} for c in labels]
    html, calib, figures, stats = _accuracy_sections(model, y, predicted, proba,
                                                     list(range(600)), range(100), classes)
    assert "confusion" not in figures and "{{fig:confusion}}" not in html
    first = re.search(r"<tbody><tr><td>(c\d\d)</td><td>(c\d\d)</td>", html)
    assert first.groups() == ("c00", "c01")
    assert "#doc=0" in html  # an example document to open
    assert np.isclose(stats["accuracy"], np.mean(y == predicted))
    assert "reliability" in figures and 0 <= stats["ece"] <= 1


def test_static_plot_functions_still_work(fitted):
    model = fitted[0]
    fig = plot_coefficients(model, model.classes_[0])
    assert len(fig.axes) == 1 and len(fig.axes[0].get_yticklabels()) == 3
    assert len(plot_trace(model).axes[0].get_lines()) == 2  # one line per chain
    assert plot_topic_heatmap(model).axes[0].images[0].get_array().shape == (3, 3)


def test_cli_report(fitted, tmp_path):
    from dolda.cli import main

    model, texts, y = fitted
    model.save(tmp_path / "model")
    pd.DataFrame({"key": [f"K-{i}" for i in range(len(texts))], "text": texts,
                  "label": y}).to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(tmp_path / "model"), "--out", str(out),
                                       "--data", str(tmp_path / "test.csv"), "--text", "text",
                                       "--label", "label", "--id", "key", "--max-docs", "10"])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "Accuracy and confusions" in page and "the first 10 with word-level" in page
    assert '"K-39"' in page
    result = CliRunner().invoke(main, ["report", str(tmp_path / "model"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "Accuracy and confusions" not in page and "<h2>Documents</h2>" not in page
    result = CliRunner().invoke(main, ["report", str(tmp_path / "model"), "-o", str(out),
                                       "--data", str(tmp_path / "test.csv"), "--text", "text",
                                       "--id", "nope"])
    assert result.exit_code != 0 and "nope" in result.output


def test_report_in_headless_chromium(report, fitted):
    """Load the report, search a word, open a document: highlighted words, no console error."""
    model, texts, _ = fitted
    word = next(w for w in re.findall(r"[a-z]\w+", texts[5].lower())
                if w in model.vocabulary_.index_)
    first = next(d for d, t in enumerate(texts) if word in t.lower())
    with browser() as driver:
        driver.get(report.as_uri())
        wait_for(driver, "document.querySelectorAll('#term-bars .bar-row').length > 0")
        wait_for(driver, "document.querySelectorAll('.bk-Canvas, canvas').length > 0 || "
                         "document.querySelectorAll('[data-root-id]').length > 4")
        box = driver.find_element("id", "doc-search")
        box.send_keys(word)
        wait_for(driver, f"document.querySelector('#doc-list tr[data-doc]') && "
                         f"document.querySelector('#doc-list tr[data-doc]')"
                         f".getAttribute('data-doc') === 'DOC-{first}'")
        driver.find_element("css selector", "#doc-list tr[data-doc]").click()
        wait_for(driver, "document.getElementById('doc-detail').getAttribute('data-doc')")
        assert driver.find_element("id", "doc-detail").get_attribute("data-doc") == \
            f"DOC-{first}"
        marks = driver.find_elements("css selector", "#doc-text mark.tok")
        assert marks, "no highlighted word"
        assert all(m.text.lower() in texts[first].lower() for m in marks)
        assert any(word == m.text.lower() for m in marks) or len(marks) >= 3
        # the second class tab re-highlights for that class
        tabs = driver.find_elements("css selector", "#doc-detail .tabs button")
        assert len(tabs) == 3
        tabs[1].click()
        wait_for(driver, "document.querySelector('#doc-detail .tabs button.on') && "
                         "document.querySelectorAll('#doc-detail .tabs button')[1]"
                         ".classList.contains('on')")
        # the document with "</script>" in its text is listed and shown as text
        driver.get(report.as_uri() + "#doc=DOC-1")
        driver.refresh()
        wait_for(driver, "document.getElementById('doc-detail') && "
                         "document.getElementById('doc-detail').getAttribute('data-doc') "
                         "=== 'DOC-1'")
        assert "</script>" in driver.find_element("id", "doc-text").text
        # picking a topic updates the term bars
        driver.execute_script("window.doldaShowTopic(2)")
        assert driver.find_element("id", "term-bars").get_attribute("data-topic") == "2"
        save_screenshot(driver, "report.png")
        errors = console_errors(driver)
        assert not errors, errors


@pytest.mark.parametrize("seed", [0, 1])
def test_advice_flags_an_extrapolation_far_beyond_the_fit_as_a_rate(seed):
    """Coefficients that barely move (random walks: ESS of a few draws in 200) give an
    estimate of many times the fit's iterations: the advice says so and points at several
    chains; coefficients that mix (independent draws around a signal) with a drifting
    log-likelihood get the plain advice only."""
    from dolda.evaluate.convergence import MAX_EXTENSION, chain_convergence

    rng = np.random.default_rng(seed)
    S, n_iter = 200, 400

    def model(eta):
        loglik = pd.DataFrame({"total": np.linspace(-900, -500, n_iter)},
                              index=pd.MultiIndex.from_product([[0], range(n_iter)],
                                                               names=["chain", "iteration"]))
        return types.SimpleNamespace(n_chains_=1, n_iter_=n_iter, eta_draws_=eta,
                                     loglik_=loglik)

    stuck = 3.0 + np.cumsum(rng.normal(scale=0.05, size=(S, 2, 6)), axis=0)
    s = chain_convergence(model(stuck))
    assert s["verdict"] == "not converged"
    assert s["more_iterations"] > MAX_EXTENSION * n_iter
    assert "a rate rather than a remedy" in s["message"]
    assert "--chains 2 --iterations 200" in s["message"]  # measured advice, same cost
    assert any("times this fit" in a for a in s["advice"])
    assert any("Measured to help" in a and "n_chains=2, n_iter=200" in a for a in s["advice"])
    mixing = 3.0 + rng.normal(size=(S, 2, 6))
    s = chain_convergence(model(mixing))
    assert s["verdict"] == "not converged"  # the log-likelihood drifts
    assert s["more_iterations"] <= MAX_EXTENSION * n_iter
    assert "rate rather than a remedy" not in s["message"]
    assert not any("times this fit" in a for a in s["advice"])
