"""Chains users can finish (issue 12): the convergence summary and extending a finished fit.

* ``fit`` with a checkpoint, then ``fit(..., resume=checkpoint)`` with a larger
  ``n_iter``, ends exactly where one run of that length ends (draws, topics,
  counts, log-likelihood), from the API and from ``dolda fit --resume``.
* Extensions that cannot be exact are refused with a one-line error.
* ``convergence_``: a stationary trace is judged converged, a trending one not
  (and the message says how to continue).
"""

import re
import types

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import dolda
from dolda import DOLDA
from dolda.cli import main
from dolda.evaluate.convergence import chain_convergence
from dolda.datasets import simulate
from _flat import flat_dolda

KW = dict(n_topics=3, alpha=0.1, random_state=4, progress=False, rare_share=0.0,
          phi_draws=4)


@pytest.fixture(scope="module")
def sim():
    return simulate(n_docs=100, n_topics=3, n_classes=3, vocab_size=80, doc_length=25,
                    random_state=6)


def _same(one, two):
    np.testing.assert_array_equal(one.eta_draws_, two.eta_draws_)
    np.testing.assert_array_equal(one.tau_draws_, two.tau_draws_)
    np.testing.assert_array_equal(one.phi_, two.phi_)
    np.testing.assert_array_equal(one.doc_topic_counts_, two.doc_topic_counts_)
    np.testing.assert_array_equal(one.loglik_.to_numpy(), two.loglik_.to_numpy())


def test_extended_fit_ends_where_one_longer_run_ends(sim, tmp_path):
    ckpt = tmp_path / "ckpt"
    flat_dolda(n_iter=16, checkpoint=ckpt, **KW).fit(sim.texts, sim.y)
    extended = flat_dolda(n_iter=26, checkpoint=ckpt, **KW).fit(sim.texts, sim.y, resume=ckpt)
    straight = flat_dolda(n_iter=26, **KW).fit(sim.texts, sim.y)
    _same(extended, straight)
    # and once more, from the extended checkpoint
    again = flat_dolda(n_iter=34, **KW).fit(sim.texts, sim.y, resume=ckpt)
    _same(again, flat_dolda(n_iter=34, **KW).fit(sim.texts, sim.y))


def test_extensions_that_cannot_be_exact_are_refused(sim, tmp_path):
    ckpt = tmp_path / "ckpt"
    flat_dolda(n_iter=16, checkpoint=ckpt, **KW).fit(sim.texts, sim.y)
    with pytest.raises(ValueError, match="phi_draws"):
        flat_dolda(n_iter=18, **KW).fit(sim.texts, sim.y, resume=ckpt)
    with pytest.raises(ValueError, match="shorten"):
        flat_dolda(n_iter=10, **KW).fit(sim.texts, sim.y, resume=ckpt)
    with pytest.raises(ValueError, match="burn_in"):
        flat_dolda(n_iter=30, burn_in=2, **KW).fit(sim.texts, sim.y, resume=ckpt)


def _fake(trace, eta):
    n_chains = trace.shape[0]
    index = pd.MultiIndex.from_product([range(n_chains), range(trace.shape[1])])
    return types.SimpleNamespace(
        n_chains_=n_chains, n_iter_=trace.shape[1], eta_draws_=eta,
        loglik_=pd.DataFrame({"total": trace.ravel()}, index=index),
        get_params=lambda: {"thin": 1})


def test_convergence_summary_flags_a_trend():
    rng = np.random.default_rng(0)
    n = 400
    eta = rng.normal(size=(n // 2, 3, 5))
    flat = rng.normal(size=(1, n))
    ok = chain_convergence(_fake(flat, eta))
    assert ok["converged"] and ok["loglik_rhat"] < 1.05 and ok["loglik_ess"] > 100
    assert "looks converged" in ok["message"]
    trend = flat + np.linspace(0, 6, n)  # still rising: the split halves disagree
    bad = chain_convergence(_fake(trend, eta))
    assert not bad["converged"] and bad["loglik_rhat"] > 1.05
    assert "resume" in bad["message"] and "--iterations 800" in bad["message"]
    drifting = eta + np.linspace(0, 5, n // 2)[:, None, None]  # every coefficient drifts
    assert not chain_convergence(_fake(flat, drifting))["converged"]


def test_fit_reports_convergence_and_the_cli_extends(sim, tmp_path):
    data = tmp_path / "d.csv"
    pd.DataFrame({"text": sim.texts, "y": sim.y}).to_csv(data, index=False)
    base = ["fit", str(data), "--text", "text", "--label", "y", "--topics", "3", "--quiet",
            "--seed", "2", "--alpha", "0.1", "--rare-share", "0"]
    ckpt, out, ref = tmp_path / "ck", tmp_path / "m", tmp_path / "ref"
    first = CliRunner().invoke(main, base + ["--iterations", "30", "--checkpoint", str(ckpt),
                                             "--out", str(out)])
    assert first.exit_code == 0, first.output
    assert "convergence" in first.output
    # not converged after 30 iterations: the whole command to continue, as it can be run
    command = re.search(r"to converge\s+(dolda fit .*)", first.output)[1]
    assert f"--resume {ckpt}" in command and f"--out {out}" in command
    assert re.search(r"--iterations \d+", command) and "--text text --label y" in command
    more = CliRunner().invoke(main, base + ["--iterations", "50", "--resume", str(ckpt),
                                            "--out", str(out), "--overwrite"])
    assert more.exit_code == 0, more.output
    assert "resumed at 30" in more.output
    straight = CliRunner().invoke(main, base + ["--iterations", "50", "--out", str(ref)])
    assert straight.exit_code == 0, straight.output
    _same(dolda.load(out), dolda.load(ref))
    model = dolda.load(ref)
    assert model.n_iter_ == 50


def test_one_verdict_in_the_log_the_model_a_loaded_model_and_runnable_advice(sim, tmp_path,
                                                                             caplog):
    """The fit's log record, ``convergence_``, a ``dolda.load``-ed model's and the report's
    verdict are one; without a checkpoint the advice is a refit with --checkpoint, with one
    it is a --resume of that checkpoint (whose command the extension test above runs)."""
    import logging

    import dolda
    from dolda.interpret.report.convergence import convergence_summary

    with caplog.at_level(logging.INFO, logger="dolda.models.dolda.estimator"):
        model = flat_dolda(n_iter=30, **KW).fit(sim.texts, sim.y)
    verdict = model.convergence_
    assert any(verdict["message"] in r.getMessage() for r in caplog.records)
    assert verdict["checkpoint"] is None and not verdict["converged"]
    assert "refit with n_iter=" in verdict["message"] and "checkpoint=DIR" in verdict["message"]
    assert "--resume" not in verdict["message"]
    model.save(tmp_path / "m")
    loaded = dolda.load(tmp_path / "m")
    assert loaded.convergence_.keys() == verdict.keys()
    for key, value in verdict.items():
        if isinstance(value, float) and np.isnan(value):
            assert np.isnan(loaded.convergence_[key])
        else:
            assert loaded.convergence_[key] == value, key
    report = convergence_summary(loaded)
    assert report["verdict"] == verdict["verdict"] and report["advice"] == verdict["advice"]
    ckpt = tmp_path / "ck"
    resumable = flat_dolda(n_iter=30, checkpoint=ckpt, **KW).fit(sim.texts, sim.y)
    total = resumable.convergence_["recommended_iterations"]
    assert resumable.convergence_["checkpoint"] == str(ckpt)
    assert f"resume={str(ckpt)!r}) with n_iter={total}" in resumable.convergence_["message"]
    extended = flat_dolda(n_iter=total, checkpoint=ckpt, **KW).fit(sim.texts, sim.y, resume=ckpt)
    assert extended.n_iter_ == total


def test_a_chain_of_the_recommended_length_can_pass():
    """A chain of 250 kept draws whose log-likelihood does not drift (split R-hat below
    1.05) but has an ESS far below 100 (AR(1), rho = 0.8: ESS about 28) passes: only the
    drift of the log-likelihood is judged, not its ESS (the former bar of 100 failed every
    chain shorter than about 200 iterations; it fails this one)."""
    rng = np.random.default_rng(3)
    n = 500
    ll = np.zeros(n)
    for t in range(1, n):
        ll[t] = 0.8 * ll[t - 1] + rng.normal()
    eta = rng.normal(size=(n // 2, 3, 5)) + np.array([4.0, 0, 0, 0, 0])
    verdict = chain_convergence(_fake(ll[None], eta))
    assert verdict["loglik_ess"] < 50 and verdict["loglik_rhat"] < 1.05  # the premise
    assert verdict["converged"], verdict["message"]
    assert verdict["n_signal"] == 3  # the intercepts of the three classes


def test_chains_that_find_different_topics_are_not_converged():
    """Two chains whose log-likelihood and coefficients agree are still not converged when
    half their topics are not found again across the chains (matched Hellinger >= 0.3):
    the pooled topics would average different topics.  One topic in twenty is tolerated."""
    rng = np.random.default_rng(5)
    n = 400
    flat = rng.normal(size=(2, n))
    eta = rng.normal(size=(n, 3, 5))
    model = _fake(flat, eta)
    model.topic_hellinger_ = np.zeros((2, 4))
    assert chain_convergence(model)["converged"]
    model.topic_hellinger_ = np.array([[0, 0, 0, 0], [0.1, 0.2, 0.5, 0.7]])
    verdict = chain_convergence(model)
    assert not verdict["converged"]
    assert "50% of the 4 topics are not found again in 75% of the chains" in verdict["message"]
    model.topic_hellinger_ = np.zeros((2, 20))
    model.topic_hellinger_[1, 3] = 0.6  # 5%: at the bar, not above it
    assert chain_convergence(model)["converged"]
    one = _fake(flat[:1], eta[: n // 2])
    one.topic_hellinger_ = np.array([[0.0, 0.0]])  # one chain: nothing to compare
    assert chain_convergence(one)["converged"]
