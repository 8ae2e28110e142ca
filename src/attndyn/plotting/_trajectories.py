r"""Token trajectories: where the tokens go, who follows whom, and the polytope they end on.

Hardmax paper Fig. 2 (one panel per layer: leaders as stars, colours by followed token, the
shaded convex hull of the leaders) and softmax paper Figs. 1, 5, 6, 8 (2-D and 3-D trajectories
with trails). Every function reads a finished trajectory; none runs the dynamics, and none decides
who follows or leads: that is :func:`attndyn.analysis.follow_matrix` (re-exported here). A figure
only leaves out the follow of a softmax row too nearly uniform to single anyone out (:mod:`._leadership`:
no stars on the collapse of Theorem C.5). Axes fit the drawn points, to scale unless one direction
dwarfs another (tokens diverging), which the title then says.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._trajectory import HardmaxTrajectory, SoftmaxTrajectory, Trajectory
from .._validation import InputError
from ..analysis import follow_matrix
from ._coordinates import coordinates, eigen_coordinates
from ._labels import place_labels
from ._leadership import distinct_rows, drawn_follow, run_leaders
from ._style import (
    HULL_COLOR,
    LEADER_SIZE,
    TOKEN_SIZE,
    color,
    data_limits,
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
# A run "diverges" in a picture when the tokens' extent at the drawn state is this many times their extent at
# the first kept state; plot_trajectory says so in its title.
DIVERGENCE_FACTOR = 10.0
LEADER_MS, TOKEN_MS = 15.0, 8.0  # 2-D marker sizes (diameters, points) of leaders and other tokens


def state_index(traj: Trajectory, layer_or_time: float) -> int:
    """Index of the kept state whose layer (hardmax) or time (softmax) is closest to the one asked."""
    ts = to_numpy(traj.ts)
    return int(np.argmin(np.abs(ts - float(layer_or_time))))


def _token_colours(
    follow: np.ndarray, certified: np.ndarray | None = None
) -> tuple[list[list[str]], list[str], np.ndarray]:
    """Interior colours (one per followed token), edge colour, leader flags (Fig. 2 convention).

    Tokens that someone follows get their own palette colour; a token is painted inside with the
    colour(s) of the token(s) it follows and edged with its own colour when others follow it. A leader is a token
    that follows only itself, or one the run ``certified`` (:func:`._leadership.run_leaders`: a follower that has
    reached its float value ties with it, and the leader stays one); a leader is painted in its own colour.
    """
    n = len(follow)
    followed = np.nonzero(follow.any(axis=0))[0]
    own = {int(j): color(k) for k, j in enumerate(followed)}
    leader = np.array([follow[i].sum() == 1 and follow[i, i] for i in range(n)])
    if certified is not None:
        leader |= certified
    inner, edge = [], []
    for i in range(n):
        targets = [i] if leader[i] and i in own else [int(j) for j in np.nonzero(follow[i])[0]]
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
    hull = Poly3DCollection(faces, facecolor=HULL_COLOR, alpha=0.25, edgecolor="#6b8fb3", lw=0.6, zorder=0)
    ax.add_collection3d(hull)


def _draw_token(ax: Any, p: np.ndarray, *, leader: bool, inner: list[str], edge: str) -> None:
    """One token at ``p`` (2-D): a star if it leads, else a circle, filled with the colour(s) ``inner`` of the
    token(s) it follows (two halves when two) and edged with ``edge`` (see :func:`_token_colours`)."""
    ax.plot(
        *p,
        marker="*" if leader else "o",
        ms=LEADER_MS if leader else TOKEN_MS,
        ls="none",
        markerfacecolor=inner[0],
        markerfacecoloralt=inner[-1],
        fillstyle="left" if len(inner) > 1 else "full",
        markeredgecolor=edge,
        markeredgewidth=1.3,
        zorder=LEADER_ZORDER if leader else TOKEN_ZORDER,
    )


def _draw_space(
    ax: Any, states: np.ndarray, index: int, *, trail: bool, inner: list[list[str]], edge: list[str], leader: np.ndarray
) -> None:
    """Kept state ``index`` of ``states`` (T, n, 3) in 3-D axes, in four artists whatever n: the trails as one
    line collection, the circles and the stars as one scatter each (a figure that turns redraws four artists,
    not 2n). The layers are fixed as in 2-D (``computed_zorder`` off): hull, trails, circles, stars, labels, so
    a star never hides under the followers that reach it."""
    from mpl_toolkits.mplot3d.art3d import Line3DCollection

    ax.computed_zorder = False
    fill = [c[0] for c in inner]
    if trail and index > 0:
        paths = states[: index + 1].transpose(1, 0, 2)  # (n, index + 1, 3): one polyline per token
        ax.add_collection3d(Line3DCollection(list(paths), colors=fill, lw=0.8, alpha=0.55, zorder=1))
    z = states[index]
    for mask, marker, size, zorder in (
        (~leader, "o", TOKEN_SIZE * 0.6, TOKEN_ZORDER),
        (leader, "*", LEADER_SIZE, LEADER_ZORDER),
    ):
        if mask.any():
            ax.scatter(
                *z[mask].T,
                marker=marker,
                s=size,
                c=[f for f, m in zip(fill, mask) if m],
                edgecolors=[e for e, m in zip(edge, mask) if m],
                linewidths=0.8,
                depthshade=False,
                zorder=zorder,
            )


def coordinate_name(j: int, x: str = "z") -> str:
    """The axis label of coordinate ``j`` (from 0) of the tokens ``x``: "coordinate 1 of $z_i$". The papers name the
    tokens z_1, ..., z_n (x_1, ..., x_n), so an axis called z_1 would read as token 1."""
    return f"coordinate {j + 1} of ${x}_i$"


def drawn_states(traj: Trajectory, sequence: int | None, eigenbasis: bool) -> tuple[np.ndarray, int, list[str]]:
    """(T, m, d) kept states of one sequence as drawn, its index, and the names of the d coordinates.

    With ``eigenbasis`` the coordinates are :math:`c = R^{-1} z` in the eigenbasis of the (first head's)
    value matrix V of a softmax run (columns of R its eigenvectors, largest eigenvalue first), as
    :func:`attndyn.plotting.coordinates` draws them; otherwise the plain coordinates of x (softmax eq. (1))
    or z (hardmax eq. (1.1), rescaled softmax eq. (4)).
    """
    states, b = sequence_states(traj, sequence)
    d = states.shape[-1]
    if not eigenbasis:
        x = "x" if isinstance(traj, SoftmaxTrajectory) and not traj.params.rescaled else "z"
        return states, b, [coordinate_name(j, x) for j in range(d)]
    if not isinstance(traj, SoftmaxTrajectory):
        raise InputError(f"eigenbasis=True needs a softmax run (its value matrix V); got a {type(traj).__name__}")
    V = to_numpy(traj.params.V[0])  # (d, d), the first head
    w = np.linalg.eigvals(V)
    if np.any(np.abs(w.imag) > 1e-9 * max(1.0, float(np.abs(w).max()))):  # eigen_coordinates' tolerance
        ev = np.array2string(w, precision=3)
        raise InputError(
            f"eigenbasis=True needs a value matrix V with real eigenvalues, got {ev}; pass eigenbasis=False"
        )
    c, names = eigen_coordinates(states, V)
    return (
        c,
        b,
        [
            nm if nm.startswith("$") else f"$c_{{{j + 1}}}$ ($\\lambda$ = {nm.split()[-1]})"
            for j, nm in enumerate(names)
        ],
    )


def _finish_space(ax: Any, points: np.ndarray, title: str | None) -> bool:
    """Limits of a 3-D panel from the drawn ``points`` (m, 3) (see :func:`data_limits`); True if to scale."""
    lims, to_scale = data_limits(points)
    ax.set_xlim(*lims[0]), ax.set_ylim(*lims[1]), ax.set_zlim(*lims[2])
    ax.set_box_aspect((1, 1, 1))  # a cube: with equal spans (to scale) distances read true
    if title is not None:
        ax.set_title(title, fontsize=10)
    return to_scale


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
    eigenbasis: bool = False,
) -> bool:
    """Draw kept state ``index`` of one sequence into ``ax`` (2-D axes, or 3-D axes for d >= 3).

    Leaders (tokens following only themselves) are stars, other tokens circles, painted with the
    colour of the token they follow (two halves when they follow two). A softmax token whose attention
    row is nearly uniform singles nobody out: it is a grey dot, never a star (:mod:`._leadership`; e.g.
    the collapse of Theorem C.5). ``trail`` draws each token's path up to that state; ``hull`` shades
    the convex hull of the leaders' positions. ``labels`` (one string per real token; "" for none) are written
    beside the tokens, above every marker. ``eigenbasis`` draws a softmax run in V's eigenbasis
    (:func:`drawn_states`). Without ``limits`` the axes fit the drawn points, to scale unless their
    extents differ by more than :data:`attndyn.plotting._style.ASPECT_MAX`; returns whether it is to scale.
    """
    states, b, _ = drawn_states(traj, sequence, eigenbasis)
    T, n, d = states.shape
    if d == 1:
        raise InputError("one-dimensional tokens: use attndyn.plotting.coordinates(traj) instead")
    index = index % T
    inner, edge, leader = _token_colours(drawn_follow(traj, index, b), run_leaders(traj, index, b))
    three = d >= 3 and getattr(ax, "name", "") == "3d"
    k = 3 if three else 2
    z = states[index, :, :k]
    if hull and leader.any():
        (_hull_3d if three else _hull_2d)(ax, z[leader])
    if three:
        _draw_space(ax, states[:, :, :3], index, trail=trail, inner=inner, edge=edge, leader=leader)
    else:
        if trail and index > 0:
            for i in range(n):
                ax.plot(*states[: index + 1, i, :k].T, color=inner[i][0], lw=0.8, alpha=0.55, zorder=1)
        for i in range(n):
            _draw_token(ax, z[i], leader=bool(leader[i]), inner=inner[i], edge=edge[i])
    drawn = states[: index + 1 if trail else None, :, :k].reshape(-1, k)
    if three:
        to_scale = _finish_space(ax, drawn, title)
    else:
        (xl, yl), to_scale = (limits, True) if limits is not None else data_limits(drawn)
        finish_plane(ax, xl, yl, title, equal=to_scale)
    if labels is not None:  # after the limits: the labels are placed where the markers land
        _label_tokens(ax, z, labels, leader, three=three)
    return to_scale


def _label_tokens(ax: Any, z: np.ndarray, labels: Sequence[str], leader: np.ndarray, *, three: bool) -> None:
    """Each token's label beside its marker, above every marker, on a white halo; in 2-D clear of every star,
    dot and other label (:func:`._labels.place_labels`). An empty label draws nothing."""
    if not three:
        keep = [i for i, t in enumerate(labels) if str(t)]
        obstacles = [(z[leader], LEADER_MS / 2), (z[~leader], TOKEN_MS / 2)]
        place_labels(ax, z[keep], [str(labels[i]) for i in keep], obstacles, zorder=LABEL_ZORDER, fontsize=7)
        return
    from matplotlib import patheffects

    halo = [patheffects.withStroke(linewidth=2.2, foreground="white")]
    for p, text in zip(z, labels):
        if str(text):
            ax.text(*p, "   " + str(text), fontsize=7, zorder=LABEL_ZORDER, path_effects=halo)


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
    eigenbasis: bool = False,
) -> Figure:
    """One picture of a run: every token's path (trail) and the kept state ``index`` (default last).

    2-D tokens are drawn in the plane, tokens of dimension >= 3 in 3-D (their first three
    coordinates), one-dimensional tokens as coordinates against time; ``eigenbasis`` draws a softmax
    run in its value matrix's eigenbasis (Conjecture 4.2 reads there: one axis per eigenvalue). The axes
    fit the drawn points, to scale unless their extents differ more than 4-fold. The title names the
    time and says when the tokens diverge, when the axes are not to scale, and when a softmax run's
    attention is so nearly uniform that no token leads (see :func:`draw_state`). Returns a
    :class:`matplotlib.figure.Figure`.

    >>> import attndyn
    >>> traj = attndyn.hardmax([[1, 0], [0, 1], [0.3, 0.3]], alpha=0.5, layers=10)
    >>> fig = plot_trajectory(traj, title="three tokens")
    >>> fig.axes[0].get_xlabel(), fig.axes[0].get_ylabel()
    ('coordinate 1 of $z_i$', 'coordinate 2 of $z_i$')
    """
    if not isinstance(traj, (HardmaxTrajectory, SoftmaxTrajectory)):
        raise InputError(
            f"plot_trajectory() needs a trajectory from attndyn.hardmax or attndyn.softmax, got {type(traj).__name__}"
        )
    states, b, names = drawn_states(traj, sequence, eigenbasis)
    d = states.shape[-1]
    if d == 1:
        return coordinates(traj, sequence=sequence, title=title)
    index = index % len(states)
    fig = new_figure(width, width * (0.95 if d >= 3 else 0.9))
    ax: Any = fig.add_subplot(projection="3d") if d >= 3 else fig.add_subplot()  # Axes3D or Axes
    k = min(d, 3)
    to_scale = data_limits(states[: index + 1, :, :k].reshape(-1, k))[1]  # what draw_state will find
    notes = "; ".join(_notes(traj, states, index, b, to_scale))
    ax.set_title("\n".join(t for t in (title, _time_label(traj, index), notes) if t), fontsize=10)
    ax.set_xlabel(names[0]), ax.set_ylabel(names[1])
    if d >= 3:
        ax.set_zlabel(names[2])
    # drawn last: the labels of the tokens are placed once the title and axis labels have taken their room
    draw_state(ax, traj, index, sequence=sequence, trail=True, hull=hull, labels=labels, eigenbasis=eigenbasis)
    return fig


def _notes(traj: Trajectory, states: np.ndarray, index: int, b: int, to_scale: bool) -> list[str]:
    """What a reader must know to read the picture of kept state ``index`` of ``states`` (T, m, d)."""
    notes = []
    extent = [float(np.ptp(states[k, :, :3], axis=0).max()) for k in (0, index)]
    if extent[1] >= DIVERGENCE_FACTOR * extent[0] > 0:
        notes.append(f"tokens diverge: extent ×{extent[1] / extent[0]:.3g} since {_time_label(traj, 0)}")
    if not to_scale:
        notes.append("axes not to scale")
    if not distinct_rows(traj, index, b).any():
        notes.append("attention nearly uniform: no token leads")
    return notes


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
    """Hardmax paper Fig. 2: one row per run (the dict keys label the rows), one column per layer; every panel's
    axes are labelled with the coordinates' names (:func:`label_plane`)."""
    for name, traj in runs.items():
        if not isinstance(traj, HardmaxTrajectory):
            raise InputError(f"run {name!r} is a {type(traj).__name__}; hardmax_grid() draws hardmax trajectories")
    rows, cols = len(runs), len(layers)
    fig = new_figure(2.3 * cols, 2.35 * rows + 0.3)
    axes = fig.subplots(rows, cols, squeeze=False)
    for r, (name, traj) in enumerate(runs.items()):
        states, _, names = drawn_states(traj, sequence, eigenbasis=False)
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
            label_plane(ax, names, row=name if c == 0 else None)
    return fig


def label_plane(ax: Axes, names: Sequence[str], *, row: str | None = None) -> None:
    """Small axis labels and ticks for one panel of a grid: the coordinates' ``names`` (x, y), and on the first
    panel of a row the row's name above the y coordinate."""
    ax.tick_params(labelsize=6)
    ax.set_xlabel(names[0], fontsize=7, labelpad=1)
    ax.set_ylabel(f"{row}\n{names[1]}" if row else names[1], fontsize=9 if row else 7, labelpad=1)
