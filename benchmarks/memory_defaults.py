"""Peak RSS of DOLDA at its defaults on 20 Newsgroups (word covariates, many kept draws).

Usage: ``python benchmarks/memory_defaults.py K N_ITER BURN_IN`` (the figures of
``results/dolda_memory.md``, "At the defaults": ``1000 260 10``, the 250 kept draws of a
500-iteration fit).  Fit on train, predict test, in this process.  Prints only.
"""

import resource
import sys
import time
from pathlib import Path

from dolda import DOLDA
from dolda.datasets import load_20newsgroups

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def main():
    K, n_iter, burn = (int(v) for v in sys.argv[1:4])
    tr, te = load_20newsgroups(DATA, "train"), load_20newsgroups(DATA, "test")
    tic = time.time()
    m = DOLDA(n_topics=K, n_iter=n_iter, burn_in=burn, random_state=1, n_jobs=2,
              progress=False).fit(tr.text.tolist(), tr.label)
    fit_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    acc = float((m.predict(te.text.tolist()) == te.label.to_numpy()).mean())
    draws = m.eta_draws_.nbytes + (0 if m.lambda_draws_ is None else m.lambda_draws_.nbytes)
    print(f"K {K} draws {m.eta_draws_.shape} eta+lambda {draws / 1e9:.3f} GB; peak after fit "
          f"{fit_peak / 1e9:.3f} GB, after predict "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e9:.3f} GB; "
          f"test accuracy {acc:.4f}; {time.time() - tic:.0f} s")


if __name__ == "__main__":
    main()
