"""How fast the command line answers: ``--version``, ``--help``, the sentiment group's help and a bad argument, one
``sentiment predict``.

    python benchmarks/bench_startup.py [--model RUN] [--repeat 5] [--json docs/results/startup.json]

Each command runs in a fresh interpreter (``python -c "from attndyn.cli import main; main()" ...``, what the
``attndyn`` script does) and the best wall time of ``--repeat`` runs is printed, with the machine's load
(``uptime``) before and after: on a shared machine the numbers are only as quiet as the load says. Without
``--model`` a tiny run is trained first (synthetic reviews, one epoch, in a temporary folder). Then
``python -X importtime`` of the predict command lists the modules that cost the most (cumulative).
Targets: --version, every --help and a bad argument <= 0.5 s, predict <= 3 s on the 2-core machine. ``--json`` writes the timings, the
load, the processor and the machine's core count (docs/benchmarks.md quotes docs/results/startup.json). Not part of the suite.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import processor  # benchmarks/_machine.py (this script's folder is on the path)

SRC = Path(__file__).resolve().parents[1] / "src"
CLI = ["-c", "from attndyn.cli import main; main()"]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _best(argv: list[str], repeat: int, status: int = 0) -> tuple[float, float]:
    """The best wall time of ``repeat`` runs and the least CPU time (user + system) of a run: on a loaded
    machine the CPU time is the better guess of the wall time on a quiet one (imports run on one thread)."""
    best, cpu = float("inf"), float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, *CLI, *argv], env=_env(), capture_output=True, text=True)
        if r.returncode != status:
            raise SystemExit(f"{' '.join(argv)}: exit status {r.returncode}, expected {status}: {r.stderr[-500:]}")
        best = min(best, time.perf_counter() - t0)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = min(cpu, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best, cpu


def _tiny_run(folder: Path) -> Path:
    """A one-epoch run on 200 synthetic reviews (words chosen by the label)."""
    rng = random.Random(0)
    good, bad, plain = ["great", "superb", "loved"], ["awful", "dull", "boring"], ["film", "plot", "actor", "scene"]
    data = folder / "tiny.csv"
    with data.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["review", "sentiment"])
        for i in range(200):
            words = rng.choices(good if i % 2 else bad, k=3) + rng.choices(plain, k=4)
            rng.shuffle(words)
            w.writerow([" ".join(words), "positive" if i % 2 else "negative"])
    run = folder / "run"
    argv = ["sentiment", "train", "--run", str(run), "--data", str(data), "--epochs", "1", "--min-freq", "1"]
    subprocess.run(
        [sys.executable, *CLI, *argv, "--no-progress", "--threads", "1"], env=_env(), check=True, capture_output=True
    )
    return run


def _importtime(argv: list[str], top: int) -> list[tuple[float, str]]:
    """The ``top`` modules with the largest cumulative import time (s) while running ``argv``."""
    r = subprocess.run([sys.executable, "-X", "importtime", *CLI, *argv], env=_env(), capture_output=True, text=True)
    rows = []
    for line in r.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]) / 1e6, parts[2].rstrip()))
    tops = [(t, name) for t, name in rows if not name.startswith("  ")]  # imported directly, not as a dependency
    return sorted(tops, reverse=True)[:top]


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, help="A run or model folder (default: train a tiny one).")
    ap.add_argument("--repeat", type=int, default=5, help="Runs per command; the best is printed.")
    ap.add_argument("--top", type=int, default=12, help="How many modules of -X importtime to list.")
    ap.add_argument("--json", type=Path, help="Write the timings and the load to this JSON file.")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or _tiny_run(Path(tmp))
        predict = ["sentiment", "predict", "--model", str(model), "a great film"]
        result: dict = {
            "script": "benchmarks/bench_startup.py",
            "command": " ".join(["python", *("RUN" if a == str(args.model) else a for a in sys.argv)]),
            "model": "a tiny one-epoch run" if args.model is None else "RUN: a d = 2 run of `attndyn sentiment train`",
            "cores": os.cpu_count(),
            "processor": processor(),
            "repeat": args.repeat,
            "load_before": _load(),
            "load1_before": round(os.getloadavg()[0], 2),
            "commands": {},
        }
        print(f"{result['processor']}, {result['cores']} cores; load before: {result['load_before']}")
        commands = (
            ("version", ["--version"], 0),
            ("help", ["--help"], 0),
            ("sentiment_help", ["sentiment", "--help"], 0),
            ("data_help", ["data", "--help"], 0),
            ("train_help", ["sentiment", "train", "--help"], 0),
            ("bad_argument", ["sentiment", "predict", "--no-such-option"], 2),
            ("predict", predict, 0),
        )
        for name, argv, status in commands:
            wall, cpu = _best(argv, args.repeat, status)
            result["commands"][name] = {"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}
            print(f"{name:15s} {wall:6.2f} s wall, {cpu:5.2f} s CPU  (best of {args.repeat})")
        result["load_after"] = _load()
        result["load1_after"] = round(os.getloadavg()[0], 2)
        print(f"load after:  {result['load_after']}")
        print("slowest top-level imports of predict (cumulative s):")
        result["predict_imports"] = []
        for t, name in _importtime(predict, args.top):
            result["predict_imports"].append({"module": name.strip(), "cumulative_s": round(t, 3)})
            print(f"  {t:6.3f}  {name.strip()}")
    if args.json:
        tmp_path = args.json.with_suffix(".tmp")
        tmp_path.write_text(json.dumps(result, indent=2) + "\n")
        os.replace(tmp_path, args.json)


if __name__ == "__main__":
    main()
