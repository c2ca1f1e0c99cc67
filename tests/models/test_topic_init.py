"""``DOLDA(topic_init="nmf")``, the default: one deterministic, data-determined topic start.

The start is what its docstring says: every token in its most probable topic under PLSA,
whose EM step is checked against a case computed by hand and shown to raise the PLSA
likelihood.  It is a function of the corpus and K: the same z for every seed, chain and
n_jobs, valid (n_{d,k} counts z, every z in range), also with more topics than documents,
wired into the chain (and into the ``init_iter`` LDA warm start, which continues from it),
kept by get_params / clone / save-load, and a resumed chain ends where the uninterrupted one
does.  The posterior sampled is unchanged (only the start moves), so the
exactness tests of the kernels stand as they are.
"""

import numpy as np
import pytest
from sklearn.base import clone

import dolda
from dolda import DOLDA
from dolda.datasets import simulate
from dolda.sampler import gibbs_iteration as dolda_chain
from dolda.sampler import topic_start
from _flat import flat_dolda

KW = dict(n_topics=4, n_iter=8, burn_in=4, n_words=0, rare_share=0, progress=False,
          phi_draws=2)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=80, n_topics=4, n_classes=3, vocab_size=60, doc_length=25,
                    random_state=3)


def _record_starts(monkeypatch):
    """Every chain's initial state, as ``init_state`` returned it."""
    starts = []
    real = dolda_chain.init_state

    def recording(seed, data, config, topics=None):
        state = real(seed, data, config, topics)
        starts.append((seed, state.z.copy(), state.ndk.copy(), data))
        return state

    monkeypatch.setattr(dolda_chain, "init_state", recording)
    return starts


def test_the_start_is_the_same_for_every_seed_and_valid(sim, monkeypatch):
    starts = _record_starts(monkeypatch)
    for seed in (0, 1):
        flat_dolda(topic_init="nmf", random_state=seed, **KW).fit(sim.texts, sim.y)
    flat_dolda(topic_init="random", random_state=0, **KW).fit(sim.texts, sim.y)
    (s0, z0, n0, data), (s1, z1, n1, _), (_, zr, _, _) = starts
    assert s0 != s1
    np.testing.assert_array_equal(z0, z1)
    np.testing.assert_array_equal(n0, n1)
    assert not np.array_equal(z0, zr)  # the random start is not this one
    K = KW["n_topics"]
    assert z0.dtype == np.int32 and z0.min() >= 0 and z0.max() < K
    docs = np.repeat(np.arange(len(data.y)), np.diff(data.doc_ptr))
    counted = np.zeros_like(n0)
    np.add.at(counted, (docs, z0), 1)
    np.testing.assert_array_equal(n0, counted)
    assert len(np.unique(z0)) > 1  # not everything in one topic


def test_the_start_follows_the_data_argmax():
    # two blocks of words, two blocks of documents: NMF puts each block in its own topic
    tokens = np.array([0, 1, 0, 1, 2, 3, 3, 2, 0, 0, 2, 3], np.int32)
    doc_ptr = np.array([0, 4, 8, 10, 12], np.int64)
    z, ndk = topic_start.nmf_topics(tokens, doc_ptr, 4, 2)
    assert len(set(z[tokens < 2])) == 1 and len(set(z[tokens >= 2])) == 1
    assert z[tokens < 2][0] != z[tokens >= 2][0]
    np.testing.assert_array_equal(ndk.sum(axis=1), np.diff(doc_ptr))
    # ties go to the lowest topic; an all-zero score takes the word's largest H
    W = np.array([[1.0, 1.0], [0.0, 0.0]])
    H = np.array([[1.0, 0.0], [1.0, 2.0]])
    z, _ = topic_start.assign_topics(np.array([0, 0, 1], np.int32),
                                     np.array([0, 1, 3]), W, H)
    np.testing.assert_array_equal(z, [0, 0, 1])


def test_same_chain_for_any_n_jobs_also_with_the_warm_start(sim):
    for extra in ({}, {"init_iter": 3}):
        one, two = [flat_dolda(topic_init="nmf", random_state=2, n_jobs=j, **extra, **KW)
                    .fit(sim.texts, sim.y) for j in (1, 2)]
        np.testing.assert_array_equal(one.eta_draws_, two.eta_draws_)
        np.testing.assert_array_equal(one.phi_, two.phi_)


def test_the_warm_start_continues_from_the_nmf_start(sim, monkeypatch):
    from dolda.backends import local

    seen = []
    real = local.LocalLDAChain.__init__

    def init(self, *args, topics=None, **kw):
        seen.append(None if topics is None else topics[0].copy())
        real(self, *args, topics=topics, **kw)
        seen.append(self.z.copy())

    monkeypatch.setattr(local.LocalLDAChain, "__init__", init)
    starts = _record_starts(monkeypatch)
    flat_dolda(topic_init="nmf", init_iter=2, random_state=0, **KW).fit(sim.texts, sim.y)
    flat_dolda(topic_init="random", init_iter=2, random_state=0, **KW).fit(sim.texts, sim.y)
    nmf_z = starts[0][1]
    np.testing.assert_array_equal(seen[0], nmf_z)  # handed to the LDA chain ...
    np.testing.assert_array_equal(seen[1], nmf_z)  # ... which starts from it
    assert seen[2] is None and not np.array_equal(seen[3], nmf_z)  # random: its own start


def test_bad_values_are_one_line_errors(sim):
    with pytest.raises(ValueError, match="topic_init") as err:
        flat_dolda(topic_init="kmeans", **KW).fit(sim.texts, sim.y)
    assert "\n" not in str(err.value)


def test_more_topics_than_documents_still_start_deterministically(sim, monkeypatch):
    # PLSA needs no SVD: K > D (and > V) is a valid start, the same for every seed
    starts = _record_starts(monkeypatch)
    kw = {**KW, "n_topics": 40}
    for seed in (0, 1):
        flat_dolda(topic_init="nmf", random_state=seed, **kw).fit(sim.texts[:30], sim.y[:30])
    np.testing.assert_array_equal(starts[0][1], starts[1][1])
    assert starts[0][1].max() < 40


def test_one_em_step_is_the_plsa_update_computed_by_hand():
    # counts n = [[2, 1], [0, 3]]; p(k|d) = W, p(w|k) = H; every nonzero n_dw is shared among
    # the topics as W[d, k] H[k, w] / sum_k W[d, k] H[k, w]
    W = np.array([[0.5, 0.5], [0.25, 0.75]])
    H = np.array([[0.8, 0.2], [0.4, 0.6]])
    ptr, words, counts = np.array([0, 2, 3]), np.array([0, 1, 1]), np.array([2.0, 1.0, 3.0])
    W_new, Ht_new = np.zeros((2, 2)), np.zeros((2, 2))
    topic_start._em_sweep(ptr, words, counts, W, np.ascontiguousarray(H.T), W_new, Ht_new)
    # d0 w0: 0.4, 0.2 -> shares 2/3, 1/3 of 2; d0 w1: 0.1, 0.3 -> 1/4, 3/4 of 1;
    # d1 w1: 0.05, 0.45 -> 1/10, 9/10 of 3
    np.testing.assert_allclose(W_new, [[4 / 3 + 1 / 4, 2 / 3 + 3 / 4], [0.3, 2.7]])
    np.testing.assert_allclose(Ht_new, [[4 / 3, 2 / 3], [1 / 4 + 0.3, 3 / 4 + 2.7]])


def test_the_em_steps_raise_the_plsa_likelihood():
    rng = np.random.default_rng(0)
    lengths = rng.integers(5, 30, size=40)
    doc_ptr = np.r_[0, np.cumsum(lengths)]
    tokens = rng.integers(0, 25, size=doc_ptr[-1]).astype(np.int32)
    n = topic_start.count_matrix(tokens, doc_ptr, 25).toarray()
    lik = [(n * np.log(np.maximum(W @ H, 1e-300))).sum()
           for W, H in (topic_start.nmf_factors(tokens, doc_ptr, 25, 4, it)
                        for it in (0, 1, 2, 5, 20))]
    assert np.all(np.diff(lik) > 0), lik  # EM never lowers the likelihood


def test_params_clone_and_save_load_keep_it(sim, tmp_path):
    assert DOLDA().topic_init == "nmf"
    m = flat_dolda(topic_init="nmf", random_state=0, **KW)
    assert m.get_params()["topic_init"] == "nmf"
    assert clone(m).topic_init == "nmf"
    assert DOLDA().set_params(topic_init="nmf").topic_init == "nmf"
    m.fit(sim.texts, sim.y)
    m.save(tmp_path / "m")
    back = dolda.load(tmp_path / "m")
    assert back.topic_init == "nmf"
    np.testing.assert_array_equal(back.predict_proba(sim.texts[:5]),
                                  m.predict_proba(sim.texts[:5]))


def test_resumed_chain_ends_where_the_uninterrupted_one_does(sim, tmp_path, monkeypatch):
    import os
    import signal

    from dolda.models.dolda.estimator import FitInterrupted

    kw = dict(KW, topic_init="nmf", init_iter=2, random_state=0)
    full = flat_dolda(**kw).fit(sim.texts, sim.y)
    real_step = dolda_chain.dolda_step

    def step_with_ctrl_c(seed, it, *args):
        if it == 5:
            os.kill(os.getpid(), signal.SIGINT)
        return real_step(seed, it, *args)

    monkeypatch.setattr(dolda_chain, "dolda_step", step_with_ctrl_c)
    with pytest.raises(FitInterrupted):
        flat_dolda(checkpoint=tmp_path / "ck", checkpoint_every=2, **kw).fit(sim.texts, sim.y)
    monkeypatch.setattr(dolda_chain, "dolda_step", real_step)
    resumed = flat_dolda(**kw).fit(sim.texts, sim.y, resume=tmp_path / "ck")
    np.testing.assert_array_equal(resumed.eta_draws_, full.eta_draws_)
    np.testing.assert_array_equal(resumed.phi_, full.phi_)
    np.testing.assert_array_equal(resumed.doc_topic_counts_, full.doc_topic_counts_)
