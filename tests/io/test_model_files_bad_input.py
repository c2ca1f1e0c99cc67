"""Model files are untrusted input: mutated files are rejected cleanly or work correctly.

Every mutated model directory must either

* be refused by ``dolda.load`` / ``load_checkpoint`` with a one-line
  :class:`dolda.io.ModelFormatError` ("rejected cleanly"), or
* load, and then predict finite probabilities that sum to one without any
  other exception ("accepted"; anything else counts as "accepted wrongly"),

and nothing in a file may ever execute code (a pickle payload that would
create a sentinel file is planted; the file must never appear).  The counts of
every run are printed (``pytest -s``) and checked.
"""

import copy
import io as _io
import json
import os
import shutil
import tempfile
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dolda
from dolda import DOLDA, LDA, DOProbit, io
from dolda.io import ModelFormatError
from dolda import Checkpoint, Covariates, Prediction

pytestmark = pytest.mark.bad_input

WORDS = "apple pear fig kiwi plum lime grape melon berry cherry".split()
COUNTS = Counter()
SENTINEL = Path(tempfile.gettempdir()) / f"dolda-pwned-{os.getpid()}"


class _Payload:
    """Unpickling this creates SENTINEL: proof that a file executed code."""

    def __reduce__(self):
        return (open, (str(SENTINEL), "w"))


def _texts(n=30, seed=0):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 8)) for _ in range(n)]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """One saved model of every kind, plus a DOLDA chain checkpoint."""
    root = tmp_path_factory.mktemp("models")
    texts = _texts()
    y = np.array(["a", "b", "c"])[np.arange(30) % 3]
    X = pd.DataFrame({"num": np.linspace(-1, 1, 30), "cat": ["u", "v"] * 15})
    DOLDA(n_topics=3, n_iter=4, progress=False, random_state=0, prediction=Prediction(sweeps=4), checkpoint=Checkpoint(path=str(root / "ck"), every=2)).fit(texts, y, X=X).save(root / "dolda")
    LDA(n_topics=3, n_iter=4, progress=False, random_state=0,
        transform_sweeps=4).fit(texts).save(root / "lda")
    Xn = np.random.default_rng(0).normal(size=(30, 2))
    DOProbit(n_iter=10, random_state=0).fit(Xn, y).save(root / "probit")
    return root


def _use(kind, path):
    """Load ``path`` and use the model as a user would; return the outcome."""
    if kind == "ck":
        meta, arrays = io.load_checkpoint(path)
        return "accepted"
    model = dolda.load(path)
    if kind == "dolda":
        X = pd.DataFrame({"num": [0.1, -0.5], "cat": ["u", "v"]})
        proba = model.predict_proba(["apple pear", "kiwi fig plum"], X=X)
    elif kind == "lda":
        proba = model.transform(["apple pear", "kiwi fig plum"])
    else:
        proba = model.predict_proba(np.zeros((2, 2)))
    assert np.all(np.isfinite(proba)) and np.allclose(proba.sum(axis=1), 1.0), proba
    return "accepted"


def _try(kind, path):
    """Classify one attempt; every outcome but the two good ones fails the test."""
    COUNTS["tried"] += 1
    try:
        outcome = _use(kind, path)
    except ModelFormatError as exc:
        assert "\n" not in str(exc), str(exc)
        outcome = "rejected cleanly"
    except AssertionError:
        outcome = "accepted wrongly"
    except Exception as exc:  # noqa: BLE001 - any other error is a finding
        outcome = f"traceback ({type(exc).__name__}: {exc})"
    if SENTINEL.exists():
        COUNTS["executed code"] += 1
        SENTINEL.unlink()
    COUNTS[outcome if outcome in ("accepted", "rejected cleanly") else "bad"] += 1
    assert outcome in ("accepted", "rejected cleanly"), f"{kind}: {outcome}"
    assert COUNTS["executed code"] == 0
    return outcome


# ------------------------------------------------------------ file surgery
def _copy(saved, kind):
    dst = Path(tempfile.mkdtemp()) / kind
    shutil.copytree(saved / kind, dst)
    return dst


def _header(path):
    return json.loads((path / "model.json").read_text())


def _write_header(path, header, resign=True):
    """Write ``header``; a checkpoint's header checksum is recomputed (``resign``) so that a
    mutation reaches the schema checks instead of stopping at the checksum."""
    if resign and isinstance(header, dict) and "header_sha256" in header:
        from dolda.io.schema_checkpoint import header_digest

        try:
            header = dict(header, header_sha256=header_digest(header))
        except (TypeError, ValueError):  # NaN literals: the checksum cannot cover them
            pass
    (path / "model.json").write_text(json.dumps(header, allow_nan=True))


def _arrays(path):
    with np.load(path / "arrays.npz", allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def _write_arrays(path, arrays, update_manifest=True, raw_members=None):
    """Rewrite arrays.npz; by default also the manifest and checksum, so that the
    mutation reaches the schema checks instead of stopping at the checksum."""
    buf = _io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, a in arrays.items():
            member = _io.BytesIO()
            np.lib.format.write_array(member, np.asanyarray(a), allow_pickle=True)
            zf.writestr(f"{name}.npy", member.getvalue())
        for name, data in (raw_members or {}).items():
            zf.writestr(name, data)
    (path / "arrays.npz").write_bytes(buf.getvalue())
    if update_manifest:
        header = _header(path)
        header["arrays"] = {n: {"dtype": np.asarray(a).dtype.str, "shape": list(np.shape(a))}
                            for n, a in arrays.items()}
        header["arrays_sha256"] = io._sha256(path / "arrays.npz")
        _write_header(path, header)


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj[:4]):
            yield from _paths(v, prefix + (i,))


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-2**70, 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12), st.sampled_from(["../arrays.npz", "/etc/passwd", "(", "[a-",
                                           "(?P<x", "a" * 2000, "nan", "object", "|O",
                                           "<f8", "dolda.DOLDA", "dolda.Checkpoint"]),
    st.lists(st.integers(-3, 10**6), max_size=4),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.just({"__float__": "nan"}), st.just({"__float__": "bogus"}))


def _mutate_header(data, path):
    header = _header(path)
    paths = [p for p in _paths(header) if p]
    target = data.draw(st.sampled_from(paths), label="json path")
    parent = _get(header, target[:-1])
    action = data.draw(st.sampled_from(["replace", "delete", "grow"]), label="action")
    if action == "delete":
        del parent[target[-1]]
    elif action == "grow" and isinstance(parent[target[-1]], list):
        parent[target[-1]].append(copy.deepcopy(data.draw(
            st.one_of(ODD_VALUES, st.sampled_from(parent[target[-1]] or [0])))))
    else:
        parent[target[-1]] = data.draw(ODD_VALUES, label="value")
    _write_header(path, header)


def _mutate_arrays(data, path):
    arrays = _arrays(path)
    name = data.draw(st.sampled_from(sorted(arrays)), label="array")
    a = arrays[name]
    action = data.draw(st.sampled_from(["nan", "inf", "negative", "huge", "drop", "grow",
                                        "transpose", "dtype", "scalar", "remove", "extra",
                                        "zero"]), label="array action")
    if action in ("nan", "inf", "negative", "huge", "zero") and a.size:
        a = a.astype(np.float64) if action in ("nan", "inf") else a.copy()
        i = data.draw(st.integers(0, a.size - 1))
        a.flat[i] = {"nan": np.nan, "inf": np.inf, "negative": -1, "huge": 1e300,
                     "zero": 0}[action] if a.dtype.kind == "f" or action in ("negative",
                                                                             "zero") else 2**30
        if action == "zero":
            a[...] = 0
    elif action == "drop" and a.ndim and a.shape[-1] > 1:
        a = a[..., :-1]
    elif action == "grow" and a.ndim:
        a = np.concatenate([a, a[..., -1:]], axis=-1)
    elif action == "transpose" and a.ndim >= 2:
        a = np.swapaxes(a, 0, -1)
    elif action == "dtype":
        a = a.astype(data.draw(st.sampled_from([np.float32, np.int64, np.bool_, "<U3",
                                                np.complex128])))
    elif action == "scalar":
        a = np.float64(1.0)
    elif action == "remove":
        del arrays[name]
        a = None
    elif action == "extra":
        arrays["extra"] = np.zeros(3)
    if a is not None:
        arrays[name] = a
    _write_arrays(path, arrays, update_manifest=data.draw(st.booleans(), label="manifest"))


KINDS = ["dolda", "lda", "probit", "ck"]


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_hypothesis_mutations_are_rejected_cleanly_or_work(saved, data):
    kind = data.draw(st.sampled_from(KINDS), label="kind")
    path = _copy(saved, kind)
    try:
        if data.draw(st.booleans(), label="header or arrays"):
            _mutate_header(data, path)
        else:
            _mutate_arrays(data, path)
        _try(kind, path)
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


# ------------------------------------------------------------ explicit cases
def _set(path, keys, value):
    header = _header(path)
    _get(header, keys[:-1])[keys[-1]] = value
    _write_header(path, header)


def _edit_arrays(path, **changes):
    arrays = _arrays(path)
    for name, value in changes.items():
        if value is None:
            arrays.pop(name)
        else:
            arrays[name] = value(arrays[name]) if callable(value) else value
    _write_arrays(path, arrays)


def _big_header_member(path):
    """An arrays.npz whose phi member declares a 4.8 GiB array in a tiny file."""
    arrays = _arrays(path)
    header_bytes = _io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header_bytes, {"descr": "<f8", "fortran_order": False, "shape": (650_000_000,)})
    raw = {"phi.npy": header_bytes.getvalue() + b"\0" * 64}
    arrays.pop("phi")
    _write_arrays(path, arrays, update_manifest=False, raw_members=raw)
    header = _header(path)
    header["arrays"]["phi"] = {"dtype": "<f8", "shape": [650_000_000]}
    header["arrays_sha256"] = io._sha256(path / "arrays.npz")
    _write_header(path, header)


def _pickle_member(path, name="phi"):
    arrays = _arrays(path)
    arrays[name] = np.array([_Payload()], dtype=object)
    _write_arrays(path, arrays)


def _symlink_arrays(path, target="/etc/passwd"):
    (path / "arrays.npz").unlink()
    os.symlink(target, path / "arrays.npz")


def _symlink_header(path):
    outside = path.parent / "elsewhere.json"
    shutil.copy(path / "model.json", outside)
    (path / "model.json").unlink()
    os.symlink(outside, path / "model.json")


def _text_member(path):
    _write_arrays(path, _arrays(path), raw_members={"readme.txt": b"hello"})


def _zero_word_column(path, word="apple"):
    """Phi with no topic emitting ``word`` (one the predicted texts use), rows renormalised:
    every other check still passes."""
    index = _header(path)["meta"]["vocabulary"]["words"].index(word)

    def zero(a):
        a = a.copy()
        a[..., index] = 0  # phi is (K, V)
        return a / a.sum(axis=-1, keepdims=True)
    _edit_arrays(path, phi=zero)


def _nan_literal(path):
    text = (path / "model.json").read_text().replace('"alpha": 0.01', '"alpha": NaN')
    (path / "model.json").write_text(text)


EXPLICIT = [
    # (kind, name, mutation)
    ("dolda", "phi narrower than the vocabulary",
     lambda p: _edit_arrays(p, phi=lambda a: a[:, :-1] / a[:, :-1].sum(1, keepdims=True))),
    ("dolda", "vocabulary longer than phi",
     lambda p: _set(p, ("meta", "vocabulary", "words"), WORDS + ["zebra", "yak"])),
    ("dolda", "vocabulary with a duplicate word",
     lambda p: _set(p, ("meta", "vocabulary", "words"),
                    _header(p)["meta"]["vocabulary"]["words"][:-1] * 1
                    + _header(p)["meta"]["vocabulary"]["words"][:1])),
    ("dolda", "alpha NaN literal", _nan_literal),
    ("dolda", "alpha encoded nan", lambda p: _set(p, ("meta", "params", "alpha"),
                                                  {"__float__": "nan"})),
    ("dolda", "alpha negative", lambda p: _set(p, ("meta", "params", "alpha"), -1.0)),
    ("dolda", "alpha string", lambda p: _set(p, ("meta", "params", "alpha"), "0.01")),
    ("dolda", "predict_sweeps 10^12", lambda p: _set(p, ("meta", "params", "predict_sweeps"),
                                                     10**12)),
    ("dolda", "predict_burn_in >= sweeps",
     lambda p: _set(p, ("meta", "params", "predict_burn_in"), 4)),
    ("dolda", "unknown parameter", lambda p: _set(p, ("meta", "params", "evil"), 1)),
    ("dolda", "all-NaN eta draws", lambda p: _edit_arrays(p, eta_draws=lambda a: a * np.nan)),
    ("dolda", "infinite eta draw", lambda p: _edit_arrays(
        p, eta_draws=lambda a: np.where(np.arange(a.size).reshape(a.shape) == 0, np.inf, a))),
    ("dolda", "NaN in phi", lambda p: _edit_arrays(p, phi=lambda a: a * np.nan)),
    ("dolda", "negative phi", lambda p: _edit_arrays(p, phi=lambda a: -a)),
    ("dolda", "phi rows not summing to one", lambda p: _edit_arrays(p, phi=lambda a: a * 2)),
    # the prediction sweep's conditional of that word was 0/0: a bare ZeroDivisionError
    ("dolda", "phi column of a word zero in every topic", _zero_word_column),
    ("dolda", "negative tau", lambda p: _edit_arrays(p, tau_draws=lambda a: -a)),
    ("dolda", "eta missing", lambda p: _edit_arrays(p, eta_draws=None)),
    ("dolda", "eta with a class too few", lambda p: _edit_arrays(
        p, eta_draws=lambda a: a[:, :-1])),
    ("dolda", "eta with a column too many", lambda p: _edit_arrays(
        p, eta_draws=lambda a: np.concatenate([a, a[..., :1]], -1))),
    # float32 (dolda's own) and float64 (older files) draws load: tests/utils/test_draws_float32.py
    ("dolda", "eta float16", lambda p: _edit_arrays(p, eta_draws=lambda a: a.astype("f2"))),
    ("dolda", "lambda big-endian", lambda p: _edit_arrays(
        p, lambda_draws=lambda a: a.astype(a.dtype.newbyteorder(">")))),
    ("dolda", "eta as strings", lambda p: _edit_arrays(p, eta_draws=lambda a: a.astype("U8"))),
    ("dolda", "arrays_file ../", lambda p: _set(p, ("arrays_file",), "../lda/arrays.npz")),
    ("dolda", "arrays_file absolute", lambda p: _set(p, ("arrays_file",), "/etc/passwd")),
    ("dolda", "arrays.npz symlink to a system file", _symlink_arrays),
    ("dolda", "arrays.npz symlink to another model", lambda p: _symlink_arrays(
        p, str(p.parent.parent))),
    ("dolda", "model.json symlink outside", _symlink_header),
    ("dolda", "4.8 GiB declared array", _big_header_member),
    ("dolda", "pickled object array", _pickle_member),
    ("dolda", "non-array zip member", _text_member),
    ("dolda", "invalid token pattern", lambda p: _set(p, ("meta", "vocabulary",
                                                          "token_pattern"), "(unclosed")),
    ("dolda", "token pattern a number", lambda p: _set(p, ("meta", "vocabulary",
                                                           "token_pattern"), 42)),
    ("dolda", "feature name not a string", lambda p: _set(p, ("meta", "feature_names", 1), 7)),
    ("dolda", "class labels a dict", lambda p: _set(p, ("meta", "classes"), {"x": 1})),
    ("dolda", "labels of the wrong dtype", lambda p: _set(p, ("meta", "classes", "dtype"),
                                                          "<i8")),
    ("dolda", "duplicated labels", lambda p: _set(p, ("meta", "classes", "values"),
                                                  ["a", "a", "b"])),
    ("dolda", "covariate scale zero", lambda p: _set(p, ("meta", "covariates", "scale", "num"),
                                                     0.0)),
    ("dolda", "covariate levels not strings", lambda p: _set(
        p, ("meta", "covariates", "categories", "cat"), [1, 2])),
    ("dolda", "covariates missing", lambda p: _set(p, ("meta", "covariates"), None)),
    ("dolda", "seed negative", lambda p: _set(p, ("meta", "seed"), -5)),
    ("dolda", "seed a float", lambda p: _set(p, ("meta", "seed"), 1.5)),
    ("dolda", "format_version 99", lambda p: _set(p, ("format_version",), 99)),
    ("dolda", "type unknown", lambda p: _set(p, ("type",), "evil.Model")),
    ("dolda", "type os:system", lambda p: _set(p, ("type",), "os:system")),
    ("dolda", "type Checkpoint", lambda p: _set(p, ("type",), "dolda.Checkpoint")),
    ("dolda", "checksum edited", lambda p: _set(p, ("arrays_sha256",), "0" * 64)),
    ("dolda", "checksum not hex", lambda p: _set(p, ("arrays_sha256",), "zz")),
    ("dolda", "manifest shape a string", lambda p: _set(p, ("arrays", "phi", "shape"), "3")),
    ("dolda", "manifest dtype object", lambda p: _set(p, ("arrays", "phi", "dtype"), "|O")),
    # numpy's dtype parser evaluates these forms as literals ("01": a SyntaxError once
    # escaped as a crash; found by the fuzz test below)
    ("dolda", "manifest dtype 01", lambda p: _set(p, ("arrays", "phi", "dtype"), "01")),
    ("dolda", "manifest dtype a record", lambda p: _set(p, ("arrays", "phi", "dtype"), "i4,i4")),
    ("dolda", "manifest dtype a subarray", lambda p: _set(p, ("arrays", "phi", "dtype"),
                                                          "(2,)<f4")),
    ("dolda", "header is a list", lambda p: (p / "model.json").write_text("[1, 2]")),
    ("dolda", "header truncated", lambda p: (p / "model.json").write_text(
        (p / "model.json").read_text()[:200])),
    ("dolda", "header deeply nested", lambda p: (p / "model.json").write_text(
        "[" * 100_000 + "]" * 100_000)),
    ("dolda", "header not UTF-8", lambda p: (p / "model.json").write_bytes(b"\xff\xfe{}")),
    ("dolda", "arrays.npz empty", lambda p: (p / "arrays.npz").write_bytes(b"")),
    ("dolda", "arrays.npz missing", lambda p: (p / "arrays.npz").unlink()),
    ("dolda", "model.json missing", lambda p: (p / "model.json").unlink()),
    ("lda", "phi narrower than the vocabulary",
     lambda p: _edit_arrays(p, phi=lambda a: a[:, :-1] / a[:, :-1].sum(1, keepdims=True))),
    ("lda", "z out of range", lambda p: _edit_arrays(p, z=lambda a: a + 100)),
    ("lda", "phi column of a word zero in every topic", _zero_word_column),
    ("lda", "sampler unknown", lambda p: _set(p, ("meta", "sampler"), "evil")),
    ("lda", "transform_sweeps huge", lambda p: _set(p, ("meta", "params", "transform_sweeps"),
                                                    10**9)),
    ("lda", "n_topics disagrees with phi", lambda p: _set(p, ("meta", "params", "n_topics"),
                                                          5)),
    # found by the fuzz test: prediction selected these columns from the user's X and
    # blamed X for them
    ("dolda", "covariate_columns not the fitted columns",
     lambda p: _set(p, ("meta", "params", "covariate_columns"), "")),
    ("dolda", "covariate_columns one column too many",
     lambda p: _set(p, ("meta", "params", "covariate_columns"), ["num", "cat", "extra"])),
    ("probit", "coef NaN", lambda p: _edit_arrays(p, coef=lambda a: a * np.nan)),
    ("probit", "calibration map NaN", lambda p: _edit_arrays(p, stacking=lambda a: a * np.nan)),
    ("probit", "calibration map of a third width", lambda p: _edit_arrays(
        p, stacking=lambda a: np.hstack([a, a[:, 1:2]]))),
    ("dolda", "calibration map without its weights", lambda p: _edit_arrays(
        p, stacking=lambda a: a[:, :1])),
    ("probit", "calibration intercept +inf", lambda p: _edit_arrays(
        p, stacking=lambda a: np.where(np.arange(a.shape[1]) == 0, np.inf, a))),
    ("dolda", "calibration weights huge", lambda p: _edit_arrays(
        p, stacking=lambda a: a + 1e15)),
    ("probit", "n_features_in disagrees", lambda p: _set(p, ("meta", "n_features_in"), 5)),
    ("probit", "fit_intercept flipped", lambda p: _set(p, ("meta", "params", "fit_intercept"),
                                                       False)),
    ("probit", "prior normal with lambda draws", lambda p: _set(p, ("meta", "params",
                                                                    "prior"), "normal")),
    ("probit", "calibration_folds 1", lambda p: _set(p, ("meta", "params",
                                                        "calibration_folds"), 1)),
    ("probit", "calibration_folds a string", lambda p: _set(p, ("meta", "params",
                                                               "calibration_folds"), "5")),
    ("probit", "feature names of the wrong length", lambda p: _set(
        p, ("meta", "feature_names_in"), ["a"])),
    ("ck", "z out of range", lambda p: _edit_arrays(p, z=lambda a: a + 100)),
    ("ck", "ndk negative", lambda p: _edit_arrays(p, ndk=lambda a: -a)),
    ("ck", "ndk not counting z", lambda p: _edit_arrays(p, ndk=lambda a: a * 2)),
    ("ck", "next_iteration past n_iter", lambda p: _set(p, ("meta", "next_iteration"), 10**6)),
    ("ck", "n_tokens disagrees with z", lambda p: _set(p, ("meta", "n_tokens"), 3)),
    ("ck", "phi NaN", lambda p: _edit_arrays(p, phi=lambda a: a * np.nan)),
    ("ck", "eta with too few columns", lambda p: _edit_arrays(p, eta=lambda a: a[:, :1])),
    ("ck", "pickled object array", lambda p: _pickle_member(p, "z")),
]


@pytest.mark.parametrize("kind, name, mutate", EXPLICIT, ids=[f"{k}: {n}" for k, n, _ in
                                                              EXPLICIT])
def test_explicit_corruptions_are_rejected_cleanly(saved, kind, name, mutate):
    path = _copy(saved, kind)
    try:
        mutate(path)
        assert _try(kind, path) == "rejected cleanly", name
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)
    assert not SENTINEL.exists()


def test_checkpoint_phi_may_have_a_word_no_topic_emits(saved):
    # a checkpoint's phi is a draw of the chain (word-major, V x K), where a word's row can
    # be exactly zero (a float32 Dirichlet or a Pólya-urn draw); only a model's posterior
    # mean must be positive everywhere
    path = _copy(saved, "ck")
    try:
        def zero_row(a):
            a = a.copy()
            a[0] = 0
            return a / a.sum(axis=0, keepdims=True)
        _edit_arrays(path, phi=zero_row)
        assert _try("ck", path) == "accepted"
    finally:
        shutil.rmtree(path.parent, ignore_errors=True)


@pytest.mark.parametrize("selected", [["cat", "num"], "num"])
def test_a_model_fitted_on_selected_covariate_columns_loads_and_predicts(tmp_path, selected):
    texts = _texts()
    y = np.array(["a", "b", "c"])[np.arange(30) % 3]
    X = pd.DataFrame({"text": texts, "num": np.linspace(-1, 1, 30), "cat": ["u", "v"] * 15,
                      "ignored": np.arange(30)})
    model = DOLDA(n_topics=3, n_iter=4, progress=False, random_state=0, prediction=Prediction(sweeps=4), covariates=Covariates(columns=selected)).fit(X, y)
    model.save(tmp_path / "m")
    again = dolda.load(tmp_path / "m")
    np.testing.assert_array_equal(again.predict_proba(X[:5]), model.predict_proba(X[:5]))


@pytest.mark.parametrize("kind", KINDS)
def test_unmodified_files_are_accepted(saved, kind):
    assert _try(kind, saved / kind) == "accepted"


def test_zz_fuzzing_counts():
    """Summary of every model file tried in this module (run last, by name)."""
    print(f"\nmodel-file fuzzing: {dict(COUNTS)}")
    assert COUNTS["bad"] == 0 and COUNTS["executed code"] == 0
    if COUNTS["tried"]:
        assert COUNTS["accepted"] + COUNTS["rejected cleanly"] == COUNTS["tried"]
