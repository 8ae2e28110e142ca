r"""Compiled hardmax layer for planar tokens (d = 2), exact tie rule, no score matrix.

The maximiser of the linear functional :math:`z \mapsto \langle A z_i, z\rangle` over a finite
set is attained at a vertex of its convex hull, and a point at distance ``r`` inside the hull
scores at least :math:`r\,\lVert A z_i\rVert` below the maximum. So per sequence we build the
hull once (monotone chain, O(n log n)), keep as *candidates* the hull vertices plus every
point within a tiny margin of the boundary (duplicates of vertices, points on edges), and
compare each token only with the candidates: O(n h) instead of O(n^2). Points outside the
candidate set are provably below the maximum by far more than rounding, so
:math:`C_i = \{j : s_{ij} = \max_l s_{il}\}` is exactly the set the dense rule of
:func:`attndyn.attention.hardmax_weights` computes. Degenerate hulls (collinear or coincident
tokens) and a positive tie tolerance fall back to comparing with every token.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

# Points closer than MARGIN * (coordinate scale) to the hull boundary are kept as candidates.
MARGIN = 1e-9


@njit(cache=True)
def _hull(x, y, pts):  # pragma: no cover - compiled
    """Indices (into pts) of the strict convex hull of the points pts, counter-clockwise."""
    m = pts.shape[0]
    order = pts[np.argsort(y[pts], kind="mergesort")]
    order = order[np.argsort(x[order], kind="mergesort")]  # lexicographic (x, then y)
    hull = np.empty(2 * m + 1, dtype=np.int64)
    k = 0
    for t in range(m):  # lower chain
        p = order[t]
        while k >= 2:
            a, b = hull[k - 2], hull[k - 1]
            if (x[b] - x[a]) * (y[p] - y[a]) - (y[b] - y[a]) * (x[p] - x[a]) <= 0.0:
                k -= 1
            else:
                break
        hull[k] = p
        k += 1
    lower = k + 1
    for t in range(m - 2, -1, -1):  # upper chain
        p = order[t]
        while k >= lower:
            a, b = hull[k - 2], hull[k - 1]
            if (x[b] - x[a]) * (y[p] - y[a]) - (y[b] - y[a]) * (x[p] - x[a]) <= 0.0:
                k -= 1
            else:
                break
        hull[k] = p
        k += 1
    return hull[: max(k - 1, 1)]


@njit(cache=True)
def _candidates(x, y, pts, exact):  # pragma: no cover - compiled
    """Hull vertices and near-boundary points of pts (all of pts if degenerate or not exact)."""
    m = pts.shape[0]
    if not exact or m <= 3:
        return pts
    h = _hull(x, y, pts)
    if h.shape[0] < 3:
        return pts
    scale = 0.0
    for t in range(m):
        scale = max(scale, abs(x[pts[t]]), abs(y[pts[t]]))
    margin = MARGIN * scale
    hn = h.shape[0]
    nx = np.empty(hn)
    ny = np.empty(hn)
    off = np.empty(hn)
    for e in range(hn):
        a, b = h[e], h[(e + 1) % hn]
        dx, dy = x[b] - x[a], y[b] - y[a]
        length = np.sqrt(dx * dx + dy * dy)
        nx[e], ny[e] = dy / length, -dx / length  # outward unit normal (hull is CCW)
        off[e] = nx[e] * x[a] + ny[e] * y[a]
    keep = np.empty(m, dtype=np.int64)
    c = 0
    for t in range(m):
        p = pts[t]
        dist = np.inf
        for e in range(hn):
            dist = min(dist, off[e] - (nx[e] * x[p] + ny[e] * y[p]))
        if dist <= margin:
            keep[c] = p
            c += 1
    return keep[:c]


@njit(parallel=True, cache=True)
def hardmax_layer_2d(z, A, mask, coef, tol, out, leader, follow, record_follow):  # pragma: no cover - compiled
    """One layer of eq. (1.1) for a (B, n, 2) batch; writes out, leader (B, n), follow (B, n, n)."""
    B, n, _ = z.shape
    a00, a01, a10, a11 = A[0, 0], A[0, 1], A[1, 0], A[1, 1]
    exact = tol == 0.0
    for b in prange(B):
        x = z[b, :, 0].copy()
        y = z[b, :, 1].copy()
        real = np.nonzero(mask[b])[0]
        cand = _candidates(x, y, real, exact)
        for i in range(n):
            if not mask[b, i]:
                out[b, i, 0], out[b, i, 1] = x[i], y[i]
                leader[b, i] = False
                continue
            w0 = a00 * x[i] + a01 * y[i]  # A z_i
            w1 = a10 * x[i] + a11 * y[i]
            best = -np.inf
            for t in range(cand.shape[0]):
                j = cand[t]
                s = w0 * x[j] + w1 * y[j]
                if s > best:
                    best = s
            thr = best - tol
            cnt = 0
            sx = 0.0
            sy = 0.0
            self_in = False
            for t in range(cand.shape[0]):
                j = cand[t]
                s = w0 * x[j] + w1 * y[j]
                if s >= thr:
                    cnt += 1
                    sx += x[j]
                    sy += y[j]
                    if j == i:
                        self_in = True
                    if record_follow:
                        follow[b, i, j] = True
            out[b, i, 0] = x[i] + coef * (sx / cnt - x[i])
            out[b, i, 1] = y[i] + coef * (sy / cnt - y[i])
            leader[b, i] = self_in and cnt == 1
