"""A fit never writes a model that cannot be loaded.

``dolda.load`` checks every field of a model file (:mod:`dolda.io.schema`); a fit whose
options, vocabulary, covariate encoder or column names fall outside that schema would
end with a model that ``predict`` and ``load`` refuse.  The same checks therefore run in
the fit: on the options before any work (:func:`check_options`), on the fitted inputs
before the chain (:func:`check_inputs`); each refusal is one line naming the option or
the column.
"""

from __future__ import annotations

import re

from .options import flat_params

_WHERE = re.compile(r"^meta\.params[.:]\s*")


def _refuse(exc) -> ValueError:
    message = _WHERE.sub("", " ".join(str(exc).split()))
    return ValueError(f"{message} (a model fitted so could not be loaded again)")


def check_options(model) -> None:
    """The options as the model file will store them pass the load-time schema."""
    from ...io import encode_params
    from ...io import schema

    meta = {"params": encode_params(flat_params(model))}
    try:
        params = schema._params(meta, type(model))
        schema._sweeps(params, "predict_sweeps", "predict_burn_in")
    except schema.SchemaError as exc:
        raise _refuse(exc) from None


def _first_duplicate(names):
    seen = {}
    for j, name in enumerate(names):
        if name in seen:
            return seen[name], j
        seen[name] = j
    return None


_TOPIC = re.compile(r"topic (0|[1-9][0-9]*)")


def _topic_index(name, n_topics: int):
    """``k`` when ``name`` is the name of one of the model's topics, ``topic k``, else None."""
    match = _TOPIC.fullmatch(str(name))
    return int(match.group(1)) if match and int(match.group(1)) < n_topics else None


def check_inputs(model, names, n_topics: int) -> None:
    """The fitted vocabulary, covariate encoder and word features, and the model's column
    ``names`` (intercept, covariates, words, topics) pass the load-time schema."""
    from ...io import schema

    K = int(n_topics)
    cov = getattr(model, "covariate_encoder_", None) if model._has_covariates else None
    wf = getattr(model, "word_features_", None)
    n_cov = 0 if cov is None else len(cov.get_feature_names_out())
    n_wf = 0 if wf is None else len(wf.get_feature_names_out())
    names = list(names)
    kinds = ["the intercept"] + ["a covariate column"] * n_cov + ["a word column"] * n_wf
    kinds += ["a column"] * (len(names) - len(kinds))
    clash = _first_duplicate(names)
    topic = next((j for j, name in enumerate(names) if _topic_index(name, K) is not None), None)
    if clash is not None or topic is not None:
        i, j = clash if clash is not None else (None, topic)
        other = kinds[i] if i is not None else "a topic"
        raise ValueError(f"the model column name {names[j]!r} is given to both {other} and "
                         f"{kinds[j]}: rename that covariate column (or level) so that every "
                         "column of the model has its own name")
    try:
        V = schema._vocabulary({"vocabulary": model.vocabulary_.to_dict()})
        if cov is not None:
            schema._encoder(cov.to_dict())
        if wf is not None:
            schema._word_features(wf.to_dict(), V, list(model.vocabulary_.words))
    except schema.SchemaError as exc:
        raise _refuse(exc) from None
