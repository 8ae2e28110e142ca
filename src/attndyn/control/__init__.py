"""Controlling the leaders: choose the matrix A so that the tokens you name lead.

- :mod:`~attndyn.control.constraints`: score preferences as linear constraints on A.
- :mod:`~attndyn.control.solve`: the margin problem, a linear program (general A, scipy) or a
  semidefinite program (SPD A, cvxpy: ``pip install -e ".[control]"``).
- :mod:`~attndyn.control.hull`: what can never lead at layer 0, with convex-weight certificates.
- :mod:`~attndyn.control.problem`: :class:`~attndyn.control.problem.ControlProblem`, the checked request
  every stage reads, and the verification run (:func:`~attndyn.control.problem.simulate`).
- :mod:`~attndyn.control.choose`: :func:`choose_A`, solve then verify with the exact engine, in rounds.
- :mod:`~attndyn.control.clusters`: :func:`choose_A_for_clusters`, a target partition of the tokens.
"""

from .choose import choose_A
from .clusters import choose_A_for_clusters
from .hull import HullCertificate, leadable, never_leads
from .result import VERDICTS, ControlResult, Round

__all__ = [
    "choose_A",
    "choose_A_for_clusters",
    "never_leads",
    "leadable",
    "HullCertificate",
    "ControlResult",
    "Round",
    "VERDICTS",
]
