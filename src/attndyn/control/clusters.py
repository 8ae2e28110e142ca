r"""Clusters as targets: choose A so that every token ends with the leader you name.

The target is a map ``targets[i] = l``: token i should end at the limit of leader l, and the
leaders are the fixed points ``targets[l] = l``. It is solved as the leader target of
:func:`~attndyn.control.choose_A`, with the disjunction fixed by the target: at layer 0 each token
follows only its leader, :math:`C_i(Z^0) = \{l\}` (:func:`~attndyn.control.constraints.follows_only`;
for l = i this says i leads). If this held at every layer, leaders would never move and each
follower would approach its leader by the factor :math:`1/(1+\alpha)` per layer (eq. (1.1)), so
the final partition would be the target. The exact engine checks it: a token that ends elsewhere
gets the constraint "follow only your leader" added at the first layer where its follow set
differed, at that run's positions, and A is solved again (at most ``rounds`` rounds).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from .. import analysis
from .._validation import InputError
from .choose import check_request, simulate
from .constraints import follows_only
from .hull import never_leads
from .result import ControlResult, Round
from .solve import solve_margin

__all__ = ["choose_A_for_clusters", "final_owners"]


def _check_targets(targets: Any, n: int) -> tuple[int, ...]:
    try:
        T = tuple(int(t) for t in targets)
    except (TypeError, ValueError):
        raise InputError(f"targets must be one token index per token, got {targets!r}") from None
    if len(T) != n:
        raise InputError(f"targets has {len(T)} entries for {n} tokens; give the leader of every token")
    bad = [t for t in T if not 0 <= t < n]
    if bad:
        raise InputError(f"targets {bad} out of range: the tokens are numbered 0..{n - 1}")
    wrong = [i for i, t in enumerate(T) if T[t] != t]
    if wrong:
        i = wrong[0]
        raise InputError(f"targets[{i}] = {T[i]} but targets[{T[i]}] = {T[T[i]]}: a token's leader must be its own "
                         f"target (set targets[{T[i]}] = {T[i]})")
    return T


def final_owners(final: np.ndarray, leaders: tuple[int, ...], *, rtol: float = 1e-6) -> tuple[int, ...]:
    """For each token, the first leader whose final position is within ``rtol * max(1, max|z|)`` of
    its own (-1: none): the partition a run ends with.

    >>> final_owners(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1e-9], [0.5, 0.5]]), (0, 1))
    (0, 1, 0, -1)
    """
    tol = rtol * max(1.0, float(np.abs(final).max()))
    out = []
    for z in final:
        near = [l for l in leaders if float(np.linalg.norm(z - final[l])) <= tol]
        out.append(near[0] if near else -1)
    return tuple(out)


def choose_A_for_clusters(
    tokens: Any,
    targets: Any,
    *,
    spd: bool = True,
    alpha: float = 0.5,
    layers: int = 60,
    rounds: int = 5,
    min_eigenvalue: float = 1e-3,
) -> ControlResult:
    """A matrix A under which token i ends with leader ``targets[i]`` (leaders: ``targets[l] = l``).

    Same arguments and result as :func:`~attndyn.control.choose_A`; the result also holds
    ``clusters_requested`` (the targets) and ``clusters_found`` (:func:`final_owners` of the run).

    >>> from attndyn.control import choose_A_for_clusters
    >>> Z = [[1.0, 0.0], [0.0, 1.0], [0.6, 0.5], [0.5, 0.6]]
    >>> res = choose_A_for_clusters(Z, [0, 1, 0, 1], spd=False)   # 2 joins 0, 3 joins 1
    >>> res.verdict, res.clusters_found
    ('reached', (0, 1, 0, 1))
    >>> choose_A_for_clusters(Z, [0, 1, 1, 0], spd=False).verdict   # the crossing partition
    'not_reached'
    """
    Z, alpha, layers, rounds, mu = check_request(tokens, alpha, layers, rounds, min_eigenvalue, spd)
    n, d = Z.shape
    T = _check_targets(targets, n)
    S = tuple(sorted({t for t in T}))
    baseline = simulate(Z, None, alpha, layers)
    solver = "cvxpy/CLARABEL (SDP)" if spd else "scipy linprog/HiGHS (LP)"
    common = dict(leaders_requested=S, spd=spd, alpha=alpha, layers=layers, baseline=baseline, solver=solver,
                  clusters_requested=T)
    certs = tuple(c for c in (never_leads(Z, i, spd=spd) for i in S) if c is not None)
    if certs:
        return ControlResult(A=np.eye(d), margin=-np.inf, leaders_found=(), since=(), verdict="not_reached",
                             reason="; ".join(c.sentence() for c in certs), rounds=(), certificates=certs,
                             trajectory=None, seconds=0.0, clusters_found=(), **common)
    prefs = [p for i in range(n) for p in follows_only(Z, i, T[i])]
    history: list[Round] = []
    added: tuple[tuple[int, int], ...] = ()
    best = None
    seconds, reason = 0.0, ""
    t0 = time.perf_counter()
    for r in range(rounds):
        sol = solve_margin(prefs, d, spd=spd, min_eigenvalue=mu)
        seconds += sol.seconds
        if not sol.margin > 0:
            history.append(Round(r, added, sol.margin, sol.status, sol.seconds, (), (), False))
            reason = (f"no {'SPD ' if spd else ''}A within the norm bound makes every token follow only its target "
                      f"leader (best margin {sol.margin:.3g}, {sol.status})")
            break
        traj = simulate(Z, sol.A, alpha, layers, follow=True)
        found = analysis.leaders(traj)
        owners = final_owners(traj.ys[-1, 0].numpy(), found.indices)
        ok = set(found.indices) == set(S) and owners == T
        history.append(Round(r, added, sol.margin, sol.status, sol.seconds, found.indices, found.since, ok))
        best = (sol, traj, found, owners)
        if ok:
            break
        follow = traj.follow[:, 0].numpy()  # (K+1, n, n)
        new = []
        for i in range(n):
            if owners[i] == T[i] and (i in S or i not in found.indices):
                continue
            want = np.zeros(n, dtype=bool)
            want[T[i]] = True
            bad = [k for k in range(len(follow)) if not (follow[k, i] == want).all()]
            if bad:
                new.append((i, bad[0]))
        if not new:
            reason = f"every token follows only its target at every layer, yet the run of {layers} layers has not settled"
            break
        added = tuple(new)
        for i, k in new:
            prefs += follows_only(traj.ys[k, 0].numpy(), i, T[i], layer=k)
    extra = {"wall_seconds": time.perf_counter() - t0}
    if best is None:
        return ControlResult(A=np.eye(d), margin=history[-1].margin, leaders_found=(), since=(), verdict="not_reached",
                             reason=reason, rounds=tuple(history), certificates=(), trajectory=None, seconds=seconds,
                             clusters_found=(), extra=extra, **common)
    sol, traj, found, owners = best
    if set(found.indices) == set(S) and owners == T:
        verdict, reason = "reached", f"every token ends with its target leader in the engine's run of {layers} layers"
    else:
        wrong = [i for i in range(n) if owners[i] != T[i]]
        verdict = "not_reached"
        reason = (f"tokens {wrong} end elsewhere, leaders found {list(found.indices)}" if wrong else
                  f"leaders found {list(found.indices)} differ from {list(S)}") + (f"; then {reason}" if reason else "")
    return ControlResult(A=sol.A, margin=sol.margin, leaders_found=found.indices, since=found.since, verdict=verdict,
                         reason=reason, rounds=tuple(history), certificates=(), trajectory=traj, seconds=seconds,
                         clusters_found=owners, extra=extra, **common)
