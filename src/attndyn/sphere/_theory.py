r"""What the theory of arXiv 2312.10794 says about tokens on the sphere, measured on a run.

Statistics of one configuration (unit tokens ``x`` (n, d), or a batch (..., n, d)):

* the interaction energy :math:`E_\beta(x) = \frac{1}{2\beta n^2}\sum_{i,j} e^{\beta\langle x_i, x_j\rangle}`
  (Section 2): with :math:`Q = K = V = I`, USA is the gradient ascent
  :math:`\dot x_i = n\,\mathbf P^\perp_{x_i}\nabla_{x_i}E_\beta`, so :math:`E_\beta` never decreases along it;
* the Kuramoto order parameter :math:`r = \lVert\frac1n\sum_i x_i\rVert` (on the circle
  :math:`|\frac1n\sum_i e^{i\theta_i}|`);
* the fraction of clustered pairs, :math:`\#\{i \ne j: \langle x_i, x_j\rangle > 1 - \delta\}/(n(n-1))`, and the
  cluster count of the authors' phase diagrams, the rank of the thresholded Gram matrix
  :math:`\mathbf 1[\langle x_i, x_j\rangle > 1 - \delta]`;
* clusters with an angular threshold: the connected components of the graph
  :math:`\angle(x_i, x_j) \le \theta`.

And the orthogonal start (Section 6 of the paper, the curve of its phase diagrams): n pairwise orthogonal
tokens under SA with :math:`Q = K = V = I` keep one common inner product :math:`\gamma(t)`,

.. math:: \gamma' = \frac{2 e^{\beta\gamma}(1-\gamma)\big((n-1)\gamma + 1\big)}{e^\beta + (n-1)e^{\beta\gamma}},
          \qquad \gamma(0) = 0,

so :math:`\gamma = \tanh t` for n = 2, β = 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import Tensor

from .._validation import InputError

__all__ = [
    "energy",
    "kuramoto",
    "clustered_fraction",
    "cluster_rank",
    "threshold_rank",
    "sphere_clusters",
    "plateaus",
    "gamma_rhs",
    "gamma_curve",
    "gamma_crossing",
]


def _gram(x: Tensor) -> Tensor:
    return x @ x.transpose(-1, -2)  # (..., n, n): <x_i, x_j>


def _tokens(x: Any, name: str = "x") -> Tensor:
    """Tokens (..., n, d) as a tensor (a numpy array or nested list: float64), refused with an InputError when they
    have fewer than two axes or are not finite."""
    if not isinstance(x, Tensor):
        try:
            x = torch.as_tensor(np.asarray(x, dtype=np.float64))
        except (TypeError, ValueError):
            raise InputError(f"{name} must be tokens (n, d) of numbers, got {type(x).__name__}") from None
    if x.ndim < 2:
        raise InputError(f"{name} must be tokens of shape (n, d) or (..., n, d), got shape {tuple(x.shape)}")
    if x.shape[-2] == 0 or x.shape[-1] == 0:
        raise InputError(f"{name} has shape {tuple(x.shape)}, no tokens; give at least one token (n >= 1) of d >= 1")
    if not bool(torch.isfinite(x).all()):
        raise InputError(f"{name} holds NaN or inf; give finite tokens")
    return x


def _delta(delta: Any) -> float:
    if isinstance(delta, bool) or not isinstance(delta, (int, float, np.integer, np.floating)) or not 0 < delta < 2:
        raise InputError(f"delta must be a number in (0, 2) (pairs with <x_i, x_j> > 1 - delta), got {delta!r}")
    return float(delta)


def energy(x: Tensor, beta: float | Tensor) -> Tensor:
    r""":math:`E_\beta(x) = \frac{1}{2\beta n^2}\sum_{i,j} e^{\beta\langle x_i, x_j\rangle}` of unit tokens ``x``
    (..., n, d), one value per configuration. At :math:`\beta = 0` it is :math:`\frac{1}{2n^2}\sum_{i,j}
    \langle x_i, x_j\rangle = \frac12|\bar x|^2`, the limit of :math:`E_\beta - \frac{1}{2\beta}` (the same gradient
    ascent), computed in the second form (never negative).
    Computed as :math:`\exp(\mathrm{logsumexp})`: inf only where the energy itself overflows.

    >>> x = torch.tensor([[1.0, 0.0], [1.0, 0.0]], dtype=torch.float64)
    >>> round(float(energy(x, 2.0)), 6) == round(math.e**2 / 4, 6)
    True
    """
    x = _tokens(x)
    g = _gram(x)
    n = x.shape[-2]
    b = torch.as_tensor(beta, dtype=x.dtype, device=x.device)
    if not bool(torch.isfinite(b).all()):
        raise InputError(f"beta must be finite (one number, or one per configuration), got {_short(beta)}")
    b = b.reshape(b.shape + (1,) * 2) if b.ndim else b
    flat = (b * g).flatten(-2)
    big = torch.logsumexp(flat, dim=-1) - math.log(2 * n * n)
    linear = x.mean(dim=-2).pow(2).sum(-1) / 2  # the sum of the Gram entries as |mean|^2 / 2: >= 0, no cancellation
    bb = b.reshape(b.shape[:-2]) if b.ndim else b
    safe = torch.where(bb == 0, torch.ones_like(bb), bb)
    return torch.where(bb == 0, linear, torch.exp(big) / safe)


def kuramoto(x: Tensor) -> Tensor:
    r"""The order parameter :math:`r = \lVert\frac1n\sum_i x_i\rVert \in [0, 1]` (1: all tokens equal)."""
    return torch.linalg.vector_norm(_tokens(x).mean(dim=-2), dim=-1)


def clustered_fraction(x: Tensor, delta: float) -> Tensor:
    r"""Fraction of ordered pairs :math:`i \ne j` with :math:`\langle x_i, x_j\rangle > 1 - \delta` (1 for one token)."""
    x, delta = _tokens(x), _delta(delta)
    n = x.shape[-2]
    if n < 2:
        return torch.ones(x.shape[:-2], dtype=x.dtype, device=x.device)
    close = _gram(x) > 1 - delta
    off = ~torch.eye(n, dtype=torch.bool, device=x.device)
    return (close & off).sum(dim=(-1, -2)).to(x.dtype) / (n * (n - 1))


def cluster_rank(x: Tensor, delta: float) -> Tensor:
    r"""The authors' cluster count: the rank of :math:`T = \mathbf 1[\langle x_i, x_j\rangle > 1 - \delta]` (n, n),
    one per configuration (..., n, d) -> (...).

    Where the threshold graph is a union of cliques (T is an equivalence), T is, up to a permutation, block
    diagonal with all-ones blocks, so its rank is the number of blocks: the tokens that are the first of their row.
    With f(i) the first True of row i, T is an equivalence exactly when :math:`T_{ij} = [f(i) = f(j)]` for all
    i, j -- a check in O(n^2). Only the other configurations go to :func:`torch.linalg.matrix_rank` (eigenvalues
    or an SVD), so the statistic is the same and the common case is cheap (:func:`threshold_rank`).

    >>> x = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    >>> int(cluster_rank(x, 1e-4))
    2
    """
    t = _gram(_tokens(x)) > 1 - _delta(delta)  # (..., n, n)
    return threshold_rank(t.reshape(-1, *t.shape[-2:])).reshape(t.shape[:-2])


def threshold_rank(t: Tensor) -> Tensor:
    """The rank of each boolean (n, n) matrix of ``t`` (B, n, n), by the block count of :func:`cluster_rank` where
    it is an equivalence, else by :func:`torch.linalg.matrix_rank` (eigenvalues where the matrix is symmetric).

    With f(i) the first True of row i, T is an equivalence exactly when :math:`T_{ij} = [f(i) = f(j)]` for all i, j
    (then T is the kernel of f; conversely the first element of a class labels it), and its rank is then the
    number of classes, the i with f(i) = i."""
    n = t.shape[-1]
    first = t.view(torch.uint8).max(dim=2).indices  # (B, n): f(i), the first True of row i (0 for an empty row)
    equivalence = (t == (first[:, :, None] == first[:, None, :])).flatten(1).all(dim=1)  # T_ij == [f(i) == f(j)]
    rank = (first == torch.arange(n, device=t.device)).sum(dim=1)
    other = torch.nonzero(~equivalence).flatten()
    if len(other):
        rest = t[other]
        symmetric = bool((rest == rest.transpose(1, 2)).all())
        rank[other] = torch.linalg.matrix_rank(rest.to(torch.float64), hermitian=symmetric)
    return rank


def sphere_clusters(x: Any, angle: float) -> list[list[int]]:
    r"""Clusters of unit tokens ``x`` (n, d): the connected components of the graph linking i and j when the angle
    between them is at most ``angle`` (radians), read as the chord :math:`\lVert x_i - x_j\rVert \le
    2\sin(\theta/2)` (:math:`\theta` capped at :math:`\pi`) with 4 machine epsilons allowed for rounding: unlike
    :math:`\langle x_i, x_j\rangle \ge \cos\theta`, whose cosine rounds to 1 below about 1.5e-8 radians, it
    resolves small angles, and identical tokens always share a cluster. Each cluster is a sorted list of token
    indices, the clusters ordered by their first index.

    >>> sphere_clusters(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1e-4]]), 1e-3)
    [[0, 2], [1]]
    """
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial.distance import cdist

    if isinstance(angle, bool) or not isinstance(angle, (int, float, np.integer, np.floating)) or not angle >= 0:
        raise InputError(f"angle must be a number >= 0 (radians), got {angle!r}")
    pts = _tokens(x.detach().cpu() if isinstance(x, Tensor) else x).to(torch.float64).numpy()
    if pts.ndim != 2:
        raise InputError(f"x must be the tokens of one configuration, shape (n, d), got shape {pts.shape}")
    chord = 2.0 * math.sin(min(float(angle), math.pi) / 2.0)
    linked = cdist(pts, pts) <= chord + 4 * np.finfo(np.float64).eps  # (n, n), the differences taken directly
    _, labels = connected_components(linked, directed=False)
    groups: dict[int, list[int]] = {}
    for i, lab in enumerate(labels):
        groups.setdefault(int(lab), []).append(i)
    return sorted(groups.values())


def plateaus(ts: Any, values: Any) -> list[dict[str, float]]:
    """The staircase of ``values`` over the times ``ts``: maximal runs of equal values, each
    ``{"value", "start", "end", "duration"}`` (from the first time of the run to the first time of the next,
    or the last time). Metastable states show as long plateaus of the cluster count.

    >>> [p["duration"] for p in plateaus([0, 1, 2, 3, 4], [3, 3, 2, 2, 2])]
    [2.0, 2.0]
    """
    t = [float(v) for v in ts]
    v = [float(u) for u in values]
    if len(t) != len(v):
        raise InputError(f"ts has {len(t)} times but values has {len(v)}; give one value per time")
    out: list[dict[str, float]] = []
    start = 0
    for k in range(1, len(v) + 1):
        if k == len(v) or v[k] != v[start]:
            end = t[k] if k < len(v) else t[-1]
            out.append({"value": v[start], "start": t[start], "end": end, "duration": end - t[start]})
            start = k
    return out


def _exp_or_inf(power: float) -> float:
    """e^power, inf where it overflows a float (math.exp raises there)."""
    return math.exp(power) if power < 709.0 else math.inf


def gamma_rhs(gamma: float, n: int, beta: float, attention: str = "sa") -> float:
    r""":math:`\gamma' = 2e^{\beta\gamma}(1-\gamma)((n-1)\gamma+1)/Z` with :math:`Z = e^\beta + (n-1)e^{\beta\gamma}`
    for SA (written with :math:`e^{\beta(\gamma - 1)}`, or its inverse when that exceeds 1, so that no beta of either
    sign overflows it) and :math:`Z = n` for USA (inf where :math:`e^{\beta\gamma}` overflows), whose
    weights are not normalised (the orthogonal start keeps every pair's inner product equal to :math:`\gamma`)."""
    if attention == "usa":
        return 2 * _exp_or_inf(beta * gamma) * (1 - gamma) * ((n - 1) * gamma + 1) / n
    a = beta * (gamma - 1)  # e^a = e^{beta gamma} / e^{beta}; for a > 0 (beta < 0) divide by e^a instead
    share = math.exp(a) / (1 + (n - 1) * math.exp(a)) if a <= 0 else 1 / (math.exp(-a) + (n - 1))
    return 2 * share * (1 - gamma) * ((n - 1) * gamma + 1)


def gamma_curve(
    ts: Any, n: int, beta: float, *, attention: str = "sa", rtol: float = 1e-11, atol: float = 1e-13
) -> np.ndarray:
    r""":math:`\gamma(t)` of the orthogonal start at the times ``ts`` (increasing, from 0), by scipy's DOP853, for
    ``attention`` "sa" or "usa" (:func:`gamma_rhs`; USA in :math:`u = -\log(1-\gamma)`, where it is not stiff)
    with Q = K = V = I. USA from beta = 30 on, or wherever its solve stops short of the last time (from about
    beta = 38 the rise of u is shorter than the spacing of float times), is answered by inverting
    :func:`gamma_crossing`'s quadrature instead (:func:`_usa_gamma_by_quadrature`; ``rtol``, ``atol`` unused), so
    that the two agree on the time. A solve that cannot be completed is an InputError, never a shorter array.

    >>> bool(abs(gamma_curve([0.0, 1.0], 2, 0.0)[1] - math.tanh(1.0)) < 1e-9)
    True
    """
    from scipy.integrate import solve_ivp

    n, beta = _gamma_args(n, beta)
    attention = _gamma_attention(attention)
    t = np.asarray(ts, dtype=np.float64)
    if t.ndim != 1 or not len(t) or not np.isfinite(t).all() or t[0] < 0 or bool(np.any(np.diff(t) < 0)):
        raise InputError(f"ts must be finite times >= 0 in increasing order, got {_short(ts)}")
    if t[-1] == 0:
        return np.zeros_like(t)
    t, again = np.unique(t, return_inverse=True)  # scipy's t_eval takes each time once
    if attention == "usa":  # stiff near gamma = 1 (rate about e^beta): solved in u = -log(1 - gamma), where it is not
        return _usa_gamma_curve(t, n, beta, rtol, atol)[again]
    sol = solve_ivp(
        lambda _, g: [gamma_rhs(float(g[0]), n, beta, attention)], (0.0, float(t[-1])), [0.0], t_eval=t, method="DOP853",
        rtol=rtol, atol=atol,
    )  # fmt: skip
    _check_solved(sol, t, n, beta, attention)
    return np.asarray(sol.y[0])[again]


def _check_solved(sol: Any, t: np.ndarray, n: int, beta: float, attention: str) -> None:
    """An InputError when scipy's solve stopped short of the last time ``t[-1]`` (it returns fewer values)."""
    if not sol.success or sol.y.shape[-1] != len(t):
        raise InputError(
            f"the orthogonal start's gamma ODE (n={n}, beta={beta:g}, {attention}) could not be solved to "
            f"t = {float(t[-1]):g}: {sol.message}; try a smaller beta"
        )


def _usa_gamma_curve(t: np.ndarray, n: int, beta: float, rtol: float, atol: float) -> np.ndarray:
    r"""USA's :math:`\gamma(t)` through :math:`u = -\log(1-\gamma)`: :math:`u' = \gamma'/(1-\gamma) =
    2e^{\beta\gamma}((n-1)\gamma+1)/n` tends to the constant :math:`2e^\beta` where :math:`\gamma'` is stiff
    (explicit DOP853 on :math:`\gamma` did not return in 100 s at beta = 20, and at beta = 50 returned one value
    for three times). From about beta = 38 the rise of u is shorter than the spacing of float times and the solve
    stops short; from beta = 30 its answer already turns on the times asked (gamma' t reaches 1e9). There, and
    wherever the solve stops short, the times are answered by :func:`_usa_gamma_by_quadrature`."""
    from scipy.integrate import solve_ivp

    if beta >= 30.0:
        return _usa_gamma_by_quadrature(t, n, beta)

    def rate(_: float, u: np.ndarray) -> list[float]:
        g = -math.expm1(-float(u[0]))  # 1 - e^{-u}
        return [2 * _exp_or_inf(beta * g) * ((n - 1) * g + 1) / n]

    def settled(_: float, u: np.ndarray) -> float:  # gamma = 1 - e^{-u} is 1.0 in float64 from u = 40 on
        return float(u[0]) - 40.0

    settled.terminal = True  # type: ignore[attr-defined]  # scipy reads the attribute
    with np.errstate(over="ignore", invalid="ignore"):  # a rate of inf (beta ~ 1e6) fails the solve, answered below
        sol = solve_ivp(
            rate, (0.0, float(t[-1])), [0.0], t_eval=t, method="DOP853", rtol=rtol, atol=atol, events=settled
        )
    if sol.status == 1:  # stopped at u = 40: every later time has gamma = 1
        u = np.full(len(t), 40.0)
        u[: sol.y.shape[-1]] = sol.y[0]
        return -np.expm1(-u)
    if sol.success and sol.y.shape[-1] == len(t) and bool(np.isfinite(sol.y).all()):
        return -np.expm1(-np.asarray(sol.y[0]))
    try:
        return _usa_gamma_by_quadrature(t, n, beta)
    except OverflowError:  # e^{-beta (1 - e^{-u})} beyond a float: no answer either way
        _check_solved(sol, t, n, beta, "usa")
        raise


def _usa_gamma_by_quadrature(t: np.ndarray, n: int, beta: float) -> np.ndarray:
    r"""USA's :math:`\gamma` at the increasing times ``t`` by inverting the quadrature of :func:`gamma_crossing`,
    :math:`t(u) = \int_0^u \frac{dt}{du'}\,du'`, increasing in :math:`u = -\log(1-\gamma)` (:func:`_time_to`: the
    same cells, the same sums): per time, :math:`u_k`, the first u with :math:`t(u) \ge t_k`, found by brentq in
    its cell, :math:`\gamma_k = 1 - e^{-u_k}`; after :math:`t(40)`, :math:`\gamma = 1` (as in float64). So
    ``gamma_crossing(gamma_k)`` gives :math:`t_k` back. Where :math:`\gamma'\,t` exceeds about :math:`10^{12}`
    (at beta = 60, n = 2: gamma above about 0.4) a float time no longer pins :math:`\gamma` (the quadrature's
    relative 1e-12, then the float's 1e-16, spans a range of gammas): the answer is the first of them."""
    from scipy.optimize import brentq

    starts, ends, at = _cell_times(40.0, n, beta, "usa")  # the sums _time_to makes

    def gap(v: float, j: int, tk: float) -> float:  # t(v) - t_k, a time already reached counted as past it
        return (at[j] + _piece(starts[j], v, n, beta, "usa", 1e-17 * at[j]) - tk) or 1e-300

    u = np.full(len(t), 40.0)
    for k, tk in enumerate(t):
        if tk > at[-1]:
            break  # gamma = 1.0 from here on
        j = max(0, int(np.searchsorted(at, tk, side="left")) - 1)  # the cell where t first reaches t_k
        if at[j] >= tk:
            u[k] = starts[j]
            continue
        u[k] = brentq(gap, starts[j], ends[j], args=(j, float(tk)), xtol=1e-15, rtol=1e-15)  # the first v reaching t_k
    return -np.expm1(-u)


def gamma_crossing(n: int, beta: float, level: float, t_max: float, attention: str = "sa") -> float:
    r"""The first time :math:`\gamma_\beta(t) = ` ``level`` (< 1), or inf if after ``t_max``: a point of the curve
    :math:`\Gamma = \{(t, \beta): \gamma_\beta(t) = 1 - \delta\}` drawn over the phase diagrams.

    The flow is autonomous and :math:`\gamma' = g(\gamma) > 0` on [0, 1), so the time is the quadrature
    :math:`\int_0^{\ell} d\gamma / g(\gamma)`, taken in :math:`u = -\log(1 - \gamma)` (:math:`d\gamma = (1-\gamma)
    du` cancels the factor :math:`1 - \gamma` of g: a smooth integrand up to :math:`\ell` near 1):

    .. math:: t(\ell) = \int_0^{-\log(1-\ell)} \frac{e^{\beta e^{-u}} + n - 1}{2\big((n-1)(1 - e^{-u}) + 1\big)}\,du

    for SA; for USA the numerator is :math:`n e^{-\beta(1 - e^{-u})}` (summed in cells, :func:`_time_to`; USA's
    :func:`gamma_curve` inverts the same sums). Where an exponential overflows, the ODE is solved to the event
    instead.

    >>> bool(abs(gamma_crossing(2, 0.0, 0.5, 10.0) - math.atanh(0.5)) < 1e-10)
    True
    """
    n, beta = _gamma_args(n, beta)
    attention = _gamma_attention(attention)
    if isinstance(level, bool) or not isinstance(level, (int, float, np.integer, np.floating)) or math.isnan(level):
        raise InputError(f"level must be a number, got {level!r}")
    if (
        isinstance(t_max, bool)
        or not isinstance(t_max, (int, float, np.integer, np.floating))
        or not (math.isfinite(t_max) and t_max >= 0)
    ):
        raise InputError(f"t_max must be a finite time >= 0 (a crossing after it is inf), got {t_max!r}")
    if level <= 0:
        return 0.0 if level == 0 else math.inf  # gamma(0) = 0 and gamma increases
    if level >= 1:
        return math.inf  # gamma tends to 1 and never reaches it
    try:
        t = _time_to(-math.log1p(-level), n, beta, attention)
    except OverflowError:
        return _gamma_event(n, beta, level, t_max, attention)
    return t if t <= t_max else math.inf


def _time_to(u: float, n: int, beta: float, attention: str) -> float:
    r"""The time the orthogonal start takes to :math:`\gamma = 1 - e^{-u}`, the quadrature of :func:`gamma_crossing`
    (an OverflowError where an exponential of the integrand overflows), summed cell by cell (:func:`_cells`)."""
    return _cell_times(u, n, beta, attention)[2][-1]


def _cell_times(u: float, n: int, beta: float, attention: str) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """The cells of :func:`_time_to` below ``u`` (their starts and ends) and the time at each cell's start, then at
    ``u`` (one more entry), summed left to right."""
    starts = _cells(u, beta)
    ends = np.append(starts[1:], u)
    at = [0.0]
    for lo, hi in zip(starts, ends, strict=True):
        at.append(at[-1] + _piece(lo, hi, n, beta, attention, floor=1e-17 * at[-1]))
    return starts, ends, at


def _cells(u: float, beta: float) -> np.ndarray:
    r"""The starts of the cells of :func:`_time_to` below ``u``: 0, then where :math:`|\beta|(1 - e^{-u})` passes
    4, 8, ..., 60. The integrand's exponent, :math:`\mp\beta(1 - e^{-u})` (USA) or :math:`\beta e^{-u}` (SA), moves
    by at most 4 in a cell, so quad cannot step over a large beta's peak at u = 0 (its first nodes over [0, 40]
    lie beyond it); and a time past a cell is that cell's sum plus the rest, never less than a time inside it."""
    b = abs(beta)
    w = np.arange(4.0, min(b, 64.0), 4.0)
    starts = np.concatenate([[0.0], -np.log1p(-w / b)]) if len(w) else np.zeros(1)
    return starts[starts < u] if u > 0 else starts[:1]


def _piece(lo: float, hi: float, n: int, beta: float, attention: str, floor: float = 0.0) -> float:
    r""":math:`\int_{lo}^{hi} dt/du\,du` of :func:`gamma_crossing`'s quadrature (0 for an empty interval), to a
    relative 1e-12 or the absolute ``floor`` (:func:`_time_to` gives 1e-17 of the time before the cell: a fixed
    floor was too coarse at beta = 1e6, whose whole time is 1e-6, and none too fine for a tail that underflows)."""
    from scipy.integrate import quad

    def dt_du(v: float) -> float:
        g = -math.expm1(-v)  # gamma = 1 - e^{-v}, to its last digit at small v (a large beta's peak)
        top = n * math.exp(-beta * g) if attention == "usa" else math.exp(beta * math.exp(-v)) + n - 1
        return top / (2 * ((n - 1) * g + 1))

    return float(quad(dt_du, lo, hi, epsabs=floor, epsrel=1e-12, limit=200)[0]) if hi > lo else 0.0


def _gamma_args(n: Any, beta: Any) -> tuple[int, float]:
    """``n`` (at least 2 tokens: the curve is their common inner product) and a finite ``beta``, checked."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise InputError(f"n must be an integer >= 2 (the orthogonal start's tokens), got {n!r}")
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)) or not math.isfinite(beta):
        raise InputError(f"beta must be a finite number, got {beta!r}")
    return int(n), float(beta)


def _gamma_attention(attention: Any) -> str:
    if attention not in ("sa", "usa"):
        raise InputError(f"attention must be 'sa' or 'usa' (the orthogonal start's curve), got {attention!r}")
    return str(attention)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _gamma_event(n: int, beta: float, level: float, t_max: float, attention: str = "sa") -> float:
    r""":func:`gamma_crossing` by solving the ODE to the event gamma = ``level`` (for beta too large for the
    quadrature's :math:`e^{\beta}`)."""
    from scipy.integrate import solve_ivp

    def hit(_: float, g: np.ndarray) -> float:
        return float(g[0]) - level

    hit.terminal = True  # type: ignore[attr-defined]
    sol = solve_ivp(
        lambda _, g: [gamma_rhs(float(g[0]), n, beta, attention)],
        (0.0, t_max),
        [0.0],
        events=hit,
        rtol=1e-10,
        atol=1e-12,
    )
    return float(sol.t_events[0][0]) if len(sol.t_events[0]) else math.inf
