r"""A control problem, checked: the tokens, the target leaders and the settings every stage shares.

:func:`~attndyn.control.choose_A` and :func:`~attndyn.control.choose_A_for_clusters` check their
arguments (:func:`check_request`) and build one frozen :class:`ControlProblem`; the stages
(:mod:`~attndyn.control._choose`, :mod:`~attndyn.control._assign`) read every setting from it. Its
tokens are at unit scale (:mod:`~attndyn.control._scale`). :func:`simulate` is the verification run:
the exact engine, hardmax paper eq. (1.1), every layer kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._budget import check_matrix_memory
from .._errors import param
from .._hardmax import check_dynamic_range, hardmax
from .._options import SaveAt
from .._trajectory import HardmaxTrajectory
from .._validation import InputError, as_tokens, check_int, check_positive
from ..analysis import LeaderSet, RoundingEvent
from ._constraints import Preference
from ._solve import MarginSolution, check_size, require_cvxpy, solve_margin

__all__ = ["ControlProblem", "check_request", "near_leads", "simulate", "token_indices", "undecided_reason"]


# (d, d) matrices a control problem holds at once: the solver's rows and copies, the runs' A: what
# :func:`attndyn._budget.check_matrix_memory` counts.
CONTROL_MATRIX_COPIES = 16

#: The smallest eigenvalue :math:`\mu` an SPD A may have when the caller names none (:math:`\mu I \preceq A \preceq I`).
MIN_EIGENVALUE = 1e-3


def check_request(
    tokens: Any, alpha: Any, layers: Any, rounds: Any, min_eigenvalue: Any, spd: bool
) -> tuple[np.ndarray, float, int, int, float]:
    """Validate the common arguments; returns the (n, d) float64 tokens and the checked numbers."""
    z, batched = as_tokens(tokens)
    if batched and z.shape[0] != 1:
        raise InputError(
            f"tokens must be one sequence (n, d); got a batch of {z.shape[0]}: control one sequence at a time"
        )
    check_dynamic_range(z)  # what the verification runs would refuse, refused before any solve
    # The LP or SDP has A's d^2 entries as variables, one dense row of them per constraint (several per token),
    # and each verification run holds A's copies: refused before any is built.
    check_matrix_memory(
        z.shape[-1], CONTROL_MATRIX_COPIES, torch.float64, torch.device("cpu"), None, "the margin problem"
    )
    Z = z[0].numpy()
    if len(Z) < 2:
        raise InputError(f"tokens has {len(Z)} token; control needs at least 2")
    alpha = check_positive(alpha, param("alpha", "alpha"))
    layers = check_int(layers, param("layers", "layers"), minimum=1)
    rounds = check_int(rounds, param("rounds", "rounds"), minimum=1)
    if not isinstance(spd, (bool, np.bool_)):
        raise InputError(f"spd must be True (an SPD A, by an SDP) or False (any A, by an LP), got {spd!r}")
    if min_eigenvalue is not None and not spd:
        raise InputError(
            f"min_eigenvalue={min_eigenvalue!r} bounds an SPD A only, and spd=False searches any A with entries in "
            "[-1, 1]: drop min_eigenvalue, or pass spd=True"
        )
    mu = check_positive(MIN_EIGENVALUE if min_eigenvalue is None else min_eigenvalue, "min_eigenvalue")
    if mu >= 1:
        raise InputError(f"min_eigenvalue must be below 1 (A is bounded by the identity), got {mu}")
    if spd:
        require_cvxpy()
    return Z, alpha, layers, rounds, mu


def token_indices(values: Any, name: str) -> list[int]:
    """A sequence of token indices, each an integer (a float only when whole): a string, a mapping, a bool or a
    fractional index is refused (``"12"`` would read as tokens 1 and 2, ``2.7`` as 2)."""
    if isinstance(values, (str, bytes, dict, bool, np.bool_)):
        raise InputError(f"{name} must be a list of token indices (integers), got {values!r}")
    try:
        items = list(values)
    except TypeError:
        raise InputError(f"{name} must be a list of token indices (integers), got {values!r}") from None
    out = []
    for v in items:
        ok = isinstance(v, (int, np.integer)) or (isinstance(v, (float, np.floating)) and float(v).is_integer())
        if isinstance(v, (bool, np.bool_)) or not ok:
            raise InputError(f"{name} must be token indices (integers), got {v!r} in {values!r}")
        out.append(int(v))
    return out


def simulate(
    Z: np.ndarray, A: np.ndarray | None, alpha: float, layers: int, *, follow: bool = False
) -> HardmaxTrajectory:
    """The exact engine, every layer kept (the verification run; A = None is the identity)."""
    return hardmax(Z, alpha=alpha, layers=layers, A=A, save=SaveAt(every=1, follow=follow), check_hypotheses=False)


def near_leads(found: LeaderSet, S: tuple[int, ...]) -> list[RoundingEvent]:
    """The first rounding event of each token outside ``S`` that the run does not report as a leader: a layer at
    which it followed only itself by a margin within the rounding bound (:attr:`attndyn.analysis.LeaderSet.rounding`).

    The float run cannot say whether such a token leads in exact arithmetic (the hardmax paper's dynamics under
    the same A and tokens), so a run with one does not verify that only ``S`` lead.
    """
    first: dict[int, RoundingEvent] = {}
    for ev in found.rounding:
        if ev.index not in S and ev.index not in found.indices:
            first.setdefault(ev.index, ev)
    return sorted(first.values(), key=lambda ev: (ev.layer, ev.index))


def undecided_reason(S: tuple[int, ...], near: list[RoundingEvent], layers: int) -> str:
    """Why a run in which exactly ``S`` lead does not verify the target: the tokens ``near`` came within rounding
    of leading, and the float run cannot tell whether they lead in exact arithmetic."""
    ev = near[0]
    others = f" (and tokens {[e.index for e in near[1:]]})" if len(near) > 1 else ""
    return (
        f"exactly tokens {list(S)} lead in the engine's run of {layers} layers, but token {ev.index}{others} "
        f"followed only itself at layer {ev.layer} by a margin of {ev.margin:.2g}, within the rounding bound "
        f"{ev.bound:.2g}: the float run cannot tell whether it leads under this A, and the rounds found no A "
        "without such a tie"
    )


@dataclass(frozen=True, eq=False)
class ControlProblem:
    r"""One checked control request, shared by the stages.

    Attributes:
        tokens: (n, d) float64 tokens at unit scale (:func:`~attndyn.control._scale.unit_scale`).
        leaders: the token indices that should lead, sorted (for cluster targets: the targets' fixed points).
        spd: look for a symmetric positive definite A with :math:`\mu I \preceq A \preceq I` (an SDP);
            False: any A with :math:`|A_{ab}| \le 1` (an LP).
        min_eigenvalue: :math:`\mu`.
        alpha, layers: step and depth of the verification run (hardmax paper eq. (1.1)).
        rounds: at most this many solve-and-simulate rounds per stage.
        margin: the normalised margin a solution must exceed to be accepted (the ``margin=`` argument).
        max_constraints: the largest margin problem built (:func:`~attndyn.control._solve.check_size`).
    """

    tokens: np.ndarray
    leaders: tuple[int, ...]
    spd: bool
    min_eigenvalue: float
    alpha: float
    layers: int
    rounds: int
    margin: float
    max_constraints: int

    @property
    def d(self) -> int:
        """The tokens' dimension (A is d x d)."""
        return int(self.tokens.shape[1])

    @property
    def solver(self) -> str:
        """The solver's name, as the result reports it."""
        return "cvxpy/CLARABEL (SDP)" if self.spd else "scipy linprog/HiGHS (LP)"

    def bound_words(self) -> str:
        """The class of A searched, as a "no such A" reason names it: for SPD A the eigenvalue floor also bounds the
        condition number, so a "no" is relative to it (a smaller ``min_eigenvalue`` searches more); for general A
        the box loses nothing (the constraints are invariant under scaling A)."""
        if self.spd:
            mu = self.min_eigenvalue
            return (
                f"SPD A with eigenvalues in [{mu:g}, 1] (condition number at most {1 / mu:.3g}; "
                "a smaller min_eigenvalue searches more)"
            )
        return "A with entries in [-1, 1] (no loss: the constraints are invariant under scaling A)"

    def solve(self, prefs: list[Preference]) -> MarginSolution:
        """:func:`~attndyn.control._solve.solve_margin` of ``prefs`` under this problem's bounds on A."""
        return solve_margin(
            prefs, self.d, spd=self.spd, min_eigenvalue=self.min_eigenvalue, max_constraints=self.max_constraints
        )

    def check_size(self, m: int) -> None:
        """Refuse a margin problem of ``m`` constraints that is too large (see :func:`~attndyn.control._solve.check_size`)."""
        check_size(m, self.d, spd=self.spd, max_constraints=self.max_constraints)

    def simulate(self, A: np.ndarray | None, *, follow: bool = False) -> HardmaxTrajectory:
        """:func:`simulate` of this problem's tokens under A, over its ``layers``."""
        return simulate(self.tokens, A, self.alpha, self.layers, follow=follow)
