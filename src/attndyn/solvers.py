"""Integrators: explicit Runge–Kutta schemes as coefficient tables plus one generic step,
and adaptive schemes delegated to torchdiffeq.

A fixed-step scheme is data (a Butcher tableau); adding one is adding a table.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = ["ButcherTableau", "TABLEAUS", "ADAPTIVE", "rk_step"]


@dataclass(frozen=True)
class ButcherTableau:
    """Explicit RK scheme: stages at ``t + c[s] dt`` from ``y + dt * sum_r a[s][r] k_r``; result weights ``b``."""

    c: tuple[float, ...]
    a: tuple[tuple[float, ...], ...]
    b: tuple[float, ...]
    order: int


TABLEAUS: dict[str, ButcherTableau] = {
    "euler": ButcherTableau(c=(0.0,), a=((),), b=(1.0,), order=1),
    "midpoint": ButcherTableau(c=(0.0, 0.5), a=((), (0.5,)), b=(0.0, 1.0), order=2),
    "heun": ButcherTableau(c=(0.0, 1.0), a=((), (1.0,)), b=(0.5, 0.5), order=2),
    "rk4": ButcherTableau(
        c=(0.0, 0.5, 0.5, 1.0),
        a=((), (0.5,), (0.0, 0.5), (0.0, 0.0, 1.0)),
        b=(1 / 6, 1 / 3, 1 / 3, 1 / 6),
        order=4,
    ),
}

# Adaptive schemes of torchdiffeq we expose (error-controlled, embedded pairs).
ADAPTIVE = ("dopri5", "dopri8", "bosh3", "adaptive_heun")


def rk_step(f: Callable[[float, Tensor], Tensor], t: float, y: Tensor, dt: float, tableau: ButcherTableau) -> Tensor:
    """One step of an explicit Runge–Kutta scheme: ``y(t + dt)`` from ``y(t)``."""
    ks: list[Tensor] = []
    for c, row in zip(tableau.c, tableau.a):
        yi = y
        for a, k in zip(row, ks):
            if a != 0.0:
                yi = torch.add(yi, k, alpha=dt * a)
        ks.append(f(t + c * dt, yi))
    out = y
    for b, k in zip(tableau.b, ks):
        if b != 0.0:
            out = torch.add(out, k, alpha=dt * b)
    return out
