"""The torch path's hardmax layer with and without the screen (attndyn.attention.hardmax_mean_screened), in turn.

    python benchmarks/bench_screen.py                       # about two minutes on 2 cores
    python benchmarks/bench_screen.py --json docs/results/bench_screen.json
    python benchmarks/bench_screen.py --device cuda --cases 15000x128x2 1000x512x16 --json $OUT/bench_screen.json

The torch path runs a hardmax layer on a GPU, with gradients, and in float32 on the CPU (float64 runs on the CPU
take the compiled kernels; here they are sent down the torch path too, so that the CPU shows what a GPU runs). It
scored every pair exactly, left to right (2d - 1 elementwise passes over each chunk of scores); the screen takes
one matrix product and scores exactly only the queries that the product's rounding bound leaves undecided. Each
case is a run of 8 layers on Gaussian tokens, keeping the first and last state; each round times the run with the
screen and without it (``attndyn.attention.SCREEN_MIN_D`` out of reach), alternately, and checks that both give
the same tokens and leaders. The table gives each way's best run and the median over the rounds of the ratio
without/with; the load, the processor and the device are recorded.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import processor  # benchmarks/_machine.py (this script's folder is on the path)

DEFAULT_CASES = ("200x128x2", "200x128x8", "50x512x16")


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def case(shape: str, dtype: torch.dtype, device: str, rounds: int) -> dict:
    """One case timed with and without the screen, ``rounds`` times each, alternately (after one warm-up each)."""
    import attndyn
    from attndyn import _hardmax, attention

    B, n, d = (int(v) for v in shape.split("x"))
    Z = torch.from_numpy(np.random.default_rng(0).standard_normal((B, n, d))).to(device=device, dtype=dtype)
    kernel, least = _hardmax._use_kernel, attention.SCREEN_MIN_D
    _hardmax._use_kernel = lambda z, A: False  # the torch path, float64 on the CPU too
    walls: dict[str, list[float]] = {"exact": [], "screened": []}
    try:
        for r in range(rounds + 1):
            out = {}
            for way in ("exact", "screened"):
                attention.SCREEN_MIN_D = least if way == "screened" else 1 << 30
                _sync(device)
                t0 = time.perf_counter()
                out[way] = attndyn.hardmax(
                    Z, alpha=0.5, layers=8, save=attndyn.SaveAt(every=None), check_hypotheses=False
                )
                _sync(device)
                if r:
                    walls[way].append(time.perf_counter() - t0)
            a, b = out["exact"], out["screened"]
            same = torch.equal(a.ys, b.ys) and torch.equal(a.leader_mask, b.leader_mask)
            if not same:
                raise SystemExit(f"{shape} {dtype}: the screened run differs from the exact one")
    finally:
        _hardmax._use_kernel, attention.SCREEN_MIN_D = kernel, least
    ratios = [e / s for e, s in zip(walls["exact"], walls["screened"])]
    return {
        "case": f"hardmax ({B}, {n}, {d}, 8) {str(dtype).replace('torch.', '')}",
        "exact_best_s": min(walls["exact"]),
        "screened_best_s": min(walls["screened"]),
        "ratio_median": float(np.median(ratios)),
        "ratio_min": min(ratios),
        "ratio_max": max(ratios),
        "same_tokens_and_leaders": True,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", nargs="+", default=list(DEFAULT_CASES), help="BxNxD shapes (default: %(default)s)")
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    p.add_argument("--rounds", type=int, default=5, help="timed rounds per case and way (default: 5)")
    p.add_argument("--threads", type=int, default=1, help="torch's CPU threads (default: 1)")
    p.add_argument("--json", help="also write the rows to this JSON file")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    device = torch.cuda.get_device_name() if a.device.startswith("cuda") else f"cpu: {processor()}"
    load = os.getloadavg()[0]
    print(f"device: {device}; torch {torch.__version__}; {a.threads} CPU thread(s); load {load:.2f}")
    rows = []
    print(f"{'case':<36} {'exact':>9} {'screened':>9} {'ratio (median, min-max)':>26}")
    for shape in a.cases:
        for dtype in (torch.float32, torch.float64):
            row = case(shape, dtype, a.device, a.rounds)
            rows.append(row)
            spread = f"{row['ratio_median']:.2f} ({row['ratio_min']:.2f}-{row['ratio_max']:.2f})"
            print(f"{row['case']:<36} {row['exact_best_s']:>8.3f}s {row['screened_best_s']:>8.3f}s {spread:>26}")
    if a.json:
        from attndyn._io import write_json

        write_json(
            a.json,
            {
                "script": "benchmarks/bench_screen.py",
                "command": " ".join(["python", "benchmarks/bench_screen.py", *sys.argv[1:]]),
                "device": device,
                "torch": torch.__version__,
                "threads": a.threads,
                "load_before": load,
                "rows": rows,
            },
        )


if __name__ == "__main__":
    main()
