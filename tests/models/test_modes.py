"""Several chains as modes (``dolda.models.dolda.modes``): each chain keeps its own Phi and
draws, and the prediction is the mixture of the chains' predictive distributions with their
stacking weights; one chain predicts as before; the model file keeps both and refuses them
malformed."""

import json

import numpy as np
import pytest

import dolda
from dolda.datasets import simulate
from dolda.models.dolda import modes
from dolda.models.dolda.proportions import document_design, regressor_matrix
from dolda.posterior import calibration
from _flat import flat_dolda

KW = dict(n_topics=4, n_iter=40, progress=False, topic_init="random")


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=160, n_topics=4, n_classes=3, vocab_size=60, doc_length=25,
                    random_state=5)


@pytest.fixture(scope="module")
def two(sim):
    return flat_dolda(n_chains=2, random_state=0, **KW).fit(sim.texts[:120], sim.y[:120])


def _by_hand(model, texts, weights):
    corpus, Xd = document_design(model, texts)
    C = len(model.chain_phi_)
    S = len(model.eta_draws_) // C
    out = 0
    for c in range(C):
        U = regressor_matrix(model, corpus, Xd, phi=model.chain_phi_[c])
        draws = np.asarray(model.eta_draws_)[c * S:(c + 1) * S]
        out = out + weights[c] * calibration.class_probabilities(U, draws, model.proba,
                                                                 model.stacking_)
    return out / np.sum(weights)


def test_the_prediction_is_the_weighted_mixture_of_the_chains(sim, two):
    assert two.chain_phi_.shape == (2,) + two.phi_.shape
    np.testing.assert_allclose(two.chain_phi_.sum(axis=2), 1.0)
    # the chains' own Phi differ (two modes), and the pooled phi_ is their average
    assert not np.allclose(two.chain_phi_[0], two.chain_phi_[1])
    P = two.predict_proba(sim.texts[120:])
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(P, _by_hand(two, sim.texts[120:], two.chain_weights_),
                               rtol=1e-10, atol=1e-12)


def test_a_chain_of_weight_zero_does_not_count(sim, two):
    saved = two.chain_weights_
    try:
        two.chain_weights_ = np.array([1.0, 0.0])
        P = two.predict_proba(sim.texts[120:])
        np.testing.assert_allclose(P, _by_hand(two, sim.texts[120:], [1.0, 0.0]), atol=1e-12)
        two.chain_weights_ = np.array([0.0, 1.0])
        assert not np.allclose(two.predict_proba(sim.texts[120:]), P)
    finally:
        two.chain_weights_ = saved


def test_one_chain_keeps_no_chain_phi_and_predicts_from_phi(sim):
    one = flat_dolda(random_state=0, **KW).fit(sim.texts[:120], sim.y[:120])
    assert one.chain_phi_ is None and not modes.is_mixture(one)
    np.testing.assert_array_equal(one.chain_weights_, [1.0])
    U = one._regressors(sim.texts[120:])
    np.testing.assert_array_equal(one.predict_proba(sim.texts[120:]),
                                  one._class_probabilities(U))


def test_the_model_file_keeps_the_modes_and_refuses_them_malformed(sim, two, tmp_path):
    two.save(tmp_path / "m")
    back = dolda.load(tmp_path / "m")
    np.testing.assert_array_equal(back.chain_phi_, two.chain_phi_)
    np.testing.assert_array_equal(back.chain_weights_, two.chain_weights_)
    np.testing.assert_array_equal(back.predict_proba(sim.texts[120:]),
                                  two.predict_proba(sim.texts[120:]))
    import shutil

    from dolda import io

    for name, bad, match in (("chain_weights", np.array([0.7, 0.7]), "probability"),
                             ("chain_phi", two.chain_phi_[:1], "chain_phi")):
        target = tmp_path / f"bad_{name}"
        shutil.copytree(tmp_path / "m", target)
        header = json.loads((target / "model.json").read_text())
        with np.load(target / "arrays.npz") as data:
            arrays = {k: data[k] for k in data.files}
        arrays[name] = bad
        np.savez(target / "arrays.npz", **arrays)
        header["arrays"] = {k: {"dtype": v.dtype.str, "shape": list(v.shape)}
                            for k, v in arrays.items()}
        header["arrays_sha256"] = io._sha256(target / "arrays.npz")
        (target / "model.json").write_text(json.dumps(header))
        with pytest.raises(ValueError, match=match) as err:
            dolda.load(target)
        assert "\n" not in str(err.value)
