"""Pictures of finished runs. Plot functions take result objects and never run the dynamics.

Every function returns a :class:`matplotlib.figure.Figure` drawn on an Agg canvas (no pyplot
state, no global backend change); :func:`save_figure` writes PNG, SVG and PDF atomically.

- token paths, leaders as stars, colours by followed token, hull of the leaders (hardmax Fig. 2; softmax
  Figs. 1, 5, 6, 8): :func:`plot_trajectory`, :func:`hardmax_panels`, :func:`hardmax_grid`;
- one hardmax step, direction A z_i and half-space H_i (hardmax Fig. 1): :func:`step_geometry`;
- attention matrices over time (softmax Fig. 3), query/key clouds (Fig. 4): :func:`attention_matrices`,
  :func:`query_key_clouds`; coordinates converging or diverging (softmax Fig. 7): :func:`coordinates`;
- trajectories under A = I and under a chosen A, counterfactual predictions: :func:`control_comparison`,
  :func:`counterfactual_bars`;
- GIF / MP4 of a run, or its frames as PNG: :func:`animate`, :func:`render_frames`;
- the sentiment model's figures (hardmax paper Figs. 8-10), from data that :func:`attndyn.sentiment.figure9_data`
  computes, and word attributions: :func:`draw_figure8`, :func:`draw_figure9`, :func:`draw_figure10`,
  :func:`draw_attribution`, :func:`draw_deletion_curves`;
- a pretrained model across its layers: :func:`leader_counts`, :func:`clusters_depth`, :func:`layer_eigenvalues`;
- tokens on the sphere and phase diagrams: :func:`sphere_tokens_figure`, :func:`phase_diagram_figure`;
- a sweep's fractions with their intervals: :func:`sweep_figure`.
"""

from ._animation import animate, ffmpeg_available, render_frames
from ._attention import attention_matrices, query_key_clouds
from ._attribution import draw_attribution, draw_deletion_curves, draw_explanation
from ._control import control_comparison, counterfactual_bars
from ._coordinates import coordinates
from ._geometry import draw_step_geometry, step_geometry
from ._pretrained import attention_layers, clusters_depth, head_eigenvalues, layer_eigenvalues, leader_counts
from ._save import save_figure
from ._sentiment import draw_accuracy_curves, draw_figure8, draw_figure9, draw_figure10
from ._sphere import phase_diagram_figure, sphere_frames, sphere_tokens_figure
from ._sweep import sweep_figure
from ._trajectories import draw_state, follow_matrix, hardmax_grid, hardmax_panels, plot_trajectory

__all__ = [
    "plot_trajectory",
    "draw_state",
    "follow_matrix",
    "hardmax_panels",
    "hardmax_grid",
    "step_geometry",
    "draw_step_geometry",
    "attention_matrices",
    "query_key_clouds",
    "coordinates",
    "control_comparison",
    "counterfactual_bars",
    "animate",
    "render_frames",
    "ffmpeg_available",
    "save_figure",
    "draw_figure8",
    "draw_figure9",
    "draw_figure10",
    "draw_accuracy_curves",
    "draw_attribution",
    "draw_explanation",
    "draw_deletion_curves",
    "attention_layers",
    "leader_counts",
    "clusters_depth",
    "layer_eigenvalues",
    "head_eigenvalues",
    "sphere_tokens_figure",
    "sphere_frames",
    "phase_diagram_figure",
    "sweep_figure",
]
