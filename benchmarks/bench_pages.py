"""Kept layers on huge pages or on 4 KiB pages: a hardmax run that keeps every layer, timed both ways.

    python benchmarks/bench_pages.py                 # about a minute on 2 cores
    python benchmarks/bench_pages.py --json docs/results/bench_pages.json

A run keeps its layers in one buffer made before the first layer (``attndyn._pages``): through numpy, which asks
Linux for transparent huge pages, or (``torch pages``: ``attndyn._pages.HUGE`` set out of reach) through torch's
allocator, whose 4 KiB pages are each faulted in on their first write. The case is (3000, 128, 2), 8 layers,
every layer kept (the default ``SaveAt()``: 9 x 3000 x 128 x 2 float64, 55 MB), one thread. Each round runs
both ways, each in a fresh process (page state of its own) that times five runs; the table gives the median over
the rounds of each process's best and median run, and the paired ratio (torch pages over huge pages) per round.
The load, the processor and the system's transparent-huge-page setting are recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import processor  # benchmarks/_machine.py (this script's folder is on the path)

B, N, D, LAYERS, RUNS = 3000, 128, 2, 8, 5

CHILD = f"""
import json, sys, time
import numpy as np, numba, torch
numba.set_num_threads(1)
torch.set_num_threads(1)
import attndyn
from attndyn import _pages
if sys.argv[1] == "torch":
    _pages.HUGE = 1 << 62  # every buffer through torch's allocator
Z = np.random.default_rng(0).standard_normal(({B}, {N}, {D}))
attndyn.hardmax(Z[:2], alpha=0.5, layers=1)  # compile / warm up
walls = []
for _ in range({RUNS}):
    t0 = time.perf_counter()
    attndyn.hardmax(Z, alpha=0.5, layers={LAYERS}, check_hypotheses=False)
    walls.append(time.perf_counter() - t0)
print(json.dumps(walls))
"""

WAYS = ("huge", "torch")


def one(way: str) -> list[float]:
    """Five runs' wall times (s) in a fresh process, the kept layers' buffer made ``way``."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, way], capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def thp_setting() -> str:
    """The selected transparent-huge-page mode (always, madvise or never), or "unknown"."""
    try:
        text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return "unknown"
    return next((w.strip("[]") for w in text.split() if w.startswith("[")), "unknown")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5, help="rounds, each running both ways (5)")
    p.add_argument("--json", help="also write the figures to this JSON file")
    a = p.parse_args()
    load = os.getloadavg()[0]
    rounds = []
    for _ in range(max(1, a.rounds)):
        rounds.append({w: one(w) for w in WAYS})
    res: dict = {
        "script": "benchmarks/bench_pages.py",
        "case": {"B": B, "n": N, "d": D, "layers": LAYERS, "kept_mb": (LAYERS + 1) * B * N * D * 8 / 1e6},
        "processor": processor(),
        "transparent_hugepage": thp_setting(),
        "load_before": load,
        "rounds": rounds,
    }
    for w in WAYS:
        res[w] = {
            "best_ms": float(np.median([min(r[w]) for r in rounds]) * 1e3),
            "median_ms": float(np.median([np.median(r[w]) for r in rounds]) * 1e3),
        }
    ratios = [np.median(r["torch"]) / np.median(r["huge"]) for r in rounds]
    res["ratio"] = {"median": float(np.median(ratios)), "min": float(min(ratios)), "max": float(max(ratios))}
    res["load_after"] = os.getloadavg()[0]
    print(
        f"hardmax ({B}, {N}, {D}), {LAYERS} layers, every layer kept, one thread; {processor()}, "
        f"transparent huge pages: {res['transparent_hugepage']}, load {load:.1f}"
    )
    for w in WAYS:
        print(f"  {w + ' pages':<12} best {res[w]['best_ms']:7.1f} ms   median {res[w]['median_ms']:7.1f} ms")
    r = res["ratio"]
    print(f"  torch pages / huge pages, per round: median {r['median']:.2f} (min {r['min']:.2f}, max {r['max']:.2f})")
    if a.json:
        path = Path(a.json)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(res, indent=2) + "\n")
        tmp.replace(path)


if __name__ == "__main__":
    main()
