"""The DOLDA simulator and the data loaders (real data when present, a fake copy always)."""

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import norm

from dolda import datasets
from dolda.datasets import load_20newsgroups, load_films, simulate

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
needs_data = pytest.mark.skipif(
    not (DATA / "20newsgroups_bydate").is_dir() or not (DATA / "imdb_films").is_dir(),
    reason=f"shared data not found at {DATA} (see DESIGN.md section 6)")


# ---------------------------------------------------------------- simulate
def test_simulate_shapes_and_consistency():
    sim = simulate(n_docs=200, n_topics=6, n_classes=4, vocab_size=300, doc_length=50,
                   covariates=True, random_state=3)
    D, K, L, V = 200, 6, 4, 300
    P = 1 + 4 + K
    assert len(sim.texts) == D and sim.y.shape == (D,)
    assert sim.phi.shape == (K, V) and sim.theta.shape == (D, K) and sim.zbar.shape == (D, K)
    assert sim.eta.shape == (L, P) == sim.signal.shape and len(sim.feature_names) == P
    assert sim.U.shape == (D, P) and sim.proba.shape == (D, L)
    assert list(sim.X.columns) == ["x_num", "x_cat"] and len(sim.X) == D
    np.testing.assert_allclose(sim.phi.sum(axis=1), 1)
    np.testing.assert_allclose(sim.theta.sum(axis=1), 1)
    np.testing.assert_allclose(sim.zbar.sum(axis=1), 1)
    # zbar is the empirical topic proportion of z; texts spell the word ids
    for d in (0, 17, D - 1):
        z_d = sim.z[sim.doc_ptr[d]:sim.doc_ptr[d + 1]]
        np.testing.assert_allclose(sim.zbar[d], np.bincount(z_d, minlength=K) / len(z_d))
        words = [int(t[1:]) for t in sim.texts[d].split()]
        np.testing.assert_array_equal(words, sim.words[sim.doc_ptr[d]:sim.doc_ptr[d + 1]])
    # disjoint topics: every token's word lies in its topic's block, with phi > 0
    np.testing.assert_array_equal(sim.topic_of_word[sim.words], sim.z)
    assert np.all(sim.phi[sim.z, sim.words] > 0)
    # U is [1, covariates, zbar] in the order of feature_names
    np.testing.assert_array_equal(sim.U[:, 0], 1)
    np.testing.assert_array_equal(sim.U[:, 1], sim.X["x_num"])
    np.testing.assert_array_equal(sim.U[:, 4], sim.X["x_cat"] == "c")
    np.testing.assert_array_equal(sim.U[:, 5:], sim.zbar)
    # each class has n_signal=2 topic signals of opposite sign; signal excludes the intercept
    topic_eta = sim.eta[:, 5:]
    assert np.all((topic_eta != 0).sum(axis=1) == 2)
    assert np.all(np.sort(topic_eta, axis=1)[:, [0, -1]] == [-6.0, 6.0])
    assert not sim.signal[:, 0].any() and sim.signal[:, 5:].sum() == 8
    assert sim.signal[0, 1] and sim.signal[1, 4] and not sim.signal[:, 2].any()
    assert list(sim.classes) == sorted(sim.classes) == sorted(set(sim.y))


def test_simulate_is_reproducible_by_seed():
    a, b = simulate(n_docs=50, random_state=7), simulate(n_docs=50, random_state=7)
    c = simulate(n_docs=50, random_state=8)
    assert a.texts == b.texts
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.phi, b.phi)
    assert a.texts != c.texts


def test_proba_is_the_exact_do_formula():
    """Independent oracle: F(mu_l) prod_{j!=l} F(-mu_j), normalised."""
    sim = simulate(n_docs=300, n_classes=5, covariates=True, random_state=0)
    mu = sim.U @ sim.eta.T
    L = mu.shape[1]
    raw = np.stack([norm.cdf(mu[:, l]) * np.prod(norm.cdf(-np.delete(mu, l, axis=1)), axis=1)
                    for l in range(L)], axis=1)
    np.testing.assert_allclose(sim.proba, raw / raw.sum(axis=1, keepdims=True), rtol=1e-10)


def test_labels_follow_the_do_probabilities():
    """Per class, the label count minus the sum of probabilities is a sum of D independent
    centred Bernoullis: |diff| < 4 standard deviations.  Also within probability bins."""
    sim = simulate(n_docs=4000, n_topics=8, n_classes=3, doc_length=40, random_state=11)
    onehot = sim.y[:, None] == sim.classes[None, :]
    sd = np.sqrt((sim.proba * (1 - sim.proba)).sum(axis=0))
    diff = onehot.sum(axis=0) - sim.proba.sum(axis=0)
    assert np.all(np.abs(diff) < 4 * sd), (diff, sd)
    p, hit = sim.proba.ravel(), onehot.ravel()
    for lo, hi in [(0, 0.2), (0.2, 0.5), (0.5, 0.8), (0.8, 1.0)]:
        sel = (p >= lo) & (p < hi)
        assert sel.sum() > 100
        sd_bin = np.sqrt((p[sel] * (1 - p[sel])).sum())
        assert abs(hit[sel].sum() - p[sel].sum()) < 4 * sd_bin + 1


def test_rare_topic_drives_the_last_class():
    sim = simulate(n_docs=2000, rare_topic=True, random_state=1)
    k = sim.rare_topic
    assert k == 9 and sim.topic_share[k] < 0.02
    assert np.flatnonzero(sim.eta[-1, 1:]).tolist() == [k]
    assert not sim.eta[:-1, 1 + k].any()
    last = sim.y == sim.classes[-1]
    assert last.sum() >= 30
    assert np.mean(sim.zbar[last, k] > 0.05) > 0.7 > 0.1 > np.mean(sim.zbar[~last, k] > 0.05)


def test_simulate_rejects_bad_sizes():
    with pytest.raises(ValueError, match="n_classes >= 2"):
        simulate(n_classes=1)
    with pytest.raises(ValueError, match="vocab_size >= n_topics"):
        simulate(n_topics=10, vocab_size=5)


# ---------------------------------------------------------- fake data copy
_MESSAGE = ("From: someone@example.com\nSubject: Re: engines\nLines: 9\n\n"
            "In article <1@x.org> bob@x.org writes:\n> old text\n|also quoted\n"
            "My answer about engines.\nSecond line.\n\n--\nSomeone, Example Inc.\n")


def _write_jsonl_gz(path, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


@pytest.fixture
def fake_data(tmp_path):
    groups = ["rec.autos", "sci.space"]
    for subset, n in (("train", 3), ("test", 2)):
        rows = [{"id": f"{g}/{100 + i}", "label": g, "label_id": j, "text": _MESSAGE}
                for j, g in enumerate(groups) for i in range(n)]
        _write_jsonl_gz(tmp_path / "20newsgroups_bydate" / f"{subset}.jsonl.gz", rows)
    films = tmp_path / "imdb_films"
    films.mkdir()
    (films / "films.csv").write_text(
        "Id,Name,Year,Genre,DirectedBy,ProducedBy,Music,StoryBy,Company\n"
        'movie-0,"Up, Up",1999,Comedy,NA,<none>,M,S,"C, Inc."\n'
        "movie-1,Down,2001,Drama,D2,P2,M2,S2,C2\n")
    (films / "films-imdb-141.csv").write_text(
        "Id,Name,Year,Genre,DirectedBy,StoryBy,MusicBy,Company\n"
        "movie-3,A,1950,Drama,D,S,M,C\nmovie-7,B,2010,Action,D,S,M,C\n")
    _write_jsonl_gz(films / "plots_118.jsonl.gz",
                    [{"id": "movie-7", "label": "Action", "text": "Cars explode."},
                     {"id": "movie-3", "label": "Drama", "text": "London, 1949."}])
    return tmp_path


def test_newsgroups_loader_on_a_fake_copy(fake_data, monkeypatch):
    train = load_20newsgroups(fake_data, subset="train")
    assert list(train.columns) == ["id", "label", "label_id", "text"]
    assert len(train) == 6 and train["text"].iloc[0] == _MESSAGE
    # texts are the parsed str objects in an object column (no arrow copy), so the list
    # DOLDA is given holds the same objects, not a second copy of the corpus
    assert train["text"].dtype == object and train["label_id"].dtype == np.int64
    texts = train["text"].tolist()
    assert all(type(t) is str for t in texts) and texts[0] is train["text"].iloc[0]
    assert len(load_20newsgroups(fake_data, subset="all")) == 10
    monkeypatch.setenv("DOLDA_DATA", str(fake_data))
    assert len(load_20newsgroups(subset="test")) == 4
    stripped = load_20newsgroups(subset="test", remove=("headers", "footers", "quotes"))
    assert stripped["text"].iloc[0] == "My answer about engines.\nSecond line.\n"
    assert stripped["text"].dtype == object
    with pytest.raises(ValueError, match="remove accepts"):
        load_20newsgroups(subset="test", remove=("signatures",))


def test_strip_heuristics():
    assert datasets.strip_header(_MESSAGE).startswith("In article")
    assert datasets.strip_header("no blank line here") == ""
    no_quotes = datasets.strip_quotes(_MESSAGE)
    assert "> old" not in no_quotes and "writes:" not in no_quotes and "|also" not in no_quotes
    assert "My answer" in no_quotes
    assert datasets.strip_footer("body\n\nsig line\n\n") == "body"
    assert datasets.strip_footer("body\n-----\nJohn") == "body"
    assert datasets.strip_footer("only one paragraph") == "only one paragraph"


def test_missing_data_names_the_place_and_never_downloads(tmp_path, monkeypatch):
    monkeypatch.delenv("DOLDA_DATA", raising=False)
    empty_sklearn_home = tmp_path / "sk"
    with pytest.raises(FileNotFoundError, match="DOLDA_DATA"):
        load_20newsgroups(sklearn_data_home=empty_sklearn_home)
    with pytest.raises(FileNotFoundError, match=r"20newsgroups_bydate/train.jsonl.gz.*never downloads"):
        load_20newsgroups(tmp_path, sklearn_data_home=empty_sklearn_home)
    with pytest.raises(FileNotFoundError, match="imdb_films/films.csv"):
        load_films(tmp_path)
    with pytest.raises(FileNotFoundError, match="plots_118"):
        load_films(tmp_path, with_plots=True)
    assert not empty_sklearn_home.exists() or not any(empty_sklearn_home.rglob("*.tar.gz"))


def test_films_loader_on_a_fake_copy(fake_data):
    films = load_films(fake_data)
    assert films.shape == (2, 9) and films["Year"].dtype == np.int64
    assert films.loc[0, "Name"] == "Up, Up" and films.loc[0, "DirectedBy"] == "NA"
    plots = load_films(fake_data, with_plots=True)
    assert list(plots.columns) == ["Id", "Name", "Year", "Genre", "DirectedBy", "StoryBy",
                                   "MusicBy", "Company", "text"]
    assert plots.set_index("Id").loc["movie-3", "text"] == "London, 1949."
    _write_jsonl_gz(fake_data / "imdb_films" / "plots_118.jsonl.gz",
                    [{"id": "movie-7", "label": "Comedy", "text": "x"},
                     {"id": "movie-3", "label": "Drama", "text": "y"}])
    with pytest.raises(ValueError, match="genre differs"):
        load_films(fake_data, with_plots=True)


# -------------------------------------------------------------- real data
@pytest.mark.data
@needs_data
def test_newsgroups_train_on_the_shared_data():
    train = load_20newsgroups(DATA, subset="train")
    assert len(train) == 11314 and train["label"].nunique() == 20
    assert (train.groupby("label").size()["alt.atheism"], train["label_id"].max()) == (480, 19)
    from_line = r"(?m)^From:"
    assert train["text"].str.contains(from_line).all()
    stripped = load_20newsgroups(DATA, subset="train", remove=("headers",))
    # what remains are forwarded or quoted messages inside a few bodies
    assert stripped["text"].str.contains(from_line).mean() < 0.01
    assert stripped["text"].str.len().sum() < train["text"].str.len().sum()


@pytest.mark.data
@needs_data
def test_strip_matches_scikit_learn_on_the_shared_data():
    """Oracle: scikit-learn's own (private) helpers, on the first 1,500 training messages."""
    tn = pytest.importorskip("sklearn.datasets._twenty_newsgroups")
    if not hasattr(tn, "strip_newsgroup_header"):
        pytest.skip("scikit-learn no longer has strip_newsgroup_header")
    texts = load_20newsgroups(DATA, subset="train")["text"][:1500]
    for text in texts:
        assert datasets.strip_header(text) == tn.strip_newsgroup_header(text)
        assert datasets.strip_footer(text) == tn.strip_newsgroup_footer(text)
        assert datasets.strip_quotes(text) == tn.strip_newsgroup_quoting(text)


@pytest.mark.data
@needs_data
def test_films_on_the_shared_data():
    films = load_films(DATA)
    assert films.shape == (10848, 9) and films["Genre"].nunique() == 27
    assert films["Genre"].value_counts()["Drama"] == 2910
    assert not films.isna().any().any()
    plots = load_films(DATA, with_plots=True)
    assert len(plots) == 118 and plots["Genre"].nunique() == 15
    assert plots.set_index("Id").loc["movie-22", "text"] == "London, 1949."


def test_newsgroups_falls_back_to_the_scikit_learn_cache(tmp_path, monkeypatch):
    """Files absent: the loader asks scikit-learn's cache (never downloading) and
    returns the same columns, sorted by label then message number."""
    import sklearn.datasets
    from sklearn.utils import Bunch

    calls = []

    def fake_fetch(**kwargs):
        calls.append(kwargs)
        names = ["rec.autos", "sci.space"]
        files = [f"/c/20news-bydate-train/{g}/{n}" for g, n in
                 [("sci.space", "99"), ("rec.autos", "1000"), ("rec.autos", "200")]]
        return Bunch(data=["s", "a1000", "a200"], target=np.array([1, 0, 0]),
                     target_names=names, filenames=np.array(files))

    monkeypatch.setattr(sklearn.datasets, "fetch_20newsgroups", fake_fetch)
    frame = load_20newsgroups(tmp_path, remove=("headers",))
    assert calls[0]["download_if_missing"] is False and calls[0]["subset"] == "train"
    assert list(frame["id"]) == ["rec.autos/200", "rec.autos/1000", "sci.space/99"]
    assert list(frame["label_id"]) == [0, 0, 1] and list(frame["text"]) == ["", "", ""]
