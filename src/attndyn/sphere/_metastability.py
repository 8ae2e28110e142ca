r"""Metastability: how long the tokens linger in several clusters, and how that lifetime grows with beta.

At large beta the tokens on the circle gather into a few clusters quickly and then stay in that configuration for a
long time before the clusters merge (arXiv 2312.10794, Part 3, and dynamic metastability, arXiv 2410.06833). For each
system the cluster count over time is a staircase (:func:`~attndyn.sphere.plateaus`); its *lifetime* here is the
duration of the longest plateau with more than one cluster. Over a grid of beta the lifetimes are fitted as
:math:`\log \tau = a + b\beta` by least squares, with the 95% interval of the slope b from Student's t; the report
holds when the whole interval is above 0 (the lifetime grows with beta). Observed, not proved: a plateau still
running at the horizon is cut there (censored), which biases the slope down.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._options import SaveAt
from .._validation import InputError, check_int, check_positive
from ._engine import evolve
from ._theory import plateaus, threshold_rank

__all__ = ["MetastabilityReport", "metastability"]


@dataclass(frozen=True)
class MetastabilityReport:
    """Lifetimes (systems per beta) of the longest multi-cluster plateau, and the fit of log lifetime on beta.

    Attributes:
        betas: the beta grid.
        lifetimes: (betas, systems) durations; 0 for a system that never had a plateau of several clusters.
        slope, intercept: the fit :math:`\\log\\tau = a + b\\beta` over the positive lifetimes.
        slope_interval: the 95% interval of b.
        censored: the fraction of lifetimes cut by the horizon.
        settings: n, d, time, step, angle, systems, seed.
    """

    betas: list[float]
    lifetimes: list[list[float]]
    slope: float
    intercept: float
    slope_interval: tuple[float, float]
    censored: float
    settings: dict[str, Any]

    @property
    def holds(self) -> bool:
        """The lifetime grows with beta: the slope's whole 95% interval is above 0."""
        return self.slope_interval[0] > 0

    def record(self) -> dict[str, Any]:
        return {
            "statement": "the lifetime of multi-cluster plateaus grows with beta (observed; arXiv 2312.10794, Part 3)",
            "holds": self.holds,
            "slope": self.slope,
            "slope_interval": list(self.slope_interval),
            "intercept": self.intercept,
            "censored": self.censored,
            "mean_lifetimes": [float(np.mean(x)) for x in self.lifetimes],
            "betas": self.betas,
            "settings": self.settings,
        }


def metastability(
    betas: Any,
    *,
    systems: int = 16,
    n: int = 16,
    d: int = 2,
    time: float = 50.0,
    step: float = 0.1,
    angle: float = 1e-2,
    every: int = 2,
    seed: int = 0,
) -> MetastabilityReport:
    r"""Run ``systems`` random systems per beta (SA, Q = K = V = I, rk4, every beta in one batch) and fit how the
    lifetime of their multi-cluster plateaus grows with beta. Clusters: the rank of
    :math:`\mathbf 1[\langle x_i, x_j\rangle > \cos\theta]` at every ``every``-th step."""
    grid = np.asarray(betas, dtype=np.float64).reshape(-1)
    if grid.size < 3 or not np.isfinite(grid).all():
        raise InputError("betas must hold at least 3 finite numbers (a slope and its interval need them)")
    systems = check_int(systems, "systems", minimum=2)
    n, d = check_int(n, "n", minimum=2), check_int(d, "d", minimum=2)
    time, step, angle = check_positive(time, "time"), check_positive(step, "step"), _angle(angle)
    rng = np.random.default_rng(check_int(seed, "seed"))
    x = rng.standard_normal((grid.size * systems, n, d))
    x /= np.linalg.norm(x, axis=-1, keepdims=True)
    traj = evolve(
        x, time=time, beta=np.repeat(grid, systems), step=step, save=SaveAt(every=check_int(every, "every", minimum=1))
    )
    ys = traj.ys  # (T, B, n, d)
    gram = ys @ ys.transpose(-1, -2)
    counts = threshold_rank((gram > math.cos(angle)).flatten(0, 1)).reshape(ys.shape[:2]).cpu().numpy()  # (T, B)
    ts = traj.ts.tolist()
    life = np.zeros(grid.size * systems)
    cut = 0
    for b in range(life.size):
        runs = plateaus(ts, counts[:, b])
        multi = [p for p in runs if p["value"] > 1]
        if multi:
            longest = max(multi, key=lambda p: p["duration"])
            life[b] = longest["duration"]
            cut += longest is runs[-1]  # still running at the horizon (one that ended at the last time is not)
    return _fit(grid, life.reshape(grid.size, systems), cut / life.size, {
        "n": n, "d": d, "time": time, "step": step, "angle": angle, "systems": systems, "seed": seed,
    })  # fmt: skip


def _fit(grid: np.ndarray, life: np.ndarray, censored: float, settings: dict[str, Any]) -> MetastabilityReport:
    from scipy import stats

    b = np.repeat(grid, life.shape[1])
    y = life.reshape(-1)
    keep = y > 0
    if keep.sum() < 3 or len(np.unique(b[keep])) < 2:
        raise InputError("too few systems had several clusters to fit a slope; raise beta, systems or time")
    fit = stats.linregress(b[keep], np.log(y[keep]))
    half = float(stats.t.ppf(0.975, keep.sum() - 2) * fit.stderr)
    return MetastabilityReport(
        betas=grid.tolist(),
        lifetimes=life.tolist(),
        slope=float(fit.slope),
        intercept=float(fit.intercept),
        slope_interval=(float(fit.slope) - half, float(fit.slope) + half),
        censored=float(censored),
        settings=settings,
    )


def _angle(angle: Any) -> float:
    a = check_positive(angle, "angle")
    if a > math.pi:
        raise InputError(f"angle must be at most pi (radians between two tokens on the sphere), got {angle!r}")
    return a
