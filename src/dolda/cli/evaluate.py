"""``dolda evaluate``: cross-validated accuracy, macro-F1 and confusion matrix."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ._common import _echo_warnings, _library_errors, _plain, _table
from ._options import (
    _check_burn_in,
    _check_fold_seed,
    _DATA,
    _data_options,
    _estimator,
    _model_options,
)
from ._tables import DATA_FORMATS, _read_training_data
from ._group import main
from ._sections import SectionedCommand
from ._output import check_out, emit, is_stdout, write_json


@main.command(cls=SectionedCommand, epilog=DATA_FORMATS)
@click.argument("data", type=_DATA)
@_data_options()
@click.option("--label", "label_column", required=True, metavar="COL",
              help="Column holding the class labels.")
@click.option("--folds", type=click.IntRange(min=2), default=5, show_default=True,
              help="Number of stratified cross-validation folds.")
@_model_options
@click.option("--out", "-o", type=click.Path(path_type=Path), default=None,
              help="Also write the results as JSON to this file (.json; - for standard "
                   "output, the summary then goes to standard error).")
def evaluate(data, text_column, label_column, covariates, encoding, folds, out, **opts):
    """Cross-validate DOLDA on DATA: accuracy, macro-F1 and the confusion matrix.

    The documents are split into --folds stratified folds; each fold is predicted
    by a model fitted on the others, and the scores are computed on these
    out-of-fold predictions.

    \b
    Example:
      dolda evaluate reviews.csv --text review --label rating --folds 5 --topics 30 \\
          --out cv.json
    """
    import numpy as np
    import pandas as pd
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score
    from sklearn.model_selection import StratifiedKFold

    _check_burn_in(opts)
    _check_fold_seed(opts["seed"])
    out = check_out(out, ("json",), inputs=[(data, "DATA file")])
    frame, texts, y, X = _read_training_data(data, text_column, label_column, covariates,
                                             encoding)
    labels, counts = np.unique(y.astype(str) if y.dtype == object else y, return_counts=True)
    if counts.min() < folds:
        raise click.BadParameter(
            f"the smallest class ({labels[counts.argmin()]!r}) has {counts.min()} documents, "
            f"fewer than --folds {folds}", param_hint="'--folds'")
    texts = np.asarray(texts, dtype=object)
    splitter = StratifiedKFold(n_splits=folds, shuffle=True, random_state=opts["seed"])
    predicted = np.empty(len(y), dtype=object)
    per_fold = []
    tic = time.perf_counter()
    for fold, (train, test) in enumerate(splitter.split(texts, y)):
        model = _estimator(opts)
        with _echo_warnings(), _library_errors(f"fold {fold + 1}: "):
            model.fit(list(texts[train]), y[train],
                      covariates=None if X is None else X.iloc[train].reset_index(drop=True))
            pred = model.predict(
                list(texts[test]),
                covariates=None if X is None else X.iloc[test].reset_index(drop=True))
        predicted[test] = pred
        acc = accuracy_score(list(y[test]), list(pred))
        f1 = f1_score(list(y[test]), list(pred), average="macro")
        per_fold.append({"fold": fold + 1, "n_test": int(len(test)), "accuracy": float(acc),
                         "macro_f1": float(f1)})
        if not opts["quiet"]:
            emit(out, f"fold {fold + 1}/{folds}: accuracy {acc:.3f}, macro-F1 {f1:.3f}")
    seconds = time.perf_counter() - tic
    classes = list(pd.unique(pd.Series(y)).tolist())
    classes.sort(key=lambda c: (str(type(c)), c))
    y_true, y_pred = list(y), list(predicted)
    accuracy = float(accuracy_score(y_true, y_pred))
    macro_f1 = float(f1_score(y_true, y_pred, average="macro", labels=classes))
    cm = confusion_matrix(y_true, y_pred, labels=classes)
    fold_table = pd.DataFrame(per_fold).set_index("fold")
    fold_table.loc["all"] = [len(y), accuracy, macro_f1]
    fold_table["n_test"] = fold_table["n_test"].astype(int)
    emit(out, f"{folds}-fold cross-validation of DOLDA ({opts['n_topics']} topics, "
               f"{opts['n_iter']} iterations) on {len(y)} documents, {seconds:.1f} s")
    emit(out, _table(fold_table))
    emit(out, f"accuracy {accuracy:.3f}  macro-F1 {macro_f1:.3f}")
    emit(out, "confusion matrix (rows: true class, columns: predicted class)")
    cm_frame = pd.DataFrame(cm, index=pd.Index([str(c) for c in classes], name="true"),
                            columns=[str(c) for c in classes])
    emit(out, cm_frame.to_string())
    if out is not None:
        result = {
            "data": str(data), "n_docs": int(len(y)), "folds": folds,
            "accuracy": accuracy, "macro_f1": macro_f1, "per_fold": per_fold,
            "confusion_matrix": {"labels": [_plain(c) for c in classes],
                                 "matrix": cm.tolist()},
            "options": {k: v for k, v in opts.items() if k != "quiet"},
            "text_column": text_column, "label_column": label_column,
            "covariates": list(covariates), "seconds": seconds,
        }
        write_json(result, out)
        if not is_stdout(out):
            click.echo(f"Results written to {out}")
