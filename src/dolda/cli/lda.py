"""``dolda lda``: fit an unsupervised LDA topic model on a table and save it."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ..interpret.topics import DEFAULT_RELEVANCE
from ..utils.escape import terminal
from ._common import _echo_warnings, _library_errors
from ._files import _check_model_out
from ._models import _save_model
from ._options import MAX_PRIOR, _DATA, _FloatRange, _SEED
from ._tables import DATA_FORMATS, read_table, _require_columns, _texts
from ._group import main


@main.command(epilog=DATA_FORMATS)
@click.argument("data", type=_DATA)
@click.option("--text", "text_column", required=True, metavar="COL",
              help="Column holding the documents.")
@click.option("--topics", "-k", "n_topics", type=click.IntRange(min=2), default=20,
              show_default=True, help="Number of topics K.")
@click.option("--iterations", "-n", "n_iter", type=click.IntRange(min=1), default=200,
              show_default=True, help="Gibbs iterations, burn-in included.")
@click.option("--burn-in", "burn_in", type=click.IntRange(min=0), default=None,
              help="Iterations whose topics are not averaged  [default: half].")
@click.option("--alpha", type=_FloatRange(min=0, min_open=True, max=MAX_PRIOR), default=0.1,
              show_default=True, help="Dirichlet prior of the topic proportions.")
@click.option("--beta", type=_FloatRange(min=0, min_open=True, max=MAX_PRIOR), default=0.01,
              show_default=True, help="Dirichlet prior of the topics.")
@click.option("--rare-share", type=_FloatRange(0, 1, max_open=True), default=0.01,
              show_default=True, help="Share of tokens, made of the rarest words, that are "
              "removed from the vocabulary.")
@click.option("--min-df", type=click.IntRange(min=1), default=1, show_default=True,
              help="Drop words found in fewer documents.")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Encoding of a CSV/TSV file.")
@click.option("--seed", type=_SEED, default=0, show_default=True, help="Random seed.")
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Threads for the sampler  [default: all cores].")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--words", "-w", "n_words", type=click.IntRange(min=1), default=8,
              show_default=True, help="Top words printed per topic after the fit.")
@click.option("--out", "-o", required=True, type=click.Path(path_type=Path),
              help="Directory to save the fitted model in (read it with dolda topics).")
@click.option("--overwrite", is_flag=True, help="Replace an existing model at --out.")
def lda(data, text_column, n_topics, n_iter, burn_in, alpha, beta, rare_share, min_df,
        encoding, seed, threads, quiet, n_words, out, overwrite):
    """Fit an unsupervised LDA topic model (no labels) to the documents in DATA.

    Prints the topics (most relevant words first) and saves the model in --out;
    `dolda topics DIR` shows it again, with --format json/csv.

    \b
    Example:
      dolda lda reviews.csv --text review --topics 30 --out lda_model/
    """
    from ..models.lda import LDA

    if burn_in is not None and burn_in >= n_iter:
        raise click.BadParameter(f"must be smaller than --iterations ({n_iter}), got {burn_in}",
                                 param_hint="'--burn-in'")
    out = _check_model_out(out, overwrite)
    frame = read_table(data, encoding)
    _require_columns(frame, [text_column], data, "--text")
    texts = _texts(frame, text_column, data)
    model = LDA(n_topics=n_topics, alpha=alpha, beta=beta, n_iter=n_iter, burn_in=burn_in,
                rare_share=rare_share, min_df=min_df, random_state=seed, n_jobs=threads,
                progress=not quiet)
    tic = time.perf_counter()
    try:
        with _echo_warnings(), _library_errors():
            model.fit(texts)
    except KeyboardInterrupt:
        click.echo("Interrupted; nothing was saved.", err=True)
        click.get_current_context().exit(130)
    seconds = time.perf_counter() - tic
    _save_model(model, out, {"text_column": text_column, "data": str(data),
                             "n_docs": len(texts), "model": "LDA"})
    click.echo(f"Fitted LDA: {len(texts)} documents, {model.n_tokens_} tokens, "
               f"{len(model.vocabulary_.words)} words, {n_topics} topics, {n_iter} iterations "
               f"in {seconds:.1f} s")
    words = model.top_words(n_words, relevance=DEFAULT_RELEVANCE)
    width = len(f"topic {n_topics - 1}")
    for k, row in enumerate(words):
        click.echo(f"  {f'topic {k}':<{width}}  {' '.join(map(terminal, row))}")
    click.echo(f"Model saved to {out}")
