"""Seconds per eta-draw of the DO probit: dense Cholesky vs BCM vs preconditioned CG.

What is timed: one eta-step for all ``L`` classes,
``dolda.sampler.probit.draw_eta(rng, method, U, gram, a, prec, start)``, i.e.
``eta_l ~ N(Q_l^{-1} U^T a_l, Q_l^{-1})`` with ``Q_l = U^T U + diag(prec_l)``.
``U^T U`` for the Cholesky path is computed once per fit in DOProbit and is
timed separately ("gram_seconds"), not per iteration.  For context the whole
Gibbs iteration with CG (a-step + eta + Horseshoe scales) is timed as well.

The states are realistic: a Horseshoe chain is first run ``--warmup``
iterations with the CG sampler (exact, and the fastest here); then at each of
``--repeats`` further iterations all samplers draw from the same conditional
(same utilities ``a``, prior precisions and warm start), and the chain moves on
with the CG draw.

Part A ("sparse", the issue's shape): films-like one-hot covariates.  D =
10,810 rows (the films of ``imdb_films/films.csv`` whose genre has >= 10
films), L = 20 classes, an intercept plus 5 categorical fields of P/5 levels
each (every level used at least once, the rest Zipf(1)-distributed, so most
levels are rare as for directors and producers): 6 non-zeros per row, P one-hot
columns for P in 1e2, 3e2, 6e2, 1e3, 3e3, 1e4, 2.5e4 (BCM only at 1e2, 1e3, 1e4,
2.5e4: with D = 10,810 its D x D factorisation dominates at every P).

Part B (checks the rules of ``choose_eta_sampler`` for other shapes): dense
Gaussian U with P = 5,000 columns and D = 1,000, 2,000 rows (the BCM rule),
dense Gaussian U with D = 10,810 and P = 3,000, 5,000 (dense U, many rows), sparse
one-hot U with P = 10,000 and D = 1,000, 2,000 (BCM on sparse U).  The chain
moves with an exact sampler that is fast for the shape (BCM, Cholesky or CG:
the "chain_sampler" field); ``--warmup-b`` iterations of warm-up.

Part C (CG and the prior): the films-like P = 25,000 design under the normal
prior N(0, c), c = 1, 10, 100 (intercept included), CG only; ``--warmup-b``
iterations of warm-up, ``--repeats-b`` timed draws.

Budget rules (2-core machine shared with other jobs): a sampler whose draw for
all L classes would exceed ``--budget`` seconds is timed on as many classes as
threads (2) and scaled by L / 2 (classes are independent and cost the same;
labelled "scaled"); the dense
Cholesky is not run when its matrices (U^T U plus one copy per thread) would
exceed ``--max-gb`` or when even 2 classes would exceed ``--budget``: its time
is then extrapolated as O(P^3) from the largest measured P (labelled
"extrapolated").

    nice -n 5 python benchmarks/bench_eta.py [--threads 2] [--part A B]

writes ``benchmarks/results/eta_scaling.json`` and ``eta_scaling.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from dolda.sampler import gaussian
from dolda.sampler import probit as gibbs
from dolda.sampler.rng import STEP_ETA, STEP_SHRINK, numpy_generator
from dolda.sampler.threads import using_threads
from dolda.sampler.truncnorm import draw_utilities

ROOT = Path(__file__).resolve().parents[1]
FILMS_ROWS = 10_810
N_CLASSES = 20
N_FIELDS = 5
#: Part B: (kind, D, P, sampler that moves the chain).
PART_B_CASES = [("dense", 1000, 5000, "bcm"), ("dense", 2000, 5000, "bcm"),
                ("dense", FILMS_ROWS, 3000, "cholesky"), ("dense", FILMS_ROWS, 5000, "cholesky"),
                ("one-hot", 1000, 10_000, "cg"), ("one-hot", 2000, 10_000, "cg")]


# ------------------------------------------------------------------ problems
def one_hot_design(n_rows, n_one_hot, rng, n_fields=N_FIELDS):
    """CSR ``[1, one-hot of n_fields fields]`` with n_one_hot // n_fields levels per field."""
    per = n_one_hot // n_fields
    weights = 1.0 / np.arange(1, per + 1)
    cols = []
    for f in range(n_fields):
        first = rng.permutation(per)[:min(per, n_rows)]  # every level at least once
        rest = rng.choice(per, n_rows - len(first), p=weights / weights.sum())
        levels = np.concatenate([first, rest])
        rng.shuffle(levels)
        cols.append(1 + f * per + levels)
    rows = np.repeat(np.arange(n_rows), n_fields + 1)
    cols = np.column_stack([np.zeros(n_rows, dtype=np.int64)] + cols).ravel()
    U = sp.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(n_rows, 1 + per * n_fields))
    U.sort_indices()
    return U


def dense_design(n_rows, n_cols, rng):
    return np.column_stack([np.ones(n_rows), rng.normal(size=(n_rows, n_cols))])


def labels(U, rng, share=0.02):
    """Classes from sparse true effects (share of non-zero coefficients per class)."""
    n_cols = U.shape[1]
    eta = np.zeros((N_CLASSES, n_cols))
    hit = rng.random((N_CLASSES, n_cols)) < share
    eta[hit] = rng.normal(0.0, 1.5, hit.sum())
    eta[:, 0] = -1.5
    score = np.asarray(U @ eta.T) + rng.normal(size=(U.shape[0], N_CLASSES))
    return np.argmax(score, axis=1)


# ------------------------------------------------------------------ timing
def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


class Timer:
    """Times one sampler on the shared states of a chain, within a time and memory budget."""

    def __init__(self, method, U, threads, budget, max_gb, design):
        self.method, self.U, self.threads = method, U, threads
        self.budget, self.max_gb = budget, max_gb
        self.design = design
        self.gram = None
        self.gram_seconds = None
        self.wall, self.cpu, self.cg_iterations = [], [], []
        self.classes_timed = None
        self.skipped = None

    def prepare(self, predicted_class_seconds=None):
        n_cols = self.U.shape[1]
        if self.method == "cholesky":
            gb = (1 + self.threads) * n_cols ** 2 * 8 / 1e9
            if gb > self.max_gb:
                self.skipped = f"U^T U plus {self.threads} working copies need {gb:.1f} GB"
                return
            if predicted_class_seconds is not None and 2 * predicted_class_seconds > self.budget:
                self.skipped = (f"2 classes predicted at {2 * predicted_class_seconds:.0f} s "
                                f"> budget {self.budget:.0f} s")
                return
            gram, wall, _ = timed(lambda: self.U.T @ self.U)
            self.gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
            self.gram_seconds = wall

    def _run(self, seed, a, prec, start, k):
        rng = np.random.default_rng(seed)
        (_, info), wall, cpu = timed(lambda: gibbs.draw_eta(
            rng, self.method, self.U, self.gram, a[:, :k], prec[:k], start=start[:k],
            design=self.design, n_jobs=self.threads))
        scale = prec.shape[0] / k
        self.wall.append(wall * scale)
        self.cpu.append(cpu * scale)
        if "cg_iterations" in info:
            self.cg_iterations.append(info["cg_iterations"].tolist())
        return wall

    def draw(self, seed, a, prec, start):
        """Time one eta-draw; the first call probes k classes and decides whether all fit."""
        if self.skipped:
            return
        n_classes = prec.shape[0]
        if self.classes_timed is None:
            k = min(self.threads, n_classes)  # as many classes as threads run at once
            wall = self._run(seed, a, prec, start, k)
            if wall * n_classes / k <= self.budget:
                self.wall.pop()
                self.cpu.pop()
                if self.cg_iterations:
                    self.cg_iterations.pop()
                self.classes_timed = n_classes
            else:
                self.classes_timed = k  # the probe is the (scaled) measurement; no repeats
                return
        if self.classes_timed == n_classes:
            self._run(seed, a, prec, start, n_classes)

    def summary(self):
        out = {"method": self.method}
        if self.skipped:
            out["skipped"] = self.skipped
            return out
        out.update({
            "seconds_per_eta_draw": float(np.median(self.wall)),
            "cpu_seconds_per_eta_draw": float(np.median(self.cpu)),
            "wall_seconds_all": [float(w) for w in self.wall],
            "classes_timed": int(self.classes_timed),
            "scaled": bool(self.classes_timed < N_CLASSES),
        })
        if self.gram_seconds is not None:
            out["gram_seconds_once_per_fit"] = float(self.gram_seconds)
        if self.cg_iterations:
            its = np.array([i for row in self.cg_iterations for i in row])
            out["cg_iterations_mean"] = float(its.mean())
            out["cg_iterations_max"] = int(its.max())
        return out


def run_case(name, U, y, methods, args, predicted=None, normal_variance=None):
    """Warm a Horseshoe chain up with CG, then time every method on the same states."""
    n_rows, n_cols = U.shape
    shrunk = np.ones(n_cols, dtype=bool)
    shrunk[0] = False
    if normal_variance is None:
        prior = gibbs.ProbitPrior(True, shrunk, 100.0)
    else:  # N(0, c) on every coefficient, intercept included
        prior = gibbs.ProbitPrior(False, shrunk, float(normal_variance))
    design = gaussian.sparse_design(U)
    chain_method = args.chain_method.get(name, "cg")
    chain_gram = None
    if chain_method == "cholesky":  # once per fit, as in DOProbit
        chain_gram = U.T @ U
        chain_gram = chain_gram.toarray() if sp.issparse(chain_gram) else chain_gram
    state = gibbs.initial_state(n_rows, N_CLASSES, n_cols)
    seed = 2024
    t0 = time.perf_counter()
    with using_threads(args.threads):
        for it in range(args.warmup):
            state = gibbs.gibbs_step(seed, it, state, U, chain_gram, y, prior, args.threads,
                                     eta_sampler=chain_method, design=design)
    warm_seconds = time.perf_counter() - t0
    loglik_warm = gibbs.do_log_likelihood(np.asarray(U @ state.eta.T), y)
    timers = {m: Timer(m, U, args.threads, args.budget, args.max_gb, design) for m in methods}
    for m, t in timers.items():
        t.prepare((predicted or {}).get(m))
    step_wall, step_cpu = [], []
    with using_threads(args.threads):
        for r in range(args.repeats):
            it = args.warmup + r
            mu = np.ascontiguousarray(U @ state.eta.T)
            a = draw_utilities(mu, y, seed, it, np.empty_like(mu))
            prec = gibbs.prior_precision(prior, state.lam2, state.tau2)
            for t in timers.values():
                t.draw(1000 + r, a, prec, state.eta)
            # the chain moves on (its whole iteration is timed for context)
            new_state, wall, cpu = timed(lambda: gibbs.gibbs_step(
                seed, it, state, U, chain_gram, y, prior, args.threads,
                eta_sampler=chain_method, design=design))
            step_wall.append(wall)
            step_cpu.append(cpu)
            state = new_state
    rows = [t.summary() for t in timers.values()]
    nnz = U.nnz if sp.issparse(U) else int(np.count_nonzero(U))
    return {
        "case": name, "rows": int(n_rows), "columns_with_intercept": int(n_cols),
        "sparse": bool(sp.issparse(U)), "nnz": int(nnz), "nnz_per_row": nnz / n_rows,
        "classes": N_CLASSES,
        "prior": "horseshoe" if normal_variance is None else f"normal({normal_variance:g})",
        "chain_sampler": chain_method, "warmup_iterations": args.warmup,
        "warmup_seconds": warm_seconds, "loglik_after_warmup": loglik_warm,
        "full_iteration_seconds": float(np.median(step_wall)),
        "full_iteration_cpu_seconds": float(np.median(step_cpu)),
        "auto_choice": gibbs.choose_eta_sampler(n_rows, n_cols, sp.issparse(U)),
        "samplers": rows,
    }


def extrapolate_cholesky(results):
    """Fill skipped Cholesky rows by O(P^3) from the largest measured P of the same part."""
    measured = [(r["columns_with_intercept"], s) for r in results for s in r["samplers"]
                if s["method"] == "cholesky" and "seconds_per_eta_draw" in s]
    if not measured:
        return
    p_ref, s_ref = max(measured, key=lambda x: x[0])
    for r in results:
        for s in r["samplers"]:
            if s["method"] == "cholesky" and "skipped" in s:
                factor = (r["columns_with_intercept"] / p_ref) ** 3
                s["extrapolated_seconds_per_eta_draw"] = s_ref["seconds_per_eta_draw"] * factor
                s["extrapolated_from_columns"] = int(p_ref)


def predicted_cholesky_class_seconds(results, n_cols):
    measured = [(r["columns_with_intercept"], s["seconds_per_eta_draw"] / N_CLASSES)
                for r in results for s in r["samplers"]
                if s["method"] == "cholesky" and "seconds_per_eta_draw" in s]
    if not measured:
        return None
    p_ref, t_ref = max(measured)
    return t_ref * (n_cols / p_ref) ** 3


# ------------------------------------------------------------------ report
def fmt(x):
    if x is None:
        return "-"
    return f"{x:.3g}"


def cell(s):
    if "seconds_per_eta_draw" in s:
        tag = " (scaled)" if s["scaled"] else ""
        return fmt(s["seconds_per_eta_draw"]) + tag
    if "extrapolated_seconds_per_eta_draw" in s:
        return f"~{fmt(s['extrapolated_seconds_per_eta_draw'])} (extrapolated)"
    return "not run"


def table(results, methods):
    head = ("| case | D | P (with intercept) | " + " | ".join(methods)
            + " | CG iterations mean/max | full iteration s (chain's sampler) | auto |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in results:
        by = {s["method"]: s for s in r["samplers"]}
        cg = by.get("cg", {})
        its = (f"{cg['cg_iterations_mean']:.0f}/{cg['cg_iterations_max']}"
               if "cg_iterations_mean" in cg else "-")
        lines.append(f"| {r['case']} | {r['rows']} | {r['columns_with_intercept']} | "
                     + " | ".join(cell(by[m]) if m in by else "-" for m in methods)
                     + f" | {its} | {fmt(r['full_iteration_seconds'])} ({r['chain_sampler']}) | "
                     f"{r['auto_choice']} |")
    return lines


def ratio_lines(results):
    lines = []
    for r in results:
        by = {s["method"]: s for s in r["samplers"]}
        cg = by.get("cg", {}).get("seconds_per_eta_draw")
        parts = []
        for m in ("cholesky", "bcm"):
            s = by.get(m, {})
            t = s.get("seconds_per_eta_draw")
            if t is not None and cg:
                parts.append(f"{m} / cg = {t / cg:.3g}"
                             + (" (scaled)" if s.get("scaled") else ""))
            elif s.get("extrapolated_seconds_per_eta_draw") and cg:
                parts.append(f"{m} / cg ~ {s['extrapolated_seconds_per_eta_draw'] / cg:.3g} "
                             "(extrapolated)")
        if parts:
            lines.append(f"- {r['case']}, P = {r['columns_with_intercept']}: " + "; ".join(parts))
    return lines


def current_thresholds():
    names = ("CHOLESKY_MAX_COLUMNS", "CHOLESKY_MAX_COLUMNS_SPARSE", "CHOLESKY_MAX_COLUMNS_DENSE",
             "BCM_MAX_ROWS")
    return {n: getattr(gibbs, n) for n in names if hasattr(gibbs, n)} | {"CG_TOL": gaussian.CG_TOL}


def seconds(s):
    return s.get("seconds_per_eta_draw", s.get("extrapolated_seconds_per_eta_draw"))


def check_thresholds(results):
    """Per case: the fastest sampler measured (or extrapolated) beside the "auto" choice."""
    lines = []
    for r in results:
        times = {s["method"]: seconds(s) for s in r["samplers"] if seconds(s) is not None}
        if len(times) < 2:
            continue
        best = min(times, key=times.get)
        r["fastest"] = best
        auto = r["auto_choice"]
        if auto == best:
            verdict = "agrees"
        elif auto in times:
            verdict = f"disagrees: auto is {times[auto] / times[best]:.2g}x slower than {best}"
        else:
            verdict = f"auto's sampler ({auto}) not timed"
        lines.append(f"- {r['case']} (D = {r['rows']}, P = {r['columns_with_intercept']}): "
                     f"fastest {best}, auto {auto}: {verdict}")
    return lines


def write_report(result, out):
    out.mkdir(parents=True, exist_ok=True)
    (out / "eta_scaling.json").write_text(json.dumps(result, indent=2) + "\n")
    m = result["machine"]
    methods = ["cholesky", "bcm", "cg"]
    lines = [
        "# Seconds per eta-draw: dense Cholesky vs BCM vs preconditioned CG",
        "",
        "Timed: `dolda.sampler.probit.draw_eta` for all L = 20 classes (the eta-step only; "
        "U^T U of the Cholesky path is computed once per fit and not included), median wall "
        "seconds over the repeats, on realistic states of a Horseshoe chain (part C: normal "
        "prior) warmed up "
        f"{result['warmup']} iterations in part A, {result['warmup_b']} in parts B and C, then all "
        "samplers draw from the same conditional at each of "
        f"{result['repeats']} (A) / {result['repeats_b']} (B, C) iterations). "
        f"{m['threads']} threads; machine with "
        f"{m['cpu_count']} CPUs shared with other jobs: load average {m['load_before'][0]:.2f} "
        f"(1 min) before and {m['load_after'][0]:.2f} after the run. CPU seconds are in the "
        "JSON. 'scaled': timed on 2 of the 20 classes (one per thread) and multiplied (classes are "
        "independent and cost the same); 'extrapolated': not run (memory or time budget), "
        "O(P^3) from the largest measured P. 'full iteration': the whole Gibbs iteration "
        "(a-step, eta-step with the chain's sampler, Horseshoe scales). 'auto': what "
        "`eta_sampler=\"auto\"` picks.",
        "",
    ]
    for part, title in (("A", "## Part A: films-like sparse one-hot covariates "
                              "(D = 10,810, 6 non-zeros per row)"),
                        ("B", "## Part B: the BCM rule (dense Gaussian U, and sparse one-hot "
                              "with few rows)"),
                        ("C", "## Part C: CG under the normal prior N(0, c) (films-like, "
                              "P = 25,000)")):
        rs = [r for r in result["results"] if r["part"] == part]
        if not rs:
            continue
        lines += [title, ""] + table(rs, methods) + [""]
        ratios = ratio_lines(rs)
        if ratios:
            lines += ["Ratios measured in this run:", ""] + ratios + [""]
    lines += ["## The thresholds of `choose_eta_sampler` against these measurements", "",
              "'auto' and the verdicts below use the thresholds in the code when this file "
              "was written: "
              + ", ".join(f"{k} = {v:g}" for k, v in result["thresholds"].items()) + "."]
    if result.get("thresholds_at_run", result["thresholds"]) != result["thresholds"]:
        lines += ["The timings were measured with "
                  + ", ".join(f"{k} = {v:g}" for k, v in result["thresholds_at_run"].items())
                  + " (the thresholds only decide 'auto', never a timing)."]
    lines += [""]
    lines += result.get("threshold_notes", [])
    if result.get("note"):
        lines += ["", result["note"]]
    lines += [
        "", f"Reproduce: `{result['command']}`", ""]
    (out / "eta_scaling.md").write_text("\n".join(lines))


def print_row(row):
    """One case's summary line, then one line per sampler (without the raw timings)."""
    print(json.dumps({k: v for k, v in row.items() if k != "samplers"}), flush=True)
    for s in row["samplers"]:
        print("   ", json.dumps({k: v for k, v in s.items() if k != "wall_seconds_all"}),
              flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup-b", type=int, default=8, help="warm-up iterations, part B")
    parser.add_argument("--repeats-b", type=int, default=2, help="repeats, part B")
    parser.add_argument("--budget", type=float, default=60.0,
                        help="seconds allowed for one eta-draw of all classes")
    parser.add_argument("--max-gb", type=float, default=8.0)
    parser.add_argument("--columns", type=int, nargs="+",
                        default=[100, 300, 600, 1000, 3000, 10_000, 25_000])
    parser.add_argument("--part", nargs="+", default=["A", "B", "C"])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--note", default=None, help="paragraph added to the thresholds section")
    parser.add_argument("--render", action="store_true",
                        help="only rewrite eta_scaling.md from eta_scaling.json (with --note)")
    args = parser.parse_args(argv)
    if args.render:
        path = args.out / "eta_scaling.json"
        result = json.loads(path.read_text())
        if args.note is not None:
            result["note"] = args.note
        # "auto" as the code decides now (the timings do not depend on it)
        result.setdefault("thresholds_at_run", result["thresholds"])
        result["thresholds"] = current_thresholds()
        for r in result["results"]:
            r.setdefault("auto_choice_at_run", r["auto_choice"])
            r["auto_choice"] = gibbs.choose_eta_sampler(r["rows"], r["columns_with_intercept"],
                                                        r["sparse"])
        result["threshold_notes"] = check_thresholds(result["results"])
        path.write_text(json.dumps(result, indent=2) + "\n")
        write_report(result, args.out)
        return
    args.chain_method = {}
    warmup_a, repeats_a = args.warmup, args.repeats
    load_before = os.getloadavg()
    results = []
    if "A" in args.part:
        for P in args.columns:
            rng = np.random.default_rng(P)
            U = one_hot_design(FILMS_ROWS, P, rng)
            y = labels(U, rng)
            methods = ["cholesky", "cg"] + (["bcm"] if P in (100, 1000, 10_000, 25_000) else [])
            pred = {"cholesky": predicted_cholesky_class_seconds(
                [r for r in results if r["part"] == "A"], U.shape[1])}
            row = run_case(f"films-like one-hot P={P}", U, y, methods, args, pred)
            row["part"] = "A"
            results.append(row)
            print_row(row)
        extrapolate_cholesky([r for r in results if r["part"] == "A"])
    if "C" in args.part:
        # CG under the normal prior: the only curvature along "intercept minus the
        # indicators of one field" is the prior precision 1/c
        args.warmup, args.repeats = args.warmup_b, args.repeats_b
        rng = np.random.default_rng(25_000)
        U = one_hot_design(FILMS_ROWS, 25_000, rng)
        y = labels(U, rng)
        for c in (1.0, 10.0, 100.0):
            row = run_case(f"films-like one-hot P=25000, normal prior c={c:g}", U, y, ["cg"],
                           args, normal_variance=c)
            row["part"] = "C"
            results.append(row)
            print_row(row)
    if "B" in args.part:
        args.warmup, args.repeats = args.warmup_b, args.repeats_b
        chol_dense = None
        for kind, D, P, chain in PART_B_CASES:
            rng = np.random.default_rng(D + P)
            U = dense_design(D, P, rng) if kind == "dense" else one_hot_design(D, P, rng)
            y = labels(U, rng, share=0.002 if kind == "dense" else 0.02)
            name = f"{kind} D={D} P={P}"
            args.chain_method[name] = chain  # an exact sampler that is fast for this shape
            methods = ["bcm", "cg"]
            reuse_chol = (kind == "dense" and P == PART_B_CASES[0][2] and D <= 2000
                          and chol_dense is not None)
            if kind == "dense" and not reuse_chol:
                methods.append("cholesky")
            row = run_case(name, U, y, methods, args)
            row["part"] = "B"
            if kind == "dense" and P == PART_B_CASES[0][2] and D <= 2000:
                if chol_dense is None:
                    chol_dense = next(s for s in row["samplers"] if s["method"] == "cholesky")
                else:
                    reuse = dict(chol_dense)
                    reuse["reused_from"] = "dense D=1000 P=5000 (U^T U is once per fit; the "\
                                           "per-iteration cost does not depend on D)"
                    row["samplers"].append(reuse)
            results.append(row)
            print_row(row)
    result = {
        "what": "seconds per eta-draw (dolda.sampler.probit.draw_eta, all 20 classes)",
        "warmup": warmup_a, "repeats": repeats_a, "warmup_b": args.warmup_b,
        "repeats_b": args.repeats_b, "budget_seconds": args.budget,
        "max_gb": args.max_gb,
        "thresholds": current_thresholds(),
        "machine": {"cpu_count": os.cpu_count(), "threads": args.threads,
                    "platform": platform.platform(), "python": platform.python_version(),
                    "load_before": list(load_before), "load_after": list(os.getloadavg())},
        "command": ("nice -n 5 python benchmarks/bench_eta.py "
                    + shlex.join(argv if argv is not None else sys.argv[1:])).strip(),
        "results": results,
        "note": args.note,
    }
    result["threshold_notes"] = check_thresholds(results)
    write_report(result, args.out)


if __name__ == "__main__":
    main()
