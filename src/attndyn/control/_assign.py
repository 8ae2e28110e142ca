r"""Solve for a fixed assignment of every token to a leader, and verify it with the engine in rounds.

The shared core of :func:`~attndyn.control.choose_A` (whose assignment of followers to leaders is
chosen by alternation) and :func:`~attndyn.control.choose_A_for_clusters` (whose assignment is the
target): impose the invariant constraints of :mod:`~attndyn.control._invariant` on a schedule of
layers, solve the margin problem, run the exact engine; a token that ends elsewhere, or leads
without being a leader, gets "follow only your leader" at the first layer its follow set differed,
at that run's positions, and A is solved again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import analysis
from .._trajectory import HardmaxTrajectory
from ._constraints import Preference
from ._invariant import first_deviations, invariant_preferences, layer_schedule
from ._problem import ControlProblem, near_leads
from ._reduce import follow_only_rows
from ._result import Round
from ._solve import MarginSolution

__all__ = ["Attempt", "final_owners", "ends_with", "solve_assignment", "best_assignment"]


@dataclass
class Attempt:
    """What a sequence of rounds produced: the last verified (solution, run), the rounds, the time."""

    best: tuple[MarginSolution, HardmaxTrajectory] | None
    rounds: list[Round]
    seconds: float
    reason: str


def final_owners(final: np.ndarray, leaders: tuple[int, ...], *, rtol: float = 1e-6) -> tuple[int, ...]:
    """For each token, the first leader whose final position is within ``rtol * max|z|`` of
    its own in the max-norm (-1: none): the partition a run ends with (the same for the run at any scale).

    >>> final_owners(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1e-9], [0.5, 0.5]]), (0, 1))
    (0, 1, 0, -1)
    """
    tol = rtol * float(np.abs(final).max())
    out = []
    for z in final:
        near = [l for l in leaders if float(np.abs(z - final[l]).max()) <= tol]  # max-norm: no overflow
        out.append(near[0] if near else -1)
    return tuple(out)


def best_assignment(
    problem: ControlProblem, starts: list[np.ndarray], *, tries: int = 4
) -> tuple[tuple[int, ...], MarginSolution, float]:
    """Alternation over assignments: each non-leader is assigned the leader it scores highest under
    the current A (the choice hardmax makes among the leaders), the invariant problem is solved on the
    layer schedule of :func:`~attndyn.control._invariant.layer_schedule`, and again, until the assignment
    repeats; each start in ``starts`` in turn, until one gives a margin above ``problem.margin``.
    Returns the best assignment, its solution and the solver time."""
    Z, S = problem.tokens, problem.leaders
    ks = layer_schedule(problem.layers, problem.alpha)
    Sa = np.array(S)
    best: tuple[tuple[int, ...], MarginSolution] | None = None
    total = 0.0
    for A in starts:
        seen: set[tuple[int, ...]] = set()
        for _ in range(tries):
            scores = (Z @ A.T) @ Z[Sa].T  # (n, |S|): <A z_i, z_l>
            owner = tuple(int(i) if i in S else int(Sa[np.argmax(scores[i])]) for i in range(len(Z)))
            if owner in seen:
                break
            seen.add(owner)
            prefs = invariant_preferences(
                Z, owner, problem.alpha, ks, spd=problem.spd, max_constraints=problem.max_constraints
            )
            sol = problem.solve(prefs)
            total += sol.seconds
            if best is None or sol.margin > best[1].margin:
                best = (owner, sol)
            if not np.isfinite(sol.margin):
                break
            A = sol.A
        if best is not None and best[1].margin > problem.margin:
            break
    assert best is not None
    return best[0], best[1], total


def ends_with(traj: HardmaxTrajectory, owner: tuple[int, ...], found: tuple[int, ...]) -> tuple[int, ...]:
    """The leader each token of the run ends with: :func:`final_owners` of the last layer, except
    that a token that followed only ``owner[i]`` at every layer counts as ending with it even when
    the run was too short to close the gap (its position is then
    :math:`z_l + c^K (z_i - z_l) \to z_l`, c = 1/(1+alpha), exactly)."""
    ends = list(final_owners(traj.ys[-1, 0].numpy(), found))
    if traj.follow is not None:
        follow = traj.follow[:, 0].numpy()
        for i in range(len(ends)):
            if ends[i] != owner[i] and owner[i] in found and not first_deviations(follow, owner, [i]):
                ends[i] = owner[i]
    return tuple(ends)


def solve_assignment(
    problem: ControlProblem,
    owner: tuple[int, ...],
    *,
    first_round: int = 0,
    first: MarginSolution | None = None,
    partition: bool = True,
) -> Attempt:
    """Rounds of solve (invariant constraints for ``owner``) and simulate (see the module), at most
    ``problem.rounds``. ``first``: an already computed solution for round 0 (skips its solve). ``partition``:
    success needs every token to end with ``owner[i]`` (cluster targets); False: the leaders alone decide
    (leader targets, where the assignment is only a means). The best verified round is kept."""
    Z = problem.tokens
    n = len(Z)
    S = tuple(sorted(set(owner)))
    prefs: list[Preference] = invariant_preferences(
        Z,
        owner,
        problem.alpha,
        layer_schedule(problem.layers, problem.alpha),
        spd=problem.spd,
        max_constraints=problem.max_constraints,
    )
    history: list[Round] = []
    added: tuple[tuple[int, int], ...] = ()
    best = None
    best_score: tuple[bool, int, int] = (False, -(10**9), -(10**9))
    seconds, reason = 0.0, ""
    for r in range(problem.rounds):
        sol = problem.solve(prefs) if r > 0 or first is None else first
        seconds += sol.seconds
        idx = first_round + r
        if not sol.margin > problem.margin:
            history.append(Round(idx, added, sol.margin, sol.status, sol.seconds, (), (), False, "invariant"))
            reason = _no_margin_reason(sol, problem)
            break
        traj = problem.simulate(sol.A, follow=True)
        found = analysis.leaders(traj)
        ends = ends_with(traj, owner, found.indices)
        near = [ev.index for ev in near_leads(found, S)]  # within rounding of leading: the run cannot decide
        ok = set(found.indices) == set(S) and (ends == owner or not partition) and not near
        history.append(
            Round(idx, added, sol.margin, sol.status, sol.seconds, found.indices, found.since, ok, "invariant")
        )
        score = _round_score(ok, found.indices, S, ends, owner)
        if score > best_score:
            best, best_score = (sol, traj), score
        if ok:
            break
        wrong = [i for i in range(n) if ends[i] != owner[i] or (i in found.indices and i not in S) or i in near]
        assert traj.follow is not None  # simulate(..., follow=True) keeps the follow sets
        new = first_deviations(traj.follow[:, 0].numpy(), owner, wrong)
        if not new:
            reason = (
                f"every token follows only its leader at every layer, yet the run of {problem.layers} layers "
                "has not settled"
            )
            break
        added = tuple(new)
        for i, k in new:
            prefs += follow_only_rows(traj.ys[k, 0].numpy(), [i], owner[i], k)
    return Attempt(best, history, seconds, reason)


def _no_margin_reason(sol: MarginSolution, problem: ControlProblem) -> str:
    """Why :func:`solve_assignment` stopped: the invariant problem has no margin above ``problem.margin``."""
    return (
        f"no {problem.bound_words()} keeps every token following only its leader at every layer "
        f"with a margin above {problem.margin:g} (best margin {sol.margin:.3g}, {sol.status})"
    )


def _round_score(
    ok: bool, found: tuple[int, ...], S: tuple[int, ...], ends: tuple[int, ...], owner: tuple[int, ...]
) -> tuple[bool, int, int]:
    """Rank a verified round (larger is better): verified, then fewest wrong leaders (symmetric difference
    of ``found`` and ``S``), then fewest tokens that end with another leader than ``owner`` assigns."""
    return (ok, -len(set(found) ^ set(S)), -sum(e != o for e, o in zip(ends, owner)))
