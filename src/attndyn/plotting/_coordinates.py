r"""Coordinates of the tokens over time: which converge, which diverge (softmax paper Fig. 7).

Coordinates are taken in V's eigenbasis (:math:`c = R^{-1} z`, columns of R the eigenvectors),
so Theorem 4.1 / Conjecture 4.2 read directly: coordinates of positive eigenvalues cluster,
those of negative eigenvalues spread. Without V (hardmax runs) the plain coordinates are used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._trajectory import HardmaxTrajectory, SoftmaxTrajectory, Trajectory
from .._validation import InputError
from ._style import color, new_figure, sequence_states, to_numpy

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["eigen_coordinates", "coordinates"]


def eigen_coordinates(states: np.ndarray, V: np.ndarray | None, x: str = "x") -> tuple[np.ndarray, list[str]]:
    """(T, n, d) states to (T, n, d') coordinates and their labels (eigenvalue of each; without a V with real
    eigenvalues, "coordinate j of x_i" with ``x`` the tokens' name)."""
    d = states.shape[-1]
    if V is None or np.allclose(V, V[0, 0] * np.eye(d)):
        return states, [f"coordinate {j + 1} of ${x}_i$" for j in range(d)]
    w, R = np.linalg.eig(V)
    real = np.abs(w.imag) < 1e-9 * max(1.0, np.abs(w).max())
    if not real.any():
        return states, [f"coordinate {j + 1} of ${x}_i$" for j in range(d)]
    order = [j for j in np.argsort(-w.real) if real[j]]
    c = np.real(np.einsum("ij,tnj->tni", np.linalg.inv(R), states.astype(complex)))
    labels = [f"eigenvalue {w[j].real:.3g}" for j in order]
    return c[..., order], labels


def _legend_handles() -> list:
    """What the lines and the band of every panel mean (one legend, in the first panel)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    return [
        Line2D([], [], color=color(0), lw=0.8, alpha=0.8, label="one token each"),
        Line2D([], [], color="#111111", lw=1.6, label="mean over tokens"),
        Patch(color=color(0), alpha=0.15, lw=0, label="range (min to max)"),
    ]


def coordinates(
    traj: Trajectory, *, sequence: int | None = None, title: str | None = None, log_time: bool = False
) -> Figure:
    """One panel per coordinate: every token's coordinate against time (thin lines), the mean (bold)
    and the range (shaded). Returns a :class:`matplotlib.figure.Figure`."""
    if not isinstance(traj, Trajectory):
        raise InputError(f"coordinates() needs a trajectory, got {type(traj).__name__}")
    states, _ = sequence_states(traj, sequence)
    V = to_numpy(traj.params.V[0]) if isinstance(traj, SoftmaxTrajectory) else None  # (d, d), the first head
    x = "x" if isinstance(traj, SoftmaxTrajectory) and not traj.params.rescaled else "z"
    c, labels = eigen_coordinates(states, V, x)
    ts = to_numpy(traj.ts)
    d = c.shape[-1]
    fig = new_figure(3.2 * min(d, 4), 2.8)
    axes = fig.subplots(1, min(d, 4), squeeze=False)[0]
    for j, ax in enumerate(axes):
        y = c[..., j]
        ax.fill_between(ts, y.min(axis=1), y.max(axis=1), color=color(j), alpha=0.15, lw=0)
        ax.plot(ts, y, color=color(j), lw=0.6, alpha=0.6)
        ax.plot(ts, y.mean(axis=1), color="#111111", lw=1.6)
        ax.set_title(labels[j], fontsize=10)
        ax.set_xlabel("layer" if isinstance(traj, HardmaxTrajectory) else "t", fontsize=9)
        ax.grid(alpha=0.25, lw=0.5)
        if log_time:
            ax.set_xscale("symlog")
    axes[0].legend(handles=_legend_handles(), fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
