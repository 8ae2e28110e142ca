"""GPU benchmark: every engine, and the sentiment training, on a CUDA device — with CPU equality checks.

    python benchmarks/bench_gpu.py                         # engines (a few minutes on an H100)
    python benchmarks/bench_gpu.py --sentiment --data ../shared/data/imdb/imdb.csv.gz   # + the d = 16 model
    python benchmarks/bench_gpu.py --quick                 # small sizes: a smoke test of every path
    python benchmarks/bench_gpu.py --quick --device cpu    # the same script on the CPU (checks the script itself)

Without CUDA it says so and times nothing (exit status 0). Each row: the best wall time of the
repeats (the device synchronised before and after), the peak GPU memory of the case, and a check
against the CPU: hardmax float64 follow sets / leaders / tokens against the compiled CPU kernel
on a slice of the batch (``max |diff|`` 0 means bit-identical), softmax against the CPU path on a
small problem. Targets of issue 13 (H100): hardmax (15,000, 128, 2, 8) <= 0.1 s and (1,000, 512,
16, 8) <= 0.2 s; softmax n = 65,536, d = 64, 20 Euler steps <= 1 s in float32 within 2 GB, and
float64 without running out of memory; the reported d = 16 sentiment model in <= 3 minutes. Issue 32: the
authors' default phase diagram on the sphere (2,048 systems x 90 betas, t <= 30) in <= 60 s.
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np
import torch

import attndyn

DEVICE = "cuda"


def _sync() -> None:
    if DEVICE != "cpu":
        torch.cuda.synchronize()


def timed(fn, repeats: int) -> tuple[float, object, float]:
    """Best wall time of ``repeats`` calls, the last result, and the peak GPU memory (GB; 0 on the CPU)."""
    fn()  # warm up (kernels, allocator)
    _sync()
    gpu = DEVICE != "cpu"
    if gpu:
        torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated() if gpu else 0
    best, out = math.inf, None
    for _ in range(repeats):
        _sync()
        t0 = time.perf_counter()
        out = fn()
        _sync()
        best = min(best, time.perf_counter() - t0)
    return best, out, ((torch.cuda.max_memory_allocated() - base) / 2**30 if gpu else 0.0)


def case_hardmax(B: int, n: int, d: int, layers: int, dtype: torch.dtype, repeats: int) -> dict:
    z = np.random.default_rng(0).standard_normal((B, n, d))
    zg = torch.as_tensor(z, dtype=dtype, device=DEVICE)
    run = lambda: attndyn.hardmax(
        zg,
        alpha=0.5,
        layers=layers,
        save=attndyn.SaveAt(every=None),  # noqa: E731
        dtype=dtype,
        device=DEVICE,
        check_hypotheses=False,
    )
    t, traj, mem = timed(run, repeats)
    row = {"case": f"hardmax ({B}, {n}, {d}, {layers}) {str(dtype)[6:]}", "seconds": t, "peak_gb": mem}
    if dtype == torch.float64:  # against the CPU kernel on a slice
        sl = min(B, 300)
        cpu = attndyn.hardmax(z[:sl], alpha=0.5, layers=layers, save=attndyn.SaveAt(every=None), check_hypotheses=False)
        row["max_abs_diff_vs_cpu"] = float((traj.final_tokens[:sl].cpu() - cpu.final_tokens).abs().max())
        row["leaders_equal"] = bool(torch.equal(traj.leader_since[:sl].cpu(), cpu.leader_since))
    return row


def case_softmax(n: int, d: int, steps: int, dtype: torch.dtype, repeats: int) -> dict:
    x = torch.as_tensor(np.random.default_rng(0).standard_normal((n, d)) / math.sqrt(d), dtype=dtype, device=DEVICE)
    run = lambda: attndyn.softmax(
        x,
        time=steps * 0.05,
        method="euler",
        step=0.05,  # noqa: E731
        save=attndyn.SaveAt(every=None),
        dtype=dtype,
        device=DEVICE,
    )
    try:
        t, traj, mem = timed(run, repeats)
    except torch.cuda.OutOfMemoryError:
        torch.cuda.empty_cache()  # (never raised on the CPU)
        return {
            "case": f"softmax euler n={n} d={d} {steps} steps {str(dtype)[6:]}",
            "seconds": None,
            "error": "out of memory",
        }
    row = {
        "case": f"softmax euler n={n} d={d} {steps} steps {str(dtype)[6:]}",
        "seconds": t,
        "peak_gb": mem,
        "finite": bool(torch.isfinite(traj.final_tokens).all()),
    }
    small = x[:512].cpu()  # the same dynamics on the CPU, a small problem
    a = attndyn.softmax(
        small, time=steps * 0.05, method="euler", step=0.05, save=attndyn.SaveAt(every=None), dtype=dtype
    )
    b = attndyn.softmax(
        small.to(DEVICE),
        time=steps * 0.05,
        method="euler",
        step=0.05,
        save=attndyn.SaveAt(every=None),
        dtype=dtype,
        device=DEVICE,
    )
    row["max_abs_diff_vs_cpu_n512"] = float((a.final_tokens - b.final_tokens.cpu()).abs().max())
    return row


def case_sphere(systems: int, betas: int, dtype: torch.dtype, repeats: int) -> dict:
    """The phase diagram on the sphere (issue 32): ``systems`` x ``betas`` systems of n = 32 tokens in d = 2, post-LN
    step 0.1 up to t = 30, 200 checkpoints (the authors' default is 2,048 x 90: at most 60 s on a GPU); checked
    against the CPU on a reduced grid (64 systems x 18 betas, the same draws on both): the largest difference of
    the fraction of clustered pairs and the cells whose cluster count differs."""
    from attndyn.sphere import phase_diagram

    grid = np.linspace(0.1, 9.0, betas)
    run = lambda: phase_diagram(systems=systems, betas=grid, dtype=dtype, device=DEVICE)  # noqa: E731
    t, pd, mem = timed(run, repeats)
    small = dict(systems=64, betas=np.linspace(0.1, 9.0, 18), dtype=dtype)
    cpu, dev = phase_diagram(**small), phase_diagram(**small, device=DEVICE)
    return {
        "case": f"sphere phase diagram {systems} x {betas} betas {str(dtype)[6:]}",
        "seconds": t,
        "peak_gb": mem,
        "systems_per_second": systems * betas / t,
        "fraction_max_abs_diff_vs_cpu": float(np.abs(cpu.fraction - dev.fraction).max()),
        "clusters_cells_differing_vs_cpu": int((cpu.clusters != dev.clusters).sum()),
    }


def case_sentiment(data: str, epochs: int) -> dict:
    from attndyn.sentiment import HardmaxSentimentClassifier
    from attndyn.sentiment._corpus import load_corpus
    from attndyn.sentiment._evaluate import accuracy_report

    est = HardmaxSentimentClassifier(d=16, epochs=epochs, random_state=0, device=DEVICE)  # the d = 16 recipe
    corpus = load_corpus(data, split="random", seed=0, tokenizer=est.tokenizer)
    tr, te = corpus.train_idx, corpus.test_idx
    _sync()
    t0 = time.perf_counter()
    est.fit([corpus.reviews.texts[i] for i in tr], corpus.reviews.labels[tr], tokens=[corpus.tokens[i] for i in tr])
    _sync()
    seconds = time.perf_counter() - t0
    test = est.encode(y=corpus.reviews.labels[te], tokens=[corpus.tokens[i] for i in te])
    rep = accuracy_report(est.model_, test)
    return {
        "case": f"sentiment d=16 (reported model), {epochs} epochs, {DEVICE}",
        "seconds": seconds,
        "best_epoch": est.best_epoch_,
        "hardmax_acc": rep["hardmax_acc"],
        "softmax_acc": rep["softmax_acc"],
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="small sizes only (a smoke test of every path)")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--sentiment", action="store_true", help="also train the reported d = 16 sentiment model")
    p.add_argument("--data", default="../shared/data/imdb/imdb.csv.gz", help="IMDB csv for --sentiment")
    p.add_argument("--epochs", type=int, default=7)
    p.add_argument("--json", help="also write the rows to this JSON file")
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (runs the script's paths on the CPU)")
    a = p.parse_args()
    global DEVICE
    DEVICE = a.device
    if DEVICE != "cpu" and not torch.cuda.is_available():
        print("bench_gpu.py: no CUDA device here (torch.cuda.is_available() is False): nothing was timed.")
        print("Run it on a machine with an NVIDIA GPU; the CPU figures are in benchmarks/bench_core.py.")
        return
    name = torch.cuda.get_device_name() if DEVICE != "cpu" else "cpu (no GPU timing: a check of the script)"
    print(f"device: {name}; torch {torch.__version__}", flush=True)
    f64, f32 = torch.float64, torch.float32
    if a.quick:
        cases = [
            lambda: case_hardmax(300, 128, 2, 8, f64, a.repeats),
            lambda: case_hardmax(20, 512, 16, 8, f64, a.repeats),
            lambda: case_softmax(4096, 64, 20, f32, a.repeats),
            lambda: case_softmax(4096, 64, 20, f64, a.repeats),
            lambda: case_sphere(64, 6, f64, a.repeats),
        ]
    else:
        cases = [
            lambda: case_hardmax(15000, 128, 2, 8, f64, a.repeats),
            lambda: case_hardmax(15000, 128, 2, 8, f32, a.repeats),
            lambda: case_hardmax(1000, 512, 16, 8, f64, a.repeats),
            lambda: case_hardmax(1000, 512, 16, 8, f32, a.repeats),
        ]
        cases += [
            lambda n=n, dt=dt: case_softmax(n, 64, 20, dt, a.repeats if n < 65536 else 1)
            for n in (4096, 16384, 65536)
            for dt in (f32, f64)
        ]
        cases += [lambda dt=dt: case_sphere(2048, 90, dt, 1) for dt in (f64, f32)]
    if a.sentiment:
        cases.append(lambda: case_sentiment(a.data, a.epochs))
    rows = []
    for case in cases:
        row = case()
        rows.append(row)
        print(json.dumps(row), flush=True)
    print()
    print(f"{'case':<46}{'wall':>10}{'peak GPU':>10}  check")
    for r in rows:
        wall = f"{r['seconds']:.3f}s" if r.get("seconds") is not None else r.get("error", "-")
        mem = f"{r['peak_gb']:.2f} GB" if "peak_gb" in r else "-"
        check = "; ".join(
            f"{k} {v:.1e}" if isinstance(v, float) else f"{k} {v}"
            for k, v in r.items()
            if k not in ("case", "seconds", "peak_gb", "error")
        )
        print(f"{r['case']:<46}{wall:>10}{mem:>10}  {check}")
    if a.json:
        from attndyn._io import write_json

        write_json(
            a.json, {"script": "benchmarks/bench_gpu.py", "device": name, "torch": torch.__version__, "rows": rows}
        )


if __name__ == "__main__":
    main()
