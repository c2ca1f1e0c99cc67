"""dolda.LDA as a drop-in for sklearn's LatentDirichletAllocation: document-term matrices,
feature names, set_output, and the held-out log-likelihood (document completion)."""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

import dolda
from dolda import LDA
from dolda.design.estimator_input import count_tokens
from dolda.datasets import simulate
from dolda.evaluate.heldout import document_completion, split_halves


def _lda(**kw):
    params = dict(n_topics=4, n_iter=40, random_state=0, n_jobs=1, progress=False)
    params.update(kw)
    return LDA(**params)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=160, n_topics=4, n_classes=2, vocab_size=60, doc_length=40,
                    alpha=0.3, random_state=7)


@pytest.fixture(scope="module")
def counts(sim):
    """Train/test document-term matrices from CountVectorizer, and the vectorizer."""
    vec = CountVectorizer().fit(sim.texts[:120])
    return vec, vec.transform(sim.texts[:120]), vec.transform(sim.texts[120:])


# ------------------------------------------------------------------ matrices in
def test_count_tokens_reproduces_the_matrix():
    rng = np.random.default_rng(0)
    M = rng.poisson(0.7, size=(6, 5))
    M[2] = 0  # an empty document in the middle
    M[5] = 0  # and at the end
    tokens, doc_ptr = count_tokens(sp.csr_matrix(M))
    rebuilt = np.zeros_like(M)
    for d in range(6):
        np.add.at(rebuilt[d], tokens[doc_ptr[d]:doc_ptr[d + 1]], 1)
    np.testing.assert_array_equal(rebuilt, M)
    with pytest.raises(ValueError, match="non-integer"):
        count_tokens(sp.csr_matrix(M * 0.5 + 0.25))


def test_pipeline_countvectorizer_then_lda(sim, counts):
    vec, train, _ = counts
    pipe = make_pipeline(CountVectorizer(), _lda())
    theta = pipe.fit_transform(sim.texts[:120])
    lda = pipe[-1]
    assert theta.shape == (120, 4)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    assert lda.n_features_in_ == train.shape[1] == lda.components_.shape[1]
    np.testing.assert_allclose(lda.components_.sum(axis=1), 1.0)
    # the sparse-matrix fit is the text fit with the same words: same topics found
    direct = _lda().fit(train)
    np.testing.assert_array_equal(direct.phi_, lda.phi_)
    assert pipe.transform(sim.texts[120:]).shape == (40, 4)
    # a dense count array and a DataFrame of counts work too; DataFrame columns are the words
    frame = pd.DataFrame(train.toarray(), columns=vec.get_feature_names_out())
    by_frame = _lda().fit(frame)
    np.testing.assert_array_equal(by_frame.phi_, direct.phi_)
    assert list(by_frame.feature_names_in_) == list(vec.get_feature_names_out())
    assert by_frame.top_words(3)[0][0] in set(vec.get_feature_names_out())
    np.testing.assert_array_equal(_lda().fit(train.toarray()).phi_, direct.phi_)


@pytest.mark.parametrize("seed", [7, 8, 10])
def test_recovers_the_simulated_topics_from_a_matrix(seed):
    """Each fitted topic's top 5 words come from one true topic, and all 4 are found.

    Fixed seeds; over data seeds 7-14 and chain seeds 0-1, 14 of 16 fits recover all
    four topics, the other two stop in a merged-topic local mode of the Gibbs chain."""
    sim = simulate(n_docs=200, n_topics=4, n_classes=2, vocab_size=40, doc_length=50,
                   alpha=0.1, beta=1.0, random_state=seed)
    vec = CountVectorizer().fit(sim.texts)
    lda = _lda(n_iter=150, alpha=0.1).fit(vec.transform(sim.texts))
    words = vec.get_feature_names_out()
    true_topic = np.array([sim.topic_of_word[int(w[1:])] for w in words])
    found = [set(true_topic[row]) for row in np.argsort(-lda.phi_, axis=1)[:, :5]]
    assert all(len(f) == 1 for f in found)  # every fitted topic is pure
    assert set().union(*found) == set(range(4))  # and all four are found


def test_input_kind_errors(sim, counts):
    _, train, _ = counts
    on_counts = _lda(n_iter=4).fit(train)
    with pytest.raises(ValueError, match="document-term matrix"):
        on_counts.transform(sim.texts[:3])
    with pytest.raises(ValueError, match="features"):
        on_counts.transform(train[:, :-1])
    on_texts = _lda(n_iter=4).fit(sim.texts)
    with pytest.raises(ValueError, match="fitted on texts"):
        on_texts.transform(train)
    tfidf = TfidfVectorizer().fit_transform(sim.texts)
    with pytest.raises(ValueError, match="word counts"):
        _lda(n_iter=4).fit(tfidf)
    with pytest.raises(ValueError, match="(?i)negative"):
        _lda(n_iter=4).fit(-train.toarray())
    # refitting on texts forgets the matrix columns
    assert not hasattr(on_counts.fit(sim.texts), "n_features_in_")


def test_feature_names_set_output_and_column_transformer(sim, counts):
    _, train, test = counts
    lda = _lda().fit(train)
    assert list(lda.get_feature_names_out()) == ["lda0", "lda1", "lda2", "lda3"]
    plain = lda.transform(test)
    out = lda.set_output(transform="pandas").transform(test)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["lda0", "lda1", "lda2", "lda3"]
    np.testing.assert_array_equal(out.to_numpy(), plain)
    frame = pd.DataFrame({"text": sim.texts, "n": np.arange(len(sim.texts))})
    ct = ColumnTransformer([("topics", _lda(n_iter=5), "text")], remainder="passthrough")
    ct.fit(frame)
    assert list(ct.get_feature_names_out()) == [
        "topics__lda0", "topics__lda1", "topics__lda2", "topics__lda3", "remainder__n"]


def test_matrix_model_saves_and_loads(counts, tmp_path):
    _, train, test = counts
    lda = _lda().fit(train)
    loaded = dolda.load(lda.save(tmp_path / "lda"))
    assert loaded.n_features_in_ == lda.n_features_in_
    np.testing.assert_array_equal(loaded.transform(test), lda.transform(test))
    with pytest.raises(ValueError, match="document-term matrix"):
        loaded.transform(["some text"])


# ------------------------------------------------------------------ held-out likelihood
def test_completion_is_exact_when_all_topics_are_equal():
    """Identical topics: theta does not matter, log p = sum of log phi_w over held-out tokens."""
    rng = np.random.default_rng(1)
    p = rng.dirichlet(np.ones(7))
    phi = np.tile(p, (3, 1))
    tokens = rng.integers(0, 7, size=50).astype(np.int32)
    doc_ptr = np.array([0, 9, 10, 30, 50])
    loglik, n = document_completion(phi, 0.1, tokens, doc_ptr, 10, 5, 0)
    _, _, held, _ = split_halves(tokens, doc_ptr)
    assert n.sum() == len(held) == 5 + 1 + 10 + 10
    assert loglik.sum() == pytest.approx(np.log(p[held]).sum(), rel=1e-12)


def test_completion_matches_the_exact_predictive_of_two_token_documents():
    """With one observed and one held-out token the estimator converges to the exact
    p(w2 | w1, Phi) = sum_k p(z1=k | w1) sum_j (1[j=k] + alpha) / (1 + K alpha) phi_{j,w2}.
    Tolerance: 4 Monte Carlo standard errors of the sweep average (S sweeps per document)."""
    rng = np.random.default_rng(3)
    K, V, alpha, S = 3, 6, 0.2, 4000
    phi = rng.dirichlet(np.full(V, 0.5), size=K)
    pairs = np.array([(v, w) for v in range(V) for w in range(V)], dtype=np.int32)
    tokens = pairs.ravel()
    doc_ptr = np.arange(0, 2 * len(pairs) + 1, 2)
    post = phi[:, pairs[:, 0]].T / phi[:, pairs[:, 0]].sum(axis=0)[:, None]  # p(z1 | w1)
    e_theta = (np.eye(K)[None] + alpha) / (1 + K * alpha)  # [k, j]: E[theta_j | z1 = k]
    p_given_z = np.einsum("kj,jd->dk", e_theta[0], phi[:, pairs[:, 1]])  # (D, K)
    exact = (post * p_given_z).sum(axis=1)
    sd = np.sqrt((post * p_given_z ** 2).sum(axis=1) - exact ** 2)
    estimate, n = document_completion(phi, alpha, tokens, doc_ptr, S + 1, 1, 11)
    estimate = estimate.sum()
    assert n.sum() == len(pairs)
    # the estimate is sum log(p_hat); delta method: sd(log p_hat) ~ sd / (p sqrt(S))
    se = np.sqrt(np.sum((sd / exact) ** 2 / S))
    assert abs(estimate - np.log(exact).sum()) < 4 * se + 1e-9


def test_perplexity_and_score_rank_models(sim, counts):
    _, train, test = counts
    fitted = _lda().fit(train)
    V = train.shape[1]
    uniform = _lda().fit(train)
    uniform.phi_ = np.full_like(uniform.phi_, 1.0 / V)
    assert uniform.perplexity(test) == pytest.approx(V, rel=1e-12)
    # the simulated corpus has 4 disjoint topics: a fitted model predicts far better
    assert fitted.perplexity(test) < 0.6 * V
    assert fitted.score(test) > uniform.score(test)
    n_held = int(sum(-(-np.asarray(test.sum(axis=1)).ravel() // 2)))  # ceil(N_d / 2)
    assert fitted.perplexity(test) == pytest.approx(np.exp(-fitted.score(test) / n_held))
    # from texts as well as from counts, and GridSearchCV can use score to pick K
    assert _lda().fit(sim.texts[:120]).perplexity(sim.texts[120:]) < 0.6 * V
    search = GridSearchCV(_lda(n_iter=30), {"n_topics": [2, 4]}, cv=2).fit(train)
    assert search.best_params_ == {"n_topics": 4}


def test_pyldavis_lda_model_takes_the_matrix_model(counts):
    """pyLDAvis's scikit-learn adapter needs transform(dtm) and components_ over the columns."""
    lda_model = pytest.importorskip("pyLDAvis.lda_model")
    vec, train, _ = counts
    lda = _lda(n_iter=20).fit(train)
    vis = lda_model.prepare(lda, train, vec, mds="pcoa", n_jobs=1)
    assert vis.topic_coordinates.shape[0] == 4
    assert set(vis.topic_info["Term"]) <= set(vec.get_feature_names_out())
