"""Resident memory of DOLDA fit + predict at its defaults on 20 Newsgroups, stage by stage.

Usage: ``python benchmarks/memory_stages.py K N_ITER BURN_IN [PAD_DRAWS]`` (as
``memory_defaults.py``:
``DOLDA(n_topics=K, n_iter=N_ITER, burn_in=BURN_IN, random_state=1, n_jobs=2)``, defaults
otherwise, fit on train, predict on test, in this process).

A thread samples ``VmRSS`` from ``/proc/self/status`` every 5 ms and attributes it to the
stage running (the stages are set by wrapping the functions ``fit`` and ``predict`` call,
as ``profile_dolda.py`` does).  Printed per stage: the resident size when the stage began,
its peak, and the process's high-water mark (``VmHWM``) at its end.  Prints only.

``PAD_DRAWS`` S (a shortcut for the memory of a long chain in a short run): the chain holds
a touched ballast array of the size of S kept eta and lambda draws beyond its own, and its
kept draws are then repeated (``np.resize``) to S, so everything after the chain (the
calibration map's leave-one-out pass, prediction) works on arrays of the shape of S draws.
The values are not those of a long chain: the accuracy printed is meaningless then.
With ``CHAIN_STAGES=1`` the chain's iterations are split into their blocks (a, eta with
its design and block inverses, z, Phi).  With ``MEMRAY_OUT=file``, fit + predict also run under ``memray.Tracker(file)`` (after
the data are loaded; ``python -m memray tree file`` shows what is allocated at the heap's
peak).
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from pathlib import Path

DATA = Path(os.environ.get("DOLDA_DATA",
                           Path(__file__).resolve().parents[2] / "shared" / "data"))


def _status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    return 0


class Stages:
    def __init__(self):
        self.order = []  # (stage, rss at start, peak, hwm at end)
        self.rows = {}
        self.stage = None
        self.lock = threading.Lock()
        self.set("start")
        self._stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def set(self, stage):
        rss = _status("VmRSS")
        with self.lock:
            if self.stage is not None:
                self.rows[self.stage][2] = _status("VmHWM")
            if stage not in self.rows:
                self.rows[stage] = [rss, rss, 0]
                self.order.append(stage)
            self.stage = stage

    def _run(self):
        while not self._stop:
            rss = _status("VmRSS")
            with self.lock:
                row = self.rows[self.stage]
                row[1] = max(row[1], rss)
            time.sleep(0.005)

    def report(self):
        self.set("end")
        self._stop = True
        self.thread.join()
        print(f"{'stage':44s} {'RSS at start':>12s} {'peak':>8s} {'HWM at end':>10s}  (GB)")
        for stage in self.order[:-1]:
            start, peak, hwm = self.rows[stage]
            print(f"{stage:44s} {start / 1e9:12.3f} {peak / 1e9:8.3f} {hwm / 1e9:10.3f}")


def staged(stages, obj, name, label, after=None):
    """Wrap ``obj.name`` so that it runs as stage ``label`` (then ``after``, or the stage
    that was running before)."""
    fn = getattr(obj, name, None)
    if fn is None:  # not in this version of dolda
        return

    @functools.wraps(fn)
    def run(*a, **k):
        before = stages.stage
        stages.set(label(*a, **k) if callable(label) else label)
        try:
            return fn(*a, **k)
        finally:
            stages.set(after or before)

    setattr(obj, name, run)


def main():
    K, n_iter, burn = (int(v) for v in sys.argv[1:4])
    pad = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    stages = Stages()
    stages.set("import dolda, dolda.datasets")
    from dolda import DOLDA
    from dolda.datasets import load_20newsgroups
    stages.set("load 20 Newsgroups (train + test)")
    tr, te = load_20newsgroups(DATA, "train"), load_20newsgroups(DATA, "test")
    stages.set("texts to lists")
    tr_text, tr_y = tr.text.tolist(), tr.label
    te_text, te_y = te.text.tolist(), te.label.to_numpy()
    del tr, te

    from dolda.models.dolda import estimator as M
    from dolda.models.dolda import chain as C
    from dolda.models.dolda import inputs as I
    from dolda.models.dolda import proportions as P
    from dolda.models.dolda import summary as S
    from dolda.sampler import chain as chain_module

    staged(stages, I, "make_corpus",
           lambda model, texts, fit: "fit: corpus (tokenise)" if fit else "predict: corpus")
    staged(stages, I, "add_word_features",
           lambda model, corpus, Xd, names, p=None, y_index=None:
           "fit: word covariates" if p is not None else "predict: word covariates")
    staged(stages, I, "chain_design", "fit: chain design")
    staged(stages, chain_module, "init_state", "fit: chain init_state",
           after="fit: chain iterations")
    staged(stages, C, "run_chain", "fit: chain set-up", after="fit: combine draws")
    if os.environ.get("CHAIN_STAGES"):  # the chain's iteration split into its blocks
        from dolda.sampler import gaussian
        from dolda.sampler import shard as shard_module
        from dolda.sampler import sparse_eta

        staged(stages, shard_module, "utility_step", "fit: chain a-step")
        staged(stages, sparse_eta, "eta_step", "fit: chain eta-step (other)")
        staged(stages, sparse_eta, "design", "fit: chain eta-step, U")
        staged(stages, gaussian, "sparse_design", "fit: chain eta-step, CG design")
        staged(stages, gaussian, "block_inverses", "fit: chain eta-step, block inverses")
        staged(stages, gaussian, "block_factors", "fit: chain eta-step, block factors")
        staged(stages, chain_module, "topic_globals", "fit: chain topic globals")
        staged(stages, shard_module, "topic_step", "fit: chain z-step")
        staged(stages, chain_module, "phi_step", "fit: chain Phi-step")
    if pad:
        import numpy as np

        ballast = []
        init_state = chain_module.init_state

        def padded_init(seed, data, config):
            state = init_state(seed, data, config)
            n_cols = data.X.shape[1] + config.n_topics
            n_keep = n_iter - burn
            ballast.append(np.ones(2 * max(pad - n_keep, 0) * data.n_classes * n_cols,
                                   np.float32))
            return state

        chain_module.init_state = padded_init
        run_chain = C.run_chain

        def padded_run(model, *a, **k):
            out = run_chain(model, *a, **k)
            ballast.clear()
            for key in ("eta_draws", "lambda_draws", "tau_draws"):
                if out[key] is not None:
                    out[key] = np.resize(out[key], (pad,) + out[key].shape[1:])
            return out

        C.run_chain = padded_run
    # U = [X, zbar]: the fit's summary stage (training documents) and prediction
    zbar_stage = (lambda *a: "predict: transform (zbar)" if stages.stage.startswith("predict")
                  else "fit: transform of train (zbar)")
    staged(stages, S, "regressor_matrix", zbar_stage)
    staged(stages, P, "regressor_matrix", zbar_stage)
    # the map's fit: one function before commit b2c999e, its two steps since
    staged(stages, M, "fit_proba_stacking", "fit: calibration map (LOO + map)")
    staged(stages, S, "proba_stacking_draws", "fit: calibration map, LOO pass")
    staged(stages, S.calibration, "select_stacking", "fit: calibration map, map fit")
    staged(stages, S, "report_convergence", "fit: convergence report")
    staged(stages, M.calibration, "class_probabilities", "predict: class probabilities")

    tracker = contextlib.nullcontext()
    if os.environ.get("MEMRAY_OUT"):  # memray's allocations of fit + predict only
        import memray

        tracker = memray.Tracker(os.environ["MEMRAY_OUT"])
    tic = time.time()
    with tracker:
        stages.set("fit (other)")
        m = DOLDA(n_topics=K, n_iter=n_iter, burn_in=burn, random_state=1, n_jobs=2,
                  progress=False).fit(tr_text, tr_y)
        stages.set("between fit and predict")
        fit_s = time.time() - tic
        stages.set("predict (other)")
        pred = m.predict(te_text)
        acc = float((pred == te_y).mean())
        stages.set("after predict")
    stages.report()
    draws = m.eta_draws_.nbytes + (0 if m.lambda_draws_ is None else m.lambda_draws_.nbytes)
    print(f"K {K} draws {m.eta_draws_.shape} eta+lambda {draws / 1e9:.3f} GB, "
          f"phi_ {m.phi_.nbytes / 1e9:.3f} GB; VmHWM {_status('VmHWM') / 1e9:.3f} GB; "
          f"test accuracy {acc:.4f}; fit {fit_s:.0f} s, all {time.time() - tic:.0f} s; "
          f"load {os.getloadavg()[0]:.1f}")
    # the same seed must give the same numbers before and after a memory change
    print("sha1 eta_draws_", _sha1(m.eta_draws_), "stacking_", _sha1(m.stacking_),
          "phi_", _sha1(m.phi_), "predictions", _sha1(pred.astype(str)))


def _sha1(a):
    import hashlib

    import numpy as np

    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]


if __name__ == "__main__":
    main()
