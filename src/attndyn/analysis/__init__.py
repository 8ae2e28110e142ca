"""Analysis of finished trajectories: leaders, clusters, polytopes, theorem checks."""

from .clusters import Cluster, clusters
from .leaders import LeaderSet, follow_graph, leaders

__all__ = ["Cluster", "clusters", "LeaderSet", "leaders", "follow_graph"]
