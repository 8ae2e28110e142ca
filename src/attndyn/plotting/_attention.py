r"""Attention matrices over time (softmax paper Fig. 3) and query/key clouds (Fig. 4).

:math:`P_{ij}(t)=e^{\langle Qx_i,Kx_j\rangle}/\sum_l e^{\langle Qx_i,Kx_l\rangle}`, eq. (2), read
from a run kept with ``SaveAt(attention=True)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from torch import Tensor

from .._trajectory import SoftmaxTrajectory
from .._validation import InputError
from ._style import new_figure, sequence_states, to_numpy

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["attention_matrices", "query_key_clouds"]


def _need_attention(traj: Any) -> Tensor:
    """The kept attention matrices ``(T, B, [H,] n, n)`` of a softmax run, or a clear error."""
    if not isinstance(traj, SoftmaxTrajectory):
        raise InputError(f"attention plots need a SoftmaxTrajectory, got {type(traj).__name__}")
    if traj.attention is None:
        raise InputError("this run did not keep attention matrices; rerun with save=SaveAt(attention=True)")
    return traj.attention


def attention_matrices(
    traj: SoftmaxTrajectory,
    times: Sequence[float] | None = None,
    *,
    sequence: int | None = None,
    sort: bool = True,
    title: str | None = None,
) -> Figure:
    """P(t) at kept times closest to ``times`` (default: five spread over the run), as heat maps.

    With ``sort`` (1-D tokens) rows and columns follow the order of the initial tokens, which
    makes the Boolean limit of Theorem 2.1 visible as two blocks of columns.
    """
    attention = _need_attention(traj)
    states, b = sequence_states(traj, sequence)
    ts = to_numpy(traj.ts)
    if times is None:
        picks = np.unique(np.linspace(0, len(ts) - 1, 5).round().astype(int)).tolist()
    else:
        picks = [int(np.argmin(np.abs(ts - t))) for t in times]
    idx = traj.real_tokens(b).numpy()
    order = np.argsort(states[0, :, 0]) if sort and states.shape[-1] == 1 else np.arange(len(idx))
    fig = new_figure(2.6 * len(picks) + 0.6, 3.0)
    axes = fig.subplots(1, len(picks), squeeze=False)[0]
    im = None
    for ax, k in zip(axes, picks):
        P = to_numpy(attention[k, b])
        P = P.sum(axis=0) if P.ndim == 3 else P
        P = P[np.ix_(idx, idx)][np.ix_(order, order)]
        im = ax.imshow(P, cmap="magma_r", vmin=0, vmax=1, interpolation="nearest")
        ax.set_title(f"t = {ts[k]:.3g}", fontsize=10)
        ax.set_xticks([]), ax.set_yticks([])
        order_note = " (sorted by $x(0)$)" if sort and states.shape[-1] == 1 else ""
        ax.set_xlabel("key j" + order_note, fontsize=9)
        ax.set_ylabel("query i" + order_note, fontsize=9)
    assert im is not None  # picks is never empty
    fig.colorbar(im, ax=list(axes), shrink=0.8, label="$P_{ij}(t)$")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig


def query_key_clouds(
    traj: SoftmaxTrajectory,
    times: Sequence[float] | None = None,
    *,
    sequence: int | None = None,
    max_tokens: int = 20,
    title: str | None = None,
) -> Figure:
    r"""Softmax paper Fig. 4: keys :math:`Kx_j` (green), queries :math:`Qx_i` (purple), a line
    between each pair of width :math:`P_{ij}(t)`. Two-dimensional queries/keys only."""
    attention = _need_attention(traj)
    states, b = sequence_states(traj, sequence)
    Q, K = to_numpy(traj.params.Q[0]), to_numpy(traj.params.K[0])
    if Q.shape[0] != 2:
        raise InputError(f"query/key clouds are drawn in the plane; Q maps to dimension {Q.shape[0]}, not 2")
    if traj.params.rescaled:
        raise InputError("query/key clouds show the original tokens x(t); run with rescaled=False")
    ts = to_numpy(traj.ts)
    picks = (
        np.unique(np.linspace(0, len(ts) - 1, 4).round().astype(int)).tolist()
        if times is None
        else [int(np.argmin(np.abs(ts - t))) for t in times]
    )
    idx = traj.real_tokens(b).numpy()
    m = min(max_tokens, len(idx))
    fig = new_figure(3.1 * len(picks), 3.3)
    axes = fig.subplots(1, len(picks), squeeze=False)[0]
    for ax, k in zip(axes, picks):
        x = states[k][:m]
        q, kk = x @ Q.T, x @ K.T
        P = to_numpy(attention[k, b])
        P = P.sum(axis=0) if P.ndim == 3 else P
        P = P[np.ix_(idx, idx)][:m, :m]
        for i in range(m):
            for j in range(m):
                if P[i, j] > 0.02:
                    ax.plot(
                        [q[i, 0], kk[j, 0]], [q[i, 1], kk[j, 1]], color="#444444", lw=2.0 * P[i, j], alpha=0.6, zorder=1
                    )
        ax.scatter(*kk.T, c="#2ca02c", s=22, zorder=2, label="keys $Kx_j$")
        ax.scatter(*q.T, c="#8e44ad", s=22, zorder=3, label="queries $Qx_i$")
        ax.set_title(f"t = {ts[k]:.3g}", fontsize=10)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.25, lw=0.5)
    axes[0].legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=11)
    return fig
