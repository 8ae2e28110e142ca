"""Pictures of leader control: the tokens under the identity and under the chosen A, side by side,
and the counterfactual predictions of a sentiment model when other words lead.

Both functions read finished results (:class:`attndyn.control.ControlResult`, numbers); neither
runs the dynamics.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import InputError
from ..analysis import leaders
from ._labels import place_labels
from ._style import color, new_figure, sequence_states, square_limits
from ._trajectories import draw_state

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..control._result import ControlResult

__all__ = ["control_comparison", "counterfactual_bars"]


def control_comparison(
    result: ControlResult, *, labels: Sequence[str] | None = None, title: str | None = None
) -> Figure:
    """Two panels: every token's path under A = I (``result.baseline``) and under the chosen A
    (``result.trajectory``), final layer, leaders as stars, the hull of the leaders shaded; the
    requested leaders are ringed at their starting points (grey dots, labelled). ``labels`` (one per token) default to
    the token indices when there are at most 40 tokens.

    >>> from attndyn.control import choose_A
    >>> res = choose_A([[2.0, 0.0], [0.0, 2.0], [-1.0, -1.5], [0.1, 0.2]], [1, 2], spd=False, layers=20)
    >>> len(control_comparison(res).axes)
    2
    """
    if result.trajectory is None:
        raise InputError(f"no A was found ({result.reason}); there is no controlled run to draw")
    states, _ = sequence_states(result.baseline, None)
    n, d = states.shape[1:]
    if d < 2:
        raise InputError("control_comparison() draws tokens of dimension >= 2; these are one-dimensional")
    if labels is None and n <= 40:
        labels = [str(i) for i in range(n)]
    fig = new_figure(10.0, 5.0)
    if title:
        fig.suptitle(title, fontsize=10)
    proj = {"projection": "3d"} if d >= 3 else {}
    both = np.concatenate([states, sequence_states(result.trajectory, None)[0]]).reshape(-1, d)
    lim = square_limits(both[:, :2])
    runs = [("A = I", result.baseline), ("chosen A" + (" (SPD)" if result.spd else ""), result.trajectory)]
    axes: list[Any] = [fig.add_subplot(1, 2, k + 1, **proj) for k in range(2)]  # Axes3D or Axes
    req = list(result.leaders_requested)
    for ax, (name, traj) in zip(axes, runs):
        found = list(leaders(traj).indices)
        ax.set_title(
            f"{name}: leaders {found}\n(layer {int(traj.ts[-1])}; grey dots: layer 0, rings: requested {req})",
            fontsize=9,
        )
        _coordinate_labels(ax, d)
        draw_state(ax, traj, -1, trail=True, hull=True, limits=None if d >= 3 else lim)
        _mark(ax, sequence_states(traj, None)[0], req, found)
    if labels is not None:  # once both panels are drawn: the labels are placed where the markers land
        for ax, (_, traj) in zip(axes, runs):
            _label(ax, sequence_states(traj, None)[0], req, list(leaders(traj).indices), labels)
    return fig


RING_S, STAR_S, START_S = 320.0, 260.0, 14.0  # scatter sizes (points^2) of the rings, star outlines, start dots


def _coordinate_labels(ax: Any, d: int) -> None:
    ax.set_xlabel("$z_1$"), ax.set_ylabel("$z_2$")
    if d >= 3:
        ax.set_zlabel("$z_3$")


def _mark(ax: Any, z: np.ndarray, req: list[int], found: list[int]) -> None:
    """Grey dots where the tokens started (z: (T, n, d) states), rings on the requested leaders there, star
    outlines on the leaders found at the last layer."""
    d = z.shape[-1]
    z0, zK = z[0][:, : min(d, 3)], z[-1][:, : min(d, 3)]
    ax.scatter(*z0.T, s=START_S, c="#777777", zorder=4)
    ax.scatter(*z0[req].T, s=RING_S, facecolors="none", edgecolors="#222222", linewidths=1.2, zorder=5)
    ax.scatter(*zK[found].T, s=STAR_S, marker="*", facecolors="none", edgecolors="#111111", linewidths=1.0, zorder=6)


def _label(ax: Any, z: np.ndarray, req: list[int], found: list[int], labels: Sequence[str]) -> None:
    """Each token's label beside its starting dot, above every marker and (2-D) clear of every marker (the
    start dots, rings, tokens and stars of :func:`_mark` and :func:`draw_state`) and of the other labels."""
    d = z.shape[-1]
    z0, zK = z[0][:, : min(d, 3)], z[-1][:, : min(d, 3)]
    if d >= 3:
        for i, p in enumerate(z0):
            ax.text(*p, "   " + str(labels[i]), fontsize=7, color="#444444", zorder=7)
        return
    final_r = np.where(np.isin(np.arange(len(zK)), found), STAR_S, 8.0**2)  # draw_state's stars and dots
    obstacles = [(z0, np.sqrt(START_S) / 2), (z0[req], np.sqrt(RING_S) / 2)]
    obstacles += [(zK[i], float(np.sqrt(final_r[i]) / 2)) for i in range(len(zK))]
    place_labels(ax, z0, [str(t) for t in labels], obstacles, zorder=7, fontsize=7, color="#333333")


def counterfactual_bars(
    words: Sequence[str],
    probabilities: Sequence[float],
    baseline: float,
    *,
    reached: Sequence[bool] | None = None,
    title: str | None = None,
) -> Figure:
    """Horizontal bars: P(positive) of a review when each word (or set of words) is made to lead (by another A),
    against the model's own prediction ``baseline`` (dashed line); bars whose target was not
    reached by the engine are hatched.

    >>> fig = counterfactual_bars(["good", "bad"], [0.9, 0.2], 0.6)
    >>> len(fig.axes)
    1
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if len(p) != len(words):
        raise InputError(f"counterfactual_bars(): {len(words)} words but {len(p)} probabilities")
    ok = np.ones(len(p), dtype=bool) if reached is None else np.asarray(reached, dtype=bool)
    fig = new_figure(6.0, 0.35 * len(p) + 1.4)
    ax = fig.add_subplot()
    y = np.arange(len(p))
    cols = [color(1) if v < 0.5 else color(0) for v in p]
    for yi, pi, ci, oi in zip(y, p, cols, ok):
        ax.barh(yi, pi, color=ci, alpha=0.85 if oi else 0.35, hatch=None if oi else "//", edgecolor="#333333", lw=0.5)
    ax.axvline(baseline, ls="--", color="#333333", lw=1.0, label=f"model (A = I): {baseline:.2f}")
    ax.axvline(0.5, color="#999999", lw=0.6)
    ax.set_yticks(y, [str(w) for w in words], fontsize=8)
    ax.set_xlim(0, 1)
    ax.invert_yaxis()
    ax.set_xlabel("P(positive) when they lead")
    ax.legend(fontsize=8, loc="lower right")
    if title:
        ax.set_title(title, fontsize=10)
    return fig
