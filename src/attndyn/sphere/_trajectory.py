"""The result of a run on the sphere: :class:`SphereTrajectory` and its settings, :class:`SphereParams`."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import torch
from torch import Tensor

from .._trajectory import RunParams, Trajectory

__all__ = ["SphereParams", "SphereTrajectory"]


@dataclass(frozen=True, eq=False)
class SphereParams(RunParams):
    r"""The settings of a run on the sphere (arXiv 2312.10794, Section 2).

    Attributes:
        Q, K: ``(d_q, d)`` query and key matrices; V ``(d, d)`` (identities when none were given).
        beta: ``(B,)`` inverse temperature of each sequence.
        attention: ``"sa"`` (softmax weights) or ``"usa"`` (weights :math:`e^{\beta s}/n`).
        method: ``"discrete"`` (layers with the normalisation ``norm``) or a Runge–Kutta scheme.
        norm: ``"post"``, ``"pre"``, ``"peri"`` or ``"ngpt"`` for ``method="discrete"``, else None.
        step: the grid spacing actually used, ``time / ceil(time / step)``.
        time: the final time asked for.
        causal: token i attended only to :math:`j \le i`.
        noise: the noise level :math:`\sigma` (0: none); seed: its seed (None without noise).
    """

    Q: Tensor
    K: Tensor
    V: Tensor
    beta: Tensor
    attention: str
    method: str
    norm: str | None
    step: float
    time: float
    causal: bool
    noise: float
    seed: int | None

    @property
    def identity(self) -> bool:
        """Q = K = V = I: the case of the energy and the gradient-ascent theorem."""
        d = self.V.shape[-1]
        return all(m.shape == (d, d) and bool((m == _eye_like(m)).all()) for m in (self.Q, self.K, self.V))


def _eye_like(m: Tensor) -> Tensor:
    return torch.eye(m.shape[-1], dtype=m.dtype, device=m.device)


@dataclass(frozen=True, repr=False)
class SphereTrajectory(Trajectory):
    """Tokens on the unit sphere over time (:func:`attndyn.sphere.evolve`): ``ys`` (T, B, n, d) unit vectors at
    the kept times ``ts``; for pre-LN and peri-LN layers, the normalised stream :math:`y/\\lVert y\\rVert`.
    ``params``: :class:`SphereParams`."""

    params: SphereParams = field(kw_only=True)

    @property
    def times(self) -> Tensor:
        return self.ts

    def _select_fields(self, b: int) -> dict[str, Any]:
        return {"params": replace(self.params, beta=self.params.beta[b : b + 1])}
