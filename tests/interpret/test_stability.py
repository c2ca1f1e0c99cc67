"""dolda.interpret.stability: identified topic contrasts, topic recurrence across chains, and the
signal topics that are offered (stable, judged on the contrast)."""

import numpy as np
import pytest

from dolda.interpret import stability as st
from dolda import Text, Words


def test_contrasts_and_levels_do_not_move_along_the_sum_to_one_direction():
    rng = np.random.default_rng(0)
    eta = rng.normal(size=(50, 3, 2 + 6))  # intercept, a covariate, 6 topics
    c = rng.normal(size=(50, 3)) * 5
    moved = eta.copy()
    moved[..., 0] += c
    moved[..., 2:] -= c[..., None]
    np.testing.assert_allclose(st.topic_contrasts(moved, 6), st.topic_contrasts(eta, 6),
                               atol=1e-12)
    np.testing.assert_allclose(st.class_levels(moved, 6), st.class_levels(eta, 6), atol=1e-12)
    # the raw coefficients and the intercept do move: what the contrasts protect against
    assert np.abs(moved[..., 2:] - eta[..., 2:]).max() > 1


def test_contrast_of_a_baseline_topic_is_zero_beside_a_strong_signal():
    """The median, not the mean: one topic at +6 leaves the others at 0, not at -6/K."""
    eta = np.zeros((4, 1, 1 + 8))
    eta[..., 1] = 6.0
    eff = st.topic_contrasts(eta, 8)
    assert np.all(eff[..., 0] == 6.0) and np.all(eff[..., 1:] == 0.0)


def test_matched_hellinger_and_recurrence():
    rng = np.random.default_rng(1)
    phi = rng.dirichlet(np.full(40, 0.1), size=5)
    perm = np.array([3, 0, 4, 1, 2])
    other = phi.copy()
    other[4] = rng.dirichlet(np.full(40, 0.1))  # one topic the other chain does not find
    shuffled = other[np.argsort(perm)]
    got, dist = st.matched_hellinger(phi, shuffled)
    np.testing.assert_allclose(shuffled[got][:4], phi[:4])
    assert np.all(dist[:4] < 1e-6) and dist[4] > st.REPRODUCE_HELLINGER
    rec = st.topic_recurrence(np.stack([np.zeros(5), dist]))
    np.testing.assert_array_equal(rec, [1, 1, 1, 1, 0.5])
    assert st.reproduced_share(dist) == 0.8


@pytest.fixture(scope="module")
def two_chains():
    from dolda import DOLDA
    from dolda.datasets import simulate

    sim = simulate(n_docs=200, n_topics=4, n_classes=3, vocab_size=200, doc_length=50,
                   n_signal=1, random_state=0)
    return DOLDA(n_topics=4, n_iter=40, n_chains=2, alpha=0.5, random_state=0, progress=False, words=Words(n=0), text=Text(rare_share=0.0)).fit(sim.texts, sim.y)


def test_signal_topics_report_recurrence_and_drop_unstable_topics(two_chains, tmp_path):
    m = two_chains
    assert m.topic_hellinger_.shape == (2, 4) and np.all(m.topic_hellinger_[0] == 0)
    label = m.classes_[0]
    table = m.signal_topics(label)
    assert {"coef", "lower", "upper", "sign", "repeats", "recurrence"} <= set(table.columns)
    assert len(table) > 0
    top = table.index[0]
    k = int(top.split()[-1])
    assert m.topic_shared_words_.shape == (2, 4) and np.all(m.topic_shared_words_[0] == 10)
    saved = m.topic_shared_words_.copy()
    try:
        # chain 1's matched topic shares 3 of the 10 top words: not found again, unstable
        m.topic_shared_words_[1, k] = 3
        assert top not in m.signal_topics(label).index
        stab = st.signal_stability(m)
        assert not stab.loc[(label, top), "stable"]
        assert stab.loc[(label, top), "recurrence"] == 0.5
        m.topic_shared_words_[1, k] = st.RECUR_TOP_WORDS  # 7 of 10: the same topic
        assert top in m.signal_topics(label).index
    finally:
        m.topic_shared_words_[:] = saved
    assert top in m.signal_topics(label).index
    # the reported figures the convergence verdict carries
    rep = m.convergence_
    assert np.isfinite(rep["reported_level_rhat_max"]) and rep["reported_n_signals"] >= 1
    # they are plain numbers, so a model file keeps them (meta.convergence's schema)
    import dolda

    path = tmp_path / "m"
    m.save(path)
    loaded = dolda.load(path).convergence_
    assert loaded["reported_n_signals"] == rep["reported_n_signals"]


def test_identified_rule_ignores_a_shift_along_the_ridge(two_chains):
    """Shifting every draw along (intercept + c, topics - c) changes the raw rule's signals
    but not the identified rule's."""
    m = two_chains
    label = m.classes_[1]
    before = m.signal_topics(label)
    raw_before = m.signal_topics(label, identified=False)
    saved = m.eta_draws_.copy()
    try:
        m.eta_draws_[:, :, 0] += 50.0
        m.eta_draws_[:, :, -4:] -= 50.0
        m._finish(m.eta_draws_)
        after = m.signal_topics(label)
        assert list(after.index) == list(before.index)
        np.testing.assert_allclose(after["coef"], before["coef"], atol=1e-3)
        assert set(m.signal_topics(label, identified=False).index) != set(raw_before.index)
    finally:
        m.eta_draws_[:] = saved
        m._finish(m.eta_draws_)


def test_column_repeats_counts_the_chains_where_a_column_is_a_signal():
    """Chain 0 sees column 1 away from zero, chain 1 does not: it repeats in half the
    chains; column 2 is a signal in both, column 0 in neither.  The same from the compact
    word-block storage."""
    from dolda.utils.draws import BlockDraws

    rng = np.random.default_rng(3)
    S = 200
    a = rng.normal(size=(S, 2, 3))
    b = rng.normal(size=(S, 2, 3))
    a[:, 1, 1] += 5.0
    a[:, 1, 2] += 5.0
    b[:, 1, 2] -= 5.0  # a signal of the other sign still counts as a signal in its chain
    eta = np.concatenate([a, b])
    got = st.column_repeats(eta, 1, [0, 1, 2], 2)
    np.testing.assert_array_equal(got, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(st.column_repeats(eta, 1, [2, 1], 2), [1.0, 0.5])
    np.testing.assert_array_equal(st.column_repeats(a, 1, [1], 1), [1.0])  # one chain
    assert st.column_repeats(eta, 0, [], 2).shape == (0,)
    blocks = BlockDraws(eta[:, :, [0, 2]].astype(np.float32), eta[:, :, 1:2], start=1)
    np.testing.assert_array_equal(st.column_repeats(blocks, 1, [0, 1, 2], 2), [0.0, 0.5, 1.0])


def test_signal_covariates_show_how_often_a_feature_repeats_across_chains():
    import pandas as pd

    from dolda import DOLDA

    rng = np.random.default_rng(4)
    S = 300
    cols = ["(intercept)", "word=kafka", "word=hive", "topic 0", "topic 1"]
    eta = rng.normal(size=(2 * S, 2, len(cols)))
    eta[:, 0, 1] += 6.0  # kafka: a signal of class a in both chains
    # hive: a signal of class a in chain 0; in chain 1, 4% of the draws are below zero, so
    # chain 1's 95% interval reaches zero while the pooled one (2% below zero) does not
    eta[:S, 0, 2] = 9.0
    eta[S:, 0, 2] = np.where(np.arange(S) < 12, -1.0, 3.0)
    m = DOLDA()
    m.classes_ = np.array(["a", "b"])
    m.n_chains_ = 2
    m.eta_draws_ = eta
    m.coef_ = pd.DataFrame(eta.mean(axis=0), index=m.classes_, columns=cols)
    table = m.signal_covariates("a")
    assert set(table.index) == {"word=kafka", "word=hive"}  # pooled intervals exclude zero
    assert table.loc["word=kafka", "repeats"] == 1.0
    assert table.loc["word=hive", "repeats"] == 0.5
    m.n_chains_ = 1
    assert (m.signal_covariates("a")["repeats"] == 1.0).all()
