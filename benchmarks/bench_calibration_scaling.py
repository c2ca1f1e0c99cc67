"""How the calibration map's fit scales with classes, rows and draws; full against per-class.

Simulated leave-one-out draws (no chain): for every row a latent score ``m_dl`` (its class's
higher), labels from ``softmax(1.5 m_d)``, and ``s`` draws ``mu_sd = m_d + noise`` as the
chain's predictors; test rows drawn the same way score the map's draw-averaged probabilities
(ECE, log loss).  Times :func:`dolda.posterior.calibration.select_stacking` with the full maps
(``per_class=False``, the method before issue 36) and the per-class maps (``per_class=True``)
on the same draws, the default (per-class) first.

    python -m benchmarks.bench_calibration_scaling                    # the default grid
    python -m benchmarks.bench_calibration_scaling --cells 8x1000 52x5139 --full-max 24
    python -m benchmarks.bench_calibration_scaling --quick

Writes benchmarks/results/calibration_scaling.json and .md.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks import harness
from dolda.posterior import calibration as cal


def simulate(n_classes, n_rows, n_draws, seed, noise=0.4):
    """``(loo, y)`` of ``n_rows`` training rows and ``(mu_test, y_test)`` of as many test rows."""
    rng = np.random.default_rng(seed)

    def rows(n):
        latent = rng.integers(0, n_classes, n)
        m = rng.normal(-1.5, 0.7, (n, n_classes))
        m[np.arange(n), latent] += 2.0
        logits = 1.5 * m
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
        mu = m[None] + rng.normal(0.0, noise, (n_draws, n, n_classes))
        return mu, y

    mu, y = rows(n_rows)
    loo = cal.LooDraws(mu.mean(axis=0), mu, np.full((n_draws, n_rows), 1.0 / n_draws))
    return loo, y, rows(n_rows)


def holdout_scores(stacking, mu_test, y_test):
    proba = cal.stacked_probabilities(mu_test, stacking).mean(axis=0)
    return {"ece": cal.expected_calibration_error(proba, y_test),
            "log_loss": cal.log_loss(proba, y_test),
            "accuracy": float(np.mean(proba.argmax(axis=1) == y_test))}


def run_cell(n_classes, n_rows, n_draws, seed, methods):
    loo, y, (mu_test, y_test) = simulate(n_classes, n_rows, n_draws, seed)
    out = {"classes": n_classes, "rows": n_rows, "draws": n_draws, "seed": seed}
    for method in methods:
        tic = time.perf_counter()
        stacking = cal.select_stacking(loo, y, n_classes, per_class=(method == "per_class"))
        seconds = time.perf_counter() - tic
        out[method] = {"seconds": seconds, "map": cal.stacking_map(stacking),
                       **holdout_scores(stacking, mu_test, y_test)}
        print(f"L={n_classes} D={n_rows} s={n_draws} seed={seed} {method}: {seconds:.2f} s "
              f"{out[method]}", flush=True)
    return out


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--cells", nargs="+", default=None,
                        help="CLASSESxROWS cells (draws: dolda.posterior.calibration."
                             "map_draw_count); default 8x1000 16x1000 32x1000 8x4000 52x1000 "
                             "52x5139 (3x200 with --quick)")
    parser.add_argument("--draws", type=int, nargs="+", default=None,
                        help="draws per cell instead of map_draw_count (several: a sweep)")
    parser.add_argument("--full-max", type=int, default=32,
                        help="fit the full maps only up to this many classes (slow)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    args = parser.parse_args(argv)
    run = harness.start("calibration_scaling", args, argv)
    cells = args.cells or (["3x200"] if args.quick else ["8x1000", "16x1000", "32x1000",
                                                          "8x4000", "52x1000", "52x5139"])
    draws = args.draws or ([10] if args.quick else None)
    rows = []
    for cell in cells:
        try:
            n_classes, n_rows = (int(v) for v in cell.lower().split("x"))
        except ValueError:
            parser.error(f"a cell is CLASSESxROWS, e.g. 8x1000; got {cell!r}")
        for n_draws in draws or [cal.map_draw_count(n_rows, n_classes)]:
            methods = ["per_class"] + (["full"] if n_classes <= args.full_max else [])
            for seed in args.seeds:
                rows.append(run_cell(n_classes, n_rows, n_draws, seed, methods))
    lines = ["The default per-class maps beside the full maps on the same simulated draws.",
             "", "| classes | rows | draws | seed | full s | per-class s | full ECE / log loss "
             "| per-class ECE / log loss |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        full = r.get("full")
        pc = r["per_class"]
        lines.append(
            f"| {r['classes']} | {r['rows']} | {r['draws']} | {r['seed']} | "
            + (f"{full['seconds']:.2f}" if full else "-") + f" | {pc['seconds']:.2f} | "
            + (f"{full['ece']:.3f} / {full['log_loss']:.3f}" if full else "-")
            + f" | {pc['ece']:.3f} / {pc['log_loss']:.3f} |")
    run.finish({"rows": rows}, lines, "Calibration map: cost by classes, rows and draws")
    return rows


if __name__ == "__main__":
    main()
