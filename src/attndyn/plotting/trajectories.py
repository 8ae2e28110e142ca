r"""Token trajectories: where the tokens go, who follows whom, and the polytope they end on.

Hardmax paper Fig. 2 (one panel per layer: leaders as stars, colours by followed token, the
shaded convex hull of the leaders) and softmax paper Figs. 1, 5, 6, 8 (2-D and 3-D trajectories
with trails). Every function reads a finished trajectory; none runs the dynamics, and none decides
who follows or leads: that is :func:`attndyn.analysis.follow_matrix` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import InputError
from ..analysis import follow_matrix
from ..trajectory import HardmaxTrajectory, SoftmaxTrajectory, Trajectory
from ._style import (
    HULL_COLOR,
    LEADER_SIZE,
    TOKEN_SIZE,
    color,
    finish_plane,
    new_figure,
    sequence_states,
    square_limits,
    to_numpy,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["follow_matrix", "draw_state", "plot_trajectory", "hardmax_panels", "hardmax_grid", "state_index"]

# Drawing order: trails (1) under tokens, leader stars above the tokens (softmax Fig. 6: a star must
# not hide under the followers that reach it), token labels on top.
TOKEN_ZORDER, LEADER_ZORDER, LABEL_ZORDER = 3, 4, 5


def state_index(traj: Trajectory, layer_or_time: float) -> int:
    """Index of the kept state whose layer (hardmax) or time (softmax) is closest to the one asked."""
    ts = to_numpy(traj.ts)
    return int(np.argmin(np.abs(ts - float(layer_or_time))))


def _token_colours(follow: np.ndarray) -> tuple[list[list[str]], list[str], np.ndarray]:
    """Interior colours (one per followed token), edge colour, leader flags (Fig. 2 convention).

    Tokens that someone follows get their own palette colour; a token is painted inside with the
    colour(s) of the token(s) it follows and edged with its own colour when others follow it.
    """
    n = len(follow)
    followed = np.nonzero(follow.any(axis=0))[0]
    own = {int(j): color(k) for k, j in enumerate(followed)}
    leader = np.array([follow[i].sum() == 1 and follow[i, i] for i in range(n)])
    inner, edge = [], []
    for i in range(n):
        targets = [int(j) for j in np.nonzero(follow[i])[0]]
        inner.append([own[j] for j in targets[:2]] or ["#bbbbbb"])
        others = follow[:, i].copy()
        others[i] = False
        edge.append(own[i] if (others.any() and i in own) else "#333333")
    return inner, edge, leader


def _hull_2d(ax: Axes, pts: np.ndarray, **kw: Any) -> None:
    from scipy.spatial import ConvexHull, QhullError

    if len(pts) >= 3:
        try:
            h = ConvexHull(pts)
            ax.fill(*pts[h.vertices].T, color=HULL_COLOR, alpha=0.45, zorder=0, lw=0, **kw)
            return
        except QhullError:
            pass
    if len(pts) >= 2:  # a segment: the hull is flat
        o = np.argsort(pts @ (pts[-1] - pts[0]))
        ax.plot(*pts[o][[0, -1]].T, color=HULL_COLOR, lw=6, alpha=0.7, zorder=0, solid_capstyle="round")


def _hull_3d(ax: Any, pts: np.ndarray) -> None:
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection
    from scipy.spatial import ConvexHull, QhullError

    if len(pts) < 4:
        return
    try:
        h = ConvexHull(pts)
    except QhullError:
        return
    faces = [pts[s] for s in h.simplices]
    ax.add_collection3d(Poly3DCollection(faces, facecolor=HULL_COLOR, alpha=0.25, edgecolor="#6b8fb3", lw=0.6))


def _limits(traj: Trajectory, states: np.ndarray, upto: int | None = None) -> tuple:
    pts = states[: (upto + 1) if upto is not None else None].reshape(-1, states.shape[-1])
    return square_limits(pts[:, :2])


def _draw_token(ax: Any, p: np.ndarray, *, three: bool, leader: bool, inner: list[str], edge: str) -> None:
    """One token at ``p``: a star if it leads, else a circle, filled with the colour(s) ``inner`` of the
    token(s) it follows (two halves in 2-D when two) and edged with ``edge`` (see :func:`_token_colours`)."""
    if three:
        ax.scatter(
            *p,
            marker="*" if leader else "o",
            s=LEADER_SIZE if leader else TOKEN_SIZE * 0.6,
            c=inner[0],
            edgecolors=edge,
            linewidths=0.8,
            depthshade=False,
            zorder=LEADER_ZORDER if leader else TOKEN_ZORDER,
        )
    else:
        ax.plot(
            *p,
            marker="*" if leader else "o",
            ms=15 if leader else 8,
            ls="none",
            markerfacecolor=inner[0],
            markerfacecoloralt=inner[-1],
            fillstyle="left" if len(inner) > 1 else "full",
            markeredgecolor=edge,
            markeredgewidth=1.3,
            zorder=LEADER_ZORDER if leader else TOKEN_ZORDER,
        )


def draw_state(
    ax: Any,  # a 2-D or 3-D matplotlib Axes
    traj: Trajectory,
    index: int = -1,
    *,
    sequence: int | None = None,
    trail: bool = True,
    hull: bool = False,
    limits: tuple | None = None,
    labels: Sequence[str] | None = None,
    title: str | None = None,
) -> None:
    """Draw kept state ``index`` of one sequence into ``ax`` (2-D axes, or 3-D axes for d >= 3).

    Leaders (tokens following only themselves) are stars, other tokens circles, painted with the
    colour of the token they follow (two halves when they follow two). ``trail`` draws each
    token's path up to that state; ``hull`` shades the convex hull of the leaders' positions.
    ``labels`` (one string per real token) are written beside the tokens.
    """
    states, b = sequence_states(traj, sequence)
    T, n, d = states.shape
    index = index % T
    z = states[index]
    follow = follow_matrix(traj, index, sequence)
    inner, edge, leader = _token_colours(follow)
    three = d >= 3 and getattr(ax, "name", "") == "3d"
    coords = (lambda p: p[..., :3]) if three else (lambda p: p[..., :2])
    if d == 1:
        raise InputError("one-dimensional tokens: use attndyn.plotting.coordinates(traj) instead")
    if trail and index > 0:
        for i in range(n):
            path = coords(states[: index + 1, i])
            ax.plot(*path.T, color=inner[i][0], lw=0.8, alpha=0.55, zorder=1)
    if hull and leader.any():
        (_hull_3d if three else _hull_2d)(ax, coords(z[leader]))
    for i in range(n):
        p = coords(z[i])
        _draw_token(ax, p, three=three, leader=bool(leader[i]), inner=inner[i], edge=edge[i])
        if labels is not None:
            ax.text(*p, " " + str(labels[i]), fontsize=7, zorder=LABEL_ZORDER)
    if not three:
        xl, yl = limits if limits is not None else _limits(traj, states, index if trail else None)
        finish_plane(ax, xl, yl, title)
    elif title is not None:
        ax.set_title(title, fontsize=10)


def _time_label(traj: Trajectory, index: int) -> str:
    t = float(to_numpy(traj.ts)[index])
    return f"layer {int(round(t))}" if isinstance(traj, HardmaxTrajectory) else f"t = {t:.3g}"


def plot_trajectory(
    traj: Trajectory,
    *,
    sequence: int | None = None,
    index: int = -1,
    title: str | None = None,
    hull: bool = True,
    labels: Sequence[str] | None = None,
    width: float = 5.5,
) -> Figure:
    """One picture of a run: every token's path (trail) and the kept state ``index`` (default last).

    2-D tokens are drawn in the plane, tokens of dimension >= 3 in 3-D (their first three
    coordinates), one-dimensional tokens as coordinates against time. Returns a
    :class:`matplotlib.figure.Figure`.

    >>> import attndyn
    >>> traj = attndyn.hardmax([[1, 0], [0, 1], [0.3, 0.3]], alpha=0.5, layers=10)
    >>> fig = plot_trajectory(traj, title="three tokens")
    >>> len(fig.axes)
    1
    """
    if not isinstance(traj, (HardmaxTrajectory, SoftmaxTrajectory)):
        raise InputError(
            f"plot_trajectory() needs a trajectory from attndyn.hardmax or attndyn.softmax, got {type(traj).__name__}"
        )
    states, _ = sequence_states(traj, sequence)
    d = states.shape[-1]
    if d == 1:
        from ._coordinates import coordinates

        return coordinates(traj, sequence=sequence, title=title)
    fig = new_figure(width, width * (0.95 if d >= 3 else 0.9))
    ax: Any = fig.add_subplot(projection="3d") if d >= 3 else fig.add_subplot()  # Axes3D or Axes
    draw_state(ax, traj, index, sequence=sequence, trail=True, hull=hull, labels=labels)
    label = _time_label(traj, index % len(states))
    ax.set_title(f"{title}\n{label}" if title else label, fontsize=10)
    if d >= 3:
        ax.set_xlabel("$x_1$"), ax.set_ylabel("$x_2$"), ax.set_zlabel("$x_3$")
    return fig


def hardmax_panels(
    traj: HardmaxTrajectory,
    layers: Sequence[int] = (0, 1, 2, 5, 30),
    *,
    sequence: int | None = None,
    title: str | None = None,
) -> Figure:
    """One row of panels, the tokens at the given layers (hardmax paper Fig. 2, one row).

    The last panel shades the convex hull of the leaders. Layers that were not kept are
    replaced by the nearest kept one (the panel title says which).
    """
    return hardmax_grid({title or "": traj}, layers, sequence=sequence)


def hardmax_grid(
    runs: dict[str, HardmaxTrajectory], layers: Sequence[int] = (0, 1, 2, 5, 30), *, sequence: int | None = None
) -> Figure:
    """Hardmax paper Fig. 2: one row per run (the dict keys label the rows), one column per layer."""
    for name, traj in runs.items():
        if not isinstance(traj, HardmaxTrajectory):
            raise InputError(f"run {name!r} is a {type(traj).__name__}; hardmax_grid() draws hardmax trajectories")
    rows, cols = len(runs), len(layers)
    fig = new_figure(2.3 * cols, 2.35 * rows + 0.3)
    axes = fig.subplots(rows, cols, squeeze=False)
    for r, (name, traj) in enumerate(runs.items()):
        states, _ = sequence_states(traj, sequence)
        lim = square_limits(states[0])
        for c, k in enumerate(layers):
            ax = axes[r, c]
            i = state_index(traj, k)
            draw_state(
                ax,
                traj,
                i,
                sequence=sequence,
                trail=False,
                hull=c == cols - 1,
                limits=lim,
                title=_time_label(traj, i) if r == 0 else None,
            )
            ax.tick_params(labelsize=6)
            if c == 0 and name:
                ax.set_ylabel(name, fontsize=9)
    return fig
