"""Core engine benchmark: attndyn against the naive per-token loop, in one run.

    python benchmarks/bench_core.py            # about 2-3 minutes on 2 cores
    python benchmarks/bench_core.py --full-naive   # also time the naive loops in full (adds ~10 min)
    python benchmarks/bench_core.py --threads 1    # one thread (a fair figure on a busy machine)

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
    for _ in range(3):
        t0, c0 = time.perf_counter(), time.process_time()
        traj = attndyn.hardmax(Z, alpha=0.5, layers=layers, save=attndyn.SaveAt(every=None), check_hypotheses=False)
        best, cpu = min(best, time.perf_counter() - t0), min(cpu, time.process_time() - c0)
    mem = peak_mb() - base
    sl = min(naive_slice, B)
    t0 = time.perf_counter()
    ref = naive_hardmax(Z[:sl], 0.5, layers, A)
    naive = (time.perf_counter() - t0) * B / sl
    err = float(np.abs(traj.final_tokens.numpy()[:sl] - ref).max())
    return {"engine_s": best, "engine_cpu_s": cpu, "naive_s": naive, "naive_measured_on": sl, "max_abs_diff": err,
            "engine_extra_peak_mb": mem, "threads": torch.get_num_threads()}


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
    return {"engine_s": float(np.median(times)), "engine_min_s": min(times), "engine_cpu_s": float(np.median(cpus)),
            "naive_s": naive,
            "naive_measured_steps": naive_steps, "max_abs_diff": err, "final_ok": bool(np.isfinite(traj.final_tokens.numpy()).all())}


def case_softmax_big(n: int, d: int, steps: int) -> dict:
    import attndyn

    x = np.random.default_rng(0).standard_normal((n, d)) / math.sqrt(d)
    base = peak_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    traj = attndyn.softmax(x, time=steps * 0.05, method="euler", step=0.05, save=attndyn.SaveAt(every=None))
    return {"engine_s": time.perf_counter() - t0, "engine_cpu_s": time.process_time() - c0, "peak_mb_total": peak_mb(), "extra_peak_mb": peak_mb() - base,
            "finite": bool(np.isfinite(traj.final_tokens.numpy()).all())}


CASES = {
    "hardmax_15000x128x2": lambda a: case_hardmax(15000, 128, 2, 8, 15000 if a.full_naive else 300),
    "hardmax_1000x512x16": lambda a: case_hardmax(1000, 512, 16, 8, 1000 if a.full_naive else 10),
    "softmax_rk4_40x3": lambda a: case_softmax_rk4(40, 3, 100, 100 if a.full_naive else 2),
    "softmax_euler_4096x64": lambda a: case_softmax_big(4096, 64, 20),
}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--full-naive", action="store_true", help="time the naive loops in full instead of on a slice")
    p.add_argument("--threads", type=int, default=0,
                   help="torch and numba threads per case (default: their defaults, all cores)")
    p.add_argument("--case", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.case:
        if a.threads:
            import numba
            import torch

            torch.set_num_threads(a.threads)
            numba.set_num_threads(a.threads)
        print(json.dumps(CASES[a.case](a)))
        return
    rows = {}
    for name in CASES:
        cmd = [sys.executable, __file__, "--case", name, "--threads", str(a.threads)]
        cmd += ["--full-naive"] if a.full_naive else []
        load = os.getloadavg()[0]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
        rows[name] = json.loads(out)
        rows[name]["load_before"] = load
        print(f"{name}: {rows[name]}", flush=True)
    print()
    print(f"{'case':<24}{'attndyn wall':>13}{'cpu':>10}{'naive loop':>13}{'speed-up':>10}  notes")
    for name, r in rows.items():
        naive = r.get("naive_s")
        ratio = f"{naive / r['engine_s']:.0f}x" if naive else "-"
        nv = f"{naive:.1f} s" if naive else "-"
        note = []
        if "naive_measured_on" in r:
            note.append(f"naive timed on {r['naive_measured_on']} seqs, scaled")
        if "naive_measured_steps" in r:
            note.append(f"naive timed on {r['naive_measured_steps']} steps, scaled")
        if "max_abs_diff" in r:
            note.append(f"max |diff| {r['max_abs_diff']:.1e}")
        for k in ("engine_extra_peak_mb", "extra_peak_mb"):
            if k in r:
                note.append(f"peak +{r[k]:.0f} MB")
        if "peak_mb_total" in r:
            note.append(f"process peak {r['peak_mb_total']:.0f} MB")
        note.append(f"load {r['load_before']:.1f}")
        print(f"{name:<24}{r['engine_s'] * 1e3:>11.1f}ms{r['engine_cpu_s'] * 1e3:>8.0f}ms{nv:>13}{ratio:>10}  {'; '.join(note)}")
    print("\ncpu = process CPU time (all threads); on a busy machine wall time exceeds cpu / threads.")


if __name__ == "__main__":
    main()
