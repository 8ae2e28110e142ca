r"""Only extreme tokens constrain A: the constraint sets cut down to hull vertices, with the same optimum.

"Query q prefers l to every key m" (:mod:`~attndyn.control._constraints`) is, for the normalised
margin t of the margin problem (:mod:`~attndyn.control._solve`),

.. math::

    \langle A q, z_l - z_m\rangle \ge t\,\lVert q\rVert\,\lVert z_l - z_m\rVert \qquad (m \ne l).

**Keys.** If :math:`z_m = \sum_v \lambda_v v` is a convex combination of vertices v of the hull of
the keys, then :math:`\langle Aq, z_l - z_m\rangle = \sum_v\lambda_v\langle Aq, z_l - v\rangle \ge
t\lVert q\rVert\sum_v\lambda_v\lVert z_l - v\rVert \ge t\lVert q\rVert\,\lVert z_l - z_m\rVert` (triangle
inequality): the constraint of a non-vertex key holds with at least the margin of the vertices'.
**Queries.** The constraint is linear in q, and for :math:`q = \sum_j \mu_j q_j` with
:math:`\mu \ge 0` (a conic combination: any point of the hull of the other queries and the origin)
the same computation gives the margin t again, as :math:`\lVert q\rVert \le \sum_j\mu_j\lVert q_j\rVert`.
So the largest margin over all (query, key) pairs **equals** the largest margin over the pairs of
extreme queries and hull-vertex keys: the optimum t* and the feasibility of t > 0 do not change,
and the constraint count drops from n (n - 1) per layer to (extreme queries) x (hull vertices).
Keys at the very position of z_l are kept (their rows vanish: the scores tie for every A).

"Token i does not lead" is "some j scores at least as high as i", a disjunction over j: the largest
score over the other tokens is attained at a vertex of their hull, so only those are alternatives; and
a token that is not a vertex of the hull of all tokens never leads at layer 0
(:mod:`~attndyn.control._hull`), so it needs no constraint there. (For disjunctions the normalised
margin can change: the alternation then optimises over fewer, but sufficient, choices.)

Sequences of at most :data:`REDUCE_ABOVE` tokens keep every pair, so their answers are those of the
full problem bit for bit. The vertices come from qhull (:class:`scipy.spatial.ConvexHull`) in dimensions up to
:data:`MAX_HULL_DIMENSION`, on flat sets within their affine span; above it every token is kept
(and :func:`~attndyn.control._solve.check_size` bounds the problem). qhull's rounding can only drop a
vertex that lies within rounding of the hull of the others; any constraint so dropped is caught by
the verification run and added back in the next round.
"""

from __future__ import annotations

import numpy as np

from ._constraints import Preference

__all__ = [
    "MAX_HULL_DIMENSION",
    "hull_vertices",
    "keys_for",
    "follow_only_pairs",
    "follow_only_rows",
    "lead_rows",
    "not_lead_rows",
    "not_lead_keys",
]

#: Above this dimension the hull's facets grow too fast (qhull is exponential in d): no reduction.
MAX_HULL_DIMENSION = 6

#: Sequences of at most this many tokens keep every pair: the optimum is the same either way, but which of
#: several equally good A the solver returns may differ, and small problems cost little.
REDUCE_ABOVE = 64

# Sets this small are kept whole (a hull would save nothing).
_SMALL = 8


def hull_vertices(P: np.ndarray, *, origin: bool = False) -> np.ndarray:
    """Sorted indices of rows of ``P`` (m, d) that include every vertex of their convex hull (of the hull
    with the origin, when ``origin``); every index when the set is small or the dimension too high.

    >>> hull_vertices(np.array([[0.0, 0], [2, 0], [0, 2], [2, 2], [1, 1], [0.5, 1], [1, 0.5], [1.5, 1], [1, 1.5]])).tolist()
    [0, 1, 2, 3]
    """
    P = np.asarray(P, dtype=np.float64)
    m, d = P.shape
    if m <= _SMALL or d > MAX_HULL_DIMENSION:
        return np.arange(m)
    pts = np.vstack([P, np.zeros((1, d))]) if origin else P
    idx = _vertices(pts)
    return np.unique(idx[idx < m])


def _vertices(P: np.ndarray) -> np.ndarray:
    """Hull vertices of P: qhull in the affine span of the points (1-d spans: the two ends, with ties)."""
    from scipy.spatial import ConvexHull, QhullError

    center = P.mean(axis=0)
    X = P - center
    top = float(np.abs(X).max())
    if top == 0.0:
        return np.arange(len(P))  # all at one point
    _, s, Vt = np.linalg.svd(X / top, full_matrices=False)
    r = int((s > s[0] * 1e-12).sum())
    Y = (X / top) @ Vt[:r].T  # (m, r) coordinates in the span
    if r == 1:
        y = Y[:, 0]
        return np.flatnonzero((y == y.min()) | (y == y.max()))
    if len(P) <= r + 1:
        return np.arange(len(P))
    try:
        return np.asarray(ConvexHull(Y).vertices)
    except (QhullError, ValueError):
        return np.arange(len(P))


def keys_for(Z: np.ndarray, l: int) -> list[int]:
    """The keys m != l whose constraints "prefer l to m" imply all the others (see the module)."""
    if len(Z) <= REDUCE_ABOVE:
        return [m for m in range(len(Z)) if m != l]
    same = np.flatnonzero((Z == Z[l]).all(axis=1))
    keys = set(hull_vertices(Z).tolist()) | set(same.tolist())
    keys.discard(l)
    return sorted(keys)


def follow_only_pairs(Z: np.ndarray, queries: list[int], l: int) -> tuple[list[int], list[int]]:
    """The extreme ``queries`` (with the origin; queries at the origin are kept: their rows vanish) and the
    keys of :func:`keys_for`: the pairs whose constraints imply :math:`C_i(Z) = \\{l\\}` for every query."""
    if len(Z) <= REDUCE_ABOVE:
        return sorted(queries), keys_for(Z, l)
    Q = np.asarray(queries)
    zero = Q[~Z[Q].any(axis=1)]
    extreme = set(Q[hull_vertices(Z[Q], origin=True)].tolist()) | set(zero.tolist())
    return sorted(int(i) for i in extreme), keys_for(Z, l)


def follow_only_rows(Z: np.ndarray, queries: list[int], l: int, layer: int) -> list[Preference]:
    r""":math:`C_i(Z) = \{l\}` for every i in ``queries``, reduced (:func:`follow_only_pairs`)."""
    Q, keys = follow_only_pairs(Z, queries, l)
    return [Preference(i, l, m, layer, Z) for i in Q for m in keys]


def lead_rows(Z: np.ndarray, i: int, layer: int = 0) -> list[Preference]:
    r"""Token i leads (:math:`C_i(Z) = \{i\}`), reduced to the hull-vertex keys."""
    return [Preference(i, i, m, layer, Z) for m in keys_for(Z, i)]


def not_lead_rows(Z: np.ndarray, i: int, layer: int = 0) -> list[Preference]:
    """Token i does not lead: its alternatives "i scores j at least as high as itself", j a vertex of the
    hull of the other tokens (any other token, up to :data:`REDUCE_ABOVE` tokens). Empty when no constraint
    is needed: z_i = 0 or another token sits at z_i (they tie for every A, so i never leads alone; their rows
    would be zero and, as a disjunction's only choices, make every A fail), or i is not a vertex of the hull
    of all tokens (it never leads at layer 0)."""
    return [Preference(i, int(j), i, layer, Z) for j in not_lead_keys(Z, i)]


def not_lead_keys(Z: np.ndarray, i: int) -> np.ndarray:
    """The tokens j of :func:`not_lead_rows` (one constraint each), without building the rows: what a size
    check counts before anything is built."""
    others = np.flatnonzero(np.arange(len(Z)) != i)
    if len(others) and (not Z[i].any() or (Z[others] == Z[i]).all(axis=1).any()):
        return others[:0]  # a zero token or a copy ties with another token for every A: it never leads alone
    if len(Z) <= REDUCE_ABOVE:
        return others
    if i not in hull_vertices(Z):
        return others[:0]
    return others[hull_vertices(Z[others])]
