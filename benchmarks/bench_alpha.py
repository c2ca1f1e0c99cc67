"""One sweep of every z kernel before and after the per-topic alpha (issue 12, point 3).

The kernels now take ``alpha`` as a float64 array (K,) instead of a float.  This
times one sweep of each kernel family on a simulated mid-size corpus (5,000
documents of 100 tokens, V = 5,000; K = 50 and 100), one thread, in child
processes that alternate between two source trees (``--before``, e.g. the
lead's clone, and ``--after``, this one), so both see the same machine load;
the figure is the ratio of the medians.  The ``after`` tree is also timed with
an asymmetric alpha (same kernels, a non-constant vector)::

    python benchmarks/bench_alpha.py --before ../main/src --after src --rounds 3

writes ``benchmarks/results/alpha_kernels.{json,md}``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

CHILD = r'''
import json, sys, time
import numpy as np
from dolda.datasets import simulate
from dolda.sampler import lda as kernels
from dolda.sampler import supervised as S
from dolda.sampler.predict import predict_topic_proportions

K, asym, reps = int(sys.argv[1]), sys.argv[2] == "asym", int(sys.argv[3])
rng = np.random.default_rng(0)
sim = simulate(n_docs=5000, n_topics=K, n_classes=4, vocab_size=5000, doc_length=100,
               alpha=0.1, beta=0.05, disjoint_topics=False, random_state=1)
tokens, doc_ptr = sim.words.astype(np.int32), sim.doc_ptr.astype(np.int64)
phi_wk = np.ascontiguousarray(sim.phi.T, dtype=np.float32)
alpha = rng.gamma(0.5, 0.2, K) + 0.005 if asym else 0.1
eta_t = rng.normal(scale=1.5, size=(4, K))
base = rng.normal(size=(5000, 4))
gram = eta_t.T @ eta_t
z0 = rng.integers(0, K, len(tokens)).astype(np.int32)
ndk0 = np.zeros((5000, K), np.int32)
np.add.at(ndk0, (np.repeat(np.arange(5000), np.diff(doc_ptr)), z0), 1)
tables = kernels.build_alias_tables(phi_wk)
if asym:  # the chain's word-bucket tables, built once per iteration (as topic_globals does)
    bucket = kernels.build_alias_tables(phi_wk, alpha=alpha)
    avec = np.asarray(alpha, np.float64)

def lda_dense(z, ndk, it):
    kernels.sweep(tokens, doc_ptr, z, ndk, phi_wk, alpha, 1, it)

def lda_sparse(z, ndk, it):
    kernels.sweep(tokens, doc_ptr, z, ndk, phi_wk, alpha, 1, it, tables)

def exact(z, ndk, it):
    S.sweep_supervised(tokens, doc_ptr, z, ndk, phi_wk, alpha, eta_t, base, gram, 1, it,
                       np.empty((0, K)))

def mh(z, ndk, it):
    if asym:
        S._sweep_supervised_mh(tokens, doc_ptr, z, ndk, phi_wk, bucket.prob, bucket.alias,
                               bucket.mass, bucket.row, avec, eta_t, base, 1, it)
    else:
        S.sweep_supervised_mh(tokens, doc_ptr, z, ndk, phi_wk, tables.prob, tables.alias,
                              tables.mass, tables.row, alpha, eta_t, base, 1, it)

def predict(method):
    def run(z, ndk, it):
        n = int(doc_ptr[1000])  # the first 1,000 documents
        predict_topic_proportions(tokens[:n], doc_ptr[:1001], sim.phi, alpha, 4, 2, it,
                                  method=method)
    return run

out = {}
for name, fn in [("lda_dense", lda_dense), ("lda_sparse", lda_sparse),
                 ("supervised_exact", exact), ("supervised_mh", mh),
                 ("predict_dense", predict("dense")), ("predict_sparse", predict("sparse"))]:
    z, ndk = z0.copy(), ndk0.copy()
    fn(z, ndk, 0)  # compile / warm up
    times = []
    for it in range(1, reps + 1):
        t = time.perf_counter()
        fn(z, ndk, it)
        times.append(time.perf_counter() - t)
    out[name] = float(np.median(times))
print(json.dumps(out))
'''


def child(src, K, mode, reps):
    env = dict(os.environ, PYTHONPATH=str(Path(src).resolve()), NUMBA_NUM_THREADS="1",
               OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    r = subprocess.run([sys.executable, "-c", CHILD, str(K), mode, str(reps)], env=env,
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--before", required=True)
    p.add_argument("--after", default=str(Path(__file__).resolve().parents[1] / "src"))
    p.add_argument("--topics", type=int, nargs="+", default=[50, 100])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "alpha_kernels"))
    a = p.parse_args(argv)
    runs = {}
    for K in a.topics:
        for r in range(a.rounds):  # interleaved: before, after, after (asymmetric)
            for label, src, mode in (("before", a.before, "sym"), ("after", a.after, "sym"),
                                     ("after_asym", a.after, "asym")):
                res = child(src, K, mode, a.reps)
                for kern, t in res.items():
                    runs.setdefault((K, kern, label), []).append(t)
                print(K, r, label, {k: round(v, 4) for k, v in res.items()}, flush=True)
    import numpy as np

    rows = []
    for K in a.topics:
        for kern in sorted({k for (kk, k, _) in runs if kk == K}):
            med = {lab: float(np.median(runs[(K, kern, lab)]))
                   for lab in ("before", "after", "after_asym")}
            rows.append(dict(K=K, kernel=kern, **{f"{k}_s": v for k, v in med.items()},
                             after_over_before=med["after"] / med["before"],
                             asym_over_before=med["after_asym"] / med["before"]))
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"rounds": a.rounds, "reps": a.reps,
                                                    "rows": rows}, indent=1) + "\n")
    lines = ["# One z-sweep before / after the per-topic alpha (`benchmarks/bench_alpha.py`)\n",
             f"Simulated corpus, 5,000 documents x 100 tokens, V = 5,000; one thread; median "
             f"of {a.reps} sweeps per child process, {a.rounds} interleaved rounds; the "
             "machine is shared, so only the ratios within a row mean much.\n",
             "| K | kernel | before s | after s (scalar alpha) | after s (asymmetric) | "
             "after / before | asymmetric / before |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['K']} | {r['kernel']} | {r['before_s']:.4f} | {r['after_s']:.4f} "
                     f"| {r['after_asym_s']:.4f} | {r['after_over_before']:.3f} | "
                     f"{r['asym_over_before']:.3f} |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
