"""Pictures of finished runs. Plot functions take result objects and never run the dynamics.

Every function returns a :class:`matplotlib.figure.Figure` drawn on an Agg canvas (no pyplot
state, no global backend change); :func:`save_figure` writes PNG, SVG and PDF atomically.

- :mod:`~attndyn.plotting.trajectories`: token paths, leaders as stars, colours by followed
  token, hull of the leaders (hardmax Fig. 2; softmax Figs. 1, 5, 6, 8).
- :mod:`~attndyn.plotting.geometry`: one hardmax step, direction A z_i and half-space H_i (hardmax Fig. 1).
- :mod:`~attndyn.plotting.attention`: attention matrices over time (softmax Fig. 3), query/key clouds (Fig. 4).
- :func:`~attndyn.plotting.coordinates`: coordinates converging or diverging (softmax Fig. 7).
- :mod:`~attndyn.plotting.control`: trajectories under A = I and under a chosen A; counterfactual predictions.
- :mod:`~attndyn.plotting.animation`: GIF / MP4 of a run, and frames for the report's slider.
- :mod:`~attndyn.plotting.sentiment`: the sentiment model's figures (hardmax paper Figs. 8-10), from
  data that :func:`attndyn.sentiment.figure9_data` computes.
- :mod:`~attndyn.plotting.pretrained`: leaders and clusters of a pretrained model across its layers.
"""

from ._coordinates import coordinates
from ._style import color, new_figure, square_limits
from .animation import animate, ffmpeg_available, render_frames
from .attention import attention_matrices, query_key_clouds
from .control import control_comparison, counterfactual_bars
from .geometry import draw_step_geometry, step_geometry
from .save import FORMATS, png_bytes, save_figure
from .trajectories import draw_state, follow_matrix, hardmax_grid, hardmax_panels, plot_trajectory

__all__ = [
    "new_figure",  # the house style, for figures other packages compose (reproduce's)
    "color",
    "square_limits",
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
    "png_bytes",
    "FORMATS",
]
