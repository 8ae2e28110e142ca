"""attndyn: what self-attention does to tokens.

Hardmax (Alcalde, Fantuzzi & Zuazua 2024) and softmax (Geshkovski, Letrouit, Polyanskiy &
Rigollet 2023) self-attention dynamics as particle systems, their leaders, clusters and limit
geometry.
"""

from ._validation import HypothesisWarning, InputError
from .analysis import clusters, follow_graph, leaders
from .hardmax import hardmax, hardmax_step
from .options import SaveAt, StopOnConvergence
from .trajectory import HardmaxTrajectory, RunStats, SoftmaxTrajectory, Trajectory

__version__ = "0.1.0"

__all__ = [
    "hardmax",
    "hardmax_step",
    "leaders",
    "follow_graph",
    "clusters",
    "SaveAt",
    "StopOnConvergence",
    "Trajectory",
    "HardmaxTrajectory",
    "SoftmaxTrajectory",
    "RunStats",
    "InputError",
    "HypothesisWarning",
]
