"""``dolda predict``: classes and probabilities for every row of a table."""

from __future__ import annotations

from pathlib import Path

import click

from ._common import _echo_warnings, _library_errors, warn_inert
from ._models import read_model_documents, _load_model
from ._options import _DATA, _data_options, _MODEL
from ._tables import DATA_FORMATS
from ._group import main
from ._output import check_out, emit, is_stdout, write_table


@main.command(epilog=DATA_FORMATS)
@click.argument("model_dir", type=_MODEL)
@click.argument("data", type=_DATA)
@_data_options(for_predict=True)
@click.option("--id", "id_column", default=None, metavar="COL",
              help="Column copied to the output to identify the rows  [default: the row "
                   "number, as column 'row'].")
@click.option("--out", "-o", required=True, type=click.Path(path_type=Path),
              help="Output table (.csv, .tsv or .parquet; - writes CSV to standard output).")
@click.option("--raw-csv", is_flag=True, default=False,
              help="Write CSV/TSV text cells exactly, without the ' that otherwise prefixes a "
                   "cell starting with =, +, -, @, tab or CR (so that a spreadsheet does not "
                   "run it as a formula; numbers are never prefixed).")
def predict(model_dir, data, text_column, covariates, encoding, id_column, out, raw_csv):
    """Predict the class of every document in DATA with the model in MODEL_DIR.

    Writes one row per document: the row number (or --id), the predicted class
    and one probability column p_<class> per class.  --text and --covariates
    default to the columns the model was fitted on.

    \b
    Example:
      dolda predict model/ new.csv --out predictions.csv
    """
    import pandas as pd

    out = check_out(out, ("table",), inputs=[(data, "DATA file")])
    if not is_stdout(out) and Path(out).suffix.lower() in (".parquet", ".pq", ".json"):
        warn_inert(click.get_current_context(silent=True), "raw_csv", "--raw-csv",
                   f"when writing {Path(out).suffix.lower()}, which is always exact")
    model, meta = _load_model(model_dir)
    text_column = text_column or meta.get("text_column")
    if text_column is None:
        raise click.UsageError("the model does not record its text column; pass --text COL")
    frame, texts, X = read_model_documents(
        model, data, text_column, covariates, encoding,
        required=[(id_column, "--id")] if id_column is not None else [],
        as_text=[id_column])
    with _echo_warnings(), _library_errors():
        proba = model.predict_proba(texts, covariates=X)
    classes = list(model.classes_)
    result = pd.DataFrame({id_column: frame[id_column].to_numpy()} if id_column
                          else {"row": range(len(texts))})
    result["predicted"] = [classes[i] for i in proba.argmax(axis=1)]
    for j, label in enumerate(classes):
        result[f"p_{label}"] = proba[:, j]
    write_table(result, out, formula_guard=not raw_csv)
    counts = result["predicted"].value_counts()
    summary = ", ".join(f"{label}: {counts.get(label, 0)}" for label in classes)
    where = "standard output" if is_stdout(out) else out
    emit(out, f"Predicted {len(result)} documents ({summary}); written to {where}")
