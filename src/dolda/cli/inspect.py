"""``dolda topics`` and ``dolda explain``: look inside a fitted model."""

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


@main.command()
@click.argument("model_dir", type=_MODEL)
@click.option("--words", "-w", "n_words", type=click.IntRange(min=1), default=10,
              show_default=True, help="Top words shown per topic.")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.95, show_default=True,
              help="A topic is a signal topic of a class when this credible interval of its "
                   "coefficient excludes 0.")
def topics(model_dir, n_words, level):
    """Show the top words of every topic and the signal topics of every class.

    \b
    Example:
      dolda topics model/ --words 8
    """
    import pandas as pd

    model, _ = _load_model(model_dir)
    words = model.top_words(n_words)
    click.echo(f"Top {words.shape[1]} words per topic:")
    width = max(len(str(t)) for t in words.index)
    for topic, row in words.iterrows():
        click.echo(f"  {str(topic):<{width}}  {' '.join(str(w) for w in row)}")
    click.echo("")
    click.echo(f"Signal topics per class ({level:.0%} interval of the coefficient excludes 0):")
    for label in model.classes_:
        signal = model.signal_topics(label, level=level, n_words=min(n_words, 8))
        click.echo(f"  {label}:" + ("" if len(signal) else " none"))
        if len(signal):
            shown = pd.DataFrame({
                "coef": signal["coef"].map("{:+.2f}".format),
                "interval": [f"[{lo:+.2f}, {hi:+.2f}]"
                             for lo, hi in zip(signal["lower"], signal["upper"])],
                "top words": signal["top_words"]})
            for line in shown.to_string(index=True, header=False).splitlines():
                click.echo(f"    {line}")
        covs = model.signal_covariates(label, level=level)
        if len(covs):
            click.echo("    covariates and words: " + ", ".join(
                f"{name} {c:+.2f} [{lo:+.2f}, {hi:+.2f}]" for name, c, lo, hi in
                zip(covs.index, covs["coef"], covs["lower"], covs["upper"])))


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
