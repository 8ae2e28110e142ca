"""attndyn: what self-attention does to tokens.

Hardmax (Alcalde, Fantuzzi & Zuazua 2024) and softmax (Geshkovski, Letrouit, Polyanskiy &
Rigollet 2023) self-attention dynamics as particle systems, their leaders, clusters and limit
geometry.
"""

from typing import TYPE_CHECKING

from ._errors import HypothesisWarning, InputError
from ._lazy import attach

# The public names, imported on first use (attndyn._lazy): `import attndyn` stays cheap (no torch, no scipy),
# so the command line starts at once and a command imports only what it uses.
if TYPE_CHECKING:
    from . import analysis
    from ._dynamics import SoftmaxAttention
    from ._hardmax import HardmaxAttention, hardmax, hardmax_step
    from ._options import SaveAt, StopOnConvergence
    from ._softmax import softmax
    from ._trajectory import HardmaxTrajectory, RunStats, SoftmaxTrajectory, Trajectory
    from ._version import __version__ as __version__  # read from the installed metadata
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
    from .sentiment import HardmaxSentimentClassifier  # pulls in scikit-learn

__getattr__, __dir__ = attach(__name__, __file__)

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
