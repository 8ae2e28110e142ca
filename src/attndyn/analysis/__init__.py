"""Analysis of finished trajectories: leaders, clusters, polytopes, theorem checks."""

from typing import TYPE_CHECKING

from .._lazy import attach

# Imported on first use (attndyn._lazy): a command imports only the modules it uses.
if TYPE_CHECKING:
    from ._clusters import Cluster, cluster_tolerance, clusters
    from ._collapse import RadiusDecay, collapse_decay, radius_decay
    from ._geometry import regime_of
    from ._leaders import LeaderSet, RoundingEvent, follow_graph, follow_matrix, leaders, self_attending
    from ._polytope import Polytope
    from ._spectral import is_good_triple, is_good_triple_with_multiplicity, is_paranormal, leading_direction
    from ._theorems import (
        GeometryReport,
        HardmaxTheoremReport,
        attention_rank,
        boolean_distance,
        hardmax_theorem,
        softmax_geometry,
    )

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "Cluster",
    "clusters",
    "cluster_tolerance",
    "LeaderSet",
    "RoundingEvent",
    "leaders",
    "follow_graph",
    "follow_matrix",
    "self_attending",
    "Polytope",
    "is_good_triple",
    "is_good_triple_with_multiplicity",
    "is_paranormal",
    "leading_direction",
    "GeometryReport",
    "HardmaxTheoremReport",
    "attention_rank",
    "boolean_distance",
    "hardmax_theorem",
    "softmax_geometry",
    "regime_of",
    "RadiusDecay",
    "radius_decay",
    "collapse_decay",
]
