"""DOLDA on a Dask LocalCluster beside the local backend, and a projection to a real cluster.

Corpus: the 20 Newsgroups "bydate" training split, preprocessed once by
:class:`dolda.design.corpus.Vocabulary` (stop list, rarest 1% of tokens removed);
DOLDA with K = 100 topics, alpha = 0.1, beta = 0.01, Horseshoe prior.

* local: ``backend="local"``, 2 numba threads;
* dask: ``backend="dask"`` on a ``LocalCluster`` of 2 single-threaded worker
  processes (the driver keeps 2 threads for its Phi draw), with the exact Phi
  sent as the estimator sends it (``DaskChain.phi_transport = "auto"``: the
  counts it was drawn from when they are smaller, each worker repeating the
  draw);
* dask, Phi sent: the same with ``phi_transport = "dense"`` (Phi itself and the
  MH step's alias tables travel), the way before the counts did; with
  ``--phi-sampler polya`` this contender is left out (the Pólya-urn Phi always
  travels as its non-zeros).

All use ``n_shards=2``, so they run the same chain (checked: the draws must be
identical).  The three fits of a round run one after the other, rounds repeat.  Every iteration is timed on its own
(``chain.step``), the first ``--warmup`` ones (numba compilation or cache
loading on the workers) are left out.  Measured besides the wall clock:

* bytes sent to / received from the workers per iteration, from
  ``DaskChain.traffic`` (sizes of the arrays broadcast and gathered), and
  as a cross-check the bytes through the loopback interface (``/proc/net/dev``,
  ``lo``): everything the driver, the scheduler and the workers sent each
  other, messages and pickling overhead included (other processes of the
  machine talking over localhost at the same time would be counted too);
* the compute time of every shard task on the workers (Dask's task stream),
  split into the a-step and the z-sweep, which gives the per-token cost of
  one core;
* the time of the driver blocks (eta + Horseshoe, the z-sweep globals, the
  count reduction with the Phi draw).

From these the script projects the time per iteration of a 100-million-token
corpus on 16 machines of 16 cores (assumptions in ``ASSUMPTIONS``, written
out in the results).

``--quick``: K = 4 on a small simulated corpus, one round of a few iterations (the
projection is still computed, from numbers that mean nothing at that size).

Usage (about 5 minutes on 2 cores)::

    python -m benchmarks.bench_dask [--warmup 2] [--iters 10] [--rounds 3]
    python -m benchmarks.bench_dask --quick

Writes ``benchmarks/results/dask.json`` and ``dask.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time

from benchmarks import harness

K, ALPHA, BETA = 100, 0.1, 0.01
N_SHARDS = 2

#: Assumptions of the projection (everything else in it is measured by this script).
ASSUMPTIONS = {
    "n_tokens": 100_000_000,
    "machines": 16,
    "cores_per_machine": 16,
    "n_topics": K,
    "n_words": 500_000,  # vocabulary of a 100M-token corpus after pruning (20NG: 83k at 1.8M)
    "n_classes": 20,  # as 20 Newsgroups: P = 1 + K columns, L = 20 rows of eta
    "bandwidth_bit_s": 10e9,  # per machine link, full duplex, no overlap with compute
    "latency_s": 0.2e-3,  # one network round trip
    "round_trips_per_iteration": 4,  # submit a-step, gather, scatter globals + z-sweep, gather
    "scheduler_s_per_task": 1e-3,  # Dask's rule of thumb for the cost of one task
    "thread_efficiency": 0.8,  # 16 numba threads on one shard deliver 0.8 x 16 single cores
    "driver_threads": 16,  # the driver has a machine of its own; Phi draw scales linearly
}


# ------------------------------------------------------------------ probes
def _loopback_bytes():
    """Bytes sent through the loopback interface so far (None where there is no /proc)."""
    try:
        with open("/proc/net/dev") as fh:
            for line in fh:
                name, _, fields = line.partition(":")
                if name.strip() == "lo":
                    return int(fields.split()[8])  # transmitted bytes (= received on lo)
    except OSError:
        pass
    return None


class Recorder:
    """Times every ``chain.step`` of a fit and the driver blocks inside it."""

    def __init__(self, warmup, last):
        self.warmup = warmup
        self.last = last
        self.steps = []  # per iteration: dict
        self.chain = None
        self.io_start = self.io_end = None
        self._blocks = {}

    # wrap the driver blocks of dolda.sampler.gibbs_iteration (looked up at call time by both
    # backends)
    def patch_blocks(self, module):
        names = [n for n in ("eta_step", "topic_globals", "phi_step", "polya_phi_step",
                             "reduce_counts")
                 if hasattr(module, n)]
        originals = {n: getattr(module, n) for n in names}

        def timed(name, func):
            def wrapper(*args, **kwargs):
                tic = time.perf_counter()
                try:
                    return func(*args, **kwargs)
                finally:
                    self._blocks[name] = self._blocks.get(name, 0.0) + time.perf_counter() - tic
            return wrapper

        for n in names:
            setattr(module, n, timed(n, originals[n]))
        # the driver's own exact Phi draws (workers run in their own processes)
        from dolda.sampler.phi import PhiRecipe

        real_draw = PhiRecipe.draw
        PhiRecipe.draw = timed("phi_draw", real_draw)

        def restore():
            PhiRecipe.draw = real_draw
            for n, f in originals.items():
                setattr(module, n, f)
        return restore

    def attach(self, chain):
        self.chain = chain
        step = chain.step

        def timed_step(iteration):
            if iteration == self.warmup:
                self.io_start = _loopback_bytes()
            traffic = dict(getattr(chain, "traffic", {}))
            self._blocks = {}
            t_wall, tic = time.time(), time.perf_counter()
            result = step(iteration)
            seconds = time.perf_counter() - tic
            after = getattr(chain, "traffic", {})
            self.steps.append({
                "iteration": iteration, "seconds": seconds, "start": t_wall,
                "stop": t_wall + seconds, "driver": dict(self._blocks),
                "sent": after.get("sent", 0) - traffic.get("sent", 0),
                "received": after.get("received", 0) - traffic.get("received", 0),
                "loglik": [float(v) for v in result[1]]})
            if iteration == self.last:
                self.io_end = _loopback_bytes()
            return result

        chain.step = timed_step

    def timed(self):
        return [s for s in self.steps if s["iteration"] >= self.warmup]


def _fit(corpus, y, n_iter, recorder, **kw):
    import dolda.backends as backends
    from dolda import DOLDA
    from dolda.sampler import gibbs_iteration as chain_module

    real = backends.make_chain

    def recording(*args, **kwargs):
        chain = real(*args, **kwargs)
        recorder.attach(chain)
        return chain

    backends.make_chain = recording
    restore = recorder.patch_blocks(chain_module)
    try:
        from dolda.models.dolda.options import from_flat

        model = from_flat(DOLDA, dict(n_topics=K, alpha=ALPHA, beta=BETA, n_iter=n_iter,
                                      burn_in=0, random_state=1, progress=False,
                                      n_shards=N_SHARDS, n_words=0, **kw))
        model.fit(corpus, y)
    finally:
        backends.make_chain = real
        restore()
    return model


def _mean(values):
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def _median(values):
    values = sorted(values)
    n = len(values)
    return (values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])) if n \
        else float("nan")


def _loopback_per_iter(recorders, n_timed):
    deltas = [r.io_end - r.io_start for r in recorders
              if r.io_start is not None and r.io_end is not None]
    return _mean(deltas) / n_timed if deltas else None


def _summary(recorders):
    steps = [s for rec in recorders for s in rec.timed()]
    driver = {}
    for s in steps:
        for name, sec in s["driver"].items():
            driver[name] = driver.get(name, 0.0) + sec
    driver = {name: sec / len(steps) for name, sec in driver.items()}
    return {"seconds_per_iter_mean": _mean(s["seconds"] for s in steps),
            "seconds_per_iter_median": _median([s["seconds"] for s in steps]),
            "seconds_per_iter_each": [round(s["seconds"], 4) for s in steps],
            "driver_seconds_per_iter": driver,
            "bytes_sent_per_iter": _mean(s["sent"] for s in steps),
            "bytes_received_per_iter": _mean(s["received"] for s in steps)}


def _task_times(task_stream, steps):
    """Worker compute seconds per timed iteration: a-step and z-sweep, summed and slowest shard."""
    per = [{"a": [], "z": []} for _ in steps]
    for task in task_stream:
        name = str(task["key"]).split("-")
        if len(name) < 5 or name[0] != "dolda" or name[2] not in ("a", "z") or \
                not name[3].isdigit():
            continue  # the getitem tasks ("a-state", ...) and anything else
        for c in task["startstops"]:
            if c["action"] != "compute":
                continue
            for i, s in enumerate(steps):
                if s["start"] <= c["start"] <= s["stop"]:
                    per[i][name[2]].append(c["stop"] - c["start"])
    out = {}
    for phase in ("a", "z"):
        out[f"{phase}_sum"] = _mean(sum(p[phase]) for p in per)
        out[f"{phase}_slowest_shard"] = _mean(max(p[phase], default=0.0) for p in per)
        out[f"{phase}_tasks_per_iter"] = _mean(len(p[phase]) for p in per)
    return out


# -------------------------------------------------------------- projection
def _replication_rounds(copies: int, branching: int = 2) -> int:
    """Rounds of ``Scheduler.replicate`` to reach ``copies`` holders: every holder
    hands the data to up to ``branching`` new workers per round."""
    rounds, holders = 0, 1
    while holders < copies:
        holders += min(copies - holders, branching * holders)
        rounds += 1
    return rounds


def project(measured, a=ASSUMPTIONS):
    """Seconds per iteration on ``a["machines"]`` x ``a["cores_per_machine"]`` cores.

    Two layouts: (A) one worker per machine with all its cores as threads and
    one shard per worker (Phi sent once per machine); (B) one single-threaded
    worker per core and one shard per worker (Phi sent once per core).

    The iteration is bulk synchronous, so the parts add up.  Network: the
    broadcast of the z-sweep globals goes as Dask does it (driver ->
    scheduler, on the same machine here; scheduler -> one worker; then
    ``replicate`` rounds in which each holder sends two copies); the shards'
    counts all arrive through the scheduler's link.  In layout B a machine's
    link must also carry a copy for each of its workers (the replication
    sources are random, (M - 1) / M of them on other machines).
    """
    n, k, v, l = a["n_tokens"], a["n_topics"], a["n_words"], a["n_classes"]
    p = 1 + k
    c_tok = measured["worker_seconds_per_token"]
    cores = a["machines"] * a["cores_per_machine"]
    bandwidth = a["bandwidth_bit_s"] / 8
    # driver: eta (depends on L, P only), Phi draw ~ K V on the driver's threads,
    # count reduction ~ received counts ~ N (conservative: bigger shards have fewer pairs
    # per token)
    t_eta = measured["driver_eta_s"] * (p / measured["P"]) ** 3
    # the merge of the shards' counts is parallel over topics, on the driver's threads
    t_reduce = (measured["driver_reduce_s_per_token"] * n * measured["driver_threads"]
                / min(a["driver_threads"], k))
    received = measured["received_bytes_per_token"] * n
    # the exact draw is parallel over blocks of 16 topics: at most ceil(K / 16) threads
    blocks = -(-k // 16)
    worker_phi_kv = None
    if measured.get("phi_sampler") == "polya":
        # sparse Phi: the count pairs (at most N, at most K V; 20 Newsgroups' share per token
        # is an upper bound for a larger corpus) plus the prior hits, K V beta
        nnz = min(measured["phi_nonzeros_per_token"] * n, k * v) + k * v * BETA
        t_phi = (measured["driver_phi_s_per_nonzero"] * nnz * measured["driver_threads"]
                 / a["driver_threads"])
        glob_bytes = nnz * measured["phi_bytes_per_nonzero"] + 8 * (v + 1) + k * k * 8 \
            + l * p * 8
    else:
        t_phi = (measured["driver_phi_s_per_kv"] * k * v * measured["driver_threads"]
                 / min(a["driver_threads"], blocks))
        if measured.get("phi_transport") == "counts":
            t_phi = 0.0  # the driver draws Phi only for checkpoints
            # the counts Phi was drawn from (a word and a count per non-zero, a pointer per
            # topic; 20 Newsgroups' non-zeros per token an upper bound for a larger corpus);
            # every worker repeats the draw and builds its alias tables
            nnz = min(measured["counts_nonzeros_per_token"] * n, k * v)
            glob_bytes = 8 * nnz + 8 * (k + 1) + k * k * 8 + l * p * 8
            worker_phi_kv = measured["worker_phi_s_per_kv"] * k * v
        else:
            glob_bytes = k * v * measured["phi_bytes_per_entry"] + k * k * 8 + l * p * 8
    copy_s = glob_bytes / bandwidth
    layouts = {}
    for name, workers, threads in (("A: 16 workers x 16 threads", a["machines"],
                                    a["cores_per_machine"]),
                                   ("B: 256 workers x 1 thread", cores, 1)):
        shards = workers
        eff = a["thread_efficiency"] if threads > 1 else 1.0
        t_work = n / shards * c_tok / (threads * eff)
        if worker_phi_kv is not None:
            used = min(threads, blocks)
            t_work += worker_phi_kv / (used * (a["thread_efficiency"] if used > 1 else 1.0))
        rounds = _replication_rounds(workers)
        t_broadcast = (1 + 2 * rounds) * copy_s
        if threads == 1:
            per_machine = workers // a["machines"]
            t_broadcast = max(t_broadcast,
                              per_machine * (a["machines"] - 1) / a["machines"] * copy_s)
        t_comm = t_broadcast + (received + shards * l * p * 8) / bandwidth
        tasks = 6 * shards + 1
        t_sched = tasks * a["scheduler_s_per_task"] + a["round_trips_per_iteration"] \
            * a["latency_s"]
        total = t_work + t_eta + t_phi + t_reduce + t_comm + t_sched
        layouts[name] = {
            "workers": workers, "threads_per_worker": threads, "shards": shards,
            "workers_compute_s": t_work, "driver_eta_s": t_eta, "driver_phi_s": t_phi,
            "driver_reduce_s": t_reduce, "globals_bytes_per_copy": glob_bytes,
            "replication_rounds": rounds, "bytes_sent": workers * glob_bytes,
            "bytes_received": received, "broadcast_s": t_broadcast, "network_s": t_comm,
            "scheduler_and_latency_s": t_sched, "total_s": total, "tokens_per_s": n / total}
    one_machine = (n * c_tok / (a["cores_per_machine"] * a["thread_efficiency"]) + t_eta + t_phi
                   + t_reduce)
    return {"assumptions": a, "layouts": layouts,
            "one_machine_local_backend_s": one_machine}


def full_projection(measured):
    """:func:`project` under :data:`ASSUMPTIONS`, with the total had Phi itself travelled
    (when the run sent the counts) and layout A under other assumptions."""
    projection = project(measured)
    if measured.get("phi_transport") == "counts" and "dense_phi_bytes_per_entry" in measured:
        as_sent = dict(measured, phi_transport="dense",
                       phi_bytes_per_entry=measured["dense_phi_bytes_per_entry"])
        projection["phi_itself_sent_total_s"] = {
            name: layout["total_s"] for name, layout in project(as_sent)["layouts"].items()}
    main_layout = "A: 16 workers x 16 threads"
    projection["sensitivity_layout_A_total_s"] = {
        "25 Gbit/s": project(measured, dict(ASSUMPTIONS, bandwidth_bit_s=25e9))[
            "layouts"][main_layout]["total_s"],
        "V = 100,000": project(measured, dict(ASSUMPTIONS, n_words=100_000))[
            "layouts"][main_layout]["total_s"],
        "V = 100,000 and 25 Gbit/s": project(measured, dict(ASSUMPTIONS, n_words=100_000,
                                                             bandwidth_bit_s=25e9))[
            "layouts"][main_layout]["total_s"],
    }
    return projection


def reproject(out_dir):
    """Recompute the projection of ``dask.json`` (after a change of :func:`project`) and
    rewrite it and the head of ``dask.md`` (an "Earlier run" section below is kept)."""
    path = out_dir / "dask.json"
    result = json.loads(path.read_text())
    result["projection"] = full_projection(result["measured_for_projection"])
    args = argparse.Namespace(warmup=result["warmup_iterations"],
                              iters=result["timed_iterations_per_round"],
                              rounds=len(result["rounds"]))
    md = out_dir / "dask.md"
    kept = md.read_text().partition("\n## Earlier run")
    path.write_text(json.dumps(result, indent=2) + "\n")
    md.write_text(_markdown(result, args) + "\n" + (kept[1] + kept[2] if kept[1] else ""))
    print(md.read_text())


# -------------------------------------------------------------------- main
def main(argv=None):
    global K
    parser = harness.parser(__doc__)
    parser.add_argument("--warmup", type=int, default=None, help="default 2 (1 with --quick)")
    parser.add_argument("--iters", type=int, default=None, help="default 10 (2 with --quick)")
    parser.add_argument("--snapshot-every", type=int, default=10)
    parser.add_argument("--phi-sampler", choices=["exact", "polya"], default=None,
                        help="Phi step (default: the estimator's default)")
    parser.add_argument("--reproject", action="store_true",
                        help="only recompute the projection of the last run's dask.json")
    args = parser.parse_args(argv)
    if args.reproject:
        return reproject(args.out or harness.RESULTS)
    args.rounds = harness.rounds(args, full=3, quick=1)
    args.warmup = args.warmup if args.warmup is not None else (1 if args.quick else 2)
    args.iters = args.iters if args.iters is not None else (2 if args.quick else 10)
    run = harness.start("dask", args, argv)

    import distributed
    import numpy as np

    from dolda.design.corpus import Vocabulary
    from dolda.datasets import load_20newsgroups

    load_before = os.getloadavg()
    tic = time.perf_counter()
    if args.quick:
        K = 4
        texts, y, _ = harness.tiny_corpus(n_docs=120, n_topics=K)
    else:
        train = load_20newsgroups(args.data, "train")
        texts, y = train.text.tolist(), train.label.to_numpy()
    corpus = Vocabulary().fit_transform(texts)
    n_classes = int(len(set(y)))
    print(f"corpus: D={corpus.n_docs} N={corpus.n_tokens} V={corpus.n_words} "
          f"({time.perf_counter() - tic:.0f} s)", flush=True)
    n_iter = args.warmup + args.iters

    # local and dask fits alternate, so that a change of the machine's load
    # during the run hits both backends alike; every round gives a ratio
    from dolda import DOLDA

    from dolda.backends.dask import DaskChain

    phi_sampler = args.phi_sampler or DOLDA().phi_sampler
    phi_kw = {"phi_sampler": phi_sampler}
    local_recs, dask_recs, dense_recs, rounds, same = [], [], [], [], []
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None, silence_logs=40) as cluster, \
            distributed.Client(cluster) as client:
        with distributed.get_task_stream(client=client) as stream:
            for r in range(args.rounds):
                local_rec = Recorder(args.warmup, n_iter - 1)
                one = _fit(corpus, y, n_iter, local_rec, n_jobs=2, **phi_kw)
                fits = [one]
                for transport, recs in (("auto", dask_recs), ("dense", dense_recs)):
                    if transport == "dense" and phi_sampler == "polya":
                        continue
                    DaskChain.phi_transport = transport
                    rec = Recorder(args.warmup, n_iter - 1)
                    fits.append(_fit(corpus, y, n_iter, rec, n_jobs=2, backend="dask",
                                     client=client, snapshot_every=args.snapshot_every,
                                     **phi_kw))
                    recs.append(rec)
                DaskChain.phi_transport = "auto"
                same.append(all(np.array_equal(getattr(one, name), getattr(other, name))
                                for other in fits[1:]
                                for name in ("eta_draws_", "tau_draws_", "doc_topic_counts_",
                                             "phi_")))
                local_recs.append(local_rec)
                one_local, one_dask = _summary([local_rec]), _summary([dask_recs[-1]])
                rounds.append({
                    "local_s": one_local["seconds_per_iter_mean"],
                    "dask_s": one_dask["seconds_per_iter_mean"],
                    "ratio": one_dask["seconds_per_iter_mean"]
                    / one_local["seconds_per_iter_mean"], "load_average": os.getloadavg()})
                if dense_recs:
                    rounds[-1]["dask_phi_sent_s"] = _summary([dense_recs[-1]])[
                        "seconds_per_iter_mean"]
                print(f"round {r + 1}: local {rounds[-1]['local_s']:.3f} s/it, dask "
                      f"{rounds[-1]['dask_s']:.3f} s/it, ratio {rounds[-1]['ratio']:.2f}"
                      + (f", Phi sent {rounds[-1]['dask_phi_sent_s']:.3f} s/it"
                         if dense_recs else ""), flush=True)
        tasks = _task_times(stream.data, [s for rec in dask_recs for s in rec.timed()])
        dense_tasks = (_task_times(stream.data, [s for rec in dense_recs for s in rec.timed()])
                       if dense_recs else None)
    local, dask = _summary(local_recs), _summary(dask_recs)
    dask["worker_compute_per_iter"] = tasks
    dense = None
    if dense_recs:
        dense = _summary(dense_recs)
        dense["worker_compute_per_iter"] = dense_tasks
        dense["loopback_bytes_per_iter"] = _loopback_per_iter(dense_recs, args.iters)
    dask["loopback_bytes_per_iter"] = _loopback_per_iter(dask_recs, args.iters)
    local["loopback_bytes_per_iter"] = _loopback_per_iter(local_recs, args.iters)
    print(f"dask: {dask['seconds_per_iter_mean']:.3f} s/iteration, sent "
          f"{dask['bytes_sent_per_iter'] / 1e6:.1f} MB, received "
          f"{dask['bytes_received_per_iter'] / 1e6:.1f} MB per iteration", flush=True)

    same_chain = all(same)
    # the log-likelihood trace is only reported, never fed back; compare it apart
    trace_gap = max(abs(a - b) / abs(b) for lr, dr in zip(local_recs, dask_recs)
                    for sa, sb in zip(lr.steps, dr.steps)
                    for a, b in zip(sa["loglik"], sb["loglik"]))
    ratio = dask["seconds_per_iter_mean"] / local["seconds_per_iter_mean"]

    # measured inputs of the projection
    n_tok, v = corpus.n_tokens, corpus.n_words
    d_driver = dask["driver_seconds_per_iter"]
    reduce_s = d_driver.get("reduce_counts", 0.0)
    phi_step_s = (d_driver.get("phi_step", 0.0) + d_driver.get("polya_phi_step", 0.0)
                  + d_driver.get("phi_draw", 0.0))
    sparse = getattr(dask_recs[-1].chain, "_sparse", None)
    phi_nnz = None if sparse is None else int(len(sparse.topics))
    recipe = getattr(dask_recs[-1].chain, "_recipe", None)
    counts_sent = (phi_sampler != "polya" and recipe is not None
                   and recipe.nbytes < 4 * K * v)
    if counts_sent and dense is not None:  # the driver drew no Phi: time its draw there
        phi_step_s = dense["driver_seconds_per_iter"].get("phi_draw", 0.0)
    # the sweep's cost per token: from the fits whose workers did not redraw Phi
    sweep_tasks = dense_tasks if (counts_sent and dense_tasks) else tasks
    measured = {
        "P": 1 + K,
        "phi_transport": "polya" if phi_sampler == "polya" else
        ("counts" if counts_sent else "dense"),
        "worker_seconds_per_token": (sweep_tasks["a_sum"] + sweep_tasks["z_sum"]) / n_tok,
        "worker_a_seconds_per_token": sweep_tasks["a_sum"] / n_tok,
        "worker_z_seconds_per_token": sweep_tasks["z_sum"] / n_tok,
        "driver_eta_s": d_driver.get("eta_step", 0.0) + d_driver.get("topic_globals", 0.0),
        # the chains reduce the shards' counts before the Phi step (timed apart)
        "driver_phi_s_per_kv": phi_step_s / (K * v),
        "driver_reduce_s_per_token": reduce_s / n_tok,
        "driver_threads": 2,
        "received_bytes_per_token": dask["bytes_received_per_iter"] / n_tok,
        "phi_bytes_per_entry": None,
        "phi_sampler": phi_sampler,
        "counts_nonzeros_per_token": (len(recipe.counts.words) / n_tok if counts_sent
                                      else None),
        # each worker's repeated Phi draw and alias tables (one thread), per topic-word entry:
        # the extra z-task time of the fits that sent the counts over those that sent Phi
        "worker_phi_s_per_kv": (max(0.0, tasks["z_sum"] - dense_tasks["z_sum"]) / N_SHARDS
                                / (K * v) if counts_sent and dense_tasks else None),
        "phi_nonzeros": phi_nnz,
        "phi_nonzeros_per_token": None if phi_nnz is None else phi_nnz / n_tok,
        "driver_phi_s_per_nonzero": None if phi_nnz is None else phi_step_s / phi_nnz,
        "overhead_s_per_iter": dask["seconds_per_iter_mean"]
        - sum(d_driver.get(n, 0.0) for n in ("eta_step", "topic_globals", "phi_step",
                                              "phi_draw", "reduce_counts"))
        - tasks["a_slowest_shard"] - tasks["z_slowest_shard"],
    }
    # bytes of one Phi entry as sent: what the traffic counter saw beyond eta and S
    eta_bytes = n_classes * (1 + K) * 8
    per_copy = (dask["bytes_sent_per_iter"] - N_SHARDS * eta_bytes) / 2 - eta_bytes - K * K * 8
    measured["phi_bytes_per_entry"] = float(per_copy / (K * v))
    if dense is not None:  # Phi (and the MH step's alias tables) as they travel when sent
        dense_copy = ((dense["bytes_sent_per_iter"] - N_SHARDS * eta_bytes) / 2 - eta_bytes
                      - K * K * 8)
        measured["dense_phi_bytes_per_entry"] = float(dense_copy / (K * v))
    if phi_nnz is not None:  # (topic, value) per non-zero + an int64 pointer per word
        measured["phi_bytes_per_nonzero"] = float((per_copy - 8 * (v + 1)) / phi_nnz)
    projection = full_projection(measured)

    result = {
        "corpus": {"name": "simulated (quick)" if args.quick else "20 Newsgroups bydate train",
                   "n_docs": corpus.n_docs,
                   "n_tokens": n_tok, "n_words": v, "n_classes": n_classes},
        "model": {"n_topics": K, "alpha": ALPHA, "beta": BETA, "prior": "horseshoe",
                  "n_shards": N_SHARDS, "snapshot_every": args.snapshot_every},
        "warmup_iterations": args.warmup, "timed_iterations_per_round": args.iters,
        "rounds": rounds, "local": local, "dask": dask, "dask_phi_sent": dense,
        "dask_over_local_time": ratio,
        "dask_over_local_time_median_of_rounds": _median([r["ratio"] for r in rounds]),
        "same_chain": same_chain, "loglik_trace_max_relative_gap": trace_gap,
        "measured_for_projection": measured,
        "projection": projection,
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version(), "dask": distributed.__version__,
                    "load_average_before": load_before, "load_average_after": os.getloadavg(),
                    "nice": os.nice(0)},
    }
    title, _, body = _markdown(result, args).partition("\n")
    run.finish(result, body.splitlines(), title.lstrip("# "))
    return result


def _markdown(r, args):
    c, lo, da, m, pr = r["corpus"], r["local"], r["dask"], r["measured_for_projection"], \
        r["projection"]
    a = pr["assumptions"]
    w = da["worker_compute_per_iter"]
    lo_bytes = da["loopback_bytes_per_iter"]
    lo_local = lo["loopback_bytes_per_iter"]
    mb = 1e6
    lines = [
        f"# DOLDA on a Dask LocalCluster beside the local backend ({c['name']}, K = {K})",
        "",
        f"D = {c['n_docs']}, N = {c['n_tokens']} tokens, V = {c['n_words']}, L = "
        f"{c['n_classes']}; alpha = {ALPHA}, beta = {BETA}, Horseshoe, phi_sampler = "
        f"{m.get('phi_sampler', 'exact')}; n_shards = {N_SHARDS} "
        f"for both backends. Same chain on both (eta, tau, n_dk and Phi draws compared "
        f"array for array): {r['same_chain']}; largest relative gap of the reported "
        f"log-likelihood trace {r['loglik_trace_max_relative_gap']:.1e} (the DO "
        "log-likelihood sums its blocks in a thread-dependent order: 2 threads locally, 1 "
        f"on each worker; it is never fed back into the chain). {len(r['rounds'])} rounds, each a "
        f"local fit then a dask fit of {args.warmup} warm-up and {args.iters} timed "
        f"iterations (every iteration timed on its own). Machine: "
        f"{r['machine']['cpu_count']} cores shared "
        f"with other jobs, load average {r['machine']['load_average_before'][0]:.1f} before "
        f"and {r['machine']['load_average_after'][0]:.1f} after; run under nice "
        f"{r['machine']['nice']}.",
        "",
        "| backend | s / iteration (mean) | median | bytes sent / it | bytes received / it |",
        "|---|---|---|---|---|",
        f"| local, 2 numba threads | {lo['seconds_per_iter_mean']:.3f} | "
        f"{lo['seconds_per_iter_median']:.3f} | - | - |",
        f"| dask, LocalCluster 2 workers x 1 thread | {da['seconds_per_iter_mean']:.3f} | "
        f"{da['seconds_per_iter_median']:.3f} | {da['bytes_sent_per_iter'] / mb:.1f} MB | "
        f"{da['bytes_received_per_iter'] / mb:.1f} MB |"]
    dn = r.get("dask_phi_sent")
    if dn is not None:
        lines += [
            f"| dask, Phi itself sent (`phi_transport=\"dense\"`) | "
            f"{dn['seconds_per_iter_mean']:.3f} | {dn['seconds_per_iter_median']:.3f} | "
            f"{dn['bytes_sent_per_iter'] / mb:.1f} MB | "
            f"{dn['bytes_received_per_iter'] / mb:.1f} MB |",
            "",
            f"Bytes sent per iteration, Phi itself over what the estimator sends: "
            f"**{dn['bytes_sent_per_iter'] / da['bytes_sent_per_iter']:.1f}x**; time per "
            f"iteration, what the estimator sends over Phi itself: "
            f"{da['seconds_per_iter_mean'] / dn['seconds_per_iter_mean']:.2f} (per round: "
            + ", ".join(f"{x['dask_s'] / x['dask_phi_sent_s']:.2f}" for x in r["rounds"])
            + ")."]
    lines += [
        "",
        f"Dask / local time per iteration: **{r['dask_over_local_time']:.2f}** (pooled means; "
        "per round: " + ", ".join(f"{x['ratio']:.2f}" for x in r["rounds"])
        + f", median {r['dask_over_local_time_median_of_rounds']:.2f}). Bytes per iteration "
        f"include the snapshot of z every {r['model']['snapshot_every']} iterations "
        "(received) and exclude the one-off scatter of the shards.",
        "",
        "Where the dask iteration goes (seconds per iteration): workers a-step "
        f"{w['a_slowest_shard']:.3f} and z-sweep {w['z_slowest_shard']:.3f} (slowest shard; "
        f"summed over shards {w['a_sum']:.3f} and {w['z_sum']:.3f}); driver "
        + ", ".join(f"{k} {v:.3f}" for k, v in da["driver_seconds_per_iter"].items())
        + f"; the rest, {m['overhead_s_per_iter']:.3f} s, is scheduling, serialisation and "
        "transfer. Bytes are counted by `DaskChain.traffic` (array sizes; "
        + (f"Phi travels as {m['phi_bytes_per_entry']:.1f} bytes per topic-word entry, once "
           "per worker: float32 Phi and the MH step's alias tables)"
           if m.get("phi_transport") == "dense" else
           f"the exact Phi travels as the counts it was drawn from, "
           f"{m['counts_nonzeros_per_token'] * c['n_tokens']:,.0f} non-zeros at 8 bytes, "
           f"{m['phi_bytes_per_entry']:.2f} bytes per topic-word entry, once per worker, every "
           f"worker repeating the draw and building its alias tables; sent itself, Phi and "
           f"the tables take {m['dense_phi_bytes_per_entry']:.1f} bytes per entry)"
           if m.get("phi_transport") == "counts" else
           f"the Pólya-urn Phi travels sparse, {m['phi_nonzeros']:,} non-zeros at "
           f"{m['phi_bytes_per_nonzero']:.1f} bytes plus a pointer per word, "
           f"{m['phi_bytes_per_entry']:.2f} bytes per topic-word entry, once per worker)")
        + ("." if lo_bytes is None else
           f"; the loopback interface carried {lo_bytes / mb:.1f} MB per iteration during the "
           f"dask run (all messages, pickling and scheduler traffic included; "
           f"{(lo_local or 0) / mb:.2f} MB during the local run, other processes)."),
        "",
        f"## Projection: {a['n_tokens'] / 1e6:.0f} million tokens on {a['machines']} machines "
        f"x {a['cores_per_machine']} cores",
        "",
        "Measured here: worker cost "
        f"{m['worker_seconds_per_token'] * 1e9:.0f} ns per token on one core (a-step "
        f"{m['worker_a_seconds_per_token'] * 1e9:.0f}, z-sweep "
        f"{m['worker_z_seconds_per_token'] * 1e9:.0f}); driver Phi draw "
        f"{m['driver_phi_s_per_kv'] * 1e9:.2f} ns per topic-word entry on 2 threads"
        + (" (in the fits that sent Phi itself: while the counts travel, the driver draws "
           "Phi only for checkpoints)" if m.get("phi_transport") == "counts" else "")
        + "; count "
        f"reduction {m['driver_reduce_s_per_token'] * 1e9:.1f} ns per corpus token; eta and "
        f"Horseshoe {m['driver_eta_s'] * 1e3:.1f} ms; counts received "
        f"{m['received_bytes_per_token']:.2f} bytes per token"
        + (f"; a worker's repeated Phi draw and alias tables "
           f"{m['worker_phi_s_per_kv'] * 1e9:.1f} ns per topic-word entry on one core (its "
           "z-tasks' time beyond those of the fits that sent Phi), the sweep's cost per token "
           "taken from those fits" if m.get("phi_transport") == "counts" else "") + ".",
        "",
        "Assumed: " + "; ".join([
            f"V = {a['n_words']:,} words, K = {a['n_topics']}, L = {a['n_classes']}",
            f"network {a['bandwidth_bit_s'] / 1e9:g} Gbit/s per machine, no overlap with "
            "compute (the iteration is bulk synchronous); the z-sweep globals (Phi, S, eta) "
            "broadcast as Dask does it: scheduler (on the driver's machine) to one worker, "
            "then replication rounds in which each holder sends two copies; all shard "
            "counts through the scheduler's link",
            f"{a['round_trips_per_iteration']} round trips of {a['latency_s'] * 1e3:g} ms",
            f"{a['scheduler_s_per_task'] * 1e3:g} ms of scheduler time per task "
            "(6 tasks per shard and iteration)",
            f"{a['thread_efficiency']:g} efficiency of 16 numba threads",
            f"driver on its own {a['driver_threads']}-core machine, Phi draw scaling "
            "linearly in K x V and in threads up to one per block of 16 topics, eta cost as "
            "P^3",
            "received counts and their reduction (parallel over topics on the driver's "
            "threads) scale with N (an upper bound: larger "
            "shards hold fewer distinct topic-word pairs per token)"]
            + (["the counts Phi is drawn from: 20 Newsgroups' non-zeros per token times N, "
                "at most K x V; every worker repeats the draw on its threads (up to one per "
                "block of 16 topics) before its sweep"]
               if m.get("phi_transport") == "counts" else [])) + ".",
        "",
        "| layout | workers compute | driver (eta, Phi, reduce) | network (broadcast, counts) "
        "| scheduler + latency | total s / iteration | tokens / s |",
        "|---|---|---|---|---|---|---|"]
    for name, p in pr["layouts"].items():
        lines.append(
            f"| {name}, {p['shards']} shards | {p['workers_compute_s']:.2f} | "
            f"{p['driver_eta_s']:.3f} + {p['driver_phi_s']:.2f} + {p['driver_reduce_s']:.2f} "
            f"| {p['network_s']:.2f} ({p['workers']} x {p['globals_bytes_per_copy'] / 1e6:.0f} MB "
            f"out in {p['replication_rounds']} rounds, {p['bytes_received'] / 1e9:.2f} GB in) | "
            f"{p['scheduler_and_latency_s']:.2f} | "
            f"**{p['total_s']:.2f}** | {p['tokens_per_s']:.3g} |")
    lines += ["", "Layout A under other assumptions (total s / iteration): " + ", ".join(
        f"{name}: {sec:.2f}" for name, sec in pr["sensitivity_layout_A_total_s"].items()) + "."]
    if "phi_itself_sent_total_s" in pr:
        lines += ["", "Had Phi itself (and the alias tables) travelled, as with "
                  "`phi_transport=\"dense\"` (total s / iteration): " + ", ".join(
                      f"{name.split(':')[0]} {sec:.2f}"
                      for name, sec in pr["phi_itself_sent_total_s"].items()) + "."]
    lines += [
        "",
        f"For comparison, one 16-core machine with the local backend: "
        f"{pr['one_machine_local_backend_s']:.1f} s per iteration.",
        "",
        "Reproduce: `nice -n 5 python benchmarks/bench_dask.py --warmup "
        f"{args.warmup} --iters {args.iters} --rounds {args.rounds} --phi-sampler "
        f"{m.get('phi_sampler', 'exact')}`"]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
