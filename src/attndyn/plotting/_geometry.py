r"""The geometry of one hardmax step (hardmax paper Fig. 1 and Fig. 7).

Token :math:`z_i` is attracted by the tokens with the largest projection on the direction
:math:`A z_i`, :math:`C_i(Z)=\arg\max_j\langle A z_i, z_j\rangle` (eq. (1.1b)); they all lie in
the closed half-space :math:`\mathcal H_i=\{z:\langle A z_i, z - z_i\rangle\ge 0\}`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .. import attention
from .._validation import InputError
from ._style import HULL_COLOR, color, finish_plane, new_figure, square_limits, to_numpy

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_step_geometry", "step_geometry"]


def _half_plane(ax: Axes, normal: np.ndarray, point: np.ndarray, xl: Any, yl: Any, **kw: Any) -> None:
    """Shade {z : <normal, z - point> >= 0} inside the axes box."""
    gx, gy = np.meshgrid(np.linspace(xl[0], xl[1], 400), np.linspace(yl[0], yl[1], 400))
    inside = normal[0] * (gx - point[0]) + normal[1] * (gy - point[1]) >= 0
    ax.contourf(gx, gy, inside.astype(float), levels=[0.5, 1.5], colors=[HULL_COLOR], alpha=0.45, zorder=0, **kw)


def _line(ax: Axes, normal: np.ndarray, level: float, xl: Any, yl: Any, **kw: Any) -> None:
    """Draw {z : <normal, z> = level}."""
    t = np.linspace(-1, 1, 2) * 10 * max(xl[1] - xl[0], yl[1] - yl[0])
    base = normal * level / (normal @ normal)
    tangent = np.array([-normal[1], normal[0]]) / np.linalg.norm(normal)
    pts = base[None] + t[:, None] * tangent[None]
    ax.plot(pts[:, 0], pts[:, 1], **kw)


def draw_step_geometry(
    ax: Axes, tokens: Any, i: int = 0, *, A: Any = None, title: str | None = None, limits: tuple | None = None
) -> list[int]:
    """Draw Fig. 1 for token ``i`` of ``tokens`` (n, 2) into ``ax``; returns :math:`C_i` (0-based).

    Shows the direction :math:`A z_i` (arrow), the half-space :math:`\\mathcal H_i` (blue), the
    level line of the largest projection (dashed) and the attracting tokens (large, black rings); the axes are
    labelled "first coordinate" and "second coordinate".
    """
    z = to_numpy(tokens)
    if z.ndim != 2 or z.shape[1] != 2:
        raise InputError(f"step geometry is drawn in the plane: tokens must have shape (n, 2), got {z.shape}")
    n = len(z)
    if not 0 <= i < n:
        raise InputError(f"token index i={i} out of range for {n} tokens")
    Am = np.eye(2) if A is None else to_numpy(A)
    s = attention.scores(torch.as_tensor(z[None]), torch.as_tensor(Am), exact=True)  # (1, n, n)
    C = [int(j) for j in np.nonzero(attention.follow_sets(s)[0, i].numpy())[0]]
    direction = Am @ z[i]
    xl, yl = (
        limits
        if limits is not None
        else square_limits(np.vstack([z, z[i] + direction / np.linalg.norm(direction)]), 0.2)
    )
    _half_plane(ax, direction, z[i], xl, yl)
    _line(ax, direction, float(direction @ z[i]), xl, yl, color="#2b6cb0", lw=1.0)
    best = float(max(direction @ z[j] for j in range(n)))
    _line(ax, direction, best, xl, yl, color="#555555", lw=1.0, ls="--")
    arrow = direction / np.linalg.norm(direction) * 0.35 * (xl[1] - xl[0])
    ax.annotate("", xy=z[i] + arrow, xytext=z[i], arrowprops=dict(arrowstyle="-|>", color="#333333", lw=1.6), zorder=4)
    tip = z[i] + arrow * 1.08
    ax.text(tip[0], tip[1], f"$Az_{{{i + 1}}}$", fontsize=10, zorder=5)
    ax.plot([0], [0], marker="+", color="#666666", ms=8, zorder=2)
    for j in range(n):
        ring = j in C and j != i
        ax.plot(
            *z[j],
            marker="o",
            color=color(j),
            markeredgecolor="#000000" if ring else "#222222",
            ms=12 if ring else 9,
            markeredgewidth=2.5 if ring else 0.8,
            zorder=3,
        )
        ax.text(z[j, 0], z[j, 1], f"  $z_{{{j + 1}}}$", fontsize=10, va="bottom", zorder=5)
    finish_plane(ax, xl, yl, title)
    # "first coordinate", not z_1: the tokens themselves are labelled z_1, ..., z_n
    ax.set_xlabel("first coordinate", fontsize=8)
    ax.set_ylabel("second coordinate", fontsize=8)
    return C


def step_geometry(tokens: Any, i: int = 0, *, matrices: dict[str, Any] | None = None) -> Figure:
    """Fig. 1 of the hardmax paper: one panel per matrix A (``{"A = I": None, ...}``).

    >>> fig = step_geometry([[1, 0], [2, 1], [2, -1], [1.5, 2.5], [-1, 0.5]],
    ...                     matrices={"A = I": None, "A = [[2,1],[1,1]]": [[2, 1], [1, 1]]})
    >>> len(fig.axes)
    2
    """
    mats = matrices or {"A = I": None}
    z = to_numpy(tokens)
    lim = square_limits(np.vstack([z, np.zeros((1, 2))]), 0.25)
    fig = new_figure(4.2 * len(mats), 4.3)
    axes = fig.subplots(1, len(mats), squeeze=False)[0]
    for ax, (name, A) in zip(axes, mats.items()):
        C = draw_step_geometry(ax, z, i, A=A, limits=lim)
        ax.set_title(f"{name}:  $C_{{{i + 1}}}(Z)$ = {{{', '.join(str(j + 1) for j in C)}}}", fontsize=10)
    return fig
