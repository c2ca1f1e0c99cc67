"""``dolda topics``: look inside a fitted model."""

from __future__ import annotations


import click

from . import main
from ._common import (
    _MODEL,
    _load_model,
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
