"""Write the tables of measured figures into the pages, from the result files.

The accuracy and throughput tables in ``README.md`` and ``docs/results.md`` are not typed
by hand: each sits between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` and
is rebuilt here from the JSON files under ``benchmarks/results`` and ``experiments/results``,
so a page cannot drift from the file it cites.

    python docs/gen_tables.py           # rewrite the pages
    python docs/gen_tables.py --check   # exit 1, naming the page, if a page is stale

``tests/test_docs.py`` runs the check.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "docs/results.md")
EXPERIMENTS = "experiments/results"
BENCHMARKS = "benchmarks/results"

#: The latest runs of the defaults (word covariates "auto", the slab on words and covariates,
#: 500 iterations) and the TF-IDF + LinearSVC baseline on the same split.
#: (label, DOLDA result files, one per seed, SVM result file)
ACCURACY_ROWS = (
    ("20 Newsgroups, headers stripped",
     ["accuracy_newsgroups_stripped_dolda_words_K50_500it_s17_defaults_auto_s1.json"],
     "accuracy_newsgroups_stripped_svm.json"),
    ("20 Newsgroups, raw",
     ["accuracy_newsgroups_raw_dolda_words_K50_500it_s17_defaults_auto_s1.json"],
     "accuracy_newsgroups_raw_svm.json"),
) + tuple(
    (f"{name} bug reports -> component",
     [f"accuracy_jira_{key}_dolda_words_K20_500it_slab2.5cw_s{s}.json" for s in (1, 2)],
     f"accuracy_jira_{key}_svm.json")
    for key, name in (("storm", "Storm"), ("hadoop", "Hadoop"), ("hdfs", "HDFS"),
                      ("mapreduce", "MapReduce"), ("yarn", "YARN"), ("activemq", "ActiveMQ"))
) + (
    ("Storm + reporter, priority, version",
     [f"accuracy_jira_storm_meta_dolda_words_K20_500it_slab2.5cw_s{s}.json" for s in (1, 2)],
     "accuracy_jira_storm_meta_svm.json"),
    ("MapReduce + reporter, priority, version",
     [f"accuracy_jira_mapreduce_meta_dolda_words_K20_500it_slab2.5cw_s{s}.json"
      for s in (1, 2, 3, 4)],
     "accuracy_jira_mapreduce_meta_svm.json"),
)


def _load(folder: str, name: str, root: Path) -> dict:
    path = root / folder / name
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SystemExit(f"gen_tables: result file {folder}/{name} is missing") from None


def _n(value: int) -> str:
    return f"{value:,}"


def accuracy_table(root: Path = ROOT) -> str:
    lines = ["| corpus | training docs | classes | K | DOLDA defaults: mean (seeds) "
             "| TF-IDF + LinearSVC |",
             "|---|---|---|---|---|---|"]
    iterations, words = set(), set()
    for label, dolda_files, svm_file in ACCURACY_ROWS:
        runs = [_load(EXPERIMENTS, f, root) for f in dolda_files]
        svm = _load(EXPERIMENTS, svm_file, root)
        accs = [r["test_accuracy"] for r in runs]
        iterations.update(r["iterations"] for r in runs)
        words.update(r["n_words"] for r in runs)
        seeds = ", ".join(f"{a:.3f}" for a in accs)
        cell = f"{statistics.mean(accs):.3f} ({seeds})" if len(accs) > 1 else f"{accs[0]:.3f}"
        lines.append(f"| {label} | {_n(runs[0]['n_train'])} | {runs[0]['n_classes']} "
                     f"| {runs[0]['topics']} | {cell} | {svm['test_accuracy']:.3f} |")
    its = "/".join(str(i) for i in sorted(iterations))
    wds = " or ".join(_n(w) for w in sorted(words))
    lines.append("")
    lines.append(f"Test accuracy on the held-out split (the bug reports split by date). "
                 f"DOLDA: `DOLDA(n_topics=K)` with every default ({its} iterations, "
                 f"{wds} word covariates); the SVM on TF-IDF of the whole vocabulary "
                 f"(+ the one-hot metadata). Source: `{EXPERIMENTS}/accuracy_*.json`.")
    return "\n".join(lines)


def _machine(meta: dict) -> str:
    cpus = meta.get("cpu_count", meta.get("cpus"))
    arch = "x86_64" if "x86_64" in meta.get("platform", "x86_64") else meta["platform"]
    return f"{cpus}-core {arch} Linux, Python {meta.get('python', '3.11')}"


def _contestants(data: dict, k: int) -> dict:
    for result in data["results"]:
        if result["K"] == k:
            return result["contestants"]
    raise SystemExit(f"gen_tables: no K = {k} in the throughput result")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def throughput_table(root: Path = ROOT) -> str:
    lines = ["| what | dolda | reference | ratio | result file |",
             "|---|---|---|---|---|"]
    machines = set()
    name = "dolda_throughput.json"  # benchmarks.bench_dolda: K = 100 and 1000 in one run
    data = _load(BENCHMARKS, name, root)
    machines.add(_machine(data["machine"]))
    for k in (100, 1000):
        contestants = _contestants(data["result"], k)
        tomo_s = contestants["tomotopy LDAModel"]["median_seconds"]
        for row in ("DOLDA defaults", "DOLDA topics only"):
            c = contestants[row]
            what = "defaults (words as covariates)" if row == "DOLDA defaults" else \
                "topics only (`Words(n=0)`)"
            lines.append(f"| one DOLDA Gibbs iteration on 20 Newsgroups, K = {k}, {what} "
                         f"| {_ms(c['median_seconds'])} "
                         f"| tomotopy LDAModel {_ms(tomo_s)} "
                         f"| {c['speed_ratio']:.2f}x | `{name[:-5]}` |")
    lda = _load(BENCHMARKS, "lda_throughput.json", root)
    latest = lda[sorted(k for k in lda if k.startswith("latest"))[-1]]
    machines.add(_machine(latest["machine"]))
    for r in latest["results"]:
        if r["threads"] == 2 and r["K"] == 1000:
            lines.append(f"| one `dolda.LDA` iteration (unsupervised), same corpus, K = 1000 "
                         f"| {_ms(r['dolda']['seconds_per_iter'])} "
                         f"| tomotopy LDAModel {_ms(r['tomotopy']['seconds_per_iter'])} "
                         f"| {r['ratio_dolda_over_tomotopy']:.2f}x | `lda_throughput` |")
    start = _load(BENCHMARKS, "startup.json", root)["summary"]
    lines.append(f"| `dolda demo` (simulated corpus), first run (kernels compiled) / afterwards "
                 f"| {start['demo cold']['wall_median']:.1f} s / "
                 f"{start['demo cached']['wall_median']:.1f} s "
                 f"| no compile-ahead helper: {start['demo cold, no helper']['wall_median']:.1f} s "
                 f"| | `startup` |")
    serve = _load(BENCHMARKS, "serve.json", root)
    lines.append(f"| `dolda serve`, {_n(serve['requests'])} `POST /predict` of one bug report "
                 f"each from {serve['clients']} clients, load {serve['load_average_1min']:.0f} | p50 {serve['latency_ms']['p50']:.0f} ms, "
                 f"p99 {serve['latency_ms']['p99']:.0f} ms | {serve['throughput_rps']:.0f} "
                 f"requests/s, {serve['errors']} errors | | `serve` |")
    lines.append("")
    lines.append(f"Machine: {' / '.join(sorted(machines))}, a virtual machine shared with "
                 f"other jobs (each file records its load), 2 threads; 20 Newsgroups train is "
                 f"11,314 documents, 1.84 M tokens. Each ratio was measured side by side in one "
                 f"run. Result files under `{BENCHMARKS}/`.")
    return "\n".join(lines)


def scaling_table(root: Path = ROOT) -> str:
    """Time per iteration, memory, model size and prediction throughput against D and K
    (``benchmarks/bench_scaling.py``; cells not run show the memory estimate)."""
    data = _load(BENCHMARKS, "scaling.json", root)
    lines = ["| documents | K | DOLDA s / iteration | tomotopy s / iteration | speed vs "
             "tomotopy | DOLDA peak memory | model file | predict_proba docs/s | vs tomotopy "
             "infer | result file |", "|---|---|---|---|---|---|---|---|---|---|"]
    for c in data["result"]["cells"]:
        if "iteration" not in c:
            lines.append(f"| {_n(c['D'])} | {c['K']} | not run | | "
                         f"| ~{c['estimate_bytes'] / 1e9:.0f} GB (estimate) | | | "
                         f"| `scaling` |")
            continue
        it, pr = c["iteration"], c["predict"]
        tomo, infer = it.get("tomotopy LDAModel"), pr.get("tomotopy infer")
        dolda, pred = it["DOLDA defaults"], pr["DOLDA predict_proba"]
        tomo_s = f"{tomo['median_seconds']:.3g}" if tomo else ""
        speed = f"{1 / dolda['median_ratio']:.2f}x" if tomo else ""
        pspeed = f"{pred['speed_ratio']:.1f}x" if infer else ""
        lines.append(f"| {_n(c['D'])} | {c['K']} | {dolda['median_seconds']:.3g} | {tomo_s} "
                     f"| {speed} | {c['fit']['peak_bytes'] / 1e9:.2f} GB "
                     f"| {c['fit']['model_bytes'] / 1e6:.1f} MB | {pred['docs_per_s']:,.0f} "
                     f"| {pspeed} | `scaling` |")
    s = data["result"]["settings"]
    lines.append("")
    lines.append(f"Simulated corpora (`dolda.datasets.simulate`, ~{s['doc_length']} tokens per "
                 f"document, V = {_n(s['vocab'])}), {s['threads']} threads, "
                 f"{_machine(data['machine'])}, load average "
                 f"{data['machine']['load_average'][0]:.1f} at the start; per cell a fresh "
                 f"process, DOLDA and tomotopy interleaved in it. Source: "
                 f"`{BENCHMARKS}/scaling.json`.")
    return "\n".join(lines)


def _brief(table):
    """A table for README: no result-file column and no source line (README links the
    results page once; the page names every file)."""
    def make(root: Path = ROOT) -> str:
        out = []
        drop = None
        for line in table(root).splitlines():
            if line.startswith("|"):
                cells = line.strip("|").split("|")
                if drop is None and "result file" in [c.strip() for c in cells]:
                    drop = [c.strip() for c in cells].index("result file")
                if drop is not None and len(cells) > drop:
                    cells = cells[:drop] + cells[drop + 1:]
                line = "|" + "|".join(cells) + "|"
            else:
                line = re.sub(r"\s*(Source: .*|Result files under .*)$", "", line)
            out.append(line)
        return "\n".join(out)
    return make


TABLES = {"accuracy": accuracy_table, "throughput": throughput_table,
          "scaling": scaling_table, "accuracy_brief": _brief(accuracy_table),
          "throughput_brief": _brief(throughput_table), "scaling_brief": _brief(scaling_table)}
_BLOCK = re.compile(r"(<!-- generated:(\w+) -->\n)(?:.*?\n)?(<!-- /generated:\2 -->)", re.S)


def render(text: str, root: Path = ROOT) -> str:
    """``text`` with every generated block rebuilt from the result files under ``root``."""
    def fill(match: re.Match) -> str:
        name = match.group(2)
        if name not in TABLES:
            raise SystemExit(f"gen_tables: unknown table {name!r} (known: {sorted(TABLES)})")
        return match.group(1) + TABLES[name](root) + "\n" + match.group(3)
    return _BLOCK.sub(fill, text)


def stale_pages(root: Path = ROOT) -> list[str]:
    """The pages whose generated blocks differ from what the result files give."""
    return [p for p in PAGES
            if render((root / p).read_text(encoding="utf-8"), root)
            != (root / p).read_text(encoding="utf-8")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="report stale pages instead of rewriting them")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_pages()
        for page in stale:
            print(f"{page}: a generated table is stale; run python docs/gen_tables.py")
        return 1 if stale else 0
    for page in PAGES:
        path = ROOT / page
        path.write_text(render(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
