r"""Choose A so that the tokens you name are exactly the leaders (the hardmax paper's open question).

At layer 0 the target is a set of linear inequalities in A (:mod:`~attndyn.control._constraints`):
each requested leader i has :math:`\langle A z_i, z_i - z_l\rangle > 0` for all l != i; each other
token i needs *some* j with :math:`\langle A z_i, z_j - z_i\rangle \ge 0` (a disjunction). The
disjunction is resolved by alternation: with the current A, every non-leader is assigned the token
it already scores highest, the margin problem (:mod:`~attndyn.control._solve`) is solved for these
choices, and the choices are recomputed with the new A until they repeat.

Leaders can also emerge at later layers (hardmax paper, the emerging-leader example). Stage 1
therefore imposes constraints on every layer at once, under the invariant "each follower follows
only its assigned leader" (:mod:`~attndyn.control._invariant`: the positions are then known in
closed form, and the constraints are linear in A; followers are assigned to leaders by alternation).
When that has no positive margin, stage 2 imposes layer 0 only, with the free disjunction above.
Either answer is **verified by simulation** with the exact engine (:func:`attndyn.hardmax`,
:func:`attndyn.leaders`) over all ``layers``. When a token that was not asked for leads at layer k, or
follows only itself there by a margin within the rounding bound (a near-tie the float run cannot decide:
:func:`~attndyn.control._problem.near_leads`), the constraint "it does not lead" is added at the positions
:math:`Z^k` of that run and the problem solved again, for at most ``rounds`` rounds; every round is
reported. A run whose only fault is such a near-tie is ``undecided``, never ``reached``.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

import numpy as np

from .. import analysis
from .._errors import param
from .._trajectory import HardmaxTrajectory
from .._validation import InputError, check_int, check_nonnegative
from ._assign import Attempt, best_assignment, solve_assignment
from ._constraints import Preference
from ._hull import never_leads
from ._problem import ControlProblem, check_request, near_leads, simulate, token_indices, undecided_reason
from ._reduce import lead_rows, not_lead_keys
from ._result import ControlResult, Round
from ._scale import in_units, unit_scale
from ._solve import MAX_CONSTRAINTS, MarginSolution

__all__ = ["choose_A", "solve_disjunctive"]


def _check_leaders(leaders: Any, n: int) -> tuple[int, ...]:
    if isinstance(leaders, (int, np.integer)) and not isinstance(leaders, (bool, np.bool_)):
        leaders = [leaders]
    S = token_indices(leaders, "leaders")
    if not S:
        raise InputError("leaders is empty; name at least one token index, e.g. leaders=[0, 2]")
    bad = [i for i in S if not 0 <= i < n]
    if bad:
        raise InputError(f"leaders {bad} out of range: the tokens are numbered 0..{n - 1}")
    if len(set(S)) != len(S):
        raise InputError(f"leaders {S} repeats a token; name each token once")
    return tuple(sorted(S))


def solve_disjunctive(
    fixed: list[Preference], groups: list[list[Preference]], problem: ControlProblem, *, tries: int = 4
) -> tuple[MarginSolution, float]:
    """Maximise the margin of ``fixed`` and of one preference chosen from each group (alternation,
    see the module), from the layer-0 solution of ``fixed`` and from the identity, until a start gives
    a margin above ``problem.margin``; returns the best solution and the total solver time."""
    total = 0.0
    best: MarginSolution | None = None
    starts = []
    if fixed:
        s0 = problem.solve(fixed)
        total += s0.seconds
        if np.isfinite(s0.margin):
            starts.append(s0.A)
    starts.append(np.eye(problem.d))
    for A in starts:
        seen: set[tuple[int, ...]] = set()
        for _ in range(tries):
            choice = tuple(int(np.argmax([p.margin(A) for p in g])) for g in groups)
            if choice in seen:
                break
            seen.add(choice)
            s = problem.solve(fixed + [g[c] for g, c in zip(groups, choice)])
            total += s.seconds
            if best is None or s.margin > best.margin:
                best = s
            if not np.isfinite(s.margin):
                break
            A = s.A
        if best is not None and best.margin > problem.margin:
            break
    assert best is not None  # at least one solve ran
    return best, total


def choose_A(
    tokens: Any,
    leaders: Iterable[int],
    *,
    spd: bool = True,
    alpha: float = 0.5,
    layers: int = 60,
    rounds: int = 5,
    min_eigenvalue: float | None = None,
    margin: float = 0.0,
    max_constraints: int = MAX_CONSTRAINTS,
) -> ControlResult:
    r"""A matrix A under which exactly the tokens ``leaders`` lead (:math:`C_i(Z^k)=\{i\}` for some k).

    Args:
        tokens: one sequence (n, d).
        leaders: the token indices that should lead; every other token should never lead.
        spd: look for a symmetric positive definite A with :math:`\mu I \preceq A \preceq I`
            (a semidefinite program; needs cvxpy, ``pip install -e ".[control]"``), so that
            Theorem 1.1 applies; False: any A with :math:`|A_{ab}| \le 1` (a linear program).
        alpha, layers: step and depth of the verification run (hardmax paper eq. (1.1)).
        rounds: at most this many solve-and-simulate rounds.
        min_eigenvalue: :math:`\mu`, the smallest eigenvalue allowed for SPD A (default
            :data:`~attndyn.control._problem.MIN_EIGENVALUE`, 1e-3); refused with ``spd=False``, which has no
            eigenvalue bound.
        margin: accept only solutions whose normalised margin (:mod:`~attndyn.control._constraints`)
            exceeds this (default 0: any strictly positive margin); larger values buy robustness.
        max_constraints: a margin problem with more constraints (after the reduction to hull vertices of
            :mod:`~attndyn.control._reduce`) is refused before it is built, with its memory and time
            estimate (:func:`~attndyn.control._solve.check_size`); so is one over half the machine's memory.

    Returns:
        A :class:`~attndyn.control.ControlResult`: A, the margin, the verdict and why, each round,
        hull certificates of targets that cannot lead at layer 0 (the program asks every target to lead from
        layer 0, so it stops there; such a token may still come to lead later under some A), the verification
        run and the identity baseline.

    >>> from attndyn.control import choose_A
    >>> Z = [[2.0, 0.0], [0.0, 2.0], [-1.0, -1.5], [0.1, 0.2], [0.5, -0.3]]
    >>> import attndyn; attndyn.leaders(attndyn.hardmax(Z, alpha=0.5, layers=60)).indices   # under A = I
    (0, 1, 2)
    >>> res = choose_A(Z, [1, 2], spd=False)
    >>> res.verdict, res.leaders_found, res.margin > 0
    ('reached', (1, 2), True)
    >>> choose_A(Z, [3], spd=False).reason.split(" (")[0]
    'token 3 lies in the hull of the other tokens'
    """
    Z0, alpha, layers, rounds, min_eigenvalue = check_request(tokens, alpha, layers, rounds, min_eigenvalue, spd)
    margin = check_nonnegative(margin, param("margin", "margin"))
    max_constraints = check_int(max_constraints, param("max_constraints", "max_constraints"), minimum=1)
    S = _check_leaders(leaders, len(Z0))
    Z, e = unit_scale(Z0)  # every answer below is the same for 2**k * Z (see attndyn.control._scale)
    problem = ControlProblem(Z, S, spd, min_eigenvalue, alpha, layers, rounds, margin, max_constraints)

    certs = tuple(c for c in (never_leads(Z0, i, spd=spd) for i in S) if c is not None)
    if certs:
        return ControlResult.unreachable(problem, certs, baseline=simulate(Z0, None, alpha, layers))

    t_start = time.perf_counter()
    attempts, seconds = _both_stages(problem)
    fields: dict[str, Any] = dict(seconds=seconds, extra={"wall_seconds": time.perf_counter() - t_start})
    fields["baseline"] = simulate(Z0, None, alpha, layers)  # after the solves: a refused problem costs no run
    history = tuple(r for a in attempts for r in a.rounds)
    scored = [(_score(a.best[1], S), k) for k, a in enumerate(attempts) if a.best is not None]
    if not scored:  # no attempt produced a verified run: the best margin seen and every reason
        reason = "; ".join(a.reason for a in attempts if a.reason)
        best = max(r.margin for r in history) if history else -np.inf
        return ControlResult.unverified(problem, best, reason, history, **fields)
    chosen = attempts[max(scored)[1]]
    assert chosen.best is not None  # scored keeps only attempts with a verified run
    sol, traj = chosen.best
    traj = in_units(traj, e)
    found = analysis.leaders(traj)
    how = (
        "every layer, followers assigned to leaders"
        if chosen is attempts[0]
        else "layer 0 and the layers where runs disagreed"
    )
    verdict, reason = _verdict(traj, found, S, achieved=sol.margin, how=how, layers=layers, n_rounds=len(history))
    return ControlResult.verified(problem, sol, traj, found, verdict, reason, history, **fields)


def _both_stages(problem: ControlProblem) -> tuple[list[Attempt], float]:
    """The attempts of :func:`choose_A` (see the module): stage 1 (every layer), then stage 2 (layer 0 and the
    layers where runs disagreed) unless stage 1's last round was verified; returns them and the solver seconds."""
    fixed = [p for i in problem.leaders for p in lead_rows(problem.tokens, i)]
    problem.check_size(len(fixed))
    att, seconds = _every_layer_attempt(problem, fixed)
    attempts = [att]
    if not (att.rounds and att.rounds[-1].ok):
        # Stage 2: layer 0 only (the disjunction free), then the layers where runs disagreed.
        att2 = _layer0_rounds(problem, fixed, first_round=len(att.rounds))
        attempts.append(att2)
        seconds += att2.seconds
    return attempts, seconds


def _every_layer_attempt(problem: ControlProblem, fixed: list[Preference]) -> tuple[Attempt, float]:
    """Stage 1 of :func:`choose_A`: constraints on every layer at once, followers assigned to leaders
    (sufficient; see :mod:`~attndyn.control._invariant`). Returns the attempt and the solver seconds spent,
    the layer-0 start included and the first assignment's solve counted once."""
    s0 = problem.solve(fixed)
    starts = ([s0.A] if np.isfinite(s0.margin) else []) + [np.eye(problem.d)]
    owner, first, secs = best_assignment(problem, starts)
    att = solve_assignment(problem, owner, first=first, partition=False)
    return att, s0.seconds + secs + att.seconds - first.seconds


def _verdict(
    traj: HardmaxTrajectory,
    found: analysis.LeaderSet,
    S: tuple[int, ...],
    *,
    achieved: float,
    how: str,
    layers: int,
    n_rounds: int,
) -> tuple[str, str]:
    """Verdict and reason of a verified run: ``reached`` when exactly the tokens ``S`` lead, ``undecided`` when
    they do but another token came within rounding of leading (:func:`~attndyn.control._problem.near_leads`),
    ``layer0_only`` when exactly ``S`` lead at layer 0 but others lead later, else ``not_reached``;
    ``achieved`` is the margin of the run's A, quoted in the reason."""
    if set(found.indices) == set(S):
        near = near_leads(found, S)
        if near:
            return "undecided", undecided_reason(S, near, layers)
        return "reached", (
            f"exactly tokens {list(S)} lead in the engine's run of {layers} layers "
            f"(margin {achieved:.3g}, constraints: {how})"
        )
    assert traj.leader_mask is not None  # hardmax keeps the leader masks
    layer0 = tuple(int(i) for i in np.flatnonzero(traj.leader_mask[0, 0].numpy()))
    late = [(i, k) for i, k in zip(found.indices, found.since) if i not in S]
    what = ", ".join(f"token {i} (from layer {k})" for i, k in late)
    if layer0 == S and late:
        return (
            "layer0_only",
            f"exactly the requested tokens lead at layer 0, but {what} also leads later ({n_rounds} rounds)",
        )
    missing = [i for i in S if i not in found.indices]
    parts = ([f"requested tokens {missing} do not lead"] if missing else []) + ([f"{what} also lead"] if late else [])
    return "not_reached", f"the engine's leaders are {list(found.indices)} ({'; '.join(parts)})"


def _score(traj: HardmaxTrajectory, S: tuple[int, ...]) -> tuple[int, int, int, int]:
    """Rank verified runs: reached (no other token within rounding of leading), then exact at layer 0, then
    fewest wrong leaders, then fewest tokens within rounding of leading."""
    found = analysis.leaders(traj)
    near = near_leads(found, S)
    assert traj.leader_mask is not None  # hardmax keeps the leader masks
    layer0 = set(int(i) for i in np.flatnonzero(traj.leader_mask[0, 0].numpy()))
    wrong = len(set(found.indices) ^ set(S))
    return (int(not wrong and not near), int(layer0 == set(S)), -wrong, -len(near))


def _layer0_rounds(problem: ControlProblem, fixed: list[Preference], *, first_round: int) -> Attempt:
    """Stage 2 of :func:`choose_A`: layer 0 with the disjunction free (:func:`solve_disjunctive`), then, for
    each token that was not asked for and leads at layer k of the run, "it does not lead" at that run's
    positions :math:`Z^k`; at most ``problem.rounds`` rounds, numbered from ``first_round``."""
    Z, S = problem.tokens, problem.leaders
    keys = {i: not_lead_keys(Z, i) for i in range(len(Z)) if i not in S}
    problem.check_size(len(fixed) + sum(map(len, keys.values())))  # all of them, counted before any row is built
    groups: list[list[Preference]] = [[Preference(i, int(j), i, 0, Z) for j in js] for i, js in keys.items() if len(js)]
    history: list[Round] = []
    added: tuple[tuple[int, int], ...] = ()
    best = None
    seconds, reason = 0.0, ""
    for r in range(problem.rounds):
        sol, secs = solve_disjunctive(fixed, groups, problem)
        seconds += secs
        idx = first_round + r
        if not sol.margin > problem.margin:
            history.append(Round(idx, added, sol.margin, sol.status, secs, (), (), False))
            reason = (
                f"no {problem.bound_words()} meets the layer-0 constraints with a "
                f"margin above {problem.margin:g} (best margin {sol.margin:.3g}, {sol.status})"
                + (" after adding later layers" if r else "")
            )
            break
        traj = problem.simulate(sol.A)
        found = analysis.leaders(traj)
        near = [(ev.index, ev.layer) for ev in near_leads(found, S)]
        ok = set(found.indices) == set(S) and not near
        history.append(Round(idx, added, sol.margin, sol.status, secs, found.indices, found.since, ok))
        if best is None or _score(traj, S) >= _score(best[1], S):
            best = (sol, traj)
        if ok:
            break
        extra = [(i, k) for i, k in zip(found.indices, found.since) if i not in S] + near
        if set(S) - set(found.indices) or not extra:  # cannot happen with a positive layer-0 margin, unless rounding
            reason = f"requested leaders {sorted(set(S) - set(found.indices))} do not lead in the engine's run"
            break
        added = tuple(extra)
        later = [(i, k, traj.ys[k, 0].numpy()) for i, k in extra]  # (n, d) positions of layer k of this run
        more = [(i, k, Zk, not_lead_keys(Zk, i)) for i, k, Zk in later]
        problem.check_size(len(fixed) + sum(map(len, groups)) + sum(len(js) for *_, js in more))
        groups += [[Preference(i, int(j), i, k, Zk) for j in js] for i, k, Zk, js in more if len(js)]
    return Attempt(best, history, seconds, reason)
