"""DOLDA end to end on corpora simulated from its generative model."""

import os
import signal

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import linear_sum_assignment

from dolda import DOLDA
from dolda.datasets import simulate
from dolda import Covariates, Text, Words
from _flat import flat_dolda
from dolda import Checkpoint, Covariates, Dask, Prior, Sampler
from dolda.experimental import Experimental


def match_topics(phi_fit, phi_true):
    """Hungarian matching on Hellinger distance: fitted topic of every true topic, distances."""
    h = np.sqrt(0.5 * ((np.sqrt(phi_true)[:, None, :] - np.sqrt(phi_fit)[None, :, :]) ** 2)
                .sum(axis=2))
    rows, cols = linear_sum_assignment(h)
    return cols, h[rows, cols]


def phi_in_true_vocabulary(model, sim):
    """The fitted Phi re-indexed on the simulator's vocabulary (words it dropped get 0)."""
    words = list(model.vocabulary_.words)
    col = {w: i for i, w in enumerate(words)}
    out = np.zeros((model.phi_.shape[0], len(sim.vocabulary)))
    for v, w in enumerate(sim.vocabulary):
        if w in col:
            out[:, v] = model.phi_[:, col[w]]
    return out / out.sum(axis=1, keepdims=True)


N_TRAIN = 600


@pytest.fixture(scope="module")
def fitted():
    sim = simulate(n_docs=900, n_topics=8, n_classes=3, vocab_size=400, doc_length=80,
                   n_signal=1, covariates=True, random_state=3)
    model = DOLDA(n_topics=8, alpha=0.5, beta=0.01, n_iter=400, random_state=0, progress=False, text=Text(rare_share=0.0))
    model.fit(sim.texts[:N_TRAIN], sim.y[:N_TRAIN], X=sim.X.iloc[:N_TRAIN])
    return sim, model


def test_recovers_topics_signal_topics_and_covariate_effects(fitted):
    """Topics: Hellinger distance < 0.1 to the true topic after Hungarian matching
    (the oracle, Phi estimated from the true z, is at 0.03).
    Signal: each class's true signal topic is among its signal topics with the right
    sign; the covariate effects have the right sign; of the topics that are signal
    for no class, >= 80% of the coefficients have 95% intervals covering 0.  (A
    class's coefficients on *other* classes' signal topics are legitimately
    negative under the DO model, so they are not counted as noise.)"""
    sim, model = fitted
    match, dist = match_topics(phi_in_true_vocabulary(model, sim), sim.phi)
    assert np.all(dist < 0.1), dist
    K = sim.phi.shape[0]
    true_topics = sim.eta[:, -K:]
    lo, hi = model.coef_interval()
    noise_cover = []
    for l, label in enumerate(model.classes_):
        signal = model.signal_topics(label)
        for k in np.flatnonzero(true_topics[l]):
            name = f"topic {match[k]}"
            assert name in signal.index, (label, k, signal)
            assert np.sign(signal.loc[name, "coef"]) == np.sign(true_topics[l, k])
        for k in np.flatnonzero(~true_topics.any(axis=0)):  # signal for no class
            name = f"topic {match[k]}"
            noise_cover.append(lo.loc[label, name] < 0 < hi.loc[label, name])
    assert np.mean(noise_cover) >= 0.8
    assert model.coef_.loc[model.classes_[0], "x_num"] > 0
    assert model.coef_.loc[model.classes_[1], "x_cat=c"] > model.coef_.loc[model.classes_[1], "x_cat=a"]


def test_predicts_held_out_documents(fitted):
    """300 held-out documents: accuracy within 0.08 of the Bayes classifier that
    knows the true Phi, eta and topic proportions."""
    sim, model = fitted
    test = slice(N_TRAIN, None)
    acc = model.score(sim.texts[test], sim.y[test], X=sim.X.iloc[test])
    bayes = np.mean(sim.classes[np.argmax(sim.proba[test], axis=1)] == sim.y[test])
    assert acc > bayes - 0.08, (acc, bayes)
    proba = model.predict_proba(sim.texts[test][:20], X=sim.X.iloc[test].iloc[:20])
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_loglik_trace_increases_and_has_both_parts(fitted):
    _, model = fitted
    ll = model.loglik_
    assert list(ll.columns) == ["do", "lda", "total"]
    assert ll["total"].iloc[-50:].mean() > ll["total"].iloc[:5].mean()
    assert np.all(np.isfinite(ll.to_numpy()))


def test_explain_sums_to_class_scores(fitted):
    sim, model = fitted
    ex = model.explain(sim.texts[0], X_row=sim.X.iloc[0])
    assert set(ex.columns) == {"class", "feature", "value", "coef", "contribution"}
    top_class = max(ex.attrs["proba"], key=ex.attrs["proba"].get)
    assert ex["class"].iloc[0] == top_class
    for label, rows in ex.groupby("class"):
        np.testing.assert_allclose(rows["contribution"].sum(),
                                   (rows["value"] * rows["coef"]).sum())
        assert rows["contribution"].abs().is_monotonic_decreasing


def test_top_words_come_from_the_topics(fitted):
    sim, model = fitted
    words = model.top_words(5)
    assert words.shape == (8, 5)
    match, _ = match_topics(phi_in_true_vocabulary(model, sim), sim.phi)
    for k_true, k_fit in enumerate(match):
        block = set(sim.vocabulary[sim.topic_of_word == k_true])
        assert set(words.loc[f"topic {k_fit}"]) <= block


def test_save_load_round_trip_gives_identical_predictions(fitted, tmp_path):
    import dolda

    sim, model = fitted
    model.save(tmp_path / "m")
    loaded = dolda.load(tmp_path / "m")
    # identical classes; probabilities equal up to BLAS rounding (memory alignment of
    # the loaded arrays can change the summation order by one ulp)
    np.testing.assert_array_equal(loaded.predict(sim.texts[:30], X=sim.X.iloc[:30]),
                                  model.predict(sim.texts[:30], X=sim.X.iloc[:30]))
    np.testing.assert_allclose(loaded.predict_proba(sim.texts[:30], X=sim.X.iloc[:30]),
                               model.predict_proba(sim.texts[:30], X=sim.X.iloc[:30]),
                               rtol=1e-12, atol=1e-15)
    pd.testing.assert_frame_equal(loaded.coef_, model.coef_)


@pytest.mark.parametrize("z_sampler", ["auto", "cycle"])
def test_same_seed_same_chain_whatever_the_threads(z_sampler):
    sim = simulate(n_docs=120, n_topics=4, n_classes=2, vocab_size=100, doc_length=30,
                   random_state=1)
    kw = dict(n_topics=4, n_iter=12, random_state=5, progress=False, rare_share=0.0,
              z_sampler=z_sampler)
    one = flat_dolda(n_jobs=1, **kw).fit(sim.texts, sim.y)
    two = flat_dolda(n_jobs=2, **kw).fit(sim.texts, sim.y)
    np.testing.assert_array_equal(one.doc_topic_counts_, two.doc_topic_counts_)
    np.testing.assert_array_equal(one.eta_draws_, two.eta_draws_)


@pytest.mark.parametrize("z_sampler", ["auto", "cycle"])
def test_interrupt_then_resume_gives_the_uninterrupted_chain(tmp_path, monkeypatch, z_sampler):
    from dolda.models.dolda.estimator import FitInterrupted
    from dolda.sampler import gibbs_iteration as chain

    sim = simulate(n_docs=120, n_topics=4, n_classes=2, vocab_size=100, doc_length=30,
                   random_state=2)
    kw = dict(n_topics=4, n_iter=20, burn_in=5, random_state=8, progress=False,
              rare_share=0.0, z_sampler=z_sampler)
    full = flat_dolda(**kw).fit(sim.texts, sim.y)

    real_step = chain.dolda_step

    def step_with_ctrl_c(seed, it, *args):
        if it == 11:
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C in the middle of iteration 11
        return real_step(seed, it, *args)

    monkeypatch.setattr(chain, "dolda_step", step_with_ctrl_c)
    ckpt = tmp_path / "ckpt"
    with pytest.raises(FitInterrupted):
        flat_dolda(checkpoint=ckpt, checkpoint_every=4, **kw).fit(sim.texts, sim.y)
    monkeypatch.setattr(chain, "dolda_step", real_step)
    resumed = flat_dolda(checkpoint=ckpt, **kw).fit(sim.texts, sim.y, resume=ckpt)
    np.testing.assert_array_equal(resumed.eta_draws_, full.eta_draws_)
    np.testing.assert_array_equal(resumed.doc_topic_counts_, full.doc_topic_counts_)
    np.testing.assert_allclose(resumed.loglik_.to_numpy(), full.loglik_.to_numpy())


#: Corpus seeds of the joint-vs-two-step comparison (one simulated corpus each).
JOINT_SEEDS = (11, 12, 13, 14, 15, 16)


def _joint_and_two_step_accuracy(seed, topic_init="random"):
    sim = simulate(n_docs=800, n_topics=6, n_classes=3, vocab_size=300, doc_length=60,
                   n_signal=1, rare_topic=True, random_state=seed)
    train, test = slice(0, 500), slice(500, 800)
    texts = np.asarray(sim.texts, dtype=object)
    kw = dict(n_topics=4, alpha=0.1, n_iter=200, random_state=0, progress=False,
              rare_share=0.0, n_words=0)  # the paper's claim is about topics
    joint = flat_dolda(topic_init=topic_init, **kw).fit(list(texts[train]), sim.y[train])
    two = flat_dolda(two_step=True, **kw).fit(list(texts[train]), sim.y[train])
    return (joint.score(list(texts[test]), sim.y[test]),
            two.score(list(texts[test]), sim.y[test]))


def test_joint_beats_two_step_when_the_class_topic_is_rare():
    """One class depends on a topic carrying ~1% of tokens and the model has fewer
    topics (4) than the truth (6): unsupervised LDA may merge the rare topic away, the
    joint sampler keeps it (paper section 4's claim).  Over six simulated corpora
    (seeds 11-16; 300 held-out documents each) the paired margins joint - two-step were
    +0.043, +0.003, +0.220, +0.053, +0.003, +0.007 (mean 0.055): large where LDA lost
    the topic, ties where it kept it.  Required: a mean margin of at least 0.02 and no
    corpus where the joint sampler is behind by more than 0.02 (paired accuracies on
    the same documents; a tie differs by one or two documents).

    Power (docs/MUTATION.md): a z-step reading the previous iteration's eta gives
    margins -0.143, +0.057, +0.213, 0, +0.007, +0.007 and fails the second condition.
    Two other planted bugs do not move this contrast (mean margins 0.052 with the
    intercept shrunk by the Horseshoe, 0.062 with beta dropped on non-zero counts in
    the Phi draw): they shift both chains alike, and are caught by the direct tests
    in test_sampler_power.py.  (The single-seed version of this test, margin 0.03 at
    seed 11, caught them by chance: at seeds 12, 15 and 16 the correct sampler's
    margin is below 0.01.)"""
    margins = []
    for seed in JOINT_SEEDS:
        acc_joint, acc_two = _joint_and_two_step_accuracy(seed)
        margins.append(acc_joint - acc_two)
    margins = np.array(margins)
    assert margins.mean() >= 0.02, margins
    assert margins.min() >= -0.02, margins


def test_the_default_start_keeps_the_rare_class_topic():
    """The same six corpora from the default, data-determined start (PLSA from its SVD start):
    the joint sampler still wins where LDA loses the rare topic (margins +0.013, +0.273,
    +0.344 at seeds 12, 14, 15) and is behind by at most 0.034 elsewhere (seeds 11 and 16:
    the start's mode, which the random start does not share).  Required: a mean margin of at
    least 0.02 and none below -0.05.  A PLSA start from a random point instead of the SVD one
    fell into a mode 0.26 behind at seed 16 and fails this."""
    margins = np.array([np.subtract(*_joint_and_two_step_accuracy(seed, topic_init="nmf"))
                        for seed in JOINT_SEEDS])
    assert margins.mean() >= 0.02, margins
    assert margins.min() >= -0.05, margins


@pytest.mark.bad_input
@pytest.mark.parametrize("kwargs, match", [
    ({"n_topics": 1}, "n_topics must be >= 2"),
    ({"alpha": 0.0}, "alpha must be a finite number > 0"),
    ({"beta": -1.0}, "beta must be a finite number > 0"),
    ({"sampler": Sampler(z="fast")}, "Sampler.z must be one of"),
    ({"sampler": Sampler(z="cycle")}, "Sampler.z must be one of 'auto', 'exact', 'mh'"),
    ({"sampler": Sampler(phi="polya"), "experimental": Experimental(z_sampler="cycle")},
     "needs the exact Phi"),
    ({"prior": Prior(kind="lasso")}, "Prior.kind must be one of"),
    ({"prior": "horseshoe"}, "prior must be a dolda.Prior"),
    ({"covariates": Covariates(min_count=0)}, "Covariates.min_count must be"),
    ({"backend": Dask(phi_transport="sparse")},
     "Dask.phi_transport must be one of 'auto', 'recipe', 'dense'"),
    ({"backend": "dask"}, "backend must be 'local' or a dolda.Dask"),
    ({"checkpoint": Checkpoint("ck", every=0)}, "Checkpoint.every must be"),
])
def test_bad_parameters_are_named(kwargs, match):
    """Each bad value is refused in one line naming it as the user wrote it, before any work."""
    with pytest.raises(ValueError, match=match) as info:
        DOLDA(**kwargs).fit(["a b c", "d e f"], [0, 1])
    assert "\n" not in str(info.value)


def test_bad_data_is_named():
    with pytest.raises(ValueError, match="different lengths"):
        DOLDA(n_iter=2, progress=False).fit(["aa bb", "cc dd", "ee ff"], [0, 1])
    with pytest.raises(ValueError, match="single class"):
        DOLDA(n_iter=2, progress=False).fit(["aa bb", "cc dd"], ["x", "x"])


def test_covariate_min_count_pools_rare_levels_and_survives_save(tmp_path):
    """Rare levels share one "column=other" coefficient, also after save/load."""
    import dolda

    sim = simulate(n_docs=120, n_topics=3, n_classes=2, vocab_size=60, doc_length=20,
                   random_state=2)
    X = pd.DataFrame({"site": ["a"] * 60 + ["b"] * 50 + [f"r{i}" for i in range(10)]})
    model = DOLDA(n_topics=3, n_iter=20, random_state=0, progress=False, covariates=Covariates(min_count=3), words=Words(n=0)).fit(sim.texts, sim.y, X=X)  # dense U
    assert [n for n in model.feature_names_ if n.startswith("site=")] == \
        ["site=a", "site=b", "site=other"]
    # a rare training level and an unseen level both read the "other" coefficient
    rows = pd.DataFrame({"site": ["r3", "never seen"]})
    with pytest.warns(UserWarning, match="never seen"):
        U = model._regressors(sim.texts[:2], rows)
    other = model.feature_names_.index("site=other")
    assert U[:, other].tolist() == [1.0, 1.0]
    model.save(tmp_path / "m")
    assert dolda.load(tmp_path / "m").covariate_min_count == 3
