"""The numbers docs/reproduce.md quotes from ``attndyn reproduce``: run times and the measured values of the
checks whose thresholds the page explains, for the quick and the full settings.

    python benchmarks/reproduce_runs.py --out runs/reproduce --json docs/results/reproduce.json [--quick-only]

``--quick-only`` reruns the quick settings and keeps the full run already recorded in the JSON file.

Each setting is one run of the command a reader types (``attndyn reproduce [--quick] --out OUT/quick|full``),
timed from the command's start (wall, with start-up) and read back from its ``results.json``; the machine's
load (one-minute average) and core count are recorded beside the times, which say little on a busy machine.
Not part of the test suite: the full run takes minutes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _machine import processor  # benchmarks/_machine.py (this script's folder is on the path)

from attndyn._io import write_json

SRC = Path(__file__).resolve().parents[1] / "src"


def _run(out: Path, quick: bool) -> tuple[dict, float]:
    """Run ``attndyn reproduce`` into ``out`` in a fresh interpreter; its results.json and the wall time."""
    argv = ["reproduce", "--out", str(out), "--no-progress", *(["--quick"] if quick else [])]
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "from attndyn.cli import main; main()", *argv], env=env, check=False)
    wall = time.perf_counter() - t0
    return json.loads((out / "results.json").read_text()), wall


def _summary(results: dict, wall: float, load: float) -> dict:
    """What the page quotes: run times, statuses, Table 1's V = I vertex counts and collapse row, Thm C.5's fit."""
    exps = {e["name"]: e for e in results["experiments"]}
    table1 = exps["softmax-table1"]["params"]
    poly = table1["polytope_vertices"]
    fit = exps["softmax-thmC.5"]["params"]["decay_fit"]
    rms = exps["softmax-thmC.5"]["checks"][-1]["measured"]
    return {
        "load1_before": load,
        "wall_s": round(wall, 1),
        "experiments_s": round(results["runtime_s"], 1),
        "passed": results["passed"],
        "judged_passing": sum(e["status"] == "pass" for e in exps.values()),
        "status": {n: e["status"] for n, e in exps.items()},
        "runtime_s": {n: round(e["runtime_s"], 1) for n, e in exps.items()},
        "table1": {
            "instances_per_row": table1["N"],
            "mean_vertices_of_K": statistics.fmean(poly["vertices_of_K"]),
            "mean_vertices_of_initial_hull": statistics.fmean(poly["vertices_of_initial_hull"]),
            "reduction_max": poly["reduction_max"],
            "rows": table1["rows"],
        },
        "thmC5": {"exponent": fit["exponent"], "rms_residual": float(rms.split("rms residual ")[1].rstrip(")"))},
        "thm3_1_vertices_of_initial_hull": exps["softmax-thm3.1"]["params"]["vertices_of_initial_hull"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="Folder for the two reproduce outputs.")
    ap.add_argument("--json", type=Path, help="Write the summary here (e.g. docs/results/reproduce.json).")
    ap.add_argument("--quick-only", action="store_true", help="Only the quick settings.")
    args = ap.parse_args()
    record: dict = {
        "script": "benchmarks/reproduce_runs.py",
        "command": "python benchmarks/reproduce_runs.py " + " ".join(sys.argv[1:]),
        "cores": os.cpu_count(),
    }
    for name, quick in (("quick", True), ("full", False)):
        if name == "full" and args.quick_only:
            continue
        load = round(os.getloadavg()[0], 2)
        results, wall = _run(args.out / name, quick)
        record[name] = {**_summary(results, wall, load), "processor": processor()}
        s = record[name]
        print(
            f"{name}: {s['experiments_s']} s of experiments, {s['wall_s']} s wall (load {load}), passed {s['passed']}"
        )
    if args.json:
        if args.quick_only and args.json.is_file():  # keep the full run a previous call recorded
            record = {**json.loads(args.json.read_text()), **{k: v for k, v in record.items() if k != "command"}}
        write_json(args.json, record)


if __name__ == "__main__":
    main()
