"""The HTML report: self-contained, figures present, explanation search works in Chromium."""

import base64
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from dolda import DOLDA
from dolda.datasets import simulate
from dolda.report import plot_coefficients, plot_topic_heatmap, plot_trace

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def fitted():
    sim = simulate(n_docs=160, n_topics=3, n_classes=3, vocab_size=90, doc_length=30,
                   random_state=2)
    model = DOLDA(n_topics=3, alpha=0.5, beta=0.1, n_iter=200, n_chains=2, random_state=0,
                  progress=False, n_jobs=1).fit(sim.texts[:120], sim.y[:120])
    return model, list(sim.texts[120:]), sim.y[120:]


@pytest.fixture(scope="module")
def report(fitted, tmp_path_factory):
    model, texts, y = fitted
    return model.report(tmp_path_factory.mktemp("report") / "report.html", texts=texts, y=y)


class _Collect(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self._in_data = [], {}, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "script":
            self._in_data = attrs.get("id", "inline")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_data = None

    def handle_data(self, data):
        if self._in_data:
            self.scripts[self._in_data] = self.scripts.get(self._in_data, "") + data


def test_report_is_self_contained(report, fitted):
    model, texts, _ = fitted
    page = report.read_text(encoding="utf-8")
    parser = _Collect()
    parser.feed(page)
    for tag, attrs in parser.tags:
        for key in ("src", "href"):
            value = attrs.get(key) or ""
            assert not value.startswith(("http://", "https://", "//")), (tag, value)
    assert tag != "link" or attrs.get("rel") != "stylesheet"
    images = [a["src"] for t, a in parser.tags if t == "img"]
    # heat map, one per class, histogram, trace, confusion matrix
    assert len(images) == 1 + len(model.classes_) + 3
    for src in images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
    for title in ("Topics", "Topic coefficients", "Coefficients per class",
                  "Coefficient histogram", "Log-likelihood trace", "Convergence (R-hat, ESS)",
                  "Confusion matrix", "Explain a document"):
        assert f"<h2>{title}</h2>" in page
    docs = json.loads(parser.scripts["doc-data"])
    assert len(docs) == len(texts)
    assert {c["label"] for c in docs[0]["classes"]} == {str(c) for c in model.classes_}
    assert "2 chains, topics aligned" in page


def test_plot_functions(fitted):
    model = fitted[0]
    fig = plot_coefficients(model, model.classes_[0])
    assert len(fig.axes) == 1 and len(fig.axes[0].get_yticklabels()) == 3
    assert len(plot_trace(model).axes[0].get_lines()) == 2  # one line per chain
    heat = plot_topic_heatmap(model)
    assert heat.axes[0].images[0].get_array().shape == (3, 3)
    with pytest.raises(ValueError, match="unknown class"):
        plot_coefficients(model, "no such class")


def _chromium(args, tmp_path):
    base = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    return subprocess.run(base + args, capture_output=True, text=True, timeout=90)


@pytest.mark.skipif(not CHROMIUM.exists(),
                    reason="headless check needs /usr/bin/chromium (apt-get install chromium)")
def test_report_in_headless_chromium(report, fitted, tmp_path):
    model, texts, _ = fitted
    shot = tmp_path / "shot.png"
    done = _chromium([f"--screenshot={shot}", "--window-size=1400,2400", report.as_uri()],
                     tmp_path)
    assert shot.exists() and shot.stat().st_size > 20_000, done.stderr[-2000:]
    shutil.copy(shot, Path(report).with_suffix(".png"))  # kept next to the report
    # the fragment #q=WORDS selects the first matching document; after the page's
    # script ran, the DOM holds its explanation
    word = re.findall(r"[a-z]\w+", texts[3].lower())[0]
    first = next(d for d, t in enumerate(texts) if word in t.lower())
    done = _chromium(["--enable-logging=stderr", "--v=0", "--virtual-time-budget=5000",
                      "--dump-dom", report.as_uri() + f"#q={word}"], tmp_path)
    dom = done.stdout
    assert f'id="explanation" data-doc="{first}"' in dom
    assert f"Document {first}" in dom
    assert dom.count("probability") >= len(model.classes_)
    assert "Uncaught" not in done.stderr and "ERROR:CONSOLE" not in done.stderr


def test_cli_report(fitted, tmp_path):
    from dolda.cli import main

    model, texts, y = fitted
    model.save(tmp_path / "model")
    pd.DataFrame({"text": texts, "label": y}).to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(tmp_path / "model"), "--out", str(out),
                                       "--data", str(tmp_path / "test.csv"), "--text", "text",
                                       "--label", "label", "--max-docs", "10"])
    assert result.exit_code == 0, result.output
    page = out.read_text(encoding="utf-8")
    assert "Confusion matrix" in page and "10 of the 40 given documents" in page
    # without data: no search box, no confusion matrix
    result = CliRunner().invoke(main, ["report", str(tmp_path / "model"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "Confusion matrix" not in out.read_text(encoding="utf-8")
    assert np.isfinite(model.coef_.to_numpy()).all()
