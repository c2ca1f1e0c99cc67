"""Shared by the tests that compare kept draws with the chain's own state."""

import numpy as np


def record_probit_states(monkeypatch):
    """Record the chain's probit state (eta, tau2, lambda2 in float64) after every
    iteration: ``{iteration: [eta, tau2, lam2]}``, filled as the chain runs."""
    from dolda import backends

    seen = {}
    real_make = backends.make_chain

    def make_chain(*args, **kw):
        runner = real_make(*args, **kw)
        real_step = runner.step

        def step(it):
            state, info = real_step(it)
            p = state.probit
            seen[it] = [np.array(a, dtype=np.float64) for a in (p.eta, p.tau2, p.lam2)]
            return state, info

        runner.step = step
        return runner

    monkeypatch.setattr(backends, "make_chain", make_chain)
    return seen
