"""DOLDA(global_scales="block"): one Horseshoe global scale per class and block of columns.

The sampler's conditionals are checked by the Geweke test in ``test_probit_geweke.py``
(``test_geweke_per_block_global_scales``; using one block's shape for every block fails it
with |z| = 258).  Here: the estimator's layout (blocks, stored draws), that a saved model
and a resumed chain keep it, and that "shared" is the chain it always was.
"""

import numpy as np
import pytest

import dolda
from dolda import DOLDA
from dolda.models.dolda.design_stage import scale_blocks
from dolda.datasets import simulate
from dolda.experimental import Experimental
from _flat import flat_dolda


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=70, n_topics=3, n_classes=3, vocab_size=50, doc_length=20,
                    random_state=2)


def _fit(sim, **kw):
    return flat_dolda(n_topics=3, n_iter=6, rare_share=0, progress=False, random_state=0,
                 **kw).fit(sim.texts, sim.y)


def test_blocks_of_the_columns():
    blocks, names = scale_blocks(1 + 2 + 4, 4, 3, True)
    assert names == ["topics", "covariates", "words"]
    np.testing.assert_array_equal(blocks, [-1, 1, 1, 2, 2, 2, 2, 0, 0, 0])
    assert scale_blocks(1, 0, 3, True) == (None, None)   # topics only: the shared chain
    assert scale_blocks(5, 4, 3, False) == (None, None)


def test_block_scales_are_kept_per_block_and_survive_save_and_load(sim, tmp_path):
    m = _fit(sim, global_scales="block")
    assert m.scale_blocks_ == ["topics", "words"]
    S, L = m.eta_draws_.shape[:2]
    assert m.tau_draws_.shape == (S, L, 2) and m.tau_draws_.dtype == np.float32
    assert np.all(m.tau_draws_ > 0)
    m.save(tmp_path / "m")
    back = dolda.load(tmp_path / "m")
    assert back.scale_blocks_ == ["topics", "words"]
    np.testing.assert_array_equal(back.predict_proba(sim.texts[:6]), m.predict_proba(sim.texts[:6]))
    assert m.to_inference_data().posterior["tau"].dims[-1] == "scale_block"


def test_resumed_block_chain_ends_where_the_uninterrupted_one_does(sim, tmp_path,
                                                                    monkeypatch):
    import os
    import signal

    from dolda.models.dolda.estimator import FitInterrupted
    from dolda.sampler import gibbs_iteration as chain

    kw = dict(n_topics=3, n_iter=6, burn_in=2, rare_share=0, progress=False, random_state=0,
              global_scales="block")
    full = flat_dolda(**kw).fit(sim.texts, sim.y)
    real_step = chain.dolda_step

    def step_with_ctrl_c(seed, it, *args):
        if it == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return real_step(seed, it, *args)

    monkeypatch.setattr(chain, "dolda_step", step_with_ctrl_c)
    with pytest.raises(FitInterrupted):
        flat_dolda(checkpoint=tmp_path / "ck", checkpoint_every=2, **kw).fit(sim.texts, sim.y)
    monkeypatch.setattr(chain, "dolda_step", real_step)
    resumed = flat_dolda(**kw).fit(sim.texts, sim.y, resume=tmp_path / "ck")
    np.testing.assert_array_equal(resumed.tau_draws_, full.tau_draws_)
    np.testing.assert_array_equal(resumed.eta_draws_, full.eta_draws_)


def test_block_scales_change_the_chain_and_shared_is_the_default(sim):
    assert DOLDA().global_scales == "shared"
    shared, block = _fit(sim), _fit(sim, global_scales="block")
    assert shared.tau_draws_.ndim == 2 and shared.scale_blocks_ is None
    assert not np.array_equal(shared.eta_draws_, block.eta_draws_)
    with pytest.raises(ValueError, match="global_scales"):
        DOLDA(experimental=Experimental(global_scales="per-word")).fit(sim.texts, sim.y)
