r"""Hardmax pure-attention dynamics (Alcalde, Fantuzzi & Zuazua 2024, eq. (1.1)).

.. math::

    C_i(Z) = \{ j : \langle A z_i, z_j\rangle = \max_l \langle A z_i, z_l\rangle \},\qquad
    z_i^{k+1} = z_i^k + \frac{\alpha}{1+\alpha}\,\frac{1}{|C_i(Z^k)|}\sum_{j\in C_i(Z^k)} (z_j^k - z_i^k).

The ``1/(1+alpha)`` factor is the normalization sublayer. With a causal mask (``causal=True``) token i attends to
the tokens :math:`j \le i` only: the maximum and :math:`C_i` are taken over them (and over the real tokens, with
padding; :func:`attndyn.attention.allowed`). :func:`hardmax_step` is one layer,
:class:`HardmaxAttention` is the dynamics object (A, alpha, tol, mask) whose ``step`` is that layer, and
:func:`hardmax` runs many with the loop both engines share (:mod:`attndyn._loop`) and records a
:class:`~attndyn._trajectory.HardmaxTrajectory`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
from torch import Tensor

from . import _pages, attention, margins
from ._budget import budget_active, check_matrix_memory, check_memory, kept_count
from ._errors import param
from ._loop import Run, check_options
from ._options import SaveAt, StopOnConvergence
from ._threads import limit_torch_threads, torch_threads_for
from ._trajectory import HardmaxParams, HardmaxTrajectory
from ._validation import (
    InputError,
    as_mask,
    as_matrix,
    as_tokens,
    check_bool,
    check_int,
    check_nonnegative,
    check_positive,
    is_spd,
    warn_hypothesis,
)

__all__ = ["hardmax", "hardmax_step", "HardmaxStep", "HardmaxAttention", "check_dynamic_range"]


class HardmaxStep(NamedTuple):
    """Result of one layer: the new tokens and what the layer saw."""

    tokens: Tensor  # (B, n, d) Z^{k+1}
    leader: Tensor  # (B, n) bool, C_i(Z^k) = {i}
    follow: Tensor | None  # (B, n, n) bool, j in C_i(Z^k); only when asked
    moved: Tensor  # (B,) max |Z^{k+1} - Z^k| per sequence
    scale: Tensor  # (B,) max |Z^k| per sequence
    certified: Tensor | None = None  # (B, n) bool, the leaders ``book`` certified at this layer


class _LayerSettings(NamedTuple):
    """What one layer is computed with, as :func:`hardmax_step` resolved it for :func:`_kernel_step` and
    :func:`_torch_step`."""

    A: Tensor  # (d, d), never None
    mask: Tensor | None  # (B, n) real tokens; None: all real
    coef: float  # alpha / (1 + alpha), the normalization sublayer
    tol: float
    record_follow: bool
    book: margins.LeaderBook | None
    layer: int  # the layer's index k, for the book
    causal: bool  # C_i over j <= i only
    memo: dict[str, Any] | None = None  # what the compiled kernels carry from one layer of a run to the next


def _use_kernel(z: Tensor, A: Tensor) -> bool:
    needs_grad = torch.is_grad_enabled() and (z.requires_grad or A.requires_grad)
    return z.device.type == "cpu" and not needs_grad and z.dtype == torch.float64


def hardmax_step(
    z: Tensor,
    *,
    alpha: float,
    A: Tensor | None = None,
    mask: Tensor | None = None,
    tol: float = 0.0,
    record_follow: bool = False,
    book: margins.LeaderBook | None = None,
    layer: int = 0,
    out: Tensor | None = None,
    causal: bool = False,
) -> HardmaxStep:
    r"""One layer of eq. (1.1) on a batch ``z`` of shape (B, n, d).

    Returns a :class:`HardmaxStep`: the new tokens; ``leader`` (B, n), True where
    :math:`C_i(Z)=\{i\}`; ``follow`` (B, n, n), the boolean follow relation when
    ``record_follow`` (else None); the per-sequence movement and scale. ``mask`` (B, n) marks real tokens: padding neither attends
    nor is attended and stays where it is. With a ``book``
    (:class:`attndyn.margins.LeaderBook`), ``certified`` holds the leaders of this ``layer`` whose
    margin beats the rounding bound, and the book is updated. ``out`` (B, n, d) receives the new
    tokens on the compiled path when given (it may be ``z`` itself: the run loop steps in place). ``causal``: :math:`C_i` is
    taken over :math:`j \le i` only, and so are a new leader's margin and rounding bound. The shapes and
    numbers are checked (cheaply: no pass over the tokens; :func:`hardmax` also checks their values).

    >>> import torch
    >>> z = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.5, 0.25]]], dtype=torch.float64)
    >>> z1, leader, *_ = hardmax_step(z, alpha=1.0)
    >>> leader.tolist(), z1[0, 2].tolist()
    ([[True, True, False]], [0.75, 0.125])
    """
    _check_step(z, alpha, A, mask, tol)
    return _hardmax_step(z, alpha, A, mask, tol, record_follow, book, layer, out, causal)


def _check_step(z: Any, alpha: Any, A: Any, mask: Any, tol: Any) -> None:
    """The shapes and numbers of :func:`hardmax_step`'s arguments, or an InputError naming the one that is off."""
    if not isinstance(z, Tensor) or z.ndim != 3 or not z.is_floating_point():
        got = f"shape {tuple(z.shape)}" if isinstance(z, Tensor) else type(z).__name__
        raise InputError(
            f"z must be a floating-point torch tensor of shape (B, n, d), got {got}; "
            "for one sequence use z[None], for arrays attndyn.hardmax(tokens, ...)"
        )
    check_positive(alpha, param("alpha", "alpha"))
    check_nonnegative(tol, param("tol", "tol"))
    d = z.shape[-1]
    if A is not None and (not isinstance(A, Tensor) or tuple(A.shape) != (d, d)):
        got = str(tuple(A.shape)) if isinstance(A, Tensor) else type(A).__name__
        raise InputError(f"A must be a ({d}, {d}) torch tensor for tokens of dimension d = {d}, got {got}")
    if mask is not None and (not isinstance(mask, Tensor) or mask.dtype != torch.bool or mask.shape != z.shape[:2]):
        got = f"{tuple(mask.shape)} {mask.dtype}" if isinstance(mask, Tensor) else type(mask).__name__
        raise InputError(f"mask must be a bool torch tensor of shape {tuple(z.shape[:2])} (B, n), got {got}")


def _hardmax_step(
    z: Tensor,
    alpha: float,
    A: Tensor | None,
    mask: Tensor | None,
    tol: float,
    record_follow: bool,
    book: margins.LeaderBook | None,
    layer: int,
    out: Tensor | None,
    causal: bool,
    keep_tokens: bool = True,
    memo: dict[str, Any] | None = None,
) -> HardmaxStep:
    """:func:`hardmax_step` on arguments already checked (the run loop's layers; ``keep_tokens``, ``memo``: see
    :meth:`HardmaxAttention.step`)."""
    if A is None:
        A = torch.eye(z.shape[-1], dtype=z.dtype, device=z.device)
    coef = alpha / (1.0 + alpha)
    settings = _LayerSettings(A, mask, coef, tol, record_follow, book, layer, bool(causal), memo)
    if _use_kernel(z, A):
        return _kernel_step(z, settings, out, keep_tokens)
    return _torch_step(z, settings)


@functools.lru_cache(maxsize=1)
def _all_real(B: int, n: int) -> np.ndarray:
    """(B, n) True, read-only: the kernels' mask when there is none (made once per run, not per layer)."""
    m = np.ones((B, n), dtype=np.bool_)
    m.flags.writeable = False
    return m


def _kernel_mask(mask: Tensor | None, B: int, n: int) -> np.ndarray:
    """The (B, n) bool mask the compiled kernels read: read-only and C-contiguous whether the caller gave a mask or
    none (:func:`_all_real`). One array type either way: numba compiles each type apart, and each variant of the
    planar run kernel costs its first call on a machine about a minute of compilation (cached afterwards)."""
    if mask is None:
        return _all_real(B, n)
    m = np.ascontiguousarray(mask.cpu().numpy()).view()  # a view of its own: the caller's array keeps its flags
    m.flags.writeable = False
    return m


def _kernel_step(z: Tensor, settings: _LayerSettings, out: Tensor | None, keep_tokens: bool) -> HardmaxStep:
    """One layer by the compiled kernels (float64 on the CPU, no gradient): planar or dense rows of
    scores; the kernels certify new leaders themselves (``book``). Under a causal mask every d takes the
    dense kernel (each query has its own set of keys, so the planar kernel's shared candidates do not apply).
    ``out`` may be ``z`` (the kernels step in place); without ``keep_tokens`` the new tokens are not stored
    and the step's ``tokens`` is empty."""
    from ._kernels import hardmax_layer_dense, planar_memo
    from ._planar_run import hardmax_layer_2d

    A, mask, coef, tol, record_follow, book, layer, causal, memo = settings
    B, n, d = z.shape
    zn = z.detach().cpu().numpy()
    new = (torch.empty_like(z) if out is None else out) if keep_tokens else z.new_empty(0)
    leader_np = np.empty((B, n), dtype=np.bool_)
    follow_np = np.zeros((B, n, n) if record_follow else (1, 1, 1), dtype=np.bool_)
    m = _kernel_mask(mask, B, n)
    moved, scale = np.empty(B), np.empty(B)
    A_np = A.detach().cpu().numpy()
    arrays = None if book is None else book.kernel_arrays(d)
    out_np = new.numpy() if keep_tokens else None
    args = (zn, A_np, m, coef, float(tol), out_np, leader_np, follow_np, record_follow, moved, scale)
    k = -1 if book is None else layer
    if causal:
        hardmax_layer_dense(*args, k, arrays, causal=True)
    elif d == 2:
        if memo is not None and "planar" not in memo:
            memo["planar"] = planar_memo(B)
        hardmax_layer_2d(*args, k, arrays, None if memo is None else memo["planar"])
    else:
        hardmax_layer_dense(*args, k, arrays)
    if book is not None:
        book.collect(layer)
    lead = torch.from_numpy(leader_np)  # certified when a book is kept
    follow = torch.from_numpy(follow_np) if record_follow else None
    return HardmaxStep(
        new, lead, follow, torch.from_numpy(moved), torch.from_numpy(scale), None if book is None else lead
    )


def _torch_step(z: Tensor, settings: _LayerSettings) -> HardmaxStep:
    """One layer in torch (any device and dtype, differentiable): (c, L, L) score chunks over sequences of
    similar length, padding trimmed (:func:`attndyn.attention.ragged_chunks`), each screened by one matrix product
    where it may be (:func:`attndyn.attention.hardmax_mean_screened`: the same follow sets, fewer exact scores);
    new leaders are certified by ``book`` (:meth:`attndyn.margins.LeaderBook.certify`)."""
    A, mask, coef, tol, record_follow, book, layer, causal, _ = settings
    B, n, _ = z.shape
    grad = torch.is_grad_enabled() and (z.requires_grad or A.requires_grad)
    if mask is None:
        lengths = torch.full((B,), n)
    else:
        lengths = (mask.cpu() * torch.arange(1, n + 1)).amax(dim=1)  # 1 + last real position
    chunks = attention.ragged_chunks(lengths, attention.chunk_entries(z.device))
    size = max(idx.numel() * L * L for idx, L in chunks)
    buf = None if grad else torch.empty(size, dtype=z.dtype, device=z.device)  # reused scores
    eye = not A.requires_grad and torch.equal(A, torch.eye(A.shape[-1], dtype=A.dtype, device=A.device))
    A_q = None if eye else A  # the identity: w = z (the same follow sets; no d passes over the queries)
    z_next = z.clone()  # positions past a chunk's L are padding: they stay
    leader = torch.zeros((B, n), dtype=torch.bool, device=z.device)
    follow_all = torch.zeros((B, n, n), dtype=torch.bool, device=z.device) if record_follow else None
    for idx, L in chunks:
        idx = idx.to(z.device)
        zc = z[idx, :L]
        mc = None if mask is None else mask[idx, :L]
        if buf is not None and attention.screens(zc, tol, A_q):  # one matrix product, the exact scores of few queries
            mean, follow, count = attention.hardmax_mean_screened(zc, A_q, mc, causal=causal, out=buf)
        else:
            s = attention.scores(zc, A_q, out=buf, exact=True)  # (c, L, L), rounded as the kernels
            mean, follow, count = attention.hardmax_mean(s, zc, mc, tol=tol, causal=causal, overwrite_s=buf is not None)
        z_next[idx, :L] = zc + coef * (mean - zc)
        leader[idx, :L] = torch.diagonal(follow, dim1=-2, dim2=-1) & (count[..., 0] == 1)  # C_i = {i}
        if follow_all is not None:
            follow_all[idx, :L, :L] = follow
    extent = z.detach().abs().amax(dim=-1)  # (B, n)
    if mask is not None:
        extent = extent.masked_fill(~mask, 0.0)  # the scale of the real tokens, as in the kernels
    certified = None if book is None else book.certify(z, A, mask, leader.cpu(), layer, causal=causal)
    step = (z_next - z).detach().abs().amax(dim=(1, 2)).cpu()
    return HardmaxStep(z_next, leader, follow_all, step, extent.amax(dim=1).cpu(), certified)


@dataclass(frozen=True)
class HardmaxAttention:
    r"""The hardmax dynamics of eq. (1.1) with score matrix ``A`` (d, d), step size ``alpha``, tie tolerance
    ``tol``, ``mask`` (B, n) of real tokens (None: all real) and ``causal`` (token i attends to :math:`j \le i`
    only); :meth:`step` is one layer.

    .. math:: z_i^{k+1} = z_i^k + \frac{\alpha}{1+\alpha}\,\frac{1}{|C_i(Z^k)|}\sum_{j\in C_i(Z^k)} (z_j^k - z_i^k),
              \qquad C_i(Z) = \operatorname{arg\,max}_{j \in \mathcal A_i} \langle A z_i, z_j\rangle

    with :math:`\mathcal A_i` the keys query i may attend (:func:`attndyn.attention.allowed`).

    The settings are checked once, when it is made, and each :meth:`step` only checks that ``z`` fits them.

    >>> import torch
    >>> dyn = HardmaxAttention(A=torch.eye(2, dtype=torch.float64), alpha=1.0)
    >>> z = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [0.5, 0.25]]], dtype=torch.float64)
    >>> dyn.step(z).tokens[0, 2].tolist(), dyn.follow_sets(z)[0, 2].tolist()
    ([0.75, 0.125], [True, False, False])
    """

    A: Tensor
    alpha: float
    tol: float = 0.0
    mask: Tensor | None = None
    causal: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.A, Tensor) or self.A.ndim != 2 or self.A.shape[0] != self.A.shape[1]:
            got = str(tuple(self.A.shape)) if isinstance(self.A, Tensor) else type(self.A).__name__
            raise InputError(f"A must be a square (d, d) torch tensor, got {got}")
        d = self.A.shape[0]
        _check_step(torch.empty(1, 1, d, dtype=self.A.dtype), self.alpha, self.A, None, self.tol)

    def step(
        self,
        z: Tensor,
        *,
        record_follow: bool = False,
        book: margins.LeaderBook | None = None,
        layer: int = 0,
        out: Tensor | None = None,
        keep_tokens: bool = True,
        memo: dict[str, Any] | None = None,
    ) -> HardmaxStep:
        """One layer of eq. (1.1) on a batch ``z`` (B, n, d): :func:`hardmax_step` with this object's settings
        (``book``, ``layer``, ``out``: see there; on the compiled path ``out`` may be ``z`` itself, a step in
        place). ``keep_tokens=False``: the caller reads only what the layer saw, not :math:`Z^{k+1}` (a run's
        last layer), so the compiled path does not store it and the step's ``tokens`` is empty. ``memo``: a dict
        that a run passes to each of its layers, where the compiled path keeps what one layer can hand the next
        (the planar kernel's inscribed polygons, :func:`attndyn._planar_run.hardmax_layer_2d`); the result is the
        same with or without it."""
        m = self.mask
        if not (isinstance(z, Tensor) and z.ndim == 3 and z.shape[-1] == self.A.shape[0]) or (
            m is not None and m.shape != z.shape[:2]
        ):  # what does not fit, named (the settings were checked when the object was made)
            _check_step(z, self.alpha, self.A, m, self.tol)
        return _hardmax_step(
            z, self.alpha, self.A, m, self.tol, record_follow, book, layer, out, self.causal, keep_tokens, memo
        )

    def follow_sets(self, z: Tensor) -> Tensor:
        r"""(B, n, n) bool, :math:`j \in C_i(Z)` (eq. (1.1b)) for the state ``z``, from one :meth:`step`."""
        follow = self.step(z, record_follow=True).follow
        assert follow is not None  # record_follow=True
        return follow


class _Unit(NamedTuple):
    """Powers of two that bring a run near 1, as exponents: tokens are multiplied by ``2**token`` (B, 1, 1), scores
    by ``2**score`` (B,). Exponents, not factors: the factor itself can overflow where the product does not
    (tokens of 2**-1030 are multiplied by 2**1029)."""

    token: Tensor
    score: Tensor


def _exponent_below(x: Tensor) -> Tensor:
    """-e with x = m 2**e, 0.5 <= m < 1 (0 where x is 0): x * 2**result lies in [0.5, 1)."""
    e = torch.frexp(x).exponent.long()
    return torch.where(x > 0, -e, torch.zeros_like(e))


def times_pow2(t: Tensor, e: Tensor | int) -> Tensor:
    """``t * 2**e`` for integer ``e`` (broadcast), in steps that stay within the dtype's range: exact unless the
    result itself leaves the range of normal numbers."""
    e = torch.as_tensor(e, dtype=torch.long)
    lim = int(math.log2(torch.finfo(t.dtype).max)) - 1  # 2**lim and 2**-lim are normal numbers
    while bool((e != 0).any()):
        step = e.clamp(-lim, lim)
        t = t * torch.pow(2.0, step.to(torch.float64)).to(t.dtype).to(t.device)
        e = e - step
    return t


# The (d, d) matrices a run holds at once: A as given and as a tensor, rescaled, its absolute values (margins),
# the kernels' copy, and a spare: what :func:`attndyn._budget.check_matrix_memory` counts.
MATRIX_COPIES = 6

# Tokens and A whose largest entries lie in this range (per dtype) give scores far from overflow and
# underflow: they run as given (a power-of-two rescaling would change no bit of the result).
SAFE_RANGE = {torch.float64: (2.0**-200, 2.0**200), torch.float32: (2.0**-30, 2.0**30)}


def _rescale(
    z: Tensor, A: Tensor, ext: Tensor, mask: Tensor | None, tol: float
) -> tuple[Tensor, Tensor, float, _Unit | None]:
    """Tokens and A scaled by powers of two near 1 (per sequence; one scale for the batch when tol > 0);
    ``ext`` (B,) the largest |coordinate| of each sequence's real tokens (:func:`check_dynamic_range`)."""
    if tol > 0:
        ext = ext.amax().expand_as(ext)  # one scale, so that tol keeps one meaning
    a_ext = A.detach().abs().amax()
    lo, hi = SAFE_RANGE.get(z.dtype, SAFE_RANGE[torch.float32])
    if bool(((ext >= lo) & (ext <= hi)).all()) and lo <= float(a_ext) <= hi:
        return z, A, tol, None  # no score can overflow or underflow: scaling would change no bit
    ez = _exponent_below(ext).cpu()  # (B,)
    ea = _exponent_below(a_ext).cpu()
    unit = _Unit(ez[:, None, None], 2 * ez + ea)  # scores scale with |z|^2 |A|
    zs = times_pow2(z, unit.token.to(z.device))
    if mask is not None:
        zs = zs.masked_fill(~mask[..., None], 0.0)  # padding is ignored; keep it finite at any scale
    tol_s = float(times_pow2(torch.tensor(tol, dtype=torch.float64), int(unit.score[0]))) if tol > 0 else 0.0
    return zs, times_pow2(A, ea.to(A.device)), tol_s, unit


def _unscale(zs: Tensor, unit: _Unit, z0: Tensor, mask: Tensor | None) -> Tensor:
    """Tokens back in the caller's units; padding (which never moves) is returned as given."""
    out = times_pow2(zs, -unit.token.to(zs.device))
    return out if mask is None else torch.where(mask[..., None], out, z0)


def _warn_outside_theorem(z: Tensor, A: Tensor, mask: Tensor | None) -> None:
    if not is_spd(A):
        warn_hypothesis("A is not symmetric positive definite: Theorem 1.1 does not apply, the run proceeds")
    zero, repeated = _token_flags(z, mask)
    if zero:
        warn_hypothesis("a token is zero: Theorem 1.1 assumes nonzero tokens, the run proceeds")
    if repeated:
        warn_hypothesis("some tokens are repeated: Theorem 1.1 assumes distinct tokens (repeated tokens tie exactly)")


def _token_flags(z: Tensor, mask: Tensor | None) -> tuple[bool, bool]:
    """Whether some sequence of ``z`` (B, n, d) holds a zero real token, and whether one holds two equal real
    tokens, bit for bit (-0.0 == 0.0, as torch's ``==``): one compiled pass (:func:`attndyn._distinct.token_flags`)
    on float64 copies, which hold every narrower float exactly."""
    from ._distinct import token_flags
    from ._kernels import threads_for

    B, n, d = z.shape
    zn = z.detach().to("cpu", torch.float64).numpy()
    real = _kernel_mask(mask, B, n)
    zero, repeated = token_flags(zn, real, threads_for(B, n, d))
    return bool(zero.any()), bool(repeated.any())


def hardmax(
    tokens: Any,
    *,
    alpha: float = 0.5,
    layers: int,
    A: Any = None,
    mask: Any = None,
    causal: bool = False,
    tol: float = 0.0,
    save: SaveAt = SaveAt(),
    stop: StopOnConvergence | None = None,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    progress: bool = False,
    check_hypotheses: bool = True,
    max_memory: float | None = None,
) -> HardmaxTrajectory:
    r"""Run ``layers`` layers of the hardmax dynamics, eq. (1.1) of the hardmax paper:

    .. math:: z_i^{k+1} = z_i^k + \frac{\alpha}{1+\alpha}\,\frac{1}{|C_i(Z^k)|}\sum_{j\in C_i(Z^k)} (z_j^k - z_i^k),
              \qquad C_i(Z) = \{ j \in \mathcal A_i : \langle A z_i, z_j\rangle
              = \max_{l \in \mathcal A_i} \langle A z_i, z_l\rangle \},

    :math:`\mathcal A_i` the real tokens, and with ``causal`` only those with :math:`j \le i`.

    Args:
        tokens: one sequence ``(n, d)`` or a batch ``(B, n, d)`` (array-like or tensor).
        alpha: step size :math:`\alpha > 0`; each layer moves a token by
            :math:`\alpha/(1+\alpha)` of the way to the mean of the tokens it follows. Default
            0.5, the value of the paper's Figure 2 and the default of ``attndyn hardmax --alpha``.
        layers: number of layers K >= 0.
        A: the ``(d, d)`` matrix of the scores :math:`\langle A z_i, z_j\rangle` (identity if
            None). Theorem 1.1 assumes it symmetric positive definite; others warn and run.
        mask: ``(n,)`` or ``(B, n)`` booleans, True for real tokens; padding neither attends
            nor is attended and does not move.
        causal: token i attends to tokens :math:`j \le i` only (composed with ``mask``): the argmax set
            :math:`C_i`, the leaders' margins and their rounding bounds are taken over them. Token 0 then
            follows only itself: it never moves and leads from layer 0. Theorem 1.1 is for the full
            attention: :func:`attndyn.analysis.hardmax_theorem` reports a causal run as undecided, and no
            hypothesis warning is given.
        tol: tie tolerance. 0 (default) is the paper's exact rule: :math:`C_i` is every j whose
            score equals the maximum bit for bit; ``tol > 0`` also admits scores within ``tol``.
        save: what to keep (:class:`~attndyn._options.SaveAt`).
        stop: stop early once every sequence has converged (:class:`StopOnConvergence`).
        dtype: floating dtype of the run (float64 by default; no global setting is changed).
        progress: show a progress bar over layers.
        check_hypotheses: warn (:class:`~attndyn.HypothesisWarning`) when A is not SPD or
            tokens are zero or repeated (not under ``causal``, where the theorem does not apply).
        max_memory: bytes the kept layers may take (default: half of the device's memory); a run
            over it is refused before it starts, naming the estimate.

    Tokens whose sizes span more than the dtype resolves (largest over smallest nonzero token above
    :math:`1/(2\gamma_{2d+1})`, about 9e14 in float64) are refused: see :func:`check_dynamic_range`.

    The dynamics are equivariant under positive scaling of the tokens and of A (the follow sets
    do not change), so the run works on tokens and A multiplied by powers of two that bring them
    near 1 (exact in binary floating point) and scales the results back: ``hardmax(x * 2**k)``
    equals ``hardmax(x) * 2**k`` bit for bit, with no overflow or underflow of the scores, for any
    k that keeps ``x * 2**k`` a normal number.

    The layers are run by the loop both engines share (:class:`attndyn._loop.Run`: saving,
    convergence, progress, :class:`~attndyn._trajectory.RunStats`) on a :class:`HardmaxAttention`.

    Returns:
        A :class:`~attndyn._trajectory.HardmaxTrajectory`; the leaders are recorded at every layer,
        whatever ``save`` keeps; ``params`` holds the settings (:class:`~attndyn._trajectory.HardmaxParams`).

    >>> import attndyn
    >>> square = [[1, 1], [-1, 1], [-1, -1], [1, -1], [0.2, 0.1], [-0.3, 0.5]]
    >>> traj = attndyn.hardmax(square, alpha=0.5, layers=30)
    >>> sorted(attndyn.leaders(traj).indices)
    [0, 1, 2, 3]
    """
    z, batched = as_tokens(tokens, dtype=dtype, device=device)
    alpha = check_positive(alpha, param("alpha", "alpha"))
    layers = check_int(layers, param("layers", "layers"), minimum=0)
    tol = check_nonnegative(tol, param("tol", "tol"))
    causal = check_bool(causal, "causal")
    check_options(save, stop)
    B, n, d = z.shape
    check_matrix_memory(d, MATRIX_COPIES, dtype, z.device, max_memory, "A and its working copies")
    A_t = (
        torch.eye(d, dtype=dtype, device=z.device) if A is None else as_matrix(A, "A", d, dtype=dtype, device=z.device)
    )
    with limit_torch_threads(_torch_threads(z, A_t)):
        warn = check_hypotheses and not causal  # Theorem 1.1's hypotheses: the theorem is for the full attention
        return _hardmax_run(z, batched, A_t, alpha, layers, mask, tol, save, stop, progress, warn, max_memory, causal)


def _torch_threads(z: Tensor, A: Tensor) -> int:
    """torch threads for a run (docs/benchmarks.md, "Threads"): the caller's on a GPU. When the compiled
    kernel does the layers, one: torch keeps O(B) books per layer and makes a few memory-bound passes over the
    tokens per run (the scale, the first kept state), and a parallel torch call would leave torch's OpenMP
    threads spinning on the cores the kernel's threads are about to use. The torch path:
    :func:`torch_threads_for` its B n^2 d multiply-adds per layer."""
    if z.device.type != "cpu":
        return torch.get_num_threads()
    B, n, d = z.shape
    if _use_kernel(z, A):
        return 1
    return torch_threads_for(B * n * n * d)


def _hardmax_run(
    z: Tensor,
    batched: bool,
    A_t: Tensor,
    alpha: float,
    layers: int,
    mask: Any,
    tol: float,
    save: SaveAt,
    stop: StopOnConvergence | None,
    progress: bool,
    check_hypotheses: bool,
    max_memory: float | None,
    causal: bool,
) -> HardmaxTrajectory:
    """:func:`hardmax` once its arguments are checked and the tokens and A are tensors."""
    B, n, d = z.shape
    m = as_mask(mask, (B, n), z.device)
    ext = check_dynamic_range(z, m)
    _check_hardmax_memory(z, layers, save, max_memory)
    if check_hypotheses:
        _warn_outside_theorem(z, A_t, m)
    # Exact at every scale: run on tokens and A rescaled by powers of two (exact in binary
    # floating point; C_i does not change), and scale the results back.
    zs, A_s, tol_s, unit = _rescale(z, A_t, ext, m, tol)
    run = Run(save, stop, layers, B)
    dyn = HardmaxAttention(A=A_s, alpha=alpha, tol=tol_s, mask=m, causal=causal)
    record = _HardmaxRecord(dyn, z, zs, unit, save, layers)
    run.loop(record, description="hardmax layers" + (" (causal)" if causal else ""), progress=progress)
    return record.result(run, batched, HardmaxParams(alpha=alpha, A=A_t, tol=tol, layers=layers, causal=causal))


def check_dynamic_range(z: Tensor, mask: Tensor | None = None) -> Tensor:
    r"""Refuse tokens whose sizes span more than the dtype can resolve (a one-line :class:`InputError`);
    return each sequence's largest |coordinate| over its real tokens, ``(B,)`` float64 (what :func:`hardmax`
    scales by, read in the same pass).

    Let :math:`\rho` be the ratio of the largest to the smallest nonzero token of a sequence in the
    max-norm (zero tokens and padding are not counted). The rounding bound that decides whether token i
    leads (:mod:`attndyn.margins`) is :math:`b_i = 2\gamma_{2d+1}(|A||z_i|)\cdot(|z_i| + M)` with M the
    largest coordinates of the sequence, so for the smallest token, :math:`b_i \ge 2\gamma_{2d+1}\,\rho\,
    (|A||z_i|)\cdot|z_i|`. When :math:`\rho > 1/(2\gamma_{2d+1})` (about 9e14 in float64 and 1.7e6 in
    float32 for d = 2) the bound exceeds the token's own score scale :math:`(|A||z_i|)\cdot|z_i|`, which
    bounds its margin against any token no larger than itself: whether the small tokens lead is then not
    decided by this dtype, and the scores of the smallest against the largest tokens lose every digit of
    theirs (e.g. (1e150, 0), (0, 1e-150), (-1, 0), (0, -1): all four lead at layer 0 in exact arithmetic;
    the score of the second with itself underflows after rescaling, and the others are read as rounding).
    Below the limit, no score of the input underflows or overflows after :func:`hardmax`'s power-of-two
    rescaling (:math:`\rho^2 < 2^{100}`), so the leaders certified at layer 0 are exact.
    """
    big, small = _extents(z.detach(), mask)
    with np.errstate(over="ignore"):
        ratio = (big / small).cpu()  # 0 where every token is zero
    limit = 1.0 / (2.0 * margins.gamma(2 * z.shape[-1] + 1, z.dtype))
    bad = torch.nonzero(ratio > limit).flatten()
    if bad.numel():
        b = int(bad[0])
        where = f" (sequence {b})" if z.shape[0] > 1 else ""
        raise InputError(
            f"tokens{where} span a dynamic range of {float(ratio[b]):.3g} (largest over smallest nonzero token, "
            f"max-norm), more than {str(z.dtype).replace('torch.', '')} resolves in dimension {z.shape[-1]} "
            f"(1/(2 gamma_{2 * z.shape[-1] + 1}) = {limit:.3g}): which small tokens lead would be decided by "
            "rounding; drop or zero the tiny tokens, or rescale the large ones"
        )
    return big


def _extents(z: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """(B,) float64: each sequence's largest and smallest nonzero max-norm over its real tokens (0 and inf when
    there is none); float64 tokens on the CPU in one compiled pass (:func:`attndyn._kernels.token_extents`)."""
    if z.device.type == "cpu" and z.dtype == torch.float64:
        from ._kernels import threads_for, token_extents

        B, n, d = z.shape
        big, small = torch.empty(B, dtype=torch.float64), torch.empty(B, dtype=torch.float64)
        m = _kernel_mask(mask, B, n)
        token_extents(z.numpy(), m, big.numpy(), small.numpy(), threads_for(B, n, d))
        return big, small
    return _extents_torch(z, mask)


def _extents_torch(z: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """:func:`_extents` by torch's reductions (any device and dtype)."""
    ext = z.abs().amax(dim=-1).double()  # (B, n) max-norms (ten times faster than vector_norm(ord=inf))
    if mask is not None:
        ext = ext.masked_fill(~mask.to(ext.device), 0.0)
    return ext.amax(dim=1), ext.masked_fill(ext == 0, float("inf")).amin(dim=1)


def _check_hardmax_memory(z: Tensor, layers: int, save: SaveAt, max_memory: float | None) -> None:
    """Refuse a run whose kept layers (tokens, leader flags, follow sets) would not fit in ``max_memory``."""
    B, n, d = z.shape
    T = kept_count(layers, save.every)
    check_memory(
        T * B * n * (d * z.element_size() + 1 + (n if save.follow else 0)),
        max_memory,
        z.device,
        f"{T} kept layers of {B} x {n} tokens in dimension {d}" + (" with follow sets" if save.follow else ""),
        param("save.layers", "keep fewer layers with save=SaveAt(every=None) or SaveAt(every=k)"),
    )


class _HardmaxRecord:
    """What a hardmax run keeps as it goes (the engine side of :class:`attndyn._loop.Run`).

    ``dyn`` runs on the rescaled tokens ``zs`` (see :func:`_rescale`); kept tokens are scaled back to
    the caller's units. Leaders are certified at every layer (:class:`attndyn.margins.LeaderBook`).
    """

    def __init__(
        self, dyn: HardmaxAttention, z: Tensor, zs: Tensor, unit: _Unit | None, save: SaveAt, layers: int
    ) -> None:
        B, n, d = z.shape
        T = kept_count(layers, save.every)
        self.dyn, self.z0, self.unit, self.save = dyn, z, unit, save
        self.z = zs  # the current state Z^k, in run units
        self.res: HardmaxStep | None = None  # the step from Z^k: Z^{k+1} and what layer k saw
        self.lead: Tensor  # certified leaders of layer k (observe sets them before keep reads them)
        # filled as we go, no final copy; large CPU buffers on huge pages (attndyn._pages: fewer page faults)
        self.ys = _pages.empty((T, B, n, d), z.dtype, z.device)
        self.follow = _pages.zeros((T, B, n, n), torch.bool) if save.follow else None
        self.leader_mask = _pages.zeros((T, B, n), torch.bool)
        self.book = margins.LeaderBook(B, n, z.dtype)  # who leads since when; events decided by rounding
        # The compiled path steps in place where it can (no fresh pages per layer; see _output).
        self.inplace = _use_kernel(zs, dyn.A)
        self.work = zs if unit is not None and zs.data_ptr() != z.data_ptr() else None  # the run's own copy
        self.spare: Tensor | None = None
        self.memo: dict[str, Any] = {}  # what the compiled kernels carry from one layer to the next
        self.whole: tuple[Tensor, Tensor] | None = None  # each layer's (moved, scale) when one call ran them all
        self.count = 0  # kept layers so far
        self.nfe = 0

    def observe(self, k: int, run: Run) -> tuple[Tensor, Tensor]:
        """Layer k: step from Z^k (with its follow sets when layer k is kept), certify its leaders."""
        if k == 0 and self._runs_whole(run):
            self.whole = self._run_whole(run)
        if self.whole is not None:
            self.nfe += 1
            return self.whole[0][k], self.whole[1][k]
        if self.res is not None:
            self.z = self.res.tokens
        final = k == run.last  # Z^{K+1} is never read: only what layer K saw
        out = None if final else self._output(k, run)
        self.res = self.dyn.step(
            self.z,
            record_follow=self.save.follow and run.keeps(k),
            book=self.book,
            layer=k,
            out=out,
            keep_tokens=not final,
            memo=self.memo,
        )
        self.nfe += 1
        assert self.res.certified is not None  # a book was given
        self.lead = self.res.certified
        return self.res.moved, self.res.scale

    def _output(self, k: int, run: Run) -> Tensor | None:
        """Where the compiled path writes Z^{k+1} (k < K). Its home: when nothing was rescaled (run units are
        the caller's), the slot of ``ys`` that the next kept state fills (Z^{k+1} itself when it is kept: no
        copy); else the run's own copy of the tokens (:func:`_rescale`'s ``zs``). A step in place when Z^k is
        in that home already, unless Z^k is still to be read after the step (kept, or a run that may stop at
        k and keep it): then a spare buffer, so that the two alternate."""
        if not self.inplace:
            return None
        if self.unit is None:
            home = self.ys[self.count + int(run.keeps(k))]  # the kept states before k+1 (one is still to come)
        else:
            if self.work is None:
                self.work = _pages.empty(self.z.shape, self.z.dtype)
            home = self.work
        if self.z.data_ptr() != home.data_ptr() or not (run.keeps(k) or run.stop is not None):
            return home
        if self.spare is None:
            self.spare = _pages.empty(self.z.shape, self.z.dtype)
        return self.spare

    def _runs_whole(self, run: Run) -> bool:
        """Whether one compiled call can run every layer (:mod:`attndyn._planar_run`): planar tokens on the compiled
        path, full attention, and nothing read between layers — no stop test, no follow sets, no progress bar, no
        time budget."""
        d = self.z.shape[-1]
        return (
            self.inplace
            and d == 2
            and not self.dyn.causal
            and run.stop is None
            and not self.save.follow
            and not run.progress
            and not budget_active()
        )

    def _run_whole(self, run: Run) -> tuple[Tensor, Tensor] | None:
        """Every layer in one call: the kept states and leaders straight into ``ys`` and ``leader_mask`` (in run
        units: :meth:`keep` scales them back), the book certified; each layer's (moved, scale). None when the
        call gave up (too many events decided by rounding): the run then goes layer by layer on a fresh book."""
        from ._planar_run import hardmax_run_2d

        B, n, _ = self.z.shape
        last = run.last
        slots = np.full(last + 1, -1, dtype=np.int64)
        kept = [k for k in range(last + 1) if run.keeps(k)]
        slots[kept] = np.arange(len(kept))
        moved, scale = np.empty((last + 1, B)), np.empty((last + 1, B))
        mask = _kernel_mask(self.dyn.mask, B, n)
        coef = self.dyn.alpha / (1.0 + self.dyn.alpha)
        A = self.dyn.A.detach().numpy()
        args = (self.z.detach().numpy(), A, mask, coef, float(self.dyn.tol), slots, self.ys.numpy())
        events = hardmax_run_2d(*args, self.leader_mask.numpy(), moved, scale, self.book.kernel_arrays(2))
        if events is None:
            self.book = margins.LeaderBook(B, n, self.z.dtype)
            return None
        self.book.collect_run(*events)
        return torch.from_numpy(moved), torch.from_numpy(scale)

    def keep(self, k: int) -> None:
        if self.whole is not None:  # written by the call that ran every layer
            if self.unit is not None:
                self.ys[self.count] = _unscale(self.ys[self.count], self.unit, self.z0, self.dyn.mask)
            self.count += 1
            return
        assert self.res is not None  # observe(k) came first
        i = self.count
        if self.z.requires_grad and i == 0:
            self.ys = self.ys.clone()  # keep autograd history out of a leaf buffer
        if self.unit is not None:
            self.ys[i] = _unscale(self.z, self.unit, self.z0, self.dyn.mask)
        elif self.z.data_ptr() != self.ys[i].data_ptr():  # not already written there by the step before
            self.ys[i] = self.z
        self.leader_mask[i] = self.lead
        if self.follow is not None:
            follow = self.res.follow
            if follow is None:  # a run that stops at layer k keeps a layer save= did not plan for
                follow = self.dyn.follow_sets(self.z)
            self.follow[i] = follow.cpu()
        self.count += 1

    def result(self, run: Run, batched: bool, params: HardmaxParams) -> HardmaxTrajectory:
        since, margin, rounding = self.book.since, self.book.margin, self.book.rounding
        if self.unit is not None:  # margins are scores: they scale with |z|^2 |A|
            margin = times_pow2(margin, -self.unit.score[:, None])
            rounding = [(at, times_pow2(mb, -self.unit.score[at[:, 0]][:, None])) for at, mb in rounding]
        k, T = run.k, self.count
        message = (f"converged after {k} layers" if run.stop_reason == "converged" else f"ran {k} layers") + (
            "" if run.converged else "; not every sequence has converged"
        )
        return HardmaxTrajectory(
            ts=torch.tensor(run.kept, dtype=torch.long),
            ys=self.ys[:T],
            batched=batched,
            stats=run.stats(function_evals=self.nfe, message=message),
            mask=self.dyn.mask,
            params=params,
            leader_since=since,
            leader_margin=margin,
            rounding_at=torch.cat([r[0] for r in rounding]) if rounding else torch.empty((0, 3), dtype=torch.long),
            rounding_margin=torch.cat([r[1] for r in rounding])
            if rounding
            else torch.empty((0, 2), dtype=self.z0.dtype),
            leader_mask=self.leader_mask[:T],
            follow=None if self.follow is None else self.follow[:T],
        )
