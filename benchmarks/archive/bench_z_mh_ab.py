"""Interleaved A/B of two dolda trees on the MH z-sweep (20 Newsgroups train, 2 threads).

``kernel`` mode: a chain built as ``bench_dolda.py`` builds it (``z_sampler="mh"``, the
exact Phi, or ``--phi polya`` for the Pólya-urn Phi and the doubly sparse kernel) runs
``--warm`` iterations in a *capture* process of the old tree; its state (z, n_dk, Phi, the
word-bucket tables, eta's topic block, the residual base) is saved once
(``--cache`` directory) so that both trees sweep from exactly the same state.  Two
persistent worker processes, one per tree (``PYTHONPATH`` = ``--old`` / ``--new``), load
it, compile, and take turns: in every round one worker times ``--sweeps`` single sweeps
(each from a fresh copy of the captured z and n_dk, iterations ``1000 + j``), then the
other (the order alternates from round to round), so a change in the machine's load falls
on both.  Recorded per sweep: seconds, the share of tokens whose topic changed (the
move rate: the same target and proposal give the same rate, up to noise), and a hash of z
(whether old and new drew the same chain).

``iteration`` mode: the same two-worker scheme on whole DOLDA iterations
(``DOLDAContestant.run(1)``, after ``--warm`` untimed ones), with the z-sweep timed by
wrapping ``shard._sweep_supervised_mh`` / ``_sweep_supervised_mh_sparse``.

Usage::

    python benchmarks/archive/bench_z_mh_ab.py kernel --old /tmp/mh-old/src --new src --topics 100 1000
    python benchmarks/archive/bench_z_mh_ab.py kernel --phi polya --topics 1000
    python benchmarks/archive/bench_z_mh_ab.py iteration --topics 100 1000 --rounds 4

Each mode updates its part of ``benchmarks/results/z_mh.json`` and rewrites
``benchmarks/results/z_mh.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "benchmarks" / "results"


def _load():
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# ------------------------------------------------------------------ capture (old tree)
def capture(args):
    sys.path.insert(0, str(Path(__file__).parents[1]))  # bench_dolda.py
    from bench_dolda import DOLDAContestant, load_corpus

    from dolda.sampler import chain as dolda_chain

    train, _, corpus = load_corpus(args.data)
    K = args.topics[0]
    c = DOLDAContestant(corpus, train.label.to_numpy(), K, args.threads, z_sampler="mh",
                        phi_sampler=args.phi)
    c.run(args.warm)
    st, data, cfg = c.chain.state, c.chain.data, c.chain.config
    n_x = data.X.shape[1]
    eta = st.probit.eta
    glob = dolda_chain.topic_globals(eta, st.phi, n_x, "mh", c.chain._table_rows,
                                     phi_sparse=st.phi_sparse if args.phi == "polya" else None,
                                     alpha=cfg.alpha)
    t = glob.tables
    out = dict(tokens=data.tokens, doc_ptr=data.doc_ptr, z=st.z, ndk=st.ndk, phi_wk=glob.phi_wk,
               eta_topics=np.ascontiguousarray(eta[:, n_x:]),
               base=np.ascontiguousarray(st.probit.a - data.X @ eta[:, :n_x].T),
               alpha=np.full(K, float(cfg.alpha)), prob=t.prob, alias=t.alias, mass=t.mass)
    if args.phi == "polya":
        out.update(ptr=t.ptr, topics=t.topics)
    else:
        out.update(row=t.row)
    np.savez(args.state, **out)


# ------------------------------------------------------------------ workers
def kernel_worker(args):
    from dolda.sampler import supervised
    from dolda.sampler.threads import using_threads

    s = dict(np.load(args.state))

    if args.phi == "polya":
        def sweep(z, ndk, it):
            supervised._sweep_supervised_mh_sparse(
                s["tokens"], s["doc_ptr"], z, ndk, s["phi_wk"], s["ptr"], s["topics"],
                s["prob"], s["alias"], s["mass"], s["alpha"], s["eta_topics"], s["base"], 1, it)
    else:
        def sweep(z, ndk, it):
            supervised._sweep_supervised_mh(
                s["tokens"], s["doc_ptr"], z, ndk, s["phi_wk"], s["prob"], s["alias"],
                s["mass"], s["row"], s["alpha"], s["eta_topics"], s["base"], 1, it)

    with using_threads(args.threads):
        sweep(s["z"].copy(), s["ndk"].copy(), 999)  # compile (or load the cache)
        print(json.dumps({"ready": supervised.__file__}), flush=True)
        for line in sys.stdin:
            if line.strip() != "go":
                break
            rec = {"seconds": [], "moved": [], "z_hash": []}
            for j in range(args.sweeps):
                z, ndk = s["z"].copy(), s["ndk"].copy()
                tic = time.perf_counter()
                sweep(z, ndk, 1000 + j)
                rec["seconds"].append(time.perf_counter() - tic)
                rec["moved"].append(float(np.mean(z != s["z"])))
                rec["z_hash"].append(hashlib.sha1(z.tobytes()).hexdigest())
            print(json.dumps(rec), flush=True)


def iteration_worker(args):
    sys.path.insert(0, str(Path(__file__).parents[1]))  # bench_dolda.py
    from bench_dolda import DOLDAContestant, load_corpus

    from dolda.sampler import shard, supervised

    train, _, corpus = load_corpus(args.data)
    c = DOLDAContestant(corpus, train.label.to_numpy(), args.topics[0], args.threads,
                        z_sampler="mh", phi_sampler=args.phi)
    table = {"z": 0.0}
    for name in ("_sweep_supervised_mh", "_sweep_supervised_mh_sparse"):
        fn = getattr(shard, name)

        def run(*a, _fn=fn, **k):
            tic = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                table["z"] += time.perf_counter() - tic

        setattr(shard, name, run)
    c.run(args.warm)
    print(json.dumps({"ready": supervised.__file__}), flush=True)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        rec = {"seconds": [], "z_seconds": [], "moved": [], "z_hash": []}
        for _ in range(args.sweeps):
            before = c.chain.state.z.copy()
            table["z"] = 0.0
            rec["seconds"].append(c.run(1))
            rec["z_seconds"].append(table["z"])
            rec["moved"].append(float(np.mean(c.chain.state.z != before)))
            rec["z_hash"].append(hashlib.sha1(c.chain.state.z.tobytes()).hexdigest())
        print(json.dumps(rec), flush=True)


# ------------------------------------------------------------------ driver
def _env(src):
    return dict(os.environ, PYTHONPATH=str(Path(src).resolve()), OMP_NUM_THREADS="1",
                OPENBLAS_NUM_THREADS="1")


def _common(K, args):
    return ["--topics", str(K), "--threads", str(args.threads), "--warm", str(args.warm),
            "--sweeps", str(args.sweeps), "--phi", args.phi, "--data", str(args.data)]


def _state_path(K, args):
    args.cache.mkdir(parents=True, exist_ok=True)
    return args.cache / f"state_{args.phi}_K{K}_warm{args.warm}.npz"


def start(src, mode, K, args, state):
    cmd = [sys.executable, __file__, mode, "--worker", "--state", str(state)] + _common(K, args)
    proc = subprocess.Popen(cmd, env=_env(src), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    return proc, json.loads(proc.stdout.readline())["ready"]


def one_round(proc):
    proc.stdin.write("go\n")
    proc.stdin.flush()
    return json.loads(proc.stdout.readline())


def compare(mode, K, args):
    state = _state_path(K, args)
    if mode == "kernel" and not state.exists():
        print(f"capturing the state at K={K} ({args.warm} iterations, old tree)", flush=True)
        subprocess.run([sys.executable, __file__, "kernel", "--capture", "--state", str(state)]
                       + _common(K, args), env=_env(args.old), check=True)
    old, old_file = start(args.old, mode, K, args, state)
    new, new_file = start(args.new, mode, K, args, state)
    keys = ("seconds", "z_seconds", "moved", "z_hash")
    runs = {n: {k: [] for k in keys} for n in ("old", "new")}
    load_before = _load()
    for r in range(args.rounds):
        order = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
        for name, proc in order:
            rec = one_round(proc)
            for k in keys:
                runs[name][k].extend(rec.get(k, []))
        print(f"K={K} {mode} round {r + 1}/{args.rounds}: " + ", ".join(
            f"{n} {np.median(runs[n]['seconds']):.4f} s" for n in ("old", "new"))
            + f" (load {_load()})", flush=True)
    for proc in (old, new):
        proc.stdin.write("stop\n")
        proc.stdin.close()
        proc.wait()
    summary = {}
    for k in ("seconds", "z_seconds"):
        if runs["old"][k]:
            o, n = np.median(runs["old"][k]), np.median(runs["new"][k])
            summary[k] = {"old_median_s": float(o), "new_median_s": float(n),
                          "old_min_s": float(np.min(runs["old"][k])),
                          "new_min_s": float(np.min(runs["new"][k])),
                          "old_over_new": float(o / n), "n": len(runs["old"][k])}
    moved = {n: float(np.mean(runs[n]["moved"])) for n in ("old", "new")}
    return {"K": K, "phi": args.phi, "files": {"old": old_file, "new": new_file},
            "load_before": load_before, "load_after": _load(), "summary": summary,
            "moved": moved, "same_chain": runs["old"]["z_hash"] == runs["new"]["z_hash"],
            "raw": {n: {k: runs[n][k] for k in ("seconds", "z_seconds", "moved")}
                    for n in runs}}


def write_markdown(results):
    lines = ["# MH z-sweep, old vs new tree (20 Newsgroups train, alpha 0.1, beta 0.01)", "",
             "Written by `benchmarks/archive/bench_z_mh_ab.py` (see its docstring for the method): two "
             "worker processes, one per tree, in alternating rounds; medians over all timed "
             "sweeps (iterations).  `moved`: mean share of tokens whose topic changed in a "
             "sweep.  2 cores shared with other jobs: the load average is given.", ""]
    for mode, title in (("kernel", "One z-sweep from the same captured state"),
                        ("iteration", "Whole DOLDA iterations (z-sweep timed inside)")):
        part = results.get(mode)
        if not part:
            continue
        lines += [f"## {title}", "", "Commands: " + ", ".join(
                      f"`{c}`" for c in dict.fromkeys(r["command"] for r in part["rows"])), "",
                  "| Phi | K | block | old median s | new median s | old min s | new min s | "
                  "old / new | moved old | moved new | same chain | load before / after |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in part["rows"]:
            for k, label in (("seconds", "sweep" if mode == "kernel" else "iteration"),
                             ("z_seconds", "z-sweep")):
                s = r["summary"].get(k)
                if s is None:
                    continue
                lines.append(
                    f"| {r['phi']} | {r['K']} | {label} | {s['old_median_s']:.4f} | "
                    f"{s['new_median_s']:.4f} | {s['old_min_s']:.4f} | {s['new_min_s']:.4f} | "
                    f"{s['old_over_new']:.3f} | {r['moved']['old']:.4f} | "
                    f"{r['moved']['new']:.4f} | {r['same_chain']} | {r['load_before']} / "
                    f"{r['load_after']} |")
        lines.append("")
    if results.get("notes"):
        lines += ["## Reading", "", results["notes"], ""]
    (OUT / "z_mh.md").write_text("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["kernel", "iteration", "notes"])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--capture", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--state", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--text", default="", help="notes mode: the reading paragraph")
    parser.add_argument("--old", default="/tmp/mh-old/src")
    parser.add_argument("--new", default=str(ROOT / "src"))
    parser.add_argument("--topics", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--phi", choices=["exact", "polya"], default="exact")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warm", type=int, default=20,
                        help="kernel: iterations before the capture; iteration: untimed ones")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--sweeps", type=int, default=3, help="sweeps (iterations) per round")
    parser.add_argument("--cache", type=Path, default=Path("/tmp/bench_z_mh_ab"))
    parser.add_argument("--data", type=Path, default=Path(os.environ.get(
        "DOLDA_DATA", ROOT.parent / "shared" / "data")))
    args = parser.parse_args(argv)
    if args.capture:
        return capture(args)
    if args.worker:
        return (kernel_worker if args.mode == "kernel" else iteration_worker)(args)
    path = OUT / "z_mh.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    if args.mode == "notes":
        results["notes"] = args.text
    else:
        part = results.setdefault(args.mode, {"rows": []})
        part["command"] = "python " + " ".join(
            [Path(sys.argv[0]).as_posix()] + sys.argv[1:])
        for K in args.topics:
            res = compare(args.mode, K, args)
            res["command"] = part["command"]
            part["rows"] = [r for r in part["rows"] if (r["K"], r["phi"]) != (K, args.phi)]
            part["rows"].append(res)
            s = res["summary"]["seconds"]
            print(f"K={K} {args.mode}: old {s['old_median_s']:.4f} s, new "
                  f"{s['new_median_s']:.4f} s, old/new {s['old_over_new']:.3f}, moved "
                  f"{res['moved']}, same chain {res['same_chain']}", flush=True)
        part["rows"].sort(key=lambda r: (r["phi"], r["K"]))
        part["uptime_at_end"] = subprocess.run(["uptime"], capture_output=True,
                                               text=True).stdout.strip()
    path.write_text(json.dumps(results, indent=1) + "\n")
    write_markdown(results)


if __name__ == "__main__":
    main()
