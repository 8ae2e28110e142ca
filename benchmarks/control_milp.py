"""Layer-0 leader control for general A: the alternation of ``choose_A`` beside the exact MILP.

    python benchmarks/control_milp.py --instances 10 --json docs/results/control_milp.json

On the first N instances of ``benchmarks/bench_control.py`` (random subsets of the hull's vertices,
seed k), the layer-0 problem for general A (every target token prefers itself to every other token;
every other token prefers *some* other token to itself) is solved twice: by
:func:`attndyn.control._choose.solve_disjunctive` (alternation, the heuristic ``choose_A`` uses) and by
:func:`attndyn.control._solve.solve_margin_milp` (HiGHS branch and bound, ``--time-limit`` seconds).
Records each instance's margins, the MILP status and both solve times, the counts of positive margins
and of disagreements, the wall time, the one-minute load before and after and the core count.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from bench_control import instance

from attndyn._io import write_json
from attndyn.control._choose import solve_disjunctive
from attndyn.control._constraints import follows, leads
from attndyn.control._problem import ControlProblem
from attndyn.control._scale import unit_scale
from attndyn.control._solve import MAX_CONSTRAINTS, solve_margin_milp


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--time-limit", type=float, default=20.0)
    ap.add_argument("--json", type=Path, required=True)
    a = ap.parse_args()
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    rows = []
    for k in range(a.instances):
        Z, S = instance(a.seed + k)
        Z = unit_scale(Z)[0]  # as choose_A does
        n, d = Z.shape
        fixed = [p for i in S for p in leads(Z, i)]
        groups = [[q for j in range(n) if j != i for q in follows(Z, i, j)] for i in range(n) if i not in S]
        problem = ControlProblem(Z, tuple(S), False, 1e-3, 0.5, 60, 5, 0.0, MAX_CONSTRAINTS)
        heur, heur_s = solve_disjunctive(fixed, groups, problem)
        exact = solve_margin_milp(fixed, groups, d, time_limit=a.time_limit)
        rows.append(
            {
                "instance": k,
                "n": n,
                "d": d,
                "target_size": len(S),
                "alternation_margin": float(heur.margin),
                "alternation_seconds": heur_s,
                "milp_margin": float(exact.margin),
                "milp_status": exact.status,
                "milp_seconds": exact.seconds,
            }
        )
        print(rows[-1], flush=True)
    pos = lambda m: m > 0  # noqa: E731
    out = {
        "script": "benchmarks/control_milp.py",
        "command": "python " + " ".join(["benchmarks/control_milp.py", *sys.argv[1:]]),
        "args": {k: str(v) for k, v in vars(a).items()},
        "summary": {
            "instances": len(rows),
            "alternation_positive": sum(pos(r["alternation_margin"]) for r in rows),
            "milp_positive": sum(pos(r["milp_margin"]) for r in rows),
            "only_alternation_positive": sum(pos(r["alternation_margin"]) and not pos(r["milp_margin"]) for r in rows),
            "only_milp_positive": sum(pos(r["milp_margin"]) and not pos(r["alternation_margin"]) for r in rows),
            "milp_time_limit_hit": sum(r["milp_status"] != "optimal" for r in rows),
            "milp_seconds_max": max(r["milp_seconds"] for r in rows),
            "milp_seconds_median": sorted(r["milp_seconds"] for r in rows)[len(rows) // 2],
        },
        "seconds": time.perf_counter() - t0,
        "load_1min": {"before": load0, "after": os.getloadavg()[0]},
        "cpu_count": os.cpu_count(),
        "rows": rows,
    }
    write_json(a.json, out)
    print(out["summary"])


if __name__ == "__main__":
    main()
