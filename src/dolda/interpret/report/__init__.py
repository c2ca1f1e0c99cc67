"""A self-contained, explorable HTML report of a fitted DOLDA model.

:func:`make_report` writes one HTML file that needs no network: interactive
Bokeh figures (hover, zoom, tap) with BokehJS inlined once, and a page script
over embedded JSON.  It stays readable at 50+ classes and 100+ topics:

* **Topics**: an intertopic map (Jensen-Shannon distances + classical MDS,
  circle area = share of tokens) and the relevance-ranked terms of the clicked
  topic with a ``lambda`` slider (as in LDAvis).
* **Classes x topics**: a heat map of the coefficients with hover (interval,
  top words), signal cells outlined; click a cell (or pick a class) to list that
  class's signal features.
* **Documents** (with ``texts``): searchable, paged, listed by id; a selected
  document shows its text with the words that push toward (red) and against
  (blue) a class highlighted, and the feature contributions to the score.
  ``report.html#q=WORDS`` selects the first document containing WORDS,
  ``report.html#doc=ID`` document ID.
* **Accuracy** (with ``y``): the most frequent confusions (the full matrix only
  for few classes) and per-class recall and precision.
* **Calibration** (with ``y``): one plain sentence ("when the model says about 80%, it was
  right 78% of the time ..."), the probability rule and calibration map in words (also among
  the model's facts), a reliability diagram (other models' curves beside it with
  ``reference_proba``), the expected calibration error (15 equal-width and 15 equal-mass
  bins with a bootstrap interval), the Brier score and log loss, as ``dolda score``.
* **Convergence**: a verdict in plain words with advice ("run about N more
  iterations ..."), the log-likelihood trace and the worst coefficients.

The static matplotlib figures of :mod:`dolda.interpret.report.plots` stay available:
``plot_coefficients(model, label)``, ``plot_trace(model)``,
``plot_topic_heatmap(model)``, ``plot_coefficient_histogram(model)`` and
``plot_confusion_matrix``.
"""

from __future__ import annotations

import datetime
import os
import tempfile
from pathlib import Path

import numpy as np

from ...posterior.calibration import describe_proba
from ...evaluate.diagnostics import prior_name
from .convergence import RHAT_WARN, convergence_summary
from .page import esc, json_for_script, render_page
from .plots import (
    figure_to_png,
    plot_coefficient_histogram,
    plot_coefficients,
    plot_confusion_matrix,
    plot_topic_heatmap,
    plot_trace,
)

__all__ = ["make_report", "plot_coefficients", "plot_trace", "plot_topic_heatmap",
           "plot_coefficient_histogram", "plot_confusion_matrix", "figure_to_png",
           "json_for_script", "RHAT_WARN"]

#: Classes up to which the full confusion matrix is drawn.
FULL_CONFUSION_MAX = 20
_SNIPPET = 160
_N_TERMS = 20
_N_CONFUSIONS = 15
#: Kept eta draws (evenly spaced) over which the report averages the class
#: probabilities of its documents: bounds the cost for long chains.
PROBA_DRAWS = 30


def _table(head, rows, numeric=()):
    header = "".join(f"<th>{esc(h)}</th>" for h in head)
    body = []
    for row in rows:
        cells = "".join(f'<td class="num">{esc(v)}</td>' if i in numeric else f"<td>{v}</td>"
                        for i, v in enumerate(row))
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{header}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _topic_data(model, n_words, level):
    from .topics_map import (
        classical_mds,
        jensen_shannon_distances,
        relevance_candidates,
        topic_shares,
        word_marginal,
    )

    phi = np.asarray(model.phi_, dtype=np.float64)
    K = phi.shape[0]
    shares = topic_shares(model)
    p = word_marginal(phi, shares)
    words = np.asarray(model.vocabulary_.words)
    top = model.top_words(n_words)
    names = list(top.index)
    top_text = [" ".join(top.loc[t]) for t in names]
    lo, hi = model.coef_interval(level)
    coef = model.coef_[names].to_numpy()
    sig = (lo[names].to_numpy() > 0) | (hi[names].to_numpy() < 0)  # (L, K)
    classes = [str(c) for c in model.classes_]
    signal = [", ".join(f"{classes[l]} ({'+' if coef[l, k] > 0 else '-'})"
                        for l in np.flatnonzero(sig[:, k])) for k in range(K)]
    coords = classical_mds(jensen_shannon_distances(phi)) if K > 2 else \
        np.column_stack([np.arange(K, dtype=float), np.zeros(K)])
    candidates = relevance_candidates(phi, shares, n_words=_N_TERMS)
    topics = []
    for k in range(K):
        cand = candidates[k]
        topics.append({"name": names[k], "share": round(float(shares[k]), 5),
                       "words": " ".join(top.loc[names[k]][:6]), "signal": signal[k],
                       "terms": [[str(words[v]), float(f"{phi[k, v]:.4g}"),
                                  float(f"{p[v]:.4g}")] for v in cand]})
    return topics, coords, shares, names, top_text, signal


def _class_data(model, level, n_words=6, max_rows=12):
    lo, hi = model.coef_interval(level)
    words = model.top_words(n_words)
    top = {t: " ".join(words.loc[t]) for t in words.index}
    names = np.asarray(model.coef_.columns, dtype=object)
    coef, lo, hi = model.coef_.to_numpy(), lo.to_numpy(), hi.to_numpy()
    sig = (lo > 0) | (hi < 0)
    keep = names != "(intercept)"
    out = []
    for l, c in enumerate(model.classes_):
        order = np.argsort(-np.abs(coef[l]), kind="stable")
        order = order[keep[order]]
        chosen = np.r_[order[sig[l, order]], order[~sig[l, order]]]
        chosen = chosen[:max(max_rows, int(sig[l, keep].sum()))]
        rows = [[str(names[j]), round(float(coef[l, j]), 4), round(float(lo[l, j]), 4),
                 round(float(hi[l, j]), 4), bool(sig[l, j]), top.get(names[j], "")]
                for j in chosen]
        out.append({"label": str(c), "signal": int(sig[l, keep].sum()), "features": rows})
    return out


def _accuracy_sections(model, y, predicted, proba, doc_ids, explained_of, classes_data,
                       reference_proba=None):
    """HTML of the accuracy and calibration sections, and their Bokeh figures."""
    from sklearn.metrics import confusion_matrix, f1_score

    from .figures import confusion_heatmap

    labels = [str(c) for c in model.classes_]
    y = np.asarray([str(v) for v in y], dtype=object)
    predicted = np.asarray([str(v) for v in predicted], dtype=object)
    known = np.isin(y, labels)
    seen = sorted(set(y.tolist()) - set(labels))
    matrix = confusion_matrix(y[known], predicted[known], labels=labels)
    accuracy = float(np.mean(y == predicted))
    macro_f1 = float(f1_score(y[known], predicted[known], labels=labels, average="macro",
                              zero_division=0))
    support = matrix.sum(axis=1)
    predicted_n = matrix.sum(axis=0)
    for i, c in enumerate(classes_data):
        c["n"] = int(support[i])
        c["recall"] = float(matrix[i, i] / support[i]) if support[i] else 0.0
        c["precision"] = float(matrix[i, i] / predicted_n[i]) if predicted_n[i] else None
    off = matrix.copy()
    np.fill_diagonal(off, 0)
    pairs = np.dstack(np.unravel_index(np.argsort(-off, axis=None), off.shape))[0]
    rows = []
    for t, p in pairs[:_N_CONFUSIONS]:
        if off[t, p] == 0:
            break
        example = next((doc_ids[d] for d in explained_of
                        if y[d] == labels[t] and predicted[d] == labels[p]), None)
        link = (f'<a href="#doc={esc(example)}">document {esc(example)}</a>'
                if example is not None else "")
        rows.append([esc(labels[t]), esc(labels[p]), int(off[t, p]),
                     f"{off[t, p] / max(support[t], 1):.0%}", link])
    parts = [f"<p>{len(y)} labelled documents: accuracy <b>{accuracy:.3f}</b>, macro-F1 "
             f"{macro_f1:.3f}.</p>"]
    if seen:
        parts.append(f"<p class='muted'>{len(seen)} labels unknown to the model (counted as "
                     f"errors): {esc(', '.join(seen[:10]))}{' ...' if len(seen) > 10 else ''}"
                     "</p>")
    parts.append("<h3>Most frequent confusions</h3>")
    parts.append(_table(["true class", "predicted as", "documents", "share of the true class",
                         "an example"], rows, numeric=(2, 3)) if rows else
                 "<p>No confusion.</p>")
    recall = sorted(classes_data, key=lambda c: c["recall"])
    per_class = _table(["class", "documents", "recall", "precision", "signal features"],
                       [[esc(c["label"]), c["n"], f"{c['recall']:.2f}",
                         "n/a" if c["precision"] is None else f"{c['precision']:.2f}",
                         c["signal"]] for c in recall], numeric=(1, 2, 3, 4))
    parts.append(f"<details><summary>Recall and precision of every class (worst recall "
                 f"first)</summary>{per_class}</details>")
    figures = {}
    if len(labels) <= FULL_CONFUSION_MAX:
        figures["confusion"] = confusion_heatmap(labels, matrix)
        parts.append("{{fig:confusion}}")
    accuracy_html = "".join(parts)

    calib_html, ece, more = _calibration_section(model, y, proba, labels, accuracy,
                                                 reference_proba)
    figures.update(more)
    return accuracy_html, calib_html, figures, {"accuracy": accuracy, "macro_f1": macro_f1,
                                                 "ece": ece}


def _calibration_section(model, y, proba, labels, accuracy, reference_proba=None):
    """HTML of the calibration section (the rule named, the figures of ``dolda score``, one
    plain sentence and the reliability diagram, with the curves of ``reference_proba``
    ``{name: (D, L) probabilities in the model's classes}`` beside the model's), its
    15-bin ECE and its figure."""
    from ...posterior.reliability import (
        calibration_figures,
        plain_sentence,
        reliability_curve,
    )
    from .figures import reliability_diagram

    known = np.isin(y, labels)
    index = {c: i for i, c in enumerate(labels)}
    y_index = np.array([index[v] for v in y[known]], dtype=np.int64)
    p = np.asarray(proba, dtype=np.float64)[known]
    if not len(y_index):
        return "<p>No labelled document has a class of the model.</p>", float("nan"), {}
    f = calibration_figures(p, y_index)
    curve = reliability_curve(p, y_index, 15)
    name = "DOLDA (" + _method_name(model) + ")"
    others = {}
    for other, q in (reference_proba or {}).items():
        c = reliability_curve(np.asarray(q, dtype=np.float64)[known], y_index, 15)
        others[str(other)] = (c.confidence.tolist(), c.accuracy.tolist())
    figure = reliability_diagram(curve.confidence.tolist(), curve.accuracy.tolist(),
                                 curve.count.tolist(), name=name, others=others)
    mean_conf = f["mean_confidence"]
    if mean_conf > accuracy + 0.05:
        words = "overconfident: its stated probabilities are higher than its hit rate"
    elif mean_conf < accuracy - 0.05:
        words = "underconfident: it is right more often than it says"
    else:
        words = "about as confident as it is accurate"
    rows = [[f"{c:.2f}", f"{a:.2f}", n] for c, a, n in zip(curve.confidence, curve.accuracy,
                                                             curve.count)]
    html = (f"<p class='verdict'>{esc(plain_sentence(p, y_index, 'these documents'))}</p>"
            f"<p>Probabilities: {esc(describe_proba(model))} (docs/guide/probabilities.md, docs/CALIBRATION.md).</p>"
            f"<p>Mean stated probability of the predicted class {mean_conf:.3f} against "
            f"accuracy {accuracy:.3f}: the model is {words}. Expected calibration error "
            f"<b>{f['ece']:.3f}</b> (15 equal-width bins), {f['ece_equal_mass']:.3f} (15 "
            f"equal-mass bins; bootstrap 90% {f['ece_equal_mass_low']:.3f}-"
            f"{f['ece_equal_mass_high']:.3f}); Brier score {f['brier']:.3f}, log loss "
            f"{f['log_loss']:.3f}.</p><div class='row'><div class='col'>"
            "{{fig:reliability}}</div><div class='col'>"
            + _table(["stated probability", "share correct", "documents"], rows,
                     numeric=(0, 1, 2)) + "</div></div>")
    return html, f["ece"], {"reliability": figure}


def _method_name(model):
    """The calibration in a few words, for the diagram's legend."""
    rule = getattr(model, "proba", "do")
    if rule != "calibrated":
        return f"proba={rule!r}"
    holdout = getattr(model, "calibration_holdout", None)
    if holdout == "time":
        return "calibrated for drift, latest 20%"
    if holdout:
        return f"calibrated on the latest {holdout:.0%}, held out"
    return "calibrated, leave-one-out"


def _convergence_html(summary, model):
    cls = "ok" if summary["verdict"] == "converged" else "bad"
    parts = [f"<p class='verdict {cls}'>{esc(summary['advice'][0])}</p>"]
    parts += [f"<p>{esc(a)}</p>" for a in summary["advice"][1:]]
    parts.append("<ul>" + "".join(f"<li>{esc(f)}</li>" for f in summary["facts"]) + "</ul>")
    parts.append("{{fig:trace}}")
    table = summary["table"].reset_index()
    rows = [[esc(r["class"]), esc(r["feature"]), f"{r['mean']:+.3f}", f"{r['r_hat']:.3f}",
             f"{r['ess_bulk']:.0f}", "yes" if r["signal"] else ""]
            for _, r in table.iterrows()]
    parts.append("<details><summary>The coefficients with the largest R-hat (signal "
                 "coefficients first)</summary>"
                 + _table(["class", "feature", "mean", "R-hat", "bulk ESS", "signal"], rows,
                          numeric=(2, 3, 4)) + "</details>")
    return "".join(parts)


def _check_inputs(model, texts, y, ids):
    from sklearn.utils.validation import check_is_fitted

    check_is_fitted(model, "eta_draws_")
    if y is not None and texts is None:
        raise ValueError("y was given without texts")
    if ids is not None and texts is None:
        raise ValueError("ids were given without texts")
    if texts is None:
        return None, None, None
    texts = [str(t) for t in texts]
    if y is not None:
        y = np.asarray(y, dtype=object)
        if len(y) != len(texts):
            raise ValueError(f"texts and y have different lengths: {len(texts)} texts, "
                             f"{len(y)} labels")
    if ids is None:
        ids = list(range(len(texts)))
    else:
        ids = [i.item() if isinstance(i, np.generic) else i for i in ids]
        if len(ids) != len(texts):
            raise ValueError(f"texts and ids have different lengths: {len(texts)} texts, "
                             f"{len(ids)} ids")
        if len(set(map(str, ids))) != len(ids):
            raise ValueError("ids must be unique")
    return texts, y, ids


def make_report(model, path, texts=None, y=None, X=None, max_documents=200, n_words=10,
                level=0.95, title=None, ids=None, max_chars=2000, reference_proba=None):
    """Write a self-contained, interactive HTML report of a fitted DOLDA model.

    Parameters
    ----------
    model : fitted DOLDA
    path : str or Path
        The HTML file; written atomically (a temporary file, then renamed).
    texts : sequence of str or None
        Documents for the document explorer (all listed and searchable; the
        first ``max_documents`` with word-level explanations) and, with ``y``,
        for the accuracy and calibration sections.
    y : array-like or None
        True labels of ``texts``.
    X : DataFrame, array or None
        Covariates of ``texts`` when the model has covariates.
    max_documents : int, default=200
        Documents explained word by word (they carry up to ``max_chars``
        characters of text; the others a short snippet).
    n_words : int, default=10
        Top words per topic in hovers and tables.
    level : float, default=0.95
        Credible level of the intervals and of the signal rule.
    title : str or None
    ids : sequence or None
        Ids of ``texts`` shown and searched (default: their positions).
    max_chars : int, default=2000
        Characters of an explained document kept in the report.
    reference_proba : dict or None
        ``{name: (D, L) probabilities}`` of other models on ``texts`` (columns in the
        model's ``classes_`` order), drawn beside the model's reliability curve (e.g.
        ``{"logistic regression": lr.predict_proba(B)}``).

    Notes
    -----
    The class probabilities of the documents are averaged over
    :data:`PROBA_DRAWS` evenly spaced kept draws of eta (all of them when
    fewer), which keeps the report of thousands of documents fast for long
    chains; ``predict_proba`` averages over all draws.

    Returns
    -------
    pathlib.Path
        The written file.
    """
    from bokeh.embed import components
    from bokeh.resources import Resources

    from ..explain import analyse, explain_documents
    from .figures import coefficient_heatmap, intertopic_map, loglik_trace

    texts, y, ids = _check_inputs(model, texts, y, ids)
    path = Path(path)
    title = title or "DOLDA model report"
    n_chains = int(getattr(model, "n_chains_", 1))
    burn = model.burn_in if model.burn_in is not None else model.n_iter_ // 2
    K = model.phi_.shape[0]
    L = len(model.classes_)
    n_word = sum(str(n).startswith("word=") for n in model.feature_names_)
    n_meta = len(model.feature_names_) - K - 1 - n_word
    facts = [("classes", f"{L}: " + ", ".join(str(c) for c in model.classes_[:12])
              + (" ..." if L > 12 else "")), ("topics", K),
             ("vocabulary", f"{len(model.vocabulary_.words)} words"),
             ("training tokens", getattr(model, "n_tokens_", "?")),
             ("metadata covariates", f"{n_meta} columns"),
             ("word covariates", f"{n_word} words"),
             ("prior", prior_name(model)), ("iterations", model.n_iter_), ("burn-in", burn),
             ("chains", n_chains), ("kept draws", model.eta_draws_.shape[0]),
             ("joint or two-step", "two-step" if model.two_step else "joint"),
             ("probabilities", describe_proba(model))]
    sections = [("Model", "<dl>" + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>"
                                          for k, v in facts) + "</dl>")]
    figures = {}

    topics, coords, shares, names, top_text, signal = _topic_data(model, n_words, level)
    figures["map"] = intertopic_map(coords, shares, names, top_text, signal)
    sections.append(("Topics", (
        "<p>Left: every topic as a circle (area: share of the tokens), placed so that "
        "similar topics (small Jensen-Shannon distance between their word distributions) "
        "lie close; red: signal topic of some class. Click a circle or pick a topic. Right: "
        "its most relevant words; grey bar: the word's overall frequency, red: within the "
        "topic. Relevance = &lambda; log P(w|topic) + (1 - &lambda;) log lift; a small "
        "&lambda; favours words specific to the topic.</p>"
        "<div class='row'><div class='col'>{{fig:map}}</div><div class='col'>"
        "<select id='topic-select' aria-label='topic'></select> "
        "<label>&lambda; = <span id='lambda-value'>0.60</span> <input id='lambda' "
        "type='range' min='0' max='1' step='0.05' value='0.6'></label>"
        "<div id='term-bars'></div></div></div>")))

    lo, hi = model.coef_interval(level)
    topic_cols = [c for c in model.coef_.columns if str(c).startswith("topic ")]
    figures["heat"] = coefficient_heatmap(
        model.classes_, topic_cols, model.coef_[topic_cols].to_numpy(),
        lo[topic_cols].to_numpy(), hi[topic_cols].to_numpy(), top_text)
    classes_data = _class_data(model, level)
    class_html = (
        f"<p>Posterior-mean coefficient of every topic in every class score (red: raises "
        f"the class's score, blue: lowers it); outlined cells are signal topics, whose "
        f"{level:.0%} credible interval excludes zero. Hover a cell for its interval and "
        "words; click it to list that class's signal features below.</p>{{fig:heat}}"
        "<h3>Signal features of a class</h3><select id='class-select' aria-label='class'>"
        "</select><div id='class-panel'></div>")

    data = {"topics": topics, "n_terms": _N_TERMS, "classes": classes_data, "docs": [],
            "explained": [], "labelled": y is not None}
    accuracy_html = calib_html = None
    if texts is not None:
        analysis = analyse(model, texts, X, max_draws=PROBA_DRAWS)
        proba = analysis.proba
        best = np.argmax(proba, axis=1)
        predicted = model.classes_[best]
        n_explained = min(len(texts), int(max_documents))
        explained_rows = list(range(n_explained))
        explained = explain_documents(model, texts, n_classes=min(3, L), ids=ids,
                                      max_chars=max_chars, analysis=analysis,
                                      rows=explained_rows)
        for e in explained:
            del e["text"], e["proba"], e["id"], e["predicted"]
        docs = []
        for d, text in enumerate(texts):
            is_explained = d < n_explained
            keep = min(len(text), max_chars) if is_explained else _SNIPPET
            docs.append([ids[d], text[:keep], None if y is None else str(y[d]),
                         str(predicted[d]), round(float(proba[d, best[d]]), 4),
                         d if is_explained else -1, len(text) > keep])
        data["docs"], data["explained"] = docs, explained
        if y is not None:
            accuracy_html, calib_html, more, _ = _accuracy_sections(
                model, y, predicted, proba, ids, explained_rows, classes_data,
                reference_proba)
            figures.update(more)
    sections.append(("Classes and topics", class_html))
    if texts is not None:
        sections.append(("Documents", (
            f"<p>{len(texts)} documents; the first {len(data['explained'])} with word-level "
            "explanations. Search by words, id or class; click a row. A word's contribution "
            "to a class score is (1/N) &sum;<sub>k</sub> P(z=k) &eta;<sub>k</sub>: its share "
            "of the topic proportions times the topics' coefficients.</p>"
            "<input id='doc-search' type='search' placeholder='search documents, ids, classes'"
            " autocomplete='off'> " + ("<label><input id='doc-wrong' type='checkbox'> only "
                                      "misclassified</label> " if y is not None else "")
            + "<span id='doc-count'></span><div id='doc-list'></div><div id='doc-pager' "
            "class='pager'></div><div id='doc-detail'><p class='muted'>No document selected."
            "</p></div>")))
    if accuracy_html is not None:
        sections.append(("Accuracy and confusions", accuracy_html))
        sections.append(("Calibration", calib_html))
    summary = convergence_summary(model, level)
    figures["trace"] = loglik_trace(model.loglik_, burn)
    sections.append(("Convergence", _convergence_html(summary, model)))

    script, divs = components(figures)
    nav = "".join(f'<a href="#s{i}">{esc(name)}</a>' for i, (name, _) in enumerate(sections))
    body = "".join(f'<section id="s{i}"><h2>{esc(name)}</h2>{content}</section>'
                   for i, (name, content) in enumerate(sections))
    for key, div in divs.items():
        body = body.replace("{{fig:" + key + "}}", div)
    bokeh_js = Resources(mode="inline", components=["bokeh"]).render_js()
    stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    page = render_page(title, stamp, nav, body, bokeh_js, script, data)
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
