"""DOLDA(word_prior="normal"): a fixed Gaussian N(0, v) on the word coefficients.

The sampler's conditionals are checked by the Geweke tests in ``test_probit_geweke.py``
(``test_geweke_fixed_gaussian_block``; drawing the block's tau, or its lambdas, fails them).
Here: that the estimator builds that prior (the words' own block, its scales held at
``(lambda, tau^2) = (1, v)`` in every kept draw, no slab on the words), that the eta-steps
read ``v``, that a saved model and a resumed chain keep it, and the one-line errors.
"""

import numpy as np
import pytest

import dolda
from dolda import DOLDA
from dolda.datasets import simulate
from _flat import flat_dolda


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=80, n_topics=3, n_classes=3, vocab_size=50, doc_length=20,
                    random_state=3)


def _fit(sim, resume=None, **kw):
    kw = {"n_topics": 3, "n_iter": 8, "rare_share": 0, "progress": False, "random_state": 0,
          "n_words": 30, **kw}
    return flat_dolda(**kw).fit(sim.texts, sim.y, resume=resume)


def _word_columns(m):
    return [i for i, c in enumerate(m.feature_names_) if c.startswith("word=")]


@pytest.mark.parametrize("global_scales", ["shared", "block"])
def test_normal_words_hold_their_scale_at_the_variance_in_every_draw(sim, global_scales):
    m = _fit(sim, word_prior="normal", word_prior_variance=0.3, global_scales=global_scales)
    assert m.scale_blocks_ == ["topics", "words"]   # the words' own scale even when "shared"
    S, L = m.eta_draws_.shape[:2]
    assert m.tau_draws_.shape == (S, L, 2)
    np.testing.assert_allclose(m.tau_draws_[:, :, 1], np.float32(np.sqrt(0.3)), rtol=1e-6)
    assert np.unique(m.tau_draws_[:, :, 0]).size > 1   # the topics' scale is still drawn


def test_the_eta_steps_read_the_variance(sim):
    """A tiny v pins every word coefficient at zero; a wide one leaves them free."""
    for sampler in ("gibbs", "cholesky"):
        tight = _fit(sim, word_prior="normal", word_prior_variance=1e-8, eta_sampler=sampler)
        wide = _fit(sim, word_prior="normal", word_prior_variance=25.0, eta_sampler=sampler)
        cols = _word_columns(tight)
        assert len(cols) >= 20
        assert np.max(np.abs(tight.eta_draws_[:, :, cols])) < 1e-3
        assert np.max(np.abs(wide.eta_draws_[:, :, cols])) > 0.1


def test_normal_words_are_a_different_chain_and_the_horseshoe_is_the_default(sim):
    assert DOLDA().word_prior == "horseshoe" and DOLDA().word_prior_variance == 1.0
    base = _fit(sim)
    assert base.scale_blocks_ is None    # the default chain keeps its one shared scale
    np.testing.assert_array_equal(_fit(sim, word_prior="horseshoe").eta_draws_,
                                  base.eta_draws_)
    assert not np.array_equal(_fit(sim, word_prior="normal").eta_draws_, base.eta_draws_)


def test_topics_only_ignores_the_word_prior(sim):
    a = _fit(sim, n_words=0)
    b = _fit(sim, n_words=0, word_prior="normal")
    np.testing.assert_array_equal(a.eta_draws_, b.eta_draws_)
    assert b.scale_blocks_ is None


def test_a_saved_model_keeps_the_word_prior(sim, tmp_path):
    m = _fit(sim, word_prior="normal", word_prior_variance=0.5)
    m.save(tmp_path / "m")
    back = dolda.load(tmp_path / "m")
    assert back.word_prior == "normal" and back.word_prior_variance == 0.5
    assert back.scale_blocks_ == ["topics", "words"]
    np.testing.assert_array_equal(back.predict_proba(sim.texts[:6]),
                                  m.predict_proba(sim.texts[:6]))


def test_a_resumed_chain_keeps_the_word_prior(sim, tmp_path):
    kw = dict(n_iter=6, word_prior="normal", word_prior_variance=0.5, phi_draws=2,
              checkpoint=tmp_path / "ck", checkpoint_every=3)
    _fit(sim, **kw)
    longer = _fit(sim, **{**kw, "n_iter": 9}, resume=tmp_path / "ck")
    np.testing.assert_allclose(longer.tau_draws_[:, :, 1], np.float32(np.sqrt(0.5)))
    for other in ({"word_prior": "horseshoe"}, {"word_prior_variance": 2.0}):
        with pytest.raises(ValueError, match=next(iter(other))):
            _fit(sim, **{**kw, "n_iter": 9, **other}, resume=tmp_path / "ck")


@pytest.mark.parametrize("kw, name", [({"word_prior": "laplace"}, "Words.prior"),
                                      ({"word_prior_variance": 0.0}, "Words.prior_variance"),
                                      ({"word_prior_variance": "big"}, "Words.prior_variance")])
def test_bad_word_priors_are_refused_in_one_line(sim, kw, name):
    with pytest.raises((ValueError, TypeError), match=name) as err:  # TypeError: not a number
        flat_dolda(**kw).fit(sim.texts, sim.y)
    assert "\n" not in str(err.value)


def test_a_file_written_before_the_word_prior_loads_with_the_horseshoe(sim, tmp_path):
    """A model file without the word-prior options loads as the Horseshoe it was fitted
    with (a checkpoint's header is covered by its checksum: an edited one is refused,
    tests/models/test_resume_fingerprint.py)."""
    import json

    _fit(sim, n_iter=6, phi_draws=2).save(tmp_path / "m")
    meta_file = tmp_path / "m" / "model.json"
    meta = json.loads(meta_file.read_text())
    for name in ("word_prior", "word_prior_variance"):  # as written before them
        del meta["meta"]["params"][name]
    meta_file.write_text(json.dumps(meta))
    back = dolda.load(tmp_path / "m")
    assert (back.word_prior, back.word_prior_variance) == ("horseshoe", 1.0)


# ------------------------------------------------- word_prior="both": a sparse and a dense part
def test_the_dense_part_is_scikit_learns_sublinear_tfidf_of_every_word(sim):
    from sklearn.feature_extraction.text import TfidfVectorizer

    from dolda.design.corpus import Vocabulary
    from dolda.design.word_features import WordFeatures

    vocab = Vocabulary(rare_share=0).fit(sim.texts)
    corpus = vocab.transform(sim.texts)
    wf = WordFeatures(10, "log", dense=True).fit(corpus)
    X = wf.transform(corpus).toarray()
    assert X.shape[1] == 10 + wf.n_dense_
    assert wf.n_dense_ == int(np.count_nonzero(np.bincount(corpus.tokens,
                                                           minlength=corpus.n_words)))
    ref = TfidfVectorizer(vocabulary={w: i for i, w in enumerate(wf.dense_words_)},
                          token_pattern=vocab.token_pattern, sublinear_tf=True,
                          stop_words=None).fit(sim.texts)
    np.testing.assert_allclose(X[:, 10:], ref.transform(sim.texts).toarray(), atol=1e-12)
    names = wf.get_feature_names_out()
    assert names[:10] == ["word=" + w for w in wf.words_]
    assert names[10:] == ["dense=" + w for w in wf.dense_words_]


def test_both_puts_the_selected_words_under_the_horseshoe_and_every_word_under_the_gaussian(
        sim):
    from dolda.models.dolda.design_stage import fitted_column_kinds

    m = _fit(sim, word_prior="both", word_prior_variance=0.4, n_words=10)
    assert m.scale_blocks_ == ["topics", "words", "dense_words"]
    np.testing.assert_allclose(m.tau_draws_[:, :, 2], np.float32(np.sqrt(0.4)), rtol=1e-6)
    assert np.unique(m.tau_draws_[:, :, 1]).size > 1   # the sparse words' scale is drawn
    kinds = fitted_column_kinds(m)
    assert (kinds == "words").sum() == 10
    assert (kinds == "dense_words").sum() == m.word_features_.n_dense_ > 10
    names = np.asarray(m.feature_names_)
    assert all(n.startswith("dense=") for n in names[kinds == "dense_words"])
    tight = _fit(sim, word_prior="both", word_prior_variance=1e-8, n_words=10)
    dense = np.flatnonzero(fitted_column_kinds(tight) == "dense_words")
    assert np.max(np.abs(np.asarray(tight.eta_draws_[:, :, dense]))) < 1e-3


def test_both_keeps_the_slab_off_the_dense_part(sim, monkeypatch):
    from dolda.models.dolda import design_stage as inputs

    seen = {}
    real = inputs.probit_blocks.ProbitPrior

    def spy(*args, **kw):
        seen["prior"] = real(*args, **kw)
        return seen["prior"]

    monkeypatch.setattr(inputs.probit_blocks, "ProbitPrior", spy)
    m = _fit(sim, word_prior="both", n_words=10)
    kinds = inputs.fitted_column_kinds(m)
    slab = np.asarray(seen["prior"].slab)
    assert np.all(slab[kinds == "words"] == 2.5 ** 2)
    assert np.all(np.isinf(slab[kinds == "dense_words"]))


def test_a_saved_both_model_predicts_the_same_and_a_bad_dense_part_is_refused(sim, tmp_path):
    import json

    from dolda.io.codec import ModelFormatError

    m = _fit(sim, word_prior="both", n_words=10)
    m.save(tmp_path / "m")
    back = dolda.load(tmp_path / "m")
    assert back.word_features_.n_dense_ == m.word_features_.n_dense_
    np.testing.assert_array_equal(back.predict_proba(sim.texts[:6]),
                                  m.predict_proba(sim.texts[:6]))
    meta_file = tmp_path / "m" / "model.json"
    meta = json.loads(meta_file.read_text())
    meta["meta"]["word_features"]["dense"]["idf"] = meta["meta"]["word_features"]["dense"][
        "idf"][:-1]
    meta_file.write_text(json.dumps(meta))
    with pytest.raises(ModelFormatError, match="dense.idf"):
        dolda.load(tmp_path / "m")


def test_a_both_models_token_explanation_puts_both_parts_of_a_word_on_its_tokens(sim):
    """The dense columns are the words' too: at level="token" their contributions go to the
    word's tokens, so tokens plus the other features still sum to each class's score (and
    without the dense columns in the map they would not)."""
    m = _fit(sim, word_prior="both", n_words=10, n_iter=12)
    text = sim.texts[0]
    by_feature, by_token = m.explain(text), m.explain(text, level="token")
    for label in m.classes_:
        f = by_feature[by_feature["class"] == label]
        t = by_token[by_token["class"] == label]
        other = f[~f.feature.str.startswith(("word=", "dense=", "topic "))]
        assert t.contribution.sum() + other.contribution.sum() == pytest.approx(
            f.contribution.sum(), abs=1e-9)
        dense = f[f.feature.str.startswith("dense=")]
        assert np.abs(dense.contribution).sum() > 1e-6   # there is something to attribute
