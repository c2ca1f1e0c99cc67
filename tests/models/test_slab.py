"""The Gaussian slab on the Horseshoe (``DOLDA(slab_scale=s)``, ``ProbitPrior.slab``).

The sampler's exactness under the slab prior is the Geweke test in
``tests/sampler/test_probit_geweke.py`` (a planted bug, the Horseshoe's eta conditional under the
slab prior, fails it at |z| ~ 16).  Here: the prior precision it adds, the parameter's
checks, and what the slab is for: a word that separates the classes in a few documents
keeps a bounded coefficient.
"""

import numpy as np
import pytest
from sklearn.base import clone

from dolda import DOLDA
from dolda.datasets import simulate
from dolda.sampler import probit_blocks as gibbs
from dolda import Prior
from _flat import flat_dolda


def test_the_slab_adds_its_precision_to_the_shrunk_columns_only():
    rng = np.random.default_rng(0)
    shrunk = np.array([False, True, True, True])
    lam2, tau2 = rng.gamma(0.5, size=(3, 4)), rng.gamma(0.5, size=3)
    plain = gibbs.prior_precision(gibbs.ProbitPrior(True, shrunk, 4.0), lam2, tau2)
    slab = gibbs.prior_precision(gibbs.ProbitPrior(True, shrunk, 4.0, None, 2.25), lam2, tau2)
    np.testing.assert_array_equal(slab[:, 0], plain[:, 0])
    np.testing.assert_allclose(slab[:, 1:], plain[:, 1:] + 1 / 2.25, rtol=1e-15)
    # the normal prior has no Horseshoe to regularise
    normal = gibbs.ProbitPrior(False, shrunk, 4.0, None, 2.25)
    np.testing.assert_array_equal(gibbs.prior_precision(normal, lam2, tau2), 0.25)


def test_a_per_column_slab_adds_its_precision_where_it_is_finite():
    rng = np.random.default_rng(1)
    shrunk = np.array([False, True, True, True])
    lam2, tau2 = rng.gamma(0.5, size=(3, 4)), rng.gamma(0.5, size=3)
    plain = gibbs.prior_precision(gibbs.ProbitPrior(True, shrunk, 4.0), lam2, tau2)
    slab = np.array([1.0, 2.25, np.inf, 0.5])  # the intercept's 1.0 is not a shrunk column
    got = gibbs.prior_precision(gibbs.ProbitPrior(True, shrunk, 4.0, None, slab), lam2, tau2)
    np.testing.assert_array_equal(got[:, [0, 2]], plain[:, [0, 2]])
    np.testing.assert_allclose(got[:, 1], plain[:, 1] + 1 / 2.25, rtol=1e-15)
    np.testing.assert_allclose(got[:, 3], plain[:, 3] + 2.0, rtol=1e-15)


def test_slab_blocks_name_the_columns_that_get_the_slab():
    from dolda.models.dolda.design_stage import slab_variances

    # U = [1, 2 covariates, 3 words, 2 topics]
    assert slab_variances(None, ("words",), 6, 3, 2) is None
    inf = np.inf
    np.testing.assert_array_equal(slab_variances(2.0, ("covariates", "words"), 6, 3, 2),
                                  [inf, 2, 2, 2, 2, 2, inf, inf])
    np.testing.assert_array_equal(slab_variances(2.0, ("topics",), 6, 3, 2),
                                  [inf, inf, inf, inf, inf, inf, 2, 2])
    np.testing.assert_array_equal(slab_variances(2.0, ("covariates", "words", "topics"),
                                                 6, 3, 2), [inf] + [2] * 7)


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "big"])
def test_bad_slab_scales_are_one_line_errors(bad):
    sim = simulate(n_docs=30, n_topics=2, n_classes=2, vocab_size=20, doc_length=8,
                   random_state=0)
    with pytest.raises((ValueError, TypeError), match="slab_scale") as err:
        DOLDA(n_topics=2, n_iter=5, progress=False, prior=Prior(slab_scale=bad)).fit(sim.texts, sim.y)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("bad", ["", "intercept", "words,topic", 3, ["words", None]])
def test_bad_slab_blocks_are_one_line_errors(bad):
    sim = simulate(n_docs=30, n_topics=2, n_classes=2, vocab_size=20, doc_length=8,
                   random_state=0)
    with pytest.raises(ValueError, match="slab_blocks") as err:
        DOLDA(n_topics=2, n_iter=5, progress=False, prior=Prior(slab_scale=1.0, slab_blocks=bad)).fit(sim.texts, sim.y)
    assert "\n" not in str(err.value)


def test_slab_scale_is_a_parameter_like_any_other():
    model = DOLDA(prior=Prior(slab_scale=1.5))
    assert model.get_params()["prior__slab_scale"] == 1.5
    assert clone(model).prior.slab_scale == 1.5
    assert clone(model).prior is not model.prior
    assert DOLDA().set_params(prior__slab_scale=0.5).slab_scale == 0.5
    default = DOLDA()  # the default: a slab of 2.5 on the covariates and words, not the topics
    assert (default.slab_scale, tuple(default.slab_blocks)) == (2.5, ("covariates", "words"))


@pytest.mark.parametrize("seed", [0, 1])
def test_a_separating_word_keeps_a_bounded_coefficient(seed):
    """A word in every document of class "a" and in none of class "b" (complete
    separation): the likelihood leaves its coefficients free, the Horseshoe's Cauchy tail
    lets them run (|coef| 10-12 after 300 iterations); the slab ``s = 1`` holds them at
    less than half of that (4.6-5.0 on seeds 0 and 1)."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(30)]
    texts, y = [], []
    for d in range(120):
        cls = "ab"[d % 2]
        doc = list(rng.choice(words, 15)) + (["key"] if cls == "a" else [])
        texts.append(" ".join(doc))
        y.append(cls)
    kw = dict(n_topics=2, n_iter=300, n_words="all", rare_share=0.0, random_state=seed,
              progress=False, n_jobs=1)
    free = np.abs(flat_dolda(slab_scale=None, **kw).fit(texts, y).coef_["word=key"].to_numpy())
    held = np.abs(flat_dolda(slab_scale=1.0, **kw).fit(texts, y).coef_["word=key"].to_numpy())
    assert (free > 8).all(), free
    assert (held < free / 2).all(), (free, held)
    # slab_blocks places the slab: on the words it holds the word, on the topics it does not
    on_words = flat_dolda(slab_scale=1.0, slab_blocks=("words",), **kw).fit(texts, y)
    on_topics = flat_dolda(slab_scale=1.0, slab_blocks="topics", **kw).fit(texts, y)
    assert (np.abs(on_words.coef_["word=key"].to_numpy()) < free / 2).all()
    assert (np.abs(on_topics.coef_["word=key"].to_numpy()) > 8).all()


def _small():
    return simulate(n_docs=60, n_topics=2, n_classes=2, vocab_size=30, doc_length=10,
                    random_state=4)


def test_a_file_written_before_the_slab_loads_as_fitted_without_it(tmp_path):
    """Model files and checkpoints without ``slab_scale`` were fitted with the paper's
    Horseshoe: they load with None, not today's default of 2.5, and such a checkpoint is not
    resumed under today's slab.  A file with ``slab_scale`` but no ``slab_blocks`` was
    written when the slab covered every block: it loads with "all"."""
    import json

    import dolda

    sim = _small()
    kw = dict(n_topics=2, n_iter=10, progress=False, random_state=0, n_jobs=1)
    flat_dolda(checkpoint=tmp_path / "ck", **kw).fit(sim.texts, sim.y).save(tmp_path / "m")
    flat_dolda(**kw).fit(sim.texts, sim.y).save(tmp_path / "m_all")
    for meta_file, names in ((tmp_path / "m" / "model.json", ("slab_scale", "slab_blocks")),
                             (tmp_path / "ck" / "model.json", ("slab_scale", "slab_blocks")),
                             (tmp_path / "m_all" / "model.json", ("slab_blocks",))):
        meta = json.loads(meta_file.read_text())
        for name in names:  # as written before the parameter existed
            del meta["meta"]["params"][name]
        if "header_sha256" in meta:  # a checkpoint: its writer's checksum of that header
            from dolda.io.schema_checkpoint import header_digest

            meta["header_sha256"] = header_digest(meta)
        meta_file.write_text(json.dumps(meta))
    assert DOLDA().slab_scale == 2.5
    assert dolda.load(tmp_path / "m").slab_scale is None
    earlier = dolda.load(tmp_path / "m_all")
    assert (earlier.slab_scale, earlier.slab_blocks) == (2.5, "all")
    with pytest.raises(ValueError, match=r"the option slab_(scale|blocks) differs") as err:
        flat_dolda(**dict(kw, n_iter=20)).fit(sim.texts, sim.y, resume=tmp_path / "ck")
    assert "\n" not in str(err.value)


def test_resume_keeps_the_prior_the_chain_began_with(tmp_path):
    sim = _small()
    kw = dict(n_topics=2, n_iter=10, progress=False, random_state=0, n_jobs=1,
              checkpoint=tmp_path / "ck")
    flat_dolda(**kw).fit(sim.texts, sim.y)
    for change in (dict(slab_scale=1.0), dict(global_scales="block"),
                   dict(prior="normal")):
        with pytest.raises(ValueError, match=next(iter(change))):
            flat_dolda(**dict(kw, n_iter=20, **change)).fit(sim.texts, sim.y,
                                                       resume=tmp_path / "ck")
    assert flat_dolda(**dict(kw, n_iter=20)).fit(sim.texts, sim.y,
                                            resume=tmp_path / "ck").n_iter_ == 20


def test_resume_keeps_the_columns_the_slab_covers(tmp_path):
    """``slab_blocks`` is part of the prior when there is a slab (a resume that changes it is
    refused, whatever spelling names the same blocks) and moot without one."""
    sim = _small()
    kw = dict(n_topics=2, n_iter=10, progress=False, random_state=0, n_jobs=1)
    flat_dolda(checkpoint=tmp_path / "on", slab_scale=1.0, slab_blocks="words,covariates",
          **kw).fit(sim.texts, sim.y)
    longer = dict(kw, n_iter=20, slab_scale=1.0)
    with pytest.raises(ValueError, match="slab_blocks") as err:
        flat_dolda(slab_blocks="all", **longer).fit(sim.texts, sim.y, resume=tmp_path / "on")
    assert "\n" not in str(err.value)
    same = flat_dolda(slab_blocks=("covariates", "words"), **longer)
    assert same.fit(sim.texts, sim.y, resume=tmp_path / "on").n_iter_ == 20
    flat_dolda(checkpoint=tmp_path / "off", slab_scale=None, **kw).fit(sim.texts, sim.y)
    moot = flat_dolda(slab_scale=None, slab_blocks="topics", **dict(kw, n_iter=20))
    assert moot.fit(sim.texts, sim.y, resume=tmp_path / "off").n_iter_ == 20
