r"""Leaders and the follow graph of a hardmax run (hardmax paper, Definition 1.1).

Token i is a *leader* if :math:`C_i(Z^k) = \{i\}` for some layer k: it follows only itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .._validation import InputError
from ..trajectory import HardmaxTrajectory, Trajectory

__all__ = ["LeaderSet", "leaders", "follow_graph"]


@dataclass(frozen=True)
class LeaderSet:
    """Leaders of one sequence: token indices and the first layer at which each led."""

    indices: tuple[int, ...]
    since: tuple[int, ...]

    def records(self) -> list[dict[str, int]]:
        """``[{"index": i, "since_layer": k}, ...]`` sorted by index (the CLI's JSON form)."""
        return [{"index": i, "since_layer": k} for i, k in zip(self.indices, self.since)]

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


def leaders(traj: HardmaxTrajectory, sequence: int | None = None) -> LeaderSet:
    """Tokens with :math:`C_i(Z^k)=\\{i\\}` at some simulated layer k, with the first such k.

    >>> import attndyn
    >>> traj = attndyn.hardmax([[2.0, 0.0], [0.0, 1.0], [0.5, 0.5]], alpha=1.0, layers=5)
    >>> attndyn.leaders(traj).records()
    [{'index': 0, 'since_layer': 0}, {'index': 1, 'since_layer': 0}]
    """
    if not isinstance(traj, HardmaxTrajectory):
        raise InputError(f"leaders() needs a HardmaxTrajectory (from attndyn.hardmax), got {type(traj).__name__}")
    b = _one_sequence(traj, sequence)
    since = traj.leader_since[b]
    idx = torch.nonzero(since >= 0).flatten().tolist()
    return LeaderSet(indices=tuple(idx), since=tuple(int(since[i]) for i in idx))


def follow_graph(traj: HardmaxTrajectory, layer_index: int, sequence: int | None = None) -> Tensor:
    """Boolean (n, n) follow relation (i → j when j ∈ C_i) at kept state ``layer_index``.

    Needs a run with ``SaveAt(follow=True)``.
    """
    if traj.follow is None:
        raise InputError("this trajectory did not keep follow sets; rerun with save=SaveAt(follow=True)")
    b = _one_sequence(traj, sequence)
    return traj.follow[layer_index, b]
