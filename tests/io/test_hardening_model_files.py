"""Model files and fit options at the edges of the schema: a fit never writes a model that
cannot be loaded, a stored token pattern cannot backtrack catastrophically, and a file
that would predict NaN or allocate far more than its size is refused in one line."""

import json
import re
import shutil
import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import dolda
from _flat import flat_dolda
from dolda import DOLDA, io
from dolda.design.corpus import TOKEN_PATTERN, check_token_pattern
from dolda.design.token_pattern import UnsafePattern, check_safe_pattern
from dolda.io import npz as _npz

WORDS = [f"w{i}ord" for i in range(40)]


def _texts(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, 10)) for _ in range(n)]


def _model(**options):
    # options by their flat names, as model files and the CLI name them
    return flat_dolda(**{"n_topics": 3, "n_iter": 6, "random_state": 0, "progress": False,
                         "predict_sweeps": 4, **options})


Y = np.array(["a", "b"])[np.arange(40) % 2]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    path = tmp_path_factory.mktemp("m") / "m"
    X = pd.DataFrame({"num": np.linspace(-1, 1, 40), "cat": ["u", "v"] * 20})
    _model(n_words=5, rare_share=0.0).fit(_texts(), Y, covariates=X).save(path)
    return path


# ------------------------------------------------------------ token patterns
UNSAFE = [r"(a+)+$", r"(\w|\w)*x", r"(?:a?){30}a{30}", r"\w*\w*x", r"(a)\1", r"(?=a)\w+",
          r"(?<!a)\w+", r"(?(1)a|b)", r"(?:ab)+", r"\w+x\w+y\w+", "a?" * 11, "a" * 1001]
SAFE = [TOKEN_PATTERN, r"(?u)\b\w\w+\b", r"\w+(?:'\w+)?", r"[A-Za-z]{2,}",
        r"\d+(?:[.,]\d+)?", "a?" * 10, "a" * 1000]


@pytest.mark.parametrize("pattern", UNSAFE)
def test_unsafe_patterns_are_refused_at_fit(pattern):
    with pytest.raises(ValueError, match="token_pattern .* is refused"):
        _model(token_pattern=pattern).fit(_texts(), Y)


@pytest.mark.parametrize("pattern", SAFE)
def test_safe_patterns_are_accepted(pattern):
    assert check_token_pattern(pattern) == pattern


def test_the_default_pattern_tokenizes_as_re_does(saved):
    text = "Hello wörld x11 _tmp a 42 under_score Ünïcode ça-va gpl2"
    assert dolda.load(saved).vocabulary_.token_pattern == TOKEN_PATTERN
    vocab = dolda.design.corpus.Vocabulary(stop_words=None)
    assert vocab._tokenize_all([text])[0] == re.findall(TOKEN_PATTERN, text.lower())


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"\w*\w*\w*\w*x"])
def test_a_stored_unsafe_pattern_is_refused_on_load(saved, tmp_path, pattern):
    path = tmp_path / "m"
    shutil.copytree(saved, path)
    header = json.loads((path / "model.json").read_text())
    header["meta"]["vocabulary"]["token_pattern"] = pattern
    (path / "model.json").write_text(json.dumps(header))
    tic = time.perf_counter()
    with pytest.raises(io.ModelFormatError, match=r"meta\.vocabulary\.token_pattern is refused"):
        dolda.load(path)
    assert time.perf_counter() - tic < 5


_ATOMS = st.sampled_from(["a", r"\w", "[ab]", ".", "b", r"\d"])


def _patterns():
    quant = st.sampled_from(["", "*", "+", "?", "{2,}", "{1,3}"])
    leaf = st.tuples(_ATOMS, quant).map("".join)
    return st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, min_size=1, max_size=4).map("".join),
        st.tuples(st.lists(inner, min_size=1, max_size=3).map("|".join), quant).map(
            lambda t: f"(?:{t[0]}){t[1]}")), max_leaves=8)


@settings(max_examples=150, deadline=None)
@given(_patterns())
def test_hypothesis_every_accepted_pattern_runs_fast_on_adversarial_text(pattern):
    try:
        check_safe_pattern(pattern)
    except UnsafePattern:
        return
    regex = re.compile(pattern)
    tic = time.perf_counter()
    for text in ("a" * 400 + "!", "ab" * 200 + "!", "1" * 400 + "\n"):
        regex.findall(text)
    assert time.perf_counter() - tic < 2.0, pattern


# ------------------------------------------------------- unloadable fits
@pytest.mark.parametrize("X", [
    pd.DataFrame({"(intercept)": np.arange(40.)}),
    pd.DataFrame({"topic 2": np.arange(40.)}),
    pd.DataFrame({"g": ["a", "b"] * 20, "g=a": np.arange(40.)}),
    pd.DataFrame(np.arange(80.).reshape(40, 2), columns=[1, "1"]),
], ids=["intercept", "topic", "level", "str-columns"])
def test_a_fit_whose_column_names_clash_is_refused(X):
    with pytest.raises(ValueError, match="^the model column name .* is given to both"):
        _model().fit(_texts(), Y, covariates=X)


def test_word_level_spelled_like_a_word_column_is_refused():
    X = pd.DataFrame({"word": ["w1ord", "w2ord"] * 20})
    with pytest.raises(ValueError, match="'word=w1ord' is given to both a covariate"):
        _model(n_words=40, rare_share=0.0).fit(_texts(), Y, covariates=X)


def test_predict_sweeps_at_the_edge(tmp_path):
    with pytest.raises(ValueError, match=r"predict_sweeps must be in \[1, 100001\), got 100001"):
        _model(predict_sweeps=100_001).fit(_texts(), Y)
    model = _model(predict_sweeps=100_000).fit(_texts(), Y)
    model.save(tmp_path / "m")
    assert dolda.load(tmp_path / "m").predict_sweeps == 100_000


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(["predict_sweeps", "predict_burn_in", "n_words"]),
       st.integers(-3, 200_005))
def test_hypothesis_options_either_refused_or_the_model_loads(tmp_path_factory, name, value):
    model = _model(**{name: value})
    try:
        model.fit(_texts(), Y)
    except ValueError as exc:
        assert "\n" not in str(exc)
        return
    path = tmp_path_factory.mktemp("h") / "m"
    model.save(path)
    dolda.load(path).predict(_texts(3))


# ---------------------------------------------------- model-file fields
def _edited(saved, tmp_path, meta=None, arrays=None):
    path = tmp_path / "m"
    shutil.copytree(saved, path)
    header = json.loads((path / "model.json").read_text())
    if meta is not None:
        meta(header["meta"])
    if arrays is not None:
        with np.load(path / "arrays.npz") as data:
            values = {k: data[k] for k in data.files}
        arrays(values)
        np.savez(path / "arrays.npz", **values)
        header["arrays"] = {k: {"dtype": v.dtype.str, "shape": list(v.shape)}
                            for k, v in values.items()}
        header["arrays_sha256"] = io._sha256(path / "arrays.npz")
    (path / "model.json").write_text(json.dumps(header))
    return path


def _loads(path):
    model = dolda.load(path)
    X = pd.DataFrame({"num": np.linspace(-1, 1, 5), "cat": ["u", "v", "u", "v", "u"]})
    p = model.predict_proba(_texts(5, seed=1), covariates=X)
    assert np.all(np.isfinite(p))


def _set(*keys, value):
    def edit(meta):
        obj = meta
        for k in keys[:-1]:
            obj = obj[k]
        obj[keys[-1]] = value
    return edit


EDGES = [  # (field, edit of the last value inside, edit of the first value past, message)
    ("scale", _set("covariates", "scale", "num", value=1e-100),
     _set("covariates", "scale", "num", value=np.nextafter(1e-100, 0)), "scale"),
    ("mean", _set("covariates", "mean", "num", value=1e12),
     _set("covariates", "mean", "num", value=np.nextafter(1e12, 2e12)), "mean"),
    ("idf", _set("word_features", "idf", 0, value=1000.0),
     _set("word_features", "idf", 0, value=np.nextafter(1000.0, 2000.0)), "idf"),
    ("idf>0", _set("word_features", "idf", 0, value=5e-324),
     _set("word_features", "idf", 0, value=0.0), "idf"),
]


@pytest.mark.parametrize("field, inside, past, message", EDGES, ids=[e[0] for e in EDGES])
def test_schema_bounds_at_their_edge(saved, tmp_path, field, inside, past, message):
    _loads(_edited(saved, tmp_path / "in", meta=inside))
    with pytest.raises(io.ModelFormatError, match=message):
        dolda.load(_edited(saved, tmp_path / "out", meta=past))


def test_word_ids_duplicated_or_not_the_vocabulary_s_are_refused(saved, tmp_path):
    def dup(meta):
        wf = meta["word_features"]
        wf["word_ids"][1] = wf["word_ids"][0]
        wf["words"][1] = wf["words"][0] + "x"
    with pytest.raises(io.ModelFormatError, match="word_ids has duplicated ids"):
        dolda.load(_edited(saved, tmp_path / "a", meta=dup))

    def other(meta):
        wf = meta["word_features"]
        wf["word_ids"][0] = next(i for i in range(len(meta["vocabulary"]["words"]))
                                 if i not in wf["word_ids"])
    with pytest.raises(io.ModelFormatError, match=r"words\[0\] is .* but word id"):
        dolda.load(_edited(saved, tmp_path / "b", meta=other))


def test_fields_that_would_predict_nan_are_refused(saved, tmp_path):
    def no_intercept(a):
        a["stacking"][:, 0] = -np.inf
    with pytest.raises(io.ModelFormatError, match="'stacking' gives no class a finite"):
        dolda.load(_edited(saved, tmp_path / "s", arrays=no_intercept))

    def one_intercept(a):
        a["stacking"][1:, 0] = -np.inf
    _loads(_edited(saved, tmp_path / "s1", arrays=one_intercept))

    def zero_phi(a):
        phi = a["phi"].astype(np.float64)
        phi[0, 0] = 0
        a["phi"] = (phi / phi.sum(axis=1, keepdims=True)).astype(a["phi"].dtype)
    with pytest.raises(io.ModelFormatError, match="'phi' has values <= 0"):
        dolda.load(_edited(saved, tmp_path / "p", arrays=zero_phi))


def test_more_draws_than_iterations_are_refused():
    from dolda.io.schema import SchemaError, _kept_at_most

    _kept_at_most(12, 12)  # S = n_iter x n_chains: the last value inside
    with pytest.raises(SchemaError, match="holds 13 draws, more than the 12 iterations"):
        _kept_at_most(13, 12)


def test_a_member_declaring_more_than_its_bytes_can_hold_is_refused(saved, tmp_path, monkeypatch):
    path = tmp_path / "m"
    shutil.copytree(saved, path)
    with np.load(path / "arrays.npz") as data:
        values = {k: data[k] for k in data.files}
    S = values["training_loglik"].shape[0]
    values["doc_topic_counts"] = np.zeros((40_000, 3), dtype=values["doc_topic_counts"].dtype)
    values["training_loglik"] = np.zeros((S, 40_000), dtype=values["training_loglik"].dtype)
    np.savez_compressed(path / "arrays.npz", **values)
    header = json.loads((path / "model.json").read_text())
    header["arrays"]["doc_topic_counts"]["shape"] = [40_000, 3]
    header["arrays"]["training_loglik"]["shape"] = [S, 40_000]
    header["arrays_sha256"] = io._sha256(path / "arrays.npz")
    (path / "model.json").write_text(json.dumps(header))
    monkeypatch.setattr(_npz, "MAX_INFLATE_RATIO", 10)
    allocated = []
    monkeypatch.setattr(_npz.npy_format, "read_array",
                        lambda *a, **k: allocated.append(1))
    with pytest.raises(io.ModelFormatError, match="declares .* can hold"):
        dolda.load(path)
    assert not allocated
