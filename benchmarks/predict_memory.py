"""Peak RSS of ``predict_proba`` above the fitted model, by the draw-slice bound.

Usage: ``python benchmarks/predict_memory.py MAX_ELEMENTS`` (``2e7`` and ``2e6`` in
``results/dolda_memory.md``): a K = 1000 model (4 iterations) on 20 Newsgroups train, its
draws resampled to 250 (as a 500-iteration fit keeps), RSS sampled every 5 ms while it
predicts the test split.  Prints only.
"""

import sys
import threading
import time
from pathlib import Path

import numpy as np

from dolda import DOLDA
from dolda.posterior import calibration
from dolda.datasets import load_20newsgroups

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096 / 1e9


def main():
    calibration._draw_chunks.__defaults__ = (float(sys.argv[1]), None)
    tr, te = load_20newsgroups(DATA, "train"), load_20newsgroups(DATA, "test")
    m = DOLDA(n_topics=1000, alpha=0.1, beta=0.01, n_iter=4, random_state=1, n_jobs=2,
              progress=False, predict_sweeps=10).fit(tr.text.tolist(), tr.label)
    rng = np.random.default_rng(0)
    S = 250
    m.eta_draws_ = (m.eta_draws_[rng.integers(0, len(m.eta_draws_), S)]
                    * (1 + 0.01 * rng.standard_normal((S,) + m.eta_draws_.shape[1:])))
    texts = te.text.tolist()
    peak, stop = [0.0], [False]

    def watch():
        while not stop[0]:
            peak[0] = max(peak[0], rss())
            time.sleep(0.005)

    base = rss()
    thread = threading.Thread(target=watch)
    thread.start()
    tic = time.time()
    m.predict_proba(texts)
    seconds = time.time() - tic
    stop[0] = True
    thread.join()
    print(f"max_elements {sys.argv[1]}: RSS before predict {base:.3f} GB, peak during "
          f"{peak[0]:.3f} GB (+{peak[0] - base:.3f}), {seconds:.1f} s")


if __name__ == "__main__":
    main()
