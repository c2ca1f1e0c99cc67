"""``dolda score``: accuracy, macro-F1, log loss, Brier score, calibration errors (equal-width
and equal-mass ECE with its bootstrap interval, in a plain sentence too) and confusion matrix
of a saved model on a labelled table."""

from __future__ import annotations

from pathlib import Path

import click

from ..utils.escape import terminal
from ._common import _echo_warnings, _library_errors
from ._models import read_model_documents, _load_model
from ._options import _DATA, _data_options, _MODEL
from ._tables import DATA_FORMATS, refuse_missing_labels
from ._group import main
from ._metrics import align_labels, classification_scores
from ._output import check_out, emit, write_json


@main.command(epilog=DATA_FORMATS)
@click.argument("model_dir", type=_MODEL)
@click.argument("data", type=_DATA)
@_data_options(for_predict=True)
@click.option("--label", "label_column", default=None, metavar="COL",
              help="Column holding the true classes  [default: the model's label column].")
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Also write the scores as JSON (.json; - for standard output, the summary "
                   "then goes to standard error).")
def score(model_dir, data, text_column, covariates, encoding, label_column, out):
    """Score the model in MODEL_DIR on the labelled documents in DATA.

    Predicts every row and compares with the true class: accuracy, macro-F1,
    log loss and Brier score (of the predicted probabilities), the expected
    calibration error (15 equal-width bins; 15 equal-mass bins with a bootstrap
    90% interval), a sentence saying how often the model was right when it said
    a given probability, and the confusion matrix.  --text,
    --label and --covariates default to the columns the model was fitted on.

    \b
    Example:
      dolda score model/ test.csv --text review --label rating --out scores.json
    """
    import numpy as np
    import pandas as pd

    from ..posterior.calibration import describe_proba, proba_rule

    out = check_out(out, ("json",), inputs=[(data, "DATA file")])
    model, meta = _load_model(model_dir)
    text_column = text_column or meta.get("text_column")
    label_column = label_column or meta.get("label_column")
    if text_column is None:
        raise click.UsageError("the model does not record its text column; pass --text COL")
    if label_column is None:
        raise click.UsageError("the model does not record its label column; pass --label COL")
    frame, texts, X = read_model_documents(model, data, text_column, covariates, encoding,
                                           required=[(label_column, "--label")],
                                           labels=[label_column])
    labels = frame[label_column]
    missing = labels.isna() | labels.astype(str).str.strip().eq("")
    refuse_missing_labels(missing.to_numpy(), label_column, data)
    y, unknown = align_labels(labels.to_numpy(), model.classes_)
    if unknown:
        raise click.ClickException(
            f"label column {label_column!r} holds {unknown[0]!r}, which is not a class of the "
            f"model (its classes: {', '.join(str(c) for c in model.classes_)})")
    with _echo_warnings(), _library_errors():
        proba = model.predict_proba(texts, covariates=X)
    scores = classification_scores(y, proba, model.classes_)
    from ..posterior.reliability import calibration_figures, plain_sentence

    y_index = _class_columns(y, model.classes_)
    figures = calibration_figures(proba, y_index)
    sentence = plain_sentence(proba, y_index, "these rows")
    scores.update(brier=figures["brier"], ece=figures["ece"],
                  ece_equal_mass=figures["ece_equal_mass"],
                  ece_equal_mass_interval=[figures["ece_equal_mass_low"],
                                           figures["ece_equal_mass_high"]],
                  calibration_sentence=sentence)
    classes = scores["confusion_matrix"]["labels"]
    rule, kind = proba_rule(model)
    emit(out, f"Scored {scores['n_docs']} documents of {data} with the model in {model_dir}")
    emit(out, f"  accuracy  {scores['accuracy']:.3f}")
    emit(out, f"  macro-F1  {scores['macro_f1']:.3f}")
    emit(out, f"  log loss  {scores['log_loss']:.3f}")
    emit(out, f"  Brier     {scores['brier']:.3f}")
    emit(out, f"  ECE       {scores['ece']:.3f} (15 equal-width bins); "
              f"{scores['ece_equal_mass']:.3f} (15 equal-mass bins, bootstrap 90% "
              f"{scores['ece_equal_mass_interval'][0]:.3f}-"
              f"{scores['ece_equal_mass_interval'][1]:.3f})")
    emit(out, f"  {sentence}")
    emit(out, f"  probabilities {describe_proba(model)}")
    emit(out, "confusion matrix (rows: true class, columns: predicted class)")
    cm = pd.DataFrame(scores["confusion_matrix"]["matrix"],
                      index=pd.Index([terminal(c) for c in classes], name="true"),
                      columns=[terminal(c) for c in classes])
    emit(out, cm.to_string())
    if out is not None:
        write_json({"model": str(model_dir), "data": str(data), "text_column": text_column,
                    "label_column": label_column, "proba": rule, "calibration_map": kind,
                    **scores}, out)
        if str(out) != "-":
            click.echo(f"Scores written to {out}")


def _class_columns(y, classes):
    """Columns of ``classes`` of the labels ``y`` (values of ``classes``, :func:`align_labels`)."""
    import numpy as np

    index = {c: i for i, c in enumerate(np.asarray(classes).tolist())}
    return np.array([index[v] for v in y], dtype=np.int64)
