"""What makes a checkpoint resumable by a fit: the chain's fingerprint, and the manifest of
a several-chain checkpoint.

A resumed chain must be the chain that was interrupted: the same documents (tokens,
vocabulary, labels, covariates) and every option that shapes its draws.  Each checkpoint
stores a *fingerprint* (:func:`fingerprint`): SHA-256 digests of those parts and the
options themselves, covered with the rest of the header by the checkpoint's checksum
(:mod:`dolda.io`).  :func:`check_resume` compares it with the fit at hand before any
iteration runs and refuses in one line naming what differs.

A fit of several chains writes ``chain<c>/`` per chain (each replaced atomically) and a
manifest, the directory's own ``model.json`` (type ``dolda.Checkpoint``, meta
``chains``): the directory is then resumable as one checkpoint, by ``fit(...,
resume=dir)`` and ``dolda fit --resume dir``, whatever moment the fit was killed at.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np
import scipy.sparse as sp

from .options import flat_params

#: Parameters that do not shape a chain's draws: they may differ between an interrupted
#: fit and the fit that resumes it (where the work runs, what is saved when, and what is
#: done with the draws once the chain has ended).
FREE_PARAMS = frozenset({
    "backend", "client", "checkpoint", "checkpoint_every", "n_jobs", "progress",
    "phi_transport", "snapshot_every", "predict_sweeps", "predict_burn_in", "proba"})
#: The schedule: compared as the rest for a plain resume; an extension (another
#: ``n_iter``) is checked by :func:`dolda.models.dolda.extend.check_extension`.
SCHEDULE_PARAMS = frozenset({"n_iter", "burn_in", "phi_draws"})
#: The parameters that define the posterior's prior (kept for callers).
RESUME_PRIOR_PARAMS = ("prior", "prior_variance", "slab_scale", "slab_blocks",
                       "global_scales", "word_prior", "word_prior_variance")
#: The parts of the data a fingerprint covers, in the order they are reported.
DATA_PARTS = ("vocabulary", "tokens", "labels", "covariates")


def _digest(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape};".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _text_digest(values) -> str:
    return hashlib.sha256(json.dumps(list(values), ensure_ascii=False).encode()).hexdigest()


def data_fingerprint(model, data) -> dict:
    """The digests of the chain's data: ``data`` (:class:`dolda.sampler.gibbs_iteration.TopicData`)
    and the fitted vocabulary and classes of ``model``."""
    from ...io import encode_labels

    X = data.X
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        covariates = _digest(np.asarray(X.shape), X.indptr, X.indices, X.data)
    else:
        covariates = _digest(np.asarray(X, dtype=np.float64))
    words = model.vocabulary_.words
    return {
        "vocabulary": _text_digest(words), "n_words": int(len(words)),
        "tokens": _digest(np.asarray(data.tokens, np.int64), np.asarray(data.doc_ptr, np.int64)),
        "n_tokens": int(len(data.tokens)), "n_docs": int(len(data.y)),
        "labels": hashlib.sha256((json.dumps(encode_labels(model.classes_)) + _digest(
            np.asarray(data.y, np.int64))).encode()).hexdigest(),
        "covariates": covariates,
    }


def fingerprint(model, data) -> dict:
    """The fingerprint stored in a checkpoint: the data's digests, and ``sha256`` over
    them and the options that shape the chain but the schedule (the options themselves
    are stored beside it, in ``meta.params``)."""
    parts = data_fingerprint(model, data)
    mine = flat_params(model)
    params = {k: _normalised(mine, k) for k in sorted(mine)
              if k not in FREE_PARAMS and k not in SCHEDULE_PARAMS}
    whole = json.dumps({"data": parts, "params": params}, sort_keys=True)
    return {"sha256": hashlib.sha256(whole.encode()).hexdigest(), **parts}


def _normalised(params, name):
    """A parameter as the chain read it (``slab_blocks`` normalised, and moot without a
    slab), JSON-encoded so that a tuple and the list it was saved as compare equal."""
    from ...io.codec import _to_json

    value = params.get(name)
    if name == "slab_blocks":
        if params.get("slab_scale") is None:
            return None
        from .params import check_slab_blocks

        value = check_slab_blocks(value if value is not None else "all")
    try:
        return _to_json(value, name)
    except TypeError:
        return None  # not JSON: saved as None (dolda.io.encode_params)


def _differing_option(model, meta, n_iter):
    from ... import io

    saved = io.params_as_saved(type(model), meta.get("params", {}))
    mine = flat_params(model)
    dropped = set(meta.get("params", {}).get("__dropped__", ()))
    for name in sorted(mine):
        if name in FREE_PARAMS or name in dropped or name not in saved:
            continue
        if name in SCHEDULE_PARAMS and int(meta.get("n_iter", -1)) != n_iter:
            continue  # an extension: dolda.models.dolda.extend checks the schedule
        if _normalised(saved, name) != _normalised(mine, name):
            return (f"the option {name} differs: the checkpoint's chain has "
                    f"{name}={saved[name]!r}, this fit {name}={mine[name]!r}; resume with "
                    "the options of the interrupted fit")
    return None


def check_resume(model, meta, data, n_iter, where="the checkpoint", mine=None,
                 extension=True):
    """Refuse (one-line ValueError) to resume a checkpoint whose chain is not this fit's:
    another option, other data, or a checkpoint without a fingerprint; a longer
    ``n_iter`` must be a valid extension.  ``mine``: this fit's :func:`fingerprint`, when
    already computed."""
    if "chains" in meta:
        raise ValueError(f"{where} holds {meta['chains']} chains: resume it with "
                         f"n_chains={meta['chains']} (dolda fit --chains {meta['chains']})")
    theirs = meta.get("fingerprint")
    if not isinstance(theirs, dict):
        raise ValueError(f"{where} has no fingerprint of its data and options (written by "
                         "an older dolda), so it cannot be checked against this fit: start "
                         "the fit again")
    message = _differing_option(model, meta, n_iter)
    if message is not None:
        raise ValueError(message)
    mine = fingerprint(model, data) if mine is None else mine
    for part in DATA_PARTS:
        if part == "tokens" and (theirs.get("n_docs") != mine["n_docs"]
                                 or theirs.get("n_tokens") != mine["n_tokens"]):
            raise ValueError(
                f"{where} was written for other data: it has {theirs.get('n_docs')} "
                f"documents and {theirs.get('n_tokens')} tokens, the data given has "
                f"{mine['n_docs']} and {mine['n_tokens']}")
        if theirs.get(part) != mine[part]:
            if part == "vocabulary":
                raise ValueError(f"the vocabulary differs ({mine['n_words']:,} words, "
                                 f"{where} has {theirs.get('n_words'):,})"
                                 if theirs.get("n_words") != mine["n_words"] else
                                 f"the vocabulary differs ({mine['n_words']:,} words, as "
                                 f"many as {where} has, but not the same)")
            what = {"tokens": "the documents' tokens differ", "labels": "the labels differ",
                    "covariates": "the covariates (or word features) differ"}[part]
            raise ValueError(f"{what} from those {where} was written for: resume with the "
                             "data of the interrupted fit")
    if theirs.get("sha256") != mine["sha256"]:
        raise ValueError(f"{where} was written by a fit with other options or data (its "
                         "fingerprint differs): resume with the interrupted fit's")
    if extension and meta.get("n_iter") != n_iter:
        from .extend import check_extension

        check_extension(meta, n_iter, model)


def check_chain_arrays(arr, data, n_topics, where="the checkpoint"):
    """The chain arrays the compiled kernels index fit this data (read past otherwise)."""
    V = int(data.n_words)
    for name, shape in (("phi", (V, n_topics)), ("phi_mean_ptr", (V + 1,)),
                        ("phi_mean_topic", (n_topics,))):
        if name in arr and tuple(arr[name].shape) != shape:
            raise ValueError(f"{where} was written for other data or options: its {name!r} "
                             f"has shape {tuple(arr[name].shape)}, this fit needs {shape}")


# ------------------------------------------------------ several chains: manifest
def manifest_meta(model, n_chains, chain_iterations, n_iter, fingerprint):
    """The meta of a several-chain checkpoint's manifest (``fingerprint``: the fit's
    :func:`fingerprint`)."""
    from ... import io

    done = [int(k) for k in chain_iterations]
    return {"chains": int(n_chains), "chain_dirs": [f"chain{c}" for c in range(n_chains)],
            "chain_iterations": done, "next_iteration": min(done), "n_iter": int(n_iter),
            "params": io.encode_params(flat_params(model)),
            "fingerprint": fingerprint}


def check_manifest(model, meta, data, n_chains, n_iter, where, mine=None):
    """A several-chain checkpoint's manifest belongs to this fit (as :func:`check_resume`)."""
    if "chains" not in meta:
        raise ValueError(f"{where} holds one chain, not {n_chains}: resume it with "
                         "n_chains=1, or start the fit again")
    if int(meta["chains"]) != n_chains:
        raise ValueError(f"the option n_chains differs: {where} holds {meta['chains']} "
                         f"chains, this fit has n_chains={n_chains}")
    # each chain's own checkpoint is checked for an extension, not the manifest's summary
    check_resume(model, {k: v for k, v in meta.items() if k != "chains"}, data, n_iter,
                 where, mine, extension=False)
