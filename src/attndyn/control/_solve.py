r"""The margin problem: the matrix A that satisfies linear score preferences with the largest margin.

Given preference rows :math:`G_1, \dots, G_m` (:mod:`attndyn.control._constraints`), solve

.. math::

    \max_{A,\,t}\; t \quad\text{s.t.}\quad \langle A, G_k\rangle_F \ge t \;(k = 1..m),

* **general A** (a linear program, :func:`scipy.optimize.linprog` with HiGHS): under the norm
  bound :math:`|A_{ab}| \le 1`;
* **symmetric positive definite A** (a semidefinite program, cvxpy with the solvers it installs):
  under :math:`\mu I \preceq A \preceq I` (so Theorem 1.1 of the hardmax paper applies and
  :math:`\lVert A\rVert_2 \le 1`), ``mu = min_eigenvalue``.

The optimum t* > 0 iff some A in the set meets every preference strictly (the feasible set is a
cone intersected with a bounded convex set, so scaling makes "> 0" and "> t" equivalent up to the
bound). The margin reported is recomputed from the returned A, never taken from the solver.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import torch
from scipy.optimize import linprog

from .._budget import check_time_estimate, default_max_memory, human_bytes
from .._errors import param
from .._validation import InputError
from ._constraints import Preference, margins, preference_rows

__all__ = ["MarginSolution", "solve_margin", "require_cvxpy", "check_size", "estimate", "MAX_CONSTRAINTS"]

#: Default bound on the constraints of one margin problem (see :func:`check_size`).
MAX_CONSTRAINTS = 200_000

CVXPY_HINT = 'SPD control needs cvxpy: pip install -e ".[control]" (or pip install "cvxpy>=1.4")'


@dataclass(frozen=True)
class MarginSolution:
    """A (d, d), its margin (the smallest normalised preference gap), the solver's status and time."""

    A: np.ndarray
    margin: float
    status: str
    seconds: float
    solver: str


def require_cvxpy() -> ModuleType:
    """Import cvxpy, or raise an :class:`InputError` that says how to install it."""
    try:
        import cvxpy
    except ImportError:
        raise InputError(
            f"spd=True: {CVXPY_HINT}; or pass spd=False (the command line without --spd) for the linear program"
        ) from None
    return cvxpy


def _lp(G: np.ndarray, d: int) -> tuple[np.ndarray | None, str]:
    m = len(G)
    # variables x = (vec A (d*d, row-major), t); maximise t  <=>  minimise -t
    c = np.zeros(d * d + 1)
    c[-1] = -1.0
    A_ub = np.hstack([-G, np.ones((m, 1))])  # t - <A, G_k> <= 0
    bounds = [(-1.0, 1.0)] * (d * d) + [(None, float(d))]  # |<A, G>| <= |A|_F <= d
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(m), bounds=bounds, method="highs")
    if res.status != 0:
        return None, f"linprog: {res.message}"
    return res.x[:-1].reshape(d, d), "optimal"


def _sdp(G: np.ndarray, d: int, min_eigenvalue: float) -> tuple[np.ndarray | None, str]:
    cp = require_cvxpy()
    A = cp.Variable((d, d), symmetric=True)
    t = cp.Variable()
    I = np.eye(d)
    cons = [A - min_eigenvalue * I >> 0, I - A >> 0]
    if len(G):
        cons.append(G @ cp.reshape(A, (d * d,), order="C") >= t)
    prob = cp.Problem(cp.Maximize(t), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # solver chatter; the status below says what matters
        try:
            prob.solve(solver=cp.CLARABEL)
        except cp.error.SolverError as exc:
            return None, f"cvxpy: {exc}"
    if prob.status not in ("optimal", "optimal_inaccurate") or A.value is None:
        return None, f"cvxpy: {prob.status}"
    S = (A.value + A.value.T) / 2
    w, V = np.linalg.eigh(S)
    S = (V * np.clip(w, min_eigenvalue, 1.0)) @ V.T  # exactly inside mu I <= A <= I, up to rounding
    return (S + S.T) / 2, prob.status


def solve_margin(
    prefs: list[Preference],
    d: int,
    *,
    spd: bool,
    min_eigenvalue: float = 1e-3,
    max_constraints: int = MAX_CONSTRAINTS,
) -> MarginSolution:
    """Maximise the smallest normalised margin of ``prefs`` over the admissible A (see the module);
    more than ``max_constraints`` preferences, or an estimate over the memory limit, is refused
    (:func:`check_size`).

    >>> import numpy as np
    >>> from attndyn.control._constraints import leads
    >>> Z = np.array([[1.0, 0.0], [0.0, 1.0], [0.2, 0.2]])
    >>> sol = solve_margin(leads(Z, 2), 2, spd=False)   # make the middle token lead
    >>> sol.margin > 0, sol.status
    (True, 'optimal')
    """
    check_size(len(prefs), d, spd=spd, max_constraints=max_constraints)
    G = preference_rows(prefs)
    degenerate = _constant_preference(prefs, G, d)
    if degenerate is not None:
        return degenerate
    t0 = time.perf_counter()
    if spd:
        A, status = _sdp(G, d, min_eigenvalue)
        solver = "cvxpy/CLARABEL (SDP)"
    else:
        A, status = _lp(G, d)
        solver = "scipy linprog/HiGHS (LP)"
    seconds = time.perf_counter() - t0
    if A is None:
        return MarginSolution(np.eye(d), -np.inf, status, seconds, solver)
    m = float((G @ A.reshape(-1)).min()) if len(G) else 0.0  # recomputed from A (no zero rows: checked above)
    return MarginSolution(A, m, status, seconds, solver)


def estimate(m: int, d: int, *, spd: bool) -> tuple[float, float]:
    """Rough bytes and seconds of a margin problem with m constraints on a (d, d) matrix: the dense rows and
    the solver's copies (about 6 of them), 400 bytes of bookkeeping per constraint; 2e-5 s per constraint plus
    3e-6 s per constraint entry for HiGHS (measured on one core), ten times that for the SDP."""
    entries = m * (d * d + 1)
    seconds = (2e-5 * m + 3e-6 * entries) * (10.0 if spd else 1.0)
    return 48.0 * entries + 400.0 * m, seconds


def check_size(
    m: int, d: int, *, spd: bool, max_constraints: int = MAX_CONSTRAINTS, max_memory: float | None = None
) -> None:
    """Refuse, with the estimate, a margin problem of more than ``max_constraints`` constraints or whose
    estimated memory exceeds ``max_memory`` (default: half of the machine's memory, as the engines)."""
    limit = default_max_memory(torch.device("cpu")) if max_memory is None else float(max_memory)
    nbytes, seconds = estimate(m, d, spd=spd)
    if m > max_constraints or nbytes > limit:
        name = param("max_constraints", "max_constraints")
        over = f"over {name} = {max_constraints}" if m > max_constraints else f"over {human_bytes(limit)}"
        raise InputError(
            f"the margin problem would have {m} constraints on a {d} x {d} matrix (about {human_bytes(nbytes)} and "
            f"{seconds:.3g} s for the {'SDP' if spd else 'LP'}), {over}; use fewer tokens, leaders or layers, "
            f"or raise {name}"
        )
    check_time_estimate(f"the {'SDP' if spd else 'LP'} of {m} constraints on a {d} x {d} matrix", seconds)


def _constant_preference(prefs: list[Preference], G: np.ndarray, d: int) -> MarginSolution | None:
    """A failed solution naming the first preference whose row G_k is zero (its two scores are equal for
    every A, so no margin can be positive), or None when every row is nonzero."""
    if len(prefs) and not np.abs(G).sum(axis=1).all():
        bad = next(p for p in prefs if not p.row().any())
        return MarginSolution(
            np.eye(d),
            -np.inf,
            f"token {bad.i} cannot prefer {bad.j} to {bad.l}: at the positions of layer {bad.layer} the two score "
            "the same for every A",
            0.0,
            "none",
        )
    return None


def _milp_rows(G_fixed: np.ndarray, G_alt: np.ndarray, sizes: list[int], d: int, M: float) -> list[Any]:
    r"""The linear constraints of :func:`solve_margin_milp` over the variables (vec A, t, y):
    :math:`t - \langle A, G_k\rangle \le 0` for the fixed rows, :math:`t - \langle A, G_{gc}\rangle + M y_{gc} \le M`
    for the alternatives, and :math:`\sum_c y_{gc} \ge 1` for each group (``sizes`` its lengths)."""
    from scipy.optimize import LinearConstraint

    nA, nf, na = d * d, len(G_fixed), len(G_alt)
    nv = nA + 1 + na  # (vec A, t, y)
    rows, lo, hi = [], [], []
    if nf:
        R = np.zeros((nf, nv))
        R[:, :nA], R[:, nA] = -G_fixed, 1.0
        rows.append(R)
        lo.append(np.full(nf, -np.inf))
        hi.append(np.zeros(nf))
    if na:
        R = np.zeros((na, nv))
        R[:, :nA], R[:, nA] = -G_alt, 1.0
        R[np.arange(na), nA + 1 + np.arange(na)] = M
        rows.append(R)
        lo.append(np.full(na, -np.inf))
        hi.append(np.full(na, M))
        pick = np.zeros((len(sizes), nv))
        start = 0
        for g, size in enumerate(sizes):
            pick[g, nA + 1 + start : nA + 1 + start + size] = 1.0
            start += size
        rows.append(pick)
        lo.append(np.ones(len(sizes)))
        hi.append(np.full(len(sizes), np.inf))
    return [LinearConstraint(np.vstack(rows), np.concatenate(lo), np.concatenate(hi))] if rows else []


def solve_margin_milp(
    fixed: list[Preference], groups: list[list[Preference]], d: int, *, time_limit: float = 20.0
) -> MarginSolution:
    r"""General A, with the disjunctions solved **exactly**: a mixed-integer linear program.

    Each group is an "or" of preferences; binary :math:`y_{gc}` selects alternative c of group g:

    .. math::

        \max t \;\text{s.t.}\; \langle A, G_k\rangle \ge t \;(k \in \text{fixed}),\quad
        \langle A, G_{gc}\rangle \ge t - M (1 - y_{gc}),\quad \textstyle\sum_c y_{gc} \ge 1,\quad |A_{ab}| \le 1,

    with :math:`M = 2d + 1` (every :math:`|\langle A, G\rangle| \le \lVert A\rVert_F \le d`, and
    :math:`|t| \le d`). :func:`scipy.optimize.milp` (HiGHS branch and bound), stopped after
    ``time_limit`` seconds with the best A found (the status says so). An optimum t* <= 0 proves
    that no A at all meets the constraints (the box loses nothing: they are invariant under scaling A).
    """
    from scipy.optimize import Bounds, milp

    G_fixed = preference_rows(fixed)
    alts = [p for g in groups for p in g]
    G_alt = preference_rows(alts)
    nA, na = d * d, len(alts)
    degenerate = _constant_preference(fixed, G_fixed, d)
    if degenerate is not None:
        return degenerate
    M = 2.0 * d + 1.0
    nv = nA + 1 + na  # (vec A, t, y)
    c = np.zeros(nv)
    c[nA] = -1.0
    cons = _milp_rows(G_fixed, G_alt, [len(g) for g in groups], d, M)
    bounds = Bounds(np.r_[-np.ones(nA), -float(d), np.zeros(na)], np.r_[np.ones(nA), float(d), np.ones(na)])
    integrality = np.r_[np.zeros(nA + 1), np.ones(na)]
    t0 = time.perf_counter()
    res = milp(
        c,
        constraints=cons,
        bounds=bounds,
        integrality=integrality,
        options={"time_limit": float(time_limit), "mip_rel_gap": 1e-6},
    )
    seconds = time.perf_counter() - t0
    solver = "scipy milp/HiGHS (MILP)"
    if res.x is None:
        return MarginSolution(np.eye(d), -np.inf, f"milp: {res.message}", seconds, solver)
    A = res.x[:nA].reshape(d, d)
    y = res.x[nA + 1 :] > 0.5
    chosen = [p for p, keep in zip(alts, y) if keep]
    m = float(margins(A, fixed + chosen).min()) if fixed or chosen else 0.0
    status = "optimal" if res.status == 0 else f"time limit ({time_limit:g} s), best found"
    return MarginSolution(A, m, status, seconds, solver)
