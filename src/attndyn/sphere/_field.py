r"""Self-attention on the unit sphere: the attention weights, the tangent velocity, one layer.

Geshkovski, Letrouit, Polyanskiy & Rigollet, *A mathematical perspective on Transformers* (arXiv 2312.10794),
Section 2: tokens :math:`x_1, \dots, x_n \in S^{d-1}` move by

.. math:: \dot x_i = \mathbf P^\perp_{x_i}\Big(\sum_j w_{ij}\, V x_j\Big), \qquad
          \mathbf P^\perp_{x} y = y - \langle x, y\rangle x,

with the weights of **SA** (self-attention, the softmax of the scores)

.. math:: w_{ij} = \frac{e^{\beta\langle Q x_i, K x_j\rangle}}{\sum_{l} e^{\beta\langle Q x_i, K x_l\rangle}}

or of **USA** (unnormalized self-attention) :math:`w_{ij} = e^{\beta\langle Q x_i, K x_j\rangle}/n`.
A causal mask keeps the sums over :math:`j \le i` (and :math:`l \le i`); padding keys are never attended.
The scores are those of :func:`attndyn.attention.scores` with :math:`A = K^\top Q`; SA's weights are the
stable softmax of :func:`attndyn.attention.softmax_weights` (so no beta overflows them); USA's are refused
before a run when :math:`e^{\beta\lVert A\rVert}` would overflow (:func:`check_usa_range`).

The velocity is computed with each token's self-term apart (:meth:`SphereAttention.velocity`),

.. math:: \dot x_i = \mathbf P^\perp_{x_i}\Big(\sum_{j \ne i} w_{ij}\, V x_j\Big)
          + w_{ii}\,\mathbf P^\perp_{x_i}\big((V - I)\, x_i\big),

the same field (:math:`\mathbf P^\perp_{x_i} x_i = 0`): for V = I the self-term :math:`w_{ii} x_i` is normal to
the sphere, and for USA at a large beta it is the largest term by :math:`e^{\beta(1 - \langle x_i, x_j\rangle)}`,
so that projecting the whole sum left its rounding (about :math:`e^\beta \cdot 10^{-16}`, in any direction) as
the velocity (at beta = 40, Q = K = V = I, the orthogonal start's gamma(0.005) came out 1.9e-7 for 0.0056).

The velocity is extended off the sphere as a function of :math:`x/\lVert x\rVert` (homogeneous of degree 0):
a Runge–Kutta stage that leaves the sphere by the local error sees the field of its projection, and
:math:`\frac{d}{dt}\lVert x_i\rVert^2 = 2\langle x_i, \dot x_i\rangle = 0` everywhere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch
from torch import Tensor

from .. import attention
from .._errors import param
from .._validation import InputError
from ..attention import causal_mask

__all__ = ["SphereAttention", "ATTENTIONS", "unit", "pow2_scale", "tangent", "causal_mask", "check_usa_range"]

#: The two models: ``"sa"`` (softmax weights) and ``"usa"`` (weights e^{beta s}/n).
ATTENTIONS = ("sa", "usa")


def unit(x: Tensor) -> Tensor:
    r"""Each token divided by its Euclidean norm, :math:`x_i/\lVert x_i\rVert` (the retraction onto the sphere).

    The token is first divided by the power of two above its largest entry (exact), so that its norm neither
    overflows nor underflows: a layer whose stream grew past 1e154 (USA at a large beta) gave norm inf, and
    tokens of zeros."""
    y = x / pow2_scale(x)
    return y / torch.linalg.vector_norm(y, dim=-1, keepdim=True)


def pow2_scale(x: Tensor) -> Tensor:
    """(..., n, 1): the power of two above each token's largest entry (1 for a token of zeros); dividing by it is
    exact, and leaves a norm that neither overflows nor underflows."""
    big = x.abs().amax(dim=-1, keepdim=True)
    return torch.where(big > 0, torch.ldexp(torch.ones_like(big), torch.frexp(big).exponent), torch.ones_like(big))


def tangent(x: Tensor, v: Tensor) -> Tensor:
    r""":math:`\mathbf P^\perp_{x_i} v_i = v_i - \langle x_i, v_i\rangle x_i` for unit tokens ``x`` (B, n, d)."""
    return v - (x * v).sum(dim=-1, keepdim=True) * x


def check_usa_range(A: Tensor | None, beta: Tensor, n: int, dtype: torch.dtype) -> None:
    r"""Refuse USA weights :math:`e^{\beta\langle Q x_i, K x_j\rangle}` that could overflow ``dtype``: on the
    sphere :math:`|\langle A x_i, x_j\rangle| \le \lVert A\rVert_2`, so the largest weight is at most
    :math:`e^{|\beta|\,\lVert A\rVert_2}` and n of them are summed."""
    norm = 1.0 if A is None else float(torch.linalg.matrix_norm(A.detach(), ord=2).max())  # (d, d) or (B, d, d)
    bound = float(beta.detach().abs().max()) * norm + math.log(max(n, 1))
    limit = math.log(torch.finfo(dtype).max) - 8.0  # headroom for the sums of a Runge–Kutta step
    if bound > limit:
        raise InputError(
            f"USA weights e^(beta <Qx, Kx>) overflow {dtype} (beta * ||K^T Q|| = {bound:.4g} > {limit:.4g}); "
            "lower beta, or use " + param("attention.sa", "attention='sa'") + " (the softmax weights never overflow)"
        )


@dataclass(frozen=True)
class SphereAttention:
    r"""The attention of the tokens on the sphere, one head.

    ``A`` is :math:`K^\top Q` (None: the identity), ``V`` the value matrix (None: the identity), each (d, d) or
    (B, d, d) one per sequence, ``beta`` (B,)
    one inverse temperature per sequence, ``model`` ``"sa"`` or ``"usa"``, ``mask`` (B, n) True for real
    tokens (padding is never attended and does not move), ``causal`` the mask :math:`j \le i`.
    """

    A: Tensor | None
    V: Tensor | None
    beta: Tensor
    model: str = "sa"
    mask: Tensor | None = None
    causal: bool = False

    def weights(self, x: Tensor) -> Tensor:
        r"""(B, n, n) weights :math:`w_{ij}` of unit tokens ``x`` (B, n, d): SA's softmax or USA's :math:`e^{\beta s}/n`."""
        s = attention.scores(x, self.A) * self.beta.to(x.dtype)[:, None, None]  # (B, n, n): beta_b <A x_i, x_j>
        if self.model == "sa":
            return attention.softmax_weights(s, self.mask, causal=self.causal)
        keep = attention.allowed(self.mask, x.shape[1], causal=self.causal, device=x.device)  # padding, j <= i
        if keep is not None:
            s = s.masked_fill(~keep, float("-inf"))
        n = x.shape[1] if self.mask is None else self.mask.sum(dim=-1).to(x.dtype)[:, None, None]
        return torch.exp(s) / n

    def values(self, x: Tensor) -> Tensor:
        """Rows :math:`V x_j` (B, n, d)."""
        return x if self.V is None else x @ self.V.transpose(-1, -2)

    def attend(self, x: Tensor) -> Tensor:
        r""":math:`\sum_j w_{ij} V x_j` for unit tokens ``x``: the attention sublayer's output, (B, n, d).

        SA without a causal mask goes through :func:`attndyn.attention.softmax_attention` (a fused kernel where one
        exists: no n x n weights formed), with the queries :math:`\beta_b A x_i` carrying each sequence's beta;
        USA and causal SA form the weights (:meth:`weights`) and aggregate them. SA with :math:`A = I`, no mask and
        every :math:`\beta \ge 0` takes a shorter path (:meth:`_attend_identity`), equal up to rounding."""
        if self._identity_sa:
            return self._attend_identity(x)
        if self.model == "sa" and not self.causal:
            q = x if self.A is None else x @ self.A.transpose(-1, -2)  # rows A x_i: <A x_i, x_j> = q_i . x_j
            q = q * self.beta.to(x.dtype)[:, None, None]
            out = attention.softmax_attention(q, x, self.values(x), self.mask, beta=1.0)
        else:
            out = attention.aggregate(self.weights(x), self.values(x))
        return out if self.mask is None else out * self.mask[..., None]

    @cached_property
    def _identity_sa(self) -> bool:
        """SA with A = I, no mask, not causal and every beta >= 0: :meth:`_attend_identity` applies."""
        return (
            self.model == "sa" and self.A is None and self.mask is None and not self.causal
            and bool((self.beta >= 0).all())
        )  # fmt: skip

    def _attend_identity(self, x: Tensor) -> Tensor:
        r"""SA's :math:`\sum_j w_{ij} V x_j` for :math:`A = I` and :math:`\beta \ge 0`, unit tokens ``x`` (B, n, d).

        On the sphere :math:`\langle x_i, x_j\rangle \le \langle x_i, x_i\rangle = 1`, so the row maximum of the
        scores is known, :math:`\beta`, and

        .. math:: w_{ij} = \frac{e^{\beta(\langle x_i, x_j\rangle - 1)}}{\sum_l e^{\beta(\langle x_i, x_l\rangle - 1)}},

        every exponent :math:`\le 0` (no overflow) and the diagonal term 1 (the sum never underflows): one product
        for the scores, one exponential in place, one product with the values and a column of ones appended
        (the numerators and the row sums together). The n x n matrix is formed, once per call."""
        beta = self.beta.to(x.dtype)[:, None, None]  # (B, 1, 1)
        e = torch.baddbmm(-beta, x * beta, x.transpose(1, 2)).exp_()  # (B, n, n): e^{beta (<x_i, x_j> - 1)}
        v = self.values(x)
        ones = torch.ones(v.shape[:-1] + (1,), dtype=v.dtype, device=v.device)
        out = torch.bmm(e, torch.cat([v, ones], dim=-1))  # (B, n, d_v + 1): sum_j e_ij [V x_j, 1]
        return out[..., :-1] / out[..., -1:]

    def __call__(self, t: float, y: Tensor) -> Tensor:
        r"""The velocity :math:`\mathbf P^\perp_{x_i}\sum_j w_{ij} V x_j` at :math:`x = y/\lVert y\rVert`
        (arXiv 2312.10794, Section 2: SA, or USA; :meth:`velocity`); ``t`` is unused (the field is autonomous)."""
        return self.velocity(unit(y))

    def velocity(self, x: Tensor) -> Tensor:
        r"""This head's velocity at unit tokens ``x`` (B, n, d) (arXiv 2312.10794, Section 2), the self-term apart:

        .. math:: \dot x_i = \mathbf P^\perp_{x_i}\Big(\sum_{j \ne i} w_{ij}\, V x_j\Big)
                  + w_{ii}\,\mathbf P^\perp_{x_i}\big((V - I)\, x_i\big),

        equal to :math:`\mathbf P^\perp_{x_i}\sum_j w_{ij} V x_j` since :math:`\mathbf P^\perp_{x_i} x_i = 0`. The
        term :math:`w_{ii} V x_i` can outweigh the others by :math:`e^{\beta(1 - \langle x_i, x_j\rangle)}` (USA's
        weights, or SA's self weight about 1 against :math:`e^{-\beta(1 - \langle x_i, x_j\rangle)}`); projected
        after the sum, its rounding, not the tangent part, was the velocity. Apart, each part carries its own
        relative rounding: for V = I the self-term is exactly 0 and dropped; otherwise
        :math:`(V - I) x_i` is formed per token (V - I is exact where V is near I).

        USA and causal SA form the weights (:meth:`weights`) and SA with A = I its n x n exponentials
        (:meth:`_attend_identity`): their diagonals are taken apart at no extra cost. The other SA runs (a given
        A, a padding mask, or a negative beta, without ``causal``) keep the fused kernel, which forms no weights:
        their velocity is the projected sum, of absolute error about :math:`10^{-16}\max_j\lVert V x_j\rVert` per
        token, so of relative error about :math:`10^{-16} e^{\beta(1 - \langle A x_i, x_j\rangle)}` where the
        nearest other token j sets it (at beta = 40 and :math:`\langle x_i, x_j\rangle = 0.5`, 5e-8)."""
        if self.model == "sa" and not self.causal and not self._identity_sa:
            return tangent(x, self.attend(x))  # the fused kernel: no weights to split (the limit above)
        others, w_self = self._split_identity(x) if self._identity_sa else self._split_weights(x)
        out = tangent(x, others)  # P^perp_{x_i} sum_{j != i} w_ij V x_j
        if self.V is not None:  # + w_ii P^perp_{x_i} (V - I) x_i; for V = I it is exactly 0
            out = out + w_self[..., None] * tangent(x, x @ self._v_minus_eye.transpose(-1, -2))
        return out if self.mask is None else out * self.mask[..., None]

    @cached_property
    def _v_minus_eye(self) -> Tensor:
        """V - I, (d, d) or (B, d, d): exact off the diagonal, and on it wherever V_kk lies in [1/2, 2] (Sterbenz)."""
        assert self.V is not None
        return self.V - torch.eye(self.V.shape[-1], dtype=self.V.dtype, device=self.V.device)

    def _split_weights(self, x: Tensor) -> tuple[Tensor, Tensor]:
        r"""(:math:`\sum_{j \ne i} w_{ij} V x_j` (B, n, d), :math:`w_{ii}` (B, n)) from the weights of :meth:`weights`."""
        w = self.weights(x)
        if w.requires_grad:
            w = w.clone()  # the diagonal is zeroed in place below
        diag = w.diagonal(dim1=-2, dim2=-1)
        w_self = diag.clone()
        diag.zero_()
        return attention.aggregate(w, self.values(x)), w_self

    def _split_identity(self, x: Tensor) -> tuple[Tensor, Tensor]:
        r"""(:math:`\sum_{j \ne i} w_{ij} V x_j`, :math:`w_{ii}`) of SA with A = I, :math:`\beta \ge 0`: the
        exponentials of :meth:`_attend_identity` with their diagonal taken out of the product and added to the row
        sums, :math:`Z_i = \sum_{j \ne i} e_{ij} + e_{ii}`."""
        beta = self.beta.to(x.dtype)[:, None, None]  # (B, 1, 1)
        e = torch.baddbmm(-beta, x * beta, x.transpose(1, 2)).exp_()  # (B, n, n): e^{beta (<x_i, x_j> - 1)}
        diag = e.diagonal(dim1=1, dim2=2)
        e_self = diag.clone()  # e^{beta (|x_i|^2 - 1)}, 1 to rounding
        diag.zero_()
        v = self.values(x)
        ones = torch.ones(v.shape[:-1] + (1,), dtype=v.dtype, device=v.device)
        out = torch.bmm(e, torch.cat([v, ones], dim=-1))  # (B, n, d_v + 1): sum_{j != i} e_ij [V x_j, 1]
        z = out[..., -1] + e_self  # (B, n): the row sums, diagonal included
        return out[..., :-1] / z[..., None], e_self / z


@dataclass(frozen=True)
class Heads:
    r"""Several heads summed, as the softmax paper's Section 6 sums them:
    :math:`\dot x_i = \mathbf P^\perp_{x_i}\sum_h\sum_j w^h_{ij} V_h x_j`, each head a :class:`SphereAttention`
    (its own :math:`A_h = K_h^\top Q_h` and :math:`V_h`; the same beta, model and masks)."""

    heads: tuple[SphereAttention, ...]

    @property
    def mask(self) -> Tensor | None:
        return self.heads[0].mask

    def attend(self, x: Tensor) -> Tensor:
        r""":math:`\sum_h \mathrm{Attn}_h(x)`, (B, n, d)."""
        out = self.heads[0].attend(x)
        for head in self.heads[1:]:
            out = out + head.attend(x)
        return out

    def __call__(self, t: float, y: Tensor) -> Tensor:
        r"""The velocity at :math:`x = y/\lVert y\rVert`: the sum of the heads' velocities
        (:meth:`SphereAttention.velocity`, each head's self-term apart), the tangent part of the summed heads."""
        x = unit(y)
        out = self.heads[0].velocity(x)
        for head in self.heads[1:]:
            out = out + head.velocity(x)
        return out
