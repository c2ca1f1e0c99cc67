"""Size and write time of the HTML report for a bug-triage-sized model.

The budget of issue 17: a model of about 6,000 documents, 52 classes and
K = 50 topics gives a report of at most 5 MB, written in at most 20 s.

Corpus (``--corpus jira``, the default when ``../shared/data`` is there): the
Hadoop Common and HDFS bug reports of ``apache_jira_bugs`` (train and test
splits, 6,537 reports, labels ``project/component``: 54 classes), fitted on the
training split.  ``--corpus sim``: 6,000 documents simulated from the DOLDA
generative model with 52 classes and K = 50.  The fitted model is cached in
``--model-dir`` (fitting is not what is measured).

What is timed: ``make_report(model, path, texts=all documents, y=labels)``
(the report of ``dolda report MODEL --data ALL --label ...``), three times,
after one warm-up run (numba compilation).  Also the older report (PNG
figures) when ``--compare-legacy`` names a git revision that has it.

Usage::

    python benchmarks/bench_report.py [--corpus jira|sim] [--model-dir /tmp/bench_report]
        [--iters 150] [--threads 2] [--repeat 3]

Writes ``benchmarks/results/report.json`` and ``report.md`` (``report_sim.*`` for ``--corpus sim``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "apache_jira_bugs"
BUDGET_MB, BUDGET_S = 5.0, 20.0


def load_jira(projects=("hadoop", "hdfs")):
    """Texts, labels and ids of the bug reports of ``projects`` (train, then test)."""
    out = {"train": ([], [], []), "test": ([], [], [])}
    for project in projects:
        for split in out:
            with gzip.open(DATA / project / f"{split}.jsonl.gz", "rt", encoding="utf-8") as fh:
                for line in fh:
                    row = json.loads(line)
                    out[split][0].append(row["text"])
                    out[split][1].append(f"{project}/{row['label']}")
                    out[split][2].append(row["id"])
    return out


def simulated(n_docs=6000, n_classes=52, n_topics=50, seed=0):
    from dolda.datasets import simulate

    sim = simulate(n_docs=n_docs, n_topics=n_topics, n_classes=n_classes, vocab_size=5000,
                   doc_length=120, n_signal=2, random_state=seed)
    texts, y = list(sim.texts), np.asarray(sim.y, dtype=object)
    n_train = int(0.8 * n_docs)
    ids = [f"SIM-{d}" for d in range(n_docs)]
    return {"train": (texts[:n_train], list(y[:n_train]), ids[:n_train]),
            "test": (texts[n_train:], list(y[n_train:]), ids[n_train:])}


def fitted_model(data, model_dir, n_topics, n_iter, threads):
    from dolda import DOLDA, load

    model_dir = Path(model_dir)
    if (model_dir / "model.json").exists():
        return load(model_dir), None
    texts, y, _ = data["train"]
    start = time.perf_counter()
    model = DOLDA(n_topics=n_topics, n_iter=n_iter, alpha=0.1, random_state=1, n_jobs=threads,
                  progress=False, n_words=0).fit(texts, y)
    seconds = time.perf_counter() - start
    model.save(model_dir, overwrite=True)
    return model, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", choices=["jira", "sim"],
                        default="jira" if DATA.exists() else "sim")
    parser.add_argument("--model-dir", default=None)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--iters", type=int, default=150)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    from dolda.interpret.report import make_report

    data = load_jira() if args.corpus == "jira" else simulated()
    model_dir = args.model_dir or f"/tmp/dolda_bench_report_{args.corpus}"
    out_name = "report" if args.corpus == "jira" else f"report_{args.corpus}"
    model, fit_seconds = fitted_model(data, model_dir, args.topics, args.iters, args.threads)
    model.n_jobs = args.threads
    texts = data["train"][0] + data["test"][0]
    y = data["train"][1] + data["test"][1]
    ids = data["train"][2] + data["test"][2]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = Path("/tmp") / f"dolda_bench_report_{args.corpus}.html"
    make_report(model, path, texts=texts[:300], y=y[:300], ids=ids[:300])  # warm-up
    model.predict_proba(texts[:300])
    seconds, peer, cpu = [], [], []
    load = [os.getloadavg()[0]]
    for _ in range(args.repeat):  # interleaved with the peer: predicting the same documents
        start = time.perf_counter()
        model.predict_proba(texts)
        peer.append(time.perf_counter() - start)
        start, start_cpu = time.perf_counter(), time.process_time()
        make_report(model, path, texts=texts, y=y, ids=ids)
        seconds.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
        load.append(os.getloadavg()[0])
    size_mb = path.stat().st_size / 1e6
    result = {
        "corpus": args.corpus, "documents": len(texts), "classes": len(model.classes_),
        "topics": int(model.phi_.shape[0]), "vocabulary": len(model.vocabulary_.words),
        "kept_draws": int(model.eta_draws_.shape[0]), "fit_seconds": fit_seconds,
        "threads": args.threads, "write_seconds": seconds,
        "median_write_seconds": float(np.median(seconds)), "size_mb": size_mb,
        "cpu_seconds": cpu, "predict_proba_seconds": peer, "ratio_to_predict_proba": float(np.median(seconds)
                                                                        / np.median(peer)),
        "load_average_1min": load,
        "budget": {"size_mb": BUDGET_MB, "write_seconds": BUDGET_S},
        "within_budget": {"size": bool(size_mb <= BUDGET_MB),
                          "wall_time": bool(np.median(seconds) <= BUDGET_S),
                          "cpu_time": bool(np.median(cpu) <= BUDGET_S)},
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
    }
    (out_dir / f"{out_name}.json").write_text(json.dumps(result, indent=1) + "\n")
    lines = [
        "# HTML report: size and write time (benchmarks/bench_report.py)", "",
        f"Corpus: {args.corpus} ({len(texts)} documents, {result['classes']} classes, "
        f"K = {result['topics']}, V = {result['vocabulary']}, "
        f"{result['kept_draws']} kept draws); {args.threads} threads.", "",
        "| | measured | budget |", "|---|---|---|",
        f"| size | {size_mb:.2f} MB | {BUDGET_MB:.0f} MB |",
        f"| write time (median of {len(seconds)}) | {np.median(seconds):.1f} s "
        f"(runs: {', '.join(f'{s:.1f}' for s in seconds)}) | {BUDGET_S:.0f} s |",
        f"| CPU time of the process (all threads; median) | {np.median(cpu):.1f} s | |",
        f"| peer: `predict_proba` of the same documents | {np.median(peer):.1f} s "
        f"(report / peer = {result['ratio_to_predict_proba']:.2f}) | |", "",
        f"1-minute load average during the runs: {', '.join(f'{x:.1f}' for x in load)} "
        f"on {os.cpu_count()} CPUs (the machine is shared: a wall time under a load above the "
        "number of CPUs overstates the idle figure; compare the ratio and the CPU time).", "",
        f"Within budget: size {'yes' if result['within_budget']['size'] else 'NO'}; wall time "
        f"{'yes' if result['within_budget']['wall_time'] else 'NO'}; CPU time "
        f"{'yes' if result['within_budget']['cpu_time'] else 'NO'} (the writing is CPU-bound: "
        "on an idle machine its wall time is at most about its CPU time).", "",
        "Reproduce: `python benchmarks/bench_report.py --corpus "
        f"{args.corpus} --threads {args.threads}`", ""]
    (out_dir / f"{out_name}.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
