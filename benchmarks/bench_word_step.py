"""The eta-step with word covariates: blocked Gibbs (``eta_sampler="gibbs"``) against CG.

On a small real corpus (a bug-report project of ``../shared/data/apache_jira_bugs``,
DOLDA's defaults: ``n_words="auto"`` log-count word covariates, the Horseshoe, K topics)
two live chains, built as ``DOLDA.fit`` builds them (``bench_dolda.DOLDAContestant``),
run the same iterations in interleaved rounds (so they share the machine's load):

* ``gibbs``: one exact blocked-Gibbs scan per iteration (:mod:`dolda.sampler.word_step`);
* ``cg``: an independent exact draw of eta by block-preconditioned CG to 1e-8.

Per sampler: seconds per iteration (median), and over the kept second half of the
chain the effective sample size (ArviZ bulk ESS) and ESS per second (the kept
iterations' summed wall time) of

* the word coefficients that matter: per class the ``--top-words`` words of largest
  absolute posterior mean (the two chains pooled), median over them;
* the class levels ``eta_0 + mean_k eta_topic,k`` (the identified level, issue 32);
* the DO log-likelihood.

Also, at the CG chain's last state, the looser-CG candidate: the same perturbed system
solved to ``--loose-tol`` instead of 1e-8 from the previous eta, its CG iterations and its
error in posterior standard deviations (not an option of the sampler: measured, dropped).

Usage::

    python benchmarks/bench_word_step.py [--project storm] [--topics 20] [--iters 120]
        [--round-iters 10] [--threads 2] [--seed 1]

Writes ``benchmarks/results/word_step.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_dolda import DOLDAContestant  # noqa: E402


def load_project(data, project):
    import pandas as pd

    from dolda.design.corpus import Vocabulary

    train = pd.read_json(Path(data) / "apache_jira_bugs" / project / "train.jsonl.gz", lines=True)
    corpus = Vocabulary().fit_transform(train.text.tolist())
    return corpus, train.label.to_numpy()


def ess(x):
    """Bulk ESS of one chain's draws ``x`` (S, ...), per trailing entry."""
    import arviz as az

    x = np.asarray(x, dtype=np.float64)
    flat = x.reshape(len(x), -1)
    return np.array([az.ess(flat[None, :, j], method="bulk") for j in range(flat.shape[1])])


def loose_cg(contestant, tol, sd):
    """The CG draw at ``tol`` against 1e-8 from the last state (same noise, same start)."""
    from dolda.sampler import gaussian, sparse_eta
    from dolda.sampler import probit as probit_blocks
    from dolda.sampler.truncnorm import draw_utilities

    st, data, K = contestant.state, contestant.data, contestant.state.ndk.shape[1]
    zbar = sparse_eta.zbar_csr(data.doc_ptr, st.ndk)
    U = sparse_eta.design(data.X, [zbar])
    eta = st.probit.eta
    mu = np.ascontiguousarray(U @ eta.T)
    a = draw_utilities(mu, data.y, 7, 0, np.empty_like(mu))
    prec = probit_blocks.prior_precision(contestant.chain.config.prior, st.probit.lam2,
                                         st.probit.tau2)
    design = gaussian.sparse_design(U, sparse_eta.block_columns(data.X.shape[1], K),
                                    singletons=True)
    rng = np.random.default_rng(3)
    e1 = rng.standard_normal((prec.shape[0], U.shape[0]))
    e2 = rng.standard_normal(prec.shape)
    out = {}
    for t in (gaussian.CG_TOL, tol):
        tic = time.perf_counter()
        x, its = gaussian.draw_pcg(design, a, prec, e1, e2, start=eta, tol=t)
        out[t] = (x, its, time.perf_counter() - tic)
    exact, loose = out[gaussian.CG_TOL][0], out[tol][0]
    err = np.abs(loose - exact) / np.maximum(sd, 1e-12)
    return {"tol": tol, "exact_tol": gaussian.CG_TOL,
            "cg_iterations_exact_median": float(np.median(out[gaussian.CG_TOL][1])),
            "cg_iterations_loose_median": float(np.median(out[tol][1])),
            "seconds_exact": out[gaussian.CG_TOL][2], "seconds_loose": out[tol][2],
            "error_in_sd_max": float(err.max()), "error_in_sd_median": float(np.median(err))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--project", default="storm")
    parser.add_argument("--topics", type=int, default=20)
    parser.add_argument("--iters", type=int, default=120)
    parser.add_argument("--round-iters", type=int, default=10)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--top-words", type=int, default=5)
    parser.add_argument("--loose-tol", type=float, default=1e-3)
    parser.add_argument("--samplers", nargs="+", default=["gibbs", "cg"])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)

    corpus, y = load_project(args.data, args.project)
    load_before = os.getloadavg()
    chains = {s: DOLDAContestant(corpus, y, args.topics, args.threads, seed=args.seed,
                                 n_words="auto", eta_sampler=s) for s in args.samplers}
    traces = {s: {"eta": [], "loglik_do": [], "seconds": []} for s in chains}

    def recorder(s):
        def record(state, info, sec):
            traces[s]["eta"].append(state.probit.eta.astype(np.float32))
            traces[s]["loglik_do"].append(info.loglik_do)
            traces[s]["seconds"].append(sec)
        return record

    done = 0
    while done < args.iters:
        n = min(args.round_iters, args.iters - done)
        for s, c in chains.items():
            c.run(n, recorder(s))
        done += n
        print(f"{done} iterations: " + ", ".join(
            f"{s} {np.median(traces[s]['seconds']):.3f} s/it" for s in chains), flush=True)
    load_after = os.getloadavg()
    first = next(iter(chains.values()))
    n_x, n_words = first.n_x, first.params["n_words"]
    w0 = n_x - n_words
    keep = slice(args.iters // 2, None)
    draws = {s: np.stack(t["eta"])[keep] for s, t in traces.items()}
    pooled_mean = np.mean([d[:, :, w0:n_x].mean(axis=0) for d in draws.values()], axis=0)
    top = np.argsort(-np.abs(pooled_mean), axis=1)[:, :args.top_words]   # (L, top)
    rows = {}
    for s, d in draws.items():
        seconds = float(np.sum(traces[s]["seconds"][keep]))
        words = np.stack([d[:, l, w0 + top[l]] for l in range(d.shape[1])], axis=1)
        level = d[:, :, 0] + d[:, :, n_x:].mean(axis=2)
        e_words, e_level = ess(words), ess(level)
        e_ll = float(ess(np.asarray(traces[s]["loglik_do"])[keep])[0])
        rows[s] = {"median_seconds_per_iter": float(np.median(traces[s]["seconds"])),
                   "kept_seconds": seconds,
                   "ess_top_words_median": float(np.median(e_words)),
                   "ess_class_levels_median": float(np.median(e_level)),
                   "ess_loglik_do": e_ll,
                   "ess_per_s_top_words": float(np.median(e_words)) / seconds,
                   "ess_per_s_class_levels": float(np.median(e_level)) / seconds,
                   "ess_per_s_loglik_do": e_ll / seconds}
        print(s, rows[s], flush=True)
    loose = None
    if "cg" in chains:
        sd = draws["cg"].astype(np.float64).std(axis=0)
        loose = loose_cg(chains["cg"], args.loose_tol, sd)
        print("loose CG", loose, flush=True)
    result = {"corpus": {"project": args.project, "n_docs": corpus.n_docs,
                         "n_tokens": corpus.n_tokens, "n_classes": int(len(set(y))),
                         "n_word_columns": n_words},
              "K": args.topics, "iters": args.iters, "kept": args.iters - args.iters // 2,
              "threads": args.threads, "seed": args.seed, "top_words": args.top_words,
              "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                          "load_average_before": load_before, "load_average_after": load_after},
              "samplers": rows, "loose_cg": loose}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "word_step.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# Eta-step with word covariates: blocked Gibbs vs CG ({args.project} bug reports)",
             "", f"D = {corpus.n_docs}, {n_words} word covariates (`n_words=\"auto\"`, log counts),"
             f" K = {args.topics}, L = {result['corpus']['n_classes']}; {args.iters} iterations "
             f"per chain, ESS over the last {result['kept']}; chains interleaved in rounds of "
             f"{args.round_iters}; {args.threads} threads; load average {load_before[0]:.1f} "
             f"before, {load_after[0]:.1f} after (2 cores, shared).", "",
             "| eta_sampler | s / iteration | ESS top words | ESS class levels | ESS DO loglik "
             "| ESS/s top words | ESS/s class levels | ESS/s DO loglik |",
             "|---|---|---|---|---|---|---|---|"]
    for s, r in rows.items():
        lines.append(f"| {s} | {r['median_seconds_per_iter']:.3f} | "
                     f"{r['ess_top_words_median']:.1f} | {r['ess_class_levels_median']:.1f} | "
                     f"{r['ess_loglik_do']:.1f} | {r['ess_per_s_top_words']:.2f} | "
                     f"{r['ess_per_s_class_levels']:.2f} | {r['ess_per_s_loglik_do']:.2f} |")
    if loose is not None:
        lines += ["", f"Looser CG (candidate, dropped): at the CG chain's last state, tolerance "
                  f"{loose['tol']:g} instead of {loose['exact_tol']:g} from the previous eta: "
                  f"median CG iterations {loose['cg_iterations_loose_median']:.0f} vs "
                  f"{loose['cg_iterations_exact_median']:.0f} ({loose['seconds_loose']:.2f} s vs "
                  f"{loose['seconds_exact']:.2f} s), error up to "
                  f"{loose['error_in_sd_max']:.3g} posterior sd (median "
                  f"{loose['error_in_sd_median']:.2g})."]
    lines += ["", "Top words: per class the {0} words of largest |posterior mean| (chains "
              "pooled); class level: intercept + mean topic coefficient.".format(args.top_words),
              "", f"Reproduce: `python benchmarks/bench_word_step.py --project {args.project} "
              f"--topics {args.topics} --iters {args.iters} --round-iters {args.round_iters} "
              f"--threads {args.threads} --seed {args.seed}`"]
    (args.out / "word_step.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
