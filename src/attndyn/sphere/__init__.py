r"""Tokens on the sphere: the normalized self-attention dynamics of arXiv 2312.10794 (Geshkovski, Letrouit,
Polyanskiy & Rigollet, *A mathematical perspective on Transformers*).

:func:`evolve` runs SA or USA with any scheme of :mod:`attndyn.solvers`, or the discrete layers with post-LN,
pre-LN, peri-LN or nGPT normalisation; the reports read a finished :class:`SphereTrajectory`.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

if TYPE_CHECKING:
    from ._engine import METHODS, evolve
    from ._ensembles import KQ_ENSEMBLES, V_ENSEMBLES, random_parameters
    from ._field import ATTENTIONS, SphereAttention, causal_mask
    from ._layers import NORMS
    from ._metastability import MetastabilityReport, metastability
    from ._phase import AUTHORS_DEFAULTS, PhaseDiagram, load_phase_diagram, phase_diagram
    from ._reports import (
        ClusterReport,
        EnergyReport,
        OrthogonalStartReport,
        cluster_report,
        energy_report,
        orthogonal_start_report,
    )
    from ._theory import (
        cluster_rank,
        clustered_fraction,
        energy,
        gamma_crossing,
        gamma_curve,
        kuramoto,
        plateaus,
        sphere_clusters,
    )
    from ._trajectory import SphereParams, SphereTrajectory

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "evolve",
    "METHODS",
    "ATTENTIONS",
    "NORMS",
    "SphereAttention",
    "SphereParams",
    "SphereTrajectory",
    "causal_mask",
    "energy",
    "kuramoto",
    "clustered_fraction",
    "cluster_rank",
    "sphere_clusters",
    "plateaus",
    "gamma_curve",
    "gamma_crossing",
    "EnergyReport",
    "energy_report",
    "OrthogonalStartReport",
    "orthogonal_start_report",
    "ClusterReport",
    "cluster_report",
    "phase_diagram",
    "PhaseDiagram",
    "load_phase_diagram",
    "AUTHORS_DEFAULTS",
    "random_parameters",
    "metastability",
    "MetastabilityReport",
    "KQ_ENSEMBLES",
    "V_ENSEMBLES",
]
