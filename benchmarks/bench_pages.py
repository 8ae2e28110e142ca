"""Kept layers on huge pages or on 4 KiB pages: a hardmax run that keeps every layer, timed three ways.

    python benchmarks/bench_pages.py                 # about two minutes on 2 cores
    python benchmarks/bench_pages.py --json docs/results/bench_pages.json

A run keeps its layers in one buffer made before the first layer (``attndyn._pages``). Three ways: ``huge``, as
the library does it (through numpy, which asks Linux for transparent huge pages, and faulted in by the calling
thread); ``huge_unfaulted`` (the same without the fault-in pass: the kernel's threads fault the pages in as they
write the layers); ``torch`` (``attndyn._pages.HUGE`` set out of reach: torch's allocator, 4 KiB pages faulted
in on their first write). The case is (3000, 128, 2), 8 layers, every layer kept (the default ``SaveAt()``:
9 x 3000 x 128 x 2 float64, 55 MB), on one and on two threads. Each round runs every way and thread count, each
in a fresh process (page state of its own) that times five runs; the table gives the median over the rounds of
each process's best and median run, and per round the ratio of each way's median run to ``huge``'s.
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
numba.set_num_threads(int(sys.argv[2]))
torch.set_num_threads(int(sys.argv[2]))
import attndyn
from attndyn import _pages
if sys.argv[1] == "torch":
    _pages.HUGE = 1 << 62  # every buffer through torch's allocator
if sys.argv[1] == "huge_unfaulted":
    _pages._fault_in = lambda a: a  # the kernel's threads fault the pages in
Z = np.random.default_rng(0).standard_normal(({B}, {N}, {D}))
attndyn.hardmax(Z[:2], alpha=0.5, layers=1)  # compile / warm up
walls = []
for _ in range({RUNS}):
    t0 = time.perf_counter()
    attndyn.hardmax(Z, alpha=0.5, layers={LAYERS}, check_hypotheses=False)
    walls.append(time.perf_counter() - t0)
print(json.dumps(walls))
"""

WAYS = ("huge", "huge_unfaulted", "torch")
THREADS = (1, 2)


def one(way: str, threads: int) -> list[float]:
    """Five runs' wall times (s) in a fresh process on ``threads`` threads, the kept layers' buffer made ``way``."""
    src = str(Path(__file__).resolve().parents[1] / "src")
    env = dict(os.environ, PYTHONPATH=src + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, "-c", CHILD, way, str(threads)]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
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
        rounds.append({f"{w}_{t}": one(w, t) for t in THREADS for w in WAYS})
    res: dict = {
        "script": "benchmarks/bench_pages.py",
        "case": {"B": B, "n": N, "d": D, "layers": LAYERS, "kept_mb": (LAYERS + 1) * B * N * D * 8 / 1e6},
        "processor": processor(),
        "transparent_hugepage": thp_setting(),
        "load_before": load,
        "rounds": rounds,
    }
    print(
        f"hardmax ({B}, {N}, {D}), {LAYERS} layers, every layer kept; {processor()}, "
        f"transparent huge pages: {res['transparent_hugepage']}, load {load:.1f}"
    )
    for t in THREADS:
        res[f"threads_{t}"] = by = {}
        for w in WAYS:
            key = f"{w}_{t}"
            ratios = [np.median(r[key]) / np.median(r[f"huge_{t}"]) for r in rounds]
            by[w] = {
                "best_ms": float(np.median([min(r[key]) for r in rounds]) * 1e3),
                "median_ms": float(np.median([np.median(r[key]) for r in rounds]) * 1e3),
                "over_huge": {"median": float(np.median(ratios)), "min": float(min(ratios)), "max": float(max(ratios))},
            }
            o = by[w]["over_huge"]
            print(
                f"  {t} thread{'s' if t > 1 else ' '} {w:<15} best {by[w]['best_ms']:7.1f} ms   median "
                f"{by[w]['median_ms']:7.1f} ms   over huge, per round: {o['median']:.2f} ({o['min']:.2f}-{o['max']:.2f})"
            )
    res["load_after"] = os.getloadavg()[0]
    if a.json:
        path = Path(a.json)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(res, indent=2) + "\n")
        tmp.replace(path)


if __name__ == "__main__":
    main()
