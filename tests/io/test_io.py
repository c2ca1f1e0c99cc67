"""Model files: round trips, integrity checks, clear errors, no pickle, atomic writes."""

import json
import zipfile

import numpy as np
import pandas as pd
import pytest

import dolda
from dolda import DOProbit
from dolda import io
from dolda.io import ModelFormatError


def _data(seed=0, n=120, labels=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)
    if labels is not None:
        y = np.asarray(labels)[y]
    return X, y


@pytest.fixture(scope="module")
def fitted():
    X, y = _data(labels=["ham", "eggs", "spam"])
    return X, DOProbit(n_iter=60, random_state=1).fit(X, list(y))


def _rewrite_header(path, **changes):
    header = json.loads((path / "model.json").read_text())
    header.update(changes)
    (path / "model.json").write_text(json.dumps(header))


def test_round_trip_gives_identical_predictions(fitted, tmp_path):
    X, model = fitted
    model.save(tmp_path / "m")
    loaded = dolda.load(tmp_path / "m")
    assert type(loaded) is DOProbit
    assert loaded.get_params() == model.get_params()
    np.testing.assert_array_equal(loaded.predict_proba(X), model.predict_proba(X))
    np.testing.assert_array_equal(loaded.predict(X), model.predict(X))
    assert loaded.classes_.dtype == model.classes_.dtype
    assert list(loaded.classes_) == list(model.classes_)
    for name in ("eta_draws_", "tau_draws_", "lambda_draws_", "loglik_", "coef_", "intercept_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(model, name))
    assert loaded.seed_ == model.seed_ and loaded.n_features_in_ == 3


@pytest.mark.parametrize("labels", [np.array([3, 7, 11]), np.array(["a", "b", "c"]),
                                    np.array([-1.0, 0.0, 2.0])])
def test_label_dtype_and_feature_names_round_trip(labels, tmp_path):
    X, y = _data(labels=labels)
    frame = pd.DataFrame(X, columns=["age", "income", "height"])
    model = DOProbit(prior="normal", n_iter=20, random_state=0).fit(frame, y)
    io.save_model(model, tmp_path / "m", compress=True)
    loaded = io.load(tmp_path / "m")
    assert loaded.classes_.dtype == model.classes_.dtype
    np.testing.assert_array_equal(loaded.classes_, model.classes_)
    assert list(loaded.feature_names_in_) == ["age", "income", "height"]
    assert loaded.tau_draws_ is None and loaded.lambda_draws_ is None
    np.testing.assert_array_equal(loaded.predict(frame), model.predict(frame))


def test_header_is_documented_json(fitted, tmp_path):
    _, model = fitted
    model.save(tmp_path / "m")
    header = json.loads((tmp_path / "m" / "model.json").read_text())
    assert header["format"] == "dolda-model"
    assert header["format_version"] == io.FORMAT_VERSION_PLAIN == 1  # no word block: v1
    assert header["type"] == "dolda.DOProbit"
    assert header["dolda_version"] == dolda.__version__
    assert header["meta"]["classes"] == {"dtype": "<U4", "values": ["eggs", "ham", "spam"]}
    assert header["arrays"]["eta_draws"]["shape"] == list(model.eta_draws_.shape)
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["arrays.npz", "model.json"]


def test_overwrite(fitted, tmp_path):
    _, model = fitted
    model.save(tmp_path / "m")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        model.save(tmp_path / "m")
    model.save(tmp_path / "m", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    with pytest.raises(FileExistsError, match="not a dolda model"):
        model.save(tmp_path / "mine", overwrite=True)
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "precious"


def test_corrupt_arrays_fail_the_checksum(fitted, tmp_path):
    _, model = fitted
    path = model.save(tmp_path / "m")
    raw = bytearray((path / "arrays.npz").read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (path / "arrays.npz").write_bytes(bytes(raw))
    with pytest.raises(ModelFormatError, match="checksum mismatch"):
        dolda.load(path)


def test_newer_format_version_names_both_versions(fitted, tmp_path):
    _, model = fitted
    path = model.save(tmp_path / "m")
    _rewrite_header(path, format_version=3, dolda_version="9.0")
    with pytest.raises(ModelFormatError, match=r"version 3 \(written by dolda 9.0\).*up to 2.*[Uu]pgrade"):
        dolda.load(path)


def test_not_a_model_directory(tmp_path):
    with pytest.raises(ModelFormatError, match="does not exist"):
        dolda.load(tmp_path / "nothing")
    with pytest.raises(ModelFormatError, match="no model.json"):
        dolda.load(tmp_path)
    (tmp_path / "file.npz").write_bytes(b"x")
    with pytest.raises(ModelFormatError, match="not a dolda model directory"):
        dolda.load(tmp_path / "file.npz")
    (tmp_path / "model.json").write_text("{not json")
    with pytest.raises(ModelFormatError, match="not valid JSON"):
        dolda.load(tmp_path)
    (tmp_path / "model.json").write_text('{"hello": 1}')
    with pytest.raises(ModelFormatError, match="not a dolda model header"):
        dolda.load(tmp_path)


def test_unknown_type_tag(fitted, tmp_path):
    _, model = fitted
    path = model.save(tmp_path / "m")
    _rewrite_header(path, type="dolda.Quantum")
    with pytest.raises(ModelFormatError, match="unknown model type 'dolda.Quantum'"):
        dolda.load(path)


def test_object_arrays_are_never_unpickled(fitted, tmp_path):
    """A hand-made npz with an object array (and a matching checksum) is refused."""
    _, model = fitted
    path = model.save(tmp_path / "m")
    arrays = dict(np.load(path / "arrays.npz"))
    arrays["evil"] = np.array([{"x": 1}], dtype=object)
    np.savez(path / "arrays.npz", **arrays)
    header = json.loads((path / "model.json").read_text())
    header["arrays_sha256"] = io._sha256(path / "arrays.npz")
    header["arrays"]["evil"] = {"dtype": "|O", "shape": [1]}
    (path / "model.json").write_text(json.dumps(header))
    with pytest.raises(ModelFormatError, match="object array"):
        dolda.load(path)
    with pytest.raises(TypeError, match="pickle"):
        io.save_checkpoint(tmp_path / "c", {}, {"bad": np.array([None], dtype=object)})
    assert not (tmp_path / "c").exists()


def test_failed_write_leaves_nothing_behind(fitted, tmp_path, monkeypatch):
    _, model = fitted
    model.save(tmp_path / "m")
    before = (tmp_path / "m" / "model.json").read_text()

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(io.json, "dump", broken)
    with pytest.raises(OSError, match="disk full"):
        model.save(tmp_path / "new")
    with pytest.raises(OSError, match="disk full"):
        model.save(tmp_path / "m", overwrite=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]  # no temp dirs, no "new"
    assert (tmp_path / "m" / "model.json").read_text() == before


def test_interrupted_replace_keeps_the_old_checkpoint(tmp_path, monkeypatch):
    io.save_checkpoint(tmp_path / "ck", {"iteration": 10}, {"z": np.arange(5)})

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(io.np, "savez", interrupted)
    with pytest.raises(KeyboardInterrupt):
        io.save_checkpoint(tmp_path / "ck", {"iteration": 20}, {"z": np.arange(6)})
    meta, arrays = io.load_checkpoint(tmp_path / "ck")
    assert meta["iteration"] == 10 and len(arrays["z"]) == 5
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]


def test_checkpoint_round_trip(tmp_path):
    meta = {"iteration": np.int64(250), "seed": 2**62 + 3, "loglik": [np.float64(-1.5), float("nan")],
            "params": {"alpha": 0.01, "topics": (1, 2)}, "done": False}
    arrays = {"z": np.arange(7, dtype=np.int32), "phi": np.random.default_rng(0).random((3, 4)),
              "skip": None}
    io.save_checkpoint(tmp_path / "ck", meta, arrays)
    io.save_checkpoint(tmp_path / "ck", meta, arrays)  # replacing is the normal case
    got_meta, got = io.load_checkpoint(tmp_path / "ck")
    assert got_meta["iteration"] == 250 and got_meta["seed"] == 2**62 + 3
    assert got_meta["loglik"][0] == -1.5 and np.isnan(got_meta["loglik"][1])
    assert got_meta["params"] == {"alpha": 0.01, "topics": [1, 2]} and got_meta["done"] is False
    assert set(got) == {"z", "phi"}
    assert got["z"].dtype == np.int32
    np.testing.assert_array_equal(got["phi"], arrays["phi"])
    with pytest.raises(ModelFormatError, match="checkpoint"):
        dolda.load(tmp_path / "ck")


def test_model_is_not_a_checkpoint(fitted, tmp_path):
    _, model = fitted
    model.save(tmp_path / "m")
    with pytest.raises(ModelFormatError, match="not a checkpoint"):
        io.load_checkpoint(tmp_path / "m")


def test_unfitted_or_unregistered_estimators_are_refused(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        DOProbit().save(tmp_path / "m")

    class Sub(DOProbit):
        pass

    with pytest.raises(TypeError, match="register"):
        io.save_model(Sub(), tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_npz_is_a_plain_zip(fitted, tmp_path):
    """Other tools can read the arrays: the npz holds one .npy per array."""
    _, model = fitted
    path = model.save(tmp_path / "m")
    names = zipfile.ZipFile(path / "arrays.npz").namelist()
    assert "eta_draws.npy" in names and all(n.endswith(".npy") for n in names)
