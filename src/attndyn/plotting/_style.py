"""Shared look of attndyn figures: a palette, a figure factory without pyplot state, array helpers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# A qualitative palette that stays readable on white and in grey print (tab10, reordered).
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
HULL_COLOR = "#9ecae1"
LEADER_SIZE = 190
TOKEN_SIZE = 55
DPI = 130
# Axes share one scale (equal aspect) unless their data extents differ by more than this factor; then each
# axis gets its own limits, and the figure says it is not to scale.
ASPECT_MAX = 4.0


def color(k: int) -> str:
    """Colour number ``k`` of the palette (cycled)."""
    return PALETTE[int(k) % len(PALETTE)]


def new_figure(width: float = 6.0, height: float = 4.5) -> Figure:
    """A :class:`matplotlib.figure.Figure` on an Agg canvas: no pyplot, no global backend change."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def to_numpy(x: Any) -> np.ndarray:
    """A float64 numpy copy of a tensor or array-like."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def sequence_states(traj: Any, sequence: int | None) -> tuple[np.ndarray, int]:
    """(T, n_real, d) kept states of one sequence of a trajectory, and that sequence's index."""
    b = 0 if sequence is None else int(sequence)
    if sequence is None and traj.batch_size > 1:
        from .._validation import InputError

        raise InputError(f"the trajectory holds a batch of {traj.batch_size} sequences; pass sequence=b")
    idx = traj.real_tokens(b).numpy()
    return to_numpy(traj.ys[:, b])[:, idx], b


def square_limits(points: np.ndarray, pad: float = 0.08) -> tuple[tuple[float, float], tuple[float, float]]:
    """Axis limits enclosing ``points`` (m, 2) with equal spans, so the picture is not distorted."""
    lo, hi = points.min(axis=0), points.max(axis=0)
    c, span = (lo + hi) / 2, float(max(hi - lo)) or 1.0
    h = span * (0.5 + pad)
    return (c[0] - h, c[0] + h), (c[1] - h, c[1] + h)


def data_limits(points: np.ndarray, pad: float = 0.08) -> tuple[tuple[tuple[float, float], ...], bool]:
    """Per-axis limits enclosing ``points`` (m, k), and whether they share one scale.

    When the extents of the k axes differ by at most :data:`ASPECT_MAX`, every axis gets the span of the
    largest (equal aspect: distances read true); otherwise (tokens diverging along one direction, say)
    each axis is fitted to its own extent and the second value is False: the picture is not to scale.
    """
    lo, hi = points.min(axis=0), points.max(axis=0)
    span = hi - lo
    top = float(span.max()) or 1.0
    floor = top / 1e6  # an axis on which all points agree still gets a visible range
    to_scale = bool(top <= ASPECT_MAX * max(float(span.min()), floor))
    half = (np.full_like(span, top) if to_scale else np.maximum(span, floor)) * (0.5 + pad)
    c = (lo + hi) / 2
    return tuple((float(c[j] - half[j]), float(c[j] + half[j])) for j in range(len(c))), to_scale


def finish_plane(ax: Axes, xl: Any, yl: Any, title: str | None = None, *, equal: bool = True) -> None:
    """Limits, equal aspect (unless ``equal`` is False), a light grid and an optional title for a 2-D panel."""
    ax.set_xlim(*xl)
    ax.set_ylim(*yl)
    if equal:
        ax.set_aspect("equal", adjustable="box")
    ax.grid(alpha=0.25, lw=0.5)
    if title is not None:
        ax.set_title(title, fontsize=10)
