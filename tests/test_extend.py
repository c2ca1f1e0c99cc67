"""Chains users can finish (issue 12): the convergence summary and extending a finished fit.

* ``fit`` with a checkpoint, then ``fit(..., resume=checkpoint)`` with a larger
  ``n_iter``, ends exactly where one run of that length ends (draws, topics,
  counts, log-likelihood), from the API and from ``dolda fit --resume``.
* Extensions that cannot be exact are refused with a one-line error.
* ``convergence_``: a stationary trace is judged converged, a trending one not
  (and the message says how to continue).
"""

import types

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import dolda
from dolda import DOLDA
from dolda.cli import main
from dolda.convergence import chain_convergence
from dolda.datasets import simulate

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
    DOLDA(n_iter=16, checkpoint=ckpt, **KW).fit(sim.texts, sim.y)
    extended = DOLDA(n_iter=26, checkpoint=ckpt, **KW).fit(sim.texts, sim.y, resume=ckpt)
    straight = DOLDA(n_iter=26, **KW).fit(sim.texts, sim.y)
    _same(extended, straight)
    # and once more, from the extended checkpoint
    again = DOLDA(n_iter=34, **KW).fit(sim.texts, sim.y, resume=ckpt)
    _same(again, DOLDA(n_iter=34, **KW).fit(sim.texts, sim.y))


def test_extensions_that_cannot_be_exact_are_refused(sim, tmp_path):
    ckpt = tmp_path / "ckpt"
    DOLDA(n_iter=16, checkpoint=ckpt, **KW).fit(sim.texts, sim.y)
    with pytest.raises(ValueError, match="phi_draws"):
        DOLDA(n_iter=18, **KW).fit(sim.texts, sim.y, resume=ckpt)
    with pytest.raises(ValueError, match="shorten"):
        DOLDA(n_iter=10, **KW).fit(sim.texts, sim.y, resume=ckpt)
    with pytest.raises(ValueError, match="burn_in"):
        DOLDA(n_iter=30, burn_in=2, **KW).fit(sim.texts, sim.y, resume=ckpt)


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
    more = CliRunner().invoke(main, base + ["--iterations", "50", "--resume", str(ckpt),
                                            "--out", str(out), "--overwrite"])
    assert more.exit_code == 0, more.output
    assert "resumed at 30" in more.output
    straight = CliRunner().invoke(main, base + ["--iterations", "50", "--out", str(ref)])
    assert straight.exit_code == 0, straight.output
    _same(dolda.load(out), dolda.load(ref))
    model = dolda.load(ref)
    assert model.n_iter_ == 50
