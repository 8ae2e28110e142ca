r"""Compiled hardmax layers (float64, CPU, no autograd), exact tie rule, no (B, n, n) score tensor.

Planar tokens (d = 2):
The maximiser of the linear functional :math:`z \mapsto \langle A z_i, z\rangle` over a finite
set is attained at a vertex of its convex hull, and a point at distance ``r`` inside a convex
polygon spanned by some of the points scores at least :math:`r\,\lVert A z_i\rVert` below the
maximum. So per sequence we span such a polygon once (the extreme points in 12 directions),
keep as *candidates* every point not deeper than a tiny margin inside it (its corners, points
on or near its edges, duplicates), and compare each token only with the candidates: O(n c)
instead of O(n^2). Points outside the
candidate set are provably below the maximum by far more than rounding, so
:math:`C_i = \{j : s_{ij} = \max_l s_{il}\}` is exactly the set the dense rule of
:func:`attndyn.attention.hardmax_weights` computes. Degenerate hulls (collinear or coincident
tokens) and a positive tie tolerance fall back to comparing with every token, and a token
with :math:`A z_i = 0` follows every token (all its scores are exactly 0).

Any other d (:func:`hardmax_layer_dense`): per sequence and per query, the row of scores over
the real tokens only (vectorised over keys), its maximum, then the mean of the maximisers, in
one pass with everything in cache; padding costs nothing.
"""

from __future__ import annotations

import os

import numba
import numpy as np
from numba import njit, prange

# numba's OpenMP layer shares libgomp with torch and leaves torch's small kernels crawling
# afterwards (measured: 100x slower); the workqueue layer has no such interaction.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]  # set at import by numba

# Points closer than MARGIN * (coordinate scale) to the inscribed polygon's boundary are kept.
MARGIN = 1e-9
# Number of directions whose extreme points span the inscribed polygon.
DIRECTIONS = 12
_UX = np.cos(2 * np.pi * np.arange(DIRECTIONS) / DIRECTIONS)
_UY = np.sin(2 * np.pi * np.arange(DIRECTIONS) / DIRECTIONS)


@njit(cache=True)
def _candidates(x, y, pts, exact):  # pragma: no cover - compiled
    """Points of pts that may maximise a linear functional (all of pts if degenerate or not exact).

    The extreme points in DIRECTIONS evenly spaced directions are points of the hull boundary
    met in counter-clockwise order, so they span an inscribed convex polygon; a point deeper
    than the margin inside it can never reach the maximum, everything else is a candidate.
    """
    m = pts.shape[0]
    if not exact or m <= 3:
        return pts
    ext = np.empty(DIRECTIONS, dtype=np.int64)
    xr = x[pts]  # contiguous coordinates of the points
    yr = y[pts]
    scale = max(np.abs(xr).max(), np.abs(yr).max())
    h = 0
    for k in range(DIRECTIONS):
        ux, uy = _UX[k], _UY[k]
        best, arg = -np.inf, -1
        for t in range(m):
            v = ux * xr[t] + uy * yr[t]
            if v > best:
                best, arg = v, t
        arg = pts[arg]
        if h == 0 or (arg != ext[h - 1] and arg != ext[0]):
            ext[h] = arg
            h += 1
    if h < 3:
        return pts
    for e in range(h):  # the polygon must turn left at every corner, else compare with all
        a, b, c = ext[e], ext[(e + 1) % h], ext[(e + 2) % h]
        if (x[b] - x[a]) * (y[c] - y[a]) - (y[b] - y[a]) * (x[c] - x[a]) <= 0.0:
            return pts
    nx = np.empty(h)
    ny = np.empty(h)
    off = np.empty(h)
    for e in range(h):
        a, b = ext[e], ext[(e + 1) % h]
        dx, dy = x[b] - x[a], y[b] - y[a]
        length = np.sqrt(dx * dx + dy * dy)
        if length == 0.0:
            return pts
        nx[e], ny[e] = dy / length, -dx / length  # outward unit normal (polygon is CCW)
        off[e] = nx[e] * x[a] + ny[e] * y[a]
    margin = MARGIN * scale
    keep = np.empty(m, dtype=np.int64)
    c = 0
    for t in range(m):
        dist = np.inf
        for e in range(h):
            dist = min(dist, off[e] - (nx[e] * xr[t] + ny[e] * yr[t]))
        if dist <= margin:
            keep[c] = pts[t]
            c += 1
    return keep[:c]


@njit(cache=True)
def _layer_one(b, z, a00, a01, a10, a11, mask, coef, tol, exact, out, leader, follow, record_follow, moved, scale):  # pragma: no cover
    """Eq. (1.1) for sequence b of the batch (see hardmax_layer_2d)."""
    n = z.shape[1]
    x = z[b, :, 0].copy()
    y = z[b, :, 1].copy()
    real = np.nonzero(mask[b])[0]
    cand = _candidates(x, y, real, exact)
    nc = cand.shape[0]
    cx = x[cand]  # contiguous candidate coordinates
    cy = y[cand]
    mv = 0.0
    sc = 0.0
    for i in range(n):
        if not mask[b, i]:
            out[b, i, 0], out[b, i, 1] = x[i], y[i]
            leader[b, i] = False
            continue
        w0 = a00 * x[i] + a01 * y[i]  # A z_i
        w1 = a10 * x[i] + a11 * y[i]
        if w0 == 0.0 and w1 == 0.0:  # every score is 0: z_i follows every real token
            cnt = real.shape[0]
            sx = 0.0
            sy = 0.0
            for t in range(cnt):
                sx += x[real[t]]
                sy += y[real[t]]
                if record_follow:
                    follow[b, i, real[t]] = True
            out[b, i, 0] = x[i] + coef * (sx / cnt - x[i])
            out[b, i, 1] = y[i] + coef * (sy / cnt - y[i])
            leader[b, i] = cnt == 1
            mv = max(mv, abs(out[b, i, 0] - x[i]), abs(out[b, i, 1] - y[i]))
            sc = max(sc, abs(x[i]), abs(y[i]))
            continue
        best = -np.inf
        for t in range(nc):
            best = max(best, w0 * cx[t] + w1 * cy[t])
        thr = best - tol
        cnt = 0
        sx = 0.0
        sy = 0.0
        self_in = False
        for t in range(nc):
            if w0 * cx[t] + w1 * cy[t] >= thr:
                cnt += 1
                sx += cx[t]
                sy += cy[t]
                j = cand[t]
                if j == i:
                    self_in = True
                if record_follow:
                    follow[b, i, j] = True
        out[b, i, 0] = x[i] + coef * (sx / cnt - x[i])
        out[b, i, 1] = y[i] + coef * (sy / cnt - y[i])
        leader[b, i] = self_in and cnt == 1
        mv = max(mv, abs(out[b, i, 0] - x[i]), abs(out[b, i, 1] - y[i]))
        sc = max(sc, abs(x[i]), abs(y[i]))
    moved[b] = mv
    scale[b] = sc


@njit(cache=True)
def _layer_serial(z, A, mask, coef, tol, out, leader, follow, record_follow, moved, scale):  # pragma: no cover
    for b in range(z.shape[0]):
        _layer_one(b, z, A[0, 0], A[0, 1], A[1, 0], A[1, 1], mask, coef, tol, tol == 0.0, out, leader, follow,
                   record_follow, moved, scale)


@njit(parallel=True, cache=True)
def _layer_parallel(z, A, mask, coef, tol, out, leader, follow, record_follow, moved, scale):  # pragma: no cover
    for b in prange(z.shape[0]):
        _layer_one(b, z, A[0, 0], A[0, 1], A[1, 0], A[1, 1], mask, coef, tol, tol == 0.0, out, leader, follow,
                   record_follow, moved, scale)


@njit(cache=True)
def _dense_one(b, z, A, identity, mask, coef, tol, out, leader, follow, record_follow, moved, scale):  # pragma: no cover
    """Eq. (1.1) for sequence b, any d: scores of each real query against the real keys."""
    n, d = z.shape[1], z.shape[2]
    real = np.nonzero(mask[b])[0]
    m = real.shape[0]
    keys = np.empty((d, m))  # transposed keys: the score loop runs over contiguous memory
    for t in range(m):
        for k in range(d):
            keys[k, t] = z[b, real[t], k]
    q = np.empty(d)
    acc = np.empty(d)
    s = np.empty(m)
    mv = 0.0
    sc = 0.0
    for i in range(n):
        if not mask[b, i]:  # padding stays and leads nobody
            for k in range(d):
                out[b, i, k] = z[b, i, k]
            leader[b, i] = False
    for ii in range(m):
        i = real[ii]
        for k in range(d):
            if identity:
                q[k] = z[b, i, k]
            else:
                v = 0.0
                for l in range(d):
                    v += A[k, l] * z[b, i, l]
                q[k] = v  # A z_i
        s[:] = 0.0
        for k in range(d):  # s_t = <A z_i, z_t>, summed over k in order for every t
            qk = q[k]
            for t in range(m):
                s[t] += qk * keys[k, t]
        best = -np.inf
        for t in range(m):
            best = max(best, s[t])
        thr = best - tol
        cnt = 0
        acc[:] = 0.0
        self_in = False
        for t in range(m):
            if s[t] >= thr:
                cnt += 1
                for k in range(d):
                    acc[k] += keys[k, t]
                if t == ii:
                    self_in = True
                if record_follow:
                    follow[b, i, real[t]] = True
        for k in range(d):
            x = z[b, i, k]
            out[b, i, k] = x + coef * (acc[k] / cnt - x)
            mv = max(mv, abs(out[b, i, k] - x))
            sc = max(sc, abs(x))
        leader[b, i] = self_in and cnt == 1
    moved[b] = mv
    scale[b] = sc


@njit(cache=True)
def _dense_serial(z, A, identity, mask, coef, tol, out, leader, follow, record_follow, moved, scale):  # pragma: no cover
    for b in range(z.shape[0]):
        _dense_one(b, z, A, identity, mask, coef, tol, out, leader, follow, record_follow, moved, scale)


@njit(parallel=True, cache=True)
def _dense_parallel(z, A, identity, mask, coef, tol, out, leader, follow, record_follow, moved, scale):  # pragma: no cover
    for b in prange(z.shape[0]):
        _dense_one(b, z, A, identity, mask, coef, tol, out, leader, follow, record_follow, moved, scale)


# Below this many sequences, waking worker threads costs more than it saves.
PARALLEL_MIN_BATCH = 64


def hardmax_layer_2d(z, A, mask, coef, tol, out, leader, follow, record_follow, moved, scale):
    """One layer of eq. (1.1) for a (B, n, 2) batch.

    Writes out (B, n, 2), leader (B, n), follow (B, n, n) when record_follow, and per sequence
    the largest coordinate change ``moved`` (B,) and largest coordinate ``scale`` (B,).
    """
    run = _layer_parallel if z.shape[0] >= PARALLEL_MIN_BATCH else _layer_serial
    run(z, A, mask, coef, tol, out, leader, follow, record_follow, moved, scale)


def hardmax_layer_dense(z, A, mask, coef, tol, out, leader, follow, record_follow, moved, scale):
    """One layer of eq. (1.1) for a (B, n, d) batch, any d; same outputs as :func:`hardmax_layer_2d`."""
    identity = bool(np.array_equal(A, np.eye(A.shape[0])))
    run = _dense_parallel if z.shape[0] >= PARALLEL_MIN_BATCH else _dense_serial
    run(z, A, identity, mask, coef, tol, out, leader, follow, record_follow, moved, scale)
