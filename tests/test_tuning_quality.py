"""Choosing K: dolda.tuning.tune_topics, its plot, and the GridSearchCV recipe of
docs/CHOOSING_K.md."""

import numpy as np
import pandas as pd
import pytest

from dolda import DOLDA, LDA
from dolda.tuning import (
    best_topics,
    coherence_scorer,
    perplexity_scorer,
    plot_tuning,
    tune_topics,
)
from dolda import Words

pytestmark = pytest.mark.quality


def planted(seed, n_docs, n_groups=4, n_words=10, per_class=2):
    """Documents from one of ``n_groups`` disjoint word groups; class = group // per_class."""
    rng = np.random.default_rng(seed)
    groups = [[f"{c}{i}" for i in range(5)] for c in "pqrstuvw"[:n_groups]]
    texts = [" ".join(rng.choice(groups[d % n_groups], n_words)) for d in range(n_docs)]
    y = np.array([f"c{(d % n_groups) // per_class}" for d in range(n_docs)])
    return texts, y


def test_tune_topics_prefers_the_true_number_of_groups(tmp_path):
    # 4 disjoint word groups of 5 words: K = 4 can separate them (perplexity 5 / 0.94 = 5.3
    # with 5 observed tokens and alpha = 0.1), K = 2 must merge two (about 10.6).  Measured:
    # K = 2: 10.3; K = 4: 6.5 (one fold separates all groups, the other sits in a local mode)
    texts, _ = planted(0, 160)
    table = tune_topics(texts, topics=[2, 4], folds=2, measure="c_npmi", n_words=4,
                        n_iter=40, alpha=0.1, n_jobs=1)
    assert list(table.index) == [2, 4]
    assert "accuracy" not in table
    assert table.loc[4, "perplexity"] < table.loc[2, "perplexity"]
    assert table.loc[4, "perplexity"] < 8.0 and table.loc[2, "perplexity"] > 9.0
    assert table.loc[4, "coherence"] > table.loc[2, "coherence"]
    assert best_topics(table) == {"coherence": 4, "perplexity": 4}
    assert len(table.attrs["folds"]) == 4
    fig = plot_tuning(table, tmp_path / "k.svg")
    assert len(fig.axes) == 2 and (tmp_path / "k.svg").stat().st_size > 1000


def test_tune_topics_with_labels_scores_accuracy():
    texts, y = planted(1, 120)
    lines = []
    table = tune_topics(texts, y, topics=[4], folds=2, n_iter=40, alpha=0.1, n_jobs=1,
                        progress=lines.append)
    assert 0.8 <= table.loc[4, "accuracy"] <= 1.0
    assert len(lines) == 2 and lines[0].startswith("K=4 fold 1/2: accuracy")
    with pytest.raises(ValueError, match="topics"):
        tune_topics(texts, y, topics=[1])


def test_gridsearchcv_recipe_from_the_docs():
    from sklearn.model_selection import GridSearchCV

    # one class per word group: two topics cannot tell four classes apart, four can (with
    # two classes per group, K = 2 can be as accurate as K = 4 and the tie goes to K = 2)
    texts, y = planted(2, 120, per_class=1)
    search = GridSearchCV(
        DOLDA(n_iter=40, alpha=0.1, progress=False, random_state=0, n_jobs=1, words=Words(n=0)),
        {"n_topics": [2, 4]}, cv=2, refit="accuracy",
        scoring={"accuracy": "accuracy", "perplexity": perplexity_scorer,
                 "coherence": coherence_scorer("c_npmi", n_words=4)})
    search.fit(texts, y)
    results = pd.DataFrame(search.cv_results_)
    assert {"mean_test_accuracy", "mean_test_perplexity", "mean_test_coherence"} <= set(results)
    # scorers are "greater is better": the perplexity scorer is minus the perplexity
    assert (results["mean_test_perplexity"] < -1).all()
    assert search.best_params_ == {"n_topics": 4}
    with pytest.raises(ValueError, match="measure"):
        coherence_scorer("c_x")


def test_scorers_work_on_lda():
    texts, _ = planted(3, 80)
    model = LDA(n_topics=4, n_iter=40, alpha=0.1, progress=False, random_state=0).fit(texts)
    from dolda.interpret.coherence import topic_coherence
    from dolda.evaluate.heldout import perplexity

    # V = 20 words: any fit that learnt something scores well below 20
    assert perplexity_scorer(model, texts) == -perplexity(model, texts) > -12.0
    assert coherence_scorer("u_mass", n_words=4)(model, texts) == pytest.approx(
        np.nanmean(topic_coherence(model, texts, "u_mass", n_words=4)))
