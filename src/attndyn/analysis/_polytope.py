"""Convex polytopes spanned by finitely many points: vertices, membership, boundary.

Vertices come from qhull (scipy.spatial.ConvexHull) when the points span their space in low
dimension, and from a linear-programming vertex test otherwise (point p is a vertex iff it is
not a convex combination of the other points). Membership and boundary use LPs, so they work
in any dimension and for degenerate (flat) polytopes, whose every point is on the boundary.

The solvers' tolerances are absolute (HiGHS's feasibility tolerance is 1e-7), so every hull and LP
works on the points divided by ``unit``, the power of two just above their largest coordinate:
exact in binary floating point, so points scaled by a power of two give the same polytope bit for
bit (without it, a triangle at 2**-30 had no vertex and a point inside one at 2**60 was a vertex).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, QhullError

from .._validation import InputError, check_nonnegative

__all__ = ["Polytope"]

QHULL_MAX_DIM = 6


def _finite_array(x: ArrayLike, name: str, ndim: int) -> np.ndarray:
    """``x`` as a finite float64 array of ``ndim`` axes, or an InputError naming ``name``."""
    try:
        a = np.asarray(x.detach().cpu() if hasattr(x, "detach") else x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of numbers, got {type(x).__name__} ({exc})") from None
    if a.ndim != ndim:
        shape = "(m, d): one point a row (numbers on a line: a column, np.reshape(x, (-1, 1)))" if ndim == 2 else "(d,)"
        raise InputError(f"{name} must have shape {shape}, got shape {a.shape}")
    if not np.isfinite(a).all():
        raise InputError(f"{name} contain NaN or inf; give finite coordinates")
    return a


def _unique_rows(p: np.ndarray, tol: float) -> np.ndarray:
    """Indices of the rows kept greedily: a row is dropped when it is within ``tol`` (max norm) of a kept one."""
    kept = np.empty_like(p)
    keep: list[int] = []
    for i in range(len(p)):
        if not keep or bool((np.abs(kept[: len(keep)] - p[i]).max(axis=1) > tol).all()):
            kept[len(keep)] = p[i]
            keep.append(i)
    return np.array(keep, dtype=int)


def _convex_weights(points: np.ndarray, x: np.ndarray, maximize_min: bool) -> tuple[bool, float]:
    """LP: is x = sum_v lam_v p_v with lam >= 0, sum lam = 1? Optionally maximise min(lam)."""
    m, d = points.shape
    # variables: lam (m), s (1); maximise s subject to lam_v >= s when asked.
    c = np.zeros(m + 1)
    if maximize_min:
        c[-1] = -1.0
    A_eq = np.zeros((d + 1, m + 1))
    A_eq[:d, :m] = points.T
    A_eq[d, :m] = 1.0
    b_eq = np.concatenate([x, [1.0]])
    bounds: list[tuple[float | None, float | None]]
    if maximize_min:
        A_ub = np.hstack([-np.eye(m), np.ones((m, 1))])  # s - lam_v <= 0
        b_ub = np.zeros(m)
        bounds = [(0, None)] * m + [(None, 1.0)]
    else:
        A_ub, b_ub = None, None
        bounds = [(0, None)] * m + [(0, 0)]
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0:
        return False, -np.inf
    return True, float(res.x[-1]) if maximize_min else 0.0


@dataclass(frozen=True)
class Polytope:
    """K = conv(points). ``vertices`` are row indices into ``points``.

    >>> K = Polytope.from_points([[0, 0], [1, 0], [0, 1], [0.2, 0.2]])
    >>> K.vertices
    (0, 1, 2)
    >>> K.on_boundary([0.5, 0.5]), K.on_boundary([0.2, 0.2]), K.contains([1, 1])
    (True, False, False)
    """

    points: np.ndarray
    vertices: tuple[int, ...]
    dim: int  # affine dimension of K
    tol: float
    equations: np.ndarray | None = field(default=None, repr=False)  # qhull facets a.x + b <= 0
    unit: float = field(default=1.0, repr=False)  # the power of two the solvers' coordinates are divided by

    @classmethod
    def from_points(cls, points: ArrayLike, *, tol: float | None = None) -> Polytope:
        """conv(points), ``points`` (m, d); ``tol`` (absolute, default ``1e-6 * max |coordinate|``: relative, so that
        points of any magnitude give the same polytope) decides which points coincide, which are flat, and what
        counts as on the boundary."""
        p = _finite_array(points, "points", 2)
        if p.size == 0:
            raise InputError(f"a polytope needs at least one point, got shape {p.shape}")
        big = float(np.abs(p).max())
        tol = 1e-6 * big if tol is None else check_nonnegative(tol, "tol")
        unit = math.ldexp(1.0, math.frexp(big)[1]) if big > 0 else 1.0  # a power of two > every |coordinate|
        uniq = _unique_rows(p, tol)
        q = p[uniq]
        centered = q - q.mean(axis=0)
        sv = np.linalg.svd(centered, compute_uv=False) if len(q) > 1 else np.zeros(1)
        dim = int((sv > tol * max(1, len(q))).sum()) if len(q) > 1 else 0
        d = p.shape[1]
        equations = None
        if len(q) == 1:
            verts = uniq
        elif dim == d and d <= QHULL_MAX_DIM and d >= 2:
            try:
                hull = ConvexHull(q / unit)
                verts = uniq[np.sort(hull.vertices)]
                equations = hull.equations.copy()
                equations[:, -1] *= unit  # unit normals; the offsets back in the points' units
            except QhullError:
                verts = uniq[cls._lp_vertices(q / unit)]
        elif d == 1 or dim == 1:
            direction = np.linalg.svd(centered)[2][0]
            proj = q @ direction
            verts = uniq[np.unique([int(np.argmin(proj)), int(np.argmax(proj))])]
        else:
            verts = uniq[cls._lp_vertices(q / unit)]
        if len(verts) == 0:  # every LP said "inside" (within its tolerance): the lexicographically largest is a vertex
            verts = uniq[[int(np.lexsort(q.T[::-1])[-1])]]
        vertices = tuple(int(v) for v in np.sort(verts))
        return cls(points=p, vertices=vertices, dim=dim, tol=tol, equations=equations, unit=unit)

    @staticmethod
    def _lp_vertices(q: np.ndarray) -> np.ndarray:
        """The rows of ``q`` (coordinates of order 1: the solver's tolerances are absolute) that are not a convex
        combination of the others."""
        keep = []
        for i in range(len(q)):
            others = np.delete(q, i, axis=0)
            inside, _ = _convex_weights(others, q[i], maximize_min=False)
            if not inside:
                keep.append(i)
        return np.array(keep, dtype=int)

    @property
    def vertex_points(self) -> np.ndarray:
        return self.points[list(self.vertices)]

    @property
    def full_dimensional(self) -> bool:
        return self.dim == self.points.shape[1]

    def _point(self, x: ArrayLike) -> np.ndarray:
        """``x`` as a finite point of this polytope's space, or an InputError naming the dimensions."""
        a = _finite_array(x, "x", 1)
        if len(a) != self.points.shape[1]:
            raise InputError(f"x has {len(a)} coordinates, the polytope lives in dimension {self.points.shape[1]}")
        return a

    def distance_outside(self, x: ArrayLike) -> float:
        """max over facets of a.x + b (<= 0 inside); only for qhull polytopes."""
        if self.equations is None:
            raise ValueError("no facet equations for this polytope")
        return float((self.equations[:, :-1] @ self._point(x) + self.equations[:, -1]).max())

    def contains(self, x: ArrayLike) -> bool:
        x = self._point(x)
        if self.equations is not None:
            return self.distance_outside(x) <= self.tol
        V = self.vertex_points
        if len(V) == 1:
            return bool(np.abs(x - V[0]).max() <= self.tol)
        ok, _ = _convex_weights(V / self.unit, x / self.unit, maximize_min=False)
        if ok:
            return True
        # allow rounding: accept when the nearest vertex combination is within tol (flat cases)
        return self._near(x)

    def _near(self, x: np.ndarray) -> bool:
        """Whether the nearest convex combination of the vertices (non-negative least squares, the weights' sum
        held at 1 by a heavy row) is within 10 tol of x."""
        V, x = self.vertex_points / self.unit, x / self.unit
        from scipy.optimize import nnls

        A = np.vstack([V.T, 1e3 * np.ones(len(V))])
        b = np.concatenate([x, [1e3]])
        lam, _ = nnls(A, b)
        return bool(np.abs(V.T @ lam - x).max() <= self.tol / self.unit * 10 and abs(lam.sum() - 1) < 1e-6)

    def on_boundary(self, x: ArrayLike) -> bool:
        """x in K but not in its interior (for a flat K every point of K is on the boundary)."""
        x = self._point(x)
        if not self.contains(x):
            return False
        if not self.full_dimensional:
            return True
        if self.equations is not None:
            return self.distance_outside(x) >= -self.tol
        # interior iff x is a combination with all weights bounded away from 0: a weight is a pure number, so
        # it is held to tol over the points' scale (1e-6 by default), not to tol, a length
        ok, smin = _convex_weights(self.vertex_points / self.unit, x / self.unit, maximize_min=True)
        return not ok or smin <= self.tol / self.unit
