"""The experiment layer every study builds on: seeded samplers (:mod:`.samplers`), interval estimates
(:mod:`.statistics`) and one registry of experiments (:mod:`.registry`), each a pure function of its
declared parameters and a seed (:mod:`.cells`). ``attndyn reproduce`` and ``attndyn sweep`` both run them.
"""

from . import cells, sphere_cells  # noqa: F401  (register the cell functions)
from .registry import EXPERIMENTS, CellFailed, Experiment, Param, experiment, get_experiment, registered
from .samplers import (
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
from .statistics import wilson_interval

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
