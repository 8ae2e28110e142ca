"""Token labels that stay readable: beside their marker, never under a star, a ring or another label.

Each label is tried at eight positions around its point, a clearance away (more than the radius of the
largest marker drawn there), then on two wider rings (joined to its point by a thin line), and kept at the
first position whose box meets no marker and no label placed before it (else at the one meeting fewest). Labels sit above every marker (``zorder``) on a white halo.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.text import Annotation

__all__ = ["place_labels"]

RINGS, RING_STEP = 3, 8.0  # tried distances: the clearance, then 8 and 16 points further (with a leader line)

# (direction, horizontal and vertical alignment of the text at that side of its point): up-right first
_SIDES = [
    ((1, 1), "left", "bottom"),
    ((1, -1), "left", "top"),
    ((-1, 1), "right", "bottom"),
    ((-1, -1), "right", "top"),
    ((0, 1), "center", "bottom"),
    ((1, 0), "left", "center"),
    ((0, -1), "center", "top"),
    ((-1, 0), "right", "center"),
]


def _hits(box: Any, centres: np.ndarray, radii: np.ndarray) -> int:
    """How many discs (display centres (k, 2), radii (k,) in pixels) meet the rectangle ``box``."""
    nx = np.clip(centres[:, 0], box.x0, box.x1)
    ny = np.clip(centres[:, 1], box.y0, box.y1)
    return int(np.sum((centres[:, 0] - nx) ** 2 + (centres[:, 1] - ny) ** 2 < radii**2))


def _own_radius(centre: np.ndarray, centres: np.ndarray, radii: np.ndarray) -> float:
    """The largest radius (pixels) of the discs centred within a pixel of ``centre``: the markers drawn at it."""
    at = np.hypot(*(centres - centre).T) < 1.0
    return float(radii[at].max()) if at.any() else 0.0


def place_labels(
    ax: Axes,
    points: np.ndarray,
    texts: Sequence[str],
    obstacles: Sequence[tuple[np.ndarray, float]],
    *,
    clearance: float | None = None,
    zorder: float = 10,
    **text_kw: Any,
) -> list[Annotation]:
    """Write ``texts[i]`` beside ``points[i]`` (data coordinates, (m, 2)) in the 2-D axes ``ax``.

    ``obstacles`` are the markers to keep clear of: (points (k, 2) in data coordinates, radius in points)
    pairs. ``clearance`` (points) is the distance from a point to its label, by default 2 more than the radius of
    the largest marker drawn at that point. Call it once every axes
    of the figure exists and its limits, titles and axis labels are set: it lays the figure out once to know
    where everything lands.
    """
    from matplotlib import patheffects
    from matplotlib.text import Text

    fig = ax.get_figure(root=True)
    assert fig is not None  # an axes on a figure
    fig.draw_without_rendering()  # fixes the (constrained) layout: data -> display is final from here
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # Agg canvas (new_figure)
    px = fig.dpi / 72.0  # pixels per point
    centres = np.vstack([ax.transData.transform(np.asarray(p, dtype=float).reshape(-1, 2)) for p, _ in obstacles])
    radii = np.concatenate([np.full(len(np.asarray(p).reshape(-1, 2)), r * px) for p, r in obstacles])
    style = {"zorder": zorder, "path_effects": [patheffects.withStroke(linewidth=2.2, foreground="white")], **text_kw}
    placed: list[Any] = []
    out = []
    for p, text in zip(np.asarray(points, dtype=float), texts):
        gap = _own_radius(ax.transData.transform(p), centres, radii) / px + 2.0 if clearance is None else clearance
        best: tuple[int, Any] | None = None
        for ring, ((dx, dy), ha, va) in itertools.product(range(RINGS), _SIDES):
            off = np.array([dx, dy], dtype=float) / np.hypot(dx, dy) * (gap + ring * RING_STEP)
            t = _annotate(ax, p, str(text), off, ha, va, leader_line=ring > 0, **style)
            t.update_positions(renderer)  # where the offset puts the text, then its box alone (not its line)
            box = Text.get_window_extent(t, renderer)
            cost = _hits(box, centres, radii) + sum(box.overlaps(q) for q in placed)
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, t)
            else:
                t.remove()
            if cost == 0:
                break
        assert best is not None  # _SIDES is not empty
        placed.append(Text.get_window_extent(best[1], renderer))
        out.append(best[1])
    return out


def _annotate(
    ax: Axes, p: np.ndarray, text: str, off: np.ndarray, ha: str, va: str, *, leader_line: bool, **kw: Any
) -> Annotation:
    """``text`` at ``off`` points from ``p``; a thin grey line back to ``p`` when it stands further out."""
    line = {"arrowstyle": "-", "color": "#888888", "lw": 0.5, "shrinkA": 0, "shrinkB": 2} if leader_line else None
    t = ax.annotate(
        text, tuple(p), xytext=tuple(off), textcoords="offset points", ha=ha, va=va, arrowprops=line,
        annotation_clip=False, **kw,
    )  # fmt: skip
    t.set_in_layout(False)
    return t
