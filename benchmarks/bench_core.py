"""Core engine benchmark: attndyn against the naive per-token loop, on 1 and 2 threads, in one run.

    python benchmarks/bench_core.py                  # about 3-4 minutes on 2 cores
    python benchmarks/bench_core.py --full-naive     # also time the naive loops in full (adds ~10 min)
    python benchmarks/bench_core.py --threads 1 4    # other thread counts, side by side
    python benchmarks/bench_core.py --case hardmax_3000x128x2   # one case

Every case runs once per thread count (torch and numba pinned to it), each in a fresh
subprocess so that its peak resident memory is its own; the table shows the wall times and the
ratios to the naive loop side by side, and the gain of the last thread count over the first. The
planar cases are also timed *in turn* (``--paired-rounds``, 9): one process runs the engine on each
thread count back to back, round after round, and reports the median of the rounds' ratios — the
host's speed drifts over minutes, so two separate processes can land on a fast and a slow minute.

The naive loop has the structure of the published experiment code: per sequence, per layer, per
token, the inner products of that token with every token (numpy), the maximum, the ties, the
mean. By default it is timed on a slice of the batch and scaled linearly to the full batch (its
cost per sequence is constant); the printout says which. Each case runs in a fresh subprocess so
that its peak resident memory is its own.

**Where the planar hardmax's time goes** (skip with ``--no-profile``): (3000, 128, 2), 8 layers, one
thread, CPU time per token-layer of each phase of the compiled kernel — the real tokens and w = A z_i;
the candidates (inscribed octagon, margin test); the scores with their maximum, multiplicity and
maximiser (one fused pass); the move (ties finished one by one); the store with the leader flags; the
rounding bound of new leaders' margins — then the layer kernel a layer at a time (``hardmax_layer_2d``,
no book), the one call a run makes (``attndyn._planar_run.hardmax_run_2d``: the same phases with every layer
of a sequence in cache, the last state's leaders and the book's certifications included), the whole
``attndyn.hardmax`` run and what lies outside that call (checks, the first passes over the tokens, the
trajectory's buffers). Method: a copy of the kernel's sequence loop, built in this
script from the kernel's own phase functions (``attndyn._kernels``), is cut after phase 1, 2, ..., 6
(every phase writes into arrays this script owns, so no cut lets the compiler drop the work before
it); each cut runs the 8 layers of the real trajectory, the cuts alternately, best of 5; a phase costs
the difference between its cut and the one before. It runs three times, each in a fresh process: compiled
for this processor (native), for LLVM's x86-64-v3 (``NUMBA_CPU_NAME=x86-64-v3``: AVX2 and FMA, no AVX-512,
the other processors of this machine kind; on a processor without AVX2 this column is skipped) and for numba's
generic x86-64 target (``NUMBA_CPU_NAME=generic``, no vector extension beyond SSE2); each with its own numba
cache directory, so that the builds never mix; the ratio columns show which phases depend on the processor. The processor's name, the target LLVM
compiled for, its widest vector extension and the load are recorded with each.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# ---- naive references ----------------------------------------------------------------------


def naive_hardmax(Z: np.ndarray, alpha: float, layers: int, A: np.ndarray) -> np.ndarray:
    coef = alpha / (1 + alpha)
    out = Z.copy()
    for b in range(Z.shape[0]):
        z = out[b]
        for _ in range(layers):
            new = np.empty_like(z)
            for i in range(z.shape[0]):
                s = z @ (A @ z[i])  # inner product with every token
                follow = np.flatnonzero(s == s.max())
                new[i] = z[i] + coef * (z[follow].mean(axis=0) - z[i])
            z = new
        out[b] = z
    return out


def naive_softmax_rk4(x: np.ndarray, dt: float, steps: int) -> np.ndarray:
    """The published triple loop: for each token i, for each j, for each coordinate."""

    def field(x):
        n, d = x.shape
        v = np.zeros_like(x)
        for i in range(n):
            s = [sum(x[i, c] * x[j, c] for c in range(d)) for j in range(n)]
            m = max(s)
            e = [math.exp(t - m) for t in s]
            tot = sum(e)
            for j in range(n):
                for c in range(d):
                    v[i, c] += e[j] / tot * x[j, c]
        return v

    for _ in range(steps):
        k1 = field(x)
        k2 = field(x + dt / 2 * k1)
        k3 = field(x + dt / 2 * k2)
        k4 = field(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x


# ---- cases (each runs in its own process) ----------------------------------------------------


def set_threads(t: int) -> None:
    """torch and numba pinned to t threads, numba's pool on the layer attndyn chooses: attndyn's kernels are
    imported first (they name numba's threading layer, which is fixed when numba first starts its threads)."""
    import numba
    import torch

    import attndyn._kernels  # noqa: F401

    torch.set_num_threads(t)
    numba.set_num_threads(min(t, numba.config.NUMBA_NUM_THREADS))


def numba_layer() -> str | None:
    """numba's threading layer, None where no parallel region ran yet."""
    import numba

    try:
        return numba.threading_layer()
    except ValueError:
        return None


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def case_hardmax(B: int, n: int, d: int, layers: int, naive_slice: int) -> dict:
    import torch

    import attndyn
    from attndyn._kernels import threads_for

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((B, n, d))
    A = np.eye(d)
    attndyn.hardmax(Z[:2], alpha=0.5, layers=1, check_hypotheses=False)  # compile / warm up
    base = peak_mb()
    best, cpu = math.inf, math.inf
    spent, repeats = 0.0, 0
    while repeats < 3 or (spent < 2.0 and repeats < 15):  # best of at least 3, more for short cases (noise)
        t0, c0 = time.perf_counter(), time.process_time()
        traj = attndyn.hardmax(Z, alpha=0.5, layers=layers, save=attndyn.SaveAt(every=None), check_hypotheses=False)
        wall = time.perf_counter() - t0
        best, cpu = min(best, wall), min(cpu, time.process_time() - c0)
        spent, repeats = spent + wall, repeats + 1
    mem = peak_mb() - base
    sl = min(naive_slice, B)
    t0, c0 = time.perf_counter(), time.process_time()
    ref = naive_hardmax(Z[:sl], 0.5, layers, A)
    naive = (time.perf_counter() - t0) * B / sl
    naive_cpu = (time.process_time() - c0) * B / sl
    err = float(np.abs(traj.final_tokens.numpy()[:sl] - ref).max())
    return {
        "engine_s": best,
        "engine_cpu_s": cpu,
        "naive_s": naive,
        "naive_cpu_s": naive_cpu,
        "naive_measured_on": sl,
        "max_abs_diff": err,
        "engine_extra_peak_mb": mem,
        "threads": torch.get_num_threads(),
        "ns_per_token_layer": best / (B * n * layers) * 1e9,
        "kernel_threads": threads_for(B, n, d),  # the compiled layer's threads, as the engine chose them
        "numba_threading_layer": numba_layer(),
        "cpu_ns_per_token_layer": cpu / (B * n * layers) * 1e9,
    }


def _compute_only(threads: int, iters: int) -> float:
    """Wall seconds of a loop that does arithmetic only (eight blocks of 64 independent multiply-adds, no memory
    traffic), shared by ``threads`` of numba's threads: what this machine gives a second thread at that moment."""
    import numba

    global _SPIN
    if "_SPIN" not in globals():

        @numba.njit(parallel=True)
        def spin(blocks: int, iters: int, out: np.ndarray) -> None:  # pragma: no cover - compiled
            for j in numba.prange(blocks):
                a = np.empty(64)
                for k in range(64):
                    a[k] = 1.0 + j + k
                for _ in range(iters // 64):
                    for k in range(64):
                        a[k] = a[k] * 0.999999 + 1e-6
                out[j] = a.sum()

        _SPIN = spin
    set_threads(threads)
    out = np.zeros(8)
    t0 = time.perf_counter()
    _SPIN(8, iters, out)
    return time.perf_counter() - t0


def case_hardmax_paired(B: int, n: int, d: int, layers: int, threads: list[int], rounds: int) -> dict:
    """Each thread count of ``threads`` in turn, ``rounds`` times, in this one process: round r times the
    engine on every count back to back, so that the ratio of round r compares runs made within a second of each
    other (the host's speed drifts over minutes: the separate processes of :func:`case_hardmax` can land on a
    fast and a slow minute). Returns every round's walls and the first count's wall over the last count's, and
    beside them the same ratio of a loop that only computes (:func:`_compute_only`, as long as the engine's run
    on one thread), timed right after the engine in each round: the two-thread gain this machine allowed then
    (the host lends two virtual cores; at times the second gives little)."""
    import numba

    import attndyn

    Z = np.random.default_rng(0).standard_normal((B, n, d))
    walls: dict[int, list[float]] = {t: [] for t in threads}
    spins: dict[int, list[float]] = {t: [] for t in threads}
    iters = 1 << 16
    for t in threads:
        _compute_only(t, iters)  # compiled and warm before round 0 sizes it
    for r in range(rounds + 1):  # round 0 compiles, warms each thread count up and sizes the loop; not kept
        for t in threads:
            set_threads(t)
            t0 = time.perf_counter()
            attndyn.hardmax(Z, alpha=0.5, layers=layers, save=attndyn.SaveAt(every=None), check_hypotheses=False)
            wall = time.perf_counter() - t0
            spin = _compute_only(t, iters)
            if r:
                walls[t].append(wall)
                spins[t].append(spin)
            elif t == threads[0]:
                iters = max(1 << 16, int(iters * wall / spin))
    ratios = [a / b for a, b in zip(walls[threads[0]], walls[threads[-1]])]
    ceiling = [a / b for a, b in zip(spins[threads[0]], spins[threads[-1]])]
    return {
        "threads": threads,
        "numba_threading_layer": numba.threading_layer(),
        "wall_ms": {str(t): [1e3 * w for w in walls[t]] for t in threads},
        "ratios": ratios,
        "median": float(np.median(ratios)),
        "min": min(ratios),
        "max": max(ratios),
        "compute_only_ratios": ceiling,
        "compute_only_median": float(np.median(ceiling)),
    }


def case_softmax_rk4(n: int, d: int, steps: int, naive_steps: int) -> dict:
    import attndyn

    x = np.random.default_rng(0).standard_normal((n, d))
    attndyn.softmax(x, time=0.1, step=0.1)
    times, cpus = [], []
    for _ in range(20):
        t0, c0 = time.perf_counter(), time.process_time()
        traj = attndyn.softmax(x, time=steps * 0.1, method="rk4", step=0.1, save=attndyn.SaveAt(every=None))
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    t0 = time.perf_counter()
    ref = naive_softmax_rk4(x, 0.1, naive_steps)
    naive = (time.perf_counter() - t0) * steps / naive_steps
    short = attndyn.softmax(x, time=naive_steps * 0.1, method="rk4", step=0.1, save=attndyn.SaveAt(every=None))
    err = float(np.abs(short.final_tokens.numpy() - ref).max())
    return {
        "engine_s": float(np.median(times)),
        "engine_min_s": min(times),
        "engine_cpu_s": float(np.median(cpus)),
        "naive_s": naive,
        "naive_measured_steps": naive_steps,
        "max_abs_diff": err,
        "final_ok": bool(np.isfinite(traj.final_tokens.numpy()).all()),
    }


def case_softmax_big(n: int, d: int, steps: int) -> dict:
    import attndyn

    x = np.random.default_rng(0).standard_normal((n, d)) / math.sqrt(d)
    base = peak_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    traj = attndyn.softmax(x, time=steps * 0.05, method="euler", step=0.05, save=attndyn.SaveAt(every=None))
    return {
        "engine_s": time.perf_counter() - t0,
        "engine_cpu_s": time.process_time() - c0,
        "peak_mb_total": peak_mb(),
        "extra_peak_mb": peak_mb() - base,
        "finite": bool(np.isfinite(traj.final_tokens.numpy()).all()),
    }


# ---- where the planar hardmax's time goes (--profile) -------------------------------------------

PHASES = (  # (key in the JSON, what the phase does)
    ("load", "the real tokens, their coordinates and w = A z_i"),
    (
        "candidates",
        "the inscribed polygon (the layer before's while it stands), the candidates not deeper than the margin",
    ),
    ("scores", "scores against the candidates with their maximum, multiplicity, maximiser"),
    ("move", "the step towards the mean of C_i (ties finished one by one)"),
    ("store", "the largest change, the new tokens, the leader flags C_i = {i}"),
    ("bound", "new leaders' margins against the rounding bound (attndyn.margins)"),
)


def _phase_driver():
    """The planar kernel's sequence loop (attndyn._planar_run._run_seqs, one layer) cut after phase ``upto``; every
    phase writes into arrays the caller owns, so that no cut lets the compiler drop the work before it."""
    from numba import njit

    from attndyn import _kernels as K

    @njit(cache=False)
    def run(
        upto, z, A, mask, coef, out, leader, follow, moved, scale, layer, book, ib, qb, nrm, memo
    ):  # pragma: no cover
        real, cand, arg, cnt, pack = ib
        xr, yr, w0, w1, best, cx, cy, ox, oy = qb
        for b in range(z.shape[0]):
            m = K._load_planar(z[b], mask[b], A, real, xr, yr, w0, w1)
            if upto < 2:
                continue
            nc, sc = K._planar_candidates(b, xr, yr, m, True, memo, arg, nrm, cand, cx, cy)
            if upto < 3:
                continue
            K._score_planar(w0, w1, m, cx, cy, nc, best, pack)
            if upto < 4:
                continue
            nfix = K._move_planar(xr, yr, w0, w1, m, sc, coef, cx, cy, cand, pack, cnt, arg, ox, oy)
            for k in range(m if nfix > 0 else 0):
                if cnt[k] != 1:
                    seen = (w0, w1, xr, yr, m, sc, cand, nc, best, cnt, arg, ox, oy)
                    K._planar_fix(k, b, seen, coef, 0.0, real, follow, False)
            if upto < 5:
                continue
            moved[b] = K._maxdiff(ox, oy, xr, yr, m, best)
            K._store_planar(out[b], leader[b], real, m, ox, oy, cnt, arg)
            scale[b] = sc
            if upto < 6:
                continue
            K._fill_book_rows(b, book)
            if K._any_new(leader[b], book[7][b], real, m):
                K._certify_planar(b, leader[b], real, cand, nc, m, xr, yr, w0, w1, A, layer, book, book[7], best)

    return run


def case_profile(B: int, n: int, layers: int, repeats: int) -> dict:
    """ns per token-layer of each phase of the planar kernel (one thread), and of the whole run."""
    import numba
    import torch

    import attndyn
    from attndyn import _kernels as K
    from attndyn import margins
    from attndyn._planar_run import hardmax_layer_2d, hardmax_run_2d

    rng = np.random.default_rng(0)
    Z = rng.standard_normal((B, n, 2))
    A, mask, coef = np.eye(2), np.ones((B, n), dtype=np.bool_), 0.5 / 1.5
    traj = attndyn.hardmax(Z, alpha=0.5, layers=layers - 1, check_hypotheses=False)
    states = [np.ascontiguousarray(traj.ys[k].numpy()) for k in range(layers)]  # the inputs of each layer
    run = _phase_driver()
    ib = tuple(np.empty((5, n + 8), dtype=np.int64))
    qb, nrm = tuple(np.empty((9, n + 8))), np.empty((5, n + 8))
    out, leader, moved, scale = np.empty((B, n, 2)), np.empty((B, n), np.bool_), np.empty(B), np.empty(B)
    follow = np.zeros((1, 1, 1), np.bool_)

    def timed(upto: int) -> float:
        book = margins.LeaderBook(B, n, torch.float64).kernel_arrays(2)
        memo = K.planar_memo(B)  # the polygons a run carries from layer to layer
        t0 = time.thread_time()
        for k in range(layers):
            run(upto, states[k], A, mask, coef, out, leader, follow, moved, scale, k, book, ib, qb, nrm, memo)
        return time.thread_time() - t0

    cut = range(1, len(PHASES) + 1)
    for u in cut:
        timed(u)  # compile
    best = {u: math.inf for u in cut}
    for _ in range(repeats):  # alternately, so that the machine's other work spreads over every variant
        for u in cut:
            best[u] = min(best[u], timed(u))
    tl = B * n * layers
    cum = [best[u] / tl * 1e9 for u in cut]
    kernel, one_call, whole = math.inf, math.inf, math.inf
    slots = np.full(layers + 1, -1, dtype=np.int64)
    slots[[0, layers]] = [0, 1]  # the states a run keeps with SaveAt(every=None)
    ys, lead = np.empty((2, B, n, 2)), np.zeros((2, B, n), dtype=np.bool_)
    for _ in range(repeats):
        memo = K.planar_memo(B)
        t0 = time.process_time()
        for k in range(layers):  # the layer kernel on the same inputs
            hardmax_layer_2d(states[k], A, mask, coef, 0.0, out, leader, follow, False, moved, scale, -1, None, memo)
        kernel = min(kernel, time.process_time() - t0)
        book = margins.LeaderBook(B, n, torch.float64).kernel_arrays(2)
        mv, sc = np.empty((layers + 1, B)), np.empty((layers + 1, B))
        # CPU time of the process from here: numba's workqueue runs a parallel region (the one call is one, on
        # a single thread too) in its worker thread, not in this one
        t0 = time.process_time()  # the call a run makes: every layer of each sequence in cache, the book certified
        hardmax_run_2d(Z, A, mask, coef, 0.0, slots, ys, lead, mv, sc, book)
        one_call = min(one_call, time.process_time() - t0)
        t0 = time.process_time()
        attndyn.hardmax(Z, alpha=0.5, layers=layers, save=attndyn.SaveAt(every=None), check_hypotheses=False)
        whole = min(whole, time.process_time() - t0)
    kernel_ns, one_call_ns, whole_ns = kernel / tl * 1e9, one_call / tl * 1e9, whole / tl * 1e9
    return {
        "phases_ns": {name: c - p for (name, _), c, p in zip(PHASES, cum, [0.0] + cum[:-1])},
        "phases_cumulative_ns": dict(zip([name for name, _ in PHASES], cum)),
        "kernel_ns": kernel_ns,  # hardmax_layer_2d without a book, per token-layer (a layer at a time)
        "run_kernel_ns": one_call_ns,  # attndyn._planar_run.hardmax_run_2d with the book: layers + 1, one call
        "run_ns": whole_ns,  # attndyn.hardmax, per token-layer: the one call, checks, saving
        "outside_kernel_ns": whole_ns - one_call_ns,
        "numba_threads": numba.get_num_threads(),
        "processor": processor(),
        "load": os.getloadavg()[0],
    }


def processor() -> dict:
    """What numba compiles for: the CPU's name, LLVM's name for it, and its widest vector extension."""
    import llvmlite.binding as llvm
    import numba

    name = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                name = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    target = os.environ.get("NUMBA_CPU_NAME") or llvm.get_host_cpu_name()
    feats = {} if target in TARGETS.values() else llvm.get_host_cpu_features()
    isa = next((f for f in ("avx512f", "avx2", "avx", "sse4.2") if feats.get(f)), "sse2 (x86-64 baseline)")
    if target == TARGETS["avx2"]:
        isa = "avx2 (x86-64-v3)"
    return {"name": name, "llvm_cpu": target, "vector_isa": isa, "numba": numba.__version__}


CASES = {
    "hardmax_3000x128x2": lambda a: case_hardmax(3000, 128, 2, 8, 3000 if a.full_naive else 300),
    "hardmax_15000x128x2": lambda a: case_hardmax(15000, 128, 2, 8, 15000 if a.full_naive else 300),
    "hardmax_1000x512x16": lambda a: case_hardmax(1000, 512, 16, 8, 1000 if a.full_naive else 10),
    "softmax_rk4_40x3": lambda a: case_softmax_rk4(40, 3, 100, 100 if a.full_naive else 2),
    "softmax_euler_4096x64": lambda a: case_softmax_big(4096, 64, 20),
}


#: The planar cases whose thread counts are also timed in turn in one process (:func:`case_hardmax_paired`).
PAIRED = {"hardmax_3000x128x2": (3000, 128, 2, 8), "hardmax_15000x128x2": (15000, 128, 2, 8)}


def run_paired(name: str, threads: list[int], rounds: int) -> dict:
    cmd = [sys.executable, __file__, "--run-paired", name, "--paired-rounds", str(rounds), "--threads"]
    load = os.getloadavg()[0]
    out = subprocess.run(cmd + [str(t) for t in threads], capture_output=True, text=True, check=True)
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["load_before"] = load
    return row


def run_case(name: str, threads: int, full_naive: bool) -> dict:
    cmd = [sys.executable, __file__, "--run", name, "--threads", str(threads)] + (
        ["--full-naive"] if full_naive else []
    )
    load = os.getloadavg()[0]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    row = json.loads(out)
    row["load_before"] = load
    return row


#: The profile's targets other than native: LLVM's CPU name for each (``NUMBA_CPU_NAME``).
TARGETS = {"avx2": "x86-64-v3", "generic": "generic"}


def profile_targets() -> tuple[str, ...]:
    """native, avx2 where this processor has AVX2 (a build for it could not run otherwise), generic."""
    import llvmlite.binding as llvm

    avx2 = bool(llvm.get_host_cpu_features().get("avx2"))
    return ("native", "avx2", "generic") if avx2 else ("native", "generic")


def run_profile(target: str, repeats: int) -> dict:
    """The phase profile in a fresh process on one thread; a ``target`` of :data:`TARGETS` compiles for that
    processor (``avx2``: x86-64-v3; ``generic``: the x86-64 baseline) into a cache directory of its own."""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as cache:
        if target in TARGETS:
            env.update(NUMBA_CPU_NAME=TARGETS[target], NUMBA_CACHE_DIR=cache)
        cmd = [sys.executable, __file__, "--run-profile", str(repeats), "--threads", "1"]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env).stdout.strip().splitlines()
    return json.loads(out[-1])


def profile_rounds(rounds: int) -> dict:
    """The profile of every target in ``rounds`` alternating rounds (the machine's speed drifts by a few percent
    over minutes, as much as the targets differ in some phases): each target's median round by the whole run's
    time, every round's whole-run times, and the generic / native (``ratio``) and avx2 / native (``ratio_avx2``)
    ratios of the whole run per round."""
    targets = profile_targets()
    runs = [{t: run_profile(t, 5) for t in targets} for _ in range(max(1, rounds))]
    out: dict = {}
    for t in targets:
        ordered = sorted(runs, key=lambda r: r[t]["run_ns"])
        out[t] = ordered[(len(ordered) - 1) // 2][t]
        out[t]["rounds_run_ns"] = [r[t]["run_ns"] for r in runs]
    for key, t in (("ratio", "generic"), ("ratio_avx2", "avx2")):
        if t in targets:
            ratios = [r[t]["run_ns"] / r["native"]["run_ns"] for r in runs]
            out[key] = {"rounds": ratios, "median": float(np.median(ratios)), "min": min(ratios), "max": max(ratios)}
    return out


def print_profile(prof: dict) -> None:
    targets = list(prof)
    print("\nplanar hardmax (3000, 128, 2), 8 layers, one thread: ns per token-layer by phase (CPU time)")
    others = targets[1:]
    print(f"{'phase':<26}" + "".join(f"{t:>12}" for t in targets) + "".join(f"{t + '/nat':>12}" for t in others))
    rows = [*prof[targets[0]]["phases_ns"], "kernel (sum)", "layer kernel", "one-call kernel", "whole run"]
    rows.append("outside the kernel")
    what = dict(PHASES)
    what["layer kernel"] = "hardmax_layer_2d, a layer at a time (no book)"
    what["one-call kernel"] = "hardmax_run_2d: every layer of a sequence in cache, leaders certified"
    keys = {
        "layer kernel": "kernel_ns",
        "one-call kernel": "run_kernel_ns",
        "whole run": "run_ns",
        "outside the kernel": "outside_kernel_ns",
    }
    for row in rows:
        vals = []
        for t in targets:
            p = prof[t]
            if row in p["phases_ns"]:
                vals.append(p["phases_ns"][row])
            elif row == "kernel (sum)":
                vals.append(list(p["phases_cumulative_ns"].values())[-1])
            else:
                vals.append(p[keys[row]])
        line = f"{row:<26}" + "".join(f"{v:>12.1f}" for v in vals)
        line += "".join(f"{v / vals[0]:>11.2f}x" if vals[0] > 0 else f"{'-':>12}" for v in vals[1:])
        line += f"  {what.get(row, '')}"
        print(line)
    for t in targets:
        c = prof[t]["processor"]
        print(f"  {t}: {c['name']}, compiled for {c['llvm_cpu']} ({c['vector_isa']}), load {prof[t]['load']:.1f}")


#: Issue 33's check, read from a record: (name, path of the figure, comparison, bound).
TARGETS_33 = (
    ("one_thread_ns", "cases.hardmax_3000x128x2.threads.1.ns_per_token_layer", "<=", 20.0),
    ("one_thread_naive_ratio", "cases.hardmax_3000x128x2.ratio.1", ">=", 1000.0),
    ("generic_over_native", "profile.ratio.median", "<=", 1.5),
    ("two_threads_3000", "cases.hardmax_3000x128x2.paired.median", ">=", 1.8),
    ("two_threads_15000", "cases.hardmax_15000x128x2.paired.median", ">=", 1.8),
)


def targets(record: dict) -> dict:
    """Issue 33's check on a record (what ``--json`` writes): each figure, its bound and ``met`` or ``missed``
    (``absent`` when the run did not measure it). A pure function of the recorded figures."""
    out = {}
    for name, path, op, bound in TARGETS_33:
        value = record
        for part in path.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        if not isinstance(value, (int, float)):
            out[name] = {"figure": path, "target": f"{op} {bound:g}", "verdict": "absent"}
            continue
        ok = value <= bound if op == "<=" else value >= bound
        out[name] = {"figure": path, "value": value, "target": f"{op} {bound:g}", "verdict": "met" if ok else "missed"}
    return out


def print_targets(checks: dict) -> None:
    print("\nissue 33's check:")
    for name, c in checks.items():
        value = f"{c['value']:.2f}" if "value" in c else "-"
        print(f"  {name:<24} {value:>9}  target {c['target']:<8} {c['verdict']}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--full-naive", action="store_true", help="time the naive loops in full instead of on a slice")
    p.add_argument(
        "--threads", type=int, nargs="+", default=[1, 2], help="torch and numba thread counts to compare (default: 1 2)"
    )
    p.add_argument("--case", action="append", choices=sorted(CASES), help="run only this case (repeatable)")
    p.add_argument("--run", help=argparse.SUPPRESS)  # internal: one case in this process
    p.add_argument("--run-profile", type=int, help=argparse.SUPPRESS)  # internal: the profile in this process
    p.add_argument("--run-paired", help=argparse.SUPPRESS)  # internal: a planar case's thread counts in turn
    p.add_argument(
        "--paired-rounds",
        type=int,
        default=9,
        help="rounds of the planar cases' thread counts timed in turn in one process (9; 0 skips them)",
    )
    p.add_argument(
        "--no-profile", action="store_true", help="skip the phase profile (native, AVX2 and generic targets)"
    )
    p.add_argument(
        "--profile-rounds", type=int, default=3, help="alternating rounds of the profile, native, avx2, generic (3)"
    )
    p.add_argument("--json", help="also write every row, the ratios and the load to this JSON file")
    p.add_argument(
        "--targets",
        metavar="JSON",
        help="only (re)write issue 33's check into this record from its figures (no timing)",
    )
    a = p.parse_args()
    if a.targets:
        record = json.loads(Path(a.targets).read_text())
        record["targets"] = targets(record)
        print_targets(record["targets"])
        tmp = Path(a.targets).with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(tmp, a.targets)
        return
    if a.run_profile:
        set_threads(1)
        print(json.dumps(case_profile(3000, 128, 8, a.run_profile)))
        return
    if a.run_paired:
        print(json.dumps(case_hardmax_paired(*PAIRED[a.run_paired], a.threads, a.paired_rounds)))
        return
    if a.run:
        set_threads(a.threads[0])
        print(json.dumps(CASES[a.run](a)))
        return
    names = a.case or list(CASES)
    rows: dict[str, dict[int, dict]] = {}
    paired: dict[str, dict] = {}
    print(f"machine: {os.cpu_count()} cores; load before: {os.getloadavg()[0]:.2f}", flush=True)
    for name in names:
        rows[name] = {}
        for t in a.threads:
            rows[name][t] = run_case(name, t, a.full_naive)
            print(f"{name} threads={t}: {rows[name][t]}", flush=True)
        if name in PAIRED and len(a.threads) > 1 and a.paired_rounds > 0:
            paired[name] = run_paired(name, a.threads, a.paired_rounds)
            print(f"{name} threads {'/'.join(map(str, a.threads))} in turn: {paired[name]}", flush=True)
    print()
    head = f"{'case':<24}" + "".join(f"{f'{t} thr wall':>13}{'ratio':>8}" for t in a.threads)
    head += f"{f'{a.threads[-1]}/{a.threads[0]} thr':>10}  notes"
    print(head)
    for name, by in rows.items():
        line = f"{name:<24}"
        for t in a.threads:
            r = by[t]
            naive = by[a.threads[0]].get("naive_s")  # the naive loop is single-threaded: one timing
            line += f"{r['engine_s'] * 1e3:>11.1f}ms" + (f"{naive / r['engine_s']:>7.0f}x" if naive else f"{'-':>8}")
        first, last = by[a.threads[0]], by[a.threads[-1]]
        line += f"{first['engine_s'] / last['engine_s']:>9.2f}x"
        r = first
        note = []
        if "naive_s" in r:
            note.append(
                f"naive {r['naive_s']:.1f} s"
                + (
                    f" (timed on {r['naive_measured_on']} seqs, scaled)"
                    if "naive_measured_on" in r
                    else f" (timed on {r['naive_measured_steps']} steps, scaled)"
                )
            )
        if "naive_cpu_s" in r:  # CPU times: less sensitive to the machine's other work
            note.append(f"CPU-time ratio {r['naive_cpu_s'] / r['engine_cpu_s']:.0f}x on {a.threads[0]} thr")
        if "ns_per_token_layer" in r:
            note.append(
                "ns/token-layer "
                + "/".join(f"{by[t]['ns_per_token_layer']:.1f}" for t in a.threads)
                + f" (kernel threads {'/'.join(str(by[t]['kernel_threads']) for t in a.threads)})"
            )
        if "max_abs_diff" in r:
            note.append(f"max |diff| {max(by[t]['max_abs_diff'] for t in a.threads):.1e}")
        for k in ("engine_extra_peak_mb", "extra_peak_mb"):
            if k in r:
                note.append(f"peak +{r[k]:.0f} MB")
        note.append("load " + "/".join(f"{by[t]['load_before']:.1f}" for t in a.threads))
        if name in paired:
            note.append(f"in turn {paired[name]['median']:.2f}x (median of {len(paired[name]['ratios'])} rounds)")
        print(line + "  " + "; ".join(note))
    print("\nwall = best of the repeats (median for softmax RK4); ratio = naive loop time / wall; load = 1-min")
    if paired:
        print(
            f"in turn: the {'/'.join(map(str, a.threads))} thread runs timed back to back in one process, round by"
            f" round; the median of the rounds' {a.threads[0]}/{a.threads[-1]} ratios (the host's speed drifts"
            " between the processes of the columns)"
        )
    prof = {} if a.no_profile else profile_rounds(a.profile_rounds)
    if prof:
        print_profile({t: prof[t] for t in ("native", "avx2", "generic") if t in prof})
        for key, t in (("ratio_avx2", "avx2"), ("ratio", "generic")):
            if key in prof:
                r = prof[key]
                print(
                    f"  whole run, {t} / native, per round: {' '.join(f'{x:.2f}' for x in r['rounds'])}"
                    f" (median {r['median']:.2f}; each target's row above is its median round)"
                )
    if a.json:
        cases = {}
        for name, by in rows.items():
            naive = by[a.threads[0]].get("naive_s")
            cases[name] = {
                "threads": {str(t): by[t] for t in a.threads},
                "wall_ms": {str(t): 1e3 * by[t]["engine_s"] for t in a.threads},
                "ratio": {str(t): naive / by[t]["engine_s"] for t in a.threads} if naive else None,
                "speedup": by[a.threads[0]]["engine_s"] / by[a.threads[-1]]["engine_s"],
            }
            if name in paired:
                cases[name]["paired"] = paired[name]
        record = {
            "script": "benchmarks/bench_core.py",
            "command": "python benchmarks/bench_core.py " + " ".join(sys.argv[1:]),
            "cores": os.cpu_count(),
            "processor": processor(),
            "cases": cases,
            "profile": prof,
        }
        record["targets"] = targets(record)
        print_targets(record["targets"])
        tmp = Path(a.json).with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        os.replace(tmp, a.json)
    print("load average before each run (the machine's other work shares the cores).")


if __name__ == "__main__":
    main()
