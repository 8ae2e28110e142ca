"""Faithfulness of the word explanations of a trained sentiment run (issue 23): the table of docs/attributions.md.

Runs :func:`attndyn.sentiment._faithfulness.faithfulness` (every method by default) on a seeded sample of the
run's test reviews, exactly as ``attndyn sentiment faithfulness`` does, and writes its result with the times
and the machine's load beside them:

    python benchmarks/bench_faithfulness.py --run runs/d2_seed0 --name d2 --reviews 1000
    # -> docs/results/faithfulness_d2.json (the docs' numbers), OUT/ (table CSV, figure, report)

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from attndyn.sentiment import pin_kernels

pin_kernels()  # before torch loads: the same code paths as `attndyn sentiment faithfulness`

import torch  # noqa: E402

from attndyn._io import write_bytes, write_json, write_text  # noqa: E402
from attndyn.plotting._attribution import draw_deletion_curves  # noqa: E402
from attndyn.plotting._save import png_bytes  # noqa: E402
from attndyn.sentiment import HardmaxSentimentClassifier  # noqa: E402
from attndyn.sentiment._baselines import METHODS, MethodSettings  # noqa: E402
from attndyn.sentiment._faithfulness import StudySettings, faithfulness, report, sample_texts  # noqa: E402
from attndyn.sentiment._runfolder import RunFolder  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", type=Path, required=True, help="a run folder written by `attndyn sentiment train`")
    ap.add_argument("--name", default="d2", help="the result is docs/results/faithfulness_NAME.json")
    ap.add_argument("--reviews", type=int, default=1000)
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sanity-reviews", type=int, default=200)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None, help="also write the CSV, figure and report here")
    ap.add_argument("--image", type=Path, default=None, help="also write the deletion-curve figure here")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    est = HardmaxSentimentClassifier.load(args.run)
    info = RunFolder(args.run).data_or_default(est.random_state)
    texts, rows, pool = sample_texts(
        info["data"], args.reviews, args.seed, split=info["split"], split_seed=info["seed"]
    )
    t_load = time.perf_counter() - t0
    settings = StudySettings(
        methods=tuple(args.methods), baselines=MethodSettings(seed=args.seed), sanity_reviews=args.sanity_reviews
    )
    result = faithfulness(est, texts, settings, progress=True)
    total = time.perf_counter() - t0
    test = json.loads((args.run / "test.json").read_text()) if (args.run / "test.json").is_file() else {}
    result["data"] = {"path": info["data"], "pool": pool, "sample_seed": args.seed, "rows": rows.tolist()}
    result["benchmark"] = {
        "command": "python benchmarks/bench_faithfulness.py "
        + f"--run RUN --name {args.name} --reviews {args.reviews} --threads {args.threads}",
        "run_test_accuracy": test.get("hardmax_acc"),
        "seconds_total": total,
        "seconds_loading": t_load,
        "seconds_study": result["seconds"],
        "threads": args.threads,
        "cpu_count": os.cpu_count(),
        "load_average_before": list(load_before),
        "load_average_after": list(os.getloadavg()),
        "machine": "shared 2-core machine (other jobs running); times are upper bounds",
    }
    dest = ROOT / "docs" / "results" / f"faithfulness_{args.name}.json"
    write_json(dest, result)
    png = png_bytes(draw_deletion_curves(result))
    if args.image is not None:
        write_bytes(args.image, png)
    if args.out is not None:
        write_json(args.out / "faithfulness.json", result)
        write_bytes(args.out / "deletion_curves.png", png)
        write_text(args.out / "report.txt", report(result))
    print(report(result), end="")
    print(f"total {total:.1f} s (loading {t_load:.1f} s), load average {load_before} -> {os.getloadavg()}")
    print(f"written {dest}")


if __name__ == "__main__":
    main()
