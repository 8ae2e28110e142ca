r"""The hardmax playground's logic: a state (tokens, A, alpha, layers, selected layer) -> what the page shows.

Everything is computed by the library: :func:`attndyn.hardmax` runs eq. (1.1) of the hardmax paper,
:math:`z_i^{k+1} = z_i^k + \frac{\alpha}{1+\alpha}\bigl(\frac{1}{|C_i(Z^k)|}\sum_{j\in C_i(Z^k)} z_j^k - z_i^k\bigr)`,
:func:`attndyn.leaders` the leaders (Definition 1.1) with the layer each emerged at and the rounding
events, :func:`attndyn.follow_graph` who follows whom at the selected layer, :func:`attndyn.hardmax_theorem`
the verdict of Theorem 1.1, :class:`attndyn.Polytope` the hull of the leaders.

Tokens live in the plane (d = 2) or in space (d = 3); a 3-D run is drawn by :func:`hardmax_figure` in
matplotlib's 3-D axes, and :func:`turn` sets the angle it is seen from without touching the run.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import analysis
from .._hardmax import hardmax
from .._options import SaveAt
from .._validation import HypothesisWarning, InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .._trajectory import HardmaxTrajectory
    from ..analysis import HardmaxTheoremReport, LeaderSet

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
    "turn",
    "A_presets_for",
]

TOKEN_PRESETS = (
    "Fig. 2: square polytope",
    "Fig. 2: triangle polytope",
    "Fig. 2: emerging leader",
    "Fig. 2: non-leader clusters",
    "Fig. 1: one step",
    "Fig. 7: leader at layer 1",
    "random cloud",
    "3-D: cube polytope",
    "3-D: random cloud",
)
A_PRESETS = ("I", "diagonal", "rotation", "random SPD", "Fig. 1: [[2,1],[1,1]]")
DIMENSIONS = (2, 3)  # the playground draws tokens in the plane or in space
# Fig. 2's square polytope one dimension up: the 8 corners of the cube [-1, 1]^3 and 4 tokens inside. With
# A = I each corner c scores <c, c> = 3 against itself and less against any other token, so the corners
# lead from layer 0 and the 4 inner tokens are drawn to the corners they see best.
CUBE_TOKENS = [
    *([x, y, z] for x in (1.0, -1.0) for y in (1.0, -1.0) for z in (1.0, -1.0)),
    [0.3, 0.1, 0.2],
    [-0.2, 0.5, -0.1],
    [0.1, -0.6, 0.3],
    [-0.5, -0.2, -0.4],
]
MAX_LAYERS = 500  # the playground's slider ends well below this; typed states are held to it too


def token_preset(name: str, *, n: int = 50, seed: int = 0) -> np.ndarray:
    """The tokens (n, d) of a named configuration: the papers' Figs. 1, 2, 7 (d = 2), the cube polytope
    (:data:`CUBE_TOKENS`, d = 3), or a seeded random cloud of n tokens, uniform in [-1, 1]^d (d = 2 or 3).

    >>> token_preset("3-D: cube polytope").shape, token_preset("3-D: random cloud", n=7).shape
    ((12, 3), (7, 3))
    """
    from ..experiments import _configurations as hx

    if name.startswith("Fig. 2: "):
        return np.array(hx.FIG2_CONFIGS[name[len("Fig. 2: ") :]], dtype=np.float64)
    if name == "Fig. 1: one step":
        return np.array(hx.FIG1_TOKENS, dtype=np.float64)
    if name == "Fig. 7: leader at layer 1":
        return np.array(hx.FIG7_TOKENS, dtype=np.float64)
    if name == "3-D: cube polytope":
        return np.array(CUBE_TOKENS, dtype=np.float64)
    if name in ("random cloud", "3-D: random cloud"):
        if not 1 <= n <= 5000:
            raise InputError(f"n={n} tokens: choose 1 <= n <= 5000")
        return np.random.default_rng(seed).uniform(-1.0, 1.0, (n, 3 if name.startswith("3-D") else 2))
    raise InputError(f"unknown token preset {name!r}; choose one of {', '.join(TOKEN_PRESETS)}")


def A_presets_for(d: int) -> tuple[str, ...]:
    """The names of :data:`A_PRESETS` that exist for tokens of dimension ``d`` (rotation and Fig. 1's A: d = 2).

    >>> A_presets_for(3)
    ('I', 'diagonal', 'random SPD')
    """
    return A_PRESETS if d == 2 else ("I", "diagonal", "random SPD")


def A_preset(name: str, *, d: int = 2, seed: int = 0, angle: float = 30.0) -> np.ndarray:
    """A named (d, d) matrix: I, diag(2, 1, 1/2, ...), a rotation by ``angle`` degrees (d = 2), a seeded random
    SPD matrix (the reproduce experiments' sampler), or the A of the hardmax paper's Fig. 1 (d = 2).

    >>> A_preset("diagonal", d=3).diagonal().tolist()
    [2.0, 1.0, 0.5]
    """
    from ..experiments._configurations import FIG1_A
    from ..experiments._samplers import random_spd

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
    raise InputError(
        f"A preset {name!r} does not exist for d = {d}; choose one of {', '.join(A_presets_for(d))}"
        f" or type a {d} x {d} A"
    )


@dataclass(frozen=True)
class HardmaxState:
    """What the playground runs: tokens (n, d) with d = 2 or 3, A (d, d), alpha, layers, the layer shown, and
    whether a non-SPD A is refused (Theorem 1.1's hypothesis) rather than run with a note."""

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
        if rep.verdict == "holds":
            nv = 0 if rep.polytope is None else len(rep.polytope.vertices)
            return f"Theorem 1.1 holds: {len(rep.leaders)} leaders, K has {nv} vertices"
        if not rep.settled:
            return "Theorem 1.1 not checked: the tokens still move after the last layer (add layers)"
        if rep.verdict != "does NOT hold":  # undecided, or outside its hypotheses
            return f"Theorem 1.1 {rep.verdict}"
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
    shape = np.shape(state.tokens)
    if len(shape) != 2 or shape[1] not in DIMENSIONS:
        raise InputError(f"tokens of shape {shape}: the playground draws (n, 2) or (n, 3) tokens")
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

    >>> from attndyn.explore._hardmax_view import HardmaxState, run_hardmax, token_preset
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


def hardmax_figure(result: HardmaxResult, *, azimuth: float | None = None, elevation: float | None = None) -> Figure:
    """The library's picture of the run (:func:`attndyn.plotting.plot_trajectory`) at the selected layer.

    The leaders that have emerged by then are labelled with the layer they emerged at, and who follows whom
    there is drawn as grey segments from each token to the tokens it follows (``result.follow``). A 3-D run
    is seen from ``azimuth`` and ``elevation`` (degrees; matplotlib's defaults when None, see :func:`turn`);
    the picture is drawn from the result, the dynamics are not run again.

    >>> from attndyn.explore._hardmax_view import HardmaxState, run_hardmax, token_preset
    >>> res = run_hardmax(HardmaxState(token_preset("3-D: cube polytope"), np.eye(3), layers=10))
    >>> ax = hardmax_figure(res, azimuth=40, elevation=20).axes[0]
    >>> ax.azim, ax.elev, sorted(t.get_text().strip() for t in ax.texts)[:2]
    (40, 20, ['0 (layer 0)', '1 (layer 0)'])
    """
    from ..plotting import plot_trajectory

    s = result.state
    since = dict(zip(result.leaders.indices, result.leaders.since))
    shown = set(result.leaders_at(s.layer))
    labels = [f"{i} (layer {since[i]})" if i in shown else "" for i in range(len(result.states[0]))]
    fig = plot_trajectory(result.trajectory, index=s.layer, labels=labels, title=f"hardmax, alpha = {s.alpha:g}")
    _follow_segments(fig.axes[0], result)
    if azimuth is not None or elevation is not None:
        turn(fig, azimuth=azimuth, elevation=elevation)
    return fig


def _follow_segments(ax: Any, result: HardmaxResult) -> None:
    """Grey segments z_i -> z_j at the selected layer for every j in C_i(Z^layer), j != i."""
    ii, jj = np.nonzero(result.follow & ~np.eye(len(result.follow), dtype=bool))
    z = result.states[result.state.layer]  # (n, d)
    segments = np.stack([z[ii], z[jj]], axis=1)  # (pairs, 2, d)
    kw: dict[str, Any] = {"colors": "#999999", "alpha": 0.6, "lw": 0.7, "zorder": 2}  # over trails, under tokens
    if z.shape[1] == 3:
        from mpl_toolkits.mplot3d.art3d import Line3DCollection

        ax.add_collection3d(Line3DCollection(list(segments), **kw), autolim=False)
    else:
        from matplotlib.collections import LineCollection

        ax.add_collection(LineCollection(list(segments), **kw), autolim=False)


def turn(fig: Figure, *, azimuth: float | None = None, elevation: float | None = None) -> Figure:
    """See the 3-D axes of ``fig`` (a :func:`hardmax_figure` of a 3-D run) from ``azimuth`` and ``elevation``
    (degrees; None keeps the current angle). Only the view changes: the artists stay, nothing is recomputed,
    so a turning picture is redrawn, not rebuilt. Returns ``fig``.
    """
    ax: Any = fig.axes[0]  # an Axes3D for a 3-D run
    if getattr(ax, "name", "") != "3d":
        raise InputError("turn(): the figure is a 2-D picture; only a 3-D run (d = 3 tokens) has a view angle")
    ax.view_init(elev=ax.elev if elevation is None else elevation, azim=ax.azim if azimuth is None else azimuth)
    return fig
