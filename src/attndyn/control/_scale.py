r"""Tokens brought near 1 by a power of two, so that control does not depend on their scale.

Every question control asks is invariant under positive scaling of the tokens: the follow sets of
eq. (1.1b) of the hardmax paper (:math:`\langle A\,cz_i, cz_j\rangle = c^2\langle A z_i, z_j\rangle`),
the hull certificates (convex weights do not change) and the normalised margins of
:mod:`~attndyn.control._constraints`. Multiplying by :math:`2^{-e}` is exact in binary floating
point, so :func:`unit_scale` maps ``Z`` and ``2**k * Z`` to **the same bits** (for any k that keeps
the tokens normal numbers): the solvers then see identical input, with their absolute tolerances
(HiGHS: 1e-7) meaningful relative to tokens of size about 1, and return identical answers.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from .._trajectory import HardmaxTrajectory

__all__ = ["unit_scale", "in_units"]


def unit_scale(Z: np.ndarray) -> tuple[np.ndarray, int]:
    """``(Z * 2**-e, e)`` with the largest ``|Z|`` entry of the result in [0.5, 1) (``(Z, 0)`` when Z is 0).
    Quantities in the caller's units are ``np.ldexp(x, e)`` (lengths) or ``np.ldexp(x, 2 * e)`` (scores).

    >>> Zs, e = unit_scale(np.array([[3.0, 0.0], [0.0, -1.0]]) * 2.0**-600)
    >>> Zs.tolist(), e
    ([[0.75, 0.0], [0.0, -0.25]], -598)
    """
    Z = np.asarray(Z, dtype=np.float64)
    top = float(np.abs(Z).max()) if Z.size else 0.0
    if top == 0.0 or not np.isfinite(top):
        return Z, 0
    e = int(np.frexp(top)[1])  # top = m 2**e, 0.5 <= m < 1
    return np.ldexp(Z, -e), e


def in_units(traj: HardmaxTrajectory, e: int) -> HardmaxTrajectory:
    """A run of the engine on ``Z * 2**-e`` as the run on ``Z``: positions times ``2**e``, margins (scores)
    times ``2**(2e)``. Exact: the engine's run of ``2**k * Z`` is its run of ``Z`` times ``2**k``, bit for bit."""
    if e == 0:
        return traj
    lm, rm = traj.leader_margin, traj.rounding_margin
    return dataclasses.replace(
        traj,
        ys=_times_pow2(traj.ys, e),
        leader_margin=None if lm is None else _times_pow2(lm, 2 * e),
        rounding_margin=None if rm is None else _times_pow2(rm, 2 * e),
    )


def _times_pow2(t: torch.Tensor, e: int) -> torch.Tensor:
    """``t * 2**e`` exactly (no overflow of the factor itself, unlike ``t * 2.0**e`` for e = 1024); a score
    beyond the dtype's range is inf, as the engine's own margins are for such tokens."""
    with np.errstate(over="ignore"):
        return torch.from_numpy(np.ldexp(t.detach().cpu().numpy(), e))
