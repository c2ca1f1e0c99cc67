"""The second pass of the model-file schema (:mod:`dolda.io.schema`): the arrays' values.

Finiteness and bounds of parameters and draws, probability rows of ``phi``, topics of
``z``; the first pass (:func:`dolda.io.schema.check_manifest`) has checked the names,
dtypes and shapes from the header alone.  Every violation raises
:class:`dolda.io.schema.SchemaError` with a one-line message naming the array.
"""

from __future__ import annotations

import numpy as np

from .schema import MAX_COEF, SIMPLEX_TOL, _fail


# ------------------------------------------------------------------ values
def _finite(arrays, name, lo=None, positive=False):
    a = arrays.get(name)
    if a is None:
        return
    if not np.all(np.isfinite(a)):
        _fail(f"array {name!r} has NaN or infinite values")
    if lo is not None and a.size and (a.min() <= lo if positive else a.min() < lo):
        _fail(f"array {name!r} has values {'<=' if positive else '<'} {lo}")


def _simplex_rows(arrays, name, axis):
    a = arrays[name]
    _finite(arrays, name, lo=0.0)
    sums = a.sum(axis=axis, dtype=np.float64)
    tol = SIMPLEX_TOL if a.dtype == np.float64 else 1e3 * SIMPLEX_TOL
    if a.size and not np.allclose(sums, 1.0, rtol=0, atol=tol):
        _fail(f"array {name!r} is not a set of probability distributions (sums "
              f"{sums.min():.6g} .. {sums.max():.6g}, expected 1)")


def _every_word_emitted(arrays, name):
    """No word column of a model's ``phi`` (K, V) is zero in every topic (after
    :func:`_simplex_rows`: the values are >= 0).  A fitted model's phi is the posterior
    mean ``(beta + n_{k,w}) / (V beta + n_k)``, positive everywhere; a zero column would
    make the prediction sweep's conditional of that word 0/0.  Not for a checkpoint,
    whose phi is a Dirichlet or Pólya-urn draw: exact zeros are legitimate there."""
    a = arrays[name]
    if not a.size:
        return
    empty = np.flatnonzero(a.max(axis=0) <= 0)  # a reduction: no K x V temporary
    if len(empty):
        more = f" ({len(empty)} such words)" if len(empty) > 1 else ""
        _fail(f"array {name!r} is zero in every topic for word {empty[0]}{more}: no topic "
              "emits it, and a fitted model's phi is positive everywhere")


def check_values(tag: str, facts: dict, arrays: dict, checkpoint=False) -> None:
    """Second pass, on the arrays: finiteness and bounds of parameters and draws."""
    if checkpoint and not facts:
        return  # a free-form checkpoint (not a DOLDA chain): its writer checks it
    if not checkpoint and tag not in ("dolda.DOLDA", "dolda.DOProbit", "dolda.LDA"):
        return
    for name in ("eta_draws", "eta_word_draws", "coef", "intercept", "eta", "nu",
                 "phi_mean_values", "phi_mean_topic"):
        _finite(arrays, name)
    for name in ("eta_draws", "eta_word_draws", "coef", "intercept", "eta"):
        if name in arrays and arrays[name].size and float(np.abs(arrays[name]).max()) > MAX_COEF:
            _fail(f"array {name!r} has coefficients beyond {MAX_COEF:.0e} in magnitude; "
                  "no fit produces those")
    for name in ("tau2", "xi", "lam2"):
        _finite(arrays, name, lo=0.0, positive=True)
    # a checkpoint's draw arrays are zero beyond the draws made so far
    _finite(arrays, "tau_draws", lo=0.0, positive=not checkpoint)
    _finite(arrays, "lambda_draws", lo=0.0)
    # the word columns' local scales: summaries (models), window sums (checkpoints)
    _finite(arrays, "lambda_word_stats", lo=0.0)
    _finite(arrays, "lambda_word_sums", lo=0.0)
    _finite(arrays, "lambda_word_rows", lo=0.0)
    rows = arrays.get("lambda_word_row_ids")
    if rows is not None and rows.size:
        n_docs = facts.get("n_docs")
        if rows.min() < 0 or np.any(np.diff(rows) <= 0) or (
                n_docs is not None and rows.max() >= n_docs):
            _fail("array 'lambda_word_row_ids' must hold increasing training rows in "
                  f"[0, {n_docs if n_docs is not None else 'D'})")
    for name in ("doc_topic_counts", "ndk"):
        _finite(arrays, name, lo=0)
    stacking = arrays.get("stacking")
    if stacking is not None and stacking.size:
        # [b, W]: W finite; b finite, or -inf for a class absent from the training labels
        if not (np.all(np.isfinite(stacking[:, 1:])) and not np.any(np.isnan(stacking[:, 0]))
                and not np.any(np.isposinf(stacking[:, 0]))):
            _fail("array 'stacking' has NaN or infinite values")
        if np.abs(stacking[:, 1:]).max() > MAX_COEF:
            _fail(f"array 'stacking' has weights beyond {MAX_COEF:.0e} in magnitude")
        if not np.any(np.isfinite(stacking[:, 0])):  # every class's probability 0/0
            _fail("array 'stacking' gives no class a finite intercept (column 0 is -inf "
                  "throughout)")
    pointwise = arrays.get("training_loglik")
    if pointwise is not None and not np.all(pointwise <= 0):  # NaN fails too
        _fail("array 'training_loglik' must hold log-probabilities (<= 0, not NaN)")
    if "loglik" in arrays and np.any(np.isposinf(arrays["loglik"])):
        _fail("array 'loglik' has +inf values")
    if "phi" in arrays:
        _simplex_rows(arrays, "phi", axis=0 if checkpoint else 1)
        if not checkpoint:
            _every_word_emitted(arrays, "phi")
            if arrays["phi"].size and arrays["phi"].min() <= 0:  # a reduction, no temporary
                _fail("array 'phi' has values <= 0, and a fitted model's phi is positive "
                      "everywhere (the posterior mean of every topic's word distribution)")
    if "chain_phi" in arrays:  # several chains' own Phi: each as a fitted model's phi
        _simplex_rows(arrays, "chain_phi", axis=2)
        if arrays["chain_phi"].size and arrays["chain_phi"].min() <= 0:
            _fail("array 'chain_phi' has values <= 0, and a fitted model's phi is positive "
                  "everywhere")
    weights = arrays.get("chain_weights")
    if weights is not None:
        _simplex_rows({"chain_weights": weights[None, :]}, "chain_weights", axis=1)
    z = arrays.get("z")
    K = facts.get("n_topics")
    if z is not None and K is not None and z.size and (z.min() < 0 or z.max() >= K):
        _fail(f"array 'z' has topics outside [0, {K})")
    if checkpoint and "ndk" in arrays and facts:
        if int(arrays["ndk"].sum()) != facts["n_tokens"]:
            _fail("array 'ndk' does not count every token of 'z' once")
