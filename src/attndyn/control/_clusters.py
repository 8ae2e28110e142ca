r"""Clusters as targets: choose A so that every token ends with the leader you name.

The target is a map ``targets[i] = l``: token i should end at the limit of leader l, and the
leaders are the fixed points ``targets[l] = l``. It is solved as the leader target of
:func:`~attndyn.control.choose_A`, with the disjunction fixed by the target: at layer 0 each token
follows only its leader at every layer, :math:`C_i(Z^k) = \{l\}`, with the positions of the invariant of
:mod:`~attndyn.control._invariant` (leaders never move, followers approach their leader by the
factor :math:`1/(1+\alpha)` per layer), so the final partition is the target. The exact engine checks
it; :mod:`~attndyn.control._assign` adds the constraints of the layers where a run deviated.
"""

from __future__ import annotations

import time
from typing import Any

from .. import analysis
from .._errors import param
from .._validation import InputError, check_int, check_nonnegative
from ._assign import ends_with, solve_assignment
from ._hull import never_leads
from ._problem import ControlProblem, check_request, near_leads, simulate, token_indices, undecided_reason
from ._result import ControlResult
from ._scale import in_units, unit_scale
from ._solve import MAX_CONSTRAINTS

__all__ = ["choose_A_for_clusters"]


def _check_targets(targets: Any, n: int) -> tuple[int, ...]:
    T = tuple(token_indices(targets, "targets"))
    if len(T) != n:
        raise InputError(f"targets has {len(T)} entries for {n} tokens; give the leader of every token")
    bad = [t for t in T if not 0 <= t < n]
    if bad:
        raise InputError(f"targets {bad} out of range: the tokens are numbered 0..{n - 1}")
    wrong = [i for i, t in enumerate(T) if T[t] != t]
    if wrong:
        i = wrong[0]
        raise InputError(
            f"targets[{i}] = {T[i]} but targets[{T[i]}] = {T[T[i]]}: a token's leader must be its own "
            f"target (set targets[{T[i]}] = {T[i]})"
        )
    return T


def choose_A_for_clusters(
    tokens: Any,
    targets: Any,
    *,
    spd: bool = True,
    alpha: float = 0.5,
    layers: int = 60,
    rounds: int = 5,
    min_eigenvalue: float | None = None,
    margin: float = 0.0,
    max_constraints: int = MAX_CONSTRAINTS,
) -> ControlResult:
    """A matrix A under which token i ends with leader ``targets[i]`` (leaders: ``targets[l] = l``).

    Same arguments and result as :func:`~attndyn.control.choose_A`; the result also holds
    ``clusters_requested`` (the targets) and ``clusters_found`` (:func:`~attndyn.control._assign.ends_with`
    of the run: the leader each token ends with, -1 for none).

    >>> from attndyn.control import choose_A_for_clusters
    >>> Z = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.5], [0.5, 0.6]]
    >>> res = choose_A_for_clusters(Z, [0, 1, 0, 1], spd=False)   # 2 joins 0, 3 joins 1
    >>> res.verdict, res.clusters_found
    ('reached', (0, 1, 0, 1))
    >>> choose_A_for_clusters(Z, [0, 1, 1, 0], spd=False).verdict   # the crossing partition
    'not_reached'
    """
    Z0, alpha, layers, rounds, min_eigenvalue = check_request(tokens, alpha, layers, rounds, min_eigenvalue, spd)
    n = len(Z0)
    T = _check_targets(targets, n)
    margin = check_nonnegative(margin, param("margin", "margin"))
    max_constraints = check_int(max_constraints, param("max_constraints", "max_constraints"), minimum=1)
    S = tuple(sorted({t for t in T}))
    Z, e = unit_scale(Z0)  # every answer below is the same for 2**k * Z (see attndyn.control._scale)
    problem = ControlProblem(Z, S, spd, min_eigenvalue, alpha, layers, rounds, margin, max_constraints)
    certs = tuple(c for c in (never_leads(Z0, i, spd=spd) for i in S) if c is not None)
    if certs:
        baseline = simulate(Z0, None, alpha, layers)
        return ControlResult.unreachable(problem, certs, baseline=baseline, clusters_requested=T, clusters_found=())
    t0 = time.perf_counter()
    att = solve_assignment(problem, T)
    fields: dict[str, Any] = dict(seconds=att.seconds, extra={"wall_seconds": time.perf_counter() - t0})
    fields["baseline"] = simulate(Z0, None, alpha, layers)  # after the solves: a refused problem costs no run
    fields["clusters_requested"] = T
    history = tuple(att.rounds)
    if att.best is None:  # no round produced a verified run: the last round's margin and its reason
        last = att.rounds[-1].margin
        reason = att.reason + SUFFICIENT
        return ControlResult.unverified(problem, last, reason, history, clusters_found=(), **fields)
    sol, traj = att.best
    traj = in_units(traj, e)
    found = analysis.leaders(traj)
    owners = ends_with(traj, T, found.indices)
    verdict, reason = _cluster_verdict(found, owners, T, S, layers=layers, later=att.reason)
    return ControlResult.verified(problem, sol, traj, found, verdict, reason, history, clusters_found=owners, **fields)


#: What a "no A" of a cluster target means: the invariant is sufficient, not necessary (a token may follow others
#: for a while and still end with its target).
SUFFICIENT = (
    "; this invariant (each token follows only its target from layer 0 on) is sufficient, not necessary: "
    "the partition may still be reached by an A under which tokens follow others on the way"
)


def _cluster_verdict(
    found: analysis.LeaderSet,
    owners: tuple[int, ...],
    T: tuple[int, ...],
    S: tuple[int, ...],
    *,
    layers: int,
    later: str,
) -> tuple[str, str]:
    """``reached`` when the run's leaders are exactly ``S`` and token i ends with leader ``T[i]`` for every i
    (``owners`` from :func:`~attndyn.control._assign.ends_with`), ``undecided`` when so but another token came
    within rounding of leading (:func:`~attndyn.control._problem.near_leads`), else ``not_reached`` with the
    tokens that end elsewhere; ``later`` is the assignment's own reason, appended."""
    if set(found.indices) == set(S) and owners == T:
        near = near_leads(found, S)
        if near:
            return "undecided", undecided_reason(S, near, layers)
        return "reached", f"every token ends with its target leader in the engine's run of {layers} layers"
    wrong = [i for i in range(len(T)) if owners[i] != T[i]]
    reason = (
        f"tokens {wrong} end elsewhere, leaders found {list(found.indices)}"
        if wrong
        else f"leaders found {list(found.indices)} differ from {list(S)}"
    ) + (f"; then {later}" if later else "")
    return "not_reached", reason
