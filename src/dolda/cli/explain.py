"""``dolda explain``: why one document gets its class."""

from __future__ import annotations

import click

from ._common import _echo_warnings, _library_errors, warn_inert
from ._models import _load_model, _model_covariates
from ._options import _MODEL
from ._text import decode_text
from ..utils.escape import csv_frame, json_dumps, terminal, terminal_text
from ._group import main


def _parse_covariate_values(items, model) -> "object":
    """``--covariate name=value`` pairs -> a one-row DataFrame in the model's column order."""
    import pandas as pd

    columns, categorical = _model_covariates(model)
    given = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected name=value, got {item!r}",
                                     param_hint="'--covariate'")
        given[name.strip()] = value
    unknown = [n for n in given if n not in columns]
    if unknown:
        known = ", ".join(columns) if columns else "none"
        raise click.BadParameter(f"the model has no covariate {unknown[0]!r} (its covariates: "
                                 f"{known})", param_hint="'--covariate'")
    missing = [c for c in columns if c not in given]
    if missing:
        raise click.BadParameter(f"the model needs covariate {missing[0]!r}: pass "
                                 f"--covariate {missing[0]}=VALUE", param_hint="'--covariate'")
    if not columns:
        return None
    row = {}
    for col in columns:
        value = given[col]
        if col in categorical:
            row[col] = [value]
        else:
            try:
                row[col] = [float(value)]
            except ValueError:
                raise click.BadParameter(f"covariate {col!r} is numeric, got {value!r}",
                                         param_hint="'--covariate'") from None
    return pd.DataFrame(row)


FORMATS = ("text", "json", "csv")
# the colours of the report and the service page: red toward a class, blue against it
_TOWARD, _AGAINST = "red", "blue"


@main.command()
@click.argument("model_dir", type=_MODEL)
@click.argument("text")
@click.option("--covariate", "-c", "covariate_values", multiple=True, metavar="NAME=VALUE",
              help="Value of a covariate of the model (repeat for each covariate).")
@click.option("--classes", "n_classes", type=click.IntRange(min=1), default=3,
              show_default=True, help="Most probable classes shown.")
@click.option("--top", type=click.IntRange(min=1), default=8, show_default=True,
              help="Feature contributions and words shown per class.")
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True,
              help="text: for people; json: probabilities, features and word weights of the "
                   "shown classes; csv: the tidy table of model.explain at --level.")
@click.option("--level", type=click.Choice(["feature", "token"]), default="token",
              show_default=True, help="Rows of --format csv: one per feature or per word.")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Encoding of the text read from standard input (TEXT -).")
def explain(model_dir, text, covariate_values, n_classes, top, fmt, level, encoding):
    """Explain the prediction of one document TEXT ("-" reads it from stdin).

    Prints the probabilities of the most probable classes, the features
    (topics, covariates) that contribute most to each class score (the
    feature's value in this document times its coefficient), and the words of
    the text that push toward and against each class: a word contributes
    through its topic assignment, (1/N) sum_k P(z=k) eta_k.  In a terminal the
    text is shown with those words coloured (red: toward the most probable
    class, blue: against: the colours of the report and the service page).

    \b
    Examples:
      dolda explain model/ "a slow but moving family drama" -c year=1994 -c genre=Drama
      dolda explain model/ - --classes 5 --format json < report.txt
    """
    from ..interpret.explain import analyse, explain_documents

    ctx = click.get_current_context(silent=True)
    if fmt != "csv":
        warn_inert(ctx, "level", "--level", f"with --format {fmt}; it chooses the rows of "
                   "--format csv")
    else:
        warn_inert(ctx, "top", "--top", "with --format csv, which lists every feature or word")
    if text != "-":
        warn_inert(ctx, "encoding", "--encoding", "when TEXT is given on the command line; "
                   "it decodes standard input (TEXT -)")
    model, _ = _load_model(model_dir)
    if text == "-":
        text = decode_text(click.get_binary_stream("stdin").read(), encoding)
    if not text.strip():
        raise click.BadParameter("the text is empty", param_hint="'TEXT'")
    X_row = _parse_covariate_values(covariate_values, model)
    n_classes = min(n_classes, len(model.classes_))
    with _echo_warnings(), _library_errors():
        if fmt == "csv":
            table = model.explain(text, X_row=None if X_row is None else X_row.iloc[0],
                                  level=level, classes=n_classes)
            click.echo(terminal_text(csv_frame(table).to_csv(index=False)), nl=False)
            return
        analysis = analyse(model, [text], X_row)
        doc = explain_documents(model, [text], n_classes=n_classes, n_features=top,
                                analysis=analysis)[0]
    for c in doc["classes"]:
        c["words"] = _ranked_words(doc, c, top)
    if fmt == "json":
        click.echo(json_dumps(doc, ensure_ascii=False, indent=1))
        return
    _print_text(model, doc, top)


def _ranked_words(doc, cls, top):
    """The words with the largest summed contribution to a class: ``{toward, against}``."""
    totals = {}
    for (start, end, _), weight in zip(doc["tokens"], cls["weights"]):
        word = doc["text"][start:end].lower()
        totals[word] = totals.get(word, 0.0) + weight
    ranked = sorted(totals.items(), key=lambda kv: -kv[1])
    toward = [[w, round(v, 5)] for w, v in ranked if v > 0][:top]
    against = [[w, round(v, 5)] for w, v in reversed(ranked) if v < 0][:top]
    return {"toward": toward, "against": against}


def _highlight(doc, weights, top):
    """The text with the ``top`` strongest words either way coloured (ANSI, tty only)."""
    order = sorted(range(len(weights)), key=lambda i: -abs(weights[i]))
    strong = {i for i in order[:max(top * 3, 1)] if weights[i] != 0}
    pieces, pos = [], 0
    for i, (start, end, _) in enumerate(doc["tokens"]):
        if i not in strong:
            continue
        pieces.append(terminal_text(doc["text"][pos:start]))
        pieces.append(click.style(terminal(doc["text"][start:end]), bold=True,
                                  fg=_TOWARD if weights[i] > 0 else _AGAINST))
        pos = end
    pieces.append(terminal_text(doc["text"][pos:]))
    return "".join(pieces)


def _print_text(model, doc, top):
    n_all = len(doc["proba"])
    shown = len(doc["classes"])
    more = f" ({shown} most probable of {n_all})" if shown < n_all else ""
    click.echo(f"Class probabilities{more}:")
    width = max([12] + [len(terminal(label)) for label, _ in doc["proba"][:shown]])
    for label, p in doc["proba"][:shown]:
        click.echo(f"  {terminal(label):<{width}} {p:.3f}")
    words = model.top_words(6)
    for c in doc["classes"]:
        rows = c["features"][:top]
        width = max([len("feature")] + [len(terminal(r[0])) for r in rows])
        label = terminal(c["label"])
        click.echo(f"\nLargest contributions to the score of {label} "
                   f"(value x coefficient; score {c['score']:+.3f}):")
        click.echo(f"  {'feature':<{width}}  {'value':>7}  {'coef':>7}  {'contrib':>7}  top words")
        for feature, value, coef, contribution in rows:
            top_words = (" ".join(map(terminal, words.loc[feature]))
                         if feature in words.index else "")
            click.echo(f"  {terminal(feature):<{width}}  {value:7.3f}  {coef:+7.3f}  "
                       f"{contribution:+7.3f}  {top_words}".rstrip())
        toward = ", ".join(f"{terminal(w)} ({v:+.3f})" for w, v in c["words"]["toward"]) \
            or "none"
        against = ", ".join(f"{terminal(w)} ({v:+.3f})" for w, v in c["words"]["against"]) \
            or "none"
        click.echo(f"  words toward {label}:  {toward}")
        click.echo(f"  words against {label}: {against}")
    if doc["tokens"]:
        best = doc["classes"][0]
        click.echo(f"\nThe text, its strongest words coloured (red: toward "
                   f"{terminal(best['label'])}, "
                   "blue: against):")
        click.echo(_highlight(doc, best["weights"], top))
