r"""Score preferences as linear constraints on the matrix A (hardmax paper, eq. (1.1b)).

The score of token i for token j is :math:`s_{ij}(A) = \langle A z_i, z_j\rangle
= \sum_{ab} (z_j)_a A_{ab} (z_i)_b = \langle A, z_j z_i^\top\rangle_F`, linear in A. "Token i
prefers j to l at positions Z" is therefore the linear inequality

.. math::

    \langle A z_i, z_j - z_l\rangle = \langle A, (z_j - z_l) z_i^\top\rangle_F \;\ge\;
    t\,\lVert z_i\rVert\,\lVert z_j - z_l\rVert ,

with a *normalised margin* t: for :math:`\lVert A\rVert_2 \le 1` it lies in [-1, 1] and does not
depend on the scale of the tokens. The three uses:

* token i **leads** at layer k (:math:`C_i(Z^k) = \{i\}`): i prefers i to every l != i;
* token i **does not lead** at layer k: i prefers *some* j to i (a disjunction; choosing j
  makes it linear);
* token i **follows only** l (:math:`C_i(Z^k) = \{l\}`): i prefers l to every m != l.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Preference", "preference_rows", "leads", "follows", "follows_only", "margins"]


@dataclass(frozen=True)
class Preference:
    """Token ``i`` prefers token ``j`` to token ``l`` at positions ``Z`` (of layer ``layer``)."""

    i: int
    j: int
    l: int
    layer: int
    Z: np.ndarray  # (n, d) positions of that layer

    def row(self) -> np.ndarray:
        """The normalised constraint matrix G (d, d), with <A, G>_F >= t meaning the preference holds
        with margin t. A zero matrix when z_i = 0 or z_j = z_l (the scores then tie for every A)."""
        d = self.Z.shape[1]
        return preference_rows([self])[0].reshape(d, d)

    def margin(self, A: np.ndarray) -> float:
        """The normalised score gap ``<A z_i, z_j - z_l> / (|z_i| |z_j - z_l|)`` (-inf when undefined)."""
        return float(margins(A, [self])[0])


def _directions(V: np.ndarray) -> np.ndarray:
    """Each row ``v / |v|``, computed without overflow or underflow at any scale (zero rows stay zero)."""
    top = np.abs(V).max(axis=1, keepdims=True)
    U = np.divide(V, top, out=np.zeros_like(V), where=top > 0)
    norm = np.linalg.norm(U, axis=1, keepdims=True)
    return np.divide(U, norm, out=np.zeros_like(U), where=norm > 0)


def preference_rows(prefs: list[Preference]) -> np.ndarray:
    """Stack the constraints as rows (m, d*d) acting on A flattened row-major (``A.reshape(-1)``):
    row k is vec(G_k) of :meth:`Preference.row`, computed together for the preferences of one layer."""
    if not prefs:
        return np.zeros((0, 0))
    d = prefs[0].Z.shape[1]
    out = np.empty((len(prefs), d * d))
    by_layer: dict[int, list[int]] = {}  # preferences sharing one positions array
    for k, p in enumerate(prefs):
        by_layer.setdefault(id(p.Z), []).append(k)
    for ks in by_layer.values():
        Z = prefs[ks[0]].Z
        ijl = np.array([(prefs[k].i, prefs[k].j, prefs[k].l) for k in ks]).reshape(-1, 3)
        zi, dz = _directions(Z[ijl[:, 0]]), _directions(Z[ijl[:, 1]] - Z[ijl[:, 2]])
        out[ks] = (dz[:, :, None] * zi[:, None, :]).reshape(len(ks), d * d)
    return out


def leads(Z: np.ndarray, i: int, layer: int = 0) -> list[Preference]:
    """Token i leads: :math:`\\langle A z_i, z_i - z_l\\rangle > 0` for every l != i."""
    return [Preference(i, i, l, layer, Z) for l in range(len(Z)) if l != i]


def follows(Z: np.ndarray, i: int, j: int, layer: int = 0) -> list[Preference]:
    """Token i scores j at least as high as itself, so i does not lead: one constraint."""
    return [Preference(i, j, i, layer, Z)]


def follows_only(Z: np.ndarray, i: int, l: int, layer: int = 0) -> list[Preference]:
    """:math:`C_i(Z) = \\{l\\}`: token i prefers l to every other token (l = i: i leads)."""
    return [Preference(i, l, m, layer, Z) for m in range(len(Z)) if m != l]


def margins(A: np.ndarray, prefs: list[Preference]) -> np.ndarray:
    """Normalised margins of the preferences under A (a (m,) array; -inf where the row is zero).

    >>> Z = np.array([[1.0, 0.0], [0.0, 1.0], [0.2, 0.2]])
    >>> margins(np.eye(2), leads(Z, 0)).round(4).tolist()
    [0.7071, 0.9701]
    """
    if not prefs:
        return np.zeros(0)
    G = preference_rows(prefs)
    out = G @ np.asarray(A, dtype=np.float64).reshape(-1)
    out[~G.any(axis=1)] = -np.inf
    return out
