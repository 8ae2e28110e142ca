r"""The hardmax playground's logic: a state (tokens, A, alpha, layers, selected layer) -> what the page shows.

Everything is computed by the library: :func:`attndyn.hardmax` runs eq. (1.1) of the hardmax paper,
:math:`z_i^{k+1} = z_i^k + \frac{\alpha}{1+\alpha}\bigl(\frac{1}{|C_i(Z^k)|}\sum_{j\in C_i(Z^k)} z_j^k - z_i^k\bigr)`,
:func:`attndyn.leaders` the leaders (Definition 1.1) with the layer each emerged at and the rounding
events, :func:`attndyn.follow_graph` who follows whom at the selected layer, :func:`attndyn.hardmax_theorem`
the verdict of Theorem 1.1, :class:`attndyn.Polytope` the hull of the leaders.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import analysis
from .._hardmax import hardmax
from .._validation import HypothesisWarning, InputError
from ..options import SaveAt

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..analysis import HardmaxTheoremReport, LeaderSet
    from ..trajectory import HardmaxTrajectory

__all__ = [
    "HardmaxState",
    "HardmaxResult",
    "run_hardmax",
    "TOKEN_PRESETS",
    "A_PRESETS",
    "token_preset",
    "A_preset",
    "hardmax_inputs",
    "hardmax_figure",
]

TOKEN_PRESETS = (
    "Fig. 2: square polytope",
    "Fig. 2: triangle polytope",
    "Fig. 2: emerging leader",
    "Fig. 2: non-leader clusters",
    "Fig. 1: one step",
    "Fig. 7: leader at layer 1",
    "random cloud",
)
A_PRESETS = ("I", "diagonal", "rotation", "random SPD", "Fig. 1: [[2,1],[1,1]]")
MAX_LAYERS = 500  # the playground's slider ends well below this; typed states are held to it too


def token_preset(name: str, *, n: int = 50, seed: int = 0) -> np.ndarray:
    """The tokens of a named configuration (the papers' Figs. 1, 2, 7) or a seeded random cloud of n tokens."""
    from ..reproduce import hardmax_experiments as hx

    if name.startswith("Fig. 2: "):
        return np.array(hx.FIG2_CONFIGS[name[len("Fig. 2: ") :]], dtype=np.float64)
    if name == "Fig. 1: one step":
        return np.array(hx.FIG1_TOKENS, dtype=np.float64)
    if name == "Fig. 7: leader at layer 1":
        return np.array([[1.0, 0.0], [1.2, 0.5], [0.0, 4.0]])
    if name == "random cloud":
        if not 1 <= n <= 5000:
            raise InputError(f"n={n} tokens: choose 1 <= n <= 5000")
        return np.random.default_rng(seed).uniform(-1.0, 1.0, (n, 2))
    raise InputError(f"unknown token preset {name!r}; choose one of {', '.join(TOKEN_PRESETS)}")


def A_preset(name: str, *, d: int = 2, seed: int = 0, angle: float = 30.0) -> np.ndarray:
    """A named matrix: I, diag(2, 1/2, ...), a rotation by ``angle`` degrees (d = 2), a seeded random SPD
    matrix (the reproduce experiments' sampler), or the A of the hardmax paper's Fig. 1."""
    from ..experiments.samplers import random_spd
    from ..reproduce.hardmax_experiments import FIG1_A

    if name == "I":
        return np.eye(d)
    if name == "diagonal":
        return np.diag(2.0 ** -np.arange(-1.0, d - 1.0))
    if name == "rotation" and d == 2:
        c, s = np.cos(np.radians(angle)), np.sin(np.radians(angle))
        return np.array([[c, -s], [s, c]])
    if name == "random SPD":
        return random_spd(np.random.default_rng(seed), d)
    if name.startswith("Fig. 1") and d == 2:
        return np.array(FIG1_A, dtype=np.float64)
    raise InputError(f"A preset {name!r} does not exist for d = {d}; choose one of {', '.join(A_PRESETS)}")


@dataclass(frozen=True)
class HardmaxState:
    """What the playground runs: tokens (n, d), A (d, d), alpha, layers, the layer shown, and whether
    a non-SPD A is refused (Theorem 1.1's hypothesis) rather than run with a note."""

    tokens: np.ndarray
    A: np.ndarray
    alpha: float = 0.5
    layers: int = 30
    layer: int = 30
    require_spd: bool = False

    def record(self) -> dict[str, Any]:
        """JSON form; ``tokens`` is the key `attndyn hardmax STATE.json` reads."""
        return {
            "tokens": np.asarray(self.tokens).tolist(),
            "A": np.asarray(self.A).tolist(),
            "alpha": self.alpha,
            "layers": self.layers,
            "layer": self.layer,
        }


@dataclass(frozen=True)
class HardmaxResult:
    """One run of the playground and what is read off it."""

    state: HardmaxState
    trajectory: HardmaxTrajectory
    states: np.ndarray  # (layers + 1, n, d) every layer
    leaders: LeaderSet
    follow: np.ndarray  # (n, n) bool at state.layer: (i, j) when j is in C_i(Z^layer)
    hull: tuple[int, ...]  # tokens whose position at state.layer is a vertex of the hull of the leaders there
    theorem: HardmaxTheoremReport
    notes: tuple[str, ...] = ()
    seconds: float = field(default=0.0, compare=False)

    def leaders_at(self, layer: int) -> list[int]:
        """Leaders that have emerged by ``layer`` (``since <= layer``)."""
        return [i for i, k in zip(self.leaders.indices, self.leaders.since) if k <= layer]

    def verdict(self) -> str:
        """Theorem 1.1 on this run, in one line."""
        rep = self.theorem
        if rep.holds:
            nv = 0 if rep.polytope is None else len(rep.polytope.vertices)
            return f"Theorem 1.1 holds: {len(rep.leaders)} leaders, K has {nv} vertices"
        if not rep.settled:
            return "Theorem 1.1 not checked: the tokens still move after the last layer (add layers)"
        failed = [
            k for k in ("leaders_nonempty", "limits_on_boundary", "vertices_are_leader_limits") if not rep.record()[k]
        ]
        return "Theorem 1.1 fails on this run: " + ", ".join(failed)

    def record(self) -> dict[str, Any]:
        """JSON form of what the page shows (leaders, follow pairs, hull, theorem, rounding events)."""
        return {
            "leaders": self.leaders.records(),
            "rounding_events": self.leaders.rounding_records(),
            "follow": [[int(i), int(j)] for i, j in zip(*np.nonzero(self.follow))],
            "hull": list(self.hull),
            "theorem": self.theorem.record(),
            "verdict": self.verdict(),
            "notes": list(self.notes),
        }


def _check_state(state: HardmaxState) -> HardmaxState:
    if not 1 <= state.layers <= MAX_LAYERS:
        raise InputError(f"layers={state.layers}: choose 1 <= layers <= {MAX_LAYERS}")
    return replace(state, layer=min(max(int(state.layer), 0), state.layers))


def _hull(states: np.ndarray, lead: list[int]) -> tuple[int, ...]:
    if not lead:
        return ()
    poly = analysis.Polytope.from_points(states[lead])
    return tuple(lead[v] for v in poly.vertices)


def run_hardmax(state: HardmaxState) -> HardmaxResult:
    """Run the playground's state through the library; bad input raises :class:`attndyn.InputError`.

    >>> from attndyn.explore.hardmax_view import HardmaxState, run_hardmax, token_preset
    >>> res = run_hardmax(HardmaxState(token_preset("Fig. 2: square polytope"), np.eye(2), layers=30))
    >>> res.leaders_at(30), res.theorem.holds
    ([0, 1, 2, 3], True)
    """
    state = _check_state(state)
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", HypothesisWarning)
        traj = hardmax(state.tokens, alpha=state.alpha, A=state.A, layers=state.layers, save=SaveAt(follow=True))
    notes = tuple(dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, HypothesisWarning)))
    theorem = analysis.hardmax_theorem(traj)
    if state.require_spd and not theorem.hypotheses["A_spd"]:
        raise InputError("A is not symmetric positive definite; type an SPD matrix or untick 'A must be SPD'")
    states = traj.tokens.numpy()  # (layers + 1, n, d)
    lead = analysis.leaders(traj)
    follow = analysis.follow_graph(traj, state.layer).numpy()
    hull = _hull(states[state.layer], [i for i, k in zip(lead.indices, lead.since) if k <= state.layer])
    return HardmaxResult(state, traj, states, lead, follow, hull, theorem, notes, seconds=time.perf_counter() - t0)


def hardmax_inputs(state: HardmaxState) -> dict[str, Any]:
    """The files that rerun this state from the command line: tokens, A and the state as JSON, the command."""
    s = _check_state(state)
    return {
        "tokens.npy": np.asarray(s.tokens, dtype=np.float64),
        "A.npy": np.asarray(s.A, dtype=np.float64),
        "state.json": s.record(),
        "command.txt": f"attndyn hardmax tokens.npy --alpha {s.alpha:g} --layers {s.layers} --matrix A.npy --json\n",
    }


def hardmax_figure(result: HardmaxResult) -> Figure:
    """The library's picture of the run (:func:`attndyn.plotting.plot_trajectory`) at the selected layer."""
    from ..plotting import plot_trajectory

    s = result.state
    return plot_trajectory(result.trajectory, index=s.layer, title=f"hardmax, alpha = {s.alpha:g}, layer {s.layer}")
