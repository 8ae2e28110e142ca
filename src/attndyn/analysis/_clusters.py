"""Clusters of final tokens: groups of tokens that ended at the same point."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._validation import InputError, check_nonnegative

__all__ = ["Cluster", "clusters"]

# Above this many points, clusters come from a k-d tree instead of the (m, m) distance matrix.
DENSE_MAX_POINTS = 4000
_CHUNK = 512


@dataclass(frozen=True)
class Cluster:
    """A group of tokens within ``tol`` of each other (single linkage); ``center`` is their mean."""

    center: np.ndarray
    members: tuple[int, ...]

    def record(self) -> dict:
        return {"center": [float(c) for c in self.center], "members": list(self.members)}


def cluster_tolerance(points: np.ndarray, rtol: float, *, floor: float = 1.0) -> float:
    """Absolute tolerance ``rtol * max(floor, max |coordinate|)`` (``rtol * floor`` for no points):
    scale-aware, never zero. ``floor=1`` (the default) never goes below ``rtol``, as for the
    dynamics' tokens; a tiny floor makes it purely relative, as for a review's word vectors
    (:data:`attndyn.sentiment.CLUSTER_RTOL`, ``floor=1e-12``).

    >>> cluster_tolerance(np.array([[0.5, -3.0]]), 1e-2), cluster_tolerance(np.array([[0.5, -0.2]]), 1e-2)
    (0.03, 0.01)
    >>> cluster_tolerance(np.array([[0.5, -0.2]]), 1e-2, floor=1e-12)
    0.005
    """
    scale = float(np.abs(points).max()) if points.size else floor
    return rtol * max(floor, scale)


def clusters(
    points: ArrayLike,
    *,
    members: Sequence[int] | np.ndarray | None = None,
    tol: float | None = None,
    rtol: float = 1e-6,
) -> list[Cluster]:
    """Group points (m, d) whose single-linkage distance is at most ``tol``.

    Args:
        points: array (m, d), e.g. the final tokens of one sequence.
        members: the token index of each row (default ``range(m)``), e.g. the real tokens only.
        tol: absolute distance threshold; default ``rtol * max |coordinate|`` (relative: points of any
            magnitude cluster the same way; all-zero points are one cluster).

    Clusters are ordered by their smallest member. Points are rescaled by a power of two first
    (exact), so that no distance overflows or underflows. Up to ``DENSE_MAX_POINTS`` points the
    single-linkage tree is built from all pairwise distances; beyond, the same clusters (the
    connected components of the graph "distance <= tol") are found from a k-d tree in chunks, so
    no (m, m) matrix is ever built.

    >>> [c.members for c in clusters([[0.0, 0.0], [1.0, 1.0], [1e-9, 0.0]])]
    [(0, 2), (1,)]
    """
    if hasattr(points, "final_tokens") and hasattr(points, "ys"):  # a trajectory, not points
        raise InputError(
            f"clusters() takes points (m, d), got a {type(points).__name__}; pass its final tokens, "
            "e.g. clusters(traj.final_tokens) (one sequence), or read traj's clusters with hardmax_theorem(traj)"
        )
    try:
        p = np.asarray(points.detach().cpu() if hasattr(points, "detach") else points, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"points must be an (m, d) array of numbers, got {type(points).__name__} ({exc})") from None
    if p.ndim != 2:
        raise InputError(f"points must have shape (m, d), got {p.shape}")
    idx = np.arange(len(p)) if members is None else np.asarray(members)
    if len(idx) != len(p):
        raise InputError(f"members has {len(idx)} entries for {len(p)} points")
    if members is not None and (idx.ndim != 1 or not np.issubdtype(idx.dtype, np.integer) or (idx < 0).any()):
        raise InputError(f"members must be token indices (integers >= 0), one per point, got {list(members)!r}")
    if len(np.unique(idx)) != len(idx):
        raise InputError(f"members repeats a token index ({list(members or [])!r}); give each point its own index")
    if len(p) == 0:
        return []
    if not np.isfinite(p).all():
        raise InputError("points contain NaN or inf; cluster finite tokens only")
    rtol = check_nonnegative(rtol, "rtol")
    t = cluster_tolerance(p, rtol, floor=0.0) if tol is None else check_nonnegative(tol, "tol")
    big = float(np.abs(p).max())
    e = int(np.frexp(big)[1]) if big > 0 else 0  # exact power of two: p * 2**-e has max in [0.5, 1)
    q, t = np.ldexp(p, -e), float(np.ldexp(t, -e))  # ldexp: no factor 2**-e that itself overflows
    if len(p) == 1:
        labels = np.ones(1, dtype=int)
    elif len(p) <= DENSE_MAX_POINTS:
        from scipy.cluster.hierarchy import fcluster, linkage  # scipy.cluster is slow to import: on first use
        from scipy.spatial.distance import pdist

        # condensed distances: a (2, 2) point set would otherwise pass for a distance matrix
        labels = fcluster(linkage(pdist(q), method="single"), t=t, criterion="distance")
    else:
        labels = _components(q, t)
    out = []
    for lab in np.unique(labels):
        sel = labels == lab
        center = np.ldexp(q[sel].mean(axis=0), e)  # the mean of the rescaled points cannot overflow
        out.append(Cluster(center=center, members=tuple(int(i) for i in idx[sel])))
    return sorted(out, key=lambda c: min(c.members))


def _components(q: np.ndarray, t: float) -> np.ndarray:
    """Labels of the connected components of the graph joining points at distance <= t (k-d tree, chunked)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    m = len(q)
    tree = cKDTree(q)
    labels = np.arange(m)
    for a in range(0, m, _CHUNK):
        near = tree.query_ball_point(q[a : a + _CHUNK], r=t)
        rows = np.repeat(np.arange(a, a + len(near)), [len(v) for v in near])
        cols = np.concatenate([np.asarray(v, dtype=np.int64) for v in near])
        # Edges so far, reduced to each point's current label, plus this chunk's edges.
        i = np.concatenate([np.arange(m), rows])
        j = np.concatenate([labels, cols])
        graph = coo_matrix((np.ones(len(i), dtype=np.int8), (i, j)), shape=(m, m))
        _, labels = connected_components(graph, directed=False)
        first = np.full(m, m)
        np.minimum.at(first, labels, np.arange(m))
        labels = first[labels]  # a point index stands for its component
    return labels + 1
