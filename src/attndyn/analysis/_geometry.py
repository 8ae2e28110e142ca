r"""The limit geometry of a softmax run, checked against its row of Table 1 (softmax paper).

One check function per regime, chosen from a table by the regime of (Q, K, V):

* ``boolean``: Thm 2.1 (d = 1, V > 0), P(t) tends to a Boolean matrix of rank <= 3, one row
  excepted (original or rescaled run);
* ``collapse``: Thm C.5 (V = -cI), every token tends to 0, like :math:`t^{-1/2}` near the origin
  (original run, eq. (1));
* ``polytope``: Thm 3.1 (V = cI), every token tends to 0 or to the boundary of a convex polytope
  (rescaled run, eq. (4), as for the rows below);
* ``hyperplanes``: Thm 4.1 (good triple, Definition 1), the coordinates along :math:`\varphi_1`
  take at most three values;
* ``paranormal``: Thm 5.1 (Definition 2), the coordinates in F tend to the boundary of a polytope
  in F, or 0;
* ``codimension``: Conj. 4.2 (otherwise), the coordinates in the positive eigenspace take at most
  three values.

The theorems are stated for one head. A multi-head run (``Q``, ``K``, ``V`` stacks of H matrices,
summed as in Section 6) has no theorem (Section 6 calls it an open problem); the check then reads
the one head ``head`` (default 0) and the report says so in ``head``, ``heads`` and its statement.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import numpy as np
import torch

from .._errors import param, plain
from .._softmax import unstable_step
from .._trajectory import SoftmaxTrajectory, Trajectory
from .._validation import InputError, check_nonnegative, check_positive
from ._clusters import clusters
from ._collapse import COLLAPSE_EXPONENT, COLLAPSE_EXPONENT_ATOL, collapse_decay
from ._leaders import _one_sequence
from ._polytope import Polytope
from ._spectral import (
    EIGEN_GROUP_RTOL,
    SCALAR_RTOL,
    _triple,
    is_good_triple,
    is_paranormal,
    leading_direction,
    positive_coordinates,
    positive_definite,
    scalar_of,
)
from ._verdict import verdict_of

__all__ = [
    "GeometryReport",
    "softmax_geometry",
    "regime_of",
    "attention_rank",
    "boolean_distance",
    "REGIMES",
    "READS",
    "SETTLED_FRACTION",
]

# ---- named tolerances ------------------------------------------------------------------------
# Relative tolerance of the measured coordinates (default of ``rtol``): values closer than
# rtol times the scale of the problem count as one value / one cluster.
DEFAULT_RTOL = 1e-3
# Thm C.5 (default of ``collapse_ratio``): the final radius must be at most this fraction of the initial one.
DEFAULT_COLLAPSE_RATIO = 0.25
# Thm 2.1: P counts as Boolean when every row but the worst is within this l1 distance of a unit row.
BOOLEAN_MAX_DISTANCE = 1e-3
# Thm 2.1: the limit P* has rank at most 3 (Fig. 2's class of matrices).
BOOLEAN_MAX_RANK = 3
# Thm 4.1 / Conj. 4.2: the tokens approach at most three parallel hyperplanes (subspaces).
MAX_PARALLEL_SETS = 3
# Thm C.5: between two kept states the radius may grow by at most this times the initial radius (rounding).
MONOTONE_RTOL = 1e-12


@dataclass(frozen=True)
class GeometryReport:
    """The limit geometry a softmax-paper theorem predicts, measured on one sequence.

    ``regime`` names the theorem; ``measured`` holds the numbers; ``measured_holds`` what the final state shows,
    ``holds`` the verdict (None when ``undecided``, as :class:`HardmaxTheoremReport`'s);
    ``head`` is the head whose (Q, K, V) was checked, out of ``heads``; ``hypotheses`` the theorem's conditions
    on them (:func:`hypotheses`: where one fails the theorem makes no claim, and :attr:`verdict` says so).
    ``undecided``: None when the run can decide the theorem, else why it cannot: the theorems speak of
    t -> infinity, and a check that reads the limit off the final state (:attr:`reads_limit`) gives no verdict
    while what it reads (:data:`READS`) still moves (relative change per unit time between the last two kept
    states above :data:`SETTLED_FRACTION` of ``rtol``, relative to the configuration's size); the collapse, whose
    check measures a rate, is undecided while its radius shrinks but has not reached the t^(-1/2) regime
    (:func:`_collapse_pending`).
    """

    regime: str
    statement: str
    measured_holds: bool
    measured: dict[str, Any]
    head: int = 0
    heads: int = 1
    undecided: str | None = None
    hypotheses: dict[str, bool] = field(default_factory=dict)

    @property
    def holds(self) -> bool | None:
        """The verdict: what the final state shows (``measured_holds``), None when ``undecided``."""
        return None if self.undecided is not None else self.measured_holds

    @property
    def reads_limit(self) -> bool:
        """Whether the verdict reads the limit off the final state, and so needs a run whose tokens have stopped
        moving: every regime but the collapse, whose check measures the radius's decay along the run (Thm C.5's
        approach to 0 is a rate, seen at finite time; the tokens themselves move until t -> infinity)."""
        return self.regime != "collapse"

    @property
    def verdict(self) -> str:
        """``"holds"``, ``"does NOT hold"``, ``"makes no claim (...)"`` (a hypothesis fails) or
        ``"undecided: <reason>"``: what the command line and the explorer print."""
        return verdict_of(self.record()) or "undecided"

    def record(self) -> dict[str, Any]:
        rec = asdict(self)
        return {"regime": rec.pop("regime"), "statement": rec.pop("statement"), "holds": self.holds, **rec}


def _final_points(traj: Trajectory, b: int) -> tuple[np.ndarray, np.ndarray]:
    """The final real tokens of sequence b, ``(m, d)``, and their indices."""
    idx = traj.real_tokens(b).numpy()
    return traj.ys[-1, b].detach().cpu().numpy()[idx], idx


def _final_attention(traj: SoftmaxTrajectory, b: int, head: int = 0) -> np.ndarray:
    """The final (n, n) attention matrix of sequence b, head ``head``: kept, or read off the final state."""
    if traj.attention_final is not None:
        P = traj.attention_final[b].detach().cpu()
        return (P[head] if P.ndim == 3 else P).numpy()
    return _attention_at(traj, b, head, -1)


def _attention_at(traj: SoftmaxTrajectory, b: int, head: int, k: int) -> np.ndarray:
    """The (n, n) attention matrix of sequence b, head ``head``, at kept state ``k``: kept, or computed from it."""
    if traj.attention is not None:
        P = traj.attention[k, b].detach().cpu()
        return (P[head] if P.ndim == 3 else P).numpy()
    from .._dynamics import SoftmaxAttention

    p = traj.params
    mask = None if traj.mask is None else traj.mask[b : b + 1]
    h = slice(head, head + 1)
    dyn = SoftmaxAttention(
        Q=p.Q[h].detach(),
        K=p.K[h].detach(),
        V=p.V[h].detach(),
        beta=p.beta,
        rescaled=p.rescaled,
        mask=mask,
        causal=p.causal,
        layer_step=p.layer_step,
    )
    return dyn.attention(float(traj.ts[k]), traj.ys[k, b : b + 1].detach())[0].cpu().numpy()


def _attention_matrix(P: Any, *, stochastic: bool) -> np.ndarray:
    """One (n, n) attention matrix as float64, checked: square, finite, and with ``stochastic`` its rows
    nonnegative and summing to 1 (a probability matrix, not scores); an InputError names what is wrong."""
    try:
        a = np.asarray(P.detach().cpu() if isinstance(P, torch.Tensor) else P, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"P must be an (n, n) attention matrix of numbers, got {type(P).__name__}") from None
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise InputError(f"P must be one (n, n) attention matrix, got shape {a.shape}; pass one matrix at a time")
    if not np.isfinite(a).all():
        raise InputError("P holds NaN or inf; pass a finite attention matrix")
    if stochastic and a.size and ((a < 0).any() or not np.allclose(a.sum(axis=1), 1.0, rtol=0, atol=1e-6)):
        raise InputError(
            "P must be row-stochastic (entries >= 0, rows summing to 1): an attention matrix, not scores; "
            "pass the softmax of the scores"
        )
    return a


def attention_rank(P: Any, *, rtol: float = 1e-6) -> int:
    """Numerical rank of an (n, n) attention matrix: singular values above ``rtol * largest``."""
    a = _attention_matrix(P, stochastic=False)
    if isinstance(rtol, bool) or not isinstance(rtol, (int, float)) or not 0 <= rtol < 1:
        raise InputError(f"rtol must be a number in [0, 1) (relative to the largest singular value), got {rtol!r}")
    s = np.linalg.svd(a, compute_uv=False)
    return int((s > rtol * s.max()).sum()) if s.size and s.max() > 0 else 0


def boolean_distance(P: Any, *, free_rows: int = 0) -> float:
    r"""Distance to the nearest Boolean row-stochastic matrix, ignoring the ``free_rows`` worst rows.

    Each row's nearest Boolean row-stochastic row is the unit vector at its largest entry; the
    distance of a row is :math:`\lVert P_i - e_{\arg\max P_i}\rVert_1 = 2(1 - \max_j P_{ij})`, and
    the matrix distance is the largest row distance. Theorem 2.1 allows one free row (asterisks).
    """
    a = _attention_matrix(P, stochastic=True)
    if isinstance(free_rows, bool) or not isinstance(free_rows, (int, np.integer)) or free_rows < 0:
        raise InputError(f"free_rows must be an integer >= 0 (rows left out of the distance), got {free_rows!r}")
    row = 2.0 * (1.0 - a.max(axis=-1))
    row = np.sort(row)
    if free_rows:
        row = row[:-free_rows] if len(row) > free_rows else row[:0]
    return float(row.max()) if row.size else 0.0


def _levels(values: np.ndarray, tol: float) -> list[float]:
    """Distinct values up to ``tol`` (gaps larger than tol separate groups), as group means."""
    if values.size == 0:
        return []
    v = np.sort(values.reshape(-1))
    groups = np.split(v, np.nonzero(np.diff(v) > tol)[0] + 1)
    return [float(g.mean()) for g in groups]


def regime_of(Q: Any, K: Any, V: Any) -> str:
    """The row of Table 1 that one head's V falls in (the first that applies, in this order).

    ``"boolean"`` (d = 1, V > 0), ``"collapse"`` (V = -cI), ``"polytope"`` (V = cI, c > 0),
    ``"paranormal"`` (V paranormal, Definition 2 (ii), and not a good triple), ``"hyperplanes"`` (good triple,
    Definition 1), else ``"codimension"`` (Conjecture 4.2). "V = cI" is relative to V's size
    (:func:`~attndyn.analysis._spectral.scalar_of`). The theorems' conditions on Q and K (QK > 0, Q^T K > 0,
    Q^T K = I) are not part of the row: :func:`softmax_geometry` reports them as ``hypotheses``.

    >>> import numpy as np
    >>> regime_of(np.eye(2), np.eye(2), -np.eye(2)), regime_of(np.eye(2), np.eye(2), np.diag([2.0, 1.0]))
    ('collapse', 'hyperplanes')
    """
    Q, K, V = _triple(Q, K, V)
    c = scalar_of(V)
    if len(V) == 1 and V[0, 0] > 0:
        return "boolean"
    if c is not None:
        return "collapse" if c < 0 else "polytope"
    good = is_good_triple(Q, K, V)
    if is_paranormal(V) and not good:
        return "paranormal"
    return "hyperplanes" if good else "codimension"


def hypotheses(
    regime: str, Q: np.ndarray, K: np.ndarray, V: np.ndarray, x0: np.ndarray, beta: float = 1.0
) -> dict[str, bool]:
    r"""The hypotheses of ``regime``'s theorem (softmax paper) on one head's (Q, K, V) and the initial real tokens
    ``x0``: Thm 2.1 d = 1, V > 0, QK > 0, distinct tokens; Thm 3.1 V = cI (c > 0), Q^T K > 0; Thm 4.1 a good
    triple; Thm 5.1 V paranormal, Q^T K > 0; Thm C.5 V = -cI, Q^T K = I; Conj. 4.2 (codimension) k >= 1
    eigenvalues of V with positive real part (with none it makes no claim).

    The paper's scores are :math:`\langle Q x_i, K x_j\rangle`; a run's are ``beta`` times them, so the conditions
    on Q and K are read on :math:`\beta Q^\top K` (the sign matters: beta < 0 turns a positive definite form into a
    negative definite one), and Thm C.5's :math:`Q^\top K = I` holds for beta > 0 only."""
    identity = beta > 0 and bool(
        np.abs(Q.T @ K - np.eye(len(V))).max() <= SCALAR_RTOL * max(float(np.abs(Q.T @ K).max()), 1.0)
    )
    Q = beta * Q  # the form the scores use
    QtK = Q.T @ K
    c = scalar_of(V)
    if regime == "boolean":
        distinct = len(np.unique(x0, axis=0)) == len(x0)
        return {"d_is_1": len(V) == 1, "V_positive": bool(V[0, 0] > 0), "QK_positive": bool(QtK[0, 0] > 0),
                "distinct_tokens": distinct}  # fmt: skip
    if regime == "polytope":
        return {"V_is_cI_c_positive": c is not None and c > 0, "QtK_positive_definite": positive_definite(QtK)}
    if regime == "hyperplanes":
        return {"good_triple": is_good_triple(Q, K, V)}
    if regime == "paranormal":
        return {"V_paranormal": is_paranormal(V), "QtK_positive_definite": positive_definite(QtK)}
    if regime == "collapse":
        return {"V_is_cI_c_negative": c is not None and c < 0, "QtK_identity": identity}
    if regime == "codimension":  # Conj. 4.2 speaks of the k >= 1 eigenvalues with positive real part
        return {"V_has_positive_eigenvalues": positive_coordinates(V, x0)[0] >= 1}
    return {}


@dataclass(frozen=True)
class _Sequence:
    """What every check reads: one sequence of a run, one head's matrices, the tolerances."""

    traj: SoftmaxTrajectory
    b: int
    head: int
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    pts: np.ndarray  # (m, d) final real tokens
    idx: np.ndarray  # (m,) their indices
    rtol: float
    collapse_ratio: float

    def initial(self) -> np.ndarray:
        """(m, d) the first kept real tokens."""
        return self.traj.ys[0, self.b].detach().cpu().numpy()[self.idx]


def _boolean(s: _Sequence) -> tuple[str, bool, dict[str, Any]]:
    P = _final_attention(s.traj, s.b, s.head)[np.ix_(s.idx, s.idx)]
    dist, rank = boolean_distance(P, free_rows=1), attention_rank(P)
    return (
        "Thm 2.1: P(t) tends to a Boolean matrix of rank <= 3 except one free row (necessary for Fig. 2's class, which "
        "also asks the Boolean rows to point at no more than two columns)",
        dist <= BOOLEAN_MAX_DISTANCE and rank <= BOOLEAN_MAX_RANK,
        {"boolean_distance": dist, "rank": rank, "boolean_distance_all_rows": boolean_distance(P)},
    )


def _collapse(s: _Sequence) -> tuple[str, bool, dict[str, Any]]:
    decay = collapse_decay(s.traj, s.b)
    radius = np.array(decay.radius)  # (T,) largest coordinate at each kept time
    ratio = float(radius[-1] / max(radius[0], 1e-300))
    shrinking = bool(np.all(np.diff(radius) <= MONOTONE_RTOL * radius[0]))
    tested = decay.has_fit or decay.reached_origin
    statement = "Thm C.5: V = -I, every token tends to the origin (the radius shrinks to 0, like t^(-1/2) near 0)"
    if not tested:
        why = decay.untested or "fewer than 3 kept times after T/4; keep more states, e.g. SaveAt(every=10)"
        statement += f" [rate not tested: {why}]"
    # A decay faster than t^(-1/2) is the mean's exponential phase (attndyn.analysis._collapse), which close tokens
    # leave late: no evidence against the limit (_collapse_pending makes it undecided), unlike one that stalls.
    steep = decay.exponent is not None and decay.exponent < COLLAPSE_EXPONENT - COLLAPSE_EXPONENT_ATOL
    return (
        statement,
        shrinking and ratio <= s.collapse_ratio and (decay.matches or not tested or steep),
        {"final_over_initial_radius": ratio, "monotone": shrinking, **decay.record()},
    )


def _polytope(s: _Sequence) -> tuple[str, bool, dict[str, Any]]:
    tol = s.rtol * max(float(np.abs(s.pts).max()), 1e-300)
    cl = clusters(s.pts, members=s.idx, tol=tol)
    centers = np.array([c.center for c in cl])
    nonzero = [c for c in cl if np.abs(c.center).max() > tol]
    poly = Polytope.from_points(centers, tol=tol)
    on_bd = all(poly.on_boundary(c.center) for c in nonzero)
    at_vertex = sum(len(cl[v].members) for v in poly.vertices) / len(s.idx)
    return (
        "Thm 3.1: every token tends to 0 or to the boundary of a convex polytope (generically a vertex)",
        on_bd,
        {
            "clusters": len(cl),
            "vertices": len(poly.vertices),
            "fraction_at_vertices": at_vertex,
            "all_on_boundary_or_zero": on_bd,
        },
    )


def _hyperplanes(s: _Sequence) -> tuple[str, bool, dict[str, Any]]:
    found = leading_direction(s.V)
    if found is None:
        raise InputError(
            "regime='hyperplanes' needs V's largest-modulus eigenvalue real, positive and simple "
            "(Theorem 4.1); this V has none: pass regime=None to infer the regime"
        )
    lam, phi, psi = found
    coord = s.pts @ psi  # coordinate along phi_1 in V's eigenbasis
    # Tolerance relative to the initial size of the tokens: every token may end on the
    # hyperplane through the origin, where the final coordinates are ~0 and carry no scale.
    start = np.abs(s.initial()).max() * np.abs(psi).sum()
    tol = s.rtol * max(start, np.abs(coord).max(), 1e-300)
    levels = _levels(coord, tol)
    return (
        "Thm 4.1: the coordinates along phi_1 tend to at most three values (<= 3 parallel hyperplanes)",
        len(levels) <= MAX_PARALLEL_SETS,
        {"hyperplanes": len(levels), "lambda_1": lam, "phi_1": phi.tolist(), "levels": levels[:10], "tol": tol},
    )


def _f_coordinates(V: np.ndarray, pts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Which eigenvalues of V span F (within ``EIGEN_GROUP_RTOL`` of the largest modulus, the grouping of
    :func:`~attndyn.analysis.is_paranormal`), and the coordinates of ``pts`` (m, d) in F along G, (m, dim F), in a
    real basis: R spans F = ker(V - lambda I) and L the left kernel (both from an SVD), and the coordinates are
    :math:`(L^\top R)^{-1} L^\top x` (the spectral projector onto F along G). Never the real part of complex
    eigen-coordinates: where rounding turns the double eigenvalue into a pair lambda +- 1e-14 i, the two real parts
    are one column, F is read as a line, and every point lies "on the boundary" of its flat hull."""
    w = np.linalg.eigvals(V)
    lam = float(np.abs(w).max())
    top = np.abs(w - lam) <= EIGEN_GROUP_RTOL * lam
    m = int(top.sum())
    B = V - lam * np.eye(len(V))
    R = np.linalg.svd(B)[2][len(V) - m :].T  # (d, m): the right singular vectors of the m smallest singular values
    L = np.linalg.svd(B.T)[2][len(V) - m :].T  # (d, m): the left kernel
    return top, np.linalg.solve(L.T @ R, L.T @ pts.T).T


def _paranormal(s: _Sequence) -> tuple[str, bool, dict[str, Any]]:
    top, coords = _f_coordinates(s.V, s.pts)
    tol = s.rtol * max(np.abs(coords).max(), 1e-300)
    cl = clusters(coords, tol=tol)
    centers = np.array([q.center for q in cl])
    poly_f = Polytope.from_points(centers, tol=tol) if len(centers) else None
    nonzero = [q for q in cl if np.abs(q.center).max() > tol]
    ok = poly_f is not None and all(poly_f.on_boundary(q.center) for q in nonzero)
    return (
        "Thm 5.1: the F-coordinates tend to the boundary of a polytope K in F, or 0 (polytope x subspace)",
        ok,
        {"dim_F": int(top.sum()), "clusters_in_F": len(cl), "vertices": 0 if poly_f is None else len(poly_f.vertices)},
    )


def _codimension(s: _Sequence) -> tuple[str, bool, dict[str, Any]]:
    k, c = positive_coordinates(s.V, s.pts)
    tol = s.rtol * max(np.abs(c).max(), 1e-300) if c.size else 0.0
    groups = len(clusters(c, tol=tol)) if c.size else 0
    return (
        "Conj. 4.2: the coordinates in the positive eigenspace (dim k) take at most three values",
        groups <= MAX_PARALLEL_SETS,
        {"k": k, "subspaces": groups},
    )


# regime -> (which tokens its theorem is stated for: True rescaled z(t), False original x(t),
# None either; the check)
REGIMES: dict[str, tuple[bool | None, Callable[[_Sequence], tuple[str, bool, dict[str, Any]]]]] = {
    "boolean": (None, _boolean),
    "collapse": (False, _collapse),
    "polytope": (True, _polytope),
    "hyperplanes": (True, _hyperplanes),
    "paranormal": (True, _paranormal),
    "codimension": (True, _codimension),
}


def softmax_geometry(
    traj: SoftmaxTrajectory,
    sequence: int | None = None,
    *,
    regime: str | None = None,
    rtol: float = DEFAULT_RTOL,
    collapse_ratio: float = DEFAULT_COLLAPSE_RATIO,
    head: int = 0,
) -> GeometryReport:
    r"""Check the limit geometry of the regime of (Q, K, V) on one sequence of a finished run.

    ``regime`` is inferred from head ``head``'s matrices when None (:func:`regime_of`):
    ``"boolean"`` (d = 1, Thm 2.1), ``"collapse"`` (V = -cI, Thm C.5), ``"polytope"`` (V = cI,
    Thm 3.1), ``"paranormal"`` (Thm 5.1), ``"hyperplanes"`` (good triple, Thm 4.1), else
    ``"codimension"`` (Conj. 4.2); the table in this module's docstring says what each checks.
    Tolerances are relative: ``rtol`` times the scale of the measured coordinates (for Thm 4.1,
    the larger of the initial and final scale along :math:`\varphi_1`, since every token may end on
    the hyperplane through the origin). The collapse holds when the radius never grows, ends below
    ``collapse_ratio`` of its initial value, and decays like :math:`t^{-1/2}`
    (:mod:`attndyn.analysis._collapse`); a run that kept too few states for that fit (fewer than three
    after T/4, e.g. ``SaveAt(every=None)``) is judged without the rate, and its statement says so. Multi-head runs: the theorems are for one head, and the
    check reads head ``head`` only (``report.head``, ``report.heads``). A causal run (``causal=True``) is refused:
    the theorems are stated for the full attention.
    """
    if not isinstance(traj, SoftmaxTrajectory):
        raise InputError(f"softmax_geometry() needs a SoftmaxTrajectory, got {type(traj).__name__}")
    if traj.params.causal:
        raise InputError(
            "softmax_geometry() checks theorems stated for the full attention, and this run used a causal mask "
            "(causal=True: token i attends to j <= i only): no theorem of Table 1 applies; run without the causal mask to check one"
        )
    b = _one_sequence(traj, sequence)
    rtol, collapse_ratio = check_nonnegative(rtol, "rtol"), check_positive(collapse_ratio, "collapse_ratio")
    heads = int(traj.params.V.shape[0])
    if not 0 <= head < heads:
        raise InputError(f"head={head} is out of range for a run with {heads} head(s); pass 0 <= head < {heads}")
    Q, K, V = (m[head].detach().cpu().numpy() for m in (traj.params.Q, traj.params.K, traj.params.V))
    beta = float(traj.params.beta)
    if regime is None:
        regime = regime_of(beta * Q, K, V)  # the scores' form: beta < 0 flips a good triple's sign condition
    if regime not in REGIMES:
        raise InputError(f"regime={regime!r} is not one of {', '.join(REGIMES)}; pass one of them or None to infer it")
    needs_rescaled, check = REGIMES[regime]
    rescaled = traj.params.rescaled
    if needs_rescaled is False and rescaled:
        raise InputError(
            "the collapse regime (Thm C.5) concerns the original tokens; run with rescaled=False (on the command "
            "line: without --rescaled)"
        )
    if needs_rescaled is True and not rescaled:
        raise InputError(
            f"the {regime} regime is stated for the rescaled tokens (eq. (4)); run with {param('rescaled', 'rescaled=True')}"
        )
    pts, idx = _final_points(traj, b)
    seq = _Sequence(traj, b, head, Q, K, V, pts, idx, rtol, collapse_ratio)
    statement, holds, measured = check(seq)
    if heads > 1:
        statement += (
            f" [head {head} of {heads} only: the theorem is stated for one head; the multi-head sum is an "
            "open problem (Section 6)]"
        )
    hyp = hypotheses(regime, Q, K, V, seq.initial(), beta)
    report = GeometryReport(regime, statement, bool(holds), measured, head=head, heads=heads, hypotheses=hyp)
    unstable = unstable_step(traj.params)  # a step beyond its scheme's interval: the run can be integration error
    if unstable is not None:
        return replace(report, undecided=plain(unstable))
    pending = _still_moving(seq, regime) if report.reads_limit else _collapse_pending(measured, collapse_ratio)
    return replace(report, undecided=pending)


def _collapse_pending(measured: dict[str, Any], collapse_ratio: float) -> str | None:
    r"""Why a collapse run (Thm C.5) cannot be judged yet: its radius shrank at every kept time, but has not fallen
    below ``collapse_ratio`` of its start or not reached the t^(-1/2) regime (a fitted exponent above -1/2 + atol).
    Near the origin the cloud decays like (I + 2t C_0)^(-1/2) (:mod:`attndyn.analysis._collapse`): small or close
    tokens (a small C_0) enter that regime late, so a finite horizon shows a slower decay that is no evidence
    against the theorem. Nor is a decay faster than t^(-1/2): the cloud's mean decays exponentially, and tokens
    that start close together stay in that phase until the mean falls to their spread. A radius that grows is
    decided (does not hold) when it ends above its start and still grows; one that rose on the way and then fell
    is not: while the cloud straddles the origin a token's velocity :math:`-\sum_j P_{ij} x_j` can point away
    from it."""
    ratio, p = measured["final_over_initial_radius"], measured["decay_exponent"]
    if not measured["monotone"]:
        if ratio > 1 and (p is None or p > 0):
            return None
        return (
            f"the radius rose at some kept time (final / initial {ratio:.3g}), which the limit does not forbid: "
            "while the cloud straddles the origin a token can move away from it; the run does not show the "
            "t^(-1/2) regime that would decide it; run longer (a larger time, --time on the command line)"
        )
    shallow = p is not None and p > COLLAPSE_EXPONENT + COLLAPSE_EXPONENT_ATOL
    steep = p is not None and p < COLLAPSE_EXPONENT - COLLAPSE_EXPONENT_ATOL
    shown = "none" if p is None else f"{p:.3g}"
    if steep and ratio <= collapse_ratio:
        return (
            f"the radius shrinks at every kept time, faster than the t^(-1/2) regime (fitted exponent {shown}, "
            f"predicted {COLLAPSE_EXPONENT:g} +- {COLLAPSE_EXPONENT_ATOL:g}; final / initial radius {ratio:.3g}): "
            "the cloud's mean still decays exponentially, as it does until it falls to the tokens' spread (close "
            "tokens enter the algebraic regime late); run longer (a larger time, --time on the command line)"
        )
    if ratio <= collapse_ratio and not shallow:
        return None
    return (
        f"the radius shrinks at every kept time but has not reached the t^(-1/2) regime by the horizon (final / "
        f"initial radius {ratio:.3g}, limit {collapse_ratio:g}; fitted exponent {shown}, predicted "
        f"{COLLAPSE_EXPONENT:g} +- {COLLAPSE_EXPONENT_ATOL:g}): small or close tokens enter it late; run longer "
        "(a larger time, --time on the command line)"
    )


#: What each limit check reads (the collapse's check is a rate measured along the run: no settling needed).
READS = {
    "boolean": "the attention matrix P(t)",
    "polytope": "the rescaled tokens",
    "hyperplanes": "the coordinates along phi_1",
    "paranormal": "the coordinates in F",
    "codimension": "the coordinates in the positive eigenspace",
}
#: A limit verdict needs what its check reads to have stopped moving: between the last two kept states, a
#: relative change per unit time of at most this fraction of the check's ``rtol`` (what is left to travel is then
#: well inside the check's tolerance).
SETTLED_FRACTION = 0.1


def _read(s: _Sequence, regime: str, k: int) -> np.ndarray:
    """What the check of ``regime`` reads (:data:`READS`) at kept state ``k``."""
    if regime == "boolean":
        return _attention_at(s.traj, s.b, s.head, k)[np.ix_(s.idx, s.idx)]
    pts = s.traj.ys[k, s.b].detach().cpu().numpy()[s.idx]
    found = leading_direction(s.V) if regime == "hyperplanes" else None
    if found is not None:
        return pts @ found[2]
    if regime == "paranormal":
        return _f_coordinates(s.V, pts)[1]
    if regime == "codimension":
        return positive_coordinates(s.V, pts)[1]
    return pts


#: A verdict of Thm 4.1 or Conj. 4.2 needs a horizon of at least this many of the spectral gap's time scales (the
#: next eigen-direction's weight in the scores has then fallen to e^-3, 5%, of its start relative to the leading
#: ones). A judgment, not a theorem: the intermediate configuration that gave a wrong verdict was at 0.2 of one.
GAP_TIMES = 3.0


def _short_of_the_gap(V: np.ndarray, regime: str, horizon: float) -> str | None:
    r"""Why a horizon is too short for the hyperplanes (Thm 4.1) or codimension (Conj. 4.2) verdict, or None.

    The scores see :math:`e^{tV} z`: the eigen-directions the theorem speaks of (:math:`arphi_1`; the eigenvalues
    with positive real part) come to dominate them over the time scale :math:`1/g`, g the gap between their real
    parts and the next ones. Before several such times the tokens can rest in an intermediate configuration that
    moves too slowly to be told from a limit (V = diag(1, 0.99) at T = 20 showed six hyperplanes, three at T = 100,
    two at T = 250), so a run shorter than :data:`GAP_TIMES` / g is undecided."""
    re = np.sort(np.linalg.eigvals(V).real)[::-1]
    if regime == "hyperplanes" and len(re) > 1:
        gap, what = float(re[0] - re[1]), "phi_1 (the leading eigenvalue)"
    elif regime == "codimension" and 0 < int((re > 0).sum()) < len(re):
        k = int((re > 0).sum())
        gap, what = float(re[k - 1] - re[k]), "the positive eigenspace"
    else:
        return None
    if not gap > 0 or horizon * gap >= GAP_TIMES:
        return None
    return (
        f"the horizon t = {horizon:g} is {horizon * gap:.3g} times the time scale 1/{gap:.3g} = {1 / gap:.3g} over "
        f"which {what} comes to dominate the scores (the gap to V's next eigenvalue); before {GAP_TIMES:g} such "
        f"times the tokens can rest in an intermediate configuration; run longer (a time of at least "
        f"{GAP_TIMES / gap:.3g}, --time on the command line)"
    )


def _still_moving(s: _Sequence, regime: str) -> str | None:
    """Why the limit verdict on the sequence is undecided (None: what its check reads has settled), and what to
    do: run longer, keep more states, or run rescaled where the original tokens grow without bound (V with an
    eigenvalue of positive real part: only the rescaled tokens z(t) = exp(-tV) x(t) of eq. (4) settle)."""
    traj, limit = s.traj, SETTLED_FRACTION * s.rtol
    grow = not traj.params.rescaled and bool((np.linalg.eigvals(s.V).real > 0).any())
    fix = (
        "run the rescaled dynamics (rescaled=True, --rescaled on the command line), whose tokens settle"
        if grow
        else "run longer (a larger time, --time on the command line)"
    )
    if grow and len(np.unique(s.pts, axis=0)) < len(np.unique(s.initial(), axis=0)):
        return f"rounding has merged tokens that grew to {np.abs(s.pts).max():.3g}: {fix}"
    short = _short_of_the_gap(s.V, regime, float(traj.ts[-1]))
    if short is not None:
        return short
    ts = traj.ts.detach().cpu().double()
    # A summary run (SaveAt(every=None)) of several steps keeps the first and the last state only: their difference
    # is the whole journey, not the motion at the horizon, so the whole tokens' last step must settle instead.
    summary = len(ts) == 2 and traj.stats.steps > 1
    if len(ts) < 2 or summary or not float(ts[-1] - ts[-2]) > 0:
        change = traj.stats.final_change[s.b] if traj.stats.final_change else float("inf")
        if change <= limit:
            return None
        return (
            f"the tokens still move (relative change {change:.3g} per unit time at the last step, more than "
            f"{limit:g}) and only the first and last states were kept, so {READS[regime]} cannot be checked apart: "
            f"keep more states (SaveAt(every=k)) or {fix}"
        )
    last, prev, first = (_read(s, regime, k) for k in (-1, -2, 0))
    # relative to the configuration's size (as the hyperplane check's tolerance): coordinates that end at 0 (every
    # token on the middle hyperplane) would otherwise count rounding-size moves as not settled
    size = float(np.abs(s.initial()).max(initial=0.0)) if regime != "boolean" else 0.0
    scale = max(float(np.abs(last).max(initial=0.0)), float(np.abs(first).max(initial=0.0)), size, 1e-300)
    dt = float(ts[-1] - ts[-2])
    change = float(np.abs(last - prev).max(initial=0.0)) / scale / dt
    if change <= limit:
        return None
    return (
        f"what the check reads ({READS[regime]}) has not settled (relative change {change:.3g} per unit time "
        f"between t = {float(ts[-2]):g} "
        f"and {float(ts[-1]):g}, more than {limit:g}): the limit the {regime} theorem describes is not reached "
        f"yet; {fix}"
    )
