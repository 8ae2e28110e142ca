"""One hardmax case at two revisions of attndyn, in fresh processes taken in turn: what a change of the engine gains.

    python benchmarks/bench_revisions.py --old 67d2d68 --case 1000x512x16            # the working tree against it
    python benchmarks/bench_revisions.py --old HEAD~2 --new HEAD --case 100x512x16 --pairs 7 --threads 2

The host's speed drifts by up to 2x over minutes, so two benchmark runs made apart compare the minutes as much as
the code; and two versions of the compiled kernels imported into one process have been seen to slow each other.
So each revision runs in a process of its own (``PYTHONPATH`` set to its ``src``: ``--old`` is checked out in a
temporary git worktree, ``--new`` is the working tree unless named), the two alternate (old, new, old, new, ...),
and each process times ``--runs`` runs of ``attndyn.hardmax`` on the same tokens (seed 0, the identity A,
``alpha = 0.5``, only the last state kept; ``--causal``: causal attention; ``--stop``: with a stop test, which runs
a layer at a time), after one small run that compiles. A pair's ratio is the old process's
best run over the new one's; the printout gives every pair's, their median and range, the load before each
process, and whether both revisions gave the same bits (a digest of the final tokens, the leader flags and the
leaders' margins). ``--json`` writes it all with the processor (LLVM's target and widest vector extension).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from bench_core import processor  # benchmarks/bench_core.py (this script's folder is on the path)

ROOT = Path(__file__).resolve().parents[1]

CHILD = """
import hashlib, json, os, sys, time
import numpy as np, numba, torch
import attndyn
B, n, d, layers, threads, runs, causal, stop = (int(v) for v in sys.argv[1:9])
kw = {"stop": attndyn.StopOnConvergence()} if stop else {}
numba.set_num_threads(threads)
torch.set_num_threads(threads)
Z = np.random.default_rng(0).standard_normal((B, n, d))
attndyn.hardmax(Z[:2], alpha=0.5, layers=1, causal=bool(causal), check_hypotheses=False, **kw)  # compile
walls = []
for _ in range(runs):
    t0 = time.perf_counter()
    tr = attndyn.hardmax(
        Z, alpha=0.5, layers=layers, causal=bool(causal), save=attndyn.SaveAt(every=None), check_hypotheses=False, **kw
    )
    walls.append(time.perf_counter() - t0)
h = hashlib.sha256()
for t in (tr.final_tokens, tr.leader_mask, tr.leader_margin):
    h.update(t.contiguous().numpy().tobytes())
print(json.dumps({"walls": walls, "digest": h.hexdigest(), "load_before": os.getloadavg()[0]}))
"""


def run_child(
    src: Path, case: tuple[int, ...], layers: int, threads: int, runs: int, causal: bool, stop: bool = False
) -> dict:
    """One process on the tree whose package is under ``src``: its walls, output digest and load."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    load = os.getloadavg()[0]
    args = [sys.executable, "-c", CHILD, *map(str, (*case, layers, threads, runs, int(causal), int(stop)))]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout
    rec = json.loads(out.strip().splitlines()[-1])
    rec["load_before"] = load
    rec["package"] = str(src)
    return rec


def worktree(rev: str, where: Path) -> Path:
    """A detached checkout of ``rev`` under ``where``; returns its ``src``."""
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where), rev], check=True, capture_output=True
    )
    return where / "src"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--old", required=True, help="the revision to compare with (any git revision)")
    p.add_argument("--new", default=None, help="a revision to compare (default: the working tree)")
    p.add_argument("--case", default="100x512x16", help="B x n x d (default 100x512x16)")
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--causal", action="store_true", help="causal attention (the dense kernel for every d)")
    p.add_argument("--stop", action="store_true", help="with a stop test (StopOnConvergence): a layer at a time")
    p.add_argument("--pairs", type=int, default=5, help="old/new process pairs, taken in turn (default 5)")
    p.add_argument("--runs", type=int, default=3, help="timed runs per process; its best counts (default 3)")
    p.add_argument("--json", type=Path, default=None)
    a = p.parse_args()
    case = tuple(int(v) for v in a.case.lower().split("x"))
    if len(case) != 3:
        p.error(f"--case {a.case!r}: give B x n x d, e.g. 100x512x16")
    with tempfile.TemporaryDirectory() as tmp:
        trees = {"old": worktree(a.old, Path(tmp) / "old")}
        trees["new"] = ROOT / "src" if a.new is None else worktree(a.new, Path(tmp) / "new")
        try:
            recs: dict[str, list[dict]] = {"old": [], "new": []}
            for i in range(a.pairs):
                for side in ("old", "new"):
                    recs[side].append(run_child(trees[side], case, a.layers, a.threads, a.runs, a.causal, a.stop))
                o, n = min(recs["old"][-1]["walls"]), min(recs["new"][-1]["walls"])
                print(
                    f"pair {i}: old {o:.3f} s, new {n:.3f} s, {o / n:.2f}x (load {recs['old'][-1]['load_before']:.2f})"
                )
        finally:
            for side in ("old", "new"):
                if trees[side] != ROOT / "src":
                    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(trees[side].parent)])
    ratios = [min(o["walls"]) / min(n["walls"]) for o, n in zip(recs["old"], recs["new"])]
    same = {r["digest"] for r in recs["old"] + recs["new"]}
    record = {
        "script": "benchmarks/bench_revisions.py",
        "command": "python " + " ".join(sys.argv),
        "processor": processor(),
        "case": {
            "B": case[0],
            "n": case[1],
            "d": case[2],
            "layers": a.layers,
            "threads": a.threads,
            "causal": a.causal,
            "stop": a.stop,
        },
        "old": a.old,
        "new": a.new or "working tree",
        "pairs": recs,
        "ratios": ratios,
        "median": float(np.median(ratios)),
        "min": min(ratios),
        "max": max(ratios),
        "old_best_s": min(min(r["walls"]) for r in recs["old"]),
        "new_best_s": min(min(r["walls"]) for r in recs["new"]),
        "same_bits": len(same) == 1,
    }
    print(
        f"{a.case}, {a.layers} layers, {a.threads} thread(s): old over new, median {record['median']:.2f}x "
        f"({record['min']:.2f}-{record['max']:.2f}) over {a.pairs} pairs; same bits: {record['same_bits']}"
    )
    if a.json is not None:
        from attndyn._io import write_json  # atomic

        write_json(a.json, record)


if __name__ == "__main__":
    main()
