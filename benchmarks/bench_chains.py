"""What several chains and the NMF topic start cost at the defaults (issue 32).

Fits ``DOLDA(n_topics=20, n_chains=C, n_iter=N, **parameters)`` -- the defaults otherwise
(word covariates, the slab, 2 threads) -- on a corpus's training split and times ``fit`` (wall clock, the
whole call: vocabulary, design, chains, pooling, calibration map, verdict).  The
configurations are interleaved over rounds, each round fitting every one once with the
round's seed, so that they share the machine's load alike.  The figure is each
configuration's time over the defaults' (one chain of 500 iterations) in the same round,
the median over rounds; the accuracy on the test split is recorded beside it.  The chains
run one after the other on all threads (:func:`dolda.models.dolda.chain.run_chains`).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_chains.py [--corpus jira_storm ...]
        [--configs 1x500 1x500:topic_init=nmf 2x250 ...] [--rounds 2] [--threads 2]
        [--name chains_cost]

Writes ``benchmarks/results/<name>.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _config(text):
    """``"CxN"`` or ``"CxN:key=value[,key=value]"`` -> (C, N, {key: value}, label)."""
    head, _, extra = text.partition(":")
    chains, iters = head.lower().split("x")
    params = dict(kv.split("=", 1) for kv in extra.split(",") if kv)
    return int(chains), int(iters), params, text


def main(argv=None):
    import sys

    sys.path.insert(0, str(ROOT))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--corpus", nargs="+",
                        default=["jira_storm", "newsgroups5", "jira_activemq"])
    parser.add_argument("--configs", nargs="+",
                        default=["1x500", "1x500:topic_init=nmf", "2x250",
                                 "2x250:topic_init=nmf", "4x250"],
                        help="CHAINSxITERATIONS[:KEY=VALUE,...] (DOLDA parameters); the "
                             "first is the reference")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default="chains_cost")
    args = parser.parse_args(argv)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, "1")

    from dolda import DOLDA
    from experiments.interpret import load_stability_corpus

    configs = [_config(c) for c in args.configs]
    rows = []
    load = [os.getloadavg()[0]]
    for corpus in args.corpus:
        tr, y, te, yte = load_stability_corpus(corpus, args.data)
        for r in range(args.rounds):
            for chains, iters, params, label in configs:
                model = DOLDA(n_topics=20, n_chains=chains, n_iter=iters, random_state=r,
                              n_jobs=args.threads, progress=False, **params)
                t0 = time.perf_counter()
                model.fit(tr, y)
                seconds = time.perf_counter() - t0
                acc = float(np.mean(model.predict(te) == yte))
                row = {"corpus": corpus, "round": r, "config": label, "chains": chains,
                       "iterations": iters,
                       "seconds": round(seconds, 2), "accuracy": round(acc, 4),
                       "converged": bool(model.convergence_["converged"])}
                rows.append(row)
                print(json.dumps(row), flush=True)
    load.append(os.getloadavg()[0])

    ref = configs[0]
    lines = [f"# {__doc__.splitlines()[0]}", "",
             f"K = 20, {args.threads} threads, {args.rounds} rounds (seed = round), load "
             f"average {load[0]:.2f} before, {load[1]:.2f} after; time / the `{ref[3]}` "
             "fit of the same round, median over rounds.", "",
             "| corpus | chains x iterations[:parameters] | fit seconds (median) | "
             "time / defaults | accuracy (rounds) |", "|---|---|---|---|---|"]
    summary = []
    for corpus in args.corpus:
        base = {r["round"]: r["seconds"] for r in rows
                if r["corpus"] == corpus and r["config"] == ref[3]}
        for chains, iters, params, label in configs:
            mine = [r for r in rows if r["corpus"] == corpus and r["config"] == label]
            ratio = float(np.median([r["seconds"] / base[r["round"]] for r in mine]))
            secs = float(np.median([r["seconds"] for r in mine]))
            accs = ", ".join(f"{r['accuracy']:.3f}" for r in mine)
            summary.append({"corpus": corpus, "config": label, "seconds_median": secs,
                            "ratio_to_defaults": ratio})
            lines.append(f"| {corpus} | {label} | {secs:.1f} | {ratio:.2f}x | {accs} |")
    out = ROOT / "benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.name}.json").write_text(json.dumps(
        {"rows": rows, "summary": summary, "load": load, "threads": args.threads}, indent=1)
        + "\n")
    (out / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
