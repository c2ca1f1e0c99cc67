# size: the model-file schema reads as one list of every field and its bounds; its value checks live in schema_values.py and the checkpoint's in schema_checkpoint.py
"""The schema of model files, checked on load: a model file is untrusted input.

Every field of ``model.json`` and every array of ``arrays.npz`` is checked for
its type, shape, finiteness and bounds, and the shapes against each other and
against the vocabulary, *before* the estimator is rebuilt (the numba kernels
index ``phi`` by word id and topic, so a narrower ``phi`` would make them read
outside the array).  The checks run in two passes: :func:`check_manifest` on
the header alone (before any array is read or allocated), then
:func:`dolda.io.schema_values.check_values` on the arrays.  Every violation raises
:class:`SchemaError` with a one-line message naming the field;
:mod:`dolda.io` turns it into a :class:`dolda.io.ModelFormatError`.

The schema itself is documented in ``docs/FORMAT.md``.
"""

from __future__ import annotations

import math
import numbers
import re

import numpy as np

from ..design.token_pattern import MAX_PATTERN_LENGTH, UnsafePattern as _UnsafePattern
from ..design.token_pattern import check_safe_pattern as _check_safe_pattern

#: Largest ``predict_sweeps`` / ``transform_sweeps`` a model file may ask for
#: (a larger one would make ``predict`` run for hours).
MAX_SWEEPS = 100_000
#: Largest |coefficient| accepted (posterior draws of eta are O(1)-O(100); 1e300
#: would overflow the class probabilities into NaN).
MAX_COEF = 1e12
#: The only dtype strings a manifest may hold: numpy's own spelling (``dtype.str``) of a
#: boolean, integer, float or fixed-width unicode array, e.g. ``"<f8"``, ``"|b1"``, ``"<U12"``.
DTYPE_STRING = re.compile(r"[<>|][biufU][0-9]{1,6}")
#: An object dtype (``"|O"``, ``"O"``): refused with its own message (it would need pickle).
OBJECT_DTYPE_STRING = re.compile(r"[<>|=]?O[0-9]*")
#: Array names in a manifest.
ARRAY_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}\Z")
#: Rows of ``phi`` must sum to one within this tolerance.
SIMPLEX_TOL = 1e-6
#: The dtypes of kept draws (eta, tau, lambda): float32 since dolda stores them so
#: (``dolda.utils.draws``), float64 in files written before; both load as saved.
DRAWS = "f*"
#: The dtype of the kept draws of the word columns' coefficients (``eta_word_draws``,
#: format version 2): float16 only.
WORD_DRAWS = "f2"
INTERCEPT = "(intercept)"
#: Smallest covariate scale and largest |mean| of a standardized column: (x - mean) / scale
#: of a value the fit accepts (|x| <= 1e12, dolda.utils.validation) must stay finite.
MIN_COVARIATE_SCALE = 1e-100
MAX_COVARIATE_MEAN = 1e12
#: Largest idf of a word column (a fit's idf is 1 + log((1 + D) / (1 + df)) <= 1 + log(1 + D)).
MAX_IDF = 1e3


class SchemaError(ValueError):
    """One field of a model file violates the schema."""


# ------------------------------------------------------------ scalar checks
def _fail(message):
    raise SchemaError(message)


def _dict(value, where):
    if not isinstance(value, dict):
        _fail(f"{where} must be a JSON object, got {type(value).__name__}")
    return value


def _key(obj, key, where):
    if key not in obj:
        _fail(f"{where} lacks the required field {key!r}")
    return obj[key]


def _str(value, where, choices=None):
    if not isinstance(value, str):
        _fail(f"{where} must be a string, got {type(value).__name__}")
    if choices is not None and value not in choices:
        _fail(f"{where} must be one of {list(choices)}, got {value!r}")
    return value


def _int(value, where, lo=0, hi=2**64):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        _fail(f"{where} must be an integer, got {value!r}")
    if not lo <= value < hi:
        _fail(f"{where} must be in [{lo}, {hi}), got {value}")
    return int(value)


def _bool(value, where):
    if not isinstance(value, bool):
        _fail(f"{where} must be true or false, got {value!r}")
    return value


def _str_list(value, where, unique=True, length=None):
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        _fail(f"{where} must be a list of strings")
    if unique and len(set(value)) != len(value):
        _fail(f"{where} has duplicated entries")
    if length is not None and len(value) != length:
        _fail(f"{where} has {len(value)} entries, expected {length}")
    return value


# ------------------------------------------------------------------ header
def check_header(header: dict, arrays_file: str) -> None:
    """The fields every ``model.json`` has (format and version already checked)."""
    _str(_key(header, "type", "model.json"), "type")
    for key in ("dolda_version", "created"):
        if key in header:
            _str(header[key], key)
    _dict(header.get("meta", {}), "meta")
    sha = _str(_key(header, "arrays_sha256", "model.json"), "arrays_sha256")
    if not re.fullmatch(r"[0-9a-f]{64}", sha):
        _fail("arrays_sha256 must be 64 lowercase hex digits")
    name = _str(header.get("arrays_file", arrays_file), "arrays_file")
    if name != arrays_file:
        _fail(f"arrays_file must be {arrays_file!r} (a file inside the model directory), "
              f"got {name!r}")
    manifest = _dict(_key(header, "arrays", "model.json"), "arrays")
    for name, spec in manifest.items():
        if not ARRAY_NAME.match(name):
            _fail(f"array name {name!r} is not a plain identifier")
        spec = _dict(spec, f"arrays[{name!r}]")
        dtype = _str(_key(spec, "dtype", f"arrays[{name!r}]"), f"arrays[{name!r}].dtype")
        if OBJECT_DTYPE_STRING.fullmatch(dtype):
            _fail(f"arrays[{name!r}] is an object array, which would need pickle; refused")
        if not DTYPE_STRING.fullmatch(dtype):  # before numpy parses it (it evaluates
            # comma and shape forms such as "i4,i4" or "(2,)i4" as literals)
            _fail(f"arrays[{name!r}].dtype {dtype!r} is not a numeric, boolean or "
                  "fixed-width string dtype")
        try:
            parsed = np.dtype(dtype)
        except (TypeError, ValueError, SyntaxError):
            _fail(f"arrays[{name!r}].dtype {dtype!r} is not a numpy dtype")
        if parsed.kind not in "biufU" or parsed.names is not None \
                or parsed.str != dtype:
            _fail(f"arrays[{name!r}].dtype {dtype!r} is not a numeric, boolean or "
                  "fixed-width string dtype")
        shape = _key(spec, "shape", f"arrays[{name!r}]")
        if not isinstance(shape, list) or len(shape) > 8:
            _fail(f"arrays[{name!r}].shape must be a list of at most 8 integers")
        for n in shape:
            _int(n, f"arrays[{name!r}].shape", 0, 2**40)


# ------------------------------------------------------------- meta blocks
def _params(meta, cls, where="meta.params"):
    """Constructor parameters: known names only, JSON scalars, and the
    estimator's own parameter checks pass."""
    from .codec import decode_params

    params = _dict(_key(meta, "params", "meta"), where)
    known = set(getattr(cls, "_saved_param_names", cls._get_param_names)())
    stray = sorted(set(params) - known - {"__dropped__"})
    if stray:
        _fail(f"{where} has unknown parameter(s) {stray} for {cls.__name__}")
    decoded = decode_params(params)
    estimator = cls._from_params(decoded) if hasattr(cls, "_from_params") else cls(**decoded)
    try:
        estimator._check_params()
    except (TypeError, ValueError) as exc:
        _fail(f"{where}: {exc}")
    return decoded


def _sweeps(params, name, burn_name=None):
    value = params.get(name)
    if value is not None:
        _int(value, f"meta.params.{name}", 1, MAX_SWEEPS + 1)
        if burn_name is not None and params.get(burn_name) is not None:
            _int(params[burn_name], f"meta.params.{burn_name}", 0, value)


def _labels(meta):
    enc = _dict(_key(meta, "classes", "meta"), "meta.classes")
    dtype = _str(_key(enc, "dtype", "meta.classes"), "meta.classes.dtype")
    values = _key(enc, "values", "meta.classes")
    if not isinstance(values, list) or len(values) < 2:
        _fail("meta.classes.values must be a list of at least 2 labels")
    if dtype == "object":
        ok = (all(isinstance(v, str) for v in values)
              or all(isinstance(v, int) and not isinstance(v, bool) for v in values))
    else:
        try:
            kind = np.dtype(dtype).kind
        except Exception:  # noqa: BLE001 - numpy parses dtype strings with eval-like rules
            kind = "?"
        checks = {"b": lambda v: isinstance(v, bool),
                  "i": lambda v: isinstance(v, int) and not isinstance(v, bool),
                  "u": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                  "f": lambda v: (isinstance(v, (int, float)) and not isinstance(v, bool)
                                  and math.isfinite(v)),
                  "U": lambda v: isinstance(v, str)}
        if kind not in checks:
            _fail(f"meta.classes.dtype {dtype!r} is not a label dtype")
        ok = all(checks[kind](v) for v in values)
    if not ok:
        _fail(f"meta.classes.values do not all match the dtype {dtype!r}")
    if len({(type(v).__name__, v) for v in values}) != len(values):
        _fail("meta.classes.values has duplicated labels")
    return len(values)


def _vocabulary(meta):
    vocab = _dict(_key(meta, "vocabulary", "meta"), "meta.vocabulary")
    pattern = _str(_key(vocab, "token_pattern", "meta.vocabulary"),
                   "meta.vocabulary.token_pattern")
    if len(pattern) > MAX_PATTERN_LENGTH:
        _fail(f"meta.vocabulary.token_pattern is longer than {MAX_PATTERN_LENGTH} characters")
    try:  # predict and serve run it on any text: never one that backtracks catastrophically
        _check_safe_pattern(pattern)
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError, _UnsafePattern) as exc:
        _fail(f"meta.vocabulary.token_pattern is refused: {exc}")
    _bool(_key(vocab, "lowercase", "meta.vocabulary"), "meta.vocabulary.lowercase")
    stop = _key(vocab, "stop_words", "meta.vocabulary")
    if stop is not None and stop != "english":
        _str_list(stop, "meta.vocabulary.stop_words", unique=False)
    share = _key(vocab, "rare_share", "meta.vocabulary")
    if isinstance(share, bool) or not isinstance(share, numbers.Real) or not 0 <= share < 1:
        _fail(f"meta.vocabulary.rare_share must be a number in [0, 1), got {share!r}")
    for key in ("min_df", "max_df"):
        v = _key(vocab, key, "meta.vocabulary")
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) \
                or v < 0:
            _fail(f"meta.vocabulary.{key} must be a number >= 0, got {v!r}")
    words = _str_list(_key(vocab, "words", "meta.vocabulary"), "meta.vocabulary.words")
    if not words or any(not w for w in words):
        _fail("meta.vocabulary.words must be a non-empty list of non-empty words")
    return len(words)


def _dirichlet_alpha(value, where, n_topics):
    """A symmetric alpha (a number) or one finite positive number per topic (a list of K)."""
    if isinstance(value, list):
        if len(value) != n_topics:
            _fail(f"{where} must have one value per topic ({n_topics}), got {len(value)}")
        for k, v in enumerate(value):
            _positive_finite(v, f"{where}[{k}]")
    else:
        _positive_finite(value, where)


def _positive_finite(value, where):
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        _fail(f"{where} must be a number, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        _fail(f"{where} must be a finite positive number, got {value!r}")
    return float(value)


def _word_features(wf, n_words, vocabulary=None):
    """A :meth:`WordFeatures.to_dict` (``vocabulary``: the model's words, when known);
    returns its number of columns."""
    from ..design.word_features import WORD_FEATURES, WORD_SELECTIONS

    if not isinstance(wf, dict):
        _fail("meta.word_features must be an object")
    _str(_key(wf, "kind", "meta.word_features"), "meta.word_features.kind", WORD_FEATURES)
    if "selection" in wf:  # absent in files written before word_selection existed
        _str(wf["selection"], "meta.word_features.selection", WORD_SELECTIONS)
    _int(_key(wf, "n_words", "meta.word_features"), "meta.word_features.n_words", 1, 2**31)
    n = _word_list(wf, "meta.word_features", n_words, vocabulary)
    if wf.get("dense") is not None:  # word_prior="both": every word's tf-idf as well
        if not isinstance(wf["dense"], dict):
            _fail("meta.word_features.dense must be an object")
        n += _word_list(wf["dense"], "meta.word_features.dense", n_words, vocabulary)
    return n


def _word_list(obj, where, n_words, vocabulary=None):
    """``word_ids`` (distinct vocabulary ids), ``words`` (the vocabulary's words at those
    ids) and ``idf`` of one list of word columns; returns their number."""
    ids = _key(obj, "word_ids", where)
    if not isinstance(ids, list):
        _fail(f"{where}.word_ids must be a list")
    for v in ids:
        _int(v, f"{where}.word_ids[]", 0, n_words)
    n = len(ids)
    if len(set(ids)) != n:
        _fail(f"{where}.word_ids has duplicated ids")
    words = _str_list(_key(obj, "words", where), f"{where}.words", length=n)
    if vocabulary is not None:
        for i, (j, w) in enumerate(zip(ids, words)):
            if vocabulary[j] != w:
                _fail(f"{where}.words[{i}] is {w[:40]!r} but word id {j} of the vocabulary "
                      f"is {vocabulary[j][:40]!r}")
    idf = _key(obj, "idf", where)
    if not isinstance(idf, list) or len(idf) != n:
        _fail(f"{where}.idf must be a list of {n} numbers")
    for v in idf:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) \
                or not 0 < v <= MAX_IDF:
            _fail(f"{where}.idf must hold numbers in (0, {MAX_IDF:g}], got {v!r}")
    return n


def _convergence(value, where="meta.convergence"):
    """``convergence_`` (:func:`dolda.evaluate.convergence.to_json`): an object of numbers, booleans,
    nulls, strings, lists of strings (none longer than a few thousand characters) and the
    chains' stacking weights (finite numbers in [0, 1], one per chain)."""
    _dict(value, where)
    if len(value) > 100:
        _fail(f"{where} has {len(value)} fields, at most 100")
    for key, v in value.items():
        if isinstance(v, str):
            v = [v]
        if key == "chain_weights" and isinstance(v, list):
            if len(v) > 2**10 or not all(isinstance(x, numbers.Real) and not isinstance(x, bool)
                                         and math.isfinite(x) and 0 <= x <= 1 for x in v):
                _fail(f"{where}.chain_weights must be at most 1024 numbers in [0, 1]")
        elif isinstance(v, list):
            _str_list(v, f"{where}.{key}", unique=False)
            if len(v) > 20 or any(len(x) > 2000 for x in v):
                _fail(f"{where}.{key} is too long")
        elif v is not None and not isinstance(v, (bool, numbers.Real)):
            _fail(f"{where}.{key} must be a number, true/false, null, a string or a list of "
                  f"strings, got {type(v).__name__}")


def _encoder(enc):
    """A :meth:`CovariateEncoder.to_dict`; returns its number of output columns."""
    from ..design.covariates import CovariateEncoder

    where = "meta.covariates"
    enc = _dict(enc, where)
    params = _dict(_key(enc, "params", where), f"{where}.params")
    stray = sorted(set(params) - set(CovariateEncoder._get_param_names()))
    if stray:
        _fail(f"{where}.params has unknown parameter(s) {stray}")
    columns = _str_list(_key(enc, "columns", where), f"{where}.columns")
    categorical = _str_list(_key(enc, "categorical", where), f"{where}.categorical")
    if not set(categorical) <= set(columns):
        _fail(f"{where}.categorical names columns not in {where}.columns")
    numeric = [c for c in columns if c not in set(categorical)]
    n_out = 0
    for key in ("categories", "rare", "pooled"):
        block = _dict(_key(enc, key, where), f"{where}.{key}")
        if set(block) != set(categorical):
            _fail(f"{where}.{key} must have one entry per categorical column")
    for c in categorical:
        levels = _str_list(enc["categories"][c], f"{where}.categories[{c!r}]")
        _str_list(enc["rare"][c], f"{where}.rare[{c!r}]")
        n_out += len(levels) + int(_bool(enc["pooled"][c], f"{where}.pooled[{c!r}]"))
    n_out += len(numeric)
    for key in ("mean", "scale"):
        block = _dict(_key(enc, key, where), f"{where}.{key}")
        if set(block) != set(numeric):
            _fail(f"{where}.{key} must have one entry per numeric column")
        for c, v in block.items():
            if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) \
                    or (key == "scale" and v < MIN_COVARIATE_SCALE) \
                    or (key == "mean" and abs(v) > MAX_COVARIATE_MEAN):
                _fail(f"{where}.{key}[{c!r}] must be a finite number "
                      + (f">= {MIN_COVARIATE_SCALE:g}" if key == "scale"
                         else f"of magnitude <= {MAX_COVARIATE_MEAN:g}") + f", got {v!r}")
    _str_list(_key(enc, "feature_names_out", where), f"{where}.feature_names_out",
              length=n_out)
    _bool(_key(enc, "sparse", where), f"{where}.sparse")
    return n_out


def _common_counts(meta):
    _int(_key(meta, "seed", "meta"), "meta.seed", 0, 2**64)
    n_iter = _int(_key(meta, "n_iter", "meta"), "meta.n_iter", 1, 2**40)
    n_chains = _int(meta.get("n_chains", 1), "meta.n_chains", 1, 2**20)
    return n_iter, n_chains


# ------------------------------------------------------------------ shapes
class _Shapes:
    def __init__(self, manifest):
        self.manifest = manifest

    def need(self, name, expected, kinds="f", optional=False):
        """``name`` has the ``expected`` shape (None entries: any size >= 1)."""
        spec = self.manifest.get(name)
        if spec is None:
            if not optional:
                _fail(f"the array {name!r} is missing")
            return None
        shape = spec["shape"]
        dtype = np.dtype(spec["dtype"])
        if kinds == WORD_DRAWS:  # the word block of eta: float16 (dolda.utils.draws)
            if dtype != np.dtype(np.float16):
                _fail(f"array {name!r} has dtype {spec['dtype']}, expected native float16 "
                      "('<f2')")
            kinds = "f"
        elif kinds == "f*":  # float32 or float64 (Phi, the kept draws: see dolda.utils.draws)
            if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
                _fail(f"array {name!r} has dtype {spec['dtype']}, expected native float32 "
                      "('<f4') or float64 ('<f8')")
            kinds = "f"
        elif kinds == "f" and dtype != np.dtype(np.float64):
            _fail(f"array {name!r} has dtype {spec['dtype']}, expected float64 ('<f8')")
        if dtype.kind not in kinds or not dtype.isnative:
            _fail(f"array {name!r} has dtype {spec['dtype']}, expected native "
                  + {"iu": "integers", "f": "float64"}.get(kinds, kinds))
        if len(shape) != len(expected) or any(
                (e is None and s < 1) or (e is not None and s != e)
                for s, e in zip(shape, expected)):
            shown = ["?" if e is None else e for e in expected]
            _fail(f"array {name!r} has shape {shape}, expected {shown}")
        return shape

    def only(self, names):
        stray = sorted(set(self.manifest) - set(names))
        if stray:
            _fail(f"unexpected array(s) {stray}")


def _stacking_shape(shapes, n_classes):
    """``stacking`` (proba="calibrated"), optional: (L, L + 1) for the map on ``mu``,
    (L, 2 L + 1) for the map on ``[mu, log F(mu)]`` (``dolda.posterior.calibration.STACKING_MAPS``),
    or (L, 3 L + 1) for ``[mu, log F(mu), log F(-mu)]`` (``DO_MAP``: the DO formula)."""
    shape = shapes.need("stacking", [n_classes, None], optional=True)
    widths = (n_classes + 1, 2 * n_classes + 1, 3 * n_classes + 1)
    if shape is not None and shape[1] not in widths:
        _fail(f"array 'stacking' has shape {shape}, expected [{n_classes}, w] with w one of "
              f"{list(widths)}")


def check_manifest(tag: str, cls, meta: dict, manifest: dict) -> dict:
    """First pass, on ``model.json`` alone: fields and the arrays' declared shapes.

    Returns the facts the second pass needs (``n_topics``, ...).
    """
    if tag == "dolda.DOLDA":
        return _dolda_manifest(cls, meta, manifest)
    if tag == "dolda.DOProbit":
        return _probit_manifest(cls, meta, manifest)
    if tag == "dolda.LDA":
        return _lda_manifest(cls, meta, manifest)
    return {}  # an extension's own type: its _from_state checks


def _selected_covariates(selected, cov):
    """``covariate_columns`` of a model fitted with covariates selects its encoder's columns.

    Prediction selects the same columns from the user's DataFrame, so a file whose
    parameter names other columns than the encoder was fitted on would blame the
    user's ``X`` for what is wrong in the file.
    """
    if selected is None or cov is None:
        return
    names = [selected] if isinstance(selected, str) else list(selected)
    if sorted(str(c) for c in names) != sorted(cov["columns"]):
        _fail(f"meta.params.covariate_columns {names[:10]!r} are not the columns the "
              f"covariates were fitted on, meta.covariates.columns {cov['columns'][:10]!r}")


def _dolda_manifest(cls, meta, manifest):
    params = _params(meta, cls)
    _sweeps(params, "predict_sweeps", "predict_burn_in")
    n_classes = _labels(meta)
    n_words = _vocabulary(meta)
    n_iter, n_chains = _common_counts(meta)
    n_tokens = _int(_key(meta, "n_tokens", "meta"), "meta.n_tokens", 0, 2**48)
    K = params.get("n_topics", 20)
    cov = meta.get("covariates")
    n_cov = 0 if cov is None else _encoder(cov)
    _selected_covariates(params.get("covariate_columns"), cov)
    wf = meta.get("word_features")
    n_wf = 0 if wf is None else _word_features(wf, n_words, meta["vocabulary"]["words"])
    if "alpha_" in meta:  # the (possibly learned) Dirichlet priors of the chain
        _dirichlet_alpha(meta["alpha_"], "meta.alpha_", K)
    if "beta_" in meta:
        _positive_finite(meta["beta_"], "meta.beta_")
    if meta.get("convergence") is not None:
        _convergence(meta["convergence"])
    if meta.get("n_features_in") is not None:
        _int(meta["n_features_in"], "meta.n_features_in", n_words, n_words + 1)
    P = 1 + n_cov + n_wf + K
    names = _str_list(_key(meta, "feature_names", "meta"), "meta.feature_names", length=P)
    if names[0] != INTERCEPT or names[P - K:] != [f"topic {k}" for k in range(K)]:
        _fail(f"meta.feature_names must be {INTERCEPT!r}, the covariates, then 'topic 0' .. "
              f"'topic {K - 1}'")
    if cov is not None and names[1:1 + n_cov] != cov["feature_names_out"]:
        _fail("meta.feature_names disagree with meta.covariates.feature_names_out")
    word_names = (None if wf is None else ["word=" + w for w in wf["words"]]
                  + ["dense=" + w for w in (wf.get("dense") or {}).get("words", [])])
    if wf is not None and names[1 + n_cov:1 + n_cov + n_wf] != word_names:
        _fail("meta.feature_names disagree with meta.word_features.words")
    shapes = _Shapes(manifest)
    horseshoe = params.get("prior", "horseshoe") == "horseshoe"
    S = _dolda_draws(shapes, manifest, n_classes, P, n_wf, horseshoe)
    _kept_at_most(S, n_iter * n_chains)
    shapes.need("phi", [K, n_words], kinds="f*")
    counts = shapes.need("doc_topic_counts", [None, K], kinds="iu", optional=True)
    shapes.need("loglik", [n_chains, n_iter, 2])
    _stacking_shape(shapes, n_classes)
    shapes.need("training_loglik", [S, None if counts is None else counts[0]], kinds="f*",
                optional=True)
    shapes.need("chain_phi", [n_chains, K, n_words], kinds="f", optional=True)
    shapes.need("chain_weights", [n_chains], kinds="f", optional=True)
    shapes.only(["eta_draws", "eta_word_draws", "tau_draws", "lambda_draws",
                 "lambda_word_stats", *WORD_ROWS, "phi", "doc_topic_counts", "loglik",
                 "stacking", "training_loglik", "chain_phi", "chain_weights"])
    del n_tokens
    return {"n_topics": K, "n_docs": None if counts is None else counts[0]}


def _kept_at_most(S, total):
    """A chain keeps at most one draw per iteration: S <= n_iter x n_chains."""
    if S > total:
        _fail(f"array 'eta_draws' holds {S} draws, more than the {total} iterations "
              "(n_iter x n_chains) the file says were run")


def _dolda_draws(shapes, manifest, n_classes, P, n_wf, horseshoe):
    """The kept draws of a DOLDA file, in either layout; returns S.

    Compact word block (format version 2, ``eta_word_draws`` present): ``eta_draws`` and
    ``lambda_draws`` hold the P - n_words other columns, ``eta_word_draws`` (S, L, n_words)
    float16 the word columns, ``lambda_word_stats`` (2, L, n_words) float64 their local
    scales' summaries.  Otherwise (every older file, and models without word columns)
    ``eta_draws`` and ``lambda_draws`` hold all P columns.
    """
    compact = "eta_word_draws" in manifest
    if compact and not n_wf:
        _fail("array 'eta_word_draws' is stored but the model has no word covariates "
              "(meta.word_features)")
    width = P - n_wf if compact else P
    S = shapes.need("eta_draws", [None, n_classes, width], kinds=DRAWS)[0]
    if compact:
        shapes.need("eta_word_draws", [S, n_classes, n_wf], kinds=WORD_DRAWS)
    shapes.need("tau_draws", [S, n_classes] + _scale_axis(manifest, "tau_draws", 3),
                kinds=DRAWS, optional=not horseshoe)
    shapes.need("lambda_draws", [S, n_classes, width], kinds=DRAWS, optional=not horseshoe)
    if compact and horseshoe:
        shapes.need("lambda_word_stats", [2, n_classes, n_wf])
        _word_rows(shapes, manifest, S, n_classes)
    else:
        for name in ("lambda_word_stats",) + WORD_ROWS:
            if name in manifest:
                _fail(f"array {name!r} is stored without 'eta_word_draws' or under the "
                      "'normal' prior")
    if not horseshoe and ("tau_draws" in manifest or "lambda_draws" in manifest):
        _fail("tau_draws/lambda_draws are stored but the prior is 'normal'")
    return S


#: The kept per-row sums of the singleton word columns' lambda (dolda.models.dolda.kept).
WORD_ROWS = ("lambda_word_rows", "lambda_word_row_ids")


def _word_rows(shapes, manifest, S, n_classes):
    """``lambda_word_rows`` (S, D_s, L) float32 with ``lambda_word_row_ids`` (D_s,) ints:
    both or neither (no training row holds a word column of its own)."""
    present = [name in manifest for name in WORD_ROWS]
    if any(present) and not all(present):
        _fail("arrays 'lambda_word_rows' and 'lambda_word_row_ids' come together")
    if all(present):
        rows = shapes.need("lambda_word_row_ids", [None], kinds="iu")[0]
        shapes.need("lambda_word_rows", [S, rows, n_classes], kinds=DRAWS)


def _scale_axis(manifest, name, per_block_ndim):
    """``[G]`` when the stored ``name`` has the per-block global scales' extra axis
    (``global_scales="block"``), else ``[]`` (one scale per class, every older file)."""
    spec = manifest.get(name)
    if spec is not None and len(spec["shape"]) == per_block_ndim:
        return [spec["shape"][-1]]
    return []


def _probit_manifest(cls, meta, manifest):
    params = _params(meta, cls)
    n_classes = _labels(meta)
    n_features = _int(_key(meta, "n_features_in", "meta"), "meta.n_features_in", 0, 2**32)
    names = meta.get("feature_names_in")
    if names is not None:
        _str_list(names, "meta.feature_names_in", length=n_features)
    n_iter, n_chains = _common_counts(meta)
    P = n_features + int(bool(params.get("fit_intercept", True)))
    if P < 1:
        _fail("a DOProbit needs at least one column (features or intercept)")
    shapes = _Shapes(manifest)
    S = shapes.need("eta_draws", [None, n_classes, P], kinds=DRAWS)[0]
    _kept_at_most(S, n_iter * n_chains)
    horseshoe = params.get("prior", "horseshoe") == "horseshoe"
    shapes.need("tau_draws", [S, n_classes], kinds=DRAWS, optional=not horseshoe)
    shapes.need("lambda_draws", [S, n_classes, n_features], kinds=DRAWS,
                optional=not horseshoe)
    if not horseshoe and ("tau_draws" in manifest or "lambda_draws" in manifest):
        _fail("tau_draws/lambda_draws are stored but the prior is 'normal'")
    shapes.need("loglik", [n_iter * n_chains])
    shapes.need("coef", [n_classes, n_features])
    shapes.need("intercept", [n_classes])
    _stacking_shape(shapes, n_classes)
    shapes.only(["eta_draws", "tau_draws", "lambda_draws", "loglik", "coef", "intercept",
                 "stacking"])
    return {}


def _lda_manifest(cls, meta, manifest):
    params = _params(meta, cls)
    _sweeps(params, "transform_sweeps")
    n_words = _vocabulary(meta)
    n_iter, _ = _common_counts(meta)
    n_tokens = _int(_key(meta, "n_tokens", "meta"), "meta.n_tokens", 0, 2**48)
    _str(_key(meta, "sampler", "meta"), "meta.sampler", ("dense", "sparse"))
    if meta.get("n_features_in") is not None:  # fitted on a document-term matrix
        _int(meta["n_features_in"], "meta.n_features_in", n_words, n_words + 1)
    K = params.get("n_topics", 20)
    shapes = _Shapes(manifest)
    shapes.need("phi", [K, n_words], kinds="f*")
    shapes.need("loglik", [n_iter])
    shapes.need("doc_topic_counts", [None, K], kinds="iu", optional=True)
    shapes.need("z", [n_tokens], kinds="iu", optional=True)
    shapes.only(["phi", "loglik", "doc_topic_counts", "z"])
    return {"n_topics": K}
