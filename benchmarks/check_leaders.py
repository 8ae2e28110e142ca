"""Phantom-leader check (issue "tokens that lead only inside rounding error"), over many seeded runs.

    python benchmarks/check_leaders.py                  # 1,000 instances x 500 layers (~10 min on 2 cores)
    python benchmarks/check_leaders.py --instances 100  # a quicker look
    python benchmarks/check_leaders.py --jobs 2 --json docs/results/check_leaders.json  # the docs' numbers

Each instance: n = 6..13 tokens in d = 2..5 (cycling), a random SPD A, alpha in {0.5, 1, 2}, 500
layers. It runs the compiled kernel, the dense torch path and a plain per-token Python loop (with
another order of operations), and prints

* how many reported leaders first lead at a layer where they lie within the rounding bound of
  another token (must be 0: margin > bound implies |A z_i| |z_i - z_j| > bound for every j);
* how many instances have the same leader sets (and first layers) on all three paths;
* how many layers were decided by rounding (listed apart, never reported as leaders), and how
  many instances the old rule (C_i = {i} at any layer, no margin) would have given a leader that
  emerged after layer 2.
"""

from __future__ import annotations

import argparse
import importlib
import multiprocessing
import os
import resource
import sys
import time
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

import attndyn
from attndyn import margins

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "core"))
import naive  # noqa: E402  (the test suite's deliberately naive loop)

hardmax_module = importlib.import_module("attndyn._hardmax")


def instance(seed: int) -> tuple[np.ndarray, np.ndarray, int, float]:
    rng = np.random.default_rng(seed)
    d = 2 + seed % 4
    n = int(rng.integers(6, 14))
    M = rng.standard_normal((d, d))
    A = M @ M.T + 0.1 * np.eye(d)
    return rng.standard_normal((n, d)), A, d, [0.5, 1.0, 2.0][seed % 3]


def check(first: int, instances: int, layers: int, naive_n: int | None) -> dict:
    """The counts over seeds first .. first + instances - 1 (one process)."""
    torch.set_num_threads(1)
    warnings.simplefilter("ignore", attndyn.HypothesisWarning)
    too_close = agree = naive_checked = naive_agree = events = old_late = 0
    for seed in range(first, first + instances):
        z, A, d, alpha = instance(seed)
        traj = attndyn.hardmax(z, alpha=alpha, layers=layers, A=A)
        lead = attndyn.leaders(traj)
        At = torch.from_numpy(A)
        for i, k in zip(lead.indices, lead.since):
            zk = traj.ys[k, 0]
            _, bound = margins.leader_margins(zk[None], At, None, torch.tensor([0]), torch.tensor([i]))
            gap = (zk - zk[i]).norm(dim=1) * (At @ zk[i]).norm()
            gap[i] = torch.inf
            too_close += int(float(gap.min()) <= float(bound[0]))
        events += len(lead.rounding)
        old_late += int(any(ev.layer > 2 for ev in lead.rounding))
        orig = hardmax_module._use_kernel
        hardmax_module._use_kernel = lambda *a: False
        try:
            dense = attndyn.leaders(attndyn.hardmax(z, alpha=alpha, layers=layers, A=A))
        finally:
            hardmax_module._use_kernel = orig
        same = dense.indices == lead.indices and dense.since == lead.since
        if naive_n is None or seed - first < naive_n:
            naive_checked += 1
            plain = naive.hardmax_leaders(z.tolist(), alpha, layers, A.tolist())
            ok = plain == dict(zip(lead.indices, lead.since))
            naive_agree += int(ok)
            same = same and ok
        agree += int(same)
    return {
        "too_close": too_close,
        "agree": agree,
        "naive_checked": naive_checked,
        "naive_agree": naive_agree,
        "rounding_events": events,
        "old_rule_late": old_late,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--instances", type=int, default=1000)
    ap.add_argument("--first", type=int, default=0, help="seed of the first instance (to split the work)")
    ap.add_argument("--layers", type=int, default=500)
    ap.add_argument("--naive", type=int, default=None, help="instances also run with the plain loop (default all)")
    ap.add_argument("--jobs", type=int, default=1, help="processes, each taking a contiguous share of the seeds")
    ap.add_argument("--json", type=Path, default=None, help="also write the counts, time and load here")
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    cpu0 = time.process_time()
    jobs = max(1, min(args.jobs, args.instances))
    bounds = [args.first + args.instances * j // jobs for j in range(jobs + 1)]
    shares = [
        (a, b - a, args.layers, None if args.naive is None else max(0, min(b - a, args.naive - (a - args.first))))
        for a, b in zip(bounds, bounds[1:])
    ]
    if jobs == 1:
        parts = [check(*shares[0])]
    else:
        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(jobs, mp_context=ctx) as pool:
            parts = list(pool.map(check, *zip(*shares)))
    dt = time.perf_counter() - t0
    cpu = time.process_time() - cpu0
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    tot = {k: sum(p[k] for p in parts) for k in parts[0]}
    load_after = os.getloadavg()[0]
    print(
        f"instances: {args.instances} (seeds {args.first}..{args.first + args.instances - 1}), layers: {args.layers}, "
        f"{jobs} process{'es' if jobs > 1 else ''}, time {dt:.0f} s, load {load_before:.2f} -> {load_after:.2f}"
    )
    print(f"reported leaders within the rounding bound of another token at their first layer: {tot['too_close']}")
    print(
        f"instances whose leader sets agree on kernel, torch and plain loop: {tot['agree']}/{args.instances}"
        f" (plain loop run on {tot['naive_checked']}, agreeing on {tot['naive_agree']})"
    )
    print(
        f"layers decided by rounding (not reported): {tot['rounding_events']}, in instances where the old rule "
        f"would have reported a late leader: {tot['old_rule_late']}"
    )
    if args.json:
        from attndyn._io import write_json

        write_json(
            args.json,
            {
                "script": "benchmarks/check_leaders.py",
                "command": "python benchmarks/check_leaders.py " + " ".join(sys.argv[1:]),
                "cores": os.cpu_count(),
                "instances": args.instances,
                "first": args.first,
                "layers": args.layers,
                "jobs": jobs,
                **tot,
                "wall_s": round(dt, 2),
                "cpu_s": round(cpu + ch.ru_utime + ch.ru_stime, 2),
                "load1_before": round(load_before, 2),
                "load1_after": round(load_after, 2),
            },
        )


if __name__ == "__main__":
    main()
