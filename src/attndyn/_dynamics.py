r"""The softmax self-attention vector field (Geshkovski, Letrouit, Polyanskiy & Rigollet 2023).

Original dynamics, eq. (1)-(2), summed over heads h (Section 6):

.. math:: \dot x_i = \sum_h \sum_j P^h_{ij}(t)\, V_h x_j,\qquad
          P^h_{ij} = \frac{e^{\beta\langle Q_h x_i, K_h x_j\rangle}}{\sum_l e^{\beta\langle Q_h x_i, K_h x_l\rangle}}.

Rescaled dynamics, eq. (4) (one head), with :math:`z_i = e^{-tV} x_i`:

.. math:: \dot z_i = \sum_j P_{ij}(e^{tV} z)\, V (z_j - z_i).

A causal mask (``causal``) restricts every sum over j (and over l in :math:`P_{ij}`) to :math:`j \le i`:
token i attends to itself and the tokens before it (:func:`attndyn.attention.allowed`).

Discrete-time transformer, eq. (3), and its rescaled form (Remark 4, :math:`R = I + V\Delta t`):

.. math:: z^{[k+1]}_i = z^{[k]}_i + \Delta t \sum_j P_{ij}(R^k z^{[k]})\, R^{-1} V (z^{[k]}_j - z^{[k]}_i).

This module only evaluates fields and steps; integrators live in :mod:`attndyn.solvers`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor

from . import attention

__all__ = ["SoftmaxAttention", "rescaled_view"]


def rescaled_view(z: Tensor, V: Tensor, t: float, layer_step: float | None = None) -> Tensor:
    r"""The tokens x that rescaled tokens z stand for at time t: rows :math:`e^{tV} z_i` (eq. (4)), or, for a
    discrete run with layer step :math:`\Delta t` (Remark 4), rows :math:`R^k z_i` with :math:`R = I + V\Delta t`
    and :math:`k = t / \Delta t` (the layer index)."""
    if layer_step is None:
        M = torch.linalg.matrix_exp(t * V)
    else:
        eye = torch.eye(V.shape[-1], dtype=V.dtype, device=V.device)
        M = torch.linalg.matrix_power(eye + layer_step * V, round(t / layer_step))
    return z @ M.transpose(-1, -2)


@dataclass(frozen=True)
class SoftmaxAttention:
    r"""Softmax attention dynamics with heads ``Q``, ``K`` (H, d_q, d), ``V`` (H, d, d).

    ``rescaled`` selects eq. (4) (one head only). ``mask`` (B, n) marks real tokens; padding
    is never attended and does not move. ``causal``: token i attends to tokens :math:`j \le i` only.
    ``layer_step``: the :math:`\Delta t` of a rescaled discrete run (Remark 4), whose scores at layer k see
    :math:`R^k z` with :math:`R = I + V\Delta t`, not :math:`e^{tV} z` (:func:`rescaled_view`).
    The scores use :math:`A_h = K_h^\top Q_h` (:func:`attndyn.attention.scores`), computed once;
    identity matrices are skipped.
    """

    Q: Tensor
    K: Tensor
    V: Tensor
    beta: float = 1.0
    rescaled: bool = False
    mask: Tensor | None = None
    causal: bool = False
    layer_step: float | None = None
    # Per head, A_h = K_h^T Q_h and V_h, or None for the identity; set by __post_init__.
    _A: list[Tensor | None] = field(init=False, repr=False, compare=False)
    _V: list[Tensor | None] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        d = self.V.shape[-1]
        eye = torch.eye(d, dtype=self.V.dtype, device=self.V.device)
        A = self.K.transpose(-1, -2) @ self.Q  # (H, d, d): <Q x, K y> = <A x, y>
        # None stands for the identity, so that the common case Q = K = I costs no matmul.
        object.__setattr__(self, "_A", [None if torch.equal(a, eye) and not a.requires_grad else a for a in A])
        object.__setattr__(self, "_V", [None if torch.equal(v, eye) and not v.requires_grad else v for v in self.V])

    @property
    def heads(self) -> int:
        return self.V.shape[0]

    # ---- attention pattern ---------------------------------------------------------------
    def pattern(self, x: Tensor, head: int = 0, rows: slice = slice(None)) -> Tensor:
        """Attention matrix :math:`P^h` of the (effective) tokens ``x`` for query ``rows``: (B, r, n)."""
        s = attention.scores(x, self._A[head], rows=rows)  # (B, r, n)
        return attention.softmax_weights(s, self.mask, beta=self.beta, causal=self.causal, rows=rows)

    def attention(self, t: float, y: Tensor) -> Tensor:
        """Attention at time t of state y: (B, n, n), or (B, H, n, n) with several heads."""
        x = self.effective_tokens(t, y)
        ps = [self.pattern(x, h) for h in range(self.heads)]
        return ps[0] if self.heads == 1 else torch.stack(ps, dim=1)

    def effective_tokens(self, t: float, y: Tensor) -> Tensor:
        """The tokens that enter the scores: x itself, or in the rescaled form :func:`rescaled_view` of z."""
        if not self.rescaled:
            return y
        return rescaled_view(y, self.V[0], t, self.layer_step)

    def _values(self, y: Tensor, head: int) -> Tensor:
        V = self._V[head]
        return y if V is None else y @ V.transpose(-1, -2)  # rows V y_j

    # ---- vector field, chunked over query rows -------------------------------------------
    def _attend(self, x: Tensor, values: Tensor, head: int) -> Tensor:
        """:math:`\\sum_j P^h_{ij} v_j` for all i without forming P (:func:`attndyn.attention.softmax_attention`:
        a fused kernel where one exists, else chunks of query rows)."""
        A = self._A[head]
        q = x if A is None else x @ A.transpose(-1, -2)  # rows A x_i, (B, n, d): <A x_i, x_j> = q_i . x_j
        return attention.softmax_attention(q, x, values, self.mask, beta=self.beta, causal=self.causal)

    def __call__(self, t: float | Tensor, y: Tensor) -> Tensor:
        """Velocity: eq. (1) (summed over heads) or eq. (4) when ``rescaled``."""
        if self.rescaled:
            vz = self._values(y, 0)
            out = self._attend(self.effective_tokens(float(t), y), vz, 0) - vz  # sum_j P_ij V (z_j - z_i)
        else:
            out = self._attend(y, self._values(y, 0), 0)
            for h in range(1, self.heads):
                out = out + self._attend(y, self._values(y, h), h)
        if self.mask is not None:
            out = out * self.mask[..., None]
        return out

    def discrete_step(self, k: int, y: Tensor, dt: float) -> Tensor:
        """One layer of the discrete transformer: eq. (3), or Remark 4 when ``rescaled``."""
        if not self.rescaled:
            return torch.add(y, self(0.0, y), alpha=dt)
        eye = torch.eye(self.V.shape[-1], dtype=y.dtype, device=y.device)
        R = eye + dt * self.V[0]
        Rk = torch.linalg.matrix_power(R, k)
        W = torch.linalg.solve(R, self.V[0])  # R^{-1} V
        wz = y @ W.transpose(-1, -2)  # rows R^{-1} V z_j
        delta = self._attend(y @ Rk.transpose(-1, -2), wz, 0) - wz
        if self.mask is not None:
            delta = delta * self.mask[..., None]
        return torch.add(y, delta, alpha=dt)
