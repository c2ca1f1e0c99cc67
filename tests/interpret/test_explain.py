"""Word-level explanations: token contributions add up to the class scores."""

import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from dolda import DOLDA
from dolda.datasets import simulate
from dolda.interpret.explain import analyse, explain_documents, tokenize_with_spans
from dolda.sampler.rng import STEP_PREDICT, stream, uniform
from dolda.sampler.token_topics import token_topic_frequencies
from dolda import Text, Words

N_TRAIN = 150


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=200, n_topics=4, n_classes=3, vocab_size=120, doc_length=40,
                    n_signal=1, covariates=True, random_state=1)


@pytest.fixture(scope="module")
def model(sim):
    # topics only: the tokens carry exactly the topic part here (word covariates are
    # attributed to their words: tests/design/test_word_features.py)
    return DOLDA(n_topics=4, alpha=0.5, n_iter=80, random_state=0, progress=False, n_jobs=1, text=Text(rare_share=0.0), words=Words(n=0)).fit(sim.texts[:N_TRAIN], sim.y[:N_TRAIN],
                                               X=sim.X.iloc[:N_TRAIN])


def _noisy(text):
    """A document as a user writes it: capitals, punctuation, stop words, unknown words."""
    words = text.split()
    return ("The " + " ".join(w.upper() if i % 3 == 0 else w for i, w in enumerate(words[:20]))
            + ", and zzunknown. " + " ".join(words[20:]) + "!")


def test_token_contributions_add_up_to_the_class_scores(model, sim):
    text = _noisy(sim.texts[N_TRAIN + 1])
    x = sim.X.iloc[N_TRAIN + 1]
    tokens = model.explain(text, X_row=x, level="token")
    features = model.explain(text, X_row=x)
    coef = model.coef_
    for label in model.classes_:
        score = tokens.attrs["score"][label]
        rows = tokens[tokens["class"] == label]
        np.testing.assert_allclose(rows["contribution"].sum() + tokens.attrs["rest"][label],
                                   score, rtol=0, atol=1e-12)
        # the tokens carry exactly the topic features' part of the score
        topic = features[(features["class"] == label)
                         & features["feature"].str.startswith("topic ")]
        np.testing.assert_allclose(rows["contribution"].sum(), topic["contribution"].sum(),
                                   rtol=0, atol=1e-12)
        np.testing.assert_allclose(features[features["class"] == label]["contribution"].sum(),
                                   score, rtol=0, atol=1e-12)
        # the rest is intercept + covariates, with the posterior-mean coefficients
        cov = [c for c in coef.columns if not c.startswith("topic ")]
        u = features[features["class"] == label].set_index("feature")["value"]
        expected_rest = sum(u.get(c, 0.0) * coef.loc[label, c] for c in cov)
        np.testing.assert_allclose(tokens.attrs["rest"][label], expected_rest, atol=1e-12)
    # spans point at the words of the original text; unknown words contribute nothing
    first = tokens[tokens["class"] == model.classes_[0]]
    for word, start, end in zip(first["word"], first["start"], first["end"]):
        assert text[start:end].lower() == word
    assert "the" not in set(first["word"])  # stop word
    unknown = first[first["word"] == "zzunknown"]
    assert len(unknown) == 1 and unknown["contribution"].iloc[0] == 0.0
    assert pd.isna(unknown["topic"].iloc[0])


def test_feature_level_keeps_its_columns_and_orders(model, sim):
    ex = model.explain(sim.texts[N_TRAIN], X_row=sim.X.iloc[N_TRAIN])
    assert list(ex.columns) == ["class", "feature", "value", "coef", "contribution"]
    proba = ex.attrs["proba"]
    assert abs(sum(proba.values()) - 1) < 1e-9
    assert ex["class"].iloc[0] == max(proba, key=proba.get)
    for _, rows in ex.groupby("class"):
        assert rows["contribution"].abs().is_monotonic_decreasing
    top2 = model.explain(sim.texts[N_TRAIN], X_row=sim.X.iloc[N_TRAIN], classes=2)
    assert top2["class"].nunique() == 2
    assert list(top2["class"].unique()) == sorted(proba, key=proba.get, reverse=True)[:2]
    with pytest.raises(ValueError, match="unknown class"):
        model.explain(sim.texts[0], X_row=sim.X.iloc[0], classes=["nope"])
    with pytest.raises(ValueError, match="level must be"):
        model.explain(sim.texts[0], X_row=sim.X.iloc[0], level="word")
    with pytest.raises(TypeError, match="one document"):
        model.explain(["a", "b"], X_row=sim.X.iloc[0])


def test_explain_matches_predict(model, sim):
    """The regressors of the explanation are the ones predict uses (same sweeps, same streams)."""
    texts = list(sim.texts[N_TRAIN:])
    X = sim.X.iloc[N_TRAIN:]
    a = analyse(model, texts, X)
    K = model.phi_.shape[0]
    # the same stream and the same draws as the prediction kernel: equal up to rounding;
    # a different kernel would still agree within Monte Carlo error (25 kept sweeps)
    np.testing.assert_allclose(a.U[:, -K:], model.transform(texts), atol=0.05)
    np.testing.assert_allclose(a.proba, model.predict_proba(texts, X), atol=0.05)
    assert np.mean(np.argmax(a.proba, 1) == np.argmax(model.predict_proba(texts, X), 1)) > 0.9


def _uniform(state):
    """The kernel's uniform draw called from Python, the state kept as an unsigned 64-bit int."""
    u, state = uniform(np.uint64(int(state) % 2**64))
    return u, int(state) % 2**64


def _reference_frequencies(tokens, doc_ptr, phi, alpha, n_sweeps, burn_in, seed,
                           rao_blackwell):
    """The sweep written out in plain Python with the same random streams; the kept
    sweeps' topics or (``rao_blackwell``) the conditionals they were drawn from."""
    K = phi.shape[0]
    out = np.zeros((len(tokens), K))
    for d in range(len(doc_ptr) - 1):
        words = tokens[doc_ptr[d]:doc_ptr[d + 1]]
        state = stream(seed, STEP_PREDICT, d)
        counts = np.zeros(K)
        z = []

        def draw(w, state):
            weights = phi[:, w] * (counts + alpha)
            cum = np.cumsum(weights)
            u, state = _uniform(state)
            k = int(min(np.searchsorted(cum, u * cum[-1], side="right"), K - 1))
            return k, state

        for w in words:
            k, state = draw(w, state)
            z.append(k)
            counts[k] += 1
        for s in range(n_sweeps):
            for i, w in enumerate(words):
                counts[z[i]] -= 1
                if rao_blackwell and s >= burn_in:
                    weights = phi[:, w] * (counts + alpha)
                    out[doc_ptr[d] + i] += weights / weights.sum()
                k, state = draw(w, state)
                z[i] = k
                counts[k] += 1
                if not rao_blackwell and s >= burn_in:
                    out[doc_ptr[d] + i, k] += 1
    return out / (n_sweeps - burn_in)


@pytest.mark.parametrize("rao_blackwell", [True, False])
def test_token_topic_kernel_against_reference(rao_blackwell):
    rng = np.random.default_rng(0)
    K, V = 3, 7
    phi = rng.dirichlet(np.full(V, 0.5), size=K)
    tokens = rng.integers(0, V, size=25).astype(np.int32)
    doc_ptr = np.array([0, 10, 10, 25])  # an empty document in the middle
    got = token_topic_frequencies(tokens, doc_ptr, phi, 0.3, 12, 4, 7,
                                  rao_blackwell=rao_blackwell)
    want = _reference_frequencies(tokens, doc_ptr, phi, 0.3, 12, 4, 7, rao_blackwell)
    np.testing.assert_allclose(got, want, atol=1e-12)
    np.testing.assert_allclose(got.sum(axis=1), 1.0)
    with pytest.raises(ValueError, match="burn_in"):
        token_topic_frequencies(tokens, doc_ptr, phi, 0.3, 4, 4, 7)


def test_word_covariates_are_attributed_to_their_words(model, sim):
    """A covariate that stands for a word moves to that word's tokens, in equal shares."""
    text = sim.texts[N_TRAIN + 2]
    word = text.split()[0]
    n_occ = text.split().count(word)
    x = sim.X.iloc[N_TRAIN + 2]
    plain = model.explain(text, X_row=x, level="token")
    mapped = model.explain(text, X_row=x, level="token", word_features={"x_num": word})
    value = model.explain(text, X_row=x).set_index(["class", "feature"])["value"]
    for label in model.classes_:
        share = value[(label, "x_num")] * model.coef_.loc[label, "x_num"]
        rows = mapped[mapped["class"] == label]
        hits = rows[rows["word"] == word]
        assert len(hits) == n_occ
        np.testing.assert_allclose(hits["word_contribution"], share / n_occ, atol=1e-12)
        assert (rows[rows["word"] != word]["word_contribution"] == 0).all()
        np.testing.assert_allclose(mapped.attrs["rest"][label],
                                   plain.attrs["rest"][label] - share, atol=1e-12)
        np.testing.assert_allclose(rows["contribution"].sum() + mapped.attrs["rest"][label],
                                   mapped.attrs["score"][label], atol=1e-12)
    # a word that does not occur leaves the covariate at the feature level
    absent = model.explain(text, X_row=x, level="token", word_features={"x_num": "qqq"})
    assert absent.attrs["rest"] == plain.attrs["rest"]
    with pytest.raises(ValueError, match="not a feature"):
        model.explain(text, X_row=x, level="token", word_features={"nope": word})


def test_tokenize_with_spans_handles_length_changing_lowercase(model):
    vocab = model.vocabulary_
    w = vocab.words[0]
    text = f"İstanbul {w.upper()} and {w}"
    words, spans, ids = tokenize_with_spans(vocab, text)
    assert [text[s:e].lower() for s, e in spans][-2:] == [w, w]
    assert ids[-1] == ids[-2] == vocab.index_[w]


def test_explain_documents_is_json_ready(model, sim):
    texts = [t + " <!-- </script>" for t in sim.texts[N_TRAIN:N_TRAIN + 3]]
    docs = explain_documents(model, texts, X=sim.X.iloc[N_TRAIN:N_TRAIN + 3], n_classes=2,
                             ids=["a", "b", "c"])
    json.dumps(docs)
    d = docs[0]
    assert d["id"] == "a" and len(d["classes"]) == 2 and len(d["proba"]) == 3
    assert d["predicted"] == d["classes"][0]["label"] == d["proba"][0][0]
    for c in d["classes"]:
        assert len(c["weights"]) == len(d["tokens"])
        assert abs(sum(c["weights"]) + c["rest"] - c["score"]) < 1e-3
    cut = explain_documents(model, texts[:1], X=sim.X.iloc[N_TRAIN:N_TRAIN + 1], max_chars=30)
    assert cut[0]["truncated"] and len(cut[0]["text"]) == 30
    assert all(e <= 30 for _, e, _ in cut[0]["tokens"])


# ---------------------------------------------------------------- the command
@pytest.fixture(scope="module")
def model_dir(model, tmp_path_factory):
    path = tmp_path_factory.mktemp("explain") / "model"
    model.save(path)
    return str(path)


def _run(*args):
    from dolda.cli import main

    return CliRunner().invoke(main, [str(a) for a in args])


def test_cli_explain_formats(model_dir, sim):
    text = sim.texts[N_TRAIN + 1]
    cov = ["-c", f"x_num={sim.X['x_num'].iloc[N_TRAIN + 1]}",
           "-c", f"x_cat={sim.X['x_cat'].iloc[N_TRAIN + 1]}"]
    out = _run("explain", model_dir, text, *cov, "--classes", "2")
    assert out.exit_code == 0, out.output
    assert "(2 most probable of 3)" in out.output
    assert len(re.findall(r"^\s+class\d\s+[0-9.]+$", out.output, re.M)) == 2
    assert out.output.count("words toward") == 2
    assert "\x1b[" not in out.output  # no colour codes when not a terminal
    js = _run("explain", model_dir, text, *cov, "--format", "json", "--classes", "1")
    assert js.exit_code == 0, js.output
    doc = json.loads(js.output)
    assert len(doc["classes"]) == 1 and doc["classes"][0]["words"]["toward"]
    c = doc["classes"][0]
    assert abs(sum(c["weights"]) + c["rest"] - c["score"]) < 1e-3
    csv = _run("explain", model_dir, text, *cov, "--format", "csv", "--classes", "3")
    assert csv.exit_code == 0, csv.output
    from io import StringIO

    table = pd.read_csv(StringIO(csv.output))
    assert set(table["class"]) == set(model_classes(model_dir))
    assert {"word", "start", "end", "contribution"} <= set(table.columns)
    bad = _run("explain", model_dir, text, *cov, "--format", "xml")
    assert bad.exit_code != 0 and "xml" in bad.output


def model_classes(model_dir):
    from dolda import load

    return [str(c) for c in load(model_dir).classes_]
