"""The schema of DOLDA chain checkpoints (``dolda.io.load_checkpoint``), on the header alone.

Split from :mod:`dolda.io.schema` (same helpers, same one-line :class:`SchemaError`s);
the arrays' values are checked by :func:`dolda.io.schema_values.check_values`.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from .schema import (DRAWS, WORD_DRAWS, WORD_ROWS, _dict, _dirichlet_alpha, _fail, _int, _key,
                     _positive_finite, _scale_axis, _Shapes, _word_rows)

#: The header field holding the checksum of a checkpoint's header (with its arrays' one).
HEADER_SHA256 = "header_sha256"


def header_digest(header: dict) -> str:
    """SHA-256 of ``header`` without its own :data:`HEADER_SHA256`, in canonical JSON:
    it covers ``arrays_sha256`` and so the whole checkpoint."""
    body = {k: v for k, v in header.items() if k != HEADER_SHA256}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def check_header_digest(header: dict) -> None:
    """A checkpoint's header is the one its writer wrote (an edited iteration counter or
    fingerprint would otherwise be resumed as if it were)."""
    meta = header.get("meta")
    stored = header.get(HEADER_SHA256)
    if stored is None:
        if isinstance(meta, dict) and ("fingerprint" in meta or "chains" in meta):
            _fail(f"the checkpoint lacks its header checksum {HEADER_SHA256!r}")
        return
    if not isinstance(stored, str) or stored != header_digest(header):
        _fail("checksum mismatch of the checkpoint's header: it was modified after saving")


def _chains_manifest(meta: dict, manifest: dict) -> dict:
    """The manifest of a several-chain checkpoint (:mod:`dolda.models.dolda.resume`)."""
    n = _int(meta["chains"], "meta.chains", 2, 2**20)
    n_iter = _int(_key(meta, "n_iter", "meta"), "meta.n_iter", 1, 2**40)
    done = _key(meta, "chain_iterations", "meta")
    if not isinstance(done, list) or len(done) != n:
        _fail(f"meta.chain_iterations must be a list of {n} iterations")
    for k in done:
        _int(k, "meta.chain_iterations[]", 0, n_iter + 1)
    _int(_key(meta, "next_iteration", "meta"), "meta.next_iteration", 0, n_iter + 1)
    _dict(_key(meta, "fingerprint", "meta"), "meta.fingerprint")
    _dict(_key(meta, "params", "meta"), "meta.params")
    if manifest:
        _fail(f"a several-chain checkpoint's manifest holds no arrays, got {sorted(manifest)}")
    return {}


def check_checkpoint_manifest(meta: dict, manifest: dict) -> dict:
    """A DOLDA chain checkpoint (meta with ``next_iteration``), or the manifest of a
    several-chain one (meta with ``chains``); others are free-form."""
    if "chains" in meta:
        return _chains_manifest(meta, manifest)
    if "next_iteration" not in meta:
        return {}
    n_iter = _int(_key(meta, "n_iter", "meta"), "meta.n_iter", 1, 2**40)
    _int(meta["next_iteration"], "meta.next_iteration", 0, n_iter + 1)
    _int(_key(meta, "seed", "meta"), "meta.seed", 0, 2**64)
    n_tokens = _int(_key(meta, "n_tokens", "meta"), "meta.n_tokens", 0, 2**48)
    n_docs = _int(_key(meta, "n_docs", "meta"), "meta.n_docs", 0, 2**40)
    _dict(_key(meta, "params", "meta"), "meta.params")
    if "fingerprint" in meta:
        _dict(meta["fingerprint"], "meta.fingerprint")
    shapes = _Shapes(manifest)
    shapes.need("z", [n_tokens], kinds="iu")
    K = shapes.need("ndk", [n_docs, None], kinds="iu")[1]
    if "alpha" in meta:  # the values learned so far (alpha="auto"/"auto_symmetric")
        _dirichlet_alpha(meta["alpha"], "meta.alpha", K)
    if "beta" in meta:
        _positive_finite(meta["beta"], "meta.beta")
    V = shapes.need("phi", [None, K], kinds="f*")[0]
    L, P = shapes.need("eta", [None, None])
    if P < K + 1:
        _fail(f"array 'eta' has {P} columns, fewer than the {K} topics plus the intercept")
    for name in ("lam2", "nu"):
        shapes.need(name, [L, P])
    blocks = _scale_axis(manifest, "tau2", 2)  # [G] with per-block global scales
    for name in ("tau2", "xi"):
        shapes.need(name, [L] + blocks)
    n_w = 0  # the compact word block (dolda.models.dolda.kept): its width
    if "eta_word_draws" in manifest:
        spec = manifest["eta_word_draws"]["shape"]
        n_w = spec[2] if len(spec) == 3 else -1
        if not 1 <= n_w <= P - K - 1:
            _fail(f"array 'eta_word_draws' has shape {spec}, expected [S, {L}, n] with "
                  f"1 <= n <= {P - K - 1}")
    S = shapes.need("eta_draws", [None, L, P - n_w], kinds=DRAWS)[0]
    if n_w:
        shapes.need("eta_word_draws", [S, L, n_w], kinds=WORD_DRAWS)
        shapes.need("lambda_word_sums", [2, L, n_w], optional=True)
        _word_rows(shapes, manifest, S, L)
    else:
        for name in ("lambda_word_sums",) + WORD_ROWS:
            if name in manifest:
                _fail(f"array {name!r} is stored without 'eta_word_draws'")
    shapes.need("tau_draws", [S, L] + blocks, kinds=DRAWS, optional=True)
    shapes.need("lambda_draws", [S, L, P - n_w], kinds=DRAWS, optional=True)
    shapes.need("loglik", [n_iter, 2])
    # the running mean of Phi (dolda.sampler.phi_mean.PhiMean): word-major CSR + topic part
    shapes.need("phi_mean_ptr", [V + 1], kinds="iu")
    shapes.need("phi_mean_topic", [K])
    shapes.need("phi_mean_draws", [1], kinds="iu")
    nnz = []
    for name, kinds in (("phi_mean_topics", "iu"), ("phi_mean_values", "f")):
        spec = manifest.get(name)
        if spec is None:
            _fail(f"the array {name!r} is missing")
        if len(spec["shape"]) != 1 or np.dtype(spec["dtype"]).kind not in kinds:
            _fail(f"array {name!r} has shape {spec['shape']} and dtype {spec['dtype']}, "
                  "expected one dimension of " + ("integers" if kinds == "iu" else "floats"))
        nnz.append(spec["shape"][0])
    if nnz[0] != nnz[1]:
        _fail(f"arrays 'phi_mean_topics' and 'phi_mean_values' differ in length ({nnz[0]} "
              f"and {nnz[1]})")
    return {"n_topics": K, "n_tokens": n_tokens, "n_docs": n_docs}
