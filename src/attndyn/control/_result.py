"""What a control solve returns: the chosen A, its margin, every round, the verification run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import analysis
from .._trajectory import HardmaxTrajectory
from ._hull import HullCertificate
from ._problem import ControlProblem
from ._solve import MarginSolution

__all__ = ["Round", "ControlResult", "VERDICTS"]

#: What a certificate does not say: the program stops at it, a token may still come to lead later.
LATER = (
    " (this program asks every target to lead from layer 0; a token can still come to lead at a later layer "
    "under some A, which it does not search)"
)
#: ``reached``: the engine's leaders (every layer) are exactly the requested ones, and no other token came within
#: rounding of leading;
#: ``undecided``: the engine's leaders are the requested ones, but another token followed only itself at some layer
#: by a margin within the rounding bound, so the float run cannot tell whether it leads (no A without such a tie
#: was found in the rounds);
#: ``layer0_only``: exactly the requested tokens lead at layer 0, but others emerge later;
#: ``not_reached``: no A was found (certificate, or no positive margin), or layer 0 already differs.
VERDICTS = ("reached", "undecided", "layer0_only", "not_reached")


@dataclass(frozen=True)
class Round:
    """One solve-and-simulate round: the constraints added before it, the margin, what the engine found."""

    index: int
    added: tuple[tuple[int, int], ...]  # (token, layer) constraints added before this round's solve
    margin: float
    status: str
    seconds: float
    leaders_found: tuple[int, ...]
    since: tuple[int, ...]
    ok: bool
    method: str = (
        "layer 0"  # "invariant": every layer, followers assigned to leaders; "layer 0": layer 0 and added layers
    )

    def record(self) -> dict[str, Any]:
        return {
            "round": self.index,
            "method": self.method,
            "added": [{"token": i, "layer": k} for i, k in self.added],
            "margin": _num(self.margin),
            "status": self.status,
            "solve_seconds": self.seconds,
            "leaders_found": [{"index": i, "since_layer": k} for i, k in zip(self.leaders_found, self.since)],
            "reached": self.ok,
        }


def _num(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


@dataclass(frozen=True)
class ControlResult:
    """Result of :func:`attndyn.control.choose_A` (and of the cluster variant).

    Attributes:
        A: the chosen (d, d) matrix (the identity when none was found).
        margin: the smallest normalised score gap of the constraints A was solved for
            (> 0: every constraint holds strictly; see :mod:`attndyn.control._constraints`).
        leaders_requested / leaders_found: token indices; ``leaders_found`` are
            :func:`attndyn.leaders` of ``trajectory``, with ``since`` their first layers.
        verdict: one of :data:`VERDICTS`; ``reached`` is ``verdict == "reached"``.
        reason: a sentence saying why (which token, which layer, which certificate).
        rounds: every solve-and-simulate round.
        certificates: hull certificates of requested leaders that can never lead at layer 0.
        trajectory: the verification run (exact engine, A, ``alpha``, ``layers``, every layer kept).
        baseline: the same run under the identity (what the tokens do without control).
        spd, alpha, layers, solver, seconds: the settings and total solve time.
        min_margin: the margin an A had to exceed to be accepted.
        clusters_requested / clusters_found: for cluster targets, the leader each token should end
            with / ends with (-1: with none); None for leader targets.
    """

    A: np.ndarray
    margin: float
    leaders_requested: tuple[int, ...]
    leaders_found: tuple[int, ...]
    since: tuple[int, ...]
    verdict: str
    reason: str
    rounds: tuple[Round, ...]
    certificates: tuple[HullCertificate, ...]
    trajectory: HardmaxTrajectory | None
    baseline: HardmaxTrajectory
    spd: bool
    alpha: float
    layers: int
    solver: str
    seconds: float
    min_margin: float = 0.0
    clusters_requested: tuple[int, ...] | None = None
    clusters_found: tuple[int, ...] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def reached(self) -> bool:
        return self.verdict == "reached"

    @classmethod
    def verified(
        cls,
        problem: ControlProblem,
        sol: MarginSolution,
        traj: HardmaxTrajectory,
        found: analysis.LeaderSet,
        verdict: str,
        reason: str,
        rounds: tuple[Round, ...],
        **fields: Any,
    ) -> ControlResult:
        """The result of a verified run ``traj`` under ``sol``'s A: its margin, the leaders ``found`` in the run
        (:func:`attndyn.leaders`), the verdict and its reason; ``fields``: the solve time and the rest."""
        return cls._posed(
            problem,
            A=sol.A,
            margin=sol.margin,
            leaders_found=found.indices,
            since=found.since,
            verdict=verdict,
            reason=reason,
            rounds=rounds,
            certificates=(),
            trajectory=traj,
            **fields,
        )

    @classmethod
    def unverified(
        cls,
        problem: ControlProblem,
        margin: float,
        reason: str,
        rounds: tuple[Round, ...],
        certificates: tuple[HullCertificate, ...] = (),
        **fields: Any,
    ) -> ControlResult:
        """The result without a verified run: the identity A, no leader found, ``not_reached`` and why;
        ``margin`` is the best one seen."""
        return cls._posed(
            problem,
            A=np.eye(problem.d),
            margin=margin,
            leaders_found=(),
            since=(),
            verdict="not_reached",
            reason=reason,
            rounds=rounds,
            certificates=certificates,
            trajectory=None,
            **fields,
        )

    @classmethod
    def unreachable(
        cls, problem: ControlProblem, certificates: tuple[HullCertificate, ...], **fields: Any
    ) -> ControlResult:
        """The result for a target some of whose tokens cannot lead at layer 0, where the program asks every
        target to lead: no A is solved for, the certificates say why (identity A, no rounds, no verification
        run). Not a proof that no A makes the target lead later: leaders can emerge at later layers."""
        reason = "; ".join(c.sentence() for c in certificates) + LATER
        return cls.unverified(problem, -np.inf, reason, (), certificates, seconds=0.0, **fields)

    @classmethod
    def _posed(cls, problem: ControlProblem, **fields: Any) -> ControlResult:
        """A result that reports ``problem``'s settings: the requested leaders, spd, alpha, layers, solver, margin."""
        return cls(
            leaders_requested=problem.leaders,
            spd=problem.spd,
            alpha=problem.alpha,
            layers=problem.layers,
            solver=problem.solver,
            min_margin=problem.margin,
            **fields,
        )

    def record(self) -> dict[str, Any]:
        """The JSON form (the CLI's ``--json`` contract)."""
        rec = {
            "A": np.asarray(self.A).tolist(),
            "alpha": self.alpha,
            "layers": self.layers,
            "spd": self.spd,
            "margin": _num(self.margin),
            "min_margin": self.min_margin,
            "leaders_requested": list(self.leaders_requested),
            "leaders_found": [{"index": i, "since_layer": k} for i, k in zip(self.leaders_found, self.since)],
            "reached": self.reached,
            "verdict": self.verdict,
            "reason": self.reason,
            "rounds": [r.record() for r in self.rounds],
            "certificates": [c.record() for c in self.certificates],
            "solver": self.solver,
            "solve_seconds": self.seconds,
        }
        if self.clusters_requested is not None:
            rec["clusters_requested"] = list(self.clusters_requested)
            rec["clusters_found"] = list(self.clusters_found or ())
        return rec
