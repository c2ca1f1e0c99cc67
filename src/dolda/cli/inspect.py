"""``dolda topics``: the topics of a fitted model, its signal topics and covariate effects."""

from __future__ import annotations

from pathlib import Path

import click

from ..interpret.topics import DEFAULT_RELEVANCE
from ._common import _echo_warnings, _library_errors, warn_inert
from ._options import _FloatRange, _MODEL
from ._group import main
from ._output import FORMATS, check_format_out, write_formatted


def _load_topic_model(path):
    """A fitted DOLDA or LDA saved in ``path``, or a one-line error."""
    from ..io import ModelFormatError, load
    from ..models.lda import LDA
    from ..models.dolda.estimator import DOLDA

    try:
        model = load(path)
    except ModelFormatError as exc:
        raise click.ClickException(f"{path} is not a dolda model: "
                                   f"{' '.join(str(exc).split())}") from None
    if not isinstance(model, (DOLDA, LDA)):
        raise click.ClickException(f"{path} holds a {type(model).__name__}, not a topic model "
                                   "(DOLDA or LDA)")
    return model


def _format_options(func):
    """``--format`` and ``--out`` of the inspecting commands."""
    options = [
        click.option("--format", "fmt", type=click.Choice(FORMATS), default="text",
                     show_default=True, help="text for people, json or csv for programs."),
        click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
                     help="Write to this file (.txt, .json, .csv, .tsv, .parquet to match "
                          "--format) instead of standard output."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


#: Signal words per class that ``dolda topics`` prints as text (``--signals``).
SIGNALS_SHOWN = 15

_RELEVANCE_HELP = ("Rank words by Sievert & Shirley's relevance with this lambda: 1 = by "
                   "probability in the topic, lower favours words specific to the topic.")


def topic_summary(model, n_words=10, level=0.95, relevance=DEFAULT_RELEVANCE):
    """Everything ``dolda topics`` shows, as plain Python data (see its JSON format)."""
    import numpy as np

    words = model.top_words(n_words, relevance=relevance)
    words = [list(row) for row in (words.to_numpy() if hasattr(words, "to_numpy") else words)]
    labels = model.topic_labels(relevance=relevance)
    counts = getattr(model, "doc_topic_counts_", None)
    shares = None
    if counts is not None:
        totals = np.asarray(counts, dtype=float).sum(axis=0)
        shares = (totals / max(totals.sum(), 1.0)).tolist()
    topics = []
    for k, (row, label) in enumerate(zip(words, labels)):
        topics.append({"topic": f"topic {k}", "label": label,
                       "share": None if shares is None else shares[k], "words": row})
    summary = {"model": type(model).__name__, "relevance": float(relevance),
               "topics": topics}
    if not hasattr(model, "eta_draws_"):
        return summary
    lo, hi = model.coef_interval(level)
    summary["level"] = float(level)
    summary["n_chains"] = int(getattr(model, "n_chains_", 1))
    signal = {}
    for label in model.classes_:
        table = model.signal_topics(label, level=level, n_words=min(n_words, 8),
                                    relevance=relevance)
        signal[str(label)] = [
            {"topic": t, "label": labels[int(str(t).split()[-1])], "coef": float(r["coef"]),
             "lower": float(r["lower"]), "upper": float(r["upper"]),
             "repeats": float(r["repeats"]), "words": str(r["top_words"]).split()}
            for t, r in table.iterrows()]
    summary["signal_topics"] = signal
    from ..models.dolda.design_stage import fitted_column_kinds

    kinds = fitted_column_kinds(model)
    names = np.asarray([str(c) for c in model.coef_.columns], dtype=object)
    covariates = list(names[kinds == "covariates"])
    if np.any(kinds == "words"):
        words = set(names[kinds == "words"])
        summary["signal_words"] = {}
        for label in model.classes_:
            table = model.signal_covariates(label, level=level)
            summary["signal_words"][str(label)] = [
                {"feature": str(c), "coef": float(r["coef"]), "lower": float(r["lower"]),
                 "upper": float(r["upper"]), "repeats": float(r["repeats"])}
                for c, r in table.iterrows() if c in words]
    effects = {}
    for label in model.classes_:
        effects[str(label)] = [
            {"feature": str(c), "coef": float(model.coef_.loc[label, c]),
             "lower": float(lo.loc[label, c]), "upper": float(hi.loc[label, c]),
             "excludes_zero": bool(lo.loc[label, c] > 0 or hi.loc[label, c] < 0)}
            for c in covariates]
    summary["covariates"] = effects if covariates else {}
    for topic in topics:
        topic["coef"] = {str(label): float(model.coef_.loc[label, topic["topic"]])
                         for label in model.classes_}
    return summary


def _topics_frame(summary):
    """The long table of ``dolda topics --format csv``."""
    import pandas as pd

    rows = []
    signal = {(cls, s["topic"]) for cls, items in summary.get("signal_topics", {}).items()
              for s in items}
    if "signal_topics" not in summary:
        for t in summary["topics"]:
            rows.append({"feature": t["topic"], "kind": "topic", "label": t["label"],
                         "share": t["share"], "top_words": " ".join(t["words"])})
        return pd.DataFrame(rows)
    return pd.DataFrame(_feature_rows(summary, signal))


def _feature_rows(summary, signal):
    rows = []
    intervals = {}
    for cls, items in summary["signal_topics"].items():
        for s in items:
            intervals[(cls, s["topic"])] = (s["lower"], s["upper"])
    repeats = {(cls, s["topic"]): s["repeats"]
               for cls, items in summary["signal_topics"].items() for s in items}
    for t in summary["topics"]:
        for cls, coef in t["coef"].items():
            lower, upper = intervals.get((cls, t["topic"]), (None, None))
            rows.append({"feature": t["topic"], "kind": "topic", "label": t["label"],
                         "share": t["share"], "top_words": " ".join(t["words"]),
                         "class": cls, "coef": coef, "lower": lower, "upper": upper,
                         "signal": (cls, t["topic"]) in signal,
                         "repeats": repeats.get((cls, t["topic"]))})
    for cls, items in summary["covariates"].items():
        for c in items:
            rows.append({"feature": c["feature"], "kind": "covariate", "label": c["feature"],
                         "share": None, "top_words": "", "class": cls, "coef": c["coef"],
                         "lower": c["lower"], "upper": c["upper"],
                         "signal": c["excludes_zero"], "repeats": None})
    for cls, items in summary.get("signal_words", {}).items():
        for c in items:
            rows.append({"feature": c["feature"], "kind": "word", "label": c["feature"],
                         "share": None, "top_words": "", "class": cls, "coef": c["coef"],
                         "lower": c["lower"], "upper": c["upper"], "signal": True,
                         "repeats": c["repeats"]})
    return rows


def _chains_note(summary):
    n = summary.get("n_chains", 1)
    return "" if n <= 1 else (f"; n/{n} chains: in how many of the chains it is a signal on "
                              "that chain's own draws")


def _repeats_text(summary, share):
    """`` 2/3 chains`` beside a signal of a several-chain fit; nothing with one chain."""
    n = summary.get("n_chains", 1)
    return "" if n <= 1 else f"  {round(share * n)}/{n} chains"


def _topics_text(summary, shown=SIGNALS_SHOWN):
    lines = [f"Top {len(summary['topics'][0]['words'])} words per topic (relevance lambda = "
             f"{summary['relevance']:g}):"]
    width = max(len(t["topic"]) for t in summary["topics"])
    for t in summary["topics"]:
        lines.append(f"  {t['topic']:<{width}}  {' '.join(str(w) for w in t['words'])}")
    if "signal_topics" not in summary:
        return lines
    level = summary["level"]
    lines += ["", f"Signal topics per class ({level:.0%} interval of the coefficient "
                  f"excludes 0{_chains_note(summary)}):"]
    for cls, items in summary["signal_topics"].items():
        lines.append(f"  {cls}:" + ("" if items else " none"))
        for s in items:
            lines.append(f"    {s['topic']:<{width}}  {s['coef']:+.2f}  "
                         f"[{s['lower']:+.2f}, {s['upper']:+.2f}]  {' '.join(s['words'])}"
                         + _repeats_text(summary, s["repeats"]))
    if summary["covariates"]:
        lines += ["", f"Covariate effects per class (coefficient and {level:.0%} interval; "
                      "* the interval excludes 0):"]
        for cls, items in summary["covariates"].items():
            lines.append(f"  {cls}:")
            cw = max(len(c["feature"]) for c in items)
            for c in items:
                mark = " *" if c["excludes_zero"] else ""
                lines.append(f"    {c['feature']:<{cw}}  {c['coef']:+.3f}  "
                             f"[{c['lower']:+.3f}, {c['upper']:+.3f}]{mark}")
    if "signal_words" in summary:
        lines += ["", f"Signal words per class (the {level:.0%} interval excludes 0; at most "
                      f"{shown} per class, largest |coefficient| first; json and csv list "
                      f"all{_chains_note(summary)}):"]
        for cls, items in summary["signal_words"].items():
            lines.append(f"  {cls}:" + ("" if items else " none"))
            if not items:
                continue
            cw = max(len(c["feature"]) for c in items[:shown])
            for c in items[:shown]:
                lines.append(f"    {c['feature']:<{cw}}  {c['coef']:+.3f}  "
                             f"[{c['lower']:+.3f}, {c['upper']:+.3f}]"
                             + _repeats_text(summary, c["repeats"]))
            if len(items) > shown:
                lines.append(f"    ... and {len(items) - shown} more")
    return lines


@main.command()
@click.argument("model_dir", type=_MODEL)
@click.option("--words", "-w", "n_words", type=click.IntRange(min=1), default=10,
              show_default=True, help="Top words shown per topic.")
@click.option("--level", type=_FloatRange(0, 1, min_open=True, max_open=True),
              default=0.95, show_default=True,
              help="A topic is a signal topic of a class when this credible interval of its "
                   "coefficient excludes 0.")
@click.option("--relevance", type=_FloatRange(0, 1), default=DEFAULT_RELEVANCE,
              show_default=True, help=_RELEVANCE_HELP)
@click.option("--signals", "n_signals", type=click.IntRange(min=0), default=SIGNALS_SHOWN,
              show_default=True,
              help="Signal words shown per class in the text format (json and csv list "
                   "every one).")
@_format_options
@click.option("--raw-csv", is_flag=True, default=False,
              help="Write CSV/TSV text cells exactly, without the ' that otherwise prefixes a "
                   "cell starting with =, +, -, @, tab or CR (so that a spreadsheet does not "
                   "run it as a formula; numbers are never prefixed).")
def topics(model_dir, n_words, level, relevance, n_signals, fmt, out, raw_csv):
    """Show the top words of every topic, the signal topics of every class, the
    covariate effects and the signal words (a DOLDA model), or the topics of an LDA model.

    \b
    Examples:
      dolda topics model/ --words 8
      dolda topics model/ --format json --out topics.json
    """
    out = check_format_out(fmt, out)
    ctx = click.get_current_context(silent=True)
    if fmt != "text":
        warn_inert(ctx, "n_signals", "--signals", f"with --format {fmt}, which lists every "
                   "signal word; it limits the text format")
    if fmt != "csv":
        warn_inert(ctx, "raw_csv", "--raw-csv", f"with --format {fmt}; it concerns csv")
    model = _load_topic_model(model_dir)
    if not hasattr(model, "coef_interval"):
        warn_inert(ctx, "level", "--level", f"with a {type(model).__name__} model, which has "
                   "no coefficients")
    with _echo_warnings(), _library_errors():
        summary = topic_summary(model, n_words, level, relevance)
    frame = _topics_frame(summary) if fmt == "csv" else None
    write_formatted(fmt, out, _topics_text(summary, n_signals) if fmt == "text" else None,
                    summary, frame, formula_guard=not raw_csv)
