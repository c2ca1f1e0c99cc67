"""Prediction time of one package source (``sys.argv[1]``, e.g. ``../main/src`` or ``src``), for
a before/after of :func:`dolda.sampler.predict.predict_topic_proportions` with Phi in float64
and in float32 (the dtype of a fitted ``DOLDA.phi_``).

Needs the arrays that ``bench_predict.py``'s topics give, saved as ``.npy`` in ``--work``:
``test_tokens.npy``, ``test_ptr.npy`` (20 Newsgroups test, the train vocabulary) and
``phi100.npy``, ``phi1000.npy`` (K x V).  300 test documents (seed 1), 50 sweeps, burn-in
25, 2 threads; ``batch``: all 300 in one call (median and min of 3), ``single10``: 10
documents one call each (min of 2), after a warm-up of both kernels.  Prints only.

Usage::

    python benchmarks/archive/compare_predict_src.py ../main/src [/tmp/speedw]
    python benchmarks/archive/compare_predict_src.py src [/tmp/speedw]
"""
import sys
import time

import numpy as np

sys.path.insert(0, sys.argv[1])
WORK = sys.argv[2] if len(sys.argv) > 2 else "/tmp/speedw"

from dolda.sampler.predict import predict_topic_proportions  # noqa: E402
from dolda.sampler.threads import using_threads  # noqa: E402

tok = np.load(f"{WORK}/test_tokens.npy")
ptr = np.load(f"{WORK}/test_ptr.npy")
keep = np.sort(np.random.default_rng(1).choice(len(ptr) - 1, 300, replace=False))
parts = [tok[ptr[d]:ptr[d + 1]] for d in keep]
t = np.concatenate(parts).astype(np.int32)
p = np.concatenate([[0], np.cumsum([len(x) for x in parts])]).astype(np.int64)
for K in (100, 1000):
    phi = np.load(f"{WORK}/phi{K}.npy")
    for dt in (np.float64, np.float32):
        ph = phi.astype(dt)
        with using_threads(2):
            predict_topic_proportions(t[:p[20]], p[:21], ph, 0.1, 2, 1, 1)
            predict_topic_proportions(t[:p[1]], p[:2], ph, 0.1, 2, 1, 1)
            ts = []
            for r in range(3):
                tic = time.perf_counter()
                predict_topic_proportions(t, p, ph, 0.1, 50, 25, 2)
                ts.append(time.perf_counter() - tic)
            ts1 = []
            for r in range(2):
                tic = time.perf_counter()
                for d in range(10):
                    predict_topic_proportions(t[p[d]:p[d + 1]], np.array([0, p[d + 1] - p[d]]),
                                              ph, 0.1, 50, 25, 2)
                ts1.append(time.perf_counter() - tic)
        print(f"K={K} {dt.__name__}: batch median {np.median(ts):.3f} s, min {min(ts):.3f} s; "
              f"10 single documents {min(ts1):.4f} s", flush=True)
