r"""The softmax regimes view's logic: a state (tokens, Q, K, V, beta, time, method) -> regime, geometry, attention.

:func:`attndyn.softmax` runs the softmax paper's dynamics, eq. (1)
:math:`\dot x_i = \sum_j P_{ij}(t) V x_j`, :math:`P_{ij} = \mathrm{softmax}_j(\beta\langle Q x_i, K x_j\rangle)`
(or the rescaled eq. (4), or the discrete eq. (3) / Remark 4); :func:`attndyn.analysis.regime_of` names the
row of Table 1 that (Q, K, V) falls in and :func:`attndyn.softmax_geometry` checks that row's theorem
(Thms 2.1, 3.1, 4.1, 5.1, C.5, Conjecture 4.2) on the run.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import analysis
from .._options import SaveAt
from .._softmax import softmax
from .._validation import HypothesisWarning, InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .._trajectory import SoftmaxTrajectory
    from ..analysis import GeometryReport

__all__ = ["SoftmaxState", "SoftmaxResult", "run_softmax", "V_PRESETS", "V_preset", "softmax_tokens", "softmax_inputs"]

#: Table 1 of the softmax paper: preset name -> (V, run rescaled (eq. (4))?, regime its theorem is for).
V_PRESETS = (
    "d = 1, V = 1 (Thm 2.1, Boolean)",
    "V = I (Thm 3.1, polytope)",
    "good triple, Fig. 6 (Thm 4.1, hyperplanes)",
    "paranormal, diag(1, 1, -1/2) (Thm 5.1)",
    "V = -I (Thm C.5, collapse)",
    "Fig. 7a, d = 3 (Conj. 4.2, codimension)",
)
_PRESET_ROWS = ("boolean", "polytope", "hyperplanes", "paranormal", "collapse", "codimension")  # of V_PRESETS
MAX_KEPT = 200  # states kept for the time slider (every k-th grid time)


def V_preset(name: str) -> tuple[np.ndarray, bool, str | None, float]:
    """V of a Table 1 row, whether its theorem is about the rescaled tokens, the regime to check
    (None: inferred by :func:`attndyn.analysis.regime_of`) and the final time of the paper's figure
    (``attndyn reproduce --quick``), all from :mod:`attndyn.experiments._configurations`."""
    from ..experiments._configurations import TABLE1_HORIZONS, table1_value_matrix

    if name not in V_PRESETS:
        raise InputError(f"unknown V preset {name!r}; choose one of {', '.join(V_PRESETS)}")
    row = _PRESET_ROWS[V_PRESETS.index(name)]
    V = table1_value_matrix(row, np.random.default_rng(0))
    return V, row != "collapse", "codimension" if row == "codimension" else None, TABLE1_HORIZONS[row][0]


def softmax_tokens(n: int, d: int, seed: int = 0) -> np.ndarray:
    """n seeded standard normal tokens in R^d (the softmax paper's figures)."""
    if not 1 <= n <= 2000:
        raise InputError(f"n={n} tokens: choose 1 <= n <= 2000")
    return np.random.default_rng(seed).standard_normal((n, d))


@dataclass(frozen=True)
class SoftmaxState:
    """What the regimes view runs; ``at`` is the time whose attention matrix is shown, ``regime`` the
    row of Table 1 to check (None: inferred from (Q, K, V))."""

    tokens: np.ndarray
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    beta: float = 1.0
    time: float = 10.0
    method: str = "rk4"
    step: float = 0.1
    rescaled: bool = True
    at: float = 10.0
    regime: str | None = None

    def record(self) -> dict[str, Any]:
        """JSON form; ``tokens`` is the key `attndyn softmax STATE.json` reads."""
        out = {k: getattr(self, k) for k in ("beta", "time", "method", "step", "rescaled", "at", "regime")}
        return {"tokens": np.asarray(self.tokens).tolist(), **{m: getattr(self, m).tolist() for m in "QKV"}, **out}


@dataclass(frozen=True)
class SoftmaxResult:
    """One run of the regimes view: the trajectory, the regime, the theorem's report, P at the chosen time."""

    state: SoftmaxState
    trajectory: SoftmaxTrajectory
    regime: str
    report: GeometryReport
    index: int  # kept state shown
    attention: np.ndarray  # (n, n) P at trajectory.ts[index]
    leaders: tuple[int, ...]  # tokens whose attention row peaks on themselves at that time
    seconds: float = field(default=0.0, compare=False)

    def verdict(self) -> str:
        """The theorem's verdict in one line."""
        return f"{self.regime}: {self.report.verdict} — {self.report.statement}"

    def record(self) -> dict[str, Any]:
        return {
            "regime": self.regime,
            "geometry": self.report.record(),
            "time_shown": float(self.trajectory.ts[self.index]),
            "attention": self.attention.tolist(),
            "leaders": list(self.leaders),
        }


def _checked(state: SoftmaxState) -> SoftmaxState:
    d = np.asarray(state.tokens).shape[-1]
    for name in "QKV":
        M = np.asarray(getattr(state, name))
        if M.shape != (d, d):
            raise InputError(
                f"{name} is {M.shape[0]} x {M.shape[-1]} but the tokens have d = {d}; type a {d} x {d} matrix"
            )
    if not 0 < state.time <= 200:
        raise InputError(f"time={state.time}: choose 0 < time <= 200")
    return replace(state, at=min(max(float(state.at), 0.0), float(state.time)))


def run_softmax(state: SoftmaxState) -> SoftmaxResult:
    """Run the state through the library; bad input raises :class:`attndyn.InputError`.

    >>> from attndyn.explore._softmax_view import SoftmaxState, run_softmax, softmax_tokens
    >>> I = np.eye(2)
    >>> res = run_softmax(SoftmaxState(softmax_tokens(12, 2), I, I, -I, time=20.0, rescaled=False))
    >>> res.regime, res.report.holds
    ('collapse', True)
    """
    s = _checked(state)
    t0 = time.perf_counter()
    every = max(1, int(np.ceil(s.time / s.step / MAX_KEPT)))
    with warnings.catch_warnings():  # a step beyond the scheme's interval: the view shows the verdict undecided
        warnings.simplefilter("ignore", HypothesisWarning)
        traj = softmax(
            s.tokens, time=s.time, Q=s.Q, K=s.K, V=s.V, beta=s.beta, method=s.method, step=s.step,
            rescaled=s.rescaled, save=SaveAt(every=every, attention=True),
        )  # fmt: skip
    if traj.stats.stop_reason == "solver_failed":
        raise InputError(
            f"the {s.method} solve failed at (t, dt) = {traj.stats.failed_at}; choose a smaller step or time"
        )
    regime = s.regime or analysis.regime_of(s.beta * np.asarray(s.Q), s.K, s.V)  # the scores: beta <Q x, K y>
    report = analysis.softmax_geometry(traj, regime=regime)
    from ..plotting._trajectories import state_index

    k = state_index(traj, s.at)
    assert traj.attention is not None  # kept: SaveAt(attention=True)
    P = traj.attention[k, 0].detach().cpu().numpy()
    lead = tuple(int(i) for i in np.flatnonzero(analysis.self_attending(P)))
    return SoftmaxResult(s, traj, regime, report, k, P, lead, seconds=time.perf_counter() - t0)


def softmax_inputs(state: SoftmaxState) -> dict[str, Any]:
    """The files that rerun this state from the command line: tokens, Q, K, V, the state as JSON, the command."""
    s = _checked(state)
    cmd = (
        f"attndyn softmax tokens.npy --Q Q.npy --K K.npy --V V.npy --beta {s.beta:g} --time {s.time:g} "
        f"--method {s.method} --step {s.step:g}{' --rescaled' if s.rescaled else ''} --json\n"
    )
    files: dict[str, Any] = {"tokens.npy": np.asarray(s.tokens, dtype=np.float64)}
    files.update({f"{m}.npy": np.asarray(getattr(s, m), dtype=np.float64) for m in "QKV"})
    return {**files, "state.json": s.record(), "command.txt": cmd}


def softmax_figure(result: SoftmaxResult) -> Figure:
    """The library's picture of the run (:func:`attndyn.plotting.plot_trajectory`) at the time shown."""
    from ..plotting import plot_trajectory

    return plot_trajectory(result.trajectory, index=result.index, title=result.regime, hull=result.regime == "polytope")
