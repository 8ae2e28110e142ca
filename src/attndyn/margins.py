r"""Leader margins and the rounding bound that makes a leader real (hardmax paper, Definition 1.1).

Token i *leads* at layer k when :math:`C_i(Z^k) = \{i\}` (Definition 1.1), i.e. when its
strict margin

.. math::

    \mu_i = \min_{j \ne i} \langle A z_i, z_i - z_j \rangle

is positive. In floating point the engine compares *rounded* scores
:math:`\hat s_{ij} = \mathrm{fl}(\langle A z_i, z_j\rangle)`, and once a follower
:math:`z_j = s + e` has converged onto its leader s to within the last bits, the sign of
:math:`\langle A z_j, z_j - s\rangle = \langle A s, e\rangle + \langle A e, e\rangle` is decided by
rounding: in exact arithmetic the first term (order :math:`|e|`, negative, since s leads z_j's
query) dominates and z_j never leads, but its size is then that of the rounding error itself.
Such "phantom" leaders are not reported.

**The bound.** For a query i and a key j, whatever the order of the sums (plain loops, BLAS,
fused multiply-adds), the computed :math:`\hat q = \mathrm{fl}(A z_i)` and
:math:`\hat s_{ij} = \mathrm{fl}(\hat q\cdot z_j)` satisfy (Higham, *Accuracy and Stability of
Numerical Algorithms*, eqs. (3.4)-(3.5))

.. math::

    |\hat s_{ij} - \langle A z_i, z_j\rangle| \le \gamma_{2d}\,(|A|\,|z_i|)\cdot|z_j|,
    \qquad \gamma_m = \frac{m u}{1 - m u},

with u the unit roundoff of the dtype (:math:`2^{-53}` in float64, :math:`2^{-24}` in float32).
The computed margin :math:`\hat\mu_{ij} = \mathrm{fl}(\hat s_{ii} - \hat s_{ij})` adds one more
rounding, so :math:`\hat\mu_{ij} > (1+u)(E_{ii} + E_{ij})` proves :math:`\mu_{ij} > 0` for the
positions the run holds. We use the bound

.. math::

    b_i = 2\,\gamma_{2d+1}\,(|A|\,|z_i|)\cdot(|z_i| + M),\qquad M_k = \max_{j\ \mathrm{real}} |z_{jk}|,

which covers every j at once; the factor 2 absorbs the rounding of :math:`b_i`'s own evaluation. Where the scores
reach the subnormal range, products also round with an absolute error, which :func:`underflow_term` adds
(:math:`2d\eta(\sum_k(|z_{ik}| + M_k) + 3)`, :math:`\eta = 2^{-1074}` in float64: nothing unless scores underflow).
A token flagged as a leader by the engine is reported as one only when
:math:`\hat\mu_i = \min_{j\ne i}\hat\mu_{ij} > b_i`; otherwise the event is recorded as
*decided by rounding* (:attr:`attndyn.analysis.LeaderSet.rounding`). Under a causal mask (token i
attends to :math:`j \le i` only) the margin is taken over the real :math:`j < i` and M over the real
:math:`j \le i`: the keys the query compares; token 0 has no competitor, margin :math:`+\infty`. The dynamics themselves
are untouched: only the bookkeeping of who leads changes. A genuine leader has a margin of the
order of the spread of the tokens times :math:`|A z_i|`, some :math:`10^{15}` times the bound.

>>> import torch
>>> z = torch.tensor([[[2.0, 0.0], [0.0, 1.0], [1.0, 1e-17]]], dtype=torch.float64)
>>> margin, bound = leader_margins(z, None, None, torch.tensor([0, 0]), torch.tensor([0, 2]))
>>> margin.tolist(), bool(margin[0] > bound[0]), bool(margin[1] > bound[1])
([2.0, -1.0], True, False)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numba
import numpy as np
import torch
from numba import njit, prange
from torch import Tensor

from . import _jit_cache, _pages  # noqa: F401  (_jit_cache first: the locator of each cached kernel below)
from ._share import PARALLEL_REGION
from .attention import chunk_entries

__all__ = ["unit_roundoff", "gamma", "underflow_term", "leader_margins", "LeaderBook"]

# numba's OpenMP layer slows torch's small kernels afterwards (see attndyn._kernels).
if "NUMBA_THREADING_LAYER" not in os.environ:
    numba.config.THREADING_LAYER = "workqueue"  # type: ignore[attr-defined]  # set at import by numba

# Pairs above which the compiled loop runs in parallel.
_PARALLEL_PAIRS = 4096


def unit_roundoff(dtype: torch.dtype) -> float:
    """u = eps / 2: the largest relative error of one rounding in ``dtype``."""
    return torch.finfo(dtype).eps / 2


def gamma(m: int, dtype: torch.dtype) -> float:
    r""":math:`\gamma_m = m u / (1 - m u)`, the relative error bound of m successive roundings."""
    mu = m * unit_roundoff(dtype)
    return mu / (1.0 - mu)


def underflow_term(d: int, dtype: torch.dtype) -> float:
    r"""The coefficient :math:`c_d = 2 d\,\eta` of the bound's underflow term :math:`c_d(\sum_k (|z_{ik}| + M_k) + 3)`,
    :math:`\eta` the smallest subnormal number of the dtype (:math:`2^{-1074}` in float64): with gradual underflow a
    product rounds with an absolute error of at most :math:`\eta/2` besides its relative one, so the d products of
    each entry of :math:`A z_i`, carried through the scores, and the d products of a score add at most
    :math:`\frac{d\eta}{2}(\sum_k |z_{ik}| + \sum_k |z_{jk}| + 2)` to a margin (doubled, and 3 for 2, for the
    rounding of the term itself). Zero unless the scores reach the subnormal range: an A whose entries span 1e292
    otherwise "proved" exact ties to be leaders by a margin of one subnormal."""
    fi = torch.finfo(dtype)
    return 2.0 * d * fi.tiny * fi.eps


def leader_margins(
    z: Tensor, A: Tensor | None, mask: Tensor | None, b: Tensor, i: Tensor, *, causal: bool = False
) -> tuple[Tensor, Tensor]:
    r"""Computed strict margins :math:`\hat\mu_i` and rounding bounds :math:`b_i` of tokens ``(b, i)``.

    ``z`` (B, n, d) tokens, ``A`` (d, d) or None (identity), ``mask`` (B, n) real tokens or None,
    ``b`` and ``i`` (P,) the sequence and token of each query. Returns two (P,) tensors on the CPU
    in ``z``'s dtype: the margin (``inf`` for a token with no real competitor) and the bound; the
    token leads for sure when margin > bound (see the module docstring for the proof). ``causal``: the
    competitors are the real :math:`j < i`, and M is taken over the real :math:`j \le i`.
    """
    z = z.detach()
    B, n, d = z.shape
    if z.device.type == "cpu" and z.dtype == torch.float64 and b.numel() > 0:
        return _compiled(z, A, mask, b, i, causal)
    b = b.to(z.device)
    i = i.to(z.device)
    absz = z.abs()
    if mask is not None:
        mask = mask.to(z.device)
        absz = absz.masked_fill(~mask[..., None], 0.0)
    # M: the largest coordinates of the real tokens, (B, 1, d); of the real tokens j <= i, (B, n, d), when causal
    M = absz.cummax(dim=1).values if causal else absz.amax(dim=1, keepdim=True)
    absA = None if A is None else A.detach().abs()
    g, g1 = 2.0 * gamma(2 * d + 1, z.dtype), underflow_term(d, z.dtype)
    order = torch.argsort(b, stable=True)  # the pairs of a sequence side by side
    bs, is_ = b[order], i[order]
    seqs, counts = torch.unique_consecutive(bs, return_counts=True)
    mu = torch.empty(b.numel(), dtype=z.dtype, device=z.device)
    bound = torch.empty_like(mu)
    for pairs, group in _pair_groups(counts.tolist(), n, d, chunk_entries(z.device)):
        bb, ii = bs[pairs], is_[pairs]
        zi = z[bb, ii]  # (c, d) queries' tokens
        q = zi if A is None else zi @ A.detach().T  # (c, d) rows A z_i
        if group is None:  # a few queries per sequence: each one's keys gathered, (c, n) scores <A z_i, z_j>
            s = torch.bmm(z[bb], q[:, :, None])[..., 0]
        else:  # many: every score of each sequence by one product, the queries' rows taken from it
            zg = z[seqs[group]]
            qg = zg if A is None else zg @ A.detach().T
            local = torch.repeat_interleave(torch.arange(zg.shape[0], device=z.device), counts[group])
            s = torch.bmm(qg, zg.transpose(1, 2))[local, ii]
        own = (q * zi).sum(dim=-1)  # (c,) <A z_i, z_i>
        rival = s.clone()
        rival[torch.arange(bb.numel(), device=z.device), ii] = -torch.inf
        if mask is not None:
            rival = rival.masked_fill(~mask[bb], -torch.inf)
        if causal:
            rival = rival.masked_fill(torch.arange(n, device=z.device)[None, :] > ii[:, None], -torch.inf)
        mu[order[pairs]] = own - rival.amax(dim=-1)
        aq = zi.abs() if absA is None else zi.abs() @ absA.T  # (c, d) |A| |z_i|
        span = zi.abs() + M[bb, ii if causal else 0]  # (c, d) |z_i| + M
        bound[order[pairs]] = g * (aq * span).sum(dim=-1) + g1 * (span.sum(dim=-1) + 3.0)
    return mu.cpu(), bound.cpu()


def _pair_groups(counts: list[int], n: int, d: int, budget: int) -> Iterator[tuple[slice, slice | None]]:
    """The pairs of :func:`leader_margins`, sorted by sequence (``counts`` of each), in groups of at most ``budget``
    scores or gathered entries: ``(pairs, sequences)`` for runs of sequences asked about n/8 times or more (one
    n x n product each pays more than gathering their keys), ``(pairs, None)`` for the others (keys gathered)."""
    many = n * n <= budget
    per_product = max(1, budget // (n * n))
    per_gather = max(1, budget // (n * d))
    g = a = 0  # the next sequence and its first pair
    while g < len(counts):
        dense = many and counts[g] * 8 >= n
        h = g
        while h < len(counts) and (many and counts[h] * 8 >= n) == dense and (not dense or h - g < per_product):
            h += 1
        p = a + sum(counts[g:h])
        if dense:
            yield slice(a, p), slice(g, h)
        else:
            for lo in range(a, p, per_gather):
                yield slice(lo, min(p, lo + per_gather)), None
        g, a = h, p


def _compiled(
    z: Tensor, A: Tensor | None, mask: Tensor | None, b: Tensor, i: Tensor, causal: bool
) -> tuple[Tensor, Tensor]:
    """The same margins and bounds by a compiled loop over the pairs (CPU, float64): no gathered copies."""
    zn = z.numpy()
    B, n, d = zn.shape
    identity = A is None
    An = np.eye(d) if A is None else np.ascontiguousarray(A.detach().cpu().numpy(), dtype=np.float64)
    m = np.ones((B, n), dtype=np.bool_) if mask is None else mask.cpu().numpy()
    bb = b.cpu().numpy().astype(np.int64)
    ii = i.cpu().numpy().astype(np.int64)
    mu = np.empty(len(bb))
    bound = np.empty(len(bb))
    parallel = len(bb) >= _PARALLEL_PAIRS
    seqs = torch.unique(b.cpu())  # only the sequences asked about
    absz = z[seqs].abs()
    if mask is not None:
        absz = absz.masked_fill_(~mask.cpu()[seqs][..., None], 0.0)
    big = np.zeros((B, d))
    big[seqs.numpy()] = absz.amax(dim=1).numpy()  # (B, d): the largest coordinates of the real tokens
    g, g1 = 2.0 * gamma(2 * d + 1, torch.float64), underflow_term(d, torch.float64)
    args = (zn, An, identity, m, big, bb, ii, g, g1, causal, mu, bound)
    if parallel:
        with PARALLEL_REGION:
            _margins_parallel(*args)
    else:
        _margins_serial(*args)
    return torch.from_numpy(mu), torch.from_numpy(bound)


class LeaderBook:
    r"""A run's record of who leads: the first layer each token led (``since``, -1 if never), its
    margin then, and the events decided by rounding (``rounding``: ``(b, i, layer)`` rows and their
    ``(margin, bound)``).

    A token flagged :math:`C_i = \{i\}` by the engine is checked once, the first time: above the
    bound it leads from that layer on; within it, the event is recorded and it is checked again
    the next time it is flagged. The compiled kernels keep the book themselves
    (:meth:`kernel_arrays`, :meth:`collect`); other paths call :meth:`certify`.
    """

    def __init__(self, B: int, n: int, dtype: torch.dtype):
        # since (-1) and margin (NaN) start unwritten: the compiled kernels fill each sequence's rows when they
        # first reach it, next to where they certify (no cold rows at layer 0); other readers fill them at once.
        # Large ones are mapped here, on huge pages (attndyn._pages): the kernel's threads faulting 4 KiB pages in
        # side by side cost a two-thread run more than this one pass
        self._since = _pages.empty((B, n), torch.long)
        self._margin = _pages.empty((B, n), dtype)
        self._unfilled = np.ones(1, dtype=np.bool_)  # shared with the kernels (kernel_arrays)
        self.rounding: list[tuple[Tensor, Tensor]] = []
        self._kernel: tuple | None = None
        self._fresh = True  # no token certified yet

    @property
    def since(self) -> Tensor:
        """(B, n) the first layer each token led, -1 if never."""
        self._fill()
        return self._since

    @property
    def margin(self) -> Tensor:
        """(B, n) each leader's margin at the layer it first led, NaN for the others."""
        self._fill()
        return self._margin

    def _fill(self) -> None:
        if self._unfilled[0]:
            self._since.fill_(-1)
            self._margin.fill_(float("nan"))
            self._unfilled[0] = False

    def certify(
        self, z: Tensor, A: Tensor, mask: Tensor | None, flagged: Tensor, k: int, *, causal: bool = False
    ) -> Tensor:
        """The (B, n) leaders of layer k among the ``flagged`` tokens, by :func:`leader_margins`."""
        check = flagged & (self.since < 0)
        self._fresh = False
        if bool(check.any()):
            b, i = torch.nonzero(check, as_tuple=True)
            mu, bound = leader_margins(z, A, mask, b, i, causal=causal)
            ok = mu > bound
            self.since[b[ok], i[ok]] = k
            self.margin[b[ok], i[ok]] = mu[ok].to(self.margin.dtype)
            if self._kernel is not None:
                self._kernel[7][b[ok].numpy(), i[ok].numpy()] = True
            if not bool(ok.all()):
                bad = ~ok
                at = torch.stack([b[bad], i[bad], torch.full_like(b[bad], k)], dim=1)
                self.rounding.append((at, torch.stack([mu[bad], bound[bad]], dim=1).to(self.margin.dtype)))
        return flagged & (self.since >= 0)

    def kernel_arrays(self, d: int) -> tuple:
        """``(since, margin, ev_layer, ev_mu, ev_bound, nev, g, known, unfilled)`` for the float64 kernels (shared
        memory); while ``unfilled[0]``, a kernel fills each sequence's rows of since and margin before it writes
        them (:meth:`collect` then marks them filled)."""
        if self._kernel is None:
            B, n = self._since.shape
            ev = np.zeros((B, n), dtype=np.int64)  # 1 + the layer of the last event (calloc: untouched pages stay free)
            g = np.array([2.0 * gamma(2 * d + 1, torch.float64), underflow_term(d, torch.float64)])
            arrays = (self._since.numpy(), self._margin.numpy(), ev, np.empty((B, n)), np.empty((B, n)))
            # since >= 0, one byte a token: what the kernels read (all False while nothing was certified)
            known = _pages.zeros((B, n), torch.bool).numpy() if self._fresh else (self.since >= 0).numpy()
            self._kernel = (*arrays, np.zeros(B, dtype=np.int64), g, known, self._unfilled)
        return self._kernel

    def collect_run(self, at: np.ndarray, mb: np.ndarray) -> None:
        """After a kernel that ran every layer (:func:`attndyn._planar_run.hardmax_run_2d`): its events decided by
        rounding, ``(b, i, layer)`` rows and ``(margin, bound)``, in the order :meth:`collect` would have added
        them layer by layer."""
        assert self._kernel is not None  # kernel_arrays() came first
        self._unfilled[0] = False  # the kernel went through every sequence
        if len(at):
            self.rounding.append((torch.from_numpy(at), torch.from_numpy(mb)))

    def collect(self, k: int) -> None:
        """Move the rounding events a kernel recorded at layer k into :attr:`rounding`."""
        assert self._kernel is not None  # kernel_arrays() came first
        self._unfilled[0] = False  # the kernel went through every sequence
        ev, mu, bound, nev = self._kernel[2], self._kernel[3], self._kernel[4], self._kernel[5]
        seqs = np.flatnonzero(nev)
        if len(seqs):
            sb, i = np.nonzero(ev[seqs] == k + 1)
            b = seqs[sb]
            at = np.stack([b, i, np.full_like(b, k)], axis=1)
            self.rounding.append((torch.from_numpy(at), torch.from_numpy(np.stack([mu[b, i], bound[b, i]], axis=1))))
            nev[seqs] = 0


# Any order of the sums is covered by the bound, so the compiler may reassociate and fuse them.
_FAST = {"reassoc", "contract"}


class _Pairs(NamedTuple):
    """What :func:`_margin_one` reads (CPU, float64): the tokens, A, the real tokens and the pairs asked about."""

    z: np.ndarray  # (B, n, d) tokens
    A: np.ndarray  # (d, d); ignored when identity
    identity: bool  # A is None: the rows A z_i are z_i
    mask: np.ndarray  # (B, n) real tokens
    big: np.ndarray  # (B, d) M: the largest coordinates of the real tokens
    bb: np.ndarray  # (P,) the sequence of each query
    ii: np.ndarray  # (P,) the token of each query
    g: float  # 2 gamma_{2d+1}
    g1: float  # the underflow term's coefficient (underflow_term)
    causal: bool  # competitors j < i only, and M over the real j <= i


@njit(cache=True, fastmath=_FAST)
def _margin_one(p: int, pairs: _Pairs, mu: np.ndarray, bound: np.ndarray) -> None:  # pragma: no cover - compiled
    r"""Pair p's strict margin :math:`\hat\mu_i` into ``mu[p]``, its rounding bound :math:`b_i` into ``bound[p]``."""
    z, A, identity, mask, big, bb, ii, g, g1, causal = pairs
    b, i = bb[p], ii[p]
    d = z.shape[2]
    n = i if causal else z.shape[1]  # the competitors j < n
    q = np.empty(d)
    aq = np.empty(d)
    for k in range(d):
        if identity:
            q[k] = z[b, i, k]
            aq[k] = abs(z[b, i, k])
        else:
            v = 0.0
            w = 0.0
            for l in range(d):
                v += A[k, l] * z[b, i, l]
                w += abs(A[k, l]) * abs(z[b, i, l])
            q[k] = v
            aq[k] = w
    own = 0.0
    for k in range(d):
        own += q[k] * z[b, i, k]
    best = -np.inf
    if d == 2:  # the planar case, unrolled
        q0, q1 = q[0], q[1]
        for j in range(n):
            if j != i and mask[b, j]:
                best = max(best, q0 * z[b, j, 0] + q1 * z[b, j, 1])
    for j in range(n if d != 2 else 0):
        if j == i or not mask[b, j]:
            continue
        s = 0.0
        for k in range(d):
            s += q[k] * z[b, j, k]
        best = max(best, s)
    mu[p] = own - best
    t = 0.0
    span = 0.0
    for k in range(d):
        M = big[b, k]
        if causal:  # the largest |coordinate| of the real tokens j <= i
            M = abs(z[b, i, k])
            for j in range(i):
                M = max(M, abs(z[b, j, k])) if mask[b, j] else M
        t += aq[k] * (abs(z[b, i, k]) + M)
        span += abs(z[b, i, k]) + M
    bound[p] = g * t + g1 * (span + 3.0)


def _pair_loop(parallel: bool) -> Callable[..., None]:
    """The compiled loop of :func:`_margin_one` over the pairs, on numba's threads (``prange``) when ``parallel``.

    numba's on-disk cache keys a build by the function's bytecode and the values its closure holds, not by the
    options it was compiled with (numba issue #6845; ``Cache._index_key`` in ``numba/core/caching.py``): the same
    function compiled serial and parallel would share one cache entry and load the other's build. Each variant
    therefore closes over its own loop, ``range`` or ``prange``, and so has a cache entry of its own.
    """
    loop = prange if parallel else range

    @njit(parallel=parallel, cache=True)
    def margins(
        z: np.ndarray,
        A: np.ndarray,
        identity: bool,
        mask: np.ndarray,
        big: np.ndarray,
        bb: np.ndarray,
        ii: np.ndarray,
        g: float,
        g1: float,
        causal: bool,
        mu: np.ndarray,
        bound: np.ndarray,
    ) -> None:  # pragma: no cover - compiled
        pairs = _Pairs(z, A, identity, mask, big, bb, ii, g, g1, causal)
        for p in loop(bb.shape[0]):
            _margin_one(p, pairs, mu, bound)

    return margins


_margins_serial = _pair_loop(parallel=False)
_margins_parallel = _pair_loop(parallel=True)
