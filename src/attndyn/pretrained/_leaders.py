r"""Leaders of a pretrained model's heads: the hardmax paper's follow sets under a real head's scores.

For layer :math:`\ell` and head :math:`h`, the scores of the tokens :math:`X^\ell` entering the layer are

.. math::

    s_{ij} = \langle W_Q^h x_i + b_Q^h,\; W_K^h x_j + b_K^h\rangle = \langle A z_i, z_j\rangle,\qquad
    z_i = \begin{pmatrix} W_Q^h x_i + b_Q^h \\ W_K^h x_i + b_K^h \end{pmatrix}\in\mathbb{R}^{2 d_h},\quad
    A = \begin{pmatrix} 0 & 0 \\ I_{d_h} & 0 \end{pmatrix},

the hardmax paper's :math:`\langle A z_i, z_j\rangle` (eq. (1.1b)), computed by
:func:`attndyn.attention.scores` on the tokens written as (query, key) pairs. (The same scores are
:math:`\langle \tilde W_K^\top \tilde W_Q \tilde x_i, \tilde x_j\rangle` with :math:`\tilde x = (x, 1)`,
:math:`\tilde W = [W \mid b]`, a (d+1)-square A of rank d_h: the pair form costs
:math:`(2d_h)^2` instead of :math:`(d+1)^2` per token.) The follow set :math:`C_i` is every
maximiser of row i (:func:`attndyn.attention.follow_sets`, exact ties); token i *leads* under the
head if :math:`C_i = \{i\}` (Definition 1.1). The model's own softmax attention is
:math:`\mathrm{softmax}(s/\sqrt{d_h})` (:func:`attndyn.attention.softmax_weights` with
:math:`\beta = 1/\sqrt{d_h}`); tests check it against the attention the model returns.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..attention import follow_sets, scores, softmax_weights
from ._adapter import Forward, LayerWeights

__all__ = ["head_scores", "head_attention", "LeaderMap", "leader_map"]


def head_scores(x: Tensor, w: LayerWeights) -> Tensor:
    r"""Scores :math:`s^h_{ij}` of every head of one layer on tokens ``x`` (n, d): shape (H, n, n)."""
    q = torch.einsum("hkd,nd->hnk", w.W_Q, x) + w.b_Q[:, None, :]  # (H, n, d_h): W_Q^h x_i + b_Q^h
    k = torch.einsum("hkd,nd->hnk", w.W_K, x) + w.b_K[:, None, :]  # (H, n, d_h)
    z = torch.cat([q, k], dim=-1)  # (H, n, 2 d_h): the pairs z_i
    d_h = q.shape[-1]
    A = torch.zeros(2 * d_h, 2 * d_h, dtype=x.dtype)
    A[d_h:, :d_h] = torch.eye(d_h, dtype=x.dtype)  # A z_i = (0, q_i), so <A z_i, z_j> = <q_i, k_j>
    return scores(z, A)  # (H, n, n)


def head_attention(x: Tensor, w: LayerWeights, beta: float) -> Tensor:
    r""":math:`P^h = \mathrm{softmax}(\beta s^h)` for every head of one layer: (H, n, n)."""
    return softmax_weights(head_scores(x, w), beta=beta)


@dataclass(frozen=True)
class LeaderMap:
    r"""Leaders and followers of every head at every layer of one text.

    ``leads`` (L, H, n): :math:`C_i = \{i\}` under head (ℓ, h); ``indegree`` (L, H, n): how many
    tokens i have j in :math:`C_i` (j is "attended by many" when large); ``received`` (L, H, n):
    the softmax attention j receives, :math:`\sum_i P^{\ell,h}_{ij}` (from the model's own attention).
    """

    leads: Tensor
    indegree: Tensor
    received: Tensor

    @property
    def counts(self) -> Tensor:
        """(L, n): in how many heads of each layer each token leads."""
        return self.leads.sum(dim=1)

    def layer_leaders(self, layer: int, *, min_heads: int = 1) -> list[int]:
        """Tokens leading in at least ``min_heads`` heads of ``layer``."""
        return torch.nonzero(self.counts[layer] >= min_heads).flatten().tolist()

    def persistence(self) -> list[float]:
        """Jaccard overlap of the leader sets (tokens leading in >= 1 head) of consecutive layers (L - 1)."""
        out = []
        for a, b in zip(self.counts[:-1] > 0, self.counts[1:] > 0):
            union = int((a | b).sum())
            out.append(float((a & b).sum()) / union if union else 1.0)
        return out


def leader_map(fwd: Forward, weights: list[LayerWeights]) -> LeaderMap:
    """Follow sets of every head at every layer, from the states entering each layer."""
    leads, indeg = [], []
    for ell, w in enumerate(weights):
        follow = follow_sets(head_scores(fwd.hidden[ell], w))  # (H, n, n): (i, j) True when j in C_i
        own = torch.diagonal(follow, dim1=-2, dim2=-1)  # (H, n): i in C_i
        leads.append(own & (follow.sum(dim=-1) == 1))  # C_i = {i}
        indeg.append(follow.sum(dim=-2))  # (H, n): |{i : j in C_i}|
    return LeaderMap(leads=torch.stack(leads), indegree=torch.stack(indeg), received=fwd.attention.sum(dim=-2))
