r"""Which tokens of a drawn state single someone out, so that "follows" and "leads" mean something.

A softmax token follows the arg-max of its attention row (:func:`attndyn.analysis.follow_matrix`),
and leads when that arg-max is itself. When the row is nearly uniform, every score alike, the arg-max
is decided by differences that the attention hardly acts on: when all tokens collapse to the origin
(softmax paper, Theorem C.5, V = -I) every :math:`\langle Qx_i, Kx_j\rangle \to 0` and
:math:`P_{ij}(t) \to 1/n`, so a "leader" is an accident of rounding. A figure then draws that token
as a plain grey dot: no star, no follow colour.

Row i *singles out* a token when its largest weight is at least :data:`DISTINCT_RATIO` times its
smallest, :math:`\max_j P_{ij} \ge 2 \min_j P_{ij}` (eq. (2)), i.e. when its scores span at least
:math:`\ln 2 / \beta`. Hardmax rows always do (eq. (1.1b) picks its arg-max set exactly).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .. import attention
from .._trajectory import HardmaxTrajectory, SoftmaxTrajectory, Trajectory
from ..analysis import follow_matrix

__all__ = ["DISTINCT_RATIO", "distinct_rows", "drawn_follow", "run_leaders"]

DISTINCT_RATIO = 2.0  # largest over smallest attention weight of a row that singles a token out


def _first_head_scores(traj: SoftmaxTrajectory, index: int, b: int) -> torch.Tensor:
    r"""(n, n) scores :math:`\beta\langle Q x_i, K x_j\rangle` of kept state ``index`` of sequence ``b``, first
    head (eq. (2)); a rescaled run's state z sees :math:`x = e^{tV} z` (eq. (4))."""
    p = traj.params
    y = traj.ys[index, b].detach().cpu()  # (n, d)
    if p.rescaled:
        y = y @ torch.linalg.matrix_exp(float(traj.ts[index]) * p.V[0].detach().cpu()).T
    A = p.K[0].detach().cpu().T @ p.Q[0].detach().cpu()  # <Q x_i, K x_j> = <K^T Q x_i, x_j>
    s = p.beta * attention.scores(y[None], A)[0]
    return s.masked_fill(~attention.causal_mask(s.shape[-1]), -torch.inf) if p.causal else s  # keys j <= i


def distinct_rows(traj: Trajectory, index: int, b: int) -> np.ndarray:
    """(m,) bool over the m real tokens of sequence ``b`` at kept state ``index``: rows that single a token out."""
    idx = traj.real_tokens(b).numpy()
    if not isinstance(traj, SoftmaxTrajectory) or len(idx) == 1:
        return np.ones(len(idx), dtype=bool)
    if traj.attention is not None:
        P = traj.attention[index, b].detach().cpu()
        P = (P[0] if P.ndim == 3 else P).numpy()[np.ix_(idx, idx)]  # (H, n, n): the first head
        return np.asarray(P.max(axis=1) >= DISTINCT_RATIO * P.min(axis=1))
    s = _first_head_scores(traj, index, b).numpy()[np.ix_(idx, idx)]
    return np.asarray(s.max(axis=1) - s.min(axis=1) >= math.log(DISTINCT_RATIO))


def drawn_follow(traj: Trajectory, index: int, b: int) -> np.ndarray:
    """:func:`attndyn.analysis.follow_matrix` with the rows that single nobody out emptied: (m, m) bool."""
    return follow_matrix(traj, index, b) & distinct_rows(traj, index, b)[:, None]


def run_leaders(traj: Trajectory, index: int, b: int) -> np.ndarray | None:
    """(m,) bool over the real tokens: the tokens a hardmax run certified as leaders at or before the layer of kept
    state ``index`` (``leader_since``), None for other runs. A strict leader stays one (C_i = {i} at layer k: z_i
    stays, and every other token moves to a convex combination of points scoring below it), but a follower that
    reaches its leader's float value ties with it in the follow sets, so the state alone would lose the star."""
    if not isinstance(traj, HardmaxTrajectory) or traj.leader_since is None:
        return None
    since = traj.leader_since[b].detach().cpu().numpy()[traj.real_tokens(b).numpy()]
    return np.asarray((since >= 0) & (since <= float(traj.ts[index])))
