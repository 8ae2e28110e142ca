r"""A whole planar hardmax run in one compiled call: each sequence carried through every layer while it is in cache.

A run of eq. (1.1) of the hardmax paper layer by layer (:func:`attndyn._kernels.hardmax_layer_2d` once per layer)
reads every sequence from memory and writes it back at each layer, and returns to Python between layers. The
sequences of a batch are independent, so when nothing outside the kernel needs a state before the run ends (no
stop test, no follow sets) :func:`hardmax_run_2d` takes one sequence at a time through all its layers in scratch
rows: the same phase functions on the same numbers (a token stored and loaded again is the same double), so every
output is the layer-by-layer run's, bit for bit — the kept states, the certified leaders of the kept layers, each
layer's movement and scale, the leader book and its events decided by rounding, in the order a layer-by-layer run
records them. Sequences are shared by numba's threads in blocks taken one at a time (:mod:`attndyn._share`), one
parallel region for the whole run.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from . import _kernels as K
from ._share import BLOCKS_PER_THREAD, next_block

#: Events decided by rounding a block of sequences may record before the caller falls back to the
#: layer-by-layer run (events are rare: a token whose only follower is itself by a margin within rounding).
EVENTS_PER_SEQUENCE = 4


@njit(cache=True, inline="always")
def _keep_state(yb, zb, mb, real, m, xr, yr):  # pragma: no cover - compiled
    """A kept state of one sequence into yb (n, 2): its real tokens from xr, yr, its padding as given (zb)."""
    n = yb.shape[0]
    if m == n:
        for k in range(n):
            yb[k, 0] = xr[k]
            yb[k, 1] = yr[k]
        return
    for i in range(n):
        if not mb[i]:
            yb[i, 0], yb[i, 1] = zb[i, 0], zb[i, 1]
    for k in range(m):
        yb[real[k], 0] = xr[k]
        yb[real[k], 1] = yr[k]


@njit(cache=True, inline="always")
def _drain_events(b, layer, book, log_i, log_f, at, cap):  # pragma: no cover - compiled
    """Move sequence b's events of this layer from the book's rows into the log (from entry ``at``, below ``cap``),
    in token order, as :meth:`attndyn.margins.LeaderBook.collect` reads them; returns the next free entry (cap + 1
    once the log is full)."""
    ev_layer, ev_mu, ev_bound, nev = book[2], book[3], book[4], book[5]
    if nev[b] == 0:
        return at
    for i in range(ev_layer.shape[1]):
        if ev_layer[b, i] == layer + 1:
            if at >= cap:
                return cap + 1
            log_i[at, 0], log_i[at, 1], log_i[at, 2] = b, i, layer
            log_f[at, 0], log_f[at, 1] = ev_mu[b, i], ev_bound[b, i]
            at += 1
    nev[b] = 0
    return at


@njit(cache=True, inline="always")
def _next_state(xr, yr, w0, w1, ox, oy, m, a):  # pragma: no cover - compiled
    """Z^{k+1} into the scratch rows: the moved tokens and w = A z as :func:`attndyn._kernels._put_planar` rounds it."""
    for k in range(m):
        x, y = ox[k], oy[k]
        xr[k] = x
        yr[k] = y
        w0[k] = a[0] * x + a[1] * y
        w1[k] = a[2] * x + a[3] * y


@njit(cache=True)
def _run_seqs(lo, hi, z, A, mask, coef, tol, slots, ys, lead, moved, scale, book, log, at, cap):  # pragma: no cover
    """Every layer of sequences lo..hi-1 (see :func:`hardmax_run_2d`); returns the next free entry of the event log.
    The polygon one layer hands the next (:func:`attndyn._kernels.planar_memo`) is one row, the sequence's own."""
    n = z.shape[1]
    memo = (np.zeros((1, 9), dtype=np.int64), np.empty((1, 40)))  # as K.planar_memo(1) makes it
    last = slots.shape[0] - 1
    (real, cand, arg, cnt, pack), (xr, yr, w0, w1, best, cx, cy, ox, oy), nrm = K._planar_scratch(n)
    lb = np.empty(n, dtype=np.bool_)
    no_tokens = np.empty((0, 2))
    follow = np.zeros((1, 1, 1), dtype=np.bool_)
    a = (A[0, 0], A[0, 1], A[1, 0], A[1, 1])
    known = book[7]
    log_i, log_f = log
    for b in range(lo, hi):
        K._fill_book_rows(b, book)
        memo[0][0, 8] = 0  # no polygon yet
        m = K._load_planar(z[b], mask[b], A, real, xr, yr, w0, w1)
        for k in range(last + 1):
            s = slots[k]
            if s >= 0:
                _keep_state(ys[s, b], z[b], mask[b], real, m, xr, yr)
            row = lead[s, b] if s >= 0 else lb  # (written at the real tokens only)
            nc, sc = K._planar_candidates(0, xr, yr, m, tol == 0.0, memo, arg, nrm, cand, cx, cy)
            K._score_planar(w0, w1, m, cx, cy, nc, best, pack)
            nfix = K._move_planar(xr, yr, w0, w1, m, sc, coef, cx, cy, cand, pack, cnt, arg, ox, oy)
            if nfix > 0 or tol > 0.0:
                for q in range(m):  # ties, and queries whose rounding is not relative
                    g = (abs(w0[q]) + abs(w1[q])) * sc
                    if tol > 0.0 or cnt[q] != 1 or not (K.SCORE_MIN <= g <= K.SCORE_MAX):
                        seen = (w0, w1, xr, yr, m, sc, cand, nc, best, cnt, arg, ox, oy)
                        K._planar_fix(q, b, seen, coef, tol, real, follow, False)
            moved[k, b] = K._maxdiff(ox, oy, xr, yr, m, best)
            K._store_planar(no_tokens, row, real, m, ox, oy, cnt, arg)
            scale[k, b] = sc
            if K._any_new(row, known[b], real, m):
                K._certify_planar(b, row, real, cand, nc, m, xr, yr, w0, w1, A, k, book, known, best)
                at = _drain_events(b, k, book, log_i, log_f, at, cap)
            if k < last:
                _next_state(xr, yr, w0, w1, ox, oy, m, a)
    return at


@njit(parallel=True, cache=True)
def _run_parallel(
    workers, blocks, z, A, mask, coef, tol, slots, ys, lead, moved, scale, book, log, counts
):  # pragma: no cover
    """The batch in ``blocks`` blocks of sequences, taken one at a time by ``workers`` threads
    (:func:`attndyn._share.next_block`); block j logs its events from entry j * per on."""
    B = z.shape[0]
    size = (B + blocks - 1) // blocks
    per = log[0].shape[0] // blocks
    counter = np.zeros(1, dtype=np.int64)
    for _ in prange(workers):
        j = next_block(counter)
        while j < blocks:
            lo, hi = j * size, min(B, (j + 1) * size)
            at = _run_seqs(
                lo, hi, z, A, mask, coef, tol, slots, ys, lead, moved, scale, book, log, j * per, (j + 1) * per
            )
            counts[j] = at - j * per
            j = next_block(counter)


def hardmax_run_2d(z, A, mask, coef, tol, slots, ys, lead, moved, scale, book):
    r"""Layers 0..K of eq. (1.1) for a (B, n, 2) float64 batch ``z``, every sequence carried through all its layers.

    ``slots`` (K + 1,) int64: where state k is kept in ``ys`` (T, B, n, 2) and its certified leaders in ``lead``
    (T, B, n) bool, -1 where it is not (``lead`` is written at the real tokens only: give it False, padding leads
    nobody); ``moved`` and ``scale`` (K + 1, B): each layer's largest coordinate change
    and largest coordinate (what :func:`attndyn._kernels.hardmax_layer_2d` returns per layer). ``book``: the run's
    :class:`attndyn.margins.LeaderBook` arrays (``kernel_arrays``), certified at every layer.

    Returns the events decided by rounding, ``(b, i, layer)`` rows (int64) and their ``(margin, bound)`` (float64),
    in the order a layer-by-layer run records them, or None when there were more than :data:`EVENTS_PER_SEQUENCE`
    per sequence of a block (then the book holds part of a run: the caller runs layer by layer on a fresh book).
    """
    B, n = z.shape[0], z.shape[1]
    threads = K.threads_for(B, n * len(slots), 2)
    blocks = 1 if threads == 1 else min(B, BLOCKS_PER_THREAD * threads)
    size = (B + blocks - 1) // blocks
    per = EVENTS_PER_SEQUENCE * size + 1
    log = (np.empty((blocks * per, 3), dtype=np.int64), np.empty((blocks * per, 2)))
    counts = np.zeros(blocks, dtype=np.int64)
    args = (z, A, mask, coef, tol, slots, ys, lead, moved, scale, book, log)
    if threads == 1:  # the same call as one worker's single block, without the parallel region (nor its compiling)
        counts[0] = _run_seqs(0, B, *args, 0, per)
    else:
        _run_parallel(threads, blocks, *args, counts)
    if (counts > per).any():
        return None
    rows = np.concatenate([np.arange(j * per, j * per + c) for j, c in enumerate(counts)]).astype(np.int64)
    at, mb = log[0][rows], log[1][rows]
    order = np.lexsort((at[:, 1], at[:, 0], at[:, 2]))  # by layer, then sequence, then token
    return at[order], mb[order]
