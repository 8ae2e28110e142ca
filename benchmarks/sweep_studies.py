"""The studies docs/sweeps.md reports, run through ``attndyn sweep`` and summarized into one JSON file.

    python benchmarks/sweep_studies.py --json docs/results/sweeps.json            # every study
    python benchmarks/sweep_studies.py --only theorem_1_1 table_1 --json ...       # some of them
    python benchmarks/sweep_studies.py --d128-seeds 5000 --json ...                # a smaller d = 128 run

Studies (each runs the shipped spec in examples/sweeps/ with the CLI, ``attndyn sweep SPEC --out DIR
--workers 2 --chunk C --no-progress``, in a child process whose wall and CPU time (its workers
included) are measured; then :func:`attndyn.sweep.summarize` and :func:`attndyn.sweep.read_rows`):

- ``ginibre``: good triples among real Ginibre V against d (examples/sweeps/ginibre.toml);
- ``killed``: the same spec into a new folder, killed with SIGKILL (the process group: the sweep and
  its dask workers) once ``--kill-after`` rows are written, then run again with the same command; the
  rows are compared with the uninterrupted run's (needs ``ginibre``);
- ``ginibre_d128``: the "about 14%" at d = 128 (examples/sweeps/ginibre_d128.toml, ``--d128-seeds``
  seeds: the file's 20,000 by default; another number runs a copy of the spec with that many);
- ``theorem_1_1``: hardmax Theorem 1.1 against n, d and alpha (examples/sweeps/theorem_1_1.toml);
- ``table_1``: softmax Table 1 per regime (examples/sweeps/table_1.toml).

A study already in the JSON file is replaced; the others are kept (the file is rewritten after each
study, atomically). Every study records the one-minute load average before and after it and the
machine's core count.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SPECS = ROOT / "examples" / "sweeps"
STUDIES = ["theorem_1_1", "table_1", "ginibre", "killed", "ginibre_d128"]
CLI = [sys.executable, "-c", "from attndyn.cli import main; main()", "sweep"]


def _children_cpu() -> tuple[float, float, float]:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime, r.ru_stime, r.ru_maxrss / 1024


def sweep(spec: Path, out: Path, chunk: int) -> dict:
    """Run ``attndyn sweep SPEC --out OUT --workers 2 --chunk CHUNK`` in a child process; times and its log."""
    cmd = [*CLI, str(spec), "--out", str(out), "--workers", "2", "--chunk", str(chunk), "--no-progress"]
    load_before = os.getloadavg()[0]
    u0, s0, _ = _children_cpu()
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    u1, s1, rss = _children_cpu()
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd[4:])} failed ({done.returncode}):\n{done.stderr}")
    return {
        "command": "attndyn sweep " + " ".join(cmd[4:]).replace(f"{ROOT}/", ""),
        "log": done.stderr.strip().splitlines(),
        "wall_s": round(wall, 2),
        "cpu_user_s": round(u1 - u0, 2),
        "cpu_system_s": round(s1 - s0, 2),
        "cpu_s": round(u1 - u0 + s1 - s0, 2),
        "max_rss_mb_largest_process": round(rss, 1),
        "load1_before": round(load_before, 2),
        "load1_after": round(os.getloadavg()[0], 2),
    }


def _spec_with_seeds(spec: Path, seeds: int, into: Path) -> Path:
    text = spec.read_text(encoding="utf-8")
    new, n = re.subn(r"(?m)^seeds = \d+", f"seeds = {seeds}", text)
    assert n == 1, spec
    into.mkdir(parents=True, exist_ok=True)
    path = into / spec.name
    path.write_text(new, encoding="utf-8")
    return path


def _summary(out: Path) -> list[dict]:
    from attndyn.sweep import summarize

    return json.loads(summarize(out).files["json"].read_text(encoding="utf-8"))["grid_points"]


def _cell_ms(out: Path) -> float:
    from attndyn.sweep import read_rows

    return round(float(read_rows(out)["seconds"].mean()) * 1e3, 2)


def study_ginibre(work: Path, spec: Path = SPECS / "ginibre.toml") -> dict:
    from attndyn.sweep import read_rows

    run = sweep(spec, work / "ginibre", chunk=8)
    points = _summary(work / "ginibre")
    rows = read_rows(work / "ginibre")
    keep = ("d", "cells_ok", "cells_failed", "good_count", "good_frac", "good_lo", "good_hi", "paranormal_count")
    fr = [p["good_frac"] for p in points]
    return {
        "spec": str(spec.relative_to(ROOT)),
        **run,
        "cells": int(len(rows)),
        "cell_ms_mean": _cell_ms(work / "ginibre"),
        "paranormal_equals_good": bool((rows["paranormal"] == rows["good"]).all()),
        "points": [{k: p[k] for k in keep} for p in points],
        "by_d": {str(p["d"]): {k: p[k] for k in keep} for p in points},
        "drop_per_doubling": {
            "min": min(a - b for a, b in zip(fr, fr[1:])),
            "max": max(a - b for a, b in zip(fr, fr[1:])),
        },
        "decreasing": bool(all(a > b for a, b in zip(fr, fr[1:]))),
    }


def _rows_sorted(out: Path):
    from attndyn.sweep import read_rows

    return read_rows(out).sort_values("cell").reset_index(drop=True)


def study_killed(work: Path, kill_after: int, spec: Path = SPECS / "ginibre.toml") -> dict:
    from attndyn.sweep import read_rows

    ref = work / "ginibre"
    if not (ref / "spec.json").is_file():
        sys.exit("the killed study compares with the ginibre study's rows: run --only ginibre first (same --work)")
    out = work / "ginibre_killed"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [*CLI, str(spec), "--out", str(out), "--workers", "2", "--chunk", "8", "--no-progress"]
    load_before = os.getloadavg()[0]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    t0 = time.perf_counter()
    written = 0
    while proc.poll() is None:
        time.sleep(0.5)
        try:
            written = len(read_rows(out))
        except Exception:  # the folder not there yet
            continue
        if written >= kill_after:
            os.killpg(proc.pid, signal.SIGKILL)
            break
    proc.wait()
    killed_at = time.perf_counter() - t0
    if proc.returncode != -signal.SIGKILL:
        sys.exit(f"the sweep ended ({proc.returncode}) before {kill_after} rows were written; lower --kill-after")
    time.sleep(2)  # the workers, signalled too, end
    kept = len(read_rows(out))
    resumed = sweep(spec, out, chunk=8)
    plan = next((line for line in resumed["log"] if "left" in line and "finished" in line), "")
    a, b = _rows_sorted(ref), _rows_sorted(out)
    cols = [c for c in a.columns if c != "seconds"]
    return {
        "spec": str(spec.relative_to(ROOT)),
        "kill_after_rows": kill_after,
        "killed_after_s": round(killed_at, 1),
        "load1_before": round(load_before, 2),
        "kept_cells": kept,
        "resume": resumed,
        "resume_plan_line": plan,
        "resume_finished_before": int(re.search(r"(\d+) finished", plan)[1]) if "finished" in plan else None,
        "resume_left_before": int(re.search(r"(\d+) left", plan)[1]) if "left" in plan else None,
        "resume_ran": next((int(x[1]) for line in resumed["log"] if (x := re.search(r"ran (\d+) cells", line))), None),
        "rows_after_resume": int(len(b)),
        "each_cell_once": bool(b["cell"].is_unique and len(b) == len(a)),
        "equal_but_seconds": bool(len(a) == len(b) and a[cols].equals(b[cols])),
        "columns_compared": cols,
    }


def study_ginibre_d128(work: Path, seeds: int) -> dict:
    spec = SPECS / "ginibre_d128.toml"
    if f"seeds = {seeds}\n" not in spec.read_text(encoding="utf-8"):
        spec = _spec_with_seeds(spec, seeds, work / "specs")
    out = work / f"ginibre_d128_{seeds}"
    shutil.rmtree(out, ignore_errors=True)
    run = sweep(spec, out, chunk=32)
    (p,) = _summary(out)
    rows = _rows_sorted(out)
    good = rows["good"].to_numpy(dtype=bool)
    blocks = [float(good[i : i + 1000].mean()) for i in range(0, len(good) - 999, 1000)]
    res = {
        "spec": str(spec.relative_to(ROOT))
        if spec.is_relative_to(ROOT)
        else f"examples/sweeps/ginibre_d128.toml with seeds = {seeds}",
        "seeds": seeds,
        **run,
        "cells": int(len(rows)),
        "cell_ms_mean": _cell_ms(out),
        "good_count": p["good_count"],
        "good_frac": p["good_frac"],
        "good_lo": p["good_lo"],
        "good_hi": p["good_hi"],
        "paranormal_equals_good": bool((rows["paranormal"] == rows["good"]).all()),
        "blocks_of_1000": {"fractions": blocks, "min": min(blocks), "max": max(blocks)} if blocks else None,
    }
    ref = work / "ginibre"
    if (ref / "spec.json").is_file():  # the d = 128 rows of the sweep against d: the same cells
        r = _rows_sorted(ref)
        r = r[r["d"] == 128].sort_values("seed").reset_index(drop=True)
        head = rows.iloc[: len(r)].reset_index(drop=True)
        same = ["cell_id", "seed", "good", "paranormal"]
        res["first_rows_equal_ginibre_d128"] = bool(len(r) and r[same].equals(head[same]))
    return res


def study_theorem_1_1(work: Path, spec: Path = SPECS / "theorem_1_1.toml") -> dict:
    from attndyn.experiments import wilson_interval
    from attndyn.sweep import read_rows

    out = work / "theorem_1_1"
    shutil.rmtree(out, ignore_errors=True)
    run = sweep(spec, out, chunk=2)
    points = _summary(out)
    rows = read_rows(out)
    ok = rows[rows["status"] == "ok"]
    holds, n = int(ok["holds"].astype(bool).sum()), int(len(rows))
    lo, hi = wilson_interval(holds, n)
    late = ok[ok["late_leaders"] > 0]
    leaders = {
        str(nn): {str(dd): float(ok[(ok["n"] == nn) & (ok["d"] == dd)]["leaders"].mean()) for dd in (2, 3, 4)}
        for nn in (8, 16, 32)
    }
    layers = []  # per alpha, ascending (a list: alpha's dot would break a dotted key)
    for a in sorted(ok["alpha"].unique()):
        med = ok[ok["alpha"] == a].groupby(["n", "d"])["layers_used"].median()
        layers.append({"alpha": float(a), "median_min": float(med.min()), "median_max": float(med.max())})
    return {
        "spec": str(spec.relative_to(ROOT)),
        **run,
        "cells": n,
        "cell_ms_mean": _cell_ms(out),
        "grid_points": len(points),
        "converged": int(ok["converged"].astype(bool).sum()),
        "holds": holds,
        "holds_lo": lo,
        "holds_hi": hi,
        "holds_lo_min_per_point": min(p["holds_lo"] for p in points),
        "late_leaders_total": int(ok["late_leaders"].sum()),
        "runs_with_late_leaders": int(len(late)),
        "runs_leaders_not_vertices": int((ok["leaders"] != ok["vertices"]).sum()),
        "leaders_mean": leaders,
        "layers_median_by_alpha": layers,
    }


def study_table_1(work: Path, spec: Path = SPECS / "table_1.toml") -> dict:
    from attndyn.sweep import read_rows

    out = work / "table_1"
    shutil.rmtree(out, ignore_errors=True)
    run = sweep(spec, out, chunk=2)
    points = {p["regime"]: p for p in _summary(out)}
    rows = read_rows(out)
    ok = rows[rows["status"] == "ok"]
    regimes = {}
    for r, p in points.items():
        sel = ok[ok["regime"] == r]
        m = sel["matches"].astype(bool)
        fc = sel["final_change"]
        regimes[r] = {
            "cells_ok": p["cells_ok"],
            "cells_failed": p["cells_failed"],
            "matches_count": p["matches_count"],
            "matches_frac": p["matches_frac"],
            "matches_lo": p["matches_lo"],
            "matches_hi": p["matches_hi"],
            "mismatches": int((~m).sum()),
            "vertices_mean": p["vertices_mean"],
            "hyperplanes_mean": p["hyperplanes_mean"],
            "mismatch_hyperplanes": sorted(int(h) for h in sel[~m]["hyperplanes"].dropna()),
            "final_change_median_match": float(fc[m].median()) if m.any() else None,
            "final_change_median_mismatch": float(fc[~m].median()) if (~m).any() else None,
        }
    return {
        "spec": str(spec.relative_to(ROOT)),
        **run,
        "cells": int(len(rows)),
        "cell_ms_mean": _cell_ms(out),
        "mismatches_total": sum(v["mismatches"] for v in regimes.values()),
        "regimes": regimes,
    }


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=Path("sweeps/studies"), help="sweep folders (kept)")
    ap.add_argument("--only", nargs="+", choices=STUDIES, default=STUDIES)
    ap.add_argument("--d128-seeds", type=int, default=20000)
    ap.add_argument("--kill-after", type=int, default=2500, help="rows written before the killed run is killed")
    args = ap.parse_args()
    from attndyn._io import write_json

    data = json.loads(args.json.read_text(encoding="utf-8")) if args.json.is_file() else {}
    data |= {
        "script": "benchmarks/sweep_studies.py",
        "command": "python benchmarks/sweep_studies.py --json " + str(args.json),
        "cores": os.cpu_count(),
    }
    runs = {
        "ginibre": lambda: study_ginibre(args.work),
        "killed": lambda: study_killed(args.work, args.kill_after),
        "ginibre_d128": lambda: study_ginibre_d128(args.work, args.d128_seeds),
        "theorem_1_1": lambda: study_theorem_1_1(args.work),
        "table_1": lambda: study_table_1(args.work),
    }
    for name in [s for s in STUDIES if s in args.only]:
        t0 = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        print(f"{t0} {name} ...", flush=True)
        if name == "ginibre":
            shutil.rmtree(args.work / "ginibre", ignore_errors=True)
        res = run = runs[name]()
        res["started"] = t0
        res["script_args"] = sys.argv[1:]
        data[name] = _clean(res)
        write_json(args.json, data)
        wall = run.get("wall_s", run.get("resume", {}).get("wall_s"))
        print(f"  done: {wall} s wall, load {os.getloadavg()[0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
