r"""Random attention parameters for ensembles of systems on the sphere (the authors' ``phase-diagrams.py`` options).

For each system, with :math:`G, G'` independent d x d standard Gaussian matrices:

* :math:`A = K^\top Q`: ``"identity"``; ``"gaussian"``, :math:`A = G G'/\sqrt d` (a product of Gaussian
  :math:`K^\top` and Q); ``"goe"``, :math:`A = (G + G^\top)/\sqrt 2` (the Gaussian orthogonal ensemble);
* V: ``"identity"``; ``"gaussian"``, :math:`V = G G^\top/\sqrt d` (symmetric, positive semi-definite, as in the
  authors' script); ``"plus"`` and ``"minus"``, :math:`V = \pm A/c` with c = 1, :math:`\sqrt d` or
  :math:`\sqrt{d+1}` for the identity, Gaussian or GOE A (the authors' normalisation).
"""

from __future__ import annotations

import math

import numpy as np

from .._validation import InputError

__all__ = ["KQ_ENSEMBLES", "V_ENSEMBLES", "random_parameters"]

KQ_ENSEMBLES = ("identity", "gaussian", "goe")
V_ENSEMBLES = ("identity", "gaussian", "plus", "minus")
_V_SCALE = {"identity": lambda d: 1.0, "gaussian": lambda d: math.sqrt(d), "goe": lambda d: math.sqrt(d + 1)}


def random_parameters(
    rng: np.random.Generator, shape: tuple[int, ...], d: int, kq: str, v: str
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(A, V)`` of shape ``shape + (d, d)`` drawn from ``rng`` (None for an identity), A first, then V.

    >>> A, V = random_parameters(np.random.default_rng(0), (2,), 3, "goe", "minus")
    >>> A.shape, bool(np.allclose(A, A.transpose(0, 2, 1))), bool(np.allclose(V, -A / 2))
    ((2, 3, 3), True, True)
    """
    if kq not in KQ_ENSEMBLES:
        raise InputError(f"unknown kq ensemble {kq!r}; choose one of {', '.join(KQ_ENSEMBLES)}")
    if v not in V_ENSEMBLES:
        raise InputError(f"unknown v ensemble {v!r}; choose one of {', '.join(V_ENSEMBLES)}")
    full = (*shape, d, d)
    A: np.ndarray | None = None
    if kq == "gaussian":
        A = rng.standard_normal(full) @ rng.standard_normal(full) / math.sqrt(d)
    elif kq == "goe":
        G = rng.standard_normal(full)
        A = (G + np.swapaxes(G, -1, -2)) / math.sqrt(2)
    V: np.ndarray | None = None
    if v == "gaussian":
        G = rng.standard_normal(full)
        V = G @ np.swapaxes(G, -1, -2) / math.sqrt(d)
    elif v in ("plus", "minus"):
        base = np.broadcast_to(np.eye(d), full) if A is None else A
        V = (1 if v == "plus" else -1) * base / _V_SCALE[kq](d)
    return A, V
