"""Clusters of final tokens: groups of tokens that ended at the same point."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.cluster.hierarchy import fcluster, linkage

from .._validation import InputError

__all__ = ["Cluster", "clusters"]


@dataclass(frozen=True)
class Cluster:
    """A group of tokens within ``tol`` of each other (single linkage); ``center`` is their mean."""

    center: np.ndarray
    members: tuple[int, ...]

    def record(self) -> dict:
        return {"center": [float(c) for c in self.center], "members": list(self.members)}


def cluster_tolerance(points: np.ndarray, rtol: float) -> float:
    """Absolute tolerance ``rtol * max(1, max |coordinate|)``: scale-aware, never zero."""
    scale = float(np.abs(points).max()) if points.size else 0.0
    return rtol * max(1.0, scale)


def clusters(points, *, members=None, tol: float | None = None, rtol: float = 1e-6) -> list[Cluster]:
    """Group points (m, d) whose single-linkage distance is at most ``tol``.

    Args:
        points: array (m, d), e.g. the final tokens of one sequence.
        members: the token index of each row (default ``range(m)``), e.g. the real tokens only.
        tol: absolute distance threshold; default ``rtol * max(1, max |coordinate|)``.

    Clusters are ordered by their smallest member.

    >>> [c.members for c in clusters([[0.0, 0.0], [1.0, 1.0], [1e-9, 0.0]])]
    [(0, 2), (1,)]
    """
    p = np.asarray(points, dtype=np.float64)
    if p.ndim != 2:
        raise InputError(f"points must have shape (m, d), got {p.shape}")
    idx = np.arange(len(p)) if members is None else np.asarray(members)
    if len(idx) != len(p):
        raise InputError(f"members has {len(idx)} entries for {len(p)} points")
    if len(p) == 0:
        return []
    t = cluster_tolerance(p, rtol) if tol is None else float(tol)
    if len(p) == 1:
        labels = np.ones(1, dtype=int)
    else:
        labels = fcluster(linkage(p, method="single"), t=t, criterion="distance")
    out = []
    for lab in np.unique(labels):
        sel = labels == lab
        out.append(Cluster(center=p[sel].mean(axis=0), members=tuple(int(i) for i in idx[sel])))
    return sorted(out, key=lambda c: min(c.members))
