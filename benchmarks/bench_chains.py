"""What several chains and the NMF topic start cost at the defaults (issue 32).

Fits ``DOLDA(n_topics=20, n_chains=C, n_iter=N, **parameters)`` -- the defaults otherwise
(word covariates, the slab, 2 threads) -- on a corpus's training split and times ``fit`` (wall clock, the
whole call: vocabulary, design, chains, pooling, calibration map, verdict).  The
configurations are interleaved over rounds, each round fitting every one once with the
round's seed, so that they share the machine's load alike.  The figure is each
configuration's time over the defaults' (one chain of 500 iterations) in the same round,
the median over rounds; the accuracy on the test split is recorded beside it.  The chains
run one after the other on all threads (:func:`dolda.models.dolda.chain_stage.run_chains`).

Usage::

    python -m benchmarks.bench_chains [--corpus jira_storm ...]
        [--configs 1x500 1x500:topic_init=nmf 2x250 ...] [--rounds 2] [--threads 2]
    python -m benchmarks.bench_chains --quick     # a simulated corpus, K = 4, short chains

Writes ``benchmarks/results/chains_cost.json`` and ``.md``.
"""

from __future__ import annotations

import json
import time

import numpy as np

from benchmarks import harness


def _config(text):
    """``"CxN"`` or ``"CxN:key=value[,key=value]"`` -> (C, N, {key: value}, label)."""
    head, _, extra = text.partition(":")
    chains, iters = head.lower().split("x")
    params = dict(kv.split("=", 1) for kv in extra.split(",") if kv)
    return int(chains), int(iters), params, text


def quick_corpus():
    texts, y, _ = harness.tiny_corpus(n_docs=160, n_topics=4, vocab_size=300)
    return texts[:120], y[:120], texts[120:], y[120:]


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--corpus", nargs="+",
                        default=["jira_storm", "newsgroups5", "jira_activemq"])
    parser.add_argument("--configs", nargs="+", default=None,
                        help="CHAINSxITERATIONS[:KEY=VALUE,...] (DOLDA parameters); the "
                             "first is the reference (default 1x500 1x500:topic_init=nmf "
                             "2x250 2x250:topic_init=nmf 4x250)")
    args = parser.parse_args(argv)
    run = harness.start("chains_cost", args, argv)
    n_rounds = harness.rounds(args, full=2, quick=1)
    from dolda import DOLDA

    default_configs = (["1x40", "2x20"] if args.quick else
                       ["1x500", "1x500:topic_init=nmf", "2x250", "2x250:topic_init=nmf",
                        "4x250"])
    configs = [_config(c) for c in args.configs or default_configs]
    corpora = ["simulated"] if args.quick else args.corpus
    n_topics = 4 if args.quick else 20
    rows = []
    for corpus in corpora:
        if args.quick:
            tr, y, te, yte = quick_corpus()
        else:
            from experiments.interpret import load_stability_corpus

            tr, y, te, yte = load_stability_corpus(corpus, args.data)
        for r in range(n_rounds):
            for chains, iters, params, label in configs:
                model = DOLDA(n_topics=n_topics, n_chains=chains, n_iter=iters,
                              random_state=r, n_jobs=args.threads, progress=False)
                model.set_params(**params)
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
    ref = configs[0]
    lines = [f"K = {n_topics}, {args.threads} threads, {n_rounds} rounds (seed = round); time "
             f"/ the `{ref[3]}` fit of the same round, median over rounds.", "",
             "| corpus | chains x iterations[:parameters] | fit seconds (median) | "
             "time / defaults | accuracy (rounds) |", "|---|---|---|---|---|"]
    summary = []
    for corpus in corpora:
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
    run.finish({"rows": rows, "summary": summary, "threads": args.threads,
                "n_topics": n_topics}, lines, __doc__.splitlines()[0])
    return summary


if __name__ == "__main__":
    main()
