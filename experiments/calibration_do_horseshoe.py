"""DOProbit's two likelihoods under the Horseshoe on labels from the DO model.

``experiments.calibration simulated`` has one Horseshoe regime (multinomial-logit labels on
1000 rows); this adds the two DO regimes (3000 rows, signal x0.7 and x1.5) under the
Horseshoe, ``likelihood="ovr"`` and ``"do"`` side by side, calibrated rule, scored on 5000
fresh rows against the true probabilities (``docs/CALIBRATION.md``, "The DO likelihood")::

    python -m experiments.calibration_do_horseshoe     # results/calibration_do_horseshoe.json
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
sys.path.insert(0, str(ROOT / "tests"))
import _simulate  # noqa: E402  (the tests' simulator: never calls dolda)


def main(seeds=(1, 2)):
    from dolda import DOProbit
    from dolda.posterior import calibration

    rows = []
    for seed in seeds:
        for scale in (0.7, 1.5):
            tr = _simulate.simulate_labelled(3000, model="do", scale=scale, seed=seed)
            te = _simulate.simulate_labelled(5000, model="do", seed=100 + seed, coef=tr.coef)
            truth = calibration.log_loss(te.proba, te.y)
            row = {"label_model": "do", "scale": scale, "n_train": 3000, "seed": seed,
                   "truth_log_loss": truth}
            for likelihood in ("do", "ovr"):
                tic = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fit = DOProbit(prior="horseshoe", n_iter=600, burn_in=200,
                                   random_state=seed, n_jobs=1,
                                   likelihood=likelihood).fit(tr.X, tr.y)
                p = fit.predict_proba(te.X)
                row[likelihood] = {
                    "log_loss_vs_truth": calibration.log_loss(p, te.y) / truth - 1,
                    "slope": calibration.calibration_slope(p, te.y),
                    "accuracy": float(np.mean(p.argmax(axis=1) == te.y)),
                    "fit_seconds": time.perf_counter() - tic,
                    "calibration_map": calibration.stacking_map(fit.stacking_)}
            rows.append(row)
            print(f"do x{scale} seed {seed}: "
                  + " | ".join(f"{k} {row[k]['log_loss_vs_truth']:+.1%} slope "
                               f"{row[k]['slope']:.2f} acc {row[k]['accuracy']:.3f} "
                               f"{row[k]['fit_seconds']:.0f}s" for k in ("do", "ovr")),
                  flush=True)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "calibration_do_horseshoe.json"
    out.write_text(json.dumps({"experiment": "calibration_do_horseshoe", "n_iter": 600,
                               "burn_in": 200, "rows": rows}, indent=1))
    print(out)


if __name__ == "__main__":
    main()
