r"""Does the theorem's picture hold for this run? One report per theorem, read off a trajectory.

Hardmax paper: Theorem 1.1. Softmax paper: Theorem 2.1 (Boolean attention, d = 1),
Theorem 3.1 (V = I, polytope), Theorem 4.1 (good triple, <= 3 hyperplanes), Conjecture 4.2
(codimension k), Theorem 5.1 (paranormal V), Theorem C.5 (V = -I, collapse): checked in
:mod:`attndyn.analysis._geometry` and re-exported here.
Every report has ``holds`` and a JSON-able ``record()``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from .._trajectory import HardmaxTrajectory, Trajectory
from .._validation import InputError, check_nonnegative, is_spd, pow2_normalized
from ..margins import leader_margins, unit_roundoff
from ._clusters import Cluster, clusters
from ._geometry import GeometryReport, _final_points, attention_rank, boolean_distance, softmax_geometry
from ._leaders import LeaderSet, _one_sequence, leaders
from ._polytope import Polytope
from ._verdict import verdict_of

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
SOFTMAX_SETTLED_RTOL = 1e-6  # softmax, per unit time: `attndyn softmax`'s settled line (the verdict: READS)


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
            of the sequence (:class:`~attndyn._trajectory.RunStats`).
        settled: one more layer would move the tokens by at most ``settled_rtol`` of their size
            (``stats.final_change``; :data:`SETTLED_RTOL` = 1e-4 by default): the final tokens show
            the limits. The theorem is checked on a settled run; ``holds`` requires it.
        leaders_nonempty: the leader set is not empty.
        limits_on_boundary: every cluster center (token limit) lies on the boundary of
            K = conv(leaders' limits).
        vertices_are_leader_limits: every vertex of the convex hull of all limits is a leader's limit.
        centers_in_leader_hull: every cluster center is a leader's limit or a convex combination of them.
        undecided: None when the run can decide the theorem, else why it cannot (the run has not
            settled; the tokens may still travel a distance comparable to the configuration's size, so
            its clusters are not its limits; or whether a token leads at layer 0 is decided by rounding
            against exact arithmetic). ``holds`` is then None.
        holds: all of the above (the conclusion; hypotheses are reported, not required); None when
            ``undecided``.
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
    undecided: str | None = field(default=None, kw_only=True)

    @property
    def holds(self) -> bool | None:
        if self.undecided is not None:
            return None
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
    def verdict(self) -> str:
        """``"holds"``, ``"does NOT hold"``, ``"makes no claim (...)"`` (hypotheses fail) or
        ``"undecided: <reason>"``: what the CLI prints (:func:`~attndyn.analysis._verdict.verdict_of`)."""
        return verdict_of({"holds": self.holds, "undecided": self.undecided, "hypotheses": self.hypotheses}) or ""

    @property
    def vertex_leaders(self) -> list[int]:
        """Leaders whose limit is a vertex of K."""
        if self.polytope is None:
            return []
        return [self.leaders.indices[v] for v in self.polytope.vertices]

    def record(self) -> dict[str, Any]:
        return {
            "holds": self.holds,
            "undecided": self.undecided,
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
    the same tokens approaches them geometrically with ratio :math:`1/(1+\alpha)`; the run's last ``change`` is
    the step :math:`Z^K \to Z^{K+1}` computed after the kept final state :math:`Z^K`, which covers
    :math:`\alpha/(1+\alpha)` of the way, so the final tokens have at most ``change (1 + alpha) / alpha``
    (relative) left to travel; the default tolerance is ten times that, and at least ``1e-9`` relative. ``settled`` means the last layer's relative change is at most
    ``settled_rtol`` (deprecated: ``converged_rtol``, which warns and wins when given);
    ``converged`` is the run's own verdict, ``traj.stats.converged`` of the sequence.

    The verdict is ``undecided`` (``holds`` None, the reason in ``undecided``) rather than wrong when the run
    cannot tell: it used a causal mask (the theorem is for the full attention; leaders, clusters and the
    other fields are still read off the run); it has not settled; the tokens may still travel (or ``cluster_tol`` spans) more than
    ``LIMIT_RESOLUTION`` = 1 % of the configuration's size (a small alpha: the final tokens are not yet the
    limits); or a token's leading at layer 0 is within the rounding bound (:mod:`attndyn.margins`) and exact
    rational arithmetic decides it otherwise than the run did. Points beyond 2**±400 are rescaled by a power of
    two (exact) for the hull, so runs near the float range are checked as at scale 1 (``polytope`` is then in
    the rescaled units).

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
    rtol = check_nonnegative(settled_rtol if converged_rtol is None else converged_rtol, "settled_rtol")
    if cluster_tol is not None:
        cluster_tol = check_nonnegative(cluster_tol, "cluster_tol")
    big = float(np.abs(pts).max()) if pts.size else 0.0
    scale = big if big > 0 else 1.0  # relative, as the change is: tiny configurations are not swallowed
    alpha = traj.params.alpha
    # What the final (kept) tokens Z^K may still travel, relative to their size: the last change is the step
    # Z^K -> Z^(K+1), alpha / (1 + alpha) of the way, so (1 + alpha) / alpha of it (change / alpha undercounted by
    # 1 + alpha: at alpha = 1000 a follower 5e-7 from its leader was a cluster and a vertex of its own); plus what
    # rounding hides (a step of less than half an ulp leaves a token unchanged: a zero change proves nothing).
    travel = (change + unit_roundoff(traj.ys.dtype)) * (1.0 + alpha) / alpha
    # Near the float range the tolerances, the clusters and the conclusions are read on points rescaled by a power
    # of two (exact), so that nothing overflows; ``polytope`` is then in those units. Elsewhere (every usual run)
    # they are read as they are.
    e = int(np.frexp(big)[1]) if big > 0 and not 2.0**-400 < big < 2.0**400 else 0
    cl, tol, tol_s = _limit_clusters(pts, idx, z0, travel, scale, cluster_tol, e)
    lead = leaders(traj, b)
    center_of_token = {m: c.center for c in cl for m in c.members}
    leader_limits = np.array([center_of_token[i] for i in lead.indices]) if len(lead) else np.zeros((0, pts.shape[1]))
    settled = sequence_settled(traj, b, rtol)
    return HardmaxTheoremReport(
        hypotheses=hyp,
        converged=sequence_converged(traj, b),
        settled=settled,
        settled_rtol=rtol,
        leaders=lead,
        leaders_nonempty=len(lead) > 0,
        clusters=cl,
        cluster_tol=tol,
        undecided=_undecided(traj, b, settled, change, rtol, travel * scale, tol, cluster_tol is not None),
        **_leader_hull_conclusions(np.ldexp(leader_limits, -e), [np.ldexp(c.center, -e) for c in cl], tol_s * 10),
    )


def _limit_clusters(
    pts: np.ndarray, idx: np.ndarray, z0: np.ndarray, travel: float, scale: float, cluster_tol: float | None, e: int
) -> tuple[list[Cluster], float, float]:
    """The final tokens' clusters (the limits), their tolerance and that tolerance in units of 2**e, all found on
    the points divided by 2**e (exact; e = 0 in every usual run): near the float range a tolerance of the
    tokens' size, or the spread of the initial tokens, overflows (1e308-sized tokens had an infinite tolerance and
    the check refused its own argument)."""
    tol_s = (
        float(np.ldexp(cluster_tol, -e))
        if cluster_tol is not None
        else _limit_tolerance(travel, float(np.ldexp(scale, -e)), np.ldexp(z0, -e))
    )
    found = clusters(np.ldexp(pts, -e), members=idx, tol=tol_s)
    cl = [Cluster(center=np.ldexp(c.center, e), members=c.members) for c in found] if e else found
    with np.errstate(over="ignore"):
        return cl, float(np.ldexp(tol_s, e)), tol_s


def _limit_tolerance(travel: float, scale: float, z0: np.ndarray) -> float:
    """The clusters' tolerance: ten times what the tokens may still travel (``travel`` relative, ``scale`` the
    final size), at most :data:`LIMIT_RESOLUTION` of the configuration's size (the spread of ``z0``). A run that
    has not settled may still travel far: its clusters are then those of the tokens where they are, not merged
    across the configuration (a run that can decide the theorem is within this bound already: see _undecided)."""
    tol = max(10.0 * travel, 1e-9) * scale
    if len(z0) > 1:
        with np.errstate(over="ignore"):
            tol = min(tol, LIMIT_RESOLUTION * float(np.ptp(z0, axis=0).max()) or tol)
    return tol


# The limits are told apart when what the tokens may still travel, and the cluster tolerance, are at most
# this fraction of the configuration's size (the largest coordinate spread of the initial tokens).
LIMIT_RESOLUTION = 1e-2

# At most this many tokens whose leading at layer 0 is within the rounding bound are decided exactly.
EXACT_TIES_MAX = 32


def _undecided(
    traj: HardmaxTrajectory, b: int, settled: bool, change: float, rtol: float, travel: float, tol: float, given: bool
) -> str | None:
    """Why the run cannot decide Theorem 1.1 (None when it can): a causal mask (the theorem is for the full
    attention); not settled; limits not resolved (``travel``, absolute, or ``tol`` too large for the
    configuration); a leader at layer 0 decided by rounding."""
    if traj.params.causal:
        return (
            "Theorem 1.1 is stated for the full attention, and this run used a causal mask (token i attends to "
            "j <= i only): the theorem does not apply; run without the causal mask to check it"
        )
    if not settled:
        return (
            f"the run has not settled (one more layer would move the tokens by {change:.3g} of their size, more than "
            f"settled_rtol = {rtol:g}): run more layers"
        )
    z0 = traj.ys[0, b].detach().cpu().numpy()[traj.real_tokens(b).numpy()]
    big = float(np.abs(z0).max())
    e = int(np.frexp(big)[1]) if big > 0 else 0
    size_u = float(np.ptp(np.ldexp(z0, -e), axis=0).max()) if len(z0) > 1 else 0.0  # in units of 2**e: no overflow
    with np.errstate(over="ignore"):  # only shown: inf beyond the float range
        size = float(np.ldexp(size_u, e))
    if size_u > 0 and 10.0 * float(np.ldexp(travel, -e)) > LIMIT_RESOLUTION * size_u:
        return (
            f"the tokens may still travel up to {travel:.3g} (the last change times (1 + alpha) / alpha, alpha = "
            f"{traj.params.alpha:g}), "
            f"not small beside the configuration's size {size:.3g}: the final tokens are not yet their limits; "
            "run more layers or a larger alpha"
        )
    if given and size_u > 0 and float(np.ldexp(tol, -e)) > LIMIT_RESOLUTION * size_u:
        return (
            f"cluster_tol = {tol:.3g} is more than {LIMIT_RESOLUTION:g} of the configuration's size {size:.3g}: "
            "clusters at this tolerance can merge distinct limits; pass a smaller cluster_tol"
        )
    if given and tol < travel:
        return (
            f"cluster_tol = {tol:.3g} is below what the tokens may still travel ({travel:.3g}, rounding included): "
            "followers not yet at their leaders' limits would count as clusters of their own; pass a larger "
            "cluster_tol (None: ten times that)"
        )
    return _rounded_leaders(traj, b)


def _rounded_leaders(traj: HardmaxTrajectory, b: int) -> str | None:
    """The tokens of sequence b whose leading at layer 0 rounding decided against exact arithmetic, as a reason.

    A token whose computed margin at layer 0 is within twice its rounding bound (:mod:`attndyn.margins`) and
    that has no exact copy is decided again in exact rational arithmetic (the tokens and A are floats: their
    scores are exact fractions). It is undecided when it leads exactly (a leader rounding may hide or report
    falsely) or when the run let it follow only itself without its leading exactly.
    """
    import torch

    real = traj.real_tokens(b)
    z = traj.ys[0, b].detach().cpu()[real].double()  # (m, d)
    A = traj.params.A.detach().cpu().double()
    if len(z) < 2:
        return None
    zs, As = pow2_normalized(z), pow2_normalized(A)  # exact: no score overflows or underflows
    m = len(z)
    mu, bound = leader_margins(zs[None], As, None, torch.zeros(m, dtype=torch.long), torch.arange(m))
    near = torch.nonzero(mu.abs() <= 2 * bound).flatten().tolist()
    zn = z.numpy()
    near = [i for i in near if not (zn == zn[i]).all(axis=1).sum() > 1]  # an exact copy ties exactly
    if not near:
        return None
    idx = real.tolist()
    lead = leaders(traj, b)
    flagged = {idx[i] for i in near if i < m} & (
        {i for i, k in zip(lead.indices, lead.since) if k == 0} | {ev.index for ev in lead.rounding if ev.layer == 0}
    )
    if len(near) > EXACT_TIES_MAX:
        wrong = [idx[i] for i in near]
    else:
        wrong = [idx[i] for i in near if _exact_margin(zn, A.numpy(), i) > 0 or idx[i] in flagged]
    if not wrong:
        return None
    shown = ", ".join(map(str, wrong[:8])) + (" ..." if len(wrong) > 8 else "")
    return (
        f"whether {'token' if len(wrong) == 1 else 'tokens'} {shown} {'leads' if len(wrong) == 1 else 'lead'} at "
        "layer 0 is decided by rounding: the margin is within the rounding bound "
        f"of {str(traj.ys.dtype).replace('torch.', '')} and exact arithmetic decides otherwise; rescale or "
        "perturb the tokens, or compute in higher precision"
    )


def _exact_margin(z: np.ndarray, A: np.ndarray, i: int) -> Fraction:
    r"""Token i's margin :math:`\min_{j\ne i}\langle A z_i, z_i - z_j\rangle`, exactly (rational arithmetic)."""
    F = [[Fraction(float(v)) for v in row] for row in z]
    Am = [[Fraction(float(v)) for v in row] for row in A]
    q = [sum((a * x for a, x in zip(row, F[i])), Fraction(0)) for row in Am]  # A z_i
    s = [sum((qk * x for qk, x in zip(q, zj)), Fraction(0)) for zj in F]
    return min(s[i] - s[j] for j in range(len(F)) if j != i)


def _leader_hull_conclusions(leader_limits: np.ndarray, centers: list[np.ndarray], tol: float) -> dict[str, Any]:
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
    all_poly = Polytope.from_points(np.array(centers), tol=tol)
    return {
        "polytope": poly,
        "limits_on_boundary": all(poly.on_boundary(c) for c in centers),
        "vertices_are_leader_limits": all(
            np.abs(leader_limits - all_poly.points[v]).max(axis=1).min() <= tol for v in all_poly.vertices
        ),
        "centers_in_leader_hull": all(poly.contains(c) for c in centers),
    }
