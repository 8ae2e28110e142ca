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

**The zero token.** If :math:`z_i = 0` then :math:`\langle A z_i, z_j\rangle = 0` for every j and every A,
so with n >= 2 tokens :math:`C_i(Z^0)` holds them all and i does not lead, whether or not the origin
lies in the hull of the others (and the SPD argument above, which needs :math:`\langle A z_i, z_i\rangle > 0`,
does not apply). Its certificate puts weight 1 on another token j: the identity
:math:`\langle A z_i, z_i\rangle = \sum_j \lambda_j \langle A z_i, z_j\rangle` that the proof uses holds
for any weights when :math:`z_i = 0`. A single token is its own unique maximiser and leads.

**Scale.** The weights are found on the tokens brought near 1 by a power of two
(:func:`~attndyn.control._scale.unit_scale`), so the answer for ``2**k * Z`` is the answer for ``Z``
bit for bit, and a certificate is issued only when it is exact: the LP's weights, polished on their
support (a system of at most d + 1 points) by least squares, must reproduce :math:`z_i` to within ``rtol``
times the largest coordinate, and the same system must have a nonnegative solution in exact rational
arithmetic on the tokens' floats (:func:`_exactly_convex`). A token that lies outside the hull, by however
little, is not certified: it is left to the solver, whose margin then says how little it can lead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linprog

from .._validation import InputError, as_tokens
from ._scale import unit_scale

__all__ = ["HullCertificate", "never_leads", "leadable"]


@dataclass(frozen=True)
class HullCertificate:
    """Proof that token ``token`` cannot lead at layer 0: convex weights over the other tokens
    (``weights[j]``, j != token, zero at the token itself) and ``origin_weight`` on the origin
    (used only for SPD A), with ``residual`` = :math:`\\lVert z_i - \\sum_j \\lambda_j z_j\\rVert_\\infty`
    relative to the largest coordinate :math:`\\max_{j,a} |z_{ja}|` (the same at every scale).
    ``zero_token``: the token is the zero vector, so it ties with every token for every A (see the
    module); its weights are 1 on one other token, and they need not reproduce it."""

    token: int
    weights: np.ndarray  # (n,)
    origin_weight: float
    residual: float
    spd: bool
    zero_token: bool = False

    def check(self, tokens: ArrayLike, *, rtol: float = 1e-12) -> bool:
        """The certificate is valid for ``tokens`` (weights >= 0, sum to 1, reproduce the token to within
        ``rtol`` times the largest coordinate: the same answer for the tokens at any scale). A zero-token
        certificate is valid when the token is exactly zero and there are other tokens."""
        Z, _ = unit_scale(_one_sequence(tokens))
        w, w0 = self.weights, self.origin_weight
        if w.shape != (len(Z),) or not 0 <= self.token < len(Z):
            return False
        ok_sign = bool((w >= -rtol).all() and w0 >= -rtol and abs(w[self.token]) <= rtol)
        ok_sum = abs(w.sum() + w0 - 1.0) <= rtol
        if self.zero_token:
            return ok_sign and ok_sum and len(Z) >= 2 and not Z[self.token].any()
        return ok_sign and ok_sum and float(np.abs(w @ Z - Z[self.token]).max()) <= rtol

    def record(self) -> dict:
        """JSON form: the token, the nonzero weights ``{j: lambda_j}``, the origin's weight, the residual,
        spd and zero_token."""
        nz = {int(j): float(self.weights[j]) for j in np.flatnonzero(self.weights > 1e-12)}
        return {
            "token": self.token,
            "weights": nz,
            "origin_weight": float(self.origin_weight),
            "residual": float(self.residual),
            "spd": self.spd,
            "zero_token": self.zero_token,
        }

    def sentence(self) -> str:
        if self.zero_token:
            i = self.token
            return (
                f"token {i} is the zero vector: <A z_{i}, z_j> = 0 for every token j, so it ties with every "
                f"other token and no {'SPD ' if self.spd else ''}A makes it lead at layer 0"
            )
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

    With ``spd=True`` the certificate may use the origin (for SPD A only). A zero token (n >= 2) gets a
    ``zero_token`` certificate: it ties with every token for every A.

    >>> Z = [[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]]
    >>> never_leads(Z, 3).record()["weights"]
    {0: 0.5, 1: 0.25, 2: 0.25}
    >>> never_leads(Z, 1) is None
    True
    >>> never_leads(Z, 0).sentence()
    'token 0 is the zero vector: <A z_0, z_j> = 0 for every token j, so it ties with every other token and no A makes it lead at layer 0'
    """
    Z, _ = unit_scale(_one_sequence(tokens))
    _check_spd(spd)
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not 0 <= rtol < 1:
        raise InputError(f"rtol must be a number in [0, 1) (relative to the largest coordinate), got {rtol!r}")
    return _certificate(Z, _check_index(i, len(Z)), spd, rtol)


def _check_spd(spd: object) -> None:
    if not isinstance(spd, (bool, np.bool_)):
        raise InputError(f"spd must be True (SPD A: the origin may join the hull) or False, got {spd!r}")


def _certificate(Z: np.ndarray, i: int, spd: bool, rtol: float) -> HullCertificate | None:
    """:func:`never_leads` on checked (n, d) tokens at unit scale."""
    n, d = Z.shape
    others = [j for j in range(n) if j != i]
    if not Z[i].any():  # every score of z_i is 0: a tie with every other token (none: it leads alone)
        if not others:
            return None
        w = np.zeros(n)
        w[others[0]] = 1.0
        return HullCertificate(token=i, weights=w, origin_weight=0.0, residual=0.0, spd=spd, zero_token=True)
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
    if residual > rtol or not _exactly_convex(A_eq, b_eq, np.flatnonzero(lam > 0)):
        return None
    top = float(np.abs(Z).max())  # in [0.5, 1) (z_i != 0): the residual relative to the largest coordinate
    return HullCertificate(token=i, weights=w, origin_weight=w0, residual=residual / top, spd=spd)


def _one_sequence(tokens: ArrayLike) -> np.ndarray:
    """``tokens`` as checked (n, d) float64 (finite, nonempty; a batch of one is its sequence)."""
    try:
        shape: tuple[int, ...] | None = tuple(np.shape(tokens))
    except ValueError:  # ragged rows: as_tokens names them
        shape = None
    if shape is not None and (len(shape) not in (2, 3) or (len(shape) == 3 and shape[0] != 1)):
        raise InputError(
            f"tokens must be one sequence of shape (n, d), got shape {shape}; pass a 2-d array, one row per token"
        )
    z, _ = as_tokens(tokens)
    return z[0].numpy()


def _check_index(i: object, n: int) -> int:
    """Token index ``i`` checked against ``n`` tokens."""
    if isinstance(i, bool) or not isinstance(i, (int, np.integer)):
        raise InputError(f"i must be a token index (an integer), got {i!r}")
    if not 0 <= i < n:
        raise InputError(f"token index i = {i} is out of range for {n} tokens; give 0 to {n - 1}")
    return int(i)


def _exactly_convex(A_eq: np.ndarray, b_eq: np.ndarray, support: np.ndarray) -> bool:
    r"""Whether ``A_eq[:, support] lam = b_eq`` has a solution with lam >= 0 in exact arithmetic on the floats as
    given (rational Gauss-Jordan elimination): the proof behind a certificate. The LP's support is a basis, so
    its columns are independent and the solution, when there is one, is unique; dependent columns, an
    inconsistent system or a negative weight give False (no certificate: the token is left to the solver).
    Floating-point weights that reproduce the token to 1e-12 are not a proof: a token 1e-13 off the segment
    of two others is outside their hull, and some A makes it lead."""
    from fractions import Fraction

    k = len(support)
    rows = [[Fraction(float(x)) for x in row[support]] + [Fraction(float(b))] for row, b in zip(A_eq, b_eq)]
    for c in range(k):
        p = next((r for r in range(c, len(rows)) if rows[r][c] != 0), None)
        if p is None:
            return False
        rows[c], rows[p] = rows[p], rows[c]
        rows[c] = [x / rows[c][c] for x in rows[c]]
        for r in range(len(rows)):
            if r != c and rows[r][c] != 0:
                f = rows[r][c]
                rows[r] = [a - f * b for a, b in zip(rows[r], rows[c])]
    consistent = all(rows[r][k] == 0 for r in range(k, len(rows)))
    return consistent and all(rows[r][k] >= 0 for r in range(k))


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

    A zero token is not one of them when there are others (it ties with every token for every A).

    >>> leadable([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]])   # token 0, the origin, ties with all
    [1, 2]
    >>> leadable([[-1.0, -1.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]])
    [0, 1, 2]
    >>> leadable([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0]], spd=True)   # z_0 = (0 + z_1) / 2
    [1, 2]
    """
    Z, _ = unit_scale(_one_sequence(tokens))
    _check_spd(spd)
    return [i for i in range(len(Z)) if _certificate(Z, i, spd, 1e-12) is None]
