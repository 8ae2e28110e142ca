"""Figures of the sentiment model (hardmax paper, Figs. 8-10). They read results: the dicts of
:func:`attndyn.sentiment._evaluate.evaluate_model` and :func:`attndyn.sentiment.figure9_data`;
nothing here trains or runs the dynamics.

Every ``draw_*`` function returns a :class:`matplotlib.figure.Figure` (no pyplot state);
:func:`write` saves one to a path (atomically, through :func:`attndyn.plotting.save_figure` for
PNG, SVG and PDF) and :func:`figure9_gif` animates Figure 9 with :func:`attndyn.plotting.animate`.

Figure 9's word labels are placed by the ``adjustText`` library, then checked: a label whose box
still overlaps an earlier (more important) one or leaves the panel is not drawn, so no two labels
overlap and none runs off its panel. One label per group of words at one place, its leader
first ("waste, acting, plot …"); the legend sits below the panels, over no data.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .._io import atomic_write
from .._validation import InputError
from ..analysis import clusters as find_clusters
from ._animation import animate
from ._save import FORMATS, png_bytes, save_figure
from ._style import DPI, new_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Text

__all__ = [
    "draw_figure8",
    "draw_accuracy_curves",
    "draw_figure10",
    "draw_figure9",
    "figure9_labels",
    "figure9_gif",
    "write",
    "POS",
    "NEG",
]

POS, NEG = "#2e7d32", "#c62828"
REGISTER = "#8e24aa"  # a register model's registers (Figure 9 and the explorer)
MAX_LABELS = 14


def write(fig: Figure, path: str | os.PathLike) -> Path:
    """Save ``fig`` to ``path`` in the format its suffix names, atomically: PNG, SVG and PDF
    through :func:`~attndyn.plotting._save.save_figure`, any other format matplotlib writes
    (``.jpg``, ``.eps``, ...) directly."""
    p = Path(path)
    fmt = p.suffix.lstrip(".")
    if not fmt:
        raise InputError(f"figure path {str(p)!r} has no suffix; end it with one of .png, .svg, .pdf")
    if fmt in FORMATS:
        return save_figure(fig, p.with_suffix(""), formats=(fmt,))[0]
    atomic_write(p, lambda tmp: fig.savefig(tmp, format=fmt.lower(), dpi=DPI))
    return p


# ---- Figure 8 and the accuracy curves: per-epoch metrics ------------------------------------
def _epoch_curves(data: dict, metric: str, ylabel: str, title: str | None = None) -> Figure:
    """Per-epoch train/validation curves of ``metric`` ("loss" or "acc"), softmax vs hardmax."""
    fig = new_figure(6, 4)
    ax = fig.add_subplot()
    e = data["epoch"]
    for part, name in (("train", "train"), ("val", "validation")):
        for kind, style in (("softmax", "-"), ("hardmax", "--")):
            key = f"{part}_{kind}_{metric}"
            if any(x is not None for x in data.get(key, [])):
                ax.plot(e, data[key], style, marker="o", ms=3, label=f"{name}, {kind}")
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def draw_figure8(data: dict) -> Figure:
    """Figure 8: training (subset) and validation loss per epoch, softmax vs hardmax, same weights."""
    return _epoch_curves(
        data, "loss", "binary cross-entropy", "Loss: softmax training model vs hardmax inference (same weights)"
    )


def draw_accuracy_curves(data: dict) -> Figure:
    """Accuracy per epoch, softmax vs hardmax, train subset and validation."""
    return _epoch_curves(data, "acc", "accuracy")


# ---- Figure 10: leader words ---------------------------------------------------------------
def draw_figure10(rows: list[dict]) -> Figure:
    """Figure 10: the most frequent far-from-the-line leader words of confident correct reviews."""
    fig = new_figure(6, 0.35 * max(len(rows), 3) + 1)
    ax = fig.add_subplot()
    words = [r["word"] for r in rows][::-1]
    counts = [r["count"] for r in rows][::-1]
    colors = [POS if r["positive_side"] * 2 >= r["count"] else NEG for r in rows][::-1]
    ax.barh(words, counts, color=colors)
    ax.set_xlabel("times a leader with |H(z)| >= 2 (confident, correct reviews)")
    ax.set_title("Leader words (green: positive side, red: negative side)", fontsize=10)
    return fig


# ---- Figure 9: one review's words through the layers ----------------------------------------
def figure9_labels(
    points: np.ndarray, words: list[str], leaders: np.ndarray, registers: int = 0
) -> list[tuple[int, str]]:
    """One label per group of words at one place: ``(token, text)``. Groups are the single-linkage
    clusters (:func:`attndyn.clusters`) at 4% of the points' span, so a leader and the words
    nearly on it share one label. The text names the group's leader words first, then the others
    by count ("waste, acting×2, plot …", at most three names) and the label is anchored at the
    leader; groups with a leader come first, then larger groups. The last ``registers`` points (a register
    model's, named ``<register k: value>`` as :func:`attndyn.sentiment.explain` names them) are labelled only
    with the words that joined them, the register last and short: "boring, mess → r14 (-22.98)"; a register
    alone gets no label.

    >>> figure9_labels(np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 1.0]]), ["plot", "waste", "good"], np.array([0, 1, 1]))
    [(1, 'waste, plot'), (2, 'good')]
    >>> figure9_labels(np.array([[0.0, 0.0], [1.0, 1.0], [1.0, 1.0], [0.0, 1.0]]),
    ...                ["plot", "waste", "<register 1: -2.50>", "<register 2: +2.50>"], np.array([0, 0, 1, 1]), 2)
    [(2, 'waste → r1 (-2.50)'), (0, 'plot')]
    """
    if not len(points):
        return []
    tol = 0.04 * (float(np.ptp(points, axis=0).max()) or 1.0)
    found = [list(c.members) for c in find_clusters(points, tol=tol)]
    first_register = len(points) - registers
    found = [g for g in found if any(i < first_register for i in g)]
    groups = sorted(found, key=lambda g: (-int(any(leaders[i] for i in g)), -len(g), g[0]))
    out = []
    for g in groups:
        counts: dict[str, int] = {}
        for i in g:
            if i < first_register:
                counts[words[i]] = counts.get(words[i], 0) + 1
        lead = {words[i] for i in g if leaders[i]}
        names = sorted(counts, key=lambda w: (w not in lead, -counts[w], w))
        parts = [f"{w}×{counts[w]}" if counts[w] > 1 else w for w in names]
        anchor = next((i for i in g if leaders[i]), g[0])
        text = ", ".join(parts[:3]) + (" …" if len(parts) > 3 else "")
        tags = [_register_tag(words[i]) for i in g if i >= first_register]
        out.append((anchor, text + (" → " + ", ".join(tags) if tags else "")))
    return out


def _register_tag(name: str) -> str:
    """A register's name in a Figure 9 label, short: ``<register 14: -22.98>`` as ``r14 (-22.98)``.

    >>> _register_tag("<register 14: -22.98>")
    'r14 (-22.98)'
    """
    m = re.fullmatch(r"<register (\d+): (.+)>", name)
    return f"r{m[1]} ({m[2]})" if m else name


def _place_labels(ax: Axes, pts: np.ndarray, labels: list[tuple[int, str]], max_labels: int) -> list[Text]:
    """Draw the labels near their points, let adjustText move them apart, then keep only those
    whose box overlaps no label kept before it and lies inside the axes."""
    from adjustText import adjust_text

    texts = [
        ax.text(
            pts[i, 0],
            pts[i, 1],
            label,
            fontsize=7,
            zorder=6,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.75, "lw": 0},
        )
        for i, label in labels[:max_labels]
    ]
    if not texts:
        return []
    fig = ax.get_figure()
    assert fig is not None  # the axes belong to a figure
    fig.canvas.draw()  # settles the layout: the boxes below are in their final pixels
    anchors = [pts[i] for i, _ in labels[:max_labels]]
    obstacles = np.unique(pts, axis=0)  # (m, 2): repeated points make adjustText divide by zero
    _, arrows = adjust_text(
        texts,
        x=obstacles[:, 0],
        y=obstacles[:, 1],
        ax=ax,
        ensure_inside_axes=True,
        expand_axes=False,
        arrowprops={"arrowstyle": "-", "color": "#607d8b", "lw": 0.5},
        iter_lim=400,
    )
    for t, (x, y) in zip(texts, anchors):
        if not np.isfinite(np.asarray(t.get_position(), dtype=float)).all():  # adjustText gave up on it
            t.set_position((x, y))
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]  # an Agg canvas
    frame = ax.get_window_extent(renderer)
    kept: list[Text] = []
    for t in texts:
        box = t.get_window_extent(renderer)
        shift = (  # pixels that bring a label over an edge back inside (1 px margin)
            max(0.0, frame.x0 + 1 - box.x0) - max(0.0, box.x1 - frame.x1 + 1),
            max(0.0, frame.y0 + 1 - box.y0) - max(0.0, box.y1 - frame.y1 + 1),
        )
        if shift != (0.0, 0.0):
            x, y = ax.transData.transform(t.get_position())
            t.set_position(tuple(ax.transData.inverted().transform((x + shift[0], y + shift[1]))))
            box = t.get_window_extent(renderer)
        inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        if inside and not any(box.overlaps(k.get_window_extent(renderer)) for k in kept):
            kept.append(t)
        else:
            t.set_visible(False)
    for arrow in arrows:  # from a moved label to its point: drawn only for the labels kept
        label = getattr(arrow, "patchA", None)
        arrow.set_visible(any(label is k for k in kept))
    return kept


def _panel(ax: Axes, data: dict, k: int, lim: tuple) -> None:
    pts = np.asarray(data["tokens"][k])
    lead = np.asarray(data["leaders"][k], dtype=bool)
    R = int(data.get("registers", 0))  # a register model's last R tokens: drawn apart, not in the mean
    if R:
        regs, pts, lead = pts[-R:], pts[:-R], lead[:-R]
    v, b = np.asarray(data["v"]), data["b"]
    (x0, x1), (y0, y1) = lim
    gx, gy = np.meshgrid(np.linspace(x0, x1, 200), np.linspace(y0, y1, 200))
    H = v[0] * gx + v[1] * gy + b
    ax.contourf(gx, gy, H, levels=[-np.inf, 0, np.inf], colors=[NEG, POS], alpha=0.12)
    ax.contour(gx, gy, H, levels=[0], colors="k", linewidths=1)
    ax.scatter(pts[~lead, 0], pts[~lead, 1], s=14, c="#455a64", alpha=0.7, label="word")
    ax.scatter(pts[lead, 0], pts[lead, 1], s=60, facecolors="none", edgecolors="k", linewidths=1.4, label="leader")
    if R:
        ax.scatter(  # hollow: a word that joined a register shows inside its diamond
            regs[:, 0], regs[:, 1], marker="D", s=34, facecolors="none", edgecolors=REGISTER, linewidths=1.3,
            zorder=4, label="register",
        )  # fmt: skip
    mean = pts.mean(axis=0)
    ax.scatter([mean[0]], [mean[1]], marker="*", s=160, c="gold", edgecolors="k", zorder=5, label="mean token")
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_title(f"layer {k}", fontsize=9)
    ax.tick_params(labelsize=7)


def _limits(data: dict) -> tuple:
    allp = np.asarray(data["tokens"]).reshape(-1, 2)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    pad = 0.12 * (hi - lo).max() + 1e-9
    return (lo[0] - pad, hi[0] + pad), (lo[1] - pad, hi[1] + pad)


def _check_planar(data: dict) -> None:
    shape = np.shape(data["tokens"])
    if len(shape) != 3 or shape[-1] != 2:
        raise InputError(f"Figure 9 draws the plane and needs a d = 2 model; its tokens have shape {shape}")


def _legend_and_title(fig: Figure, ax: Axes, data: dict, ncol: int = 4) -> None:
    from matplotlib.lines import Line2D

    handles, names = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color="k", lw=1))
    names.append("decision line H = 0 (green: positive side)")
    fig.legend(handles, names, loc="outside lower center", ncol=ncol, fontsize=7, frameon=False)
    side = "positive" if data["decision_value"] > 0 else "negative"
    fig.suptitle(f"{side} (H = {data['decision_value']:+.2f}, alpha = {data['alpha']:.2f})", fontsize=10)


def draw_figure9(data: dict, *, layers: list[int] | None = None, max_labels: int = MAX_LABELS) -> Figure:
    """Figure 9: the review's words at the chosen layers (default 0, 1, 2, K/2, K) in the plane,
    the decision line and shaded half-planes (green: positive), the mean token (star; of the words), leaders
    (circled), the groups of words labelled leader first without overlaps, the legend below."""
    _check_planar(data)
    K = len(data["tokens"]) - 1
    ks = layers if layers is not None else sorted({min(k, K) for k in (0, 1, 2, K // 2, K)})  # K = 0: one panel
    fig = new_figure(3.6 * len(ks), 4.1)
    axes = fig.subplots(1, len(ks), squeeze=False)[0]
    lim = _limits(data)
    for ax, k in zip(axes, ks):
        _panel(ax, data, k, lim)
    _legend_and_title(fig, axes[0], data)
    fig.canvas.draw()
    fig.set_layout_engine("none")  # frozen: the labels are placed against these pixels
    for ax, k in zip(axes, ks):
        pts = np.asarray(data["tokens"][k])
        _place_labels(ax, pts, _labels(data, k), max_labels)
    return fig


def _labels(data: dict, k: int) -> list[tuple[int, str]]:
    """:func:`figure9_labels` of layer ``k`` of Figure 9's ``data``."""
    pts = np.asarray(data["tokens"][k])
    return figure9_labels(pts, data["words"], np.asarray(data["leaders"][k], bool), int(data.get("registers", 0)))


def _figure9_frame(data: dict, k: int, lim: tuple, max_labels: int) -> Figure:
    fig = new_figure(5, 5.4)
    ax = fig.add_subplot()
    _panel(ax, data, k, lim)
    _legend_and_title(fig, ax, data, ncol=2)  # one panel: two columns fit its width
    fig.canvas.draw()
    fig.set_layout_engine("none")
    _place_labels(ax, np.asarray(data["tokens"][k]), _labels(data, k), max_labels)
    return fig


def figure9_gif(data: dict, path: str | os.PathLike, *, ms_per_layer: int = 700, max_labels: int = MAX_LABELS) -> Path:
    """The animated Figure 9: one frame per layer, written by :func:`attndyn.plotting.animate`."""
    _check_planar(data)
    lim = _limits(data)
    frames = [png_bytes(_figure9_frame(data, k, lim, max_labels), dpi=90) for k in range(len(data["tokens"]))]
    return animate(None, path, frames=frames, fps=1000.0 / ms_per_layer)
