"""Leader control study: on seeded random instances, how often is the requested leader set reached
and verified by the exact engine, for SPD A (semidefinite program) and general A (linear program)?

    python benchmarks/bench_control.py --json docs/results/control_vertices.json
    python benchmarks/bench_control.py --targets planted --json docs/results/control_planted.json
    python benchmarks/bench_control.py --instances 20          # a quick look

Instance k (seed + k): n ~ U{8..32} tokens, d ~ U{2..4}, i.i.d. standard normal; the target is a
uniformly random non-empty subset of the vertices of the tokens' convex hull (the tokens that some
general A can make lead on their own, :func:`attndyn.control.leadable`), of size ~ U{1..#vertices}.
Each instance is solved twice, spd=True and spd=False, with alpha = 0.5, 60 layers, 5 rounds.
"Reached" means that :func:`attndyn.leaders` of the engine's run under the returned A is exactly the
target; the script re-simulates every returned A independently with :func:`attndyn.hardmax` to
confirm it. Prints a Markdown table (docs/control.md) and the machine load; ``--json`` writes the
summary that docs/control.md quotes (``summary``: per class of A, by target size, by d) with every
instance's record, the arguments, the wall time, the one-minute load before and after and the core count.
"""

from __future__ import annotations

import argparse
import os
import time
from collections import Counter

import numpy as np

import attndyn
from attndyn._io import write_json
from attndyn.control import choose_A, leadable, never_leads


def instance(seed: int) -> tuple[np.ndarray, list[int]]:
    """The issue's instances: the target is a random subset of the hull's vertices."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(8, 33)), int(rng.integers(2, 5))
    Z = rng.standard_normal((n, d))
    V = leadable(Z)
    k = int(rng.integers(1, len(V) + 1))
    return Z, sorted(int(i) for i in rng.choice(V, size=k, replace=False))


def planted(seed: int, spd: bool, alpha: float, layers: int) -> tuple[np.ndarray, list[int]]:
    """Targets known to be reachable: the leaders of the same tokens under a random matrix
    (M M^T + 0.1 I for SPD, M for general, M with i.i.d. normal entries), restricted to
    targets that lead at layer 0 (hull-interior leaders, which emerge later, are left out)."""
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(8, 33)), int(rng.integers(2, 5))
    Z = rng.standard_normal((n, d))
    M = rng.standard_normal((d, d))
    A = M @ M.T + 0.1 * np.eye(d) if spd else M
    run = attndyn.hardmax(Z, alpha=alpha, layers=layers, A=A, check_hypotheses=False)
    return Z, list(attndyn.leaders(run).indices)


def run(
    instances: int,
    seed: int,
    alpha: float,
    layers: int,
    rounds: int,
    kind: str = "vertices",
    skipped: Counter | None = None,
) -> list[dict]:
    rows = []
    for k in range(instances):
        for spd in (True, False):
            if kind == "vertices":
                Z, S = instance(seed + k)
            else:
                Z, S = planted(seed + k, spd, alpha, layers)
                if not S or any(never_leads(Z, i, spd=spd) is not None for i in S):
                    if skipped is not None:
                        skipped["spd" if spd else "general"] += 1
                    continue
            t0 = time.perf_counter()
            res = choose_A(Z, S, spd=spd, alpha=alpha, layers=layers, rounds=rounds)
            wall = time.perf_counter() - t0
            verified = False
            if res.trajectory is not None:  # independent re-simulation of the returned A
                again = attndyn.hardmax(Z, alpha=alpha, layers=layers, A=res.A, check_hypotheses=False)
                verified = set(attndyn.leaders(again).indices) == set(S)
            rows.append(
                {
                    "instance": k,
                    "n": len(Z),
                    "d": Z.shape[1],
                    "target_size": len(S),
                    "spd": spd,
                    "verdict": res.verdict,
                    "verified": verified and res.reached,
                    "reached_not_verified": bool(res.reached and not verified),
                    "rounds": len(res.rounds),
                    "certified_impossible": bool(res.certificates),
                    "solve_seconds": res.seconds,
                    "wall_seconds": wall,
                    "margin": res.record()["margin"],
                }
            )
        print(f"\rinstance {k + 1}/{instances}", end="", flush=True)
    print()
    return rows


def table(rows: list[dict]) -> str:
    out = [
        "| A | instances | reached & verified | layer 0 only | not reached (of which certified impossible) "
        "| rounds (mean) | solve time per instance: median / 90% / max | wall per instance (mean) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for spd in (True, False):
        r = [x for x in rows if x["spd"] == spd]
        c = Counter(x["verdict"] for x in r)
        ver = sum(x["verified"] for x in r)
        cert = sum(x["certified_impossible"] for x in r)
        t = np.array([x["solve_seconds"] for x in r])
        w = np.array([x["wall_seconds"] for x in r])
        out.append(
            f"| {'SPD (SDP, cvxpy/Clarabel)' if spd else 'general (LP, HiGHS)'} | {len(r)} | "
            f"{ver} ({ver / len(r):.1%}) | {c['layer0_only']} ({c['layer0_only'] / len(r):.1%}) | "
            f"{c['not_reached']} ({cert}) | {np.mean([x['rounds'] for x in r]):.2f} | "
            f"{np.median(t):.3f} / {np.quantile(t, 0.9):.3f} / {t.max():.3f} s | {w.mean():.3f} s |"
        )
    return "\n".join(out)


def by_size(rows: list[dict]) -> str:
    out = ["| target size | solves | SPD reached | general reached |", "| --- | --- | --- | --- |"]
    bins = SIZE_BINS
    frac = lambda r: f"{sum(x['verified'] for x in r)}/{len(r)}" if r else "-"  # noqa: E731
    for lo, hi in bins:
        sel = [x for x in rows if lo <= x["target_size"] <= hi]
        if not sel:
            continue
        s = [x for x in sel if x["spd"]]
        g = [x for x in sel if not x["spd"]]
        name = f"{lo}" if lo == hi else (f"{lo}-{hi}" if hi < 99 else f">= {lo}")
        out.append(f"| {name} | {len(sel)} | {frac(s)} | {frac(g)} |")
    return "\n".join(out)


SIZE_BINS = [(1, 1), (2, 2), (3, 4), (5, 8), (9, 99)]


def summary(rows: list[dict]) -> dict:
    """The numbers docs/control.md quotes: per class of A, by target size and by dimension."""
    out: dict = {"solves": len(rows), "reached_not_verified": sum(x["reached_not_verified"] for x in rows)}
    for spd in (True, False):
        r = [x for x in rows if x["spd"] == spd]
        if not r:
            continue
        c = Counter(x["verdict"] for x in r)
        t = np.array([x["solve_seconds"] for x in r])
        out["spd" if spd else "general"] = {
            "instances": len(r),
            "reached_verified": sum(x["verified"] for x in r),
            "reached_fraction": sum(x["verified"] for x in r) / len(r),
            "layer0_only": c["layer0_only"],
            "layer0_only_fraction": c["layer0_only"] / len(r),
            "undecided": c["undecided"],
            "not_reached": c["not_reached"],
            "certified_impossible": sum(x["certified_impossible"] for x in r),
            "rounds_mean": float(np.mean([x["rounds"] for x in r])),
            "solve_seconds": {
                "median": float(np.median(t)),
                "p90": float(np.quantile(t, 0.9)),
                "max": float(t.max()),
            },
            "wall_seconds_mean": float(np.mean([x["wall_seconds"] for x in r])),
        }
    sizes = []
    for lo, hi in SIZE_BINS:
        sel = [x for x in rows if lo <= x["target_size"] <= hi]
        entry = {"sizes": [lo, hi], "solves": len(sel)}
        for spd in (True, False):
            s = [x for x in sel if x["spd"] == spd]
            entry["spd" if spd else "general"] = {"solves": len(s), "reached": sum(x["verified"] for x in s)}
        sizes.append(entry)
    out["by_target_size"] = sizes
    out["by_d"] = {
        str(d): {
            ("spd" if spd else "general"): {
                "solves": sum(1 for x in rows if x["d"] == d and x["spd"] == spd),
                "reached": sum(x["verified"] for x in rows if x["d"] == d and x["spd"] == spd),
            }
            for spd in (True, False)
        }
        for d in sorted({x["d"] for x in rows})
    }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--alpha", type=float, default=0.5)
    ap.add_argument("--layers", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--targets",
        choices=("vertices", "planted"),
        default="vertices",
        help="vertices: random subsets of the hull's vertices (the issue's study); planted: the leaders "
        "of a random matrix (reachable by construction: measures how complete the solver is).",
    )
    ap.add_argument("--json", default=None, help="Write every instance's record here.")
    a = ap.parse_args()
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    skipped: Counter = Counter()
    rows = run(a.instances, a.seed, a.alpha, a.layers, a.rounds, a.targets, skipped)
    total = time.perf_counter() - t0
    print(table(rows))
    print()
    print(by_size(rows))
    print(
        f"\n{a.instances} instances ({a.targets} targets, seed {a.seed}, alpha {a.alpha}, {a.layers} layers, {a.rounds} rounds) in "
        f"{total:.0f} s; load average before {load0[0]:.2f}, after {os.getloadavg()[0]:.2f} ({os.cpu_count()} CPUs)"
    )
    if a.json:
        load1 = os.getloadavg()
        record = {
            "script": "benchmarks/bench_control.py",
            "command": "python benchmarks/bench_control.py "
            + " ".join(f"--{k.replace('_', '-')} {v}" for k, v in vars(a).items() if v is not None),
            "args": vars(a),
            "seconds": total,
            "load_1min": {"before": load0[0], "after": load1[0]},
            "load": {"before": list(load0), "after": list(load1)},
            "cpu_count": os.cpu_count(),
            "skipped": {"spd": skipped["spd"], "general": skipped["general"]},
            "summary": summary(rows),
            "rows": rows,
        }
        write_json(a.json, record)


if __name__ == "__main__":
    main()
