r"""Do a pretrained model's token representations cluster as depth grows? (the premise of both papers)

At each depth :math:`\ell` (the states :math:`X^\ell` entering layer :math:`\ell`, and those leaving
the last) the tokens are put on the unit sphere, :math:`u_i = x_i/\|x_i\|` (the softmax paper's
Section 7 picture; layer normalization makes norms nearly equal anyway), and three numbers are read:

- the mean pairwise cosine similarity :math:`\frac{2}{n(n-1)}\sum_{i<j}\langle u_i, u_j\rangle`;
- the number of clusters of the :math:`u_i` at distance ``tol`` (single linkage,
  :func:`attndyn.analysis.clusters`); :math:`\|u_i - u_j\| \le \mathrm{tol}` means
  :math:`\cos\angle(u_i, u_j) \ge 1 - \mathrm{tol}^2/2`;
- the effective rank of :math:`U` (n, d), :math:`\exp(-\sum_k p_k\log p_k)` with
  :math:`p_k = \sigma_k/\sum_l\sigma_l` its normalized singular values (Roy & Vetterli 2007):
  1 when all tokens are parallel, up to min(n, d).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._threads import limit_threads
from .._validation import InputError
from ..analysis import clusters

if TYPE_CHECKING:
    from torch import Tensor

__all__ = ["DepthClusters", "depth_clusters", "effective_rank", "check_tol", "DEFAULT_TOL"]

DEFAULT_TOL = 0.5  # cosine >= 0.875 within a chain of neighbours


def effective_rank(X: ArrayLike) -> float:
    """Entropy-based effective rank of a matrix (rows = tokens).

    >>> round(effective_rank([[1.0, 0.0], [2.0, 0.0]]), 6), round(effective_rank([[1.0, 0.0], [0.0, 1.0]]), 6)
    (1.0, 2.0)
    """
    s = np.linalg.svd(np.asarray(X, dtype=np.float64), compute_uv=False)
    if s.sum() == 0:
        return 0.0
    p = s[s > 0] / s.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


@dataclass(frozen=True)
class DepthClusters:
    """Cluster statistics per depth 0..L (``L + 1`` entries each) at tolerance ``tol``."""

    tol: float
    cosine: tuple[float, ...]
    clusters: tuple[int, ...]
    effective_rank: tuple[float, ...]
    members: tuple[tuple[tuple[int, ...], ...], ...]  # per depth, the clusters' token indices

    def record(self) -> dict:
        return {
            "tol": self.tol,
            "cosine_mean": list(self.cosine),
            "clusters": list(self.clusters),
            "effective_rank": list(self.effective_rank),
            "members": [[list(c) for c in m] for m in self.members],
        }


def depth_clusters(
    hidden: Tensor | ArrayLike, *, tol: float = DEFAULT_TOL, tokens: ArrayLike | None = None
) -> DepthClusters:
    """Cosine similarity, clusters and effective rank of the unit-normalized tokens at every depth.

    ``hidden`` (L + 1, n, d); ``tokens`` the indices to use (default: all).

    >>> h = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.1], [1.0, 0.0]]])
    >>> dc = depth_clusters(h, tol=0.5)
    >>> dc.clusters, [round(c, 3) for c in dc.cosine]
    ((2, 1), [0.0, 0.995])
    """
    h = np.asarray(hidden.detach().cpu() if hasattr(hidden, "detach") else hidden, dtype=np.float64)
    if h.ndim != 3:
        raise InputError(f"hidden must have shape (depths, n, d), got {h.shape}")
    tol = check_tol(tol)
    idx = np.arange(h.shape[1]) if tokens is None else _token_indices(tokens, h.shape[1])
    with limit_threads(blas_threads=1):
        return _per_depth(h[:, idx], idx, tol)


def check_tol(tol: float, name: str = "tol") -> float:
    """``tol`` as a float in (0, 2], the distances between unit vectors; else an InputError naming it ``name``
    (:func:`attndyn._errors.param` marks a parameter a command line names by its flag).

    >>> check_tol(0.5)
    0.5
    """
    try:
        value = float(tol)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number in (0, 2], got {tol!r}") from None
    if not 0 < value <= 2:
        raise InputError(f"{name}={value!r} is a distance between unit vectors; choose 0 < {name} <= 2")
    return value


def _token_indices(tokens: ArrayLike, n: int) -> np.ndarray:
    """``tokens`` as distinct integer indices 0..n-1 of the tokens in ``hidden``; an InputError naming the range."""
    want = f"tokens must be a list of distinct token indices from 0 to {n - 1} (hidden holds {n} tokens)"
    try:
        idx = np.asarray(tokens)
    except ValueError:  # ragged nested lists
        raise InputError(f"{want}, got {tokens!r}") from None
    if idx.ndim != 1 or idx.size == 0 or idx.dtype.kind not in "iu":
        raise InputError(f"{want}, got {tokens!r}")
    bad = idx[(idx < 0) | (idx >= n)]
    if bad.size:
        raise InputError(f"{want}; {int(bad[0])} is out of range")
    if len(np.unique(idx)) != idx.size:
        raise InputError(f"{want}; {tokens!r} repeats an index")
    return idx.astype(int)


def _per_depth(h: np.ndarray, idx: np.ndarray, tol: float) -> DepthClusters:
    cos, ncl, er, mem = [], [], [], []
    for X in h:
        U = X / np.maximum(np.linalg.norm(X, axis=1, keepdims=True), 1e-300)  # (n, d) on the sphere
        n = len(U)
        G = U @ U.T
        cos.append(float((G.sum() - np.trace(G)) / (n * (n - 1))) if n > 1 else 1.0)
        cl = clusters(U, members=idx, tol=tol)
        ncl.append(len(cl))
        mem.append(tuple(c.members for c in cl))
        er.append(effective_rank(U))
    return DepthClusters(tol=tol, cosine=tuple(cos), clusters=tuple(ncl), effective_rank=tuple(er), members=tuple(mem))
