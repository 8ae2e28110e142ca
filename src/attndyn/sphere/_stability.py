r"""Whether a fixed-step scheme's step is inside its stability interval for the field of a run on the sphere.

A Runge–Kutta step h on a mode that relaxes at rate :math:`\lambda` (:math:`\dot y = -\lambda y`) is stable when
:math:`h\lambda` lies in the scheme's stability interval on the negative real axis: 2 for Euler, the midpoint rule
and Heun, 2.785 for RK4 (Hairer & Wanner, *Solving Ordinary Differential Equations II*, Section IV.2). Beyond it
the step amplifies what the flow damps, and the run is integration error, in float64 as in float32.

The rate of the field of SA and USA (arXiv 2312.10794, eq. (2.1) and the USA weights of Section 2) is estimated by
the size of its weighted sum:

.. math:: \lambda_{\mathrm{SA}} = \sum_h \lVert V_h\rVert_2, \qquad
          \lambda_{\mathrm{USA}} = \sum_h \lVert V_h\rVert_2\, e^{|\beta|\,\lVert K_h^\top Q_h\rVert_2}

(SA's weights sum to 1; each USA weight :math:`e^{\beta\langle Q_h x_i, K_h x_j\rangle}/n` is at most
:math:`e^{|\beta|\lVert K_h^\top Q_h\rVert_2}/n` for unit tokens). A cluster of USA tokens relaxes at about this
rate: with Q = K = V = I, 16 tokens in d = 3 and T = 10, RK4 stays within 3e-4 of an adaptive solve wherever
:math:`h\lambda \le 2.785` and leaves it by O(1) from :math:`h\lambda \approx 5` (tests/sphere/test_stability.py);
SA's rate does not grow with beta (RK4 at h = 0.5 is accurate to 1e-4 at beta = 160). The estimate is a guide,
not a bound: beyond it a verdict is left undecided, a run is not refused.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .._errors import param
from ..solvers import STABILITY_INTERVAL, unstable_note
from ._trajectory import SphereParams

__all__ = ["field_rate", "rate", "unstable", "unstable_step"]


def rate(v_norm: Tensor, a_norm: Tensor, beta: Tensor, attention: str) -> Tensor:
    r"""The estimated rate of one head, :math:`\lVert V\rVert_2` (SA) or :math:`\lVert V\rVert_2
    e^{|\beta|\lVert K^\top Q\rVert_2}` (USA), from the norms of V and of :math:`A = K^\top Q` (broadcast)."""
    v_norm, a_norm, beta = (torch.as_tensor(t, dtype=torch.float64) for t in (v_norm, a_norm, beta))
    if attention == "sa":
        return torch.broadcast_tensors(v_norm, a_norm, beta)[0].clone()
    return v_norm * torch.exp(beta.abs() * a_norm)


def field_rate(params: SphereParams) -> Tensor:
    r"""The estimated rate :math:`\lambda` of a run's field, summed over its heads: one per sequence ``(B,)``."""
    Q, K, V = (m.double() if m.ndim == 3 else m.double()[None] for m in (params.Q, params.K, params.V))
    H = max(Q.shape[0], K.shape[0], V.shape[0])
    v = torch.linalg.matrix_norm(V, ord=2).expand(H)  # (H,)
    a = torch.linalg.matrix_norm(K.transpose(1, 2) @ Q, ord=2).expand(H)  # (H,): <Q x, K y> = <K^T Q x, y>
    return rate(v, a, params.beta.double().cpu()[:, None], params.attention).sum(dim=-1)


def unstable(
    step: float, method: str, attention: str, rates: Tensor, beta: Tensor, *, adaptive: bool = True
) -> str | None:
    r"""Why a fixed step cannot be trusted (a sentence naming the step to use), or None: the scheme ``method``'s
    :math:`h\lambda` exceeds its stability interval for some sequence (``rates``, ``beta``: ``(B,)``). Layers
    (``method="discrete"``) and adaptive schemes are not judged: layers are a model of their own, and an adaptive
    scheme controls its error. The sentence's remedy is a smaller step, or an adaptive scheme (where the caller
    has one, ``adaptive``) or smaller betas."""
    lam = float(rates.max())
    over = beta.double().cpu().abs()[step * rates > STABILITY_INTERVAL.get(method, float("inf"))]
    if len(over) == 0:
        return None
    which = "" if len(rates) == 1 or len(set(beta.tolist())) == 1 else f" from |beta| = {float(over.min()):g}"
    formula = "||V|| e^(|beta| ||K^T Q||) for USA" if attention == "usa" else "||V|| for SA"
    remedy = None if adaptive else f"{param('beta_max', 'betas')} below {float(over.min()):g}"
    return unstable_note(method, step, lam, formula, where=which, remedy=remedy)


def unstable_step(params: SphereParams) -> str | None:
    """:func:`unstable` for a run's own settings."""
    return unstable(params.step, params.method, params.attention, field_rate(params), params.beta)
