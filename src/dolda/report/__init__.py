"""A self-contained HTML report of a fitted DOLDA model.

:func:`make_report` writes one HTML file that needs no network: the figures
are PNG images (matplotlib, Agg) embedded as base64 data URIs, the style and
the script are inline, and the document explanations are embedded JSON.

The report holds the topics with their top words, the class x topic heat map
of the coefficients with the signal topics marked, the coefficients of every
class with 95% credible intervals, the histogram of all coefficients, the
log-likelihood trace of every chain, an R-hat / ESS table, the confusion
matrix when labelled documents are given, and a search box over the given
documents that shows why each got its class.  Opening ``report.html#q=WORDS``
selects the first document containing ``WORDS``; ``report.html#doc=N``
selects document ``N``.

The plot functions are public: ``plot_coefficients(model, label)``,
``plot_trace(model)``, ``plot_topic_heatmap(model)``,
``plot_coefficient_histogram(model)`` and ``plot_confusion_matrix``.
"""

from __future__ import annotations

import base64
import datetime
import html
import json
import os
import tempfile
from pathlib import Path

import numpy as np

from .plots import (
    figure_to_png,
    plot_coefficient_histogram,
    plot_coefficients,
    plot_confusion_matrix,
    plot_topic_heatmap,
    plot_trace,
)

__all__ = ["make_report", "plot_coefficients", "plot_trace", "plot_topic_heatmap",
           "plot_coefficient_histogram", "plot_confusion_matrix", "figure_to_png"]

#: R-hat above this is flagged in the report (Vehtari et al. 2021 recommend 1.01;
#: short chains rarely reach it, so 1.05 is the warning level used here).
RHAT_WARN = 1.05
_TEXT_CHARS = 3000
_TOP_CONTRIBUTIONS = 8


def _esc(value) -> str:
    return html.escape(str(value), quote=True)


def _img(fig, alt: str) -> str:
    data = base64.b64encode(figure_to_png(fig)).decode("ascii")
    return f'<img class="fig" alt="{_esc(alt)}" src="data:image/png;base64,{data}">'


def _table(frame, float_format="{:.3f}", index=True, classes="") -> str:
    head = ([frame.index.name or ""] if index else []) + [str(c) for c in frame.columns]
    rows = []
    for key, row in frame.iterrows():
        cells = [f"<th>{_esc(key)}</th>"] if index else []
        for value in row:
            if isinstance(value, (float, np.floating)):
                text = "" if np.isnan(value) else float_format.format(value)
            else:
                text = str(value)
            cells.append(f"<td>{_esc(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    header = "".join(f"<th>{_esc(h)}</th>" for h in head)
    return (f'<table class="{classes}"><thead><tr>{header}</tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _topics_section(model, n_words, level):
    import pandas as pd

    words = model.top_words(n_words)
    lo, hi = model.coef_interval(level)
    topics = list(words.index)
    signal = {}
    for label in model.classes_:
        for t in topics:
            if lo.loc[label, t] > 0 or hi.loc[label, t] < 0:
                sign = "+" if model.coef_.loc[label, t] > 0 else "-"
                signal.setdefault(t, []).append(f"{label} ({sign})")
    table = pd.DataFrame({"top words": [" ".join(words.loc[t]) for t in topics],
                          "signal for class": [", ".join(signal.get(t, [])) for t in topics]},
                         index=pd.Index(topics, name="topic"))
    return table


def _convergence_section(model):
    from ..diagnostics import convergence_table

    table = convergence_table(model, "eta")
    n_chains = int(getattr(model, "n_chains_", 1))
    if table.attrs.get("split_single_chain"):
        note = ("Single chain: R-hat and ESS are computed on its two halves taken as two "
                "chains (split R-hat). This detects drift within the chain, not a mode it "
                "never visited; fit with several chains (n_chains) for a stronger check.")
    else:
        note = (f"{n_chains} chains, topics aligned to chain 0 (Hungarian matching of Phi on "
                "Hellinger distance). Rank-normalised split R-hat and bulk/tail ESS from ArviZ.")
    r_hat = table["r_hat"].to_numpy()
    bad = int(np.sum(r_hat > RHAT_WARN))
    summary = (f"worst R-hat {np.nanmax(r_hat):.3f}; smallest bulk ESS "
               f"{np.nanmin(table['ess_bulk']):.0f}; {bad} of {len(table)} coefficients "
               f"with R-hat &gt; {RHAT_WARN}.")
    worst = table.sort_values("r_hat", ascending=False).head(30).reset_index()
    worst.index = worst.index + 1
    worst.index.name = "#"
    return note, summary, worst


def _documents(model, texts, y, X, max_documents):
    """Predictions for all given texts and explanations for the first ``max_documents``."""
    from ..probit import average_do_probabilities

    texts = [str(t) for t in texts]
    U = model._regressors(texts, X)
    proba = average_do_probabilities(U, model.eta_draws_)
    predicted = model.classes_[np.argmax(proba, axis=1)]
    if hasattr(U, "toarray"):  # sparse covariates (word features): dense rows explained only
        U = U[:max_documents].toarray()
    words = model.top_words(6)
    coef = model.coef_.to_numpy()
    names = list(model.feature_names_)
    docs = []
    for d in range(min(len(texts), max_documents)):
        order = np.argsort(-proba[d])
        per_class = []
        for l in order:
            contrib = U[d] * coef[l]
            rows = []
            for j in np.argsort(-np.abs(contrib))[:_TOP_CONTRIBUTIONS]:
                if U[d, j] == 0:
                    continue
                name = names[j]
                rows.append({"feature": name, "value": round(float(U[d, j]), 4),
                             "coef": round(float(coef[l, j]), 4),
                             "contribution": round(float(contrib[j]), 4),
                             "words": " ".join(words.loc[name]) if name in words.index else ""})
            per_class.append({"label": str(model.classes_[l]),
                              "proba": round(float(proba[d, l]), 4), "rows": rows})
        docs.append({"id": d, "text": texts[d][:_TEXT_CHARS],
                     "truncated": len(texts[d]) > _TEXT_CHARS,
                     "true": None if y is None else str(y[d]),
                     "predicted": str(predicted[d]), "classes": per_class})
    return predicted, docs


def _json_for_script(obj) -> str:
    text = json.dumps(obj, ensure_ascii=True)
    return text.replace("</", "<\\/").replace("<!--", "<\\!--")


def make_report(model, path, texts=None, y=None, X=None, max_documents=200, n_words=10,
                level=0.95, title=None):
    """Write a self-contained HTML report of a fitted DOLDA model.

    Parameters
    ----------
    model : fitted DOLDA
    path : str or Path
        The HTML file; written atomically (a temporary file, then renamed).
    texts : sequence of str or None
        Documents for the search box (the first ``max_documents``, with their
        explanations precomputed) and, with ``y``, for the confusion matrix
        (all of them).
    y : array-like or None
        True labels of ``texts``.
    X : DataFrame, array or None
        Covariates of ``texts`` when the model has covariates.
    max_documents : int, default=200
    n_words : int, default=10
        Top words shown per topic.
    level : float, default=0.95
        Credible level of the intervals and of the signal-topic rule.
    title : str or None

    Returns
    -------
    pathlib.Path
        The written file.
    """
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "eta_draws_")
    if y is not None and texts is None:
        raise ValueError("y was given without texts")
    if texts is not None:
        texts = list(texts)
        if y is not None:
            y = np.asarray(y, dtype=object)
            if len(y) != len(texts):
                raise ValueError(f"texts and y have different lengths: {len(texts)} texts, "
                                 f"{len(y)} labels")
    path = Path(path)
    title = title or "DOLDA model report"
    sections = []

    n_chains = int(getattr(model, "n_chains_", 1))
    K = len([c for c in model.feature_names_ if c.startswith("topic ")])
    facts = [("classes", ", ".join(str(c) for c in model.classes_)), ("topics", K),
             ("vocabulary", f"{len(model.vocabulary_.words)} words"),
             ("training tokens", getattr(model, "n_tokens_", "?")),
             ("prior", model.prior), ("iterations", model.n_iter_),
             ("burn-in", model.burn_in if model.burn_in is not None else model.n_iter_ // 2),
             ("chains", n_chains), ("kept draws", model.eta_draws_.shape[0]),
             ("joint or two-step", "two-step" if model.two_step else "joint")]
    sections.append(("Model", "<dl>" + "".join(
        f"<dt>{_esc(k)}</dt><dd>{_esc(v)}</dd>" for k, v in facts) + "</dl>"))

    topics = _topics_section(model, n_words, level)
    sections.append(("Topics", "<p>The most probable words of every topic (rows of the "
                     "posterior mean of Phi) and the classes for which the topic is a signal "
                     f"topic ({level:.0%} interval of its coefficient excludes zero).</p>"
                     + _table(topics, classes="topics")))
    sections.append(("Topic coefficients", _img(plot_topic_heatmap(model, level=level),
                                                "class x topic coefficient heat map")))
    per_class = "".join(f'<div class="class-fig">{_img(plot_coefficients(model, c, level), f"coefficients of class {c}")}</div>'  # noqa: E501
                        for c in model.classes_)
    sections.append(("Coefficients per class",
                     f"<p>Posterior means with {level:.0%} equal-tailed credible intervals; "
                     "red intervals exclude zero.</p>" + per_class))
    sections.append(("Coefficient histogram", _img(plot_coefficient_histogram(model),
                                                   "histogram of all coefficients")))
    sections.append(("Log-likelihood trace", "<p>All iterations, burn-in (shaded) included; "
                     "one line per chain.</p>" + _img(plot_trace(model), "log-likelihood trace")))
    note, summary, worst = _convergence_section(model)
    sections.append(("Convergence (R-hat, ESS)",
                     f"<p>{_esc(note)}</p><p><b>{summary}</b></p>"
                     "<p>The 30 coefficients with the largest R-hat:</p>"
                     + _table(worst, classes="rhat")))

    docs = []
    if texts is not None:
        predicted, docs = _documents(model, texts, y, X, max_documents)
        if y is not None:
            accuracy = float(np.mean(predicted.astype(object) == y))
            sections.append(("Confusion matrix",
                             f"<p>{len(texts)} labelled documents, accuracy "
                             f"{accuracy:.3f}.</p>"
                             + _img(plot_confusion_matrix(y, predicted, model.classes_),
                                    "confusion matrix")))
        sections.append(("Explain a document", _SEARCH_HTML.format(
            n=len(docs), total=len(texts))))

    nav = "".join(f'<a href="#s{i}">{_esc(name)}</a>' for i, (name, _) in enumerate(sections))
    body = "".join(f'<section id="s{i}"><h2>{_esc(name)}</h2>{content}</section>'
                   for i, (name, content) in enumerate(sections))
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    page = _PAGE.format(title=_esc(title), style=_STYLE, nav=nav, body=body,
                        stamp=_esc(stamp), data=_json_for_script(docs), script=_SCRIPT)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(page)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>{style}</style></head>
<body><header><h1>{title}</h1><nav>{nav}</nav></header>
<main>{body}</main>
<footer>Generated by dolda on {stamp}.</footer>
<script type="application/json" id="doc-data">{data}</script>
<script>{script}</script>
</body></html>
"""

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#222;
background:#fafafa}
header{background:#2c3e50;color:#fff;padding:12px 24px}
header h1{margin:0 0 6px 0;font-size:1.4em}
nav a{color:#dfe6ee;margin-right:14px;font-size:.9em;text-decoration:none}
main{padding:8px 24px;max-width:1400px}
section{background:#fff;border:1px solid #e3e3e3;border-radius:6px;margin:14px 0;
padding:8px 16px}
h2{font-size:1.15em;color:#2c3e50}
table{border-collapse:collapse;font-size:.85em;margin:6px 0}
th,td{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
thead th{background:#f0f3f6}
img.fig{max-width:100%;height:auto}
.class-fig{display:inline-block;vertical-align:top;margin-right:12px}
dl{display:grid;grid-template-columns:max-content auto;gap:2px 16px;font-size:.9em}
dt{font-weight:600}
#search{width:28em;padding:4px}
#matches{max-height:220px;overflow-y:auto;border:1px solid #ddd;margin:6px 0;
font-size:.85em}
#matches div{padding:2px 6px;cursor:pointer;white-space:nowrap;overflow:hidden;
text-overflow:ellipsis}
#matches div:hover,#matches div.active{background:#e8f0fb}
#doc-text{white-space:pre-wrap;background:#f7f7f7;padding:6px;font-size:.85em;
max-height:200px;overflow-y:auto}
.pos{color:#c0392b}.neg{color:#2471a3}
footer{color:#888;font-size:.8em;padding:8px 24px}
"""

_SEARCH_HTML = """
<p>{n} of the {total} given documents, with their explanations precomputed. Type
words to filter; click a document to see its class probabilities and the largest
contributions (feature value x posterior-mean coefficient) to each class score.</p>
<input id="search" type="search" placeholder="search the documents" autocomplete="off">
<span id="match-count"></span>
<div id="matches"></div>
<div id="explanation"><p>No document selected.</p></div>
"""

_SCRIPT = r"""
(function () {
  "use strict";
  var docs = JSON.parse(document.getElementById("doc-data").textContent);
  var box = document.getElementById("search");
  if (!box) { return; }
  var list = document.getElementById("matches");
  var out = document.getElementById("explanation");
  var count = document.getElementById("match-count");

  function el(tag, text, cls) {
    var node = document.createElement(tag);
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    if (cls) { node.className = cls; }
    return node;
  }
  function matching(query) {
    var words = query.toLowerCase().split(/\s+/).filter(function (w) { return w; });
    return docs.filter(function (d) {
      var text = d.text.toLowerCase();
      return words.every(function (w) { return text.indexOf(w) >= 0; });
    });
  }
  function show(doc) {
    out.textContent = "";
    out.setAttribute("data-doc", String(doc.id));
    out.appendChild(el("h3", "Document " + doc.id));
    var facts = "predicted class: " + doc.predicted;
    if (doc.true !== null) { facts += "    true class: " + doc.true; }
    out.appendChild(el("p", facts, "facts"));
    out.appendChild(el("div", doc.text + (doc.truncated ? " [...]" : ""))).id = "doc-text";
    doc.classes.forEach(function (c) {
      out.appendChild(el("h4", "class " + c.label + ": probability " + c.proba.toFixed(3)));
      var table = el("table");
      var head = el("tr");
      ["feature", "value", "coef", "contribution", "top words"].forEach(function (h) {
        head.appendChild(el("th", h));
      });
      table.appendChild(head);
      c.rows.forEach(function (r) {
        var row = el("tr");
        row.appendChild(el("td", r.feature));
        row.appendChild(el("td", r.value.toFixed(3)));
        row.appendChild(el("td", r.coef.toFixed(3)));
        row.appendChild(el("td", r.contribution.toFixed(3), r.contribution >= 0 ? "pos" : "neg"));
        row.appendChild(el("td", r.words));
        table.appendChild(row);
      });
      out.appendChild(table);
    });
    Array.prototype.forEach.call(list.children, function (node) {
      node.classList.toggle("active", node.getAttribute("data-doc") === String(doc.id));
    });
  }
  function render(query) {
    var found = matching(query);
    list.textContent = "";
    found.slice(0, 200).forEach(function (d) {
      var item = el("div", d.id + ": " + d.text.slice(0, 160));
      item.setAttribute("data-doc", String(d.id));
      item.addEventListener("click", function () { show(d); });
      list.appendChild(item);
    });
    count.textContent = found.length + " of " + docs.length + " documents";
    return found;
  }
  box.addEventListener("input", function () { render(box.value); });
  function fromHash() {
    var hash = window.location.hash.replace(/^#/, "");
    var params = {};
    hash.split("&").forEach(function (part) {
      var i = part.indexOf("=");
      if (i > 0) { params[part.slice(0, i)] = decodeURIComponent(part.slice(i + 1)); }
    });
    if (params.q !== undefined) {
      box.value = params.q;
      var found = render(params.q);
      if (found.length) { show(found[0]); }
    } else if (params.doc !== undefined) {
      render("");
      var doc = docs.filter(function (d) { return String(d.id) === params.doc; })[0];
      if (doc) { show(doc); }
    } else {
      render("");
    }
  }
  window.addEventListener("hashchange", fromHash);
  fromHash();
})();
"""
