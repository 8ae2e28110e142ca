"""Controlling the leaders: choose the matrix A so that the tokens you name lead.

Score preferences become linear constraints on A; the margin problem is a linear program (general A,
scipy) or a semidefinite program (SPD A, cvxpy: ``pip install -e ".[control]"``). :func:`choose_A` solves,
then verifies with the exact engine, in rounds; :func:`choose_A_for_clusters` aims at a target partition of
the tokens; :func:`never_leads` tells what can never lead at layer 0, with convex-weight certificates
(:class:`HullCertificate`). Every answer is a :class:`ControlResult`, one :class:`Round` per attempt.
"""

from ._choose import choose_A
from ._clusters import choose_A_for_clusters
from ._hull import HullCertificate, leadable, never_leads
from ._result import VERDICTS, ControlResult, Round

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
