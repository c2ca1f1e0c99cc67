"""A bounded load test of ``dolda serve`` on 127.0.0.1: latency, throughput, errors.

The service (uvicorn, one process, the model loaded once) runs in a thread of
this process on a free port of 127.0.0.1; ``--clients`` concurrent clients
(asyncio + httpx, keep-alive connections) send ``--requests`` requests in all,
each ``POST /predict`` with one document (or ``--endpoint explain``).  The
documents are held-out bug reports of the Hadoop/HDFS JIRA corpus when
the shared data are there (the model of ``benchmarks/bench_report.py``,
fitted on first use), else simulated ones (``--quick``: a small simulated model and a
few requests).  Requests are computed one at a
time on all numba threads (the service's lock), so the throughput is that of
the prediction sweep and the latency grows with the queue: p50 ~ clients x
service time.

Usage::

    python -m benchmarks.bench_serve [--requests 2000] [--clients 16]
        [--endpoint predict|explain] [--threads 2]
    python -m benchmarks.bench_serve --quick

Writes ``benchmarks/results/serve.json`` and ``serve.md``.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks import harness


def start_server(app):
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error",
                                           lifespan="off", access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return server, thread, server.servers[0].sockets[0].getsockname()[1]


async def load(url, path, bodies, n_requests, n_clients):
    import httpx

    latencies, errors, statuses = [], 0, {}
    counter = iter(range(n_requests))

    async def client():
        nonlocal errors
        async with httpx.AsyncClient(base_url=url, timeout=120) as c:
            for i in counter:
                start = time.perf_counter()
                try:
                    r = await c.post(path, json=bodies[i % len(bodies)])
                    status = r.status_code
                except httpx.HTTPError:
                    status = "transport error"
                latencies.append(time.perf_counter() - start)
                statuses[status] = statuses.get(status, 0) + 1
                if status != 200:
                    errors += 1

    start = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(n_clients)))
    return np.asarray(latencies), errors, statuses, time.perf_counter() - start


def main(argv=None):
    parser = harness.parser(__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--endpoint", choices=["predict", "explain"], default="predict")
    parser.add_argument("--max-chars", type=int, default=2000,
                        help="Cut documents to this many characters.")
    args = parser.parse_args(argv)
    run = harness.start("serve" if args.endpoint == "predict" else f"serve_{args.endpoint}",
                        args, argv)
    from benchmarks import bench_report
    from dolda.serve import Limits, create_app

    n_requests, n_clients = (40, 4) if args.quick else (args.requests, args.clients)
    corpus = "sim" if args.quick or not bench_report.DATA.exists() else "jira"
    with tempfile.TemporaryDirectory(prefix="dolda_bench_serve_") as tmp:
        if args.quick:
            data = bench_report.simulated(n_docs=200, n_classes=3, n_topics=4)
            model_dir = Path(tmp) / "model"
            bench_report.fitted_model(data, model_dir, 4, 10, args.threads)
        else:
            data = bench_report.load_jira() if corpus == "jira" else bench_report.simulated()
            model_dir = Path(tempfile.gettempdir()) / f"dolda_bench_report_{corpus}"
            bench_report.fitted_model(data, model_dir, 50, 150, args.threads)
        texts = [t[:args.max_chars] for t in data["test"][0][:500]]
        bodies = [{"texts": [t]} for t in texts]
        app = create_app(model_dir, threads=args.threads, limits=Limits())
        server, thread, port = start_server(app)
        url = f"http://127.0.0.1:{port}"
        try:
            asyncio.run(load(url, f"/{args.endpoint}", bodies, 20, 2))  # warm-up
            lat, errors, statuses, wall = asyncio.run(
                load(url, f"/{args.endpoint}", bodies, n_requests, n_clients))
        finally:
            server.should_exit = True
            thread.join(10)
    ms = lat * 1000
    result = {
        "endpoint": f"POST /{args.endpoint}", "corpus": corpus, "requests": n_requests,
        "clients": n_clients, "threads": args.threads, "errors": errors,
        "statuses": {str(k): v for k, v in statuses.items()}, "wall_seconds": wall,
        "throughput_rps": n_requests / wall,
        "latency_ms": {"p50": float(np.percentile(ms, 50)), "p90": float(np.percentile(ms, 90)),
                       "p99": float(np.percentile(ms, 99)), "max": float(ms.max()),
                       "mean": float(ms.mean())},
        "mean_chars_per_text": float(np.mean([len(t) for t in texts])),
    }
    lat_ms = result["latency_ms"]
    lines = [
        f"{n_requests} requests to `POST /{args.endpoint}`, one document each ({corpus} "
        f"corpus, mean {result['mean_chars_per_text']:.0f} characters), from {n_clients} "
        f"concurrent clients on 127.0.0.1; one uvicorn process, {args.threads} numba "
        "threads.", "",
        "| p50 | p90 | p99 | max | throughput | errors |", "|---|---|---|---|---|---|",
        f"| {lat_ms['p50']:.0f} ms | {lat_ms['p90']:.0f} ms | {lat_ms['p99']:.0f} ms | "
        f"{lat_ms['max']:.0f} ms | {result['throughput_rps']:.1f} requests/s | {errors} |"]
    run.finish(result, lines, "dolda serve under load")
    return result


if __name__ == "__main__":
    main()
