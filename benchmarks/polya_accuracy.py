"""Exact Dirichlet against Pólya-urn Phi: test accuracy and held-out likelihood on 20 Newsgroups.

For every seed, DOLDA is fitted on the "bydate" training split twice -- with
``phi_sampler="exact"`` and ``"polya"``, everything else equal (the default
z-sampler) -- one after the other, and evaluated on the test split:

* accuracy of :meth:`dolda.DOLDA.predict`;
* held-out log-likelihood per token by document completion: theta of every
  test document is estimated from its even-position tokens with Phi fixed at
  ``phi_`` (:func:`dolda.sampler.lda.predict_topic_proportions`), and the
  odd-position tokens are scored, ``log sum_k theta_dk phi_{k,w}``;
* wall time per iteration (the estimator's own clock).

The chains are short (``--iters``, default 60); the comparison is between the
two samplers at equal iterations, not a converged result.

Usage::

    python benchmarks/polya_accuracy.py [--topics 100] [--iters 60] [--seeds 1 2 3]

Writes ``benchmarks/results/polya_accuracy.json`` and ``.md``.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def completion_loglik(model, texts, seed=0):
    """Mean held-out log-likelihood per token, theta from even tokens, scored on odd ones."""
    from dolda.sampler.lda import predict_topic_proportions

    corpus = model._make_corpus(texts, fit=False)
    tok, ptr = corpus.tokens, corpus.doc_ptr
    pos = np.arange(len(tok)) - np.repeat(ptr[:-1], np.diff(ptr))
    even = pos % 2 == 0
    doc = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
    even_ptr = np.concatenate([[0], np.cumsum(np.bincount(doc[even], minlength=len(ptr) - 1))])
    theta = predict_topic_proportions(tok[even], even_ptr.astype(np.int64), model.phi_,
                                      model.alpha, 20, 10, seed)
    odd = ~even
    p = np.einsum("nk,kn->n", theta[doc[odd]], model.phi_[:, tok[odd]])
    return float(np.mean(np.log(p))), int(odd.sum())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--topics", type=int, default=100)
    parser.add_argument("--iters", type=int, default=60)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)

    from dolda import DOLDA
    from dolda.datasets import load_20newsgroups

    train = load_20newsgroups(args.data, "train")
    test = load_20newsgroups(args.data, "test")
    rows = []
    load_before = os.getloadavg()
    for seed in args.seeds:
        for phi_sampler in ("exact", "polya"):
            model = DOLDA(n_topics=args.topics, alpha=0.1, beta=0.01, n_iter=args.iters,
                          phi_draws=10, random_state=seed, n_jobs=args.threads,
                          progress=False, phi_sampler=phi_sampler, predict_sweeps=20,
                          n_words=0)
            model.fit(train.text.tolist(), train.label)
            acc = model.score(test.text.tolist(), test.label.to_numpy())
            ll, n_scored = completion_loglik(model, test.text.tolist(), seed)
            secs = model.timings_["iteration_seconds"][0]
            row = {"seed": seed, "phi_sampler": phi_sampler,
                   "z_sampler": model._resolved_z_sampler(args.topics), "test_accuracy": acc,
                   "heldout_loglik_per_token": ll, "heldout_tokens": n_scored,
                   "final_loglik_lda": float(model.loglik_["lda"].dropna().iloc[-1]),
                   "final_loglik_do": float(model.loglik_["do"].dropna().iloc[-1]),
                   "median_seconds_per_iter": float(np.nanmedian(secs))}
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {"topics": args.topics, "iterations": args.iters, "alpha": 0.1, "beta": 0.01,
              "threads": args.threads, "load_average_before": load_before,
              "load_average_after": os.getloadavg(), "runs": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "polya_accuracy.json").write_text(json.dumps(result, indent=2) + "\n")
    lines = [f"# Exact Dirichlet vs Pólya-urn Phi, 20 Newsgroups, K = {args.topics}", "",
             f"{args.iters} iterations per chain (short: a comparison at equal iterations, not "
             "converged), alpha = 0.1, beta = 0.01, Phi for prediction the mean of the last 10 "
             f"draws, {args.threads} threads; load average {load_before[0]:.1f} before, "
             f"{result['load_average_after'][0]:.1f} after.", "",
             "| seed | Phi | z | test accuracy | held-out log-lik / token | final LDA log-lik "
             "| s / iteration |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['seed']} | {r['phi_sampler']} | {r['z_sampler']} | "
                     f"{r['test_accuracy']:.4f} | {r['heldout_loglik_per_token']:.4f} | "
                     f"{r['final_loglik_lda']:.4g} | {r['median_seconds_per_iter']:.2f} |")
    for name in ("exact", "polya"):
        sel = [r for r in rows if r["phi_sampler"] == name]
        acc = np.array([r["test_accuracy"] for r in sel])
        ll = np.array([r["heldout_loglik_per_token"] for r in sel])
        sd_acc = acc.std(ddof=1) if len(acc) > 1 else 0.0
        sd_ll = ll.std(ddof=1) if len(ll) > 1 else 0.0
        lines.append(f"| mean | {name} | | {acc.mean():.4f} ± {sd_acc:.4f} | "
                     f"{ll.mean():.4f} ± {sd_ll:.4f} | | |")
    lines += ["", f"Reproduce: `python benchmarks/polya_accuracy.py --topics {args.topics} "
              f"--iters {args.iters} --seeds {' '.join(map(str, args.seeds))}`"]
    (args.out / "polya_accuracy.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
