"""Core engine benchmark: attndyn against the naive per-token loop, on 1 and 2 threads, in one run.

    python benchmarks/bench_core.py                  # about 3-4 minutes on 2 cores
    python benchmarks/bench_core.py --full-naive     # also time the naive loops in full (adds ~10 min)
    python benchmarks/bench_core.py --threads 1 4    # other thread counts, side by side
    python benchmarks/bench_core.py --case hardmax_3000x128x2   # one case

Every case runs once per thread count (torch and numba pinned to it), each in a fresh
subprocess so that its peak resident memory is its own; the table shows the wall times and the
ratios to the naive loop side by side, and the gain of the last thread count over the first.

The naive loop has the structure of the published experiment code: per sequence, per layer, per
token, the inner products of that token with every token (numpy), the maximum, the ties, the
mean. By default it is timed on a slice of the batch and scaled linearly to the full batch (its
cost per sequence is constant); the printout says which. Each case runs in a fresh subprocess so
that its peak resident memory is its own.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

# ---- naive references ----------------------------------------------------------------------


def naive_hardmax(Z: np.ndarray, alpha: float, layers: int, A: np.ndarray) -> np.ndarray:
    coef = alpha / (1 + alpha)
    out = Z.copy()
    for b in range(Z.shape[0]):
        z = out[b]
        for _ in range(layers):
            new = np.empty_like(z)
            for i in range(z.shape[0]):
                s = z @ (A @ z[i])  # inner product with every token
                follow = np.flatnonzero(s == s.max())
                new[i] = z[i] + coef * (z[follow].mean(axis=0) - z[i])
            z = new
        out[b] = z
    return out


def naive_softmax_rk4(x: np.ndarray, dt: float, steps: int) -> np.ndarray:
    """The published triple loop: for each token i, for each j, for each coordinate."""

    def field(x):
        n, d = x.shape
        v = np.zeros_like(x)
        for i in range(n):
            s = [sum(x[i, c] * x[j, c] for c in range(d)) for j in range(n)]
            m = max(s)
            e = [math.exp(t - m) for t in s]
            tot = sum(e)
            for j in range(n):
                for c in range(d):
                    v[i, c] += e[j] / tot * x[j, c]
        return v

    for _ in range(steps):
        k1 = field(x)
        k2 = field(x + dt / 2 * k1)
        k3 = field(x + dt / 2 * k2)
        k4 = field(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x


# ---- cases (each runs in its own process) ----------------------------------------------------


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def case_hardmax(B: int, n: int, d: int, layers: int, naive_slice: int) -> dict:
    import torch

    import attndyn

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((B, n, d))
    A = np.eye(d)
    attndyn.hardmax(Z[:2], alpha=0.5, layers=1, check_hypotheses=False)  # compile / warm up
    base = peak_mb()
    best, cpu = math.inf, math.inf
    spent, repeats = 0.0, 0
    while repeats < 3 or (spent < 2.0 and repeats < 15):  # best of at least 3, more for short cases (noise)
        t0, c0 = time.perf_counter(), time.process_time()
        traj = attndyn.hardmax(Z, alpha=0.5, layers=layers, save=attndyn.SaveAt(every=None), check_hypotheses=False)
        wall = time.perf_counter() - t0
        best, cpu = min(best, wall), min(cpu, time.process_time() - c0)
        spent, repeats = spent + wall, repeats + 1
    mem = peak_mb() - base
    sl = min(naive_slice, B)
    t0, c0 = time.perf_counter(), time.process_time()
    ref = naive_hardmax(Z[:sl], 0.5, layers, A)
    naive = (time.perf_counter() - t0) * B / sl
    naive_cpu = (time.process_time() - c0) * B / sl
    err = float(np.abs(traj.final_tokens.numpy()[:sl] - ref).max())
    return {
        "engine_s": best,
        "engine_cpu_s": cpu,
        "naive_s": naive,
        "naive_cpu_s": naive_cpu,
        "naive_measured_on": sl,
        "max_abs_diff": err,
        "engine_extra_peak_mb": mem,
        "threads": torch.get_num_threads(),
    }


def case_softmax_rk4(n: int, d: int, steps: int, naive_steps: int) -> dict:
    import attndyn

    x = np.random.default_rng(0).standard_normal((n, d))
    attndyn.softmax(x, time=0.1, step=0.1)
    times, cpus = [], []
    for _ in range(20):
        t0, c0 = time.perf_counter(), time.process_time()
        traj = attndyn.softmax(x, time=steps * 0.1, method="rk4", step=0.1, save=attndyn.SaveAt(every=None))
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    t0 = time.perf_counter()
    ref = naive_softmax_rk4(x, 0.1, naive_steps)
    naive = (time.perf_counter() - t0) * steps / naive_steps
    short = attndyn.softmax(x, time=naive_steps * 0.1, method="rk4", step=0.1, save=attndyn.SaveAt(every=None))
    err = float(np.abs(short.final_tokens.numpy() - ref).max())
    return {
        "engine_s": float(np.median(times)),
        "engine_min_s": min(times),
        "engine_cpu_s": float(np.median(cpus)),
        "naive_s": naive,
        "naive_measured_steps": naive_steps,
        "max_abs_diff": err,
        "final_ok": bool(np.isfinite(traj.final_tokens.numpy()).all()),
    }


def case_softmax_big(n: int, d: int, steps: int) -> dict:
    import attndyn

    x = np.random.default_rng(0).standard_normal((n, d)) / math.sqrt(d)
    base = peak_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    traj = attndyn.softmax(x, time=steps * 0.05, method="euler", step=0.05, save=attndyn.SaveAt(every=None))
    return {
        "engine_s": time.perf_counter() - t0,
        "engine_cpu_s": time.process_time() - c0,
        "peak_mb_total": peak_mb(),
        "extra_peak_mb": peak_mb() - base,
        "finite": bool(np.isfinite(traj.final_tokens.numpy()).all()),
    }


CASES = {
    "hardmax_3000x128x2": lambda a: case_hardmax(3000, 128, 2, 8, 3000 if a.full_naive else 300),
    "hardmax_15000x128x2": lambda a: case_hardmax(15000, 128, 2, 8, 15000 if a.full_naive else 300),
    "hardmax_1000x512x16": lambda a: case_hardmax(1000, 512, 16, 8, 1000 if a.full_naive else 10),
    "softmax_rk4_40x3": lambda a: case_softmax_rk4(40, 3, 100, 100 if a.full_naive else 2),
    "softmax_euler_4096x64": lambda a: case_softmax_big(4096, 64, 20),
}


def run_case(name: str, threads: int, full_naive: bool) -> dict:
    cmd = [sys.executable, __file__, "--run", name, "--threads", str(threads)] + (
        ["--full-naive"] if full_naive else []
    )
    load = os.getloadavg()[0]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    row = json.loads(out)
    row["load_before"] = load
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--full-naive", action="store_true", help="time the naive loops in full instead of on a slice")
    p.add_argument(
        "--threads", type=int, nargs="+", default=[1, 2], help="torch and numba thread counts to compare (default: 1 2)"
    )
    p.add_argument("--case", action="append", choices=sorted(CASES), help="run only this case (repeatable)")
    p.add_argument("--run", help=argparse.SUPPRESS)  # internal: one case in this process
    p.add_argument("--json", help="also write every row, the ratios and the load to this JSON file")
    a = p.parse_args()
    if a.run:
        import numba
        import torch

        torch.set_num_threads(a.threads[0])
        numba.set_num_threads(min(a.threads[0], numba.config.NUMBA_NUM_THREADS))
        print(json.dumps(CASES[a.run](a)))
        return
    names = a.case or list(CASES)
    rows: dict[str, dict[int, dict]] = {}
    print(f"machine: {os.cpu_count()} cores; load before: {os.getloadavg()[0]:.2f}", flush=True)
    for name in names:
        rows[name] = {}
        for t in a.threads:
            rows[name][t] = run_case(name, t, a.full_naive)
            print(f"{name} threads={t}: {rows[name][t]}", flush=True)
    print()
    head = f"{'case':<24}" + "".join(f"{f'{t} thr wall':>13}{'ratio':>8}" for t in a.threads)
    head += f"{f'{a.threads[-1]}/{a.threads[0]} thr':>10}  notes"
    print(head)
    for name, by in rows.items():
        line = f"{name:<24}"
        for t in a.threads:
            r = by[t]
            naive = by[a.threads[0]].get("naive_s")  # the naive loop is single-threaded: one timing
            line += f"{r['engine_s'] * 1e3:>11.1f}ms" + (f"{naive / r['engine_s']:>7.0f}x" if naive else f"{'-':>8}")
        first, last = by[a.threads[0]], by[a.threads[-1]]
        line += f"{first['engine_s'] / last['engine_s']:>9.2f}x"
        r = first
        note = []
        if "naive_s" in r:
            note.append(
                f"naive {r['naive_s']:.1f} s"
                + (
                    f" (timed on {r['naive_measured_on']} seqs, scaled)"
                    if "naive_measured_on" in r
                    else f" (timed on {r['naive_measured_steps']} steps, scaled)"
                )
            )
        if "naive_cpu_s" in r:  # CPU times: less sensitive to the machine's other work
            note.append(f"CPU-time ratio {r['naive_cpu_s'] / r['engine_cpu_s']:.0f}x on {a.threads[0]} thr")
        if "max_abs_diff" in r:
            note.append(f"max |diff| {max(by[t]['max_abs_diff'] for t in a.threads):.1e}")
        for k in ("engine_extra_peak_mb", "extra_peak_mb"):
            if k in r:
                note.append(f"peak +{r[k]:.0f} MB")
        note.append("load " + "/".join(f"{by[t]['load_before']:.1f}" for t in a.threads))
        print(line + "  " + "; ".join(note))
    print("\nwall = best of the repeats (median for softmax RK4); ratio = naive loop time / wall; load = 1-min")
    if a.json:
        cases = {}
        for name, by in rows.items():
            naive = by[a.threads[0]].get("naive_s")
            cases[name] = {
                "threads": {str(t): by[t] for t in a.threads},
                "wall_ms": {str(t): 1e3 * by[t]["engine_s"] for t in a.threads},
                "ratio": {str(t): naive / by[t]["engine_s"] for t in a.threads} if naive else None,
                "speedup": by[a.threads[0]]["engine_s"] / by[a.threads[-1]]["engine_s"],
            }
        record = {
            "script": "benchmarks/bench_core.py",
            "command": "python benchmarks/bench_core.py " + " ".join(sys.argv[1:]),
            "cores": os.cpu_count(),
            "cases": cases,
        }
        tmp = Path(a.json).with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(tmp, a.json)
    print("load average before each run (the machine's other work shares the cores).")


if __name__ == "__main__":
    main()
