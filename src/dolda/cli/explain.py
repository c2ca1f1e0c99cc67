"""``dolda explain``: why one document gets its class."""

from __future__ import annotations

import click

from . import main
from ._common import (
    _MODEL,
    _echo_warnings,
    _library_errors,
    _load_model,
    _model_covariates,
)


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


@main.command()
@click.argument("model_dir", type=_MODEL)
@click.argument("text")
@click.option("--covariate", "-c", "covariate_values", multiple=True, metavar="NAME=VALUE",
              help="Value of a covariate of the model (repeat for each covariate).")
@click.option("--top", type=click.IntRange(min=1), default=8, show_default=True,
              help="Contributions shown for the most probable class.")
def explain(model_dir, text, covariate_values, top):
    """Explain the prediction of one document TEXT ("-" reads it from stdin).

    Prints the class probabilities and the features (topics, covariates) that
    contribute most to the score of the most probable class: the feature's value
    in this document times its coefficient.

    \b
    Example:
      dolda explain model/ "a slow but moving family drama" -c year=1994 -c genre=Drama
    """
    model, _ = _load_model(model_dir)
    if text == "-":
        text = click.get_text_stream("stdin").read()
    if not text.strip():
        raise click.BadParameter("the text is empty", param_hint="'TEXT'")
    X_row = _parse_covariate_values(covariate_values, model)
    with _echo_warnings(), _library_errors():
        table = model.explain(text, X_row=None if X_row is None else X_row.iloc[0])
    proba = table.attrs["proba"]
    best = max(proba, key=proba.get)
    click.echo("Class probabilities:")
    for label, p in sorted(proba.items(), key=lambda kv: -kv[1]):
        click.echo(f"  {str(label):<12} {p:.3f}")
    rows = table[table["class"] == best].head(top)
    words = model.top_words(6)
    width = max([len("feature")] + [len(str(f)) for f in rows["feature"]])
    click.echo(f"\nLargest contributions to the score of {best!s} (value x coefficient):")
    click.echo(f"  {'feature':<{width}}  {'value':>7}  {'coef':>7}  {'contrib':>7}  top words")
    for feature, value, coef, contribution in zip(rows["feature"], rows["value"], rows["coef"],
                                                  rows["contribution"]):
        top_words = " ".join(words.loc[feature]) if feature in words.index else ""
        click.echo(f"  {str(feature):<{width}}  {value:7.3f}  {coef:+7.3f}  "
                   f"{contribution:+7.3f}  {top_words}".rstrip())
