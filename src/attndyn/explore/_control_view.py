r"""The control view's logic: tokens and the ones that should lead -> :func:`attndyn.control.choose_A`'s answer.

Scores :math:`\langle A z_i, z_j\rangle` are linear in A, so "token i leads, j does not" is a linear
(or, for SPD A, semidefinite) program; ``choose_A`` solves it for the largest margin and verifies
the answer with the exact hardmax engine (eq. (1.1) of the hardmax paper), or returns the
certificate (convex weights) that a token inside the hull of the others cannot lead at layer 0 (where the
program asks every target to lead; it may still come to lead later under some A).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..control import ControlResult

__all__ = ["ControlState", "run_control", "control_summary", "control_inputs", "control_figure"]


@dataclass(frozen=True)
class ControlState:
    """Tokens (n, d), the tokens that should lead, and the settings of :func:`attndyn.control.choose_A`."""

    tokens: np.ndarray
    leaders: tuple[int, ...]
    spd: bool = False
    alpha: float = 0.5
    layers: int = 60

    def record(self) -> dict[str, Any]:
        """JSON form; ``tokens`` is the key `attndyn control STATE.json` reads."""
        return {
            "tokens": np.asarray(self.tokens).tolist(),
            "leaders": list(self.leaders),
            "spd": self.spd,
            "alpha": self.alpha,
            "layers": self.layers,
        }


def run_control(state: ControlState) -> ControlResult:
    """Ask :func:`attndyn.control.choose_A` for an A under which exactly ``state.leaders`` lead.

    >>> from attndyn.explore._control_view import ControlState, run_control
    >>> Z = np.array([[2.0, 0.0], [0.0, 2.0], [-1.0, -1.5], [0.1, 0.2], [0.5, -0.3]])
    >>> res = run_control(ControlState(Z, (1, 2)))
    >>> res.verdict, res.leaders_found
    ('reached', (1, 2))
    """
    if not state.leaders:
        raise InputError("no token is selected to lead; click the tokens that should lead (shift-click for more)")
    from ..control import choose_A

    return choose_A(state.tokens, list(state.leaders), spd=state.spd, alpha=state.alpha, layers=state.layers)


def control_summary(res: ControlResult) -> list[str]:
    """What the page prints: the verdict and why, A and the margin, the verified leaders or the certificates."""
    lines = [f"{res.verdict}: {res.reason}"]
    if res.trajectory is not None:
        A = np.array2string(np.asarray(res.A), precision=4, suppress_small=True).replace("\n", "")
        lines.append(f"A = {A}   margin = {res.margin:.4g}")
        found = ", ".join(f"{i} (from layer {k})" for i, k in zip(res.leaders_found, res.since)) or "none"
        lines.append(f"leaders verified by attndyn.hardmax over {res.layers} layers: {found}")
    for c in res.certificates:
        w = " + ".join(f"{v:.3g}·z{j}" for j, v in c.record()["weights"].items())
        origin = f" + {c.origin_weight:.3g}·0" if c.origin_weight > 1e-12 else ""
        lines.append(f"certificate: z{c.token} = {w}{origin} (convex weights): token {c.token} cannot lead at layer 0")
    return lines


def control_inputs(state: ControlState, result: ControlResult | None = None) -> dict[str, Any]:
    """The files that rerun this request from the command line (and the chosen A, when there is one)."""
    flags = f"--leaders {','.join(map(str, state.leaders))}{' --spd' if state.spd else ''}"
    files: dict[str, Any] = {
        "tokens.npy": np.asarray(state.tokens, dtype=np.float64),
        "state.json": state.record(),
        "command.txt": f"attndyn control tokens.npy {flags} --alpha {state.alpha:g} --layers {state.layers} "
        "--json --save-matrix A.npy\n",
    }
    if result is not None and result.trajectory is not None:
        files["A.npy"] = np.asarray(result.A, dtype=np.float64)
    return files


def control_figure(result: ControlResult) -> Figure:
    """The library's comparison (:func:`attndyn.plotting.control_comparison`): A = I beside the chosen A."""
    from ..plotting import control_comparison

    return control_comparison(result, title=f"leaders requested: {list(result.leaders_requested)}")
