"""attndyn: what self-attention does to tokens.

Hardmax (Alcalde, Fantuzzi & Zuazua 2024) and softmax (Geshkovski, Letrouit, Polyanskiy &
Rigollet 2023) self-attention dynamics as particle systems, their leaders, clusters and limit
geometry.
"""

from typing import Any

from . import analysis
from ._hardmax import HardmaxAttention, hardmax, hardmax_step
from ._softmax import softmax
from ._validation import HypothesisWarning, InputError
from ._version import __version__ as __version__
from .analysis import (
    Polytope,
    clusters,
    follow_graph,
    hardmax_theorem,
    is_good_triple,
    is_paranormal,
    leaders,
    softmax_geometry,
)
from .dynamics import SoftmaxAttention
from .options import SaveAt, StopOnConvergence
from .trajectory import HardmaxTrajectory, RunStats, SoftmaxTrajectory, Trajectory


def __getattr__(name: str) -> Any:
    # The sentiment estimator pulls in scikit-learn; load it only when asked for.
    if name == "HardmaxSentimentClassifier":
        from .sentiment import HardmaxSentimentClassifier

        return HardmaxSentimentClassifier
    raise AttributeError(f"module 'attndyn' has no attribute {name!r}")


__all__ = [
    "hardmax",
    "hardmax_step",
    "softmax",
    "HardmaxAttention",
    "SoftmaxAttention",
    "leaders",
    "follow_graph",
    "clusters",
    "Polytope",
    "hardmax_theorem",
    "softmax_geometry",
    "is_good_triple",
    "is_paranormal",
    "analysis",
    "HardmaxSentimentClassifier",
    "SaveAt",
    "StopOnConvergence",
    "Trajectory",
    "HardmaxTrajectory",
    "SoftmaxTrajectory",
    "RunStats",
    "InputError",
    "HypothesisWarning",
]
