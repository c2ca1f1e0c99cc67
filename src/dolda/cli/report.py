"""``dolda report``: a self-contained HTML report of a fitted model."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import _echo_warnings, _library_errors
from ._models import _load_model, _model_covariates
from ._options import _DATA, _MODEL
from ._policy import _check_output_file
from ._metrics import align_labels
from ._tables import DATA_FORMATS, read_table, _labels, _require_columns, _texts
from ._group import main


@main.command(epilog=DATA_FORMATS)
@click.argument("model_dir", type=_MODEL)
@click.option("--out", "-o", required=True, type=click.Path(path_type=Path),
              help="The HTML file to write.")
@click.option("--data", type=_DATA, default=None,
              help="Documents to explain in the report (a table, formats below); with "
                   "--label also the confusion matrix.")
@click.option("--text", "text_column", default=None, metavar="COL",
              help="Column of --data holding the documents  [default: the model's].")
@click.option("--label", "label_column", default=None, metavar="COL",
              help="Column of --data holding the true classes (for the confusion matrix).")
@click.option("--id", "id_column", default=None, metavar="COL",
              help="Column of --data holding document ids (listed and searchable) "
                   "[default: row numbers].")
@click.option("--max-docs", type=click.IntRange(min=1), default=200, show_default=True,
              help="Documents explained word by word (all of --data are listed).")
@click.option("--title", default=None, help="Title of the page.")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Encoding of a CSV/TSV file.")
def report(model_dir, out, data, text_column, label_column, id_column, max_docs, title,
           encoding):
    """Write a self-contained, interactive HTML report of the model in MODEL_DIR.

    An intertopic map with relevance-ranked words, the class x topic
    coefficients, convergence with advice, and with --data the documents
    (searchable, by id, with the words that pushed them to their class
    highlighted); with --label also the top confusions and calibration.  The
    file needs no network.

    \b
    Example:
      dolda report model/ --out report.html --data test.csv --text review --label rating --id key
    """
    out = _check_output_file(out, inputs=[(data, "--data file")])
    model, meta = _load_model(model_dir)
    texts = y = X = ids = None
    if data is not None:
        text_column = text_column or meta.get("text_column")
        if text_column is None:
            raise click.UsageError("the model does not record its text column; pass --text COL")
        model_cov, categorical = _model_covariates(model)
        frame = read_table(data, encoding,
                           text_columns=[c for c in model_cov if c in categorical]
                           + ([id_column] if id_column is not None else []),
                           label_columns=[label_column] if label_column is not None else [])
        _require_columns(frame, [text_column], data, "--text")
        _require_columns(frame, model_cov, data)
        texts = _texts(frame, text_column, data)
        if label_column is not None:
            _require_columns(frame, [label_column], data, "--label")
            import numpy as np

            # labels are read as text; a model fitted on numbers names its classes by them
            y = np.asarray(align_labels(_labels(frame, label_column, data),
                                        model.classes_)[0], dtype=object)
        if id_column is not None:
            _require_columns(frame, [id_column], data, "--id")
            ids = frame[id_column].astype(str).tolist()
            if len(set(ids)) != len(ids):
                raise click.BadParameter(f"column {id_column!r} of {data} has repeated ids",
                                         param_hint="'--id'")
        if model_cov:
            X = frame[list(model_cov)].copy()
    elif label_column is not None or id_column is not None:
        raise click.UsageError("--label and --id need --data")
    from ..interpret.report import make_report

    with _echo_warnings(), _library_errors():
        make_report(model, out, texts=texts, y=y, X=X, max_documents=max_docs, ids=ids,
                    title=title)
    click.echo(f"Report written to {out}")
