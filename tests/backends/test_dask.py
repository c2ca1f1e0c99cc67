"""The Dask backend runs the same chain as the local one, survives a lost worker, cleans up.

A real ``LocalCluster`` of two single-threaded worker processes (with nannies,
so a killed worker is restarted) is started once for the module.
"""

import os
import signal
import threading
import time

import numpy as np
import pytest

from dolda import DOLDA
from dolda.datasets import simulate
from _flat import flat_dolda

distributed = pytest.importorskip("distributed")

KW = dict(n_topics=4, n_iter=12, burn_in=4, alpha=0.1, random_state=5, progress=False,
          rare_share=0.0)


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    cl = distributed.Client(cluster)
    try:
        yield cl
    finally:
        cl.close()
        cluster.close()


@pytest.fixture
def killable_client():
    """A cluster of its own for a test that SIGKILLs a worker: whether the nanny brings the
    worker back is distributed's business (in CI, 2026.8, a nanny once closed for good
    after restarting its killed worker), and the shared cluster must not depend on it."""
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=40)
    cl = distributed.Client(cluster)
    try:
        cl.wait_for_workers(2, timeout=60)
        yield cl
    finally:
        cl.close()
        cluster.close()


@pytest.fixture(scope="module")
def corpus():
    return simulate(n_docs=240, n_topics=4, n_classes=3, vocab_size=150, doc_length=40,
                    random_state=3)


def _assert_same_chain(one, two):
    assert one.eta_draws_.dtype == two.eta_draws_.dtype == np.float32  # kept draws
    np.testing.assert_array_equal(one.eta_draws_, two.eta_draws_)
    np.testing.assert_array_equal(one.tau_draws_, two.tau_draws_)
    np.testing.assert_array_equal(one.doc_topic_counts_, two.doc_topic_counts_)
    np.testing.assert_array_equal(one.loglik_.to_numpy(), two.loglik_.to_numpy())
    np.testing.assert_array_equal(one.phi_, two.phi_)


def _our_keys(client):
    """Keys held by the workers (the test's own cluster: every key is ours)."""
    held = client.run(lambda dask_worker: list(dask_worker.data.keys()))
    return [k for keys in held.values() for k in keys] + list(client.who_has())


@pytest.mark.parametrize("n_shards", [2, 3])
def test_dask_chain_equals_local_chain(client, corpus, n_shards):
    local = flat_dolda(n_shards=n_shards, n_jobs=2, **KW).fit(corpus.texts, corpus.y)
    dask = flat_dolda(backend="dask", client=client, n_shards=n_shards, **KW).fit(corpus.texts,
                                                                               corpus.y)
    _assert_same_chain(local, dask)
    assert np.isfinite(local.loglik_.to_numpy()).all()


@pytest.mark.parametrize("z_sampler", ["mh", "exact"])
def test_dask_chain_equals_local_chain_with_polya_phi(client, corpus, z_sampler):
    """Only the non-zeros of the Pólya-urn Phi travel; the workers rebuild the dense view
    and the alias tables, and the chain is the local one to the last bit."""
    kw = dict(KW, phi_sampler="polya", z_sampler=z_sampler, loglik_every=2)
    local = flat_dolda(n_shards=3, n_jobs=2, **kw).fit(corpus.texts, corpus.y)
    dask = flat_dolda(backend="dask", client=client, n_shards=3, **kw).fit(corpus.texts, corpus.y)
    _assert_same_chain(local, dask)
    ll = local.loglik_.to_numpy()
    assert np.isfinite(ll[1::2]).all() and np.isnan(ll[0::2]).all()


def test_shard_layout_changes_only_rounding(corpus):
    """Random streams follow the global document index: with 1 and 3 shards the chains
    differ only by the rounding of the summed statistics (first iterations)."""
    kw = dict(KW, n_iter=3, burn_in=0)
    one = flat_dolda(n_shards=1, **kw).fit(corpus.texts, corpus.y)
    three = flat_dolda(n_shards=3, **kw).fit(corpus.texts, corpus.y)
    np.testing.assert_allclose(one.eta_draws_, three.eta_draws_, rtol=0, atol=1e-9)
    # the draws are float32 roundings: the float64 log-likelihood of every iteration keeps
    # the test sensitive to differences beyond rounding
    np.testing.assert_allclose(one.loglik_.to_numpy(), three.loglik_.to_numpy(), rtol=1e-12)
    np.testing.assert_array_equal(one.doc_topic_counts_, three.doc_topic_counts_)


@pytest.mark.parametrize("phi_transport", ["auto", "recipe"])
def test_lost_worker_is_replayed_to_the_same_result(killable_client, corpus, monkeypatch,
                                                    phi_transport):
    """Replayed from the snapshot: its Phi and, with ``"recipe"``, the counts that Phi was
    drawn from (what the first replayed iteration sends) are restored with it."""
    from dolda.backends import dask as dask_backend

    kw = dict(KW, n_iter=14)
    client = killable_client
    reference = flat_dolda(n_shards=3, **kw).fit(corpus.texts, corpus.y)
    pids = client.run(os.getpid)
    victim = sorted(pids)[0]
    real_step, real_recover = dask_backend.DaskChain.step, dask_backend.DaskChain._recover
    recoveries, kills = [], []

    def step(self, iteration):
        if iteration == 8 and not kills:  # snapshot at 5: iterations 5..7 must be replayed
            kills.append(iteration)  # once: the replay passes iteration 8 again
            threading.Timer(0.05, os.kill, (pids[victim], signal.SIGKILL)).start()
        return real_step(self, iteration)

    def recover(self, iteration):
        recoveries.append(iteration)
        return real_recover(self, iteration)

    monkeypatch.setattr(dask_backend.DaskChain, "step", step)
    monkeypatch.setattr(dask_backend.DaskChain, "_recover", recover)
    # the chain releases its futures, never cancels them: cancelling keys that the worker's
    # loss had already forgotten tripped an assertion in the scheduler (distributed
    # 2026.8), which dropped the client's connection and the data scattered for the replay
    cancels = []
    monkeypatch.setattr(client, "cancel", lambda *a, **k: cancels.append(a))
    disturbed = flat_dolda(backend="dask", client=client, n_shards=3, snapshot_every=5,
                      phi_transport=phi_transport, **kw).fit(corpus.texts, corpus.y)
    assert recoveries, "the worker was killed but no recovery happened"
    assert not cancels
    _assert_same_chain(reference, disturbed)


def test_no_shard_data_left_on_the_cluster(client, corpus):
    flat_dolda(backend="dask", client=client, n_shards=3, **dict(KW, n_iter=3, burn_in=0)).fit(
        corpus.texts, corpus.y)
    deadline = time.monotonic() + 10
    while _our_keys(client) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _our_keys(client) == []


# ------------------------------------------------------------------ dolda.LDA
LDA_KW = dict(n_topics=5, n_iter=10, burn_in=3, alpha=0.1, random_state=9, progress=False,
              rare_share=0.0)


def _assert_same_lda_chain(one, two):
    np.testing.assert_array_equal(one.z_, two.z_)
    np.testing.assert_array_equal(one.doc_topic_counts_, two.doc_topic_counts_)
    np.testing.assert_array_equal(one.phi_, two.phi_)
    np.testing.assert_array_equal(one.loglik_, two.loglik_)


@pytest.mark.parametrize("sampler,n_shards", [("dense", 2), ("sparse", 3)])
def test_lda_dask_chain_equals_local_chain(client, corpus, sampler, n_shards):
    from dolda import LDA

    local = LDA(sampler=sampler, n_shards=n_shards, n_jobs=2, **LDA_KW).fit(corpus.texts)
    dask = LDA(sampler=sampler, backend="dask", client=client, n_shards=n_shards,
               **LDA_KW).fit(corpus.texts)
    _assert_same_lda_chain(local, dask)
    assert np.isfinite(dask.loglik_).all()
    assert dask.z_.shape == (dask.n_tokens_,)
    # the draws do not depend on the shard layout at all; only the trace's rounding does
    whole = LDA(sampler=sampler, **LDA_KW).fit(corpus.texts)
    np.testing.assert_array_equal(whole.z_, dask.z_)
    np.testing.assert_array_equal(whole.phi_, dask.phi_)
    np.testing.assert_allclose(whole.loglik_, dask.loglik_, rtol=1e-12)


@pytest.mark.parametrize("phi_transport", ["auto", "recipe"])
def test_lda_lost_worker_is_replayed_to_the_same_result(killable_client, corpus, monkeypatch,
                                                        phi_transport):
    from dolda import LDA
    from dolda.backends import dask as dask_backend


    kw = dict(LDA_KW, n_iter=12, sampler="sparse")
    client = killable_client
    reference = LDA(n_shards=3, **kw).fit(corpus.texts)
    pids = client.run(os.getpid)
    victim = sorted(pids)[-1]
    real_step = dask_backend.DaskLDAChain.step
    chains = []

    def step(self, iteration):
        if iteration == 7 and not chains:  # snapshot at 4: iterations 4..6 are replayed
            chains.append(self)  # kill once: the replay passes iteration 7 again
            threading.Timer(0.02, os.kill, (pids[victim], signal.SIGKILL)).start()
            time.sleep(0.3)  # let the kill land during this iteration or just before it
        return real_step(self, iteration)

    monkeypatch.setattr(dask_backend.DaskLDAChain, "step", step)
    disturbed = LDA(backend="dask", client=client, n_shards=3, snapshot_every=4,
                    phi_transport=phi_transport, **kw).fit(corpus.texts)
    assert chains and chains[0].recoveries >= 1, "the worker was killed but nothing was replayed"
    _assert_same_lda_chain(reference, disturbed)


def test_lda_leaves_no_data_on_the_cluster_and_saves_without_the_client(client, corpus,
                                                                          tmp_path):
    import dolda
    from dolda import LDA

    model = LDA(backend="dask", client=client, n_shards=2, **dict(LDA_KW, n_iter=3,
                                                                   burn_in=0))
    model.fit(corpus.texts)
    deadline = time.monotonic() + 10
    while _our_keys(client) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _our_keys(client) == []
    model.save(tmp_path / "lda")
    loaded = dolda.load(tmp_path / "lda")
    assert loaded.backend == "dask" and loaded.client is None and loaded.n_shards == 2
    np.testing.assert_array_equal(loaded.phi_, model.phi_)


def test_dask_chain_equals_local_chain_with_the_mh_z_step(client, corpus):
    """The MH z-step builds alias tables only for frequent words: both backends must
    agree on which (the corpus has words on both sides of the threshold)."""
    from dolda.design.corpus import Vocabulary
    from dolda.sampler.lda import ALIAS_MIN_TOKENS

    tokens = Vocabulary(rare_share=0.0).fit_transform(corpus.texts).tokens
    per_word = np.bincount(tokens)
    assert (per_word >= ALIAS_MIN_TOKENS).any() and (per_word < ALIAS_MIN_TOKENS).any()
    kw = dict(KW, n_iter=6, burn_in=2, z_sampler="mh")
    local = flat_dolda(n_shards=2, n_jobs=2, **kw).fit(corpus.texts, corpus.y)
    dask = flat_dolda(backend="dask", client=client, n_shards=2, **kw).fit(corpus.texts, corpus.y)
    _assert_same_chain(local, dask)


def test_dask_chain_equals_local_chain_with_sparse_covariates(client, corpus):
    """Issue 12: X kept sparse (CG eta-step on U = [X, zbar]) runs the same chain on Dask."""
    import scipy.sparse as sp

    rng = np.random.default_rng(0)
    X = sp.csr_matrix(np.eye(25)[rng.integers(0, 25, len(corpus.texts))])
    kw = dict(KW, eta_sampler="cg", n_shards=3)
    local = flat_dolda(n_jobs=2, **kw).fit(corpus.texts, corpus.y, X=X)
    dask = flat_dolda(backend="dask", client=client, **kw).fit(corpus.texts, corpus.y, X=X)
    assert local.eta_sampler_ == "cg"
    _assert_same_chain(local, dask)


@pytest.mark.parametrize("extra", [{}, {"z_sampler": "mh", "phi_sampler": "polya"}],
                         ids=["exact", "mh-polya"])
def test_dask_chain_equals_local_chain_with_learned_asymmetric_alpha(client, corpus, extra):
    """``alpha="auto"``: the per-topic alpha learned at iterations 10 and 20 of the burn-in
    (and the word-bucket tables of the MH step built from it, on the driver or, with the
    Pólya-urn Phi, on the workers) give the local chain to the last bit."""
    kw = dict(KW, n_iter=24, burn_in=20, alpha="auto", **extra)
    local = flat_dolda(n_shards=3, n_jobs=2, **kw).fit(corpus.texts, corpus.y)
    dask = flat_dolda(backend="dask", client=client, n_shards=3, **kw).fit(corpus.texts, corpus.y)
    _assert_same_chain(local, dask)
    np.testing.assert_array_equal(local.alpha_, dask.alpha_)
    assert local.alpha_.shape == (4,) and np.ptp(local.alpha_) > 0


def _record_phi_transport(monkeypatch, chain_class):
    """Record, iteration by iteration, whether the counts travelled instead of Phi."""
    sent_counts = []
    real = chain_class._recipe_travels

    def travels(self):
        sent_counts.append(real(self))
        return sent_counts[-1]

    monkeypatch.setattr(chain_class, "_recipe_travels", travels)
    return sent_counts


@pytest.mark.parametrize("z_sampler", ["mh", "exact", "cycle"])
def test_dask_workers_repeat_the_phi_draw_from_its_counts(client, corpus, z_sampler,
                                                          monkeypatch):
    """With the counts Phi was drawn from sent instead of Phi, every worker repeats the
    exact draw (and, for the MH step, builds the alias tables): the local chain to the last
    bit.  Only the first iteration sends Phi (the driver has drawn none yet)."""
    from dolda.backends import dask as dask_backend

    kw = dict(KW, n_iter=8, burn_in=2, z_sampler=z_sampler)
    local = flat_dolda(n_shards=3, n_jobs=2, **kw).fit(corpus.texts, corpus.y)
    sent_counts = _record_phi_transport(monkeypatch, dask_backend.DaskChain)
    dask = flat_dolda(backend="dask", client=client, n_shards=3, phi_transport="recipe",
                 **kw).fit(corpus.texts, corpus.y)
    assert sent_counts == [False] + [True] * 7
    _assert_same_chain(local, dask)
    # phi_transport="dense": Phi itself on every iteration, the same chain
    del sent_counts[:]
    dense = flat_dolda(backend="dask", client=client, n_shards=3, phi_transport="dense",
                  **kw).fit(corpus.texts, corpus.y)
    assert sent_counts == [False] * 8
    _assert_same_chain(local, dense)
    assert dense.get_params()["backend__phi_transport"] == "dense"


@pytest.mark.parametrize("sampler", ["dense", "sparse"])
def test_lda_dask_workers_repeat_the_phi_draw_from_its_counts(client, corpus, sampler,
                                                              monkeypatch):
    from dolda import LDA
    from dolda.backends import dask as dask_backend

    local = LDA(sampler=sampler, n_shards=2, n_jobs=2, **LDA_KW).fit(corpus.texts)
    sent_counts = _record_phi_transport(monkeypatch, dask_backend.DaskLDAChain)
    dask = LDA(sampler=sampler, backend="dask", client=client, n_shards=2,
               phi_transport="recipe", **LDA_KW).fit(corpus.texts)
    assert sent_counts == [False] + [True] * (LDA_KW["n_iter"] - 1)
    _assert_same_lda_chain(local, dask)


def _record_driver_draws(monkeypatch):
    """The iterations of the Phi recipes drawn in this process, the driver (the workers
    draw in their own processes)."""
    from dolda.sampler.phi import PhiRecipe

    draws = []
    real_draw = PhiRecipe.draw

    def draw(self):
        draws.append(self.iteration)
        return real_draw(self)

    monkeypatch.setattr(PhiRecipe, "draw", draw)
    return draws


@pytest.mark.parametrize("transport,drawn", [("recipe", []), ("dense", list(range(9)))])
def test_lda_driver_draws_phi_only_when_phi_travels(client, corpus, monkeypatch, transport,
                                                     drawn):
    """dolda.LDA averages E[phi | z] from the counts, so the driver draws Phi from its recipe
    only for an iteration that sends Phi itself: never while the counts travel, before every
    iteration but the first (the initial Phi) when Phi is sent."""
    from dolda import LDA

    local = LDA(sampler="sparse", n_shards=2, n_jobs=2, **LDA_KW).fit(corpus.texts)
    draws = _record_driver_draws(monkeypatch)
    dask = LDA(sampler="sparse", backend="dask", client=client, n_shards=2,
               phi_transport=transport, **LDA_KW).fit(corpus.texts)
    assert draws == drawn
    _assert_same_lda_chain(local, dask)


def test_phi_recipe_repeats_the_draw_bit_for_bit():
    """The recipe's draw is the chain's Phi step itself (same streams), for any threads,
    and its byte count is the counts' (what the transport rule compares with Phi)."""
    from dolda.sampler.counts import SparseCounts
    from dolda.sampler.phi import PhiRecipe, draw_phi_word_major
    from dolda.sampler.threads import using_threads

    rng = np.random.default_rng(4)
    nkw = rng.poisson(0.3, size=(6, 50)).astype(np.int32)
    rows, cols = np.nonzero(nkw)
    ptr = np.zeros(7, np.int64)
    np.cumsum(np.bincount(rows, minlength=6), out=ptr[1:])
    counts = SparseCounts(ptr, cols.astype(np.int32), nkw[rows, cols])
    recipe = PhiRecipe(counts, 0.01, 17, 5, 50)
    expected = draw_phi_word_major(counts, 0.01, 17, 5, np.empty((50, 6), np.float32))
    for threads in (1, 2):
        with using_threads(threads):
            np.testing.assert_array_equal(recipe.draw(), expected)
    assert recipe.nbytes == ptr.nbytes + 8 * len(rows)
    other = draw_phi_word_major(counts, 0.01, 17, 6, np.empty((50, 6), np.float32))
    assert not np.array_equal(other, expected)  # the iteration picks the streams


def test_driver_draws_phi_only_for_checkpoints_while_the_counts_travel(client, corpus,
                                                                       monkeypatch, tmp_path):
    """The running mean of Phi comes from the counts, so while the workers are sent the
    counts the driver draws no Phi, except for a checkpoint: and that one is the local
    chain's Phi of the same iteration, bit for bit."""
    from dolda import io

    kw = dict(KW, n_iter=8, burn_in=2, z_sampler="mh", checkpoint_every=5)
    local = flat_dolda(n_shards=3, n_jobs=2, checkpoint=tmp_path / "local", **kw).fit(corpus.texts,
                                                                                  corpus.y)
    draws = _record_driver_draws(monkeypatch)
    dask = flat_dolda(backend="dask", client=client, n_shards=3, checkpoint=tmp_path / "dask",
                 phi_transport="recipe", **kw).fit(corpus.texts, corpus.y)
    _assert_same_chain(local, dask)
    assert draws == [4, 7]  # the checkpoints after 5 and 8 iterations, nothing else
    _, local_arrays = io.load_checkpoint(tmp_path / "local")
    _, dask_arrays = io.load_checkpoint(tmp_path / "dask")
    assert local_arrays["phi"].dtype == np.float32
    np.testing.assert_array_equal(local_arrays["phi"], dask_arrays["phi"])
    np.testing.assert_array_equal(local_arrays["z"], dask_arrays["z"])


def test_a_broadcast_stuck_in_transfer_gives_up_as_a_lost_worker(client, monkeypatch):
    """``broadcast`` bounds the whole scatter, transfer included (scatter's own timeout
    only bounds the wait for workers, and a scatter to a worker killed mid-transfer waited
    forever): a transfer that never ends raises a worker-loss error within the bound."""
    import asyncio

    from dolda.backends import _dask_shards as shards

    async def stuck(*args, **kwargs):
        await asyncio.sleep(3600)

    monkeypatch.setattr(shards, "SCATTER_TIMEOUT", 0.5)
    monkeypatch.setattr(client, "_scatter", stuck)
    workers = list(client.scheduler_info(n_workers=-1)["workers"])
    tic = time.monotonic()
    with pytest.raises(tuple(shards._worker_loss_errors())):
        shards.broadcast(client, np.arange(3), workers)
    assert time.monotonic() - tic < 10


def test_a_broadcast_reaches_every_worker_without_the_schedulers_replicate(client,
                                                                          monkeypatch):
    """One copy per worker, and no ``replicate``: a replicate that a worker killed mid-copy
    left hanging held the scheduler's replica lock for good, and every later broadcast
    (``scatter(broadcast=True)``) waited on it (distributed 2026.8).  Here replicate hangs
    from the start, and the broadcast must not notice."""
    import asyncio

    from dolda.backends import _dask_shards as shards

    async def hung(*args, **kwargs):
        await asyncio.sleep(3600)

    monkeypatch.setattr(client.cluster.scheduler, "replicate", hung)
    monkeypatch.setattr(shards, "SCATTER_TIMEOUT", 5.0)
    workers = sorted(client.scheduler_info(n_workers=-1)["workers"])
    value = np.arange(7.0)
    copies = shards.broadcast(client, value, workers + workers[:1])  # repeats: one copy
    assert sorted(copies) == workers
    for worker, future in copies.items():
        assert client.who_has([future])[future.key] == (worker,)
        np.testing.assert_array_equal(
            client.submit(np.asarray, future, workers=[worker], allow_other_workers=False,
                          pure=False).result(timeout=30), value)


def test_a_broadcast_to_a_worker_that_left_is_a_lost_worker(client):
    from dolda.backends import _dask_shards as shards

    with pytest.raises(shards.WorkerGone, match="has left"):
        shards.broadcast(client, np.arange(3), ["tcp://127.0.0.1:9"])
    assert issubclass(shards.WorkerGone, tuple(shards._worker_loss_errors()))


def test_a_stuck_broadcast_is_replayed_to_the_same_result(client, corpus, monkeypatch):
    """One iteration's broadcast of Phi hangs: the chain gives up on it after the bound and
    replays from the snapshot, to the chain an undisturbed fit gives."""
    from dolda.backends import _dask_shards as shards
    from dolda.backends import dask as dask_backend

    kw = dict(KW, n_iter=10)
    reference = flat_dolda(backend="dask", client=client, n_shards=2, **kw).fit(corpus.texts,
                                                                          corpus.y)
    real, hung = dask_backend.broadcast, []

    def broadcast(cl, value, workers):
        if len(hung) == 0 and getattr(value, "eta", None) is not None:
            hung.append(1)
            with pytest.raises(tuple(shards._worker_loss_errors())):
                real(_Stuck(cl), value, workers)
            raise TimeoutError("the broadcast did not finish")
        return real(cl, value, workers)

    monkeypatch.setattr(shards, "SCATTER_TIMEOUT", 0.5)
    monkeypatch.setattr(dask_backend, "broadcast", broadcast)
    disturbed = flat_dolda(backend="dask", client=client, n_shards=2, snapshot_every=3,
                      **kw).fit(corpus.texts, corpus.y)
    assert hung
    _assert_same_chain(reference, disturbed)


class _Stuck:
    """A client whose scatter never finishes (everything else is the real client's)."""

    def __init__(self, client):
        self._client = client

    async def _scatter(self, *args, **kwargs):
        import asyncio

        await asyncio.sleep(3600)

    def sync(self, func, *args, **kwargs):
        return self._client.sync(func, *args, **kwargs)
