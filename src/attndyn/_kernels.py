r"""Compiled hardmax layers (float64, CPU, no autograd), exact tie rule, no (B, n, n) score tensor.

Both kernels compute the scores exactly as the dense rule does
(:func:`attndyn.attention.scores` with ``exact=True``): :math:`w = A z_i` and
:math:`s_{ij} = \langle w, z_j\rangle`, each a left-to-right sum of rounded products, no fused
multiply-add, and :math:`C_i = \{j : s_{ij} = \max_l s_{il}\}` bit for bit (hardmax paper,
eq. (1.1b)); the mean of the tokens in :math:`C_i` is summed in increasing index order, as the
naive per-token loop does (the dense torch path sums a tie by a matrix product: the same
follow sets and leaders, the same tokens except possibly the last bit of a tie's mean).

**Planar tokens (d = 2), why comparing with a few candidates is exact.** Let :math:`Q` be a
convex polygon whose vertices are tokens of the sequence and let a token :math:`p` lie inside
:math:`Q` at distance :math:`r` from its boundary. The disc of radius :math:`r` around :math:`p`
lies in :math:`Q`, hence in the hull of the tokens, so for every direction :math:`w`

.. math:: \langle w, p\rangle + r\lVert w\rVert \le \max_{q\in Q}\langle w, q\rangle \le \max_j \langle w, z_j\rangle .

A rounded score differs from the exact one by at most :math:`2u(|w_1 z_1| + |w_2 z_2|) \le
2\sqrt2\,u\,\lVert w\rVert S` (:math:`u = 2^{-53}`, :math:`S` the largest coordinate) as long
as nothing underflows or overflows. So when :math:`r > 4\sqrt2\,u S` the rounded score of
:math:`p` is strictly below the rounded maximum and :math:`p \notin C_i` for *every* query; the
kernel drops only points deeper than ``MARGIN * S`` (``MARGIN = 1e-9``, ten million times that
bound, which also absorbs the rounding of the depth computation itself). Every other token — the
hull's vertices, tokens on or within the margin of its edges, every copy of a duplicated token —
is a *candidate*, and each query takes the maximum and the ties over the candidates only, with
the same rounded scores as the dense rule: the maximum and :math:`C_i` are those of the dense
rule bit for bit, ties included. (The depth of a point is its smallest distance to the lines of
the polygon's edges; were the polygon only nearly convex — a corner whose turn is below
rounding — the intersection of the edges' inner half-planes would still lie inside it.)

Per sequence and layer: (1) the extreme tokens in the 8 directions :math:`k\cdot 45°` span an
inscribed octagon (two passes of eight independent scalar chains) — in a run, only at the first layer and
when the polygon of the layer before is no longer convex: a run carries each sequence's polygon from one
layer to the next (:func:`planar_memo`), on the same token slots, keeping its edges while its vertices
have not moved (leaders do not move) and recomputing them from where its vertices are when they have
(any convex polygon with tokens for vertices is inscribed); (2) the candidates are the
tokens not deeper than the margin inside it (one vectorised pass testing all 8 edges) — about 11
of 128 Gaussian tokens, the hull's vertices and a few near them; (3) every query is compared with
the candidates in passes vectorised over the queries, four candidates a pass, keeping the maximum
and, packed in one integer, how many candidates attain it and the sum of their slots, which is the
maximiser's slot when it is the only one (the running state is loaded and stored once per pass:
stores, not arithmetic, bounded the one-candidate loop; a pass folds its four scores into the
maximum before it counts, so that no select chains one candidate to the next); (4) the generic
query (one maximiser) moves towards it, and the rare others (ties: their mean in index order; see
below) are finished one by one. The octagon must turn left at every corner
and wind once, else the sequence compares with all its tokens; so does a positive tie
tolerance, a sequence of at most 8 tokens, coordinates outside ``[SCALE_MIN, SCALE_MAX]``, and a
query with :math:`(|w_1| + |w_2|) S` outside ``[SCORE_MIN, SCORE_MAX]`` (where rounding stops
being relative: underflow, overflow) — in particular :math:`A z_i = 0`, whose scores are all
exactly 0: it follows every token.

**Any other d** (:func:`hardmax_layer_dense`): per sequence, QB queries at a time, the rows of
scores over the real tokens only (vectorised over the keys, four coordinates a pass: :func:`_score_rows`),
each row's maximum (:func:`_rowmax`), how many keys attain it and, in the same pass, the sum of their indices (the
maximiser when it is the only one), then the mean of the maximisers, with everything in cache; padding costs
nothing.

**A causal mask** (``causal=True``, token i attends to :math:`j \le i` only) runs on the dense kernel for every
d, planar included: each query has its own keys (a prefix of the real tokens), so the planar kernel's candidates,
shared by all queries, do not apply. A block of QB queries scores the keys up to its last query only, and each
row's maximum, ties, mean and (for a new leader) margin over the other keys and rounding bound
(:math:`M` the largest coordinates of the keys the query sees) are read over :math:`j \le i`: the same
numbers as the dense rule restricted to those keys.

**Leaders, certified in the kernels.** With ``layer >= 0`` the kernels keep the run's
:class:`attndyn.margins.LeaderBook` themselves: a token with :math:`C_i = \{i\}` seen for the first
time gets its margin over every other real token (the same rounded scores the layer compared)
and leads from this layer on when the margin beats the rounding bound of :mod:`attndyn.margins`;
otherwise the event is recorded as decided by rounding. A leader is in its own :math:`C_i`, so
the planar kernel looks only at its candidates.

**Why the loops look as they do** (timings in docs/benchmarks.md): LLVM does not vectorise a
floating-point max reduction, so maxima are folded in eight lanes, or, for the d >= 3 kernel's rows, taken
over integer keys in the doubles' order (:func:`_rowmax`), which it does vectorise; a call to a compiled function,
with its array arguments, costs as much as a sequence's worth of work, so one call handles a block
of sequences and the small helpers are inlined.

**Buffers.** Each sequence is read whole into scratch rows before anything of it is written, so ``out`` may be
the tokens themselves (a run steps in place where nobody reads the state after the step:
:class:`attndyn._hardmax._HardmaxRecord`), and ``out=None`` stores no tokens (a run's last layer, of which
only the leaders, the movement and the scale are read).

**Threads.** Sequences are independent; a planar batch is cut into blocks of sequences that the threads take
one at a time (:mod:`attndyn._share`, :func:`attndyn._planar_run._run_blocks`). How many threads a layer uses is :func:`threads_for` (a
measured rule).

**The planar kernel** is :mod:`attndyn._planar_run`, built from this module's phase functions
(:func:`_planar_candidates`, :func:`_score_planar`, ...): a layer at a time (:func:`attndyn._planar_run.hardmax_layer_2d`)
or, where nothing reads a state before a run ends, each sequence through all its layers in cache
(:func:`attndyn._planar_run.hardmax_run_2d`).
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numba
import numpy as np
from numba import njit, prange

from . import _jit_cache  # noqa: F401  (first: the locator of each cached kernel defined below)
from ._share import PARALLEL_REGION

# numba's OpenMP layer shares libgomp with torch and leaves torch's small kernels crawling
# afterwards (docs/benchmarks.md, "Threads"); the workqueue layer has no such interaction.
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]  # set at import by numba

# Points closer than MARGIN * (largest coordinate) to a polygon's boundary are kept as candidates.
MARGIN = 1e-9
# Outside these ranges rounding is no longer relative (underflow, overflow): compare with all.
SCALE_MIN, SCALE_MAX = 1e-140, 1e140  # largest coordinate of a sequence
SCORE_MIN, SCORE_MAX = 1e-280, 1e280  # (|w_1| + |w_2|) * largest coordinate, per query


@njit(cache=True, fastmath={"nnan", "nsz"}, inline="always")
def _absmax(xr, yr, m):  # pragma: no cover - compiled
    """Largest |coordinate| of the m tokens (vectorised min/max reductions; tokens are finite)."""
    hx = lx = hy = ly = 0.0  # one accumulator per reduction, so that they vectorise
    for t in range(m):
        x, y = xr[t], yr[t]
        hx = x if x > hx else hx
        lx = x if x < lx else lx
        hy = y if y > hy else hy
        ly = y if y < ly else ly
    return max(hx, -lx, hy, -ly)


@njit(cache=True, fastmath={"nnan", "nsz"}, inline="always")
def _octagon(xr, yr, m, ext):  # pragma: no cover - compiled
    """Extreme tokens in the directions k * 45 degrees, k = 0..7 (counter-clockwise), into ext;
    returns how many there are once consecutive repeats are removed (the list is cyclic), and
    the largest |coordinate|.

    (Any token attaining a rounded extreme will do: the octagon only has to be inscribed. The
    fast-math flags let the min/max reductions vectorise; they touch no score.)"""
    mx = mn = xr[0]
    my = mny = yr[0]
    mp = mnp = xr[0] + yr[0]
    mq = mnq = xr[0] - yr[0]
    for t in range(1, m):  # the extreme values (eight independent chains of scalar maxima)
        x = xr[t]
        y = yr[t]
        p = x + y
        q = x - y
        mx = x if x > mx else mx
        mn = x if x < mn else mn
        my = y if y > my else my
        mny = y if y < mny else mny
        mp = p if p > mp else mp
        mnp = p if p < mnp else mnp
        mq = q if q > mq else mq
        mnq = q if q < mnq else mnq
    i0 = i1 = i2 = i3 = i4 = i5 = i6 = i7 = 0
    for t in range(m):  # a token attaining each (vectorised selects)
        x = xr[t]
        y = yr[t]
        p = x + y
        q = x - y
        i0 = t if x == mx else i0
        i1 = t if p == mp else i1
        i2 = t if y == my else i2
        i3 = t if q == mnq else i3
        i4 = t if x == mn else i4
        i5 = t if p == mnp else i5
        i6 = t if y == mny else i6
        i7 = t if q == mq else i7
    ext[0], ext[1], ext[2], ext[3], ext[4], ext[5], ext[6], ext[7] = i0, i1, i2, i3, i4, i5, i6, i7
    h = 0
    for k in range(8):
        if h == 0 or ext[k] != ext[h - 1]:
            ext[h] = ext[k]
            h += 1
    while h > 1 and ext[h - 1] == ext[0]:
        h -= 1
    return h, max(mx, -mn, my, -mny)


@njit(cache=True, inline="always")
def _convex_once(xr, yr, poly, h):  # pragma: no cover - compiled
    """True when the closed polygon xr/yr[poly[:h]] turns strictly left at every corner and its
    edge directions go round exactly once (so it is convex and counter-clockwise)."""
    if h < 3:
        return False
    entries = 0
    for e in range(h):
        a, b, c = poly[e], poly[(e + 1) % h], poly[(e + 2) % h]
        d1x, d1y = xr[b] - xr[a], yr[b] - yr[a]
        d2x, d2y = xr[c] - xr[b], yr[c] - yr[b]
        if d1x * d2y - d1y * d2x <= 0.0:
            return False
        up1 = d1y > 0.0 or (d1y == 0.0 and d1x > 0.0)
        up2 = d2y > 0.0 or (d2y == 0.0 and d2x > 0.0)
        if up2 and not up1:
            entries += 1
    return entries == 1


@njit(cache=True, inline="always")
def _outside(xr, yr, m, nx, ny, off, h, keep):  # pragma: no cover - compiled
    """keep[t] = 1 where token t is in front of (or within the margin behind) some edge e < h <= 8,
    i.e. nx[e] x + ny[e] y >= off[e]; else 0 (one pass over the tokens with the eight edges in
    registers, vectorised; missing edges repeat edge 0)."""
    for e in range(h, 8):
        nx[e], ny[e], off[e] = nx[0], ny[0], off[0]
    a0, a1, a2, a3, a4, a5, a6, a7 = nx[0], nx[1], nx[2], nx[3], nx[4], nx[5], nx[6], nx[7]
    c0, c1, c2, c3, c4, c5, c6, c7 = ny[0], ny[1], ny[2], ny[3], ny[4], ny[5], ny[6], ny[7]
    o0, o1, o2, o3, o4, o5, o6, o7 = off[0], off[1], off[2], off[3], off[4], off[5], off[6], off[7]
    for t in range(m):
        x, y = xr[t], yr[t]
        out = (a0 * x + c0 * y >= o0) | (a1 * x + c1 * y >= o1) | (a2 * x + c2 * y >= o2) | (a3 * x + c3 * y >= o3)
        out |= (a4 * x + c4 * y >= o4) | (a5 * x + c5 * y >= o5) | (a6 * x + c6 * y >= o6) | (a7 * x + c7 * y >= o7)
        keep[t] = 1.0 if out else 0.0


@njit(cache=True, inline="always")
def _edges(xr, yr, poly, h, nrm):  # pragma: no cover - compiled
    """The edges of the polygon xr/yr[poly[:h]] into nrm: row 0 and 1 their outward unit normals, row 4 each
    normal's product with the edge's first vertex. Returns h, or 0 (no polygon) unless it turns left at every
    corner and winds once (:func:`_convex_once`)."""
    if not _convex_once(xr, yr, poly, h):
        return 0
    for e in range(h):
        a, b = poly[e], poly[(e + 1) % h]
        dx, dy = xr[b] - xr[a], yr[b] - yr[a]
        length = np.sqrt(dx * dx + dy * dy)
        nrm[0, e], nrm[1, e] = dy / length, -dx / length  # outward unit normal
        nrm[4, e] = nrm[0, e] * xr[a] + nrm[1, e] * yr[a]
    return h


@njit(cache=True, inline="always")
def _candidates(xr, yr, m, scale, h, exact, cand, nrm):  # pragma: no cover - compiled
    """Indices (ascending) of the tokens that may be in some C_i into cand; returns how many.

    Every token not deeper than the margin inside the inscribed polygon whose h edges :func:`_edges` wrote into
    ``nrm`` (all tokens when there is none (h = 0), ``exact`` is False or the largest |coordinate| ``scale`` is
    out of range). ``nrm`` (5, max(m, 8)) float64: rows 2 and 3 are scratch."""
    if h == 0 or not exact or not (SCALE_MIN <= scale <= SCALE_MAX):
        for t in range(m):
            cand[t] = t
        return m
    for e in range(h):
        nrm[2, e] = nrm[4, e] - MARGIN * scale  # offset, less the margin
    keep = nrm[3]
    _outside(xr, yr, m, nrm[0], nrm[1], nrm[2], h, keep)
    c = 0
    for t in range(m):
        cand[c] = t
        c += 1 if keep[t] != 0.0 else 0
    return c


@njit(cache=True, inline="always")
def _recall_polygon(b, xr, yr, m, memo, poly, nrm):  # pragma: no cover - compiled
    """The polygon of sequence b at the layer before, on the tokens at the same slots: its edges into nrm as
    :func:`_edges` writes them (kept when none of its vertices moved: leaders do not move; else computed again
    from where they are now), and its number of edges; 0 when there is none or it is no longer convex. (Any
    convex polygon whose vertices are tokens is inscribed, however it was chosen.)"""
    pv, pf = memo
    h = pv[b, 8]
    if h < 3:
        return 0
    moved = False
    for e in range(h):
        k = pv[b, e]
        if k >= m:
            return 0
        poly[e] = k
        moved |= xr[k] != pf[b, e] or yr[k] != pf[b, 8 + e]
    if moved:
        h = _edges(xr, yr, poly, h, nrm)
        _remember_polygon(b, xr, yr, poly, h, memo, nrm)
        return h
    for e in range(h):
        nrm[0, e], nrm[1, e], nrm[4, e] = pf[b, 16 + e], pf[b, 24 + e], pf[b, 32 + e]
    return h


@njit(cache=True, inline="always")
def _remember_polygon(b, xr, yr, poly, h, memo, nrm):  # pragma: no cover - compiled
    """Keep sequence b's polygon (h edges, vertices at the slots poly[:h]) for :func:`_recall_polygon`."""
    pv, pf = memo
    pv[b, 8] = h
    for e in range(h):
        k = poly[e]
        pv[b, e] = k
        pf[b, e], pf[b, 8 + e] = xr[k], yr[k]
        pf[b, 16 + e], pf[b, 24 + e], pf[b, 32 + e] = nrm[0, e], nrm[1, e], nrm[4, e]


def planar_memo(B: int) -> tuple[np.ndarray, np.ndarray]:
    """What the planar kernel carries from one layer of a run to the next: each sequence's inscribed polygon
    (vertex slots and h, (B, 9) int64; vertex coordinates, normals and their products, (B, 40) float64); none
    yet (h = 0)."""
    return np.zeros((B, 9), dtype=np.int64), np.empty((B, 40))


@njit(cache=True, inline="always")
def _planar_candidates(b, xr, yr, m, exact, memo, poly, nrm, cand, cx, cy):  # pragma: no cover - compiled
    """Sequence b's candidates (:func:`_candidates`; ascending) into cand and their coordinates into cx, cy, with
    the inscribed polygon of the layer before while it stands (:func:`_recall_polygon`), else an octagon found
    afresh and kept for the next layer (poly, nrm: scratch); returns their number and the largest |coordinate|."""
    h = _recall_polygon(b, xr, yr, m, memo, poly, nrm) if m > 8 else 0
    if h > 0:  # the layer before's polygon still stands: no octagon to find
        sc = _absmax(xr, yr, m)
    elif m > 8:
        h, sc = _octagon(xr, yr, m, poly)
        h = _edges(xr, yr, poly, h, nrm)
        _remember_polygon(b, xr, yr, poly, h, memo, nrm)
    else:
        sc = _absmax(xr, yr, m)
    nc = _candidates(xr, yr, m, sc, h, exact, cand, nrm)
    for c in range(nc):
        cx[c] = xr[cand[c]]
        cy[c] = yr[cand[c]]
    return nc, sc


@njit(cache=True)
def _ties(w0, w1, xs, ys, idx, nc, bst):  # pragma: no cover - compiled
    """Count, sum (in the order of idx; all tokens if idx is None) and last index of the tokens
    idx[:nc] whose score (rounded as in the dense rule) is >= bst."""
    cnt, sx, sy, last = 0, 0.0, 0.0, -1
    for c in range(nc):
        t = c if idx is None else idx[c]
        if w0 * xs[t] + w1 * ys[t] >= bst:
            cnt += 1
            sx += xs[t]
            sy += ys[t]
            last = t
    return cnt, sx, sy, last


@njit(cache=True, inline="always")
def _load_planar(zb, mb, A, real, xr, yr, w0, w1):  # pragma: no cover - compiled
    """The real tokens of one sequence (zb (n, 2), mb (n,) bool): their positions into real, their
    coordinates into xr, yr and w = A z_i into w0, w1, rounded as the dense rule rounds it;
    returns how many there are, m. (Without padding the loop reads zb in order and vectorises.)"""
    n = zb.shape[0]
    m = 0
    for i in range(n):  # the real tokens' positions (branch-free)
        real[m] = i
        m += 1 if mb[i] else 0
    a = (A[0, 0], A[0, 1], A[1, 0], A[1, 1])
    if m == n:  # no padding: read zb in order (the loop vectorises)
        for k in range(n):
            _put_planar(zb, k, k, a, xr, yr, w0, w1)
    else:
        for k in range(m):
            _put_planar(zb, real[k], k, a, xr, yr, w0, w1)
    return m


@njit(cache=True, inline="always")
def _put_planar(zb, j, k, a, xr, yr, w0, w1):  # pragma: no cover - compiled
    """Token j of zb into slot k: its coordinates into xr, yr and A z_j into w0, w1 (a = A's entries, row by row)."""
    x = zb[j, 0]
    y = zb[j, 1]
    xr[k] = x
    yr[k] = y
    w0[k] = a[0] * x + a[1] * y
    w1[k] = a[2] * x + a[3] * y


# The scoring pass packs, per query, the multiplicity of its maximum (high 32 bits) and the sum of the
# slots of the candidates attaining it (low 32 bits: the maximiser's slot when it is the only one) into
# one integer: one store, not three. (A slot sum past 2**32, a tie among some 90,000 candidates, carries
# into the count, which can then only grow: a count of 1 is always exact, and only 1 is read as such.)
_ONE = 1 << 32
_SLOT = _ONE - 1


@njit(cache=True, inline="always")
def _tally(s, bk, c):  # pragma: no cover - compiled
    """Candidate slot c's share of the packed count and slot sum: one and c when its score s attains bk."""
    return (c + _ONE) if s == bk else 0


@njit(cache=True, inline="always")
def _score_planar(w0, w1, m, cx, cy, nc, best, pack):  # pragma: no cover - compiled
    """Every query k < m against the candidates cx, cy[:nc]: the maximum of the rounded scores into
    best[k] (folded in slot order, ``s if s > best else best``), and how many candidates attain it and
    the sum of their slots (the maximiser's slot when it is unique), packed into pack[k].

    Vectorised over the queries, four candidates a pass, each pass loading and storing a query's
    running state once. A pass folds its four scores into the maximum first, then restarts the count
    if the maximum grew and adds the candidates that attain the new maximum: the count is that of
    the whole fold, a candidate below the final maximum is never counted, and no select sits on
    the chain from one candidate to the next. The first pass starts the fold at candidate 0 (counted unless a
    later one is above it). The candidates are padded to a multiple of four with NaN coordinates (cx, cy have
    room for three more): a NaN score is neither above the maximum nor equal to it, so the padding changes
    nothing. (Before, candidate 0 had a pass of its own, and so had each candidate past a multiple of four,
    which stored its running maximum through a masked store, slow on processors without AVX-512.)"""
    top = nc + (-nc) % 4  # a multiple of 4
    for c in range(nc, top):
        cx[c] = np.nan
        cy[c] = np.nan
    ux, uy, vx, vy = cx[0], cy[0], cx[1], cy[1]
    px, py, qx, qy = cx[2], cy[2], cx[3], cy[3]
    for k in range(m):  # the first pass: nothing to load
        x, y = w0[k], w1[k]
        s0, s1, s2, s3 = x * ux + y * uy, x * vx + y * vy, x * px + y * py, x * qx + y * qy
        bk = s1 if s1 > s0 else s0
        bk = s2 if s2 > bk else bk
        bk = s3 if s3 > bk else bk
        best[k] = bk
        pack[k] = ((0 if bk > s0 else _ONE) + _tally(s1, bk, 1)) + (_tally(s2, bk, 2) + _tally(s3, bk, 3))
    c = 4
    while c < top:
        ux, uy, vx, vy = cx[c], cy[c], cx[c + 1], cy[c + 1]
        px, py, qx, qy = cx[c + 2], cy[c + 2], cx[c + 3], cy[c + 3]
        for k in range(m):
            x, y = w0[k], w1[k]
            s0, s1, s2, s3 = x * ux + y * uy, x * vx + y * vy, x * px + y * py, x * qx + y * qy
            b0, v = best[k], pack[k]  # (both loaded unconditionally, so that the selects vectorise)
            bk = s0 if s0 > b0 else b0
            bk = s1 if s1 > bk else bk
            bk = s2 if s2 > bk else bk
            bk = s3 if s3 > bk else bk
            v = 0 if bk > b0 else v
            t = (_tally(s0, bk, c) + _tally(s1, bk, c + 1)) + (_tally(s2, bk, c + 2) + _tally(s3, bk, c + 3))
            best[k], pack[k] = bk, v + t
        c += 4


@njit(cache=True, inline="always")
def _move_planar(xr, yr, w0, w1, m, sc, coef, cx, cy, cand, pack, cnt, arg, ox, oy):  # pragma: no cover
    """Unpack the scoring pass (cnt, arg: the token index) and move every query towards its
    maximiser (the generic case, one maximiser); returns how many queries need :func:`_planar_fix`
    (ties, and scores outside the range where rounding is relative). (Two loops: the first, with
    no gathers, vectorises.)"""
    nfix = 0
    for k in range(m):
        cnt[k] = pack[k] >> 32
        arg[k] = (pack[k] & _SLOT) if cnt[k] == 1 else 0  # the slot, for now (a tie's: any, finished below)
        g = (abs(w0[k]) + abs(w1[k])) * sc
        nfix += 1 if (cnt[k] != 1) | (g < SCORE_MIN) | (g > SCORE_MAX) else 0
    for k in range(m):
        slot = np.uint64(arg[k])  # (unsigned: no test for a negative index on each of the three loads)
        arg[k] = cand[slot]
        x, y = xr[k], yr[k]
        ox[k] = x + coef * (cx[slot] - x)
        oy[k] = y + coef * (cy[slot] - y)
    return nfix


@njit(cache=True, inline="always")
def _store_planar(ob, lb, real, m, ox, oy, cnt, arg):  # pragma: no cover - compiled
    """The new tokens into ob (n, 2) and the flags C_i = {i} into lb (n,), at the real positions; ob with no
    rows (a layer whose new tokens are not kept, see :func:`attndyn._planar_run.hardmax_layer_2d`): the flags only."""
    if ob.shape[0] == 0:
        if m == lb.shape[0]:
            for k in range(m):
                lb[k] = (cnt[k] == 1) & (arg[k] == k)
            return
        for k in range(m):
            lb[real[k]] = (cnt[k] == 1) & (arg[k] == k)
        return
    if m == ob.shape[0]:
        for k in range(m):
            ob[k, 0] = ox[k]
            ob[k, 1] = oy[k]
            lb[k] = (cnt[k] == 1) & (arg[k] == k)
        return
    for k in range(m):
        i = real[k]
        ob[i, 0] = ox[k]
        ob[i, 1] = oy[k]
        lb[i] = (cnt[k] == 1) & (arg[k] == k)


@njit(cache=True, inline="always")
def _any_new(lb, kb, real, m):  # pragma: no cover - compiled
    """Whether a token of the sequence is flagged C_i = {i} (lb) and not yet certified (kb): after the first
    layers almost never, and then this one pass over two byte rows replaces the walk over the candidates."""
    new = np.uint8(0)  # (bytes and bitwise operators: ``lb[i] and not kb[i]`` compiled to two branches a token)
    if m == lb.shape[0]:  # no padding: contiguous rows (the loop vectorises)
        for i in range(m):
            new |= np.uint8(lb[i]) & ~np.uint8(kb[i])
    else:
        for k in range(m):
            i = real[k]
            new |= np.uint8(lb[i]) & ~np.uint8(kb[i])
    return new != 0


@njit(cache=True, fastmath={"nnan", "nsz"}, inline="always")
def _rival(w0, w1, xr, yr, k, m, tmp):  # pragma: no cover - compiled
    """max over t != k of the score w0 * xr[t] + w1 * yr[t], rounded as the engine rounds it."""
    for t in range(m):
        tmp[t] = w0 * xr[t] + w1 * yr[t]
    tmp[k] = -np.inf
    return _fold_max(tmp, m)


@njit(cache=True, fastmath={"nnan", "nsz"}, inline="always")
def _absmax1(a, m, tmp):  # pragma: no cover - compiled
    """max |a[:m]| (0 if m = 0)."""
    for t in range(m):
        tmp[t] = abs(a[t])
    return max(_fold_max(tmp, m), 0.0)


@njit(cache=True, inline="always")
def _certify_planar(b, lb, real, cand, nc, m, xr, yr, w0, w1, A, layer, book, known, tmp):  # pragma: no cover
    """Certify sequence b's new leaders (lb, flagged C_i = {i}) as :func:`_certify_one` does.

    A leader is in its own C_i, so it is one of the nc candidates: only they are looked at."""
    big0 = -1.0
    big1 = 0.0
    for c in range(nc):
        k = cand[c]
        i = real[k]
        if not lb[i] or known[b, i]:
            continue
        if big0 < 0.0:  # M_k, the largest coordinates of the real tokens (once per sequence)
            big0 = _absmax1(xr, m, tmp)
            big1 = _absmax1(yr, m, tmp)
        own = w0[k] * xr[k] + w1[k] * yr[k]
        mu = own - _rival(w0[k], w1[k], xr, yr, k, m, tmp)
        x, y = abs(xr[k]), abs(yr[k])
        a0 = abs(A[0, 0]) * x + abs(A[0, 1]) * y  # |A| |z_i|
        a1 = abs(A[1, 0]) * x + abs(A[1, 1]) * y
        bound = a0 * (x + big0) + a1 * (y + big1)
        lb[i] = _certify_one(b, i, mu, bound, x + big0 + y + big1, layer, book)


@njit(cache=True, inline="always")
def _fill_book_rows(b, book):  # pragma: no cover - compiled
    """Sequence b's rows of the book's since (-1) and margin (NaN), while the book says they are unfilled: written
    where the kernel first reaches the sequence, so that its certifications at layer 0 find them in cache."""
    if book[8][0]:
        since, margin = book[0], book[1]
        for i in range(since.shape[1]):
            since[b, i] = -1
            margin[b, i] = np.nan


@njit(cache=True, inline="always")
def _certify_one(b, i, mu, bound, span, layer, book):  # pragma: no cover - compiled
    r"""Token (b, i), flagged C_i = {i} for the first time, with computed margin mu, the sum
    of :math:`(|A||z_i|)\cdot(|z_i| + M)` and ``span`` the sum of :math:`|z_i| + M`: it leads from ``layer`` on
    when mu beats the rounding bound (attndyn.margins, with its underflow term), else the event is recorded as
    decided by rounding. Returns whether it leads."""
    since, margin, ev_layer, ev_mu, ev_bound, nev, g, known, _ = book
    bound = g[0] * bound + g[1] * (span + 3.0)
    if mu > bound:
        since[b, i] = layer
        margin[b, i] = mu
        known[b, i] = True
        return True
    ev_layer[b, i] = layer + 1
    ev_mu[b, i] = mu
    ev_bound[b, i] = bound
    nev[b] += 1
    return False


@njit(cache=True, fastmath={"nnan", "nsz"}, inline="always")
def _fold_max(tmp, m):  # pragma: no cover - compiled
    """max(tmp[:m]) (-inf if m = 0); tmp has at least m + 8 entries and is overwritten.

    LLVM does not vectorise a floating-point max reduction (one dependent chain of scalar
    maxima); folding eight lanes block by block does vectorise. Callers
    fill tmp element-wise (a vectorised map) and fold it."""
    top = (m + 7) // 8 * 8
    for k in range(m, top):
        tmp[k] = -np.inf
    for j in range(8, top, 8):
        for i in range(8):
            tmp[i] = tmp[j + i] if tmp[j + i] > tmp[i] else tmp[i]
    h = -np.inf
    for i in range(min(8, top)):
        h = tmp[i] if tmp[i] > h else h
    return h


@njit(cache=True, fastmath={"nnan", "nsz"}, inline="always")
def _maxdiff(ox, oy, xr, yr, m, tmp):  # pragma: no cover - compiled
    """Largest coordinate change max_k max(|ox - xr|, |oy - yr|) (0 if m = 0); tmp is scratch."""
    for k in range(m):
        a = abs(ox[k] - xr[k])
        c = abs(oy[k] - yr[k])
        tmp[k] = a if a > c else c
    return max(_fold_max(tmp, m), 0.0)


@njit(cache=True)
def _planar_fix(k, b, seen, coef, tol, real, follow, record_follow):  # pragma: no cover - compiled
    """Query k when it is not the generic case: a tie, a positive tolerance, scores outside the
    range where rounding is relative (then every token is compared), or follow sets wanted;
    ``seen`` is what the layer computed, ``(w0, w1, xr, yr, m, sc, cand, nc, best, cnt, arg, ox, oy)``."""
    w0, w1, xr, yr, m, sc, cand, nc, best, cnt, arg, ox, oy = seen
    x, y = xr[k], yr[k]
    g = (abs(w0[k]) + abs(w1[k])) * sc
    if tol > 0.0 or (nc < m and not (SCORE_MIN <= g <= SCORE_MAX)):  # compare with every token
        bst = -np.inf
        for t in range(m):
            s = w0[k] * xr[t] + w1[k] * yr[t]
            bst = s if s > bst else bst
        best[k] = bst - tol
        c, sx, sy, last = _ties(w0[k], w1[k], xr, yr, None, m, best[k])
        cnt[k], arg[k] = c, last
        ox[k] = x + coef * (sx / c - x)
        oy[k] = y + coef * (sy / c - y)
        if record_follow:
            for t in range(m):
                if w0[k] * xr[t] + w1[k] * yr[t] >= best[k]:
                    follow[b, real[k], real[t]] = True
        return
    if cnt[k] != 1:  # a tie: the mean of its tokens, summed in index order
        c, sx, sy, last = _ties(w0[k], w1[k], xr, yr, cand, nc, best[k])
        ox[k] = x + coef * (sx / c - x)
        oy[k] = y + coef * (sy / c - y)
    if record_follow:
        for c in range(nc):
            t = cand[c]
            if w0[k] * xr[t] + w1[k] * yr[t] >= best[k]:
                follow[b, real[k], real[t]] = True


@njit(cache=True, inline="always")
def _planar_scratch(n):  # pragma: no cover - compiled
    """Scratch rows of length n + 8 for one block of sequences (views made once, not per sequence): int64 ``(real,
    cand, arg, cnt, pack)``, float64 ``(xr, yr, w0, w1, best, cx, cy, ox, oy)`` and the polygon's rows (5, n + 8)."""
    iscratch = np.empty((5, n + 8), dtype=np.int64)
    scratch = np.empty((14, n + 8))
    ib = (iscratch[0], iscratch[1], iscratch[2], iscratch[3], iscratch[4])
    qb = (scratch[0], scratch[1], scratch[2], scratch[3], scratch[4], scratch[5], scratch[6], scratch[7], scratch[8])
    return ib, qb, scratch[9:14]


# Bits of a double, as an int64, in the order of the doubles they encode: x -> bits(x) ^ (sign(x) ? 2^63 - 1 : 0)
# (negative doubles' magnitude bits flipped; -0.0 sorts just below +0.0). Its own inverse.
_MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)


@njit(cache=True, inline="always")
def _ordered(b):  # pragma: no cover - compiled
    """The bits b of a double (int64) to a key in the doubles' order, or such a key back to the bits."""
    return b ^ ((b >> 63) & _MAGNITUDE)


@njit(cache=True, inline="always")
def _rowmax(s, m, lanes):  # pragma: no cover - compiled
    """max(s[:m]) (-inf if m = 0) of a contiguous row with no NaN, s unchanged; ``lanes`` holds 8 entries
    (scratch for the result's bits).

    LLVM vectorises no floating-point maximum reduction that numba writes (a select on a comparison), while it does
    vectorise an integer one: so the maximum is taken over :func:`_ordered` keys of the doubles' bits, which
    compare as the doubles do (exactly; the one difference, -0.0 below +0.0, cannot arise: a score is a sum that
    starts from +0.0, :func:`_score_rows`). About 1.7x faster than eight lanes of scalar maxima (znver3)."""
    bits = s.view(np.int64)
    lanes[0] = -np.inf
    key = lanes.view(np.int64)
    best = _ordered(key[0])
    for t in range(m):
        k = _ordered(bits[t])
        best = k if k > best else best
    key[0] = _ordered(best)
    return lanes[0]


@njit(cache=True, inline="always")
def _count_at_least(s, m, thr):  # pragma: no cover - compiled
    """How many of s[:m] are >= thr, and the sum of their indices (the index itself when there is one), in one
    vectorised pass (no scan that stops at the first)."""
    c = 0
    at = 0
    for t in range(m):
        hit = s[t] >= thr
        c += 1 if hit else 0
        at += t if hit else 0
    return c, at


QB = 4  # queries scored together by the d >= 3 kernel (each row of keys is loaded once for all)


@njit(cache=True, inline="always")
def _four(s, a0, a1, a2, a3, x0, x1, x2, x3, t):  # pragma: no cover - compiled
    """s + a0 x0[t] + a1 x1[t] + a2 x2[t] + a3 x3[t], added left to right (four steps of the dense rule's sum)."""
    return (((s + a0 * x0[t]) + a1 * x1[t]) + a2 * x2[t]) + a3 * x3[t]


@njit(cache=True, inline="always")
def _pass4(keys, q, S, k, mk):  # pragma: no cover - compiled
    """Coordinates k..k+3 added to the four rows of sums S[:, :mk] (started from +0.0 when k = 0), left to right."""
    s0, s1, s2, s3 = S[0], S[1], S[2], S[3]
    x0, x1, x2, x3 = keys[k], keys[k + 1], keys[k + 2], keys[k + 3]
    # the coefficients as scalars: loaded once a pass (the stores into S could alias q's rows)
    a00, a01, a02, a03 = q[0, k], q[0, k + 1], q[0, k + 2], q[0, k + 3]
    a10, a11, a12, a13 = q[1, k], q[1, k + 1], q[1, k + 2], q[1, k + 3]
    a20, a21, a22, a23 = q[2, k], q[2, k + 1], q[2, k + 2], q[2, k + 3]
    a30, a31, a32, a33 = q[3, k], q[3, k + 1], q[3, k + 2], q[3, k + 3]
    if k == 0:  # the sums start here (no pass of zeros before)
        for t in range(mk):
            s0[t] = _four(0.0, a00, a01, a02, a03, x0, x1, x2, x3, t)
            s1[t] = _four(0.0, a10, a11, a12, a13, x0, x1, x2, x3, t)
            s2[t] = _four(0.0, a20, a21, a22, a23, x0, x1, x2, x3, t)
            s3[t] = _four(0.0, a30, a31, a32, a33, x0, x1, x2, x3, t)
    else:
        for t in range(mk):
            s0[t] = _four(s0[t], a00, a01, a02, a03, x0, x1, x2, x3, t)
            s1[t] = _four(s1[t], a10, a11, a12, a13, x0, x1, x2, x3, t)
            s2[t] = _four(s2[t], a20, a21, a22, a23, x0, x1, x2, x3, t)
            s3[t] = _four(s3[t], a30, a31, a32, a33, x0, x1, x2, x3, t)


@njit(cache=True, inline="always")
def _pass2(keys, q, S, k, mk):  # pragma: no cover - compiled
    """Coordinates k and k+1 added to the four rows of sums S[:, :mk] (started from +0.0 when k = 0)."""
    s0, s1, s2, s3 = S[0], S[1], S[2], S[3]
    x0, x1 = keys[k], keys[k + 1]
    a00, a01, a10, a11 = q[0, k], q[0, k + 1], q[1, k], q[1, k + 1]
    a20, a21, a30, a31 = q[2, k], q[2, k + 1], q[3, k], q[3, k + 1]
    if k == 0:
        for t in range(mk):
            s0[t] = (0.0 + a00 * x0[t]) + a01 * x1[t]
            s1[t] = (0.0 + a10 * x0[t]) + a11 * x1[t]
            s2[t] = (0.0 + a20 * x0[t]) + a21 * x1[t]
            s3[t] = (0.0 + a30 * x0[t]) + a31 * x1[t]
    else:
        for t in range(mk):
            s0[t] = (s0[t] + a00 * x0[t]) + a01 * x1[t]
            s1[t] = (s1[t] + a10 * x0[t]) + a11 * x1[t]
            s2[t] = (s2[t] + a20 * x0[t]) + a21 * x1[t]
            s3[t] = (s3[t] + a30 * x0[t]) + a31 * x1[t]


@njit(cache=True, inline="always")
def _pass1(keys, q, S, k, mk):  # pragma: no cover - compiled
    """Coordinate k added to the four rows of sums S[:, :mk] (started from +0.0 when k = 0)."""
    if k == 0:
        S[:, :mk] = 0.0
    s0, s1, s2, s3 = S[0], S[1], S[2], S[3]
    a0, a1, a2, a3 = q[0, k], q[1, k], q[2, k], q[3, k]
    kr = keys[k]
    for t in range(mk):
        x = kr[t]
        s0[t] += a0 * x
        s1[t] += a1 * x
        s2[t] += a2 * x
        s3[t] += a3 * x


@njit(cache=True, inline="always")
def _score_rows(keys, q, S, mk):  # pragma: no cover - compiled
    """S[r, t] = <q_r, z_t> for the QB queries q (QB, D) and the keys t < mk (keys (D, m), transposed), each the
    left-to-right sum over k of the rounded products, from +0.0, as the dense rule computes it. D is d, or d + 1
    for d = 4j + 3 (:func:`padded`): the coordinate past d is 0 in q and finite in keys.

    Vectorised over the keys; the running sums are loaded and stored once per four coordinates (:func:`_pass4`),
    not once per coordinate (the one-coordinate loop is bound by those stores: four coordinates a pass take 2-2.5x
    less time for d = 16); the last D mod 4 coordinates go in a pass of two or of one. The order of the additions
    is the same, so the sums are the same bits. The padding adds nothing: a product 0 * x is +-0 for a finite x,
    and s + (+-0) is s for every s but -0.0, which a sum from +0.0 never is (a rounded sum is -0.0 only when both
    terms are). (Measured on znver3, scores alone, against one coordinate a pass: 1.5-2.2x for d = 3 to 16, 1.2x
    for d = 2, CHANGELOG; padding d = 2 or 6 to a multiple of 4 instead of a pass of two was slower than that.)"""
    D = keys.shape[0]
    for k in range(0, D - 3, 4):
        _pass4(keys, q, S, k, mk)
    if D % 4 == 2:
        _pass2(keys, q, S, D - 2, mk)
    elif D % 4 == 1:
        _pass1(keys, q, S, D - 1, mk)


@njit(cache=True, inline="always")
def padded(d):  # pragma: no cover - compiled
    """The coordinates :func:`_score_rows` takes for d: d + 1 for d = 4j + 3 (a pass of four, one product of it
    zero, costs less than a pass of two and one of one), else d. ``padded(3) == 4``, ``padded(5) == 5``."""
    return d + 1 if d % 4 == 3 else d


@njit(cache=True)
def _dense_one(
    b, z, A, identity, mask, coef, tol, out, leader, follow, record_follow, moved, scale, layer, book, causal
):  # pragma: no cover
    """Eq. (1.1) for sequence b, any d: scores of each real query against the real keys, QB
    queries at a time (each key coordinate row is read once for the block; every score is still
    the left-to-right sum over k of the rounded products, as the dense rule computes it).
    ``causal``: the query at real position ii sees the keys 0..ii only."""
    n, d = z.shape[1], z.shape[2]
    real = np.nonzero(mask[b])[0]
    m = real.shape[0]
    D = padded(d)  # the scores' coordinates, zeros past d (:func:`_score_rows`)
    keys = np.zeros((D, m))  # transposed keys: the score loop runs over contiguous memory
    for t in range(m):
        for k in range(d):
            keys[k, t] = z[b, real[t], k]
    q = np.zeros((QB, D))
    acc = np.empty(d)
    S = np.empty((QB, m))
    lanes = np.empty(8)
    big = np.full(d, -1.0)
    mv = 0.0
    sc = 0.0
    store = out.shape[1] != 0  # else out is (1, 0, d): the new tokens are not wanted
    if layer >= 0:
        _fill_book_rows(b, book)
    for i in range(n):
        if not mask[b, i]:  # padding stays and leads nobody
            for k in range(d):
                if store:
                    out[b, i, k] = z[b, i, k]
            leader[b, i] = False
    for i0 in range(0, m, QB):
        nb = min(QB, m - i0)
        mk = min(m, i0 + nb) if causal else m  # the keys any query of the block sees
        for r in range(nb):  # (after the copy into keys, z is not read again: out may be z)
            for k in range(d):
                if identity:
                    q[r, k] = keys[k, i0 + r]
                else:
                    v = 0.0
                    for l in range(d):
                        v += A[k, l] * keys[l, i0 + r]
                    q[r, k] = v  # A z_i
        _score_rows(keys, q, S, mk)
        for r in range(nb):
            ii = i0 + r
            i = real[ii]
            s = S[r]
            mr = ii + 1 if causal else m  # the keys this query sees
            thr = _rowmax(s, mr, lanes) - tol
            cnt = 0
            acc[:] = 0.0
            self_in = False
            one, t = (0, 0) if record_follow else _count_at_least(s, mr, thr)
            if one == 1:  # one maximiser, t
                cnt = 1
                for k in range(d):
                    acc[k] = keys[k, t]
                self_in = t == ii
            for t in range(mr if cnt == 0 else 0):  # ties (or follow sets wanted): every maximiser
                if s[t] >= thr:
                    cnt += 1
                    for k in range(d):
                        acc[k] += keys[k, t]
                    if t == ii:
                        self_in = True
                    if record_follow:
                        follow[b, i, real[t]] = True
            for k in range(d):
                x = keys[k, ii]  # z[b, i, k], which out may be (a step in place)
                v = x + coef * (acc[k] / cnt - x)
                if store:
                    out[b, i, k] = v
                mv = max(mv, abs(v - x))
                sc = max(sc, abs(x))
            leader[b, i] = self_in and cnt == 1
            if causal and layer >= 0:  # M_k over the keys 0..ii: a running maximum (the queries come in order)
                for k in range(d):
                    big[k] = max(big[k], abs(keys[k, ii]))
            if layer >= 0 and leader[b, i] and not book[7][b, i]:
                if big[0] < 0.0:  # M_k, the largest coordinates of the real tokens (once per sequence)
                    for k in range(d):
                        big[k] = _absmax(keys[k], keys[k], m)
                leader[b, i] = _certify_dense(b, i, ii, s, mr, keys, A, identity, big, layer, book)
    moved[b] = mv
    scale[b] = sc


@njit(cache=True)
def _certify_dense(b, i, ii, s, m, keys, A, identity, big, layer, book):  # pragma: no cover - compiled
    """Certify token (b, i) (position ii among the real tokens, scores s[:m]; its coordinates keys[:d, ii], d the
    length of big: keys may hold padded coordinates past d, :func:`padded`) as :func:`_certify_one`."""
    d = big.shape[0]
    lanes = np.empty(8)
    rival = max(_rowmax(s[:ii], ii, lanes), _rowmax(s[ii + 1 :], m - ii - 1, lanes))
    t = 0.0
    span = 0.0
    for k in range(d):
        if identity:
            a = abs(keys[k, ii])
        else:
            a = 0.0
            for l in range(d):
                a += abs(A[k, l]) * abs(keys[l, ii])
        t += a * (abs(keys[k, ii]) + big[k])
        span += abs(keys[k, ii]) + big[k]
    return _certify_one(b, i, s[ii] - rival, t, span, layer, book)


def _dense_loop(parallel: bool) -> Callable[..., None]:
    """The compiled loop of :func:`_dense_one` over the sequences, on numba's threads (``prange``) when ``parallel``.

    Each variant closes over its own loop, ``range`` or ``prange``, so that numba's on-disk cache (keyed by
    bytecode and closure, not by compile options) gives each build an entry of its own (as in
    :func:`attndyn.margins._pair_loop`).
    """
    loop = prange if parallel else range

    @njit(parallel=parallel, cache=True)
    def dense(
        z, A, identity, mask, coef, tol, out, leader, follow, record_follow, moved, scale, layer, book, causal
    ):  # pragma: no cover - compiled
        for b in loop(z.shape[0]):
            _dense_one(
                b,
                z,
                A,
                identity,
                mask,
                coef,
                tol,
                out,
                leader,
                follow,
                record_follow,
                moved,
                scale,
                layer,
                book,
                causal,
            )

    return dense


_dense_serial = _dense_loop(parallel=False)
_dense_parallel = _dense_loop(parallel=True)


@njit(cache=True, fastmath={"nnan", "nsz"})
def _extents_of(lo, hi, z, mask, big, small):  # pragma: no cover - compiled
    """:func:`token_extents` for sequences lo..hi-1."""
    n, d = z.shape[1], z.shape[2]
    hi_row = np.empty(n + 8)
    lo_row = np.empty(n + 8)
    for b in range(lo, hi):
        zb, mb = z[b], mask[b]
        if d == 2:  # the planar case with both coordinates in one step (the loop vectorises; 3x the general one)
            for i in range(n):
                x, y = abs(zb[i, 0]), abs(zb[i, 1])
                e = x if x > y else y
                hi_row[i] = e if mb[i] else 0.0
        else:
            for i in range(n):
                e = 0.0
                for k in range(d):
                    e = max(e, abs(zb[i, k]))
                hi_row[i] = e if mb[i] else 0.0
        for i in range(n):
            e = hi_row[i]
            lo_row[i] = -e if e > 0.0 else -np.inf  # the smallest nonzero norm is -max(-norm)
        big[b] = max(_fold_max(hi_row, n), 0.0)
        small[b] = -_fold_max(lo_row, n)


def token_extents(z: np.ndarray, mask: np.ndarray, big: np.ndarray, small: np.ndarray, blocks: int) -> None:
    r"""Per sequence of z (B, n, d), over its real tokens (mask (B, n)): the largest and the smallest nonzero
    max-norm :math:`\max_k |z_{ik}|` into big and small (B,) (0 and inf when there are none); one pass, no
    temporary (what :func:`attndyn._hardmax.check_dynamic_range` reads), the sequences shared by numba's threads
    in ``blocks`` blocks (a maximum and a minimum do not depend on the order). (The norms go through a row of
    scratch, a vectorised map, and are folded in eight lanes, see :func:`_fold_max`.)"""
    if blocks == 1:  # no parallel region (nor its compiling) for one thread
        _extents_of(0, z.shape[0], z, mask, big, small)
    else:
        with PARALLEL_REGION:
            _extents_parallel(z, mask, big, small, blocks)


@njit(parallel=True, cache=True)
def _extents_parallel(z, mask, big, small, blocks):  # pragma: no cover - compiled
    """:func:`token_extents` on numba's threads, the sequences in ``blocks`` blocks."""
    B = z.shape[0]
    size = (B + blocks - 1) // blocks
    for j in prange(blocks):
        _extents_of(j * size, min(B, (j + 1) * size), z, mask, big, small)


# Threads pay off once a layer has this much work (tokens x candidates-or-tokens, see threads_for).
PARALLEL_MIN_WORK = 1 << 20


def threads_for(B: int, n: int, d: int, *, dense: bool = False) -> int:
    """Threads for one layer of a (B, n, d) batch: 1 for small problems, else numba's thread count.

    Waking the worker threads and splitting the batch has a fixed cost, far larger when the cores
    are busy with other work (docs/benchmarks.md, "Threads"), while a layer costs about ``B * n * c``
    simple operations, with ``c`` about 16 candidates for d = 2 and ``n * d`` for other d (and for d = 2 on the
    dense kernel, ``dense``: a causal run). Below
    ``PARALLEL_MIN_WORK`` one thread is faster; above it every thread is used.
    There is never more than one thread per sequence.

    >>> threads_for(1, 40, 2), threads_for(3000, 128, 2) == min(3000, numba.get_num_threads())
    (1, True)
    """
    work = B * n * (16 if d == 2 and not dense else n * d)
    if work < PARALLEL_MIN_WORK:
        return 1
    return max(1, min(B, numba.get_num_threads()))


def _no_book() -> tuple:
    """A book that certifies nothing (``layer = -1``): the kernels' argument types stay fixed."""
    one = np.zeros((1, 1))
    ints = np.zeros((1, 1), np.int64)
    return (
        ints,
        one,
        ints,
        one,
        one,
        np.zeros(1, np.int64),
        np.ones(1),
        np.ones((1, 1), np.bool_),
        np.zeros(1, np.bool_),
    )


def _no_store(z: np.ndarray) -> np.ndarray:
    """The kernels' ``out`` when the new tokens are not stored: (1, 0, d), of z's type (their signature stays)."""
    return np.empty((1, 0, z.shape[2]), dtype=z.dtype)


def hardmax_layer_dense(
    z, A, mask, coef, tol, out, leader, follow, record_follow, moved, scale, layer=-1, book=None, causal=False
):
    r"""One layer of eq. (1.1) for a (B, n, d) batch, any d; same outputs as
    :func:`attndyn._planar_run.hardmax_layer_2d`.

    ``causal``: token i attends to the real tokens :math:`j \le i` only (any d, planar included)."""
    book = _no_book() if book is None else book
    out = _no_store(z) if out is None else out
    identity = bool(np.array_equal(A, np.eye(A.shape[0])))
    causal = bool(causal)
    args = (z, A, identity, mask, coef, tol, out, leader, follow, record_follow, moved, scale, layer, book, causal)
    if threads_for(*z.shape, dense=True) > 1:
        with PARALLEL_REGION:
            _dense_parallel(*args)
    else:
        _dense_serial(*args)
