r"""Discrete transformer layers on the sphere: one attention sublayer and a layer normalisation, four ways.

Each scheme is one small function ``layer(attend, y, h) -> y_next`` of the residual stream ``y`` (B, n, d),
the step size h and the attention sublayer ``attend`` (:meth:`SphereAttention.attend
<attndyn.sphere._field.SphereAttention.attend>`, :math:`\mathrm{Attn}(x)_i = \sum_j w_{ij} V x_j` for unit
tokens x), with :math:`N(y)_i = y_i/\lVert y_i\rVert` the normalisation (a layer norm without centring or
gain, as in arXiv 2312.10794, Section 2, and in the normalisation schemes compared by Karagodin et al.,
arXiv 2510.22026). The tokens on the sphere are :math:`x = N(y)`; post-LN and nGPT keep the stream itself on
the sphere, pre-LN and peri-LN let its norm grow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from .._errors import InputError, param
from ._field import unit

__all__ = ["NORMS", "post_ln", "pre_ln", "peri_ln", "ngpt", "resolve_norm"]


def _direction(v: Tensor) -> Tensor:
    """:math:`N(v)`, with a zero row left at zero (an attention output may vanish; N is then undefined)."""
    norm = torch.linalg.vector_norm(v, dim=-1, keepdim=True)
    return v / norm.clamp_min(torch.finfo(v.dtype).tiny)


Attend = Callable[[Tensor], Tensor]


def post_ln(attend: Attend, y: Tensor, h: float) -> Tensor:
    r"""Post-LN: :math:`y^{k+1} = N\big(y^k + h\,\mathrm{Attn}(y^k)\big)` (the step of the authors' phase diagrams;
    the Euler step of SA/USA followed by the retraction, up to :math:`O(h^2)`)."""
    return unit(y + h * attend(y))


def pre_ln(attend: Attend, y: Tensor, h: float) -> Tensor:
    r"""Pre-LN: :math:`y^{k+1} = y^k + h\,\mathrm{Attn}\big(N(y^k)\big)` (the stream is not normalised)."""
    return y + h * attend(unit(y))


def peri_ln(attend: Attend, y: Tensor, h: float) -> Tensor:
    r"""Peri-LN: :math:`y^{k+1} = y^k + h\,N\big(\mathrm{Attn}(N(y^k))\big)` (the sublayer's input and output
    normalised)."""
    return y + h * _direction(attend(unit(y)))


def ngpt(attend: Attend, y: Tensor, h: float) -> Tensor:
    r"""nGPT (Loshchilov et al. 2024): :math:`y^{k+1} = N\big(y^k + h\,(N(\mathrm{Attn}(y^k)) - y^k)\big)`, a step of
    size h from :math:`y^k` towards the normalised output on the sphere."""
    return unit(y + h * (_direction(attend(y)) - y))


#: The normalisation schemes of ``method="discrete"``, by name.
NORMS: dict[str, Callable[[Attend, Tensor, float], Tensor]] = {
    "post": post_ln,
    "pre": pre_ln,
    "peri": peri_ln,
    "ngpt": ngpt,
}


def resolve_norm(method: Any, norm: Any) -> str | None:
    """The layers of ``method``: ``norm`` (post-LN when None) for the discrete method, None for any other, which
    refuses a ``norm`` (it names layers, and only the discrete method has them)."""
    if norm is not None and norm not in NORMS:
        raise InputError(f"unknown norm {norm!r}; choose one of {', '.join(NORMS)}")
    if norm is not None and method != "discrete":
        raise InputError(
            f"{param('norm', 'norm=')}{norm!r} sets the layers of the discrete method; drop it or use "
            + param("method.discrete", "method='discrete'")
        )
    return (norm or "post") if method == "discrete" else None
