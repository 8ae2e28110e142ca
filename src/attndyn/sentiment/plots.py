"""The sentiment figures' former home, kept so that ``attndyn.sentiment.plots`` still works: the
figures are drawn by :mod:`attndyn.plotting.sentiment` (which reads results only) and the data of
Figure 9, which runs the dynamics, is made by :func:`attndyn.sentiment.figure9_data`.
Each function here draws and writes one file, as before."""

from __future__ import annotations

import os
from pathlib import Path

from ..plotting import sentiment as _draw
from ..plotting.sentiment import NEG, POS, figure9_gif
from ._explain import figure9_data

__all__ = ["figure8", "accuracy_curves", "figure10", "figure9_data", "figure9", "figure9_gif", "POS", "NEG"]


def figure8(data: dict, path: str | os.PathLike) -> Path:
    """Figure 8 (:func:`attndyn.plotting.sentiment.draw_figure8`) written to ``path``."""
    return _draw.write(_draw.draw_figure8(data), path)


def accuracy_curves(data: dict, path: str | os.PathLike) -> Path:
    """The accuracy curves (:func:`attndyn.plotting.sentiment.draw_accuracy_curves`) written to ``path``."""
    return _draw.write(_draw.draw_accuracy_curves(data), path)


def figure10(rows: list[dict], path: str | os.PathLike) -> Path:
    """Figure 10 (:func:`attndyn.plotting.sentiment.draw_figure10`) written to ``path``."""
    return _draw.write(_draw.draw_figure10(rows), path)


def figure9(data: dict, path: str | os.PathLike, *, layers: list[int] | None = None) -> Path:
    """Figure 9 (:func:`attndyn.plotting.sentiment.draw_figure9`) written to ``path``."""
    return _draw.write(_draw.draw_figure9(data, layers=layers), path)
