r"""Phase diagrams over (t, beta): thousands of systems on the sphere at once.

The authors' experiment (borjanG/2023-transformers-rotf, ``phase-diagrams.py``; arXiv 2312.10794, Section 6):
``systems`` independent systems of n uniform random unit tokens in dimension d for each beta of a grid, run by
post-LN layers :math:`x \leftarrow N(x + h\sum_j P_{ij} x_j)` (SA, :math:`Q = K = V = I`) up to time T, and at
``checkpoints`` times :math:`t_c` evenly spaced in [0, T] (each read at the first step :math:`k \ge 1` with
:math:`kh \ge t_c`, as their loop does):

* ``fraction``: the fraction of clustered pairs, :math:`\#\{(i \ne j): \langle x_i, x_j\rangle > 1 - \delta\}`
  pooled over the systems of a beta (their "density"; :math:`\delta = 10^{-3}`);
* ``clusters``: the median over the systems of the rank of :math:`\mathbf 1[\langle x_i, x_j\rangle > 1 -
  \delta_r]` (their cluster count; :math:`\delta_r = 10^{-4}`), and ``one_cluster`` the fraction of systems with
  rank 1.

Here every beta of the grid runs in one batch (beta per sequence), in chunks of systems that bound the memory,
with any fixed-step scheme or layer normalisation of :func:`attndyn.sphere.evolve`. The curve
:math:`\Gamma = \{(t, \beta): \gamma_\beta(t) = 1 - \delta\}` of the orthogonal start
(:func:`~attndyn.sphere.gamma_crossing`) comes with the result, to be drawn over the heatmaps.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._budget import check_memory
from .._devices import resolve_device
from .._errors import param
from .._io import write_json
from .._loop import time_grid
from .._progress import progress_bar
from .._validation import InputError, check_int, check_positive, warn_hypothesis
from ..solvers import TABLEAUS, rk_step
from ._ensembles import random_parameters
from ._field import ATTENTIONS, SphereAttention, check_usa_range, unit
from ._layers import NORMS, resolve_norm
from ._stability import rate, unstable
from ._theory import gamma_crossing, threshold_rank

__all__ = ["PhaseDiagram", "phase_diagram", "load_phase_diagram", "AUTHORS_DEFAULTS"]

#: The authors' default diagram: 2,048 systems of 32 tokens in d = 2, 90 betas in [0.1, 9], t <= 30, step 0.1.
AUTHORS_DEFAULTS: dict[str, Any] = {"systems": 2048, "n": 32, "d": 2, "betas": 90, "beta_min": 0.1, "beta_max": 9.0}

# Score entries of one chunk (systems x n x n): 2^20 on the CPU (cache-sized), 2^26 on a GPU.
_CHUNK_ENTRIES = {"cpu": 1 << 20, "cuda": 1 << 26}


@dataclass(frozen=True)
class PhaseDiagram:
    r"""A phase diagram: statistics (betas x checkpoints) and the settings that made it.

    Attributes:
        betas: (nb,) the beta grid.
        times: (nc,) the checkpoint times.
        fraction: (nb, nc) fraction of clustered pairs.
        clusters: (nb, nc) median cluster count (rank).
        one_cluster: (nb, nc) fraction of systems in one cluster.
        gamma_times: (nb,) the time at which the orthogonal start reaches :math:`\gamma = 1 - \delta` (inf
            beyond the horizon), on the curve of the run's attention (SA or USA, Q = K = V = I); NaN where no
            curve applies (``kq`` or ``v`` random: ``settings["gamma_applies"]`` is False).
        settings: systems, n, d, step, time, delta, rank_delta, attention, method, norm, seed, dtype, and
            ``read_times``, the times the checkpoints are read at (the first step time at or after each, at least
            one step: with more checkpoints than steps several read the same step).
    """

    betas: np.ndarray
    times: np.ndarray
    fraction: np.ndarray
    clusters: np.ndarray
    one_cluster: np.ndarray
    gamma_times: np.ndarray
    settings: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        """JSON-able: every array as lists (inf as null)."""
        return {
            "settings": self.settings,
            "betas": self.betas.tolist(),
            "times": self.times.tolist(),
            "fraction": self.fraction.tolist(),
            "clusters": self.clusters.tolist(),
            "one_cluster": self.one_cluster.tolist(),
            "gamma_times": [None if not math.isfinite(v) else float(v) for v in self.gamma_times],
        }

    def save(self, path: str | Path) -> Path:
        """Write :meth:`record` to ``path`` as JSON, atomically."""
        return write_json(path, self.record())


def load_phase_diagram(path: str | Path) -> PhaseDiagram:
    """A diagram written by :meth:`PhaseDiagram.save`."""
    try:
        rec = json.loads(Path(path).read_text(encoding="utf-8"))
        arrays = {k: np.asarray(rec[k], dtype=np.float64) for k in ("betas", "times", "fraction", "clusters")}
        one = np.asarray(rec["one_cluster"], dtype=np.float64)
        none = math.inf if rec["settings"].get("gamma_applies", True) else math.nan  # null: after the horizon, or n/a
        gamma = np.asarray([none if v is None else v for v in rec["gamma_times"]], dtype=np.float64)
        return PhaseDiagram(one_cluster=one, gamma_times=gamma, settings=dict(rec["settings"]), **arrays)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{str(path)!r} is not a phase diagram written by PhaseDiagram.save ({exc})") from None


def _read_steps(time: float, step: float, method: str, checkpoints: int) -> tuple[float, np.ndarray, np.ndarray]:
    """The step dt (a discrete diagram takes whole layers of ``step``), the checkpoint times and the step each is
    read at: the first k >= 1 with k dt >= t_c."""
    dt = time_grid(time, step, method, max_steps=2**62)[1]
    times = np.linspace(0.0, time, checkpoints)
    return dt, times, np.maximum(1, np.ceil(times / dt - 1e-9).astype(np.int64))


def _check_grid(betas: Any) -> np.ndarray:
    try:
        b = np.asarray(betas, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"betas must be a sequence of finite numbers, got {betas!r}") from None
    if b.size == 0 or not np.isfinite(b).all():
        raise InputError("betas must be a non-empty sequence of finite numbers")
    if float(np.abs(b).max()) > MAX_BETA:
        raise InputError(
            f"betas holds {float(b[np.argmax(np.abs(b))]):g}, beyond +-{MAX_BETA:g}, where beta times the smallest "
            "score gap of float64 unit tokens (an ulp) exceeds 1, so the weights turn on the scores' rounding; "
            f"choose betas within +-{MAX_BETA:g}"
        )
    return b


#: The largest |beta| a phase diagram takes: beyond, beta times the smallest score gap of float64 unit tokens
#: (an ulp, 2.2e-16) exceeds 1, so the weights turn on the scores' rounding (and near 1e308 the figure's beta axis
#: overflows).
MAX_BETA = 1e16


def phase_diagram(
    *,
    systems: int = 2048,
    n: int = 32,
    d: int = 2,
    betas: Any = None,
    time: float = 30.0,
    step: float = 0.1,
    checkpoints: int = 200,
    delta: float = 1e-3,
    rank_delta: float = 1e-4,
    attention: str = "sa",
    method: str = "discrete",
    norm: str | None = None,
    kq: str = "identity",
    v: str = "identity",
    seed: int = 0,
    max_memory: float | None = None,
    chunk: int | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    progress: bool = False,
) -> PhaseDiagram:
    r"""The phase diagram of the fraction of clustered pairs and the cluster count over (t, beta).

    Args:
        systems: independent systems per beta. n, d: tokens per system and their dimension.
        betas: the beta grid (default: the authors' 90 values in [0.1, 9]).
        time, step: horizon and step (``time/step`` steps, rounded up).
        checkpoints: how many evenly spaced times in [0, time] are read, 0 and ``time`` included (at least 2); each
            is read at the first step at or after it, and never before the first step (t = 0 is read after one
            step: ``read_times`` says when).
        delta, rank_delta: the thresholds of the clustered pairs and of the rank statistic.
        attention, method, norm: as for :func:`attndyn.sphere.evolve` (fixed-step schemes and layers only).
        kq, v: the ensembles of :math:`K^\top Q` and V, one draw per system
            (:func:`~attndyn.sphere.random_parameters`; identities by default, as the authors' default).
        seed: the tokens are ``numpy.random.default_rng(seed)`` normal draws, normalised, drawn per beta, then
            the parameters.
        max_memory: bytes the run may hold (estimated first; refused over it). chunk: systems per chunk.

    >>> pd = phase_diagram(systems=8, n=4, d=2, betas=[0.5, 4.0], time=1.0, checkpoints=3)
    >>> pd.fraction.shape, pd.clusters.shape
    ((2, 3), (2, 3))
    """
    beta_grid = _check_grid(np.linspace(0.1, 9.0, 90) if betas is None else betas)
    # n >= 2: pairs of tokens to cluster, and the orthogonal start's curve
    systems, n, d = (
        check_int(v, param(k, k), minimum=m) for v, k, m in ((systems, "systems", 1), (n, "n", 2), (d, "d", 1))
    )
    checkpoints = _check_checkpoints(checkpoints)
    time, step = check_positive(time, param("time", "time")), check_positive(step, param("step", "step"))
    delta, rank_delta = _check_deltas(delta, rank_delta)
    seed, norm = check_int(seed, param("seed.flag", "seed")), resolve_norm(method, norm)
    step_fn = _layer(attention, method, norm)
    dt, times, read_at = _read_steps(time, step, method, checkpoints)
    dev = resolve_device(device or "cpu")
    B = systems * len(beta_grid)
    rows = _chunk_rows(B, n, d, checkpoints, chunk, dtype, dev, max_memory)
    x0, A, V = _draws(np.random.default_rng(seed), beta_grid, systems, n, d, kq, v, attention, dtype)
    beta_all = np.repeat(beta_grid, systems)  # (B,): sequence b has beta_grid[b // systems]
    _warn_unstable(dt, method, attention, beta_all, A, V)
    run = (step_fn, dt, read_at, delta, rank_delta)
    pairs, ranks = _run_all((x0, A, V), beta_all, attention, run, rows, dtype, dev, progress)
    per_beta = pairs.reshape(len(beta_grid), systems, checkpoints)
    rank_b = ranks.reshape(len(beta_grid), systems, checkpoints)
    return PhaseDiagram(
        betas=beta_grid,
        times=times,
        fraction=per_beta.sum(axis=1) / (systems * n * (n - 1)),
        clusters=np.median(rank_b, axis=1),
        one_cluster=(rank_b == 1).mean(axis=1),
        gamma_times=_gamma_times(n, beta_grid, delta, time, attention, kq, v),
        settings={
            "systems": systems, "n": n, "d": d, "time": time, "step": dt, "checkpoints": checkpoints,
            "delta": delta, "rank_delta": rank_delta, "attention": attention, "method": method,
            "norm": norm if method == "discrete" else None, "kq": kq, "v": v, "seed": seed,
            "dtype": str(dtype).removeprefix("torch."),
            "read_times": (read_at * dt).tolist(),  # the step times each checkpoint is read at (k dt >= t_c, k >= 1)
            "gamma_applies": kq == v == "identity",
        },
    )  # fmt: skip


def _gamma_times(n: int, betas: np.ndarray, delta: float, time: float, attention: str, kq: str, v: str) -> np.ndarray:
    """When the orthogonal start of each beta reaches 1 - delta (inf: after ``time``), on the curve of the run's
    attention (:func:`~attndyn.sphere.gamma_crossing`); NaN where no curve applies (random K^T Q or V)."""
    if not kq == v == "identity":
        return np.full(len(betas), np.nan)
    return np.array([gamma_crossing(n, float(b), 1 - delta, time, attention) for b in betas])


Layer = Callable[[SphereAttention, Tensor, int, float], Tensor]


def _check_phase_memory(
    B: int, n: int, d: int, checkpoints: int, rows: int, dtype: torch.dtype, dev: torch.device, limit: float | None
) -> None:
    """Refuse a diagram whose tokens, statistics and one chunk's scores would not fit in ``limit`` bytes."""
    item = torch.empty((), dtype=dtype).element_size()
    estimate = B * n * d * 8 + B * checkpoints * 10 + rows * n * (4 * n + 8 * d) * item
    check_memory(
        estimate, limit, dev, f"{B} systems of {n} tokens in dimension {d}, {checkpoints} checkpoints",
        "use fewer systems, betas or checkpoints",
    )  # fmt: skip


def _draws(
    rng: np.random.Generator,
    betas: np.ndarray,
    systems: int,
    n: int,
    d: int,
    kq: str,
    v: str,
    attention: str,
    dtype: torch.dtype,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The tokens (B, n, d), uniform on the sphere, then A and V (B, d, d) or None, from ``rng``; USA's weights
    checked against overflow with the largest beta times the largest norm of A."""
    nb = len(betas)
    x0 = rng.standard_normal((nb, systems, n, d))
    x0 /= np.linalg.norm(x0, axis=-1, keepdims=True)
    A, V = random_parameters(rng, (nb * systems,), d, kq, v)
    if attention == "usa":
        norm = 1.0 if A is None else float(np.linalg.norm(A, 2, axis=(-2, -1)).max())
        check_usa_range(None, torch.as_tensor(betas * norm), n, dtype)
    return x0.reshape(nb * systems, n, d), A, V


def _chunk_rows(
    B: int, n: int, d: int, checkpoints: int, chunk: Any, dtype: torch.dtype, dev: torch.device, limit: float | None
) -> int:
    """Systems per chunk (``chunk``, else as many as :data:`_CHUNK_ENTRIES` allows), once the whole diagram's
    memory estimate is within ``limit``."""
    rows = (
        max(1, _CHUNK_ENTRIES.get(dev.type, 1 << 20) // (n * n))
        if chunk is None
        else check_int(chunk, "chunk", minimum=1)
    )
    _check_phase_memory(B, n, d, checkpoints, min(rows, B), dtype, dev, limit)
    return rows


def _warn_unstable(
    dt: float, method: str, attention: str, beta: np.ndarray, A: np.ndarray | None, V: np.ndarray | None
) -> None:
    """Warn when the fixed step is beyond the scheme's stability interval for some system's field
    (:func:`~attndyn.sphere._stability.unstable`: those betas' columns can be integration error)."""
    a, v = (1.0 if m is None else np.linalg.norm(m, 2, axis=(-2, -1)) for m in (A, V))
    beta_t = torch.as_tensor(beta, dtype=torch.float64)
    note = unstable(
        dt, method, attention, rate(torch.as_tensor(v), torch.as_tensor(a), beta_t, attention), beta_t, adaptive=False
    )
    if note is not None:
        warn_hypothesis(note, stacklevel=4)


def _run_all(
    draws: tuple[np.ndarray, np.ndarray | None, np.ndarray | None],
    beta_all: np.ndarray,
    attention: str,
    run: tuple[Layer, float, np.ndarray, float, float],
    rows: int,
    dtype: torch.dtype,
    dev: torch.device,
    progress: bool,
) -> tuple[np.ndarray, np.ndarray]:
    """Every system (B, n, d), chunks of ``rows`` at a time: per system and checkpoint, clustered pairs and rank."""
    flat, A, V = draws
    B, C = flat.shape[0], len(run[2])
    pairs = np.zeros((B, C))
    ranks = np.zeros((B, C), dtype=np.int16)
    with progress_bar(total=B, description="sphere phase diagram", enabled=progress) as advance:
        for a in range(0, B, rows):
            y = torch.as_tensor(flat[a : a + rows], dtype=dtype, device=dev)
            beta = torch.as_tensor(beta_all[a : a + rows], dtype=dtype, device=dev)
            A_c, V_c = (
                None if m is None else torch.as_tensor(m[a : a + rows], dtype=dtype, device=dev) for m in (A, V)
            )
            dyn = SphereAttention(A=A_c, V=V_c, beta=beta, model=attention)  # A, V: (S, d, d) one per system
            pairs[a : a + rows], ranks[a : a + rows] = _run_chunk(dyn, y, *run)
            advance(y.shape[0])
    return pairs, ranks


def _check_checkpoints(checkpoints: Any) -> int:
    """At least 2 checkpoints: the grid ``linspace(0, time, checkpoints)`` spans [0, time] only then (1 would be
    t = 0 alone, read after the first step)."""
    name = param("checkpoints", "checkpoints")
    if isinstance(checkpoints, bool) or not isinstance(checkpoints, (int, np.integer)) or checkpoints < 2:
        raise InputError(
            f"{name} must be an integer >= 2 (the grid of times read spans 0 to time), got {checkpoints!r}; "
            f"for the end of the run use 2 and read the last column"
        )
    return int(checkpoints)


def _check_deltas(delta: Any, rank_delta: Any) -> tuple[float, float]:
    """Both thresholds positive and below 2 (for unit vectors <x_i, x_j> >= -1 > 1 - delta would hold for every
    pair), as floats."""
    names = (param("delta", "delta"), param("rank_delta", "rank_delta"))
    checked = [check_positive(v, name) for name, v in zip(names, (delta, rank_delta), strict=True)]
    for name, value in zip(names, checked, strict=True):
        if not value < 2:
            raise InputError(f"{name} must be below 2 (inner products of unit tokens are >= -1), got {value:g}")
    return checked[0], checked[1]


def _layer(attention: Any, method: Any, norm: Any) -> Layer:
    """The step ``(dyn, y, k, dt) -> y_next`` of a diagram: a layer with ``norm`` or a fixed-step scheme."""
    if attention not in ATTENTIONS:
        raise InputError(f"unknown attention {attention!r}; choose 'sa' (softmax) or 'usa' (unnormalized)")
    if method == "discrete":
        if norm not in NORMS:
            raise InputError(f"unknown norm {norm!r}; choose one of {', '.join(NORMS)}")
        layer = NORMS[norm]
        return lambda dyn, y, k, dt: layer(dyn.attend, y, dt)
    if method not in TABLEAUS:
        raise InputError(
            f"method {method!r} cannot run a phase diagram; choose 'discrete' or a fixed-step scheme "
            f"({', '.join(TABLEAUS)})"
        )
    tableau = TABLEAUS[method]
    return lambda dyn, y, k, dt: unit(rk_step(dyn, k * dt, y, dt, tableau))


@torch.no_grad()
def _run_chunk(
    dyn: SphereAttention, y: Tensor, step: Layer, dt: float, read_at: np.ndarray, delta: float, rank_delta: float
) -> tuple[np.ndarray, np.ndarray]:
    """Run one chunk of systems; at each checkpoint, per system, the clustered pairs and the rank statistic."""
    C = len(read_at)
    pairs = np.zeros((y.shape[0], C))
    ranks = np.zeros((y.shape[0], C), dtype=np.int16)
    c, k = 0, 0
    while c < C:
        y = step(dyn, y, k, dt)
        k += 1
        if k < read_at[c]:
            continue
        x = unit(y)
        g = x @ x.transpose(1, 2)  # (S, n, n) Gram matrices
        close = g > 1 - delta
        p = (close.sum(dim=(1, 2)) - close.diagonal(dim1=1, dim2=2).sum(dim=1)).cpu().numpy()  # pairs i != j
        r = threshold_rank(g > 1 - rank_delta).cpu().numpy()
        while c < C and read_at[c] <= k:  # several checkpoints may fall on one step
            pairs[:, c], ranks[:, c] = p, r
            c += 1
    return pairs, ranks
