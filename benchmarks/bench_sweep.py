"""Sweep throughput: cells per second on 1 and 2 dask workers, and the overhead per cell against a
plain loop calling the same cell function.

    python benchmarks/bench_sweep.py                 # about 2 minutes on 2 cores
    python benchmarks/bench_sweep.py --d 128 --cells 2000 --chunks 1 8 32

Cases (each on the same cells of ``good-triple`` at one d, Ginibre V, Q = K = I):

- plain loop: ``for cell: EXPERIMENTS["good-triple"](seed, params)`` in this process, one BLAS thread;
- serial runner: ``run_sweep(..., workers=0)``: the same loop plus rows, Parquet batches, bookkeeping;
- dask, 1 and 2 workers: ``run_sweep(..., client=...)`` on a LocalCluster already started (its start
  and the first task, which imports attndyn in each worker, are timed separately), for each chunk size.

Two overheads per cell are printed: against the plain loop, (wall - plain) / cells with one worker
and (wall - plain / 2) / cells with two; and, measured within the case itself (robust to a machine
whose load changes between cases), (wall x workers - sum of the cells' own times) / cells: the time a
worker spends per cell outside the cell function (scheduling, transfer, idling, writing).
Prints a table and writes JSON (--json).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d", type=int, default=64)
    ap.add_argument("--cells", type=int, default=2000)
    ap.add_argument("--chunks", type=int, nargs="+", default=[1, 8, 32])
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()

    from threadpoolctl import threadpool_limits

    from attndyn.experiments import EXPERIMENTS
    from attndyn.sweep import parse_spec, read_rows, run_sweep

    spec = parse_spec({"experiment": "good-triple", "grid": {"d": [args.d]}, "monte_carlo": {"seeds": args.cells}})
    exp = EXPERIMENTS["good-triple"]
    tmp = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    results: dict = {
        "script": "benchmarks/bench_sweep.py",
        "command": "python benchmarks/bench_sweep.py " + " ".join(sys.argv[1:]),
        "cores": os.cpu_count(),
        "d": args.d,
        "cells": args.cells,
        "chunks": args.chunks,
        "load_before": os.getloadavg(),
        "load1_before": os.getloadavg()[0],
    }
    quiet = lambda m: None  # noqa: E731
    try:
        with threadpool_limits(1):
            exp(0, spec.params({"d": args.d}))  # warm-up
            t0 = time.perf_counter()
            for c in spec.cells():
                exp(c.seed, spec.params(c.point))
            plain = time.perf_counter() - t0
        results["plain_loop_s"] = plain
        t0 = time.perf_counter()
        run_sweep(spec, tmp / "serial", workers=0, log=quiet)
        results["serial_runner_s"] = time.perf_counter() - t0
        results["serial_cells_s"] = float(read_rows(tmp / "serial")["seconds"].sum())

        from distributed import Client, LocalCluster

        for workers in (1, 2):
            t0 = time.perf_counter()
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=":0")
            client = Client(cluster)
            client.wait_for_workers(workers)
            start = time.perf_counter() - t0
            warm = parse_spec({"experiment": "good-triple", "grid": {"d": [8]}, "monte_carlo": {"seeds": 4 * workers}})
            t0 = time.perf_counter()
            run_sweep(warm, tmp / f"warm{workers}", client=client, chunk=1, log=quiet)  # imports attndyn in each worker
            first = time.perf_counter() - t0
            results[f"dask{workers}"] = {
                "cluster_start_s": start,
                "first_tasks_s": first,
                "by_chunk": {},
                "cells_s": {},
            }
            for chunk in args.chunks:
                t0 = time.perf_counter()
                run_sweep(spec, tmp / f"dask{workers}_{chunk}", client=client, chunk=chunk, log=quiet)
                results[f"dask{workers}"]["by_chunk"][chunk] = time.perf_counter() - t0
                results[f"dask{workers}"]["cells_s"][chunk] = float(
                    read_rows(tmp / f"dask{workers}_{chunk}")["seconds"].sum()
                )
            client.close()
            cluster.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    results["load_after"] = os.getloadavg()
    results["load1_after"] = results["load_after"][0]
    n = args.cells
    cases = results["cases"] = {}
    print(
        f"good-triple, d = {args.d}, {n} cells; load average before {results['load_before'][0]:.2f}, "
        f"after {results['load_after'][0]:.2f}"
    )
    print(
        f"{'case':28s} {'wall s':>8s} {'cells/s':>9s} {'cell ms':>8s} {'ms/cell vs loop':>16s} {'ms/cell within':>15s}"
    )

    def row(name: str, s: float, over: str, cells_s: float | None, workers: int, key: str) -> None:
        cell = "-" if cells_s is None else f"{cells_s / n * 1e3:.3f}"
        within = "-" if cells_s is None else f"{(s * workers - cells_s) / n * 1e3:.3f}"
        print(f"{name:28s} {s:8.2f} {n / s:9.1f} {cell:>8s} {over:>16s} {within:>15s}")
        cases[key] = {
            "case": name,
            "wall_s": s,
            "cells_per_s": n / s,
            "cell_ms": cells_s / n * 1e3,
            "overhead_vs_loop_ms": None if over == "-" else float(over),
            "overhead_within_ms": (s * workers - cells_s) / n * 1e3,
        }

    row("plain loop", plain, "-", plain, 1, "plain")
    row(
        "serial runner (workers=0)",
        results["serial_runner_s"],
        f"{(results['serial_runner_s'] - plain) / n * 1e3:.3f}",
        results["serial_cells_s"],
        1,
        "serial",
    )
    for workers in (1, 2):
        r = results[f"dask{workers}"]
        for chunk, s in r["by_chunk"].items():
            over = (s - plain) / n * 1e3 if workers == 1 else (s - plain / 2) / n * 1e3
            row(
                f"dask {workers} worker{'s' if workers > 1 else ''}, chunk {chunk}",
                s,
                f"{over:.3f}",
                r["cells_s"][chunk],
                workers,
                f"dask{workers}_chunk{chunk}",
            )
        print(
            f"  (cluster start {r['cluster_start_s']:.1f} s; first tasks, importing attndyn: {r['first_tasks_s']:.1f} s)"
        )
    print(
        "cell ms: mean time inside the cell function; vs loop: 1 worker (wall - plain) / cells, 2 workers "
        "(wall - plain / 2) / cells; within: (wall x workers - cell time) / cells"
    )
    if args.json:
        from attndyn._io import write_json

        write_json(args.json, results)


if __name__ == "__main__":
    main()
