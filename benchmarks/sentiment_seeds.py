"""The default sentiment models over several seeds: the numbers README.md and docs/sentiment.md quote.

Each seed is one run of the command a reader types, ``attndyn sentiment train --run RUN --d D --seed S``
(the recipe for D, the seeded 70/30 split of the IMDb copy), then ``attndyn sentiment evaluate RUN``;
nothing else is set. The summary is the mean and range over the seeds of the hardmax test accuracy,
the clusters per real word, the leaders per review and the behavioural suite's pass rate per category.

    python benchmarks/sentiment_seeds.py train --d 2 --seeds 0 1 2 3 4 5 6 7 8 9 --out runs/seeds
    python benchmarks/sentiment_seeds.py train --d 16 --seeds 0 1 2 --out runs/seeds --device cuda
    python benchmarks/sentiment_seeds.py summarize --out runs/seeds --json docs/results/sentiment_seeds.json

``--kernels native`` trains on the processor's own CPU code paths instead of the pinned ones
(``ATTNDYN_KERNELS=native``), and ``--aten CAP`` then stands for a processor whose best kernels are CAP
(``ATEN_CPU_CAPABILITY``: ``default`` is one without AVX2): the spread the pin removes. Each seed records the
code paths it ran on (config.json's ``kernels``) and the summary groups the seeds by them.

``train`` skips seeds whose run folder already holds ``evaluation.json``, so several invocations
(one per seed, or one per machine) may share OUT. Training results do not depend on the number of
CPU threads (tests/sentiment/test_thread_independence.py); a CUDA run gives other bits than a CPU
run, so the summary records the device of each seed. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

from attndyn.cli import main as attndyn
from attndyn.sentiment import pin_kernels

METRICS = {
    "hardmax_accuracy": "hardmax_acc",
    "softmax_accuracy": "softmax_acc",
    "agreement": "agreement",
    "clusters_per_word": "clusters_per_token_mean",
    "leaders_per_review": "leaders_mean",
}
#: Metrics of evaluations and test reports written since they were added (older runs lack them): summarized over
#: the seeds that have them.
NEWER = {"hardmax_log_loss": ("evaluation", "hardmax_log_loss"), "decision_scale": ("test", "decision_scale")}


def _kernel_environment(args: argparse.Namespace) -> None:
    """Set the code-path policy before anything imports torch (the CLI pins at its first sentiment command)."""
    if args.kernels == "native":
        os.environ["ATTNDYN_KERNELS"] = "native"
        if args.aten:
            os.environ["ATEN_CPU_CAPABILITY"] = args.aten
    elif args.aten:
        sys.exit("--aten stands for another processor's choice: it needs --kernels native")


def train(args: argparse.Namespace) -> None:
    _kernel_environment(args)
    pin_kernels()  # before anything imports torch (no-op under --kernels native), as `attndyn sentiment` does
    from attndyn._io import write_json

    out = Path(args.out)
    for seed in args.seeds:
        run = out / f"d{args.d}-seed{seed}"
        if (run / "evaluation.json").is_file():
            print(f"{run}: done", flush=True)
            continue
        load = os.getloadavg()[0]
        t0 = time.perf_counter()
        argv = ["sentiment", "train", "--run", str(run), "--d", str(args.d), "--seed", str(seed)]
        argv += ["--threads", str(args.threads), "--device", args.device, "--data", args.data]
        argv += shlex.split(args.train_options)  # a recipe change under study, e.g. "--prior-margin 0.5"
        if attndyn(argv + ([] if args.progress else ["--no-progress"])) != 0:
            sys.exit(f"training {run} failed")
        seconds = time.perf_counter() - t0
        if attndyn(["sentiment", "evaluate", str(run), "--no-figures", "--device", args.device]) != 0:
            sys.exit(f"evaluating {run} failed")
        write_json(
            run / "seed_run.json",
            {
                "d": args.d,
                "seed": seed,
                "device": args.device,
                "threads": args.threads,
                "kernels": args.kernels,
                "aten": args.aten,
                "train_options": args.train_options,
                "wall_seconds": seconds,
                "load_at_start": load,
                "torch": __import__("torch").__version__,
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
            },
        )


def _kernel_label(kernels: dict) -> str:
    """``pinned``, ``pinned after torch loaded`` (the paths in force are the pinned ones, but the pin came after
    torch was imported, so it is not certified) or ``native ATen X, MKL Y``: what decides the weights' bytes."""
    if kernels["pinned"]:
        return "pinned"
    if (kernels["aten"], kernels["mkl"]) == ("AVX2", "COMPATIBLE") and "imported before" in kernels["reason"]:
        return "pinned after torch loaded"
    return f"native ATen {kernels['aten']}, MKL {kernels['mkl']}"


def _spread(values: list[float]) -> dict:
    return {"mean": statistics.mean(values), "min": min(values), "max": max(values), "n": len(values)}


def summarize(args: argparse.Namespace) -> None:
    from attndyn._io import write_json

    out = Path(args.out)
    by_d: dict[str, dict] = {}
    for ev in sorted(out.glob("d*-seed*/evaluation.json")):
        run = ev.parent
        rep = json.loads(ev.read_text())
        meta = json.loads((run / "seed_run.json").read_text())
        native = meta.get("kernels", "pinned") == "native"
        key = (
            f"d{meta['d']}"
            + ("-native" if native else "")
            + (f"-{meta['aten']}" if native and meta.get("aten") else "")
        )
        options = meta.get("train_options") or ""
        if options:  # a recipe change under study: its own group ("d16-prior-margin-0_5"; no dots in result keys)
            key += "-" + "-".join(options.replace("--", "").split()).replace(".", "_")
        entry = by_d.setdefault(key, {"seeds": [], "train_options": options})
        seed = {"seed": meta["seed"], "device": meta["device"], "wall_seconds": meta["wall_seconds"]}
        test = json.loads((run / "test.json").read_text())
        seed["train_seconds"] = test["train_seconds"]
        seed.update({name: rep[key] for name, key in METRICS.items()})
        seed.update({name: (rep if f == "evaluation" else test).get(k) for name, (f, k) in NEWER.items()})
        seed["checklist"] = {cat: r["accuracy"] for cat, r in rep["checklist"].items()}
        seed["checklist_failures"] = {cat: r["failures"] for cat, r in rep["checklist"].items() if r["failures"]}
        heldout = rep.get("checklist_heldout", {})
        seed["checklist_heldout"] = {cat: r["accuracy"] for cat, r in heldout.items()}
        seed["checklist_heldout_failures"] = {cat: r["failures"] for cat, r in heldout.items() if r["failures"]}
        kernels = json.loads((run / "config.json").read_text()).get("kernels")
        seed["kernels"] = "unrecorded" if kernels is None else _kernel_label(kernels)
        seed["processor"] = None if kernels is None else kernels["processor"]
        entry["seeds"].append(seed)
    for entry in by_d.values():
        seeds = sorted(entry["seeds"], key=lambda s: s["seed"])
        entry["seeds"] = seeds
        entry["devices"] = sorted({s["device"] for s in seeds})
        for name in [*METRICS, "wall_seconds", "train_seconds"]:
            entry[name] = _spread([s[name] for s in seeds])
        for name in NEWER:
            if any(s[name] is not None for s in seeds):
                entry[name] = _spread([s[name] for s in seeds if s[name] is not None])
        entry["kernels"] = sorted({s["kernels"] for s in seeds})
        entry["processors"] = sorted({s["processor"] or "unrecorded" for s in seeds})
        for suite in ("checklist", "checklist_heldout"):
            cats = sorted({c for s in seeds for c in s[suite]})
            entry[suite] = {c: _spread([s[suite][c] for s in seeds if c in s[suite]]) for c in cats}
    write_json(Path(args.json), {"script": "benchmarks/sentiment_seeds.py", "models": by_d})
    for d, entry in by_d.items():
        acc = entry["hardmax_accuracy"]
        print(
            f"{d}: {acc['n']} seeds on {entry['devices']}: hardmax accuracy {acc['mean']:.4f} "
            f"({acc['min']:.4f}-{acc['max']:.4f}), clusters per word {entry['clusters_per_word']['mean']:.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("train")
    t.add_argument("--d", type=int, required=True)
    t.add_argument("--seeds", type=int, nargs="+", required=True)
    t.add_argument("--out", default="runs/seeds")
    t.add_argument("--data", default=str(Path(__file__).parents[1] / ".." / "shared" / "data" / "imdb" / "imdb.csv.gz"))
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--train-options", default="", help="options added to `attndyn sentiment train` (a recipe change)")
    t.add_argument("--device", default="cpu")
    t.add_argument("--progress", action="store_true")
    t.add_argument("--kernels", choices=["pinned", "native"], default="pinned")
    t.add_argument("--aten", choices=["default", "avx2", "avx512"], default=None)
    s = sub.add_parser("summarize")
    s.add_argument("--out", default="runs/seeds")
    s.add_argument("--json", default="docs/results/sentiment_seeds.json")
    args = ap.parse_args()
    train(args) if args.what == "train" else summarize(args)


if __name__ == "__main__":
    main()
