"""The experiment layer every study builds on: seeded samplers, interval estimates (:func:`wilson_interval`)
and one registry of experiments (:data:`EXPERIMENTS`, :func:`experiment`), each a pure function of its
declared parameters and a seed. ``attndyn reproduce`` and ``attndyn sweep`` both run them.
"""

from . import _cells, _sphere_cells  # noqa: F401  (register the cell functions)
from ._registry import EXPERIMENTS, CellFailed, Experiment, Param, experiment, get_experiment, registered
from ._samplers import (
    ENSEMBLES,
    TABLE1_REGIMES,
    ginibre_leading_count,
    random_matrix,
    random_orthogonal,
    random_spd,
    table1_instance,
    theorem_1_1_instance,
    token_cloud,
)
from ._statistics import wilson_interval

__all__ = [
    "EXPERIMENTS",
    "CellFailed",
    "Experiment",
    "Param",
    "experiment",
    "get_experiment",
    "registered",
    "ENSEMBLES",
    "TABLE1_REGIMES",
    "ginibre_leading_count",
    "random_matrix",
    "random_orthogonal",
    "random_spd",
    "table1_instance",
    "theorem_1_1_instance",
    "token_cloud",
    "wilson_interval",
]
