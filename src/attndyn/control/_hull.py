r"""What can never lead at layer 0: convex-combination certificates.

If :math:`z_i = \sum_{j\ne i} \lambda_j z_j` with :math:`\lambda \ge 0,\ \sum_j \lambda_j = 1`
(token i lies in the convex hull of the others), then for **every** matrix A

.. math::

    \langle A z_i, z_i\rangle = \sum_{j\ne i} \lambda_j \langle A z_i, z_j\rangle \le \max_{j\ne i} \langle A z_i, z_j\rangle ,

so some j != i is in :math:`C_i(Z^0)` and i does not lead at layer 0 (hardmax paper, eq. (1.1b)
and Definition 1.1). For **symmetric positive definite** A the origin may join the combination:
if :math:`z_i = \lambda_0\cdot 0 + \sum_{j\ne i}\lambda_j z_j` with :math:`\lambda_0 > 0` and i led,
then :math:`\langle A z_i, z_i\rangle < (1-\lambda_0)\langle A z_i, z_i\rangle`, impossible since
:math:`\langle A z_i, z_i\rangle > 0`. Conversely, a token outside the hull of the others (and of
the origin, for SPD A) leads at layer 0 for a suitable A on its own: take A with :math:`A z_i = w`
for a normal w separating :math:`z_i` (with :math:`\langle w, z_i\rangle > 0` for SPD A).

**Scale.** The weights are found on the tokens brought near 1 by a power of two
(:func:`~attndyn.control._scale.unit_scale`), so the answer for ``2**k * Z`` is the answer for ``Z``
bit for bit, and a certificate is issued only when its weights reproduce :math:`z_i` to within
``rtol`` times the largest coordinate (the LP's solution is first polished on its support, a
system of at most d + 1 points, by least squares). A token that lies outside the hull by less
than that is not certified: it is left to the solver, whose margin then says how little it can lead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linprog

from ._scale import unit_scale

__all__ = ["HullCertificate", "never_leads", "leadable"]


@dataclass(frozen=True)
class HullCertificate:
    """Proof that token ``token`` cannot lead at layer 0: convex weights over the other tokens
    (``weights[j]``, j != token, zero at the token itself) and ``origin_weight`` on the origin
    (used only for SPD A), with ``residual`` = :math:`\\lVert z_i - \\sum_j \\lambda_j z_j\\rVert_\\infty`
    relative to the largest coordinate :math:`\\max_{j,a} |z_{ja}|` (the same at every scale)."""

    token: int
    weights: np.ndarray  # (n,)
    origin_weight: float
    residual: float
    spd: bool

    def check(self, tokens: ArrayLike, *, rtol: float = 1e-12) -> bool:
        """The certificate is valid for ``tokens`` (weights >= 0, sum to 1, reproduce the token to within
        ``rtol`` times the largest coordinate: the same answer for the tokens at any scale)."""
        Z, _ = unit_scale(np.asarray(tokens, dtype=np.float64))
        w, w0 = self.weights, self.origin_weight
        ok_sign = bool((w >= -rtol).all() and w0 >= -rtol and abs(w[self.token]) <= rtol)
        ok_sum = abs(w.sum() + w0 - 1.0) <= rtol
        return ok_sign and ok_sum and float(np.abs(w @ Z - Z[self.token]).max()) <= rtol

    def record(self) -> dict:
        """JSON form: the token, the nonzero weights ``{j: lambda_j}``, the origin's weight, the residual."""
        nz = {int(j): float(self.weights[j]) for j in np.flatnonzero(self.weights > 1e-12)}
        return {
            "token": self.token,
            "weights": nz,
            "origin_weight": float(self.origin_weight),
            "residual": float(self.residual),
            "spd": self.spd,
        }

    def sentence(self) -> str:
        parts = " + ".join(f"{w:.3g}·z_{j}" for j, w in self.record()["weights"].items())
        if self.origin_weight > 1e-12:
            parts += f" + {self.origin_weight:.3g}·0"
        where = (
            "the hull of the other tokens and the origin"
            if self.origin_weight > 1e-12
            else "the hull of the other tokens"
        )
        within = f" to within {self.residual:.2g} of the largest coordinate" if self.residual > 0 else ""
        return (
            f"token {self.token} lies in {where} (z_{self.token} = {parts}{within}), "
            f"so no {'SPD ' if self.spd else ''}A makes it lead at layer 0"
        )


def never_leads(tokens: ArrayLike, i: int, *, spd: bool = False, rtol: float = 1e-12) -> HullCertificate | None:
    """A :class:`HullCertificate` that token i cannot lead at layer 0, or None when it can (or lies
    outside the hull by less than ``rtol`` times the largest coordinate: see the module).

    With ``spd=True`` the certificate may use the origin (for SPD A only).

    >>> Z = [[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]]
    >>> never_leads(Z, 3).record()["weights"]
    {0: 0.5, 1: 0.25, 2: 0.25}
    >>> never_leads(Z, 1) is None
    True
    """
    Z, _ = unit_scale(np.asarray(tokens, dtype=np.float64))
    n, d = Z.shape
    others = [j for j in range(n) if j != i]
    P = Z[others]  # (n-1, d)
    if spd:
        P = np.vstack([P, np.zeros((1, d))])
    m = len(P)
    if m == 0:
        return None
    # feasibility LP: lambda >= 0, sum lambda = 1, P^T lambda = z_i (minimise nothing)
    A_eq = np.vstack([P.T, np.ones((1, m))])
    b_eq = np.concatenate([Z[i], [1.0]])
    res = linprog(np.zeros(m), A_eq=A_eq, b_eq=b_eq, bounds=[(0, None)] * m, method="highs")
    if res.status != 0:
        return None
    lam = _polish(A_eq, b_eq, np.clip(res.x, 0.0, None))
    w = np.zeros(n)
    w[others] = lam[: n - 1]
    w0 = float(lam[n - 1]) if spd else 0.0
    residual = float(np.abs(w @ Z - Z[i]).max())
    if residual > rtol:
        return None
    top = float(np.abs(Z).max())  # in [0.5, 1): the residual relative to the largest coordinate
    return HullCertificate(token=int(i), weights=w, origin_weight=w0, residual=residual / top, spd=spd)


def _polish(A_eq: np.ndarray, b_eq: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Convex weights with the LP's support that solve ``A_eq lam = b_eq`` by least squares (to rounding),
    when they stay nonnegative; else the LP's weights, normalised to sum 1."""
    lam = lam / lam.sum()
    support = np.flatnonzero(lam > 1e-12)
    sol, *_ = np.linalg.lstsq(A_eq[:, support], b_eq, rcond=None)
    if (sol >= 0).all() and np.abs(A_eq[:, support] @ sol - b_eq).max() <= np.abs(A_eq @ lam - b_eq).max():
        out = np.zeros_like(lam)
        out[support] = sol / sol.sum()
        return out
    return lam


def leadable(tokens: ArrayLike, *, spd: bool = False) -> list[int]:
    """Tokens that some A (SPD A when ``spd``) makes lead at layer 0 on their own: those with no
    :class:`HullCertificate` (the vertices of the hull, of the hull and the origin for SPD A).

    >>> leadable([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]])
    [0, 1, 2]
    >>> leadable([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]], spd=True)
    [1, 2]
    """
    Z = np.asarray(tokens, dtype=np.float64)
    return [i for i in range(len(Z)) if never_leads(Z, i, spd=spd) is None]
