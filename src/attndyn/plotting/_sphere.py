"""Pictures of runs on the sphere: phase diagrams over (t, beta) and tokens on the circle or on S^2.

They read finished results (:class:`attndyn.sphere.PhaseDiagram`, :class:`attndyn.sphere.SphereTrajectory`) and
never simulate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import InputError
from ..sphere import PhaseDiagram, SphereTrajectory
from ._save import png_bytes
from ._style import color, new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["phase_diagram_figure", "sphere_tokens_figure", "sphere_frames"]

_PANELS = {
    "fraction": ("fraction of clustered pairs", "RdBu_r"),
    "clusters": ("median cluster count (rank)", "viridis"),
    "one_cluster": ("fraction of systems in one cluster", "RdBu_r"),
}


def phase_diagram_figure(pd: PhaseDiagram, statistics: tuple[str, ...] = ("fraction", "clusters")) -> Figure:
    r"""Heatmaps of ``statistics`` over (t, beta), the curve :math:`\Gamma = \{\gamma_\beta(t) = 1 - \delta\}`
    of the orthogonal start drawn over each (where it is reached within the horizon). Each column stands at the
    time its statistics were read (``settings["read_times"]``: the first checkpoint is read after one layer, as in
    the authors' loop), whole cells shown."""
    if not isinstance(pd, PhaseDiagram):
        raise InputError(f"expected a PhaseDiagram (attndyn.sphere.phase_diagram), got {type(pd).__name__}")
    bad = [s for s in statistics if s not in _PANELS]
    if bad or not statistics:
        raise InputError(f"statistics={statistics!r}: choose among {', '.join(_PANELS)}")
    fig = new_figure(5.0 * len(statistics), 4.0)
    axes = fig.subplots(1, len(statistics), squeeze=False)[0]
    reached = np.isfinite(pd.gamma_times)
    s = pd.settings
    x = np.asarray(s.get("read_times", pd.times), dtype=np.float64)  # older files: the checkpoint times
    for ax, name in zip(axes, statistics):
        label, cmap = _PANELS[name]
        mesh = ax.pcolormesh(x, pd.betas, getattr(pd, name), cmap=cmap, shading="nearest", rasterized=True)
        fig.colorbar(mesh, ax=ax, label=label)
        if reached.any():
            ax.plot(
                pd.gamma_times[reached], pd.betas[reached], color="k", lw=1.5, label=r"$\gamma_\beta(t) = 1-\delta$"
            )
            ax.legend(loc="lower right", fontsize=8)
        ax.set_xlabel("$t$")
        ax.set_ylabel(r"$\beta$")
    fig.suptitle(
        f"{s.get('systems')} systems of n = {s.get('n')} in d = {s.get('d')}, {s.get('attention')}, "
        f"{s.get('method')}{' ' + str(s.get('norm')) + '-LN' if s.get('norm') else ''}, step {s.get('step', 0):.3g}",
        fontsize=9,
    )
    return fig


def _paths(traj: SphereTrajectory, sequence: int, drawing: str) -> tuple[np.ndarray, np.ndarray]:
    """The kept tokens ``(T, n, d)`` of sequence ``sequence`` and their times, after checking that ``traj`` is a
    sphere run in d = 2 or 3 (``drawing`` names what draws them, for the message)."""
    if not isinstance(traj, SphereTrajectory):
        raise InputError(f"expected a SphereTrajectory (attndyn.sphere.evolve), got {type(traj).__name__}")
    if traj.dim not in (2, 3):
        raise InputError(f"tokens in dimension {traj.dim}: {drawing} d = 2 (circle) or d = 3 (sphere)")
    return traj.ys[:, sequence].detach().cpu().numpy(), traj.ts.cpu().numpy()  # (T, n, d), (T,)


def sphere_tokens_figure(traj: SphereTrajectory, sequence: int = 0) -> Figure:
    """d = 2: each token's angle over time (the circle unrolled); d = 3: the paths on S^2 in 3-D, the start
    hollow, the end filled."""
    x, t = _paths(traj, sequence, "the figure draws")
    fig = new_figure(6.0, 5.0)
    if traj.dim == 2:
        ax = fig.add_subplot()
        theta = np.unwrap(np.arctan2(x[..., 1], x[..., 0]), axis=0)
        for i in range(x.shape[1]):
            ax.plot(t, theta[:, i], color=color(i), lw=1)
        ax.set_xlabel("$t$")
        ax.set_ylabel(r"angle $\theta_i(t)$")
        return fig
    ax = fig.add_subplot(projection="3d")
    u, v = np.mgrid[0 : 2 * np.pi : 40j, 0 : np.pi : 20j]
    ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.85", lw=0.4)
    for i in range(x.shape[1]):
        ax.plot(x[:, i, 0], x[:, i, 1], x[:, i, 2], color=color(i), lw=1)
        ax.scatter(*x[0, i], facecolors="none", edgecolors=color(i), s=20)
        ax.scatter(*x[-1, i], color=color(i), s=20)
    ax.set_box_aspect((1, 1, 1))
    return fig


def sphere_frames(traj: SphereTrajectory, frames: int = 24, sequence: int = 0, *, dpi: int = 80) -> list[bytes]:
    """PNG frames of the run for an animation (:func:`attndyn.plotting._animation.animate` with ``frames=``): the
    tokens at evenly spread kept times, on the unit circle (d = 2) or on S^2 turning once around (d = 3), each
    with its path so far."""
    x, ts = _paths(traj, sequence, "the frames draw")
    pick = np.linspace(0, len(x) - 1, max(2, frames)).round().astype(int)
    out = []
    for f, k in enumerate(pick):
        fig = new_figure(4.2, 4.2)
        ax: Any = fig.add_subplot(projection="3d") if traj.dim == 3 else fig.add_subplot()  # Axes3D or Axes
        if traj.dim == 3:
            u, v = np.mgrid[0 : 2 * np.pi : 30j, 0 : np.pi : 15j]
            ax.plot_wireframe(np.cos(u) * np.sin(v), np.sin(u) * np.sin(v), np.cos(v), color="0.88", lw=0.3)
            ax.view_init(elev=25, azim=-60 + 360 * f / len(pick))  # one turn over the animation
            ax.set_box_aspect((1, 1, 1))
        else:
            theta = np.linspace(0, 2 * np.pi, 200)
            ax.plot(np.cos(theta), np.sin(theta), color="0.8", lw=1)
            ax.set_aspect("equal")
        for i in range(x.shape[1]):
            path = [x[: k + 1, i, c] for c in range(traj.dim)]
            ax.plot(*path, color=color(i), lw=0.8, alpha=0.6)
            ax.scatter(*[[p[-1]] for p in path], color=color(i), s=14)
        ax.set_title(f"t = {ts[k]:.3g}", fontsize=9)
        out.append(png_bytes(fig, dpi=dpi))
    return out
