"""Figures of word explanations: a review's words coloured by their exact contribution to the
decision (beside Figure 9 for d = 2 models), and the deletion curves of a faithfulness study.

They read results: :meth:`attndyn.sentiment._attribution.Attribution.to_dict`,
:func:`attndyn.sentiment.figure9_data` and :func:`attndyn.sentiment._faithfulness.faithfulness`'s
dict; nothing here runs the model. Every ``draw_*`` returns a :class:`matplotlib.figure.Figure`;
save it with :func:`attndyn.plotting._sentiment.write`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import InputError
from ._style import color, new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["draw_attribution", "draw_explanation", "draw_deletion_curves", "word_colors"]

MAX_WORDS = 256
FONT = 8  # points; a monospace character is about 0.6 em wide, a box adds a little


def _chars(width_in: float) -> int:
    """Monospace characters of FONT points that fit on a line of a figure ``width_in`` inches wide."""
    return max(20, int(width_in * 72 * 0.92 / (0.6 * FONT * 1.08)))


def word_colors(contributions: Any) -> np.ndarray:
    """RGBA (n, 4) of each contribution on a diverging map (RdYlGn): red negative, green positive,
    pale yellow 0, scaled by the largest |contribution| of the review (so the colours compare words of
    one review).

    >>> word_colors([1.0, 0.0, -0.5]).round(2)[:, :3].tolist()[1]
    [1.0, 1.0, 0.75]
    """
    from matplotlib import colormaps

    a = np.asarray(contributions, dtype=np.float64)
    top = float(np.abs(a).max()) if a.size else 0.0
    x = 0.5 + 0.5 * (a / top if top > 0 else a)
    return colormaps["RdYlGn"](0.1 + 0.8 * x) if a.size else np.zeros((0, 4))


def _lines(words: list[str], width: int) -> list[list[int]]:
    """Word indices wrapped into lines of at most ``width`` characters (a longer word gets its own line)."""
    lines: list[list[int]] = [[]]
    used = 0
    for i, w in enumerate(words):
        if lines[-1] and used + 1 + len(w) > width:
            lines.append([])
            used = 0
        used += len(w) + (1 if lines[-1] else 0)
        lines[-1].append(i)
    return lines


def _words_panel(ax: Axes, words: list[str], a: np.ndarray, width: int) -> None:
    """The words in reading order, each on a box coloured by its contribution (monospace grid)."""
    colors = word_colors(a)
    lines = _lines(words, width)
    ax.set_xlim(0, width)
    ax.set_ylim(len(lines) + 0.5, 0.3)
    ax.axis("off")
    for row, idx in enumerate(lines, start=1):
        x = 0.0
        for i in idx:
            box = {"boxstyle": "round,pad=0.15", "facecolor": colors[i], "edgecolor": "none"}
            ax.text(x, row, words[i], family="monospace", fontsize=FONT, va="center", ha="left", bbox=box)
            x += len(words[i]) + 1


def _colorbar(fig: Figure, ax: Axes, top: float) -> None:
    from matplotlib import colormaps
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import LinearSegmentedColormap, Normalize

    cmap = LinearSegmentedColormap.from_list("words", colormaps["RdYlGn"](np.linspace(0.1, 0.9, 256)))
    sm = ScalarMappable(norm=Normalize(-top, top), cmap=cmap)
    bar = fig.colorbar(sm, ax=ax, orientation="horizontal", fraction=0.05, pad=0.02, aspect=40)
    bar.set_label("contribution to H (exact: the contributions and the bias add up to H)", fontsize=7)
    bar.ax.tick_params(labelsize=7)


def _check(att: dict) -> tuple[list[str], np.ndarray]:
    words, a = list(att.get("words", [])), np.asarray(att.get("contributions", []), dtype=np.float64)
    if len(words) != len(a):
        raise InputError(
            f"the attribution has {len(words)} words but {len(a)} contributions; pass Attribution.to_dict()"
        )
    if not words or not att.get("known_words", len(words)):
        raise InputError("the review has no word the model knows: there is nothing to colour")
    return words[:MAX_WORDS], a[:MAX_WORDS]


def _title(att: dict) -> str:
    side = "positive" if att["decision_value"] > 0 else "negative"
    return (
        f"{side}: H = {att['decision_value']:+.3f} = bias {att['bias']:+.3f} + the words' contributions "
        f"{sum(att['contributions']):+.3f}"
    )


def draw_attribution(att: dict) -> Figure:
    """The review's words (its first 256) coloured by exact contribution (green toward positive, red
    toward negative), in reading order, with the colour scale and the sum H = b + sum of the contributions."""
    words, a = _check(att)
    lines = len(_lines(words, _chars(7.5)))
    fig = new_figure(7.5, 1.1 + 0.24 * lines)
    ax = fig.add_subplot()
    _words_panel(ax, words, a, _chars(7.5))
    _colorbar(fig, ax, float(np.abs(a).max()) or 1.0)
    ax.set_title(_title(att), fontsize=9)
    return fig


def draw_explanation(att: dict, figure9: dict) -> Figure:
    """Figure 9's panels (:func:`attndyn.plotting._sentiment.draw_figure9`) with the coloured words below them."""
    from matplotlib.image import imread

    from ._save import png_bytes
    from ._sentiment import draw_figure9

    words, a = _check(att)
    panels = imread(_buffer(png_bytes(draw_figure9(figure9))))
    h, w = panels.shape[:2]
    width = 3.6 * max(1, round(w / h * 4.1 / 3.6))
    lines = len(_lines(words, _chars(width)))
    fig = new_figure(width, width * h / w + 1.1 + 0.24 * lines)
    subs = fig.subfigures(2, 1, squeeze=False, height_ratios=[width * h / w, 1.1 + 0.24 * lines])
    top, bottom = subs[0, 0], subs[1, 0]
    ax0 = top.add_subplot()
    ax0.imshow(panels)
    ax0.axis("off")
    ax = bottom.add_subplot()
    _words_panel(ax, words, a, _chars(width))
    _colorbar(bottom, ax, float(np.abs(a).max()) or 1.0)
    ax.set_title(_title(att), fontsize=9)
    return fig


def _buffer(data: bytes) -> Any:
    import io

    return io.BytesIO(data)


def draw_deletion_curves(result: dict) -> Figure:
    """A faithfulness study: p(predicted class) as the top-ranked words are removed, per method
    (left), and the comprehensiveness and sufficiency AOPC with their bootstrap intervals (right)."""
    methods = result.get("methods") or {}
    if not methods:
        raise InputError("the faithfulness result holds no method; pass the dict faithfulness() returned")
    fr = 100 * np.asarray(result["settings"]["curve_fractions"])
    fig = new_figure(10.5, 4.0)
    ax, bx = fig.subplots(1, 2, width_ratios=[1.2, 1])
    for k, (m, r) in enumerate(methods.items()):
        ax.plot(
            fr,
            r["deletion_curve"],
            marker="o",
            ms=3,
            color=color(k),
            label=m,
            lw=2.4 if m == "exact" else 1.2,
            zorder=3 if m == "exact" else 2,
        )
    ax.set_xlabel("words removed (top-ranked first, % of the review)")
    ax.set_ylabel("mean p(predicted class)")
    ax.set_title(f"deletion curves, {result['reviews']['n']} reviews", fontsize=9)
    ax.legend(fontsize=7)
    y = np.arange(len(methods))
    for off, key, col in ((-0.18, "comprehensiveness", "#1f77b4"), (0.18, "sufficiency", "#ff7f0e")):
        mean = np.array([r[key]["mean"] for r in methods.values()])
        ci = np.array([r[key]["ci"] for r in methods.values()])
        bx.barh(y + off, mean, height=0.34, color=col, label=key)
        bx.errorbar(mean, y + off, xerr=np.abs(ci.T - mean), fmt="none", ecolor="k", lw=0.8, capsize=2)
    bx.set_yticks(y, list(methods))
    bx.invert_yaxis()
    bx.axvline(0, color="k", lw=0.6)
    bx.set_xlabel("AOPC: comprehensiveness (higher better), sufficiency (lower better)", fontsize=8)
    bx.legend(fontsize=7)
    bx.tick_params(labelsize=8)
    return fig
