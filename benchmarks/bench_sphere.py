"""Phase diagrams on the sphere: attndyn against a CPU port of the authors' step loop, side by side.

    python benchmarks/bench_sphere.py                    # reduced grid, about a minute on one core
    python benchmarks/bench_sphere.py --full             # the authors' grid: 2,048 systems x 90 betas (hours on a CPU)
    python benchmarks/bench_sphere.py --json docs/results/bench_sphere.json

Both sides run the same systems (the same initial tokens, drawn once), the same post-LN step
x <- N(x + h softmax(beta x x^T) x) with h = 0.1 up to t = 30 (Q = K = V = I, SA), in float64 on one thread, and
read the same statistics at the same checkpoints (the authors' 200 times in [0, 30]): the fraction of pairs
i != j with <x_i, x_j> > 0.999 pooled over the systems of a beta, and the median over systems of the rank of the
thresholded Gram matrix 1[<x_i, x_j> > 0.9999].

- "authors' loop": a naive port, written for this benchmark, of the loop of borjanG/2023-transformers-rotf
  phase-diagrams.py (its class simu_xform.step_1 and check_stats/count_clusters) to the CPU: one beta at a time,
  the systems of a beta as one batch, the cluster count one system at a time in a Python loop;
- attndyn: attndyn.sphere.phase_diagram, every beta in one batch, chunked, the ranks batched.

Also timed: the n^2 exponentials per system and step alone (torch.exp on the same number of entries), the
floor the issue names, and attndyn with 2 checkpoints instead of 200 (the steps without most of the statistics).

Equal accuracy (skipped with --no-accuracy): on a smaller grid (--accuracy-systems x --accuracy-betas), the
statistic's error against the continuous SA flow (rk4 with step 0.01, the reference) of the authors' post-LN step
0.1 and of the fixed-step schemes of attndyn.solvers at the steps of CANDIDATES (a checkpoint is read at the first
grid step at or after it, for every scheme); the mean absolute error of the fraction of clustered pairs over the
grid. Two runs are then timed on the main grid against the authors' loop: the largest rk4 step whose error is at
most the post-LN error, and the candidate as accurate with the fewest field evaluations (stages x steps).

Wall and CPU seconds are both recorded: on a machine shared with other jobs the process's CPU time (one thread)
moves less with the load than the wall time. Prints a table and writes JSON (--json) with the load, the cores and
the processor.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from _machine import processor  # benchmarks/_machine.py (this script's folder is on the path)


def authors_loop(x0: np.ndarray, betas: np.ndarray, *, step: float, time_max: float, checkpoints: int):
    """The naive port: per beta, step the batch of systems and read the statistics when the accumulated time
    passes the next checkpoint (their loop adds eta to a float clock; the checkpoints are linspace(0, T, C))."""
    nb, S, n, _ = x0.shape
    times = torch.linspace(0, time_max, checkpoints, dtype=torch.float64)
    dens = np.zeros((nb, checkpoints))
    clust = np.zeros((nb, checkpoints))
    mask = ~torch.eye(n, dtype=torch.bool).expand(S, -1, -1)
    for bi, beta in enumerate(betas):
        M = torch.tensor(x0[bi])
        cur, c = 0.0, 0
        while True:
            SM = torch.matmul(M, M.transpose(1, 2))
            SM *= float(beta)
            SM = torch.nn.functional.softmax(SM, dim=2)
            M2 = torch.matmul(SM, M)
            M2 *= step
            M2 += M
            M = torch.nn.functional.normalize(M2, dim=2)
            cur += step
            if cur >= float(times[c]):
                IP = torch.matmul(M, M.transpose(1, 2))
                d = float((IP[mask] > 0.999).sum()) / IP[mask].numel()
                ranks = [int(torch.linalg.matrix_rank((IP[i] > 0.9999).to(torch.float64))) for i in range(S)]
                med = float(np.median(ranks))
                while c < checkpoints and cur >= float(times[c]):
                    dens[bi, c], clust[bi, c] = d, med
                    c += 1
                if c >= checkpoints:
                    break
            if cur >= time_max:
                break
    return dens, clust


def exp_floor(entries: int, steps: int, chunk: int = 1 << 20) -> tuple[float, float]:
    """Wall and CPU seconds for ``steps`` passes of torch.exp over ``entries`` float64 numbers, in cache-sized
    chunks."""
    a = torch.randn(min(entries, chunk), dtype=torch.float64)
    out = torch.empty_like(a)
    reps = math.ceil(entries / a.numel())
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        for _ in range(reps):
            torch.exp(a, out=out)
    return time.perf_counter() - t0, time.process_time() - c0


def equal_accuracy(args: argparse.Namespace, betas: np.ndarray, t_authors: float, c_authors: float) -> dict:
    """Errors of the statistic against the continuous flow; the timings of the largest rk4 step as accurate and of
    the candidate as accurate with the fewest field evaluations."""
    from attndyn.solvers import TABLEAUS
    from attndyn.sphere import phase_diagram

    grid = np.linspace(0.1, 9.0, args.accuracy_betas)
    common = dict(systems=args.accuracy_systems, n=args.n, d=args.d, betas=grid, time=args.time, seed=args.seed + 1)
    common["checkpoints"] = args.checkpoints
    ref = phase_diagram(method="rk4", step=0.01, **common).fraction
    post = float(np.abs(phase_diagram(method="discrete", step=args.step, **common).fraction - ref).mean())
    errors = {
        m: [float(np.abs(phase_diagram(method=m, step=h, **common).fraction - ref).mean()) for h in steps]
        for m, steps in CANDIDATES.items()
    }

    def evaluations(m: str, h: float) -> int:  # field evaluations over [0, T]: stages x steps
        return len(TABLEAUS[m].b) * math.ceil(args.time / h - 1e-9)

    ok = [(m, h, e) for m, steps in CANDIDATES.items() for h, e in zip(steps, errors[m]) if e <= post]
    rk4_ok = [h for m, h, _ in ok if m == "rk4"]
    out: dict = {
        "systems": args.accuracy_systems, "betas": args.accuracy_betas, "reference": "rk4, step 0.01",
        "post_ln_error": post, "post_ln_evaluations": math.ceil(args.time / args.step - 1e-9),
        "rk4_steps": list(CANDIDATES["rk4"]), "rk4_errors": errors["rk4"],
        "rk4_step_as_accurate": max(rk4_ok) if rk4_ok else None,
        "schemes": {
            m: {"steps": list(steps), "errors": errors[m], "evaluations": [evaluations(m, h) for h in steps]}
            for m, steps in CANDIDATES.items()
        },
    }  # fmt: skip

    def timed(method: str, step: float) -> tuple[float, float]:
        t0, c0 = time.perf_counter(), time.process_time()
        phase_diagram(
            systems=args.systems, n=args.n, d=args.d, betas=betas, time=args.time, step=step, method=method,
            checkpoints=args.checkpoints, seed=args.seed,
        )  # fmt: skip
        return time.perf_counter() - t0, time.process_time() - c0

    if rk4_ok:
        out["attndyn_rk4_s"], out["attndyn_rk4_cpu_s"] = timed("rk4", max(rk4_ok))
        out["speedup_equal_accuracy_rk4"] = t_authors / out["attndyn_rk4_s"]
        out["speedup_equal_accuracy_rk4_cpu"] = c_authors / out["attndyn_rk4_cpu_s"]
    if ok:
        m, h, e = min(ok, key=lambda c: (evaluations(c[0], c[1]), c[2]))
        out["as_accurate"] = {"method": m, "step": h, "error": e, "evaluations": evaluations(m, h)}
        out["attndyn_as_accurate_s"], out["attndyn_as_accurate_cpu_s"] = timed(m, h)
        out["speedup_equal_accuracy"] = t_authors / out["attndyn_as_accurate_s"]
        out["speedup_equal_accuracy_cpu"] = c_authors / out["attndyn_as_accurate_cpu_s"]
    return out


# The fixed-step schemes and steps whose accuracy is measured: rk4 on a fine grid up to the post-LN error, and
# the second-order schemes (two evaluations a step) and Euler (one) around theirs.
CANDIDATES: dict[str, tuple[float, ...]] = {
    "rk4": (0.2, 0.3, 0.5, 0.6, 0.75, 0.9, 1.0),
    "midpoint": (0.5, 0.75, 1.0, 1.2),
    "heun": (0.5, 0.75, 0.9, 1.0),
    "euler": (0.2, 0.3, 0.4, 0.5),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--systems", type=int, default=64, help="systems per beta (authors: 2048)")
    ap.add_argument("--betas", type=int, default=18, help="betas in [0.1, 9] (authors: 90)")
    ap.add_argument("--n", type=int, default=32)
    ap.add_argument("--d", type=int, default=2)
    ap.add_argument("--time", type=float, default=30.0)
    ap.add_argument("--step", type=float, default=0.1)
    ap.add_argument("--checkpoints", type=int, default=200)
    ap.add_argument("--full", action="store_true", help="the authors' grid: 2048 systems x 90 betas")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--no-accuracy", action="store_true", help="skip the equal-accuracy comparison")
    ap.add_argument("--accuracy-systems", type=int, default=16)
    ap.add_argument("--accuracy-betas", type=int, default=6)
    args = ap.parse_args()
    if args.full:
        args.systems, args.betas = 2048, 90
    torch.set_num_threads(1)

    from attndyn.sphere import phase_diagram

    betas = np.linspace(0.1, 9.0, args.betas)
    rng = np.random.default_rng(args.seed)  # the same draws phase_diagram makes from this seed
    x0 = rng.standard_normal((args.betas, args.systems, args.n, args.d))
    x0 /= np.linalg.norm(x0, axis=-1, keepdims=True)
    steps = math.ceil(args.time / args.step - 1e-9)
    load_before = os.getloadavg()

    t0, c0 = time.perf_counter(), time.process_time()
    dens, clust = authors_loop(x0, betas, step=args.step, time_max=args.time, checkpoints=args.checkpoints)
    t_authors, c_authors = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    pd = phase_diagram(
        systems=args.systems, n=args.n, d=args.d, betas=betas, time=args.time, step=args.step,
        checkpoints=args.checkpoints, seed=args.seed,
    )  # fmt: skip
    t_attndyn, c_attndyn = time.perf_counter() - t0, time.process_time() - c0
    # The same steps with the statistics read twice (t = 0 and T): about the cost of the steps alone.
    t0, c0 = time.perf_counter(), time.process_time()
    phase_diagram(
        systems=args.systems, n=args.n, d=args.d, betas=betas, time=args.time, step=args.step, checkpoints=2,
        seed=args.seed,
    )  # fmt: skip
    t_steps, c_steps = time.perf_counter() - t0, time.process_time() - c0
    floor, floor_cpu = exp_floor(args.systems * args.betas * args.n * args.n, steps)
    # Monte Carlo error of a pooled fraction: the systems are independent, the pairs of one system are not, so
    # the standard error is taken over systems: sqrt(p (1 - p) / systems) bounds it (a fraction per system in [0, 1]).
    se = np.sqrt(np.maximum(dens * (1 - dens), 1e-12) / args.systems)
    diff = np.abs(pd.fraction - dens)
    res = {
        "script": "benchmarks/bench_sphere.py",
        "command": "python benchmarks/bench_sphere.py " + " ".join(sys.argv[1:]),
        "cores": os.cpu_count(),
        "threads": 1,
        "processor": processor(),
        "torch": torch.__version__,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "systems": args.systems, "betas": args.betas, "n": args.n, "d": args.d, "time": args.time,
        "step": args.step, "steps": steps, "checkpoints": args.checkpoints, "dtype": "float64",
        "authors_s": t_authors,
        "attndyn_s": t_attndyn,
        "speedup": t_authors / t_attndyn,
        "authors_cpu_s": c_authors,
        "attndyn_cpu_s": c_attndyn,
        "speedup_cpu": c_authors / c_attndyn,
        "exp_floor_s": floor,
        "attndyn_over_exp_floor": t_attndyn / floor,
        "exp_floor_cpu_s": floor_cpu,
        "attndyn_over_exp_floor_cpu": c_attndyn / floor_cpu,
        "attndyn_two_checkpoints_s": t_steps,
        "attndyn_two_checkpoints_cpu_s": c_steps,
        "steps_over_exp_floor_cpu": c_steps / floor_cpu,
        "fraction_max_abs_diff": float(diff.max()),
        "fraction_max_diff_in_se": float((diff / se).max()),
        "clusters_max_abs_diff": float(np.abs(pd.clusters - clust).max()),
        "clusters_cells_differing": int((pd.clusters != clust).sum()),
        "cells": int(dens.size),
    }  # fmt: skip
    if not args.no_accuracy:
        res["accuracy"] = equal_accuracy(args, betas, t_authors, c_authors)
    for k, v in res.items():
        print(f"{k:28s} {v}")
    if args.json is not None:
        from attndyn._io import write_json

        write_json(args.json, res)


if __name__ == "__main__":
    main()
