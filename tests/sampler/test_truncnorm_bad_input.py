"""The a-step terminates for every input (issue 15: a 1e300 covariate made fit spin forever).

The extreme draws run in a subprocess with a timeout, so that a regression
(an unbounded rejection loop) fails the test instead of hanging the suite.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from scipy import stats

from dolda.sampler.truncnorm import EXP_TAIL_FROM, draw_utilities

pytestmark = pytest.mark.bad_input

EXTREME = [1e300, -1e300, 1.7e308, -1.7e308, 1e154, -1e154, 2e8, -2e8, EXP_TAIL_FROM,
           np.nextafter(EXP_TAIL_FROM, 0), np.nan, np.inf, -np.inf]


def _draw(mu_values, n_rows=50, seed=7):
    mu = np.repeat(np.asarray(mu_values, dtype=np.float64)[None, :], n_rows, axis=0)
    y = np.arange(n_rows) % mu.shape[1]
    return mu, y, draw_utilities(mu, y, seed, 0, np.empty_like(mu))


def test_extreme_inputs_terminate_in_a_subprocess():
    code = textwrap.dedent(f"""
        import numpy as np
        from dolda.sampler.truncnorm import draw_utilities
        mu = np.array([{", ".join(repr(float(v)) for v in EXTREME)}])[None, :].repeat(40, 0)
        y = np.arange(40) % mu.shape[1]
        out = draw_utilities(mu, y, 1, 0, np.empty_like(mu))
        print("ok", out.shape)
    """).replace("nan", "float('nan')").replace("inf", "float('inf')")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("ok")


def test_extreme_finite_means_give_draws_on_the_right_side():
    finite = [v for v in EXTREME if np.isfinite(v)]
    mu, y, a = _draw(finite)
    positive = y[:, None] == np.arange(len(finite))[None, :]
    assert np.all(np.isfinite(a))
    assert np.all(a[positive] > 0) and np.all(a[~positive] < 0)
    # far in the tail the draw sits at the truncation point (mean + Exp(|mu|) excess):
    # positive side with mu << 0 gives ~ 0+, negative side with mu >> 0 gives ~ 0-,
    # and the unconstrained side is mu + O(1)
    easy = (positive & (mu > 0)) | (~positive & (mu < 0))
    assert np.all(np.abs(a[easy] - mu[easy]) <= 10 + 1e-15 * np.abs(mu[easy]))


def test_non_finite_means_give_non_finite_draws_not_a_hang():
    mu, y, a = _draw([np.nan, np.inf, -np.inf])
    assert np.all(np.isnan(a[:, 0]))
    assert not np.any(np.isfinite(a[:, 1:]))


@pytest.mark.parametrize("lo", [5.0, 50.0, 5e3])
def test_tail_branch_matches_the_exponential_limit(lo):
    """Above ``lo`` the excess ``x - lo`` has mean ``1/lo - 2/lo**3 + ...`` (Mills ratio);
    checked at 5 Monte Carlo standard errors, where the Robert sampler is still used,
    and at the switch to the pure exponential the two agree to O(lo**-2)."""
    n = 20_000
    mu = np.full((n, 1), -lo)
    a = draw_utilities(mu, np.zeros(n, dtype=np.int64), 11, 0, np.empty_like(mu))[:, 0]
    excess = a  # a = mu + x with x > lo, i.e. a = x - lo
    if lo < 100:
        exact = np.exp(stats.norm.logpdf(lo) - stats.norm.logsf(lo)) - lo
    else:  # scipy's logsf loses digits that far out: the asymptotic Mills series
        exact = 1 / lo - 2 / lo**3 + 10 / lo**5
    assert abs(excess.mean() - exact) < 5 * excess.std() / np.sqrt(n)


def test_huge_covariate_is_refused_before_the_fit():
    import pandas as pd

    from dolda import DOLDA

    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(["apple", "pear", "fig", "kiwi"], 6)) for _ in range(20)]
    X = pd.DataFrame({"income": rng.normal(size=20) * 1e300})
    with pytest.raises(ValueError, match="covariate column 'income' has values up to"):
        DOLDA(n_topics=2, n_iter=4, progress=False).fit(texts, np.arange(20) % 2, X=X)
