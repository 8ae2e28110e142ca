"""Cells of the sphere wing (arXiv 2312.10794): a phase diagram's point and the USA energy theorem, one seed each.

``attndyn sweep`` runs a phase diagram as a grid over ``beta`` and ``time`` (every point its own seeded batch of
systems, so a sweep of thousands of points resumes cell by cell on Dask):

>>> from attndyn.experiments import EXPERIMENTS
>>> exp = EXPERIMENTS["sphere-phase"]
>>> row = exp(0, exp.arguments({"beta": 1.0, "time": 20.0, "systems": 4, "n": 4}))
>>> row["fraction_clustered"], row["one_cluster"], row["gamma_reached"]
(1.0, 1.0, True)
"""

from __future__ import annotations

import warnings

import numpy as np

from .._errors import HypothesisWarning
from .._loop import time_grid
from .._options import SaveAt
from ..sphere import KQ_ENSEMBLES, V_ENSEMBLES, energy_report, evolve, phase_diagram, sphere_clusters
from ..sphere._field import ATTENTIONS
from ..sphere._layers import NORMS
from ._registry import CellFailed, Param, experiment

__all__ = ["sphere_phase", "sphere_energy"]


@experiment(
    "sphere-phase",
    params={
        "beta": Param(float, minimum=-50.0, maximum=50.0, help="inverse temperature"),
        "time": Param(float, 30.0, minimum=1e-6, maximum=1e4, help="time at which the statistics are read"),
        "systems": Param(int, 64, minimum=1, maximum=8192, help="systems of this cell (one seed)"),
        "n": Param(int, 32, minimum=2, maximum=256, help="tokens per system"),
        "d": Param(int, 2, minimum=2, maximum=256, help="dimension"),
        "step": Param(float, 0.1, minimum=1e-4, maximum=10.0, help="layer step"),
        "delta": Param(float, 1e-3, minimum=1e-12, maximum=1.0, help="clustered pair: <x_i, x_j> > 1 - delta"),
        "attention": Param(str, "sa", choices=ATTENTIONS, help="sa or usa"),
        "norm": Param(str, "post", choices=tuple(NORMS), help="layer normalisation"),
        "kq": Param(str, "identity", choices=KQ_ENSEMBLES, help="ensemble of K^T Q, one draw per system"),
        "v": Param(str, "identity", choices=V_ENSEMBLES, help="ensemble of V, one draw per system"),
    },
    outputs={"fraction_clustered": "float64", "clusters_median": "float64", "one_cluster": "float64"}
    | {"gamma_reached": "bool"},
    optional=("gamma_reached",),
    requires=lambda p: time_grid(p["time"], p["step"], "discrete", max_steps=2**62),  # whole layers of step
    primary="fraction_clustered",
    title="Tokens on the sphere: clustered pairs and clusters at (t, beta) (arXiv 2312.10794, Section 6)",
)
def sphere_phase(
    seed: int, *, beta: float, time: float, systems: int, n: int, d: int, step: float, delta: float, attention: str,
    norm: str, kq: str, v: str,
) -> dict:  # fmt: skip
    r"""One point (t, beta) of the authors' phase diagram: ``systems`` random systems (seeded) run by layers with
    ``norm`` up to ``time``; the fraction of clustered pairs, the median cluster count (rank of the thresholded
    Gram matrix, threshold :math:`10^{-4}`), the fraction of systems in one cluster, and whether the orthogonal
    start has reached :math:`\gamma = 1 - \delta` by ``time`` (the curve :math:`\Gamma` of the cell's attention as a
    boolean field; None with random ``kq`` or ``v``, where no such curve applies)."""
    pd = phase_diagram(
        systems=systems, n=n, d=d, betas=[beta], time=time, step=step, checkpoints=2, delta=delta,
        attention=attention, norm=norm, kq=kq, v=v, seed=seed,
    )  # fmt: skip
    return {
        "fraction_clustered": float(pd.fraction[0, -1]),
        "clusters_median": float(pd.clusters[0, -1]),
        "one_cluster": float(pd.one_cluster[0, -1]),
        "gamma_reached": None if np.isnan(pd.gamma_times[0]) else bool(np.isfinite(pd.gamma_times[0])),
    }


#: The largest move of a token in one rk4 step of a ``sphere-energy`` cell (a chord of the unit sphere, about the
#: angle in radians); beyond it the step does not resolve the dynamics. Measured on n = 16, d = 3 from 8 seeds at
#: beta in 3..10 and steps 0.001..0.02: every energy decrease came with a move of 0.28 or more (the energy is
#: nondecreasing in exact arithmetic), and step 0.01 moves at most 0.1 at beta <= 4.
STEP_MOVE_MAX = 0.2


@experiment(
    "sphere-energy",
    params={
        "n": Param(int, 16, minimum=2, maximum=1024, help="tokens"),
        "d": Param(int, 3, minimum=2, maximum=256, help="dimension"),
        "beta": Param(float, 1.0, minimum=0.0, maximum=20.0, help="inverse temperature"),
        "time": Param(float, 10.0, minimum=1e-6, maximum=1e4, help="horizon"),
        "step": Param(float, 0.01, minimum=1e-5, maximum=1.0, help="rk4 step"),
    },
    outputs={"energy_monotone": "bool", "one_cluster": "bool", "clusters": "int64", "largest_drop": "float64"},
    primary="energy_monotone",
    title="USA with Q = K = V = I: E_beta never decreases; one cluster (arXiv 2312.10794, Section 2)",
)
def sphere_energy(seed: int, *, n: int, d: int, beta: float, time: float, step: float) -> dict:
    r"""n uniform random unit tokens in dimension d (seeded), USA with :math:`Q = K = V = I` by rk4: is
    :math:`E_\beta` nondecreasing at every step (:func:`attndyn.sphere.energy_report`), and is there one cluster
    (tokens linked within 1e-3 rad) at the end? A step that moves a token by more than :data:`STEP_MOVE_MAX` (at
    beta >= 6 with step 0.01 USA's speed, up to e^beta, outruns rk4: the energy "decreased" by 0.3 to 0.7 where a
    step of 0.001 gives it nondecreasing) is a failed cell, as is an undecided check."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    with warnings.catch_warnings():  # a step beyond rk4's interval is a failed cell (below), not a warning
        warnings.simplefilter("ignore", HypothesisWarning)
        traj = evolve(x, time=time, beta=beta, attention="usa", step=step, save=SaveAt(every=1))
    if traj.stats.stop_reason == "solver_failed":
        raise CellFailed(f"the solve failed: {traj.stats.message}")
    move = float((traj.ys[1:, 0] - traj.ys[:-1, 0]).norm(dim=-1).max())  # every step is kept
    if move > STEP_MOVE_MAX:
        raise CellFailed(
            f"one rk4 step moved a token by {move:.3g} (more than {STEP_MOVE_MAX:g}, an angle of about "
            f"{STEP_MOVE_MAX:g} rad): step = {step:g} does not resolve the dynamics at beta = {beta:g}, and the "
            "energy would measure the scheme's error; lower step"
        )
    rep = energy_report(traj)
    if rep.holds is None:
        raise CellFailed(f"the energy check is undecided: {rep.undecided}")
    clusters = sphere_clusters(traj.final_tokens, 1e-3)
    return {
        "energy_monotone": rep.holds,
        "one_cluster": len(clusters) == 1,
        "clusters": len(clusters),
        "largest_drop": rep.largest_drop,
    }
