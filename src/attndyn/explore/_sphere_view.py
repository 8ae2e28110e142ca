r"""The Sphere view's logic: a state (tokens, beta, SA/USA, normalisation, causal mask) -> run, energy, clusters.

:func:`attndyn.sphere.evolve` runs the dynamics of arXiv 2312.10794,
:math:`\dot x_i = \mathbf P^\perp_{x_i}\sum_j w_{ij} x_j` (SA or USA, Q = K = V = I), or its discrete layers;
the view shows the tokens, the interaction energy :math:`E_\beta` and the cluster count over time, and the verdicts
of :func:`attndyn.sphere.energy_report` and :func:`attndyn.sphere.cluster_report`.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import sphere as sp
from .._options import SaveAt
from .._validation import HypothesisWarning, InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "SphereState",
    "SphereResult",
    "run_sphere",
    "sphere_tokens",
    "sphere_inputs",
    "sphere_view_figure",
    "NORM_CHOICES",
    "MAX_KEPT",
]

#: "continuous (rk4)" runs SA/USA with rk4; the others are discrete layers with that normalisation.
NORM_CHOICES = ("continuous (rk4)", "post", "pre", "peri", "ngpt")
MAX_KEPT = 150  # states kept for the curves


def sphere_tokens(n: int, d: int, seed: int = 0) -> np.ndarray:
    """n seeded uniform random unit tokens in dimension d."""
    if not 1 <= n <= 500:
        raise InputError(f"n={n} tokens: choose 1 <= n <= 500")
    if d not in (2, 3):
        raise InputError(f"d={d}: the view draws the circle (d = 2) or the sphere (d = 3)")
    x = np.random.default_rng(seed).standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@dataclass(frozen=True)
class SphereState:
    """What the Sphere view runs."""

    n: int = 32
    d: int = 2
    seed: int = 0
    beta: float = 1.0
    time: float = 20.0
    step: float = 0.1
    attention: str = "sa"
    norm: str = NORM_CHOICES[0]
    causal: bool = False
    angle: float = 1e-3

    def run_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`attndyn.sphere.evolve` (besides the tokens)."""
        if self.norm not in NORM_CHOICES:
            raise InputError(f"unknown normalisation {self.norm!r}; choose one of {', '.join(NORM_CHOICES)}")
        discrete = self.norm != NORM_CHOICES[0]
        steps = max(1, int(round(self.time / self.step)))
        return {
            "time": self.time, "beta": self.beta, "attention": self.attention, "step": self.step,
            "method": "discrete" if discrete else "rk4", "norm": self.norm if discrete else None,
            "causal": self.causal, "save": SaveAt(every=max(1, steps // MAX_KEPT)),
        }  # fmt: skip


@dataclass(frozen=True)
class SphereResult:
    """One run of the view: the trajectory, E_beta and the cluster count at the kept times, the two reports."""

    state: SphereState
    trajectory: sp.SphereTrajectory
    energies: np.ndarray
    counts: np.ndarray
    clusters: sp.ClusterReport
    energy: sp.EnergyReport
    seconds: float = field(default=0.0, compare=False)

    def record(self) -> dict[str, Any]:
        return {"clusters": self.clusters.record(), "energy": self.energy.record()}


def run_sphere(state: SphereState) -> SphereResult:
    """Run ``state`` and measure it."""
    t0 = time.perf_counter()
    with warnings.catch_warnings():  # a step beyond the scheme's interval: the view shows the verdicts undecided
        warnings.simplefilter("ignore", HypothesisWarning)
        traj = sp.evolve(sphere_tokens(state.n, state.d, state.seed), **state.run_kwargs())
    energies = sp.energy(traj.ys[:, 0], state.beta).double().cpu().numpy()
    clusters = sp.cluster_report(traj, angle=state.angle)
    counts = np.array([len(sp.sphere_clusters(x, state.angle)) for x in traj.ys[:, 0]])
    return SphereResult(
        state, traj, energies, counts, clusters, sp.energy_report(traj), seconds=time.perf_counter() - t0
    )


def sphere_inputs(state: SphereState) -> dict[str, Any]:
    """The files that rerun this state from the command line: the tokens, the state as JSON, the command."""
    kw = state.run_kwargs()
    cmd = (
        f"attndyn sphere tokens.npy --beta {state.beta:g} --time {state.time:g} --attention {state.attention} "
        f"--step {state.step:g}"
        + (f" --norm {kw['norm']}" if kw["norm"] else " --method rk4")
        + (" --causal" if state.causal else "")
        + f" --angle {state.angle:g} --json\n"
    )
    tokens = sphere_tokens(state.n, state.d, state.seed)
    return {"tokens.npy": tokens, "state.json": asdict(state), "command.txt": cmd}


def sphere_view_figure(result: SphereResult) -> Figure:
    """The library's picture of the run (:func:`attndyn.plotting._sphere.sphere_tokens_figure`)."""
    from ..plotting._sphere import sphere_tokens_figure

    return sphere_tokens_figure(result.trajectory)
