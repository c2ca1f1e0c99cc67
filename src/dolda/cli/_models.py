"""Saving and loading models on the command line: a model directory with the CLI's own
``cli.json`` (the text, label and covariate columns it was fitted on), checked as
untrusted input on load, and the documents of a table read as a fitted model needs them.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from ._common import _columns_hint
from ._tables import _require_columns, _texts, read_table

#: Model-directory file holding what the command line needs besides the model:
#: the names of the text and label columns it was fitted on.
CLI_META_FILE = "cli.json"


def _save_model(model, path: Path, cli_meta: dict) -> None:
    """Save ``model`` plus ``cli.json`` as one atomic directory at ``path``.

    ``dolda.io.save_model`` writes both into a temporary directory beside
    ``path`` and renames it into place (an existing model directory is moved
    aside first and deleted afterwards; see ``docs/FORMAT.md``).
    """
    from ..io import save_model

    data = (json.dumps(cli_meta, indent=2) + "\n").encode("utf-8")
    save_model(model, path, overwrite=True, extra_files={CLI_META_FILE: data})


#: Fields of ``cli.json`` and their types (all optional).
CLI_META_FIELDS = {"text_column": str, "label_column": str, "covariates": list,
                   "data": str, "n_docs": int}


def _check_cli_meta(meta, meta_path, model) -> dict:
    """``cli.json`` is untrusted input too: a JSON object with the documented fields."""
    if not isinstance(meta, dict):
        raise click.ClickException(f"{meta_path} is not a JSON object")
    for key, kind in CLI_META_FIELDS.items():
        value = meta.get(key)
        if value is None:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            raise click.ClickException(f"{meta_path}: field {key!r} must be a "
                                       f"{kind.__name__}, got {type(value).__name__}")
    covariates = meta.get("covariates") or []
    if not all(isinstance(c, str) for c in covariates):
        raise click.ClickException(f"{meta_path}: field 'covariates' must be a list of "
                                   "column names")
    model_cov, _ = _model_covariates(model)
    if covariates and len(covariates) != len(model_cov):
        raise click.ClickException(f"{meta_path}: lists {len(covariates)} covariate(s) but "
                                   f"the model has {len(model_cov)}")
    return meta


def _load_model(path):
    """A fitted DOLDA and its CLI metadata, or a one-line error."""
    from ..io import atomic as _atomic
    from ..io import ModelFormatError, _is_complete, load
    from ..models.dolda.estimator import DOLDA

    path = Path(path)
    try:
        model = load(path)
    except ModelFormatError as exc:
        message = " ".join(str(exc).split())
        raise click.ClickException(f"{path} is not a dolda model: {message}") from None
    if not isinstance(model, DOLDA):
        raise click.ClickException(f"{path} holds a {type(model).__name__}, not a DOLDA model")
    meta = {}
    meta_path = _atomic.readable_path(path, _is_complete) / CLI_META_FILE
    if meta_path.is_symlink():
        raise click.ClickException(f"{meta_path} is a link; refusing to read it")
    if meta_path.is_file():
        if meta_path.stat().st_size > 1 << 20:
            raise click.ClickException(f"{meta_path} is larger than 1 MiB; not a dolda file")
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"),
                              parse_constant=_refuse_json_constant)
        except (OSError, ValueError, RecursionError) as exc:
            message = " ".join(str(exc).split())
            raise click.ClickException(f"{meta_path} is unreadable ({message})") from None
        meta = _check_cli_meta(meta, meta_path, model)
    return model, meta


def _refuse_json_constant(name):
    raise ValueError(f"{name} is not allowed (strict JSON)")


def _model_covariates(model) -> tuple[list[str], set[str]]:
    """The covariate columns a model was fitted on and which of them are categorical."""
    encoder = getattr(model, "covariate_encoder_", None)
    if not getattr(model, "_has_covariates", False) or encoder is None:
        return [], set()
    return ([str(c) for c in encoder.feature_names_in_],
            {str(c) for c in getattr(encoder, "categories_", {})})


def read_model_documents(model, data, text_column, covariates, encoding, required=(),
                         as_text=(), labels=()):
    """Read the documents of DATA that a fitted model predicts: its text column and the
    columns holding its covariates (``covariates`` renames them: DATA's column for each of
    the model's covariates, in the model's order), checked before any work.

    ``required`` are further ``(column, option)`` pairs that must exist (e.g. ``--label``);
    ``as_text`` columns are read as written (an ``--id`` of ``007`` stays ``007``);
    ``labels`` columns as the strings they are (see :func:`read_table`).
    Returns ``(frame, texts, X)`` with ``X`` None for a model without covariates.
    """
    model_cov, categorical = _model_covariates(model)
    if covariates and len(covariates) != len(model_cov):
        raise click.BadParameter(
            f"the model has {len(model_cov)} covariate(s) ({', '.join(model_cov) or 'none'}), "
            f"got {len(covariates)} column(s)", param_hint="'--covariates'")
    source = covariates or model_cov  # columns of DATA holding the model's covariates
    frame = read_table(data, encoding,
                       text_columns=[s for s, m in zip(source, model_cov) if m in categorical]
                       + [c for c in as_text if c is not None],
                       label_columns=[c for c in labels if c is not None])
    _require_columns(frame, [text_column], data, "--text")
    for column, option in required:
        _require_columns(frame, [column], data, option)
    for col, name in zip(source, model_cov):
        if col not in frame.columns:
            used = "" if col == name else f" (for the model's covariate {name!r})"
            raise click.ClickException(
                f"covariate column {col!r}{used} used by the model is missing from {data}; "
                f"its columns are {_columns_hint(frame)}")
    texts = _texts(frame, text_column, data)
    X = None
    if model_cov:
        X = frame[list(source)].copy()
        X.columns = model_cov
    return frame, texts, X

