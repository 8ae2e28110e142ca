r"""Does the theorem's picture hold for this run? One report per theorem, read off a trajectory.

Hardmax paper: Theorem 1.1. Softmax paper: Theorem 2.1 (Boolean attention, d = 1),
Theorem 3.1 (V = I, polytope), Theorem 4.1 (good triple, <= 3 hyperplanes), Conjecture 4.2
(codimension k), Theorem 5.1 (paranormal V), Theorem C.5 (V = -I, collapse): checked in
:mod:`attndyn.analysis.geometry` and re-exported here.
Every report has ``holds`` and a JSON-able ``record()``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import InputError, is_spd
from ..trajectory import HardmaxTrajectory, Trajectory
from ._clusters import Cluster, clusters
from ._leaders import LeaderSet, _one_sequence, leaders
from .geometry import GeometryReport, _final_points, attention_rank, boolean_distance, softmax_geometry
from .polytope import Polytope

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


def sequence_converged(traj: Trajectory, b: int) -> bool:
    """Sequence b met the run's convergence test: ``traj.sequence(b).stats.converged``."""
    return traj.stats.converged_at[b] >= 0


def sequence_settled(traj: Trajectory, b: int, rtol: float) -> bool:
    """Sequence b's last step moved its tokens by at most ``rtol`` of their size (``stats.final_change``)."""
    return (traj.stats.final_change[b] if traj.stats.final_change else float("inf")) <= rtol


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
    ``settled_rtol`` (deprecated: ``converged_rtol``, which warns and wins when given);
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
    if converged_rtol is not None:
        warnings.warn(
            "hardmax_theorem(converged_rtol=...) is deprecated and goes in the next release: pass settled_rtol=",
            DeprecationWarning,
            stacklevel=2,
        )
    rtol = settled_rtol if converged_rtol is None else converged_rtol
    scale = max(1.0, float(np.abs(pts).max()))
    alpha = traj.params.alpha
    tol = cluster_tol if cluster_tol is not None else max(10.0 * change / alpha, 1e-9) * scale
    cl = clusters(pts, members=idx, tol=tol)
    lead = leaders(traj, b)
    center_of_token = {m: c.center for c in cl for m in c.members}
    leader_limits = np.array([center_of_token[i] for i in lead.indices]) if len(lead) else np.zeros((0, pts.shape[1]))
    return HardmaxTheoremReport(
        hypotheses=hyp,
        converged=sequence_converged(traj, b),
        settled=sequence_settled(traj, b, rtol),
        settled_rtol=rtol,
        leaders=lead,
        leaders_nonempty=len(lead) > 0,
        clusters=cl,
        cluster_tol=tol,
        **_leader_hull_conclusions(leader_limits, cl, tol * 10),
    )


def _leader_hull_conclusions(leader_limits: np.ndarray, cl: list[Cluster], tol: float) -> dict[str, Any]:
    """Theorem 1.1's conclusions on the limits, at tolerance ``tol``: K = conv(``leader_limits``) (``polytope``),
    every cluster center on the boundary of K, every vertex of the hull of all the limits a leader's limit,
    every cluster center in K. With no leader there is no K and every conclusion is False."""
    if not len(leader_limits):
        return {
            "polytope": None,
            "limits_on_boundary": False,
            "vertices_are_leader_limits": False,
            "centers_in_leader_hull": False,
        }
    poly = Polytope.from_points(leader_limits, tol=tol)
    all_poly = Polytope.from_points(np.array([c.center for c in cl]), tol=tol)
    return {
        "polytope": poly,
        "limits_on_boundary": all(poly.on_boundary(c.center) for c in cl),
        "vertices_are_leader_limits": all(
            np.abs(leader_limits - all_poly.points[v]).max(axis=1).min() <= tol for v in all_poly.vertices
        ),
        "centers_in_leader_hull": all(poly.contains(c.center) for c in cl),
    }
