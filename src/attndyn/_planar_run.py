r"""The planar hardmax kernel (d = 2): one compiled function for a layer at a time and for a whole run.

:func:`hardmax_layer_2d` runs one layer of eq. (1.1) of the hardmax paper over a batch: a run that reads its states
between layers (a stop test, follow sets) calls it once per layer, and each call reads every sequence from memory
and writes it back. The sequences of a batch are independent, so when nothing outside the kernel needs a state
before the run ends, :func:`hardmax_run_2d` takes one sequence at a time through all its layers in scratch rows:
the same phase functions (:mod:`attndyn._kernels`) on the same numbers (a token stored and loaded again is the
same double), so every output is the layer-by-layer run's, bit for bit — the kept states, the certified leaders of
the kept layers, each layer's movement and scale, the leader book and its events decided by rounding, in the order
a layer-by-layer run records them. Both are :func:`_run_seqs`, with one argument type each, so that numba compiles
the kernel once for both (a variant costs its first call on a machine tens of seconds). Sequences are shared by
threads in blocks taken one at a time (:mod:`attndyn._share`): the caller's and helper threads, each running the
one compiled function.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit

from . import _jit_cache  # noqa: F401  (first: the locator of each cached kernel defined below)
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


@njit(cache=True, inline="always")
def _padding(row, ob, zb, mb):  # pragma: no cover - compiled
    """A sequence's padding, which stays and leads nobody: False into its flags row, its tokens (zb) into ob
    (when ob has rows: the new tokens are stored)."""
    for i in range(zb.shape[0]):
        if not mb[i]:
            row[i] = False
            if ob.shape[0] != 0:
                ob[i, 0], ob[i, 1] = zb[i, 0], zb[i, 1]


@njit(cache=True)
def _run_seqs(
    lo, hi, z, A, mask, coef, tol, first, kept, follow, record_follow, book, memo, log, at, cap
):  # pragma: no cover
    """Layers ``first``, ``first + 1``, ... of sequences lo..hi-1, one per entry of ``kept[0]`` (see
    :func:`hardmax_run_2d` and :func:`hardmax_layer_2d`); returns the next free entry of the event log.

    ``kept = (slots, ys, lead, out, moved, scale)``: states into ``ys`` (no rows: none kept), the new tokens of
    the last layer into ``out`` (no rows: not stored). A book certifies when ``first >= 0``; its events go into
    ``log`` (none when the log has no rows: they stay in the book's rows). ``memo`` with no rows: the polygon one
    layer hands the next (:func:`attndyn._kernels.planar_memo`) is one row, the sequence's own. (One call for a
    block of sequences, and the phase functions inlined: a call per sequence, with its array arguments, costs as
    much as loading the sequence's tokens.)"""
    n = z.shape[1]
    slots, ys, lead, out, moved, scale = kept
    last = slots.shape[0] - 1
    own = memo[0].shape[0] == 0
    if own:
        memo = (np.zeros((1, 9), dtype=np.int64), np.empty((1, 40)))  # as K.planar_memo(1) makes it
    (real, cand, arg, cnt, pack), (xr, yr, w0, w1, best, cx, cy, ox, oy), nrm = K._planar_scratch(n)
    lb = np.empty(n, dtype=np.bool_)
    no_tokens = np.empty((0, 2))
    a = (A[0, 0], A[0, 1], A[1, 0], A[1, 1])
    known = book[7]
    for b in range(lo, hi):
        r = 0 if own else b  # the sequence's polygon
        if own:
            memo[0][0, 8] = 0  # none yet
        if first >= 0:
            K._fill_book_rows(b, book)
        m = K._load_planar(z[b], mask[b], A, real, xr, yr, w0, w1)
        for k in range(last + 1):
            s = slots[k]
            if s >= 0 and ys.shape[1] != 0:
                _keep_state(ys[s, b], z[b], mask[b], real, m, xr, yr)
            row = lead[s, b] if s >= 0 else lb  # (written at the real tokens, and at the padding when kept)
            ob = out[b] if k == last and out.shape[1] != 0 else no_tokens
            if m < n and (s >= 0 or ob.shape[0] != 0):
                _padding(row, ob, z[b], mask[b])
            nc, sc = K._planar_candidates(r, xr, yr, m, tol == 0.0, memo, arg, nrm, cand, cx, cy)
            K._score_planar(w0, w1, m, cx, cy, nc, best, pack)
            nfix = K._move_planar(xr, yr, w0, w1, m, sc, coef, cx, cy, cand, pack, cnt, arg, ox, oy)
            if nfix > 0 or tol > 0.0 or record_follow:
                for q in range(m):  # ties, queries whose rounding is not relative, follow sets (see K._planar_fix)
                    g = (abs(w0[q]) + abs(w1[q])) * sc
                    if tol > 0.0 or record_follow or cnt[q] != 1 or not (K.SCORE_MIN <= g <= K.SCORE_MAX):
                        # (m and nc as int64: numba's typing passes through Literal[int](0) for both, and
                        # compiled _planar_fix for that too, about 2 s of a first run)
                        seen = (w0, w1, xr, yr, np.int64(m), sc, cand, np.int64(nc), best, cnt, arg, ox, oy)
                        K._planar_fix(q, b, seen, coef, tol, real, follow, record_follow)
            moved[k, b] = K._maxdiff(ox, oy, xr, yr, m, best)  # best is free from here on
            K._store_planar(ob, row, real, m, ox, oy, cnt, arg)
            scale[k, b] = sc
            if first >= 0 and K._any_new(row, known[b], real, m):
                K._certify_planar(b, row, real, cand, nc, m, xr, yr, w0, w1, A, first + k, book, known, best)
                if log[0].shape[0] != 0:
                    at = _drain_events(b, first + k, book, log[0], log[1], at, cap)
            if k < last:
                _next_state(xr, yr, w0, w1, ox, oy, m, a)
    return at


@njit(cache=True, nogil=True)
def _run_blocks(
    counter, blocks, z, A, mask, coef, tol, first, kept, follow, record_follow, book, memo, log, counts
):  # pragma: no cover
    """The batch in ``blocks`` blocks of sequences: this worker takes the next one from ``counter``
    (:func:`attndyn._share.next_block`) until none is left, and block j logs its events from entry j * per on,
    ``counts[j]`` of them. Every thread of a run calls this function, without the GIL."""
    B = z.shape[0]
    size = (B + blocks - 1) // blocks
    per = log[0].shape[0] // blocks
    j = next_block(counter)
    while j < blocks:
        lo, hi, at = j * size, min(B, (j + 1) * size), j * per
        counts[j] = (
            _run_seqs(lo, hi, z, A, mask, coef, tol, first, kept, follow, record_follow, book, memo, log, at, at + per)
            - at
        )
        j = next_block(counter)


#: The threads beyond the caller's that run :func:`_run_blocks` (made on first use, and again in a forked child).
_helpers: tuple[int, ThreadPoolExecutor] | None = None
_making = threading.Lock()  # (two threads of a program starting their first runs at once make one pool)


def _helper_threads() -> ThreadPoolExecutor:
    global _helpers
    with _making:
        if _helpers is None or _helpers[0] != os.getpid():
            most = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]  # set at import by numba
            pool = ThreadPoolExecutor(max(1, most - 1), thread_name_prefix="attndyn-planar")  # (at most numba's)
            _helpers = (os.getpid(), pool)
        return _helpers[1]


def _run(threads, events, z, A, mask, coef, tol, first, kept, follow, record_follow, book, memo):
    """Run :func:`_run_seqs` over the batch on ``threads`` threads, with a log holding ``events`` events per sequence
    of a block and one more (None: no log, the events stay in the book's rows); returns the log, each block's count
    and the entries each block has.

    On more than one thread, the calling thread and ``threads - 1`` helper threads each run :func:`_run_blocks`
    (a numba parallel region in its place compiled for about 50 s on a machine's first run, re-optimising the
    kernel it calls; this function compiles in about 5 s once :func:`_run_seqs` is)."""
    B = z.shape[0]
    blocks = 1 if threads == 1 else min(B, BLOCKS_PER_THREAD * threads)
    size = (B + blocks - 1) // blocks
    per = 0 if events is None else events * size + 1
    log = (np.empty((blocks * per, 3), dtype=np.int64), np.empty((blocks * per, 2)))
    counts = np.zeros(blocks, dtype=np.int64)
    args = (z, A, mask, coef, tol, first, kept, follow, record_follow, book, memo, log)
    if threads == 1:  # one block: the blocks' function itself (no loop over blocks to compile on a first small run)
        counts[0] = _run_seqs(0, B, *args, 0, per)
        return log, counts, per
    counter = np.zeros(1, dtype=np.int64)
    helping = [_helper_threads().submit(_run_blocks, counter, blocks, *args, counts) for _ in range(threads - 1)]
    _run_blocks(counter, blocks, *args, counts)
    for h in helping:
        h.result()
    return log, counts, per


def hardmax_run_2d(z, A, mask, coef, tol, slots, ys, lead, moved, scale, book):
    r"""Layers 0..K of eq. (1.1) for a (B, n, 2) float64 batch ``z``, every sequence carried through all its layers.

    ``slots`` (K + 1,) int64: where state k is kept in ``ys`` (T, B, n, 2) and its certified leaders in ``lead``
    (T, B, n) bool, -1 where it is not; ``moved`` and ``scale`` (K + 1, B): each layer's largest coordinate change
    and largest coordinate (what :func:`hardmax_layer_2d` returns per layer). ``book``: the run's
    :class:`attndyn.margins.LeaderBook` arrays (``kernel_arrays``), certified at every layer.

    Returns the events decided by rounding, ``(b, i, layer)`` rows (int64) and their ``(margin, bound)`` (float64),
    in the order a layer-by-layer run records them, or None when there were more than :data:`EVENTS_PER_SEQUENCE`
    per sequence of a block (then the book holds part of a run: the caller runs layer by layer on a fresh book).
    """
    B, n = z.shape[0], z.shape[1]
    threads = K.threads_for(B, n * len(slots), 2)
    kept = (slots, ys, lead, K._no_store(z), moved, scale)
    follow, own = np.zeros((1, 1, 1), dtype=np.bool_), K.planar_memo(0)  # no follow sets; each sequence's polygon
    log, counts, per = _run(threads, EVENTS_PER_SEQUENCE, z, A, mask, coef, tol, 0, kept, follow, False, book, own)
    if (counts > per).any():
        return None
    rows = np.concatenate([np.arange(j * per, j * per + c) for j, c in enumerate(counts)]).astype(np.int64)
    at, mb = log[0][rows], log[1][rows]
    order = np.lexsort((at[:, 1], at[:, 0], at[:, 2]))  # by layer, then sequence, then token
    return at[order], mb[order]


def hardmax_layer_2d(
    z, A, mask, coef, tol, out, leader, follow, record_follow, moved, scale, layer=-1, book=None, memo=None
):
    r"""One layer of eq. (1.1) for a (B, n, 2) batch.

    Writes out (B, n, 2), leader (B, n), follow (B, n, n) when record_follow, and per sequence
    the largest coordinate change ``moved`` (B,) and largest coordinate ``scale`` (B,). ``out`` may be ``z``
    itself (a step in place: each sequence is read whole before it is written), or None when the new tokens
    are not wanted (a run's last layer, whose leaders, movement and scale are all it reads).

    With ``layer >= 0``, ``leader`` holds the *certified* leaders of that layer and ``book`` is
    the run's record ``(since, margin, ev_layer, ev_mu, ev_bound, nev, g, known, unfilled)`` (see
    :class:`attndyn.margins.LeaderBook`): a token flagged :math:`C_i = \{i\}` for the first time
    gets its margin over every other real token and leads from this layer on when the margin
    beats ``g[0]`` times :math:`(|A||z_i|)\cdot(|z_i| + M)` plus ``g[1]`` times :math:`\sum_k(|z_{ik}| + M_k) + 3`,
    else the event is recorded (``ev_layer[b, i] = layer + 1``, ``ev_mu``, ``ev_bound``, ``nev[b] += 1``) and it
    does not lead.

    ``memo`` (:func:`attndyn._kernels.planar_memo`, one per run): each sequence's inscribed polygon, kept from one
    layer to the next and used again while its vertices (mostly leaders, which do not move) have not moved. The
    polygon only spares the scores of tokens deep inside it: the outputs are the same bits with or without a memo.

    It is the whole run's kernel on one layer (:func:`_run_seqs`, one compiled function for both): the state is
    not kept, the new tokens go to ``out`` and the events stay in the book's rows.
    """
    book = K._no_book() if book is None else book
    out = K._no_store(z) if out is None else out
    memo = K.planar_memo(z.shape[0]) if memo is None else memo
    B, n = z.shape[0], z.shape[1]
    kept = (np.zeros(1, dtype=np.int64), np.empty((1, 0, 1, 2)), leader[None], out, moved[None], scale[None])
    _run(K.threads_for(B, n, 2), None, z, A, mask, coef, tol, layer, kept, follow, record_follow, book, memo)
