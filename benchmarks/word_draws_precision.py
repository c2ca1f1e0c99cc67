"""What the compact word block changes in the predictions (issue 33): float16 word draws and
the word columns' local scales as summaries.

One DOLDA fit with every kept word as a covariate on a slice of 20 Newsgroups train; the
chain's float64 state is recorded at every kept iteration, so the same draws are scored
three ways on a slice of test, with the model's calibration map:

* float64 draws (the chain's state), float32 draws (every column: the layout before issue
  33), and the stored draws (word columns float16, others float32): max |difference| of
  ``predict_proba`` and of the linear predictors, and the share of changed predicted classes;
* the calibration map fitted as before (each word column's lambda at every draw, for the
  columns one training row uses) against the map the fit now fits (per training row the
  kept float32 ``sum_j u_dj^2 lambda_lj^2`` over those columns at every draw,
  ``lambda_word_rows_``): max |difference| of the maps' ``predict_proba`` on test, and
  the test log loss and accuracy of both.

Usage: ``python benchmarks/word_draws_precision.py [--docs 800] [--n-iter 60] [--topics 20]``
(about a minute or two on a loaded 2-core machine); writes
``benchmarks/results/word_draws_precision.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np

DATA = Path(os.environ.get("DOLDA_DATA",
                           Path(__file__).resolve().parents[2] / "shared" / "data"))
RESULTS = Path(__file__).resolve().parent / "results"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--docs", type=int, default=800)
    ap.add_argument("--n-iter", type=int, default=60)
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--name", default="word_draws_precision")
    args = ap.parse_args()

    from dolda import DOLDA, backends
    from dolda.datasets import load_20newsgroups
    from dolda.posterior import calibration
    from dolda.posterior.scores import coefficient_prior_sd
    from dolda.utils.draws import BlockDraws

    rng = np.random.default_rng(0)
    tr = load_20newsgroups(DATA, "train")
    te = load_20newsgroups(DATA, "test")
    tr = tr.iloc[np.sort(rng.choice(len(tr), args.docs, replace=False))]
    te = te.iloc[np.sort(rng.choice(len(te), args.docs // 2, replace=False))]

    seen = {}
    real_make = backends.make_chain

    def make_chain(*a, **kw):
        runner = real_make(*a, **kw)
        real_step = runner.step

        def step(it):
            state, info = real_step(it)
            seen[it] = (state.probit.eta.copy(), state.probit.tau2.copy(),
                        np.sqrt(state.probit.lam2))
            return state, info

        runner.step = step
        return runner

    backends.make_chain = make_chain
    m = DOLDA(n_topics=args.topics, n_iter=args.n_iter, n_words="all", random_state=1,
              n_jobs=2, progress=False).fit(tr.text.tolist(), tr.label)
    backends.make_chain = real_make
    eta = m.eta_draws_
    assert isinstance(eta, BlockDraws)
    burn = m.n_iter_ // 2
    kept = range(burn, m.n_iter_)
    f64 = np.stack([seen[it][0] for it in kept])
    f32 = f64.astype(np.float32)
    stored = np.asarray(eta)
    U = m._regressors(te.text.tolist())
    y = np.searchsorted(m.classes_, te.label.to_numpy())

    def proba(draws, stacking=m.stacking_):
        return calibration.class_probabilities(U, draws, "calibrated", stacking)

    p64, p32, p16 = proba(f64), proba(f32), proba(stored)
    mu = lambda d: np.asarray(U @ np.asarray(d[-1], np.float64).T)  # noqa: E731
    out = {"docs_train": len(tr), "docs_test": len(te), "topics": args.topics,
           "n_iter": m.n_iter_, "kept_draws": len(eta), "classes": len(m.classes_),
           "word_columns": eta.words.shape[2], "columns": eta.shape[2],
           "max_abs_proba_f32_vs_f64": float(np.abs(p32 - p64).max()),
           "max_abs_proba_stored_vs_f32": float(np.abs(p16 - p32).max()),
           "max_abs_proba_stored_vs_f64": float(np.abs(p16 - p64).max()),
           "max_abs_mu_stored_vs_f64_last_draw": float(np.abs(mu(stored) - mu(f64)).max()),
           "max_abs_mu_f32_vs_f64_last_draw": float(np.abs(mu(f32) - mu(f64)).max()),
           "changed_classes_stored_vs_f64": float(np.mean(p16.argmax(1) != p64.argmax(1)))}
    # the calibration map: per-draw lambda of the word columns (before) vs their summary
    start, n_w = eta.start, eta.words.shape[2]
    lam_full = np.stack([seen[it][2] for it in kept]).astype(np.float32)
    Utr = m._regressors(tr.text.tolist())
    y_tr = np.searchsorted(m.classes_, tr.label.to_numpy())
    maps = {}
    for name, sd in (
            ("per_draw", coefficient_prior_sd(m.tau_draws_, lam_full, m.prior_variance)),
            ("kept", coefficient_prior_sd(m.tau_draws_, m.lambda_draws_, m.prior_variance,
                                          word_block=(start, eta.stop, m.lambda_word_row_ids_,
                                                      m.lambda_word_rows_)))):
        loo = calibration.loo_draws(Utr, eta, y_tr, prior_sd=sd,
                                    n_keep=calibration.map_draw_count(len(y_tr),
                                                                      len(m.classes_)))
        maps[name] = calibration.select_stacking(loo, y_tr, len(m.classes_))
    single = calibration.singleton_columns(Utr)
    out["singleton_word_columns"] = int(single[start:start + n_w].sum())
    pa, pb = proba(eta, maps["per_draw"]), proba(eta, maps["kept"])
    np.testing.assert_array_equal(maps["kept"], m.stacking_)  # what the fit itself fitted
    for name, p in (("per_draw", pa), ("kept", pb)):
        out[f"log_loss_{name}"] = float(-np.mean(np.log(np.maximum(p[np.arange(len(y)), y],
                                                                    1e-300))))
        out[f"accuracy_{name}"] = float(np.mean(p.argmax(1) == y))
    out["max_abs_proba_kept_vs_per_draw_map"] = float(np.abs(pa - pb).max())
    out["command"] = " ".join([Path(sys.executable).name] + sys.argv)
    out["load_average_end"] = [round(v, 2) for v in os.getloadavg()]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.json").write_text(json.dumps(out, indent=1) + "\n")
    lines = [f"# Numerical effect of the compact word block ({args.name})", "",
             f"`{out['command']}`: {out['docs_train']} training / {out['docs_test']} test "
             f"documents of 20 Newsgroups, K = {args.topics}, {out['n_iter']} iterations, "
             f"{out['kept_draws']} kept draws, {out['word_columns']:,} word columns of "
             f"{out['columns']:,} (n_words='all'), {out['classes']} classes; load average at "
             f"the end {out['load_average_end']}.", "", "| quantity | value |", "|---|---|"]
    lines += [f"| {k} | {v:.3g} |" if isinstance(v, float) else f"| {k} | {v} |"
              for k, v in out.items() if k not in ("command", "load_average_end")]
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
