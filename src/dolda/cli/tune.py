"""``dolda tune``: choose the number of topics by cross-validated accuracy, coherence and
held-out perplexity over a grid of K."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import _echo_warnings, _library_errors, _table
from ._options import MAX_PRIOR, _check_fold_seed, _DATA, _FloatRange, _SEED
from ._tables import (
    DATA_FORMATS,
    read_table,
    _covariates,
    _labels,
    _require_columns,
    _split_columns,
    _texts,
)
from ._group import main
from ._output import check_out, emit, is_stdout, write_table

_PLOT_EXTENSIONS = (".png", ".svg", ".pdf")


def _topic_grid(ctx, param, value):
    """``--topics 5,10,20`` -> [5, 10, 20]."""
    try:
        grid = sorted({int(v) for v in value.split(",") if v.strip()})
    except ValueError:
        raise click.BadParameter(f"expected comma-separated numbers of topics, got {value!r}",
                                 param_hint="'--topics'") from None
    if not grid or grid[0] < 2:
        raise click.BadParameter(f"every number of topics must be at least 2, got {value!r}",
                                 param_hint="'--topics'")
    return grid


@main.command(epilog=DATA_FORMATS)
@click.argument("data", type=_DATA)
@click.option("--text", "text_column", required=True, metavar="COL",
              help="Column holding the documents.")
@click.option("--label", "label_column", default=None, metavar="COL",
              help="Column holding the classes: DOLDA models and their accuracy; without it, "
                   "LDA models (coherence and perplexity only).")
@click.option("--covariates", multiple=True, callback=_split_columns, metavar="A,B",
              help="Comma-separated covariate columns (with --label).")
@click.option("--topics", "-k", "grid", default="5,10,20,40", show_default=True,
              callback=_topic_grid, help="Comma-separated numbers of topics to try.")
@click.option("--folds", type=click.IntRange(min=2), default=3, show_default=True,
              help="Cross-validation folds (stratified with --label).")
@click.option("--iterations", "-n", "n_iter", type=click.IntRange(min=1), default=200,
              show_default=True, help="Gibbs iterations of every fit.")
@click.option("--measure", type=click.Choice(["c_v", "c_npmi", "u_mass"]), default="c_v",
              show_default=True, help="Topic coherence measure.")
@click.option("--alpha", type=_FloatRange(min=0, min_open=True, max=MAX_PRIOR), default=None,
              help="Dirichlet prior of the topic proportions  [default: the model's, 0.01 "
                   "for DOLDA and 0.1 for LDA].")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Encoding of a CSV/TSV file.")
@click.option("--seed", type=_SEED, default=0, show_default=True,
              help="Seed of the folds and the models.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Threads for the sampler  [default: all cores].")
@click.option("--quiet", "-q", is_flag=True, help="No line per fit.")
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Write the table (.csv, .tsv, .parquet, .json; - for CSV on standard "
                   "output).")
@click.option("--plot", type=click.Path(path_type=Path), default=None,
              help="Write the plot of the scores against K (.png, .svg or .pdf).")
def tune(data, text_column, label_column, covariates, grid, folds, n_iter, measure, alpha,
         encoding, seed, threads, quiet, out, plot):
    """Choose the number of topics: fit every K of --topics on --folds folds and report
    the cross-validated accuracy (with --label), the topic coherence on the training
    folds and the held-out perplexity of the test folds.

    \b
    Example:
      dolda tune reviews.csv --text review --label rating --topics 5,10,20,40 \\
          --iterations 300 --out k.csv --plot k.png
    """
    from ..tuning import best_topics, plot_tuning, tune_topics

    _check_fold_seed(seed)
    out = check_out(out, ("table", "json"), inputs=[(data, "DATA file")])
    if plot is not None:
        if plot.suffix.lower() not in _PLOT_EXTENSIONS:
            raise click.BadParameter(f"cannot write a {plot.suffix or 'extensionless'} plot; "
                                     f"use one of {', '.join(_PLOT_EXTENSIONS)}",
                                     param_hint="'--plot'")
        from ._policy import _check_output_file

        plot = _check_output_file(plot, "--plot",
                                  inputs=[(data, "DATA file"), (out, "--out file")])
    if covariates and label_column is None:
        raise click.BadParameter("covariates need --label (they enter the DOLDA regression)",
                                 param_hint="'--covariates'")
    frame = read_table(data, encoding,
                       label_columns=[label_column] if label_column is not None else [])
    _require_columns(frame, [text_column], data, "--text")
    texts = _texts(frame, text_column, data)
    y = X = None
    if label_column is not None:
        _require_columns(frame, [label_column], data, "--label")
        y = _labels(frame, label_column, data)
        X = _covariates(frame, covariates, data)
        import numpy as np

        levels, counts = np.unique(y.astype(str), return_counts=True)
        if counts.min() < folds:
            raise click.BadParameter(
                f"the smallest class ({levels[counts.argmin()]!r}) has {counts.min()} "
                f"documents, fewer than --folds {folds}", param_hint="'--folds'")
    elif len(texts) < folds:
        raise click.BadParameter(f"{len(texts)} documents cannot make {folds} folds",
                                 param_hint="'--folds'")
    params = {"n_iter": n_iter, "n_jobs": threads}
    if alpha is not None:
        params["alpha"] = alpha
    kind = "DOLDA" if y is not None else "LDA"
    emit(out, f"Tuning {kind} on {len(texts)} documents: K in {grid}, {folds} folds, "
              f"{n_iter} iterations per fit ({len(grid) * folds} fits)")
    say = None if quiet else (lambda line: emit(out, "  " + line))
    with _echo_warnings(), _library_errors():
        table = tune_topics(texts, y, X, topics=grid, folds=folds, measure=measure,
                            random_state=seed, progress=say, **params)
    emit(out, _table(table))
    best = best_topics(table)
    emit(out, "Best K: " + ", ".join(
        f"{name} {k}" for name, k in best.items()) +
        "  (accuracy and coherence: highest; perplexity: lowest)")
    if plot is not None:
        plot_tuning(table, plot, title=f"{kind} on {Path(data).name}: choosing K")
        emit(out, f"Plot written to {plot}")
    if out is not None:
        write_table(table.reset_index(), out)
        if not is_stdout(out):
            click.echo(f"Table written to {out}")
