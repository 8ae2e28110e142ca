"""What pinning the CPU code paths costs: one training epoch, pinned and native, side by side.

Each repeat trains the default d = 2 model (the recipe's settings) for one epoch on synthetic reviews of the
IMDb run's shape (``--reviews`` reviews of 100-256 known words, a 20,000-word vocabulary) in a fresh
interpreter, alternately with the pinned code paths (``attndyn.sentiment.pin_kernels``: ATen AVX2, MKL
COMPATIBLE) and with the processor's own (``ATTNDYN_KERNELS=native``), and, with ``--plain``, torch's plain
build as well (``ATEN_CPU_CAPABILITY=default``: the pin a processor without AVX2 would need). The ratio of the
medians is the cost of the pin; the alternation spreads a busy machine's load over both, and the CPU time of
the training (user + system, of the child process) is recorded beside the wall time: on a busy machine it is
the steadier measure of the work, above all with ``--threads 1``.

    python benchmarks/bench_pinned_training.py --repeats 5 --json docs/results/bench_pinned_training.json
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

CHILD = r"""
import json, resource, sys, time
from attndyn.sentiment import kernel_paths, pin_kernels
pin_kernels()
import numpy as np, torch
from attndyn.sentiment._model import SentimentConfig, SentimentTransformer
from attndyn.sentiment._train import EncodedSplit, TrainConfig, train
torch.set_num_threads(int(sys.argv[2]))
g = np.random.default_rng(0)
N, L, V = int(sys.argv[1]), 256, 20000
lengths = torch.tensor(g.integers(100, L + 1, N))
ids = torch.tensor(g.integers(2, V, (N, L)))
mask = torch.arange(L)[None] < lengths[:, None]
ids[~mask] = 0
y = torch.tensor(g.integers(0, 2, N), dtype=torch.float32)
n = N - N // 10
train_split, val_split = EncodedSplit(ids[:n], mask[:n], y[:n]), EncodedSplit(ids[n:], mask[n:], y[n:])
model = SentimentTransformer(SentimentConfig(vocab_size=V, d=2), generator=torch.Generator().manual_seed(0))
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t0, c0 = time.perf_counter(), cpu()
train(model, train_split, val_split, TrainConfig(epochs=1, train_eval_size=500, seed=0))
out = {"seconds": time.perf_counter() - t0, "cpu_seconds": cpu() - c0, "kernels": kernel_paths().to_json()}
print(json.dumps(out))
"""

SETTINGS = {
    "pinned": {},
    "native": {"ATTNDYN_KERNELS": "native"},
    "plain": {"ATTNDYN_KERNELS": "native", "ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE"},
}


def _run(setting: str, reviews: int, threads: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ATTNDYN_KERNELS")}
    out = subprocess.run(
        [sys.executable, "-c", CHILD, str(reviews), str(threads)],
        env={**env, **SETTINGS[setting]},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--reviews", type=int, default=4000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--plain", action="store_true", help="also time torch's plain build (ATEN_CPU_CAPABILITY=default)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    settings = ["native", "pinned"] + (["plain"] if args.plain else [])
    times: dict[str, list[float]] = {s: [] for s in settings}
    cpu: dict[str, list[float]] = {s: [] for s in settings}
    kernels: dict[str, dict] = {}
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    for r in range(args.repeats):
        for s in settings if r % 2 == 0 else settings[::-1]:
            res = _run(s, args.reviews, args.threads)
            times[s].append(res["seconds"])
            cpu[s].append(res["cpu_seconds"])
            kernels[s] = res["kernels"]
            print(
                f"repeat {r + 1}: {s:<6} {res['seconds']:7.2f} s wall, {res['cpu_seconds']:7.2f} s CPU, "
                f"load {os.getloadavg()[0]:.2f}",
                flush=True,
            )
    med = {s: statistics.median(v) for s, v in times.items()}
    med_cpu = {s: statistics.median(v) for s, v in cpu.items()}
    result = {
        "script": "benchmarks/bench_pinned_training.py",
        "command": " ".join(sys.argv),
        "reviews": args.reviews,
        "threads": args.threads,
        "cores": os.cpu_count(),
        "processor": kernels["pinned"]["processor"],
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "wall_s": time.perf_counter() - t0,
        "seconds": times,
        "median_s": med,
        "cpu_seconds": cpu,
        "median_cpu_s": med_cpu,
        "kernels": kernels,
        "pinned_over_native": med["pinned"] / med["native"],
        "pinned_over_native_cpu": med_cpu["pinned"] / med_cpu["native"],
    }
    if "plain" in med:
        result["plain_over_native"] = med["plain"] / med["native"]
        result["plain_over_native_cpu"] = med_cpu["plain"] / med_cpu["native"]
    print(
        f"median epoch: native {med['native']:.2f} s, pinned {med['pinned']:.2f} s "
        f"(x{result['pinned_over_native']:.3f}; CPU x{result['pinned_over_native_cpu']:.3f})"
        + (f", plain {med['plain']:.2f} s (x{result['plain_over_native']:.3f})" if "plain" in med else "")
        + f"; {result['processor']}, load {load_before[0]:.2f} -> {result['load_after'][0]:.2f}"
    )
    if args.json is not None:
        from attndyn._io import write_json

        write_json(args.json, result)


if __name__ == "__main__":
    main()
