r"""Leaders and the follow graph of a hardmax run (hardmax paper, Definition 1.1).

Token i is a *leader* if :math:`C_i(Z^k) = \{i\}` for some layer k: it follows only itself.
A leader is reported only when its strict margin :math:`\min_{j\ne i}\langle A z_i, z_i - z_j\rangle`
exceeds the rounding bound of the scores it compares (:mod:`attndyn.margins`); the layers at which
rounding alone made a token follow only itself are listed apart, in :attr:`LeaderSet.rounding`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import Tensor

from .. import attention
from .._dynamics import rescaled_view
from .._trajectory import HardmaxTrajectory, SoftmaxTrajectory, Trajectory
from .._validation import InputError, check_int

__all__ = ["LeaderSet", "RoundingEvent", "leaders", "follow_graph", "self_attending"]


class RoundingEvent(NamedTuple):
    """A layer at which token ``index`` followed only itself by a margin within the rounding bound."""

    index: int  # type: ignore[assignment]  # shadows tuple.index on purpose: the records' key is "index"
    layer: int
    margin: float
    bound: float


@dataclass(frozen=True)
class LeaderSet:
    """Leaders of one sequence: token indices, the first layer at which each led and its margin then.

    ``rounding`` lists the events decided by rounding (not leaders), in layer order.
    """

    indices: tuple[int, ...]
    since: tuple[int, ...]
    margins: tuple[float, ...] = ()
    rounding: tuple[RoundingEvent, ...] = ()

    def records(self) -> list[dict[str, int | float]]:
        """``[{"index": i, "since_layer": k, "margin": mu}, ...]`` sorted by index (the CLI's JSON form)."""
        if not self.margins:  # softmax leaders have no margin
            return [{"index": i, "since_layer": k} for i, k in zip(self.indices, self.since)]
        return [
            {"index": i, "since_layer": k, "margin": mu} for i, k, mu in zip(self.indices, self.since, self.margins)
        ]

    def rounding_records(self) -> list[dict[str, int | float]]:
        """The events decided by rounding, as JSON-ready dicts."""
        return [ev._asdict() for ev in self.rounding]

    def __len__(self) -> int:
        return len(self.indices)


def _one_sequence(traj: Trajectory, sequence: int | None) -> int:
    if sequence is None:
        if traj.batch_size > 1:
            raise InputError(
                f"the trajectory holds a batch of {traj.batch_size} sequences; pass sequence=b (0 <= b < {traj.batch_size})"
            )
        return 0
    if not 0 <= sequence < traj.batch_size:
        raise InputError(f"sequence={sequence} is out of range for a batch of {traj.batch_size}")
    return sequence


def leaders(traj: HardmaxTrajectory | SoftmaxTrajectory, sequence: int | None = None) -> LeaderSet:
    """Tokens with :math:`C_i(Z^k)=\\{i\\}` at some simulated layer k, with the first such k.

    For a softmax run: the tokens whose attention row peaks strictly on themselves (first head)
    at the end, each with the first grid step from which it has done so at every step (tracked
    during the run, whatever was saved); they carry no margin.

    >>> import attndyn
    >>> traj = attndyn.hardmax([[2.0, 0.0], [0.0, 1.0], [0.5, 0.5]], alpha=1.0, layers=5)
    >>> attndyn.leaders(traj).records()
    [{'index': 0, 'since_layer': 0, 'margin': 3.0}, {'index': 1, 'since_layer': 0, 'margin': 0.5}]

    Followers that converge onto their leader to within rounding never become leaders; the
    layers at which rounding alone isolated a token are in ``.rounding``.
    """
    if isinstance(traj, SoftmaxTrajectory) and traj.leader_since is not None:
        b = _one_sequence(traj, sequence)
        since = traj.leader_since[b]
        idx = torch.nonzero(since >= 0).flatten().tolist()
        return LeaderSet(indices=tuple(idx), since=tuple(int(since[i]) for i in idx))
    if not isinstance(traj, HardmaxTrajectory):
        raise InputError(
            f"leaders() needs a trajectory from attndyn.hardmax or attndyn.softmax, got {type(traj).__name__}"
        )
    b = _one_sequence(traj, sequence)
    if traj.leader_since is None:
        raise InputError(
            "this HardmaxTrajectory has no leader record (leader_since is None); use one made by attndyn.hardmax"
        )
    since = traj.leader_since[b]
    idx = torch.nonzero(since >= 0).flatten().tolist()
    margin = traj.leader_margin[b] if traj.leader_margin is not None else None
    events: tuple[RoundingEvent, ...] = ()
    if traj.rounding_at is not None and traj.rounding_margin is not None:
        rows = traj.rounding_at[:, 0] == b
        events = tuple(
            RoundingEvent(int(i), int(k), float(mu), float(bd))
            for (_, i, k), (mu, bd) in zip(traj.rounding_at[rows].tolist(), traj.rounding_margin[rows].tolist())
        )
    return LeaderSet(
        indices=tuple(idx),
        since=tuple(int(since[i]) for i in idx),
        margins=() if margin is None else tuple(float(margin[i]) for i in idx),
        rounding=events,
    )


def follow_graph(traj: HardmaxTrajectory, layer_index: int, sequence: int | None = None) -> Tensor:
    """Boolean (n, n) follow relation (i → j when j ∈ C_i) at kept state ``layer_index``.

    Needs a run with ``SaveAt(follow=True)``.
    """
    if traj.follow is None:
        raise InputError("this trajectory did not keep follow sets; rerun with save=SaveAt(follow=True)")
    b = _one_sequence(traj, sequence)
    return traj.follow[_kept_index(traj, layer_index, "layer_index"), b]


def _kept_index(traj: Trajectory, index: Any, name: str) -> int:
    """``index`` as an index of the run's kept states (negative counts from the end), or an InputError."""
    T = int(traj.ys.shape[0])
    return check_int(index, f"{name} (of the run's {T} kept states)", minimum=-T, maximum=T - 1)


def self_attending(P: ArrayLike | Tensor) -> np.ndarray:
    r"""Softmax leaders at one time: the tokens whose attention row peaks strictly on themselves.

    Softmax paper: the leaders are the tokens the others end up attending to, the columns of the
    Boolean limit :math:`P^*` (Theorem 2.1) and the vertices of the polytope K (Theorem 3.1), and a
    leader's own row tends to :math:`e_i`. At a time t, token i leads when
    :math:`P_{ii}(t) > P_{ij}(t)` for every :math:`j \ne i`; the softmax being monotone, that is
    :math:`\langle Qx_i, Kx_i\rangle > \langle Qx_i, Kx_j\rangle`, which is what
    :func:`attndyn.softmax` tracks at every step (``traj.leader_since``, read by :func:`leaders`).
    ``P`` is one ``(n, n)`` attention (or score) matrix, one head; returns ``(n,)`` bool.

    >>> self_attending([[0.7, 0.3], [0.6, 0.4]]).tolist()   # token 1 attends to token 0 more
    [True, False]
    >>> self_attending([[0.5, 0.5], [0.0, 1.0]]).tolist()   # a tie is not a strict peak
    [False, True]
    """
    a = np.asarray(P.detach().cpu() if isinstance(P, Tensor) else P, dtype=np.float64)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise InputError(f"self_attending() needs one square (n, n) matrix, got shape {a.shape}")
    own = np.diag(a).copy()
    others = a.copy()
    np.fill_diagonal(others, -np.inf)
    return own > others.max(axis=1) if len(a) > 1 else np.ones(len(a), dtype=bool)


def _state_scores(traj: SoftmaxTrajectory, index: int, b: int) -> Tensor:
    """beta times the first head's scores of kept state ``index`` of sequence b (a reading, not a run)."""
    p = traj.params
    y = traj.ys[index, b].detach().cpu()[None]  # (1, n, d)
    if p.rescaled:  # the scores see e^{tV} z (eq. (4)), or R^k z (Remark 4)
        y = rescaled_view(y, p.V[0].detach().cpu(), float(traj.ts[index]), p.layer_step)
    A = p.K[0].detach().cpu().T @ p.Q[0].detach().cpu()
    s = p.beta * attention.scores(y, A)  # (1, n, n)
    mask = None if traj.mask is None else traj.mask[b : b + 1].cpu()
    keep = attention.allowed(mask, s.shape[-1], causal=p.causal)  # real keys; j <= i under a causal mask
    return (s if keep is None else s.masked_fill(~keep, -torch.inf))[0]


def follow_matrix(traj: Trajectory, index: int, sequence: int | None = None) -> np.ndarray:
    r"""Boolean (m, m) relation over the m real tokens at kept state ``index``: (i, j) True when i follows j.

    Hardmax: :math:`j\in C_i(Z^k)` (eq. (1.1b); the kept follow sets, or the exact rule on the kept
    state, over :math:`j \le i` for a causal run). Softmax: j is the arg-max of row i of the first head's attention (kept, or read off the
    kept state's scores, the same index: the softmax is monotone), the head whose leaders
    :func:`attndyn.softmax` tracks (:func:`self_attending`): an exact tie goes to the first index, where the
    hardmax relation lists every tied token. Plots read this; they decide nothing. Rows and columns are the real
    tokens in order, ``traj.real_tokens(b)``: on a masked run row r is token ``real_tokens(b)[r]``, where
    :func:`follow_graph` keeps the (n, n) token indices (padding rows all False).
    """
    b = _one_sequence(traj, sequence)
    index = _kept_index(traj, index, "index")
    idx = traj.real_tokens(b).numpy()
    if isinstance(traj, HardmaxTrajectory):
        if traj.follow is not None:
            return traj.follow[index, b].cpu().numpy()[np.ix_(idx, idx)] > 0
        z = traj.ys[index, b].detach().cpu()[idx][None]  # (1, m, d)
        A = traj.params.A.detach().cpu()
        s = attention.scores(z, A, exact=True)  # (1, m, m): the real tokens, in their order (j <= i is kept)
        return attention.follow_sets(s, tol=traj.params.tol, causal=traj.params.causal)[0].numpy()
    if isinstance(traj, SoftmaxTrajectory):
        if traj.attention is not None:
            P = traj.attention[index, b].detach().cpu()
            P = P[0] if P.ndim == 3 else P  # (H, n, n): the first head
        else:
            P = _state_scores(traj, index, b)
        P = P.numpy()[np.ix_(idx, idx)]
        out = np.zeros_like(P, dtype=bool)
        out[np.arange(len(P)), P.argmax(axis=1)] = True
        return out
    raise InputError(f"expected a HardmaxTrajectory or SoftmaxTrajectory, got {type(traj).__name__}")
