r"""Does the theorem's picture hold for this run? One report per theorem, read off a trajectory.

Hardmax paper: Theorem 1.1. Softmax paper: Theorem 2.1 (Boolean attention, d = 1),
Theorem 3.1 (V = I, polytope), Theorem 4.1 (good triple, <= 3 hyperplanes), Conjecture 4.2
(codimension k), Theorem 5.1 (paranormal V), Theorem C.5 (V = -I, collapse).
Every report has ``holds`` and a JSON-able ``record()``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch

from .._validation import InputError, is_spd
from ..trajectory import HardmaxTrajectory, SoftmaxTrajectory, Trajectory
from .clusters import Cluster, clusters
from .leaders import LeaderSet, _one_sequence, leaders
from .polytope import Polytope
from .spectral import is_good_triple, is_paranormal, leading_direction, positive_coordinates

__all__ = [
    "SETTLED_RTOL",
    "SOFTMAX_SETTLED_RTOL",
    "sequence_converged",
    "sequence_settled",
    "HardmaxTheoremReport",
    "hardmax_theorem",
    "GeometryReport",
    "softmax_geometry",
    "attention_rank",
    "boolean_distance",
]

# Two words, two meanings. A sequence has *converged* when it met its run's convergence test
# (RunStats.converged: StopOnConvergence's rtol, or, with no test asked for, a step that left it exactly
# unchanged). It has *settled* when the last step moved its tokens by at most a small fraction of their
# size (RunStats.final_change <= one of these): its final tokens show the limits the theorems speak of.
SETTLED_RTOL = 1e-4  # hardmax, per layer: the Theorem 1.1 report and `attndyn hardmax`
SOFTMAX_SETTLED_RTOL = 1e-6  # softmax, per unit time: `attndyn softmax`
DEFAULT_CONVERGED_RTOL = SETTLED_RTOL  # the name of SETTLED_RTOL before "settled" was told apart from "converged"


def sequence_converged(traj: Trajectory, b: int) -> bool:
    """Sequence b met the run's convergence test: ``traj.sequence(b).stats.converged``."""
    return traj.stats.converged_at[b] >= 0


def sequence_settled(traj: Trajectory, b: int, rtol: float) -> bool:
    """Sequence b's last step moved its tokens by at most ``rtol`` of their size (``stats.final_change``)."""
    return (traj.stats.final_change[b] if traj.stats.final_change else float("inf")) <= rtol


def _final_points(traj: Trajectory, b: int) -> tuple[np.ndarray, np.ndarray]:
    idx = traj.real_tokens(b).numpy()
    return traj.ys[-1, b].detach().cpu().numpy()[idx], idx


def _distinct(points: np.ndarray) -> bool:
    return len(np.unique(points, axis=0)) == len(points)


@dataclass(frozen=True)
class HardmaxTheoremReport:
    r"""Theorem 1.1 of the hardmax paper, checked on one finished run.

    Attributes:
        hypotheses: ``{"nonzero_tokens", "distinct_tokens", "A_spd"}``.
        converged: the sequence met the run's convergence test; equal to ``traj.stats.converged``
            of the sequence (:class:`~attndyn.trajectory.RunStats`).
        settled: the last layer moved the tokens by at most ``settled_rtol`` of their size
            (``stats.final_change``; :data:`SETTLED_RTOL` = 1e-4 by default): the final tokens show
            the limits. The theorem is checked on a settled run; ``holds`` requires it.
        leaders_nonempty: the leader set is not empty.
        limits_on_boundary: every cluster center (token limit) lies on the boundary of
            K = conv(leaders' limits).
        vertices_are_leader_limits: every vertex of the convex hull of all limits is a leader's limit.
        centers_in_leader_hull: every cluster center is a leader's limit or a convex combination of them.
        holds: all of the above (the conclusion; hypotheses are reported, not required).
    """

    hypotheses: dict[str, bool]
    converged: bool
    leaders: LeaderSet
    leaders_nonempty: bool
    clusters: list[Cluster]
    polytope: Polytope | None
    limits_on_boundary: bool
    vertices_are_leader_limits: bool
    centers_in_leader_hull: bool
    cluster_tol: float
    settled: bool = field(kw_only=True)
    settled_rtol: float = field(kw_only=True)

    @property
    def holds(self) -> bool:
        return all(
            [
                self.settled,
                self.leaders_nonempty,
                self.limits_on_boundary,
                self.vertices_are_leader_limits,
                self.centers_in_leader_hull,
            ]
        )

    @property
    def vertex_leaders(self) -> list[int]:
        """Leaders whose limit is a vertex of K."""
        if self.polytope is None:
            return []
        return [self.leaders.indices[v] for v in self.polytope.vertices]

    def record(self) -> dict[str, Any]:
        return {
            "holds": self.holds,
            "hypotheses": self.hypotheses,
            "converged": self.converged,
            "settled": self.settled,
            "settled_rtol": self.settled_rtol,
            "leaders_nonempty": self.leaders_nonempty,
            "limits_on_boundary": self.limits_on_boundary,
            "vertices_are_leader_limits": self.vertices_are_leader_limits,
            "centers_in_leader_hull": self.centers_in_leader_hull,
            "polytope_vertices": self.vertex_leaders,
            "cluster_tol": self.cluster_tol,
        }


def hardmax_theorem(
    traj: HardmaxTrajectory,
    sequence: int | None = None,
    *,
    cluster_tol: float | None = None,
    settled_rtol: float = SETTLED_RTOL,
    converged_rtol: float | None = None,
) -> HardmaxTheoremReport:
    r"""Check Theorem 1.1 on one sequence of a finished hardmax run.

    The limits are estimated by the clusters of the final tokens (single linkage at
    ``cluster_tol``), and K is the convex hull of the leaders' limits. A token that keeps following
    the same tokens approaches them geometrically with ratio :math:`1/(1+\alpha)`, so it has at most
    ``change / alpha`` (relative) left to travel; the default tolerance is ten times that, and at
    least ``1e-9`` relative. ``settled`` means the last layer's relative change is at most
    ``settled_rtol`` (``converged_rtol``, its former name, is still accepted and wins when given);
    ``converged`` is the run's own verdict, ``traj.stats.converged`` of the sequence.

    >>> import attndyn
    >>> traj = attndyn.hardmax([[1, 1], [-1, 1], [-1, -1], [1, -1], [0.2, 0.1]], alpha=0.5, layers=60)
    >>> attndyn.analysis.hardmax_theorem(traj).holds
    True
    """
    if not isinstance(traj, HardmaxTrajectory):
        raise InputError(f"hardmax_theorem() needs a HardmaxTrajectory, got {type(traj).__name__}")
    b = _one_sequence(traj, sequence)
    pts, idx = _final_points(traj, b)
    z0 = traj.ys[0, b].detach().cpu().numpy()[idx]
    A = traj.params.A
    hyp = {
        "nonzero_tokens": bool((np.abs(z0).max(axis=1) > 0).all()),
        "distinct_tokens": _distinct(z0),
        "A_spd": is_spd(A.detach().cpu()),
    }
    change = traj.stats.final_change[b] if traj.stats.final_change else float("inf")
    rtol = settled_rtol if converged_rtol is None else converged_rtol
    scale = max(1.0, float(np.abs(pts).max()))
    alpha = traj.params.alpha
    tol = cluster_tol if cluster_tol is not None else max(10.0 * change / alpha, 1e-9) * scale
    cl = clusters(pts, members=idx, tol=tol)
    lead = leaders(traj, b)
    center_of_token = {m: c.center for c in cl for m in c.members}
    leader_limits = np.array([center_of_token[i] for i in lead.indices]) if len(lead) else np.zeros((0, pts.shape[1]))
    poly, on_bd, verts_ok, in_hull = None, False, False, False
    if len(lead):
        poly = Polytope.from_points(leader_limits, tol=tol * 10)
        on_bd = all(poly.on_boundary(c.center) for c in cl)
        in_hull = all(poly.contains(c.center) for c in cl)
        all_poly = Polytope.from_points(np.array([c.center for c in cl]), tol=tol * 10)
        verts_ok = all(
            np.abs(leader_limits - all_poly.points[v]).max(axis=1).min() <= tol * 10 for v in all_poly.vertices
        )
    return HardmaxTheoremReport(
        hypotheses=hyp,
        converged=sequence_converged(traj, b),
        settled=sequence_settled(traj, b, rtol),
        settled_rtol=rtol,
        leaders=lead,
        leaders_nonempty=len(lead) > 0,
        clusters=cl,
        polytope=poly,
        limits_on_boundary=on_bd,
        vertices_are_leader_limits=verts_ok,
        centers_in_leader_hull=in_hull,
        cluster_tol=tol,
    )


# ---- softmax ------------------------------------------------------------------------------


def _final_attention(traj: SoftmaxTrajectory, b: int) -> np.ndarray:
    """The final (n, n) attention matrix of sequence b (first head): kept, or read off the final state."""
    if traj.attention_final is not None:
        P = traj.attention_final[b].detach().cpu()
        return (P[0] if P.ndim == 3 else P).numpy()
    from ..dynamics import SoftmaxAttention

    p = traj.params
    mask = None if traj.mask is None else traj.mask[b : b + 1]
    dyn = SoftmaxAttention(
        Q=p.Q[:1].detach(),
        K=p.K[:1].detach(),
        V=p.V[:1].detach(),
        beta=p.beta,
        rescaled=p.rescaled,
        mask=mask,
    )
    return dyn.attention(float(traj.ts[-1]), traj.ys[-1, b : b + 1].detach())[0].cpu().numpy()


def attention_rank(P: Any, *, rtol: float = 1e-6) -> int:
    """Numerical rank of an (n, n) attention matrix: singular values above ``rtol * largest``."""
    a = np.asarray(P.detach().cpu() if isinstance(P, torch.Tensor) else P, dtype=np.float64)
    s = np.linalg.svd(a, compute_uv=False)
    return int((s > rtol * s.max()).sum()) if s.size and s.max() > 0 else 0


def boolean_distance(P: Any, *, free_rows: int = 0) -> float:
    r"""Distance to the nearest Boolean row-stochastic matrix, ignoring the ``free_rows`` worst rows.

    Each row's nearest Boolean row-stochastic row is the unit vector at its largest entry; the
    distance of a row is :math:`\lVert P_i - e_{\arg\max P_i}\rVert_1 = 2(1 - \max_j P_{ij})`, and
    the matrix distance is the largest row distance. Theorem 2.1 allows one free row (asterisks).
    """
    a = np.asarray(P.detach().cpu() if isinstance(P, torch.Tensor) else P, dtype=np.float64)
    row = 2.0 * (1.0 - a.max(axis=-1))
    row = np.sort(row)
    if free_rows:
        row = row[:-free_rows] if len(row) > free_rows else row[:0]
    return float(row.max()) if row.size else 0.0


@dataclass(frozen=True)
class GeometryReport:
    """The limit geometry a softmax-paper theorem predicts, measured on one sequence.

    ``regime`` names the theorem; ``measured`` holds the numbers; ``holds`` the verdict.
    """

    regime: str
    statement: str
    holds: bool
    measured: dict[str, Any]

    def record(self) -> dict[str, Any]:
        return asdict(self)


def _levels(values: np.ndarray, tol: float) -> list[float]:
    """Distinct values up to ``tol`` (gaps larger than tol separate groups), as group means."""
    if values.size == 0:
        return []
    v = np.sort(values.reshape(-1))
    groups = np.split(v, np.nonzero(np.diff(v) > tol)[0] + 1)
    return [float(g.mean()) for g in groups]


def softmax_geometry(
    traj: SoftmaxTrajectory,
    sequence: int | None = None,
    *,
    regime: str | None = None,
    rtol: float = 1e-3,
    collapse_ratio: float = 0.25,
) -> GeometryReport:
    r"""Check the limit geometry of the regime of (Q, K, V) on one sequence of a finished run.

    ``regime`` is inferred from the matrices when None: ``"boolean"`` (d = 1, Thm 2.1),
    ``"collapse"`` (V = -cI, Thm C.5), ``"polytope"`` (V = cI, Thm 3.1), ``"paranormal"``
    (Thm 5.1), ``"hyperplanes"`` (good triple, Thm 4.1), else ``"codimension"`` (Conj. 4.2).
    Tolerances are relative: ``rtol`` times the spread of the measured coordinates. The collapse
    (whose rate is slow, algebraic once the tokens are near the origin) holds when the radius
    never grows and ends below ``collapse_ratio`` of its initial value.
    """
    if not isinstance(traj, SoftmaxTrajectory):
        raise InputError(f"softmax_geometry() needs a SoftmaxTrajectory, got {type(traj).__name__}")
    b = _one_sequence(traj, sequence)
    Q, K, V = (m[0].detach().cpu().numpy() for m in (traj.params.Q, traj.params.K, traj.params.V))
    d = V.shape[0]
    pts, idx = _final_points(traj, b)
    rescaled = traj.params.rescaled
    if regime is None:
        if d == 1 and V[0, 0] > 0:
            regime = "boolean"
        elif np.allclose(V, V[0, 0] * np.eye(d)) and V[0, 0] < 0:
            regime = "collapse"
        elif np.allclose(V, V[0, 0] * np.eye(d)) and V[0, 0] > 0:
            regime = "polytope"
        elif is_paranormal(V) and not is_good_triple(Q, K, V):
            regime = "paranormal"
        elif is_good_triple(Q, K, V):
            regime = "hyperplanes"
        else:
            regime = "codimension"
    P = None
    if regime == "boolean":
        P = _final_attention(traj, b)[np.ix_(idx, idx)]
    spread = max(float(np.abs(pts).max()), 1e-300)
    if regime == "boolean":
        dist = boolean_distance(P, free_rows=1)
        rank = attention_rank(P)
        return GeometryReport(
            regime,
            "Thm 2.1: P(t) tends to a Boolean matrix of rank <= 3 except one free row",
            holds=dist <= 1e-3 and rank <= 3,
            measured={"boolean_distance": dist, "rank": rank, "boolean_distance_all_rows": boolean_distance(P)},
        )
    if regime == "collapse":
        if rescaled:
            raise InputError("the collapse regime (Thm C.5) concerns the original tokens; run with rescaled=False")
        norms = traj.ys[:, b].detach().cpu().numpy()[:, idx]
        radius = np.abs(norms).max(axis=(1, 2))  # (T,) largest coordinate at each kept time
        ratio = float(radius[-1] / max(radius[0], 1e-300))
        shrinking = bool(np.all(np.diff(radius) <= 1e-12 * radius[0]))
        return GeometryReport(
            regime,
            "Thm C.5: V = -I, every token tends to the origin (the radius shrinks to 0)",
            holds=shrinking and ratio <= collapse_ratio,
            measured={"final_over_initial_radius": ratio, "monotone": shrinking},
        )
    if not rescaled:
        raise InputError(f"the {regime} regime is stated for the rescaled tokens (eq. (4)); run with rescaled=True")
    if regime == "polytope":
        tol = rtol * spread
        cl = clusters(pts, members=idx, tol=tol)
        centers = np.array([c.center for c in cl])
        nonzero = [c for c in cl if np.abs(c.center).max() > tol]
        poly = Polytope.from_points(centers, tol=tol)
        on_bd = all(poly.on_boundary(c.center) for c in nonzero)
        at_vertex = sum(len(cl[v].members) for v in poly.vertices) / len(idx)
        return GeometryReport(
            regime,
            "Thm 3.1: every token tends to 0 or to the boundary of a convex polytope (generically a vertex)",
            holds=on_bd,
            measured={
                "clusters": len(cl),
                "vertices": len(poly.vertices),
                "fraction_at_vertices": at_vertex,
                "all_on_boundary_or_zero": on_bd,
            },
        )
    if regime == "hyperplanes":
        found = leading_direction(V)
        if found is None:
            raise InputError(
                "regime='hyperplanes' needs V's largest-modulus eigenvalue real, positive and simple "
                "(Theorem 4.1); this V has none: pass regime=None to infer the regime"
            )
        lam, phi, psi = found
        coord = pts @ psi  # coordinate along phi_1 in V's eigenbasis
        # Tolerance relative to the initial size of the tokens: every token may end on the
        # hyperplane through the origin, where the final coordinates are ~0 and carry no scale.
        start = np.abs(traj.ys[0, b].detach().cpu().numpy()[idx]).max() * np.abs(psi).sum()
        levels = _levels(coord, rtol * max(start, np.abs(coord).max(), 1e-300))
        return GeometryReport(
            regime,
            "Thm 4.1: the coordinates along phi_1 tend to at most three values (<= 3 parallel hyperplanes)",
            holds=len(levels) <= 3,
            measured={"hyperplanes": len(levels), "lambda_1": lam, "phi_1": phi.tolist(), "levels": levels[:10]},
        )
    if regime == "paranormal":
        ev = np.linalg.eigvals(V)
        lam = float(np.abs(ev).max())
        w, R = np.linalg.eig(V)
        top = np.abs(w - lam) < 1e-6 * lam
        coords = np.real(np.linalg.solve(R, pts.T.astype(complex)).T)[:, top]  # coordinates in F
        tol = rtol * max(np.abs(coords).max(), 1e-300)
        cl = clusters(coords, tol=tol)
        centers = np.array([q.center for q in cl])
        poly_f = Polytope.from_points(centers, tol=tol) if len(centers) else None
        nonzero = [q for q in cl if np.abs(q.center).max() > tol]
        ok = poly_f is not None and all(poly_f.on_boundary(q.center) for q in nonzero)
        return GeometryReport(
            regime,
            "Thm 5.1: the F-coordinates tend to the boundary of a polytope K in F, or 0 (polytope x subspace)",
            holds=ok,
            measured={
                "dim_F": int(top.sum()),
                "clusters_in_F": len(cl),
                "vertices": 0 if poly_f is None else len(poly_f.vertices),
            },
        )
    k, c = positive_coordinates(V, pts)
    tol = rtol * max(np.abs(c).max(), 1e-300) if c.size else 0.0
    groups = len(clusters(c, tol=tol)) if c.size else 0
    return GeometryReport(
        "codimension",
        "Conj. 4.2: the coordinates in the positive eigenspace (dim k) take at most three values",
        holds=groups <= 3,
        measured={"k": k, "subspaces": groups},
    )
