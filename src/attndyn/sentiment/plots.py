"""Figures of the sentiment model. They read results (dicts from ``evaluate``/``explain`` or
:func:`figure9_data`), never train or simulate anything themselves."""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from .estimator import HardmaxSentimentClassifier

__all__ = ["figure8", "accuracy_curves", "figure10", "figure9_data", "figure9", "figure9_gif"]

POS, NEG = "#2e7d32", "#c62828"


def _plt() -> Any:  # the matplotlib.pyplot module, on the Agg backend
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _save(fig: Figure, path: str | Path) -> Path:
    from ..io import atomic_write

    p = Path(path)
    atomic_write(p, lambda tmp: fig.savefig(tmp, dpi=130, bbox_inches="tight", format=p.suffix.lstrip(".") or "png"))
    _plt().close(fig)
    return p


def _epoch_curves(data: dict, path: str | Path, metric: str, ylabel: str, title: str | None = None) -> Path:
    """Per-epoch train/validation curves of ``metric`` ("loss" or "acc"), softmax vs hardmax."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 4))
    e = data["epoch"]
    for part, name in (("train", "train"), ("val", "validation")):
        for kind, style in (("softmax", "-"), ("hardmax", "--")):
            key = f"{part}_{kind}_{metric}"
            if any(x is not None for x in data.get(key, [])):
                ax.plot(e, data[key], style, marker="o", ms=3, label=f"{name}, {kind}")
    ax.set_xlabel("epoch")
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, path)


def figure8(data: dict, path: str | Path) -> Path:
    """Figure 8: training (subset) and validation loss per epoch, softmax vs hardmax, same weights."""
    return _epoch_curves(
        data, path, "loss", "binary cross-entropy", "Loss: softmax training model vs hardmax inference (same weights)"
    )


def accuracy_curves(data: dict, path: str | Path) -> Path:
    """Accuracy per epoch, softmax vs hardmax, train subset and validation."""
    return _epoch_curves(data, path, "acc", "accuracy")


def figure10(rows: list[dict], path: str | Path) -> Path:
    """Figure 10: the most frequent far-from-the-line leader words of confident correct reviews."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(6, 0.35 * max(len(rows), 3) + 1))
    words = [r["word"] for r in rows][::-1]
    counts = [r["count"] for r in rows][::-1]
    colors = [POS if r["positive_side"] * 2 >= r["count"] else NEG for r in rows][::-1]
    ax.barh(words, counts, color=colors)
    ax.set_xlabel("times a leader with |H(z)| >= 2 (confident, correct reviews)")
    ax.set_title("Leader words (green: positive side, red: negative side)")
    return _save(fig, path)


def figure9_data(estimator: HardmaxSentimentClassifier, text: str) -> dict:
    """Everything Figure 9 draws for one review and a d = 2 model (JSON-able)."""
    from .explain import trajectory_of
    from .model import word_leaders

    words, traj, H, ids = trajectory_of(estimator, text)
    m = estimator.model_
    ys = traj.ys[:, 0].numpy()  # (K+1, n, 2)
    return {
        "words": words,
        "tokens": ys.tolist(),
        "leaders": word_leaders(traj, ids)[:, 0].numpy().tolist(),
        "v": m.decoder.weight.detach().double().cpu()[0].tolist(),
        "b": float(m.decoder.bias.detach()[0]),
        "decision_value": H,
        "alpha": float(m.alpha.detach()),
    }


def _labels(ax: Axes, pts: np.ndarray, words: list[str], leaders: np.ndarray, max_labels: int = 14) -> None:
    """Label each distinct position once ("word ×3, other"), leaders first, at most ``max_labels``."""
    keyed: dict[tuple, list[int]] = {}
    cell = 0.04 * (float(np.ptp(pts, axis=0).max()) or 1.0)  # points closer than ~4% of the span share a label
    for i, p in enumerate(pts):
        keyed.setdefault(tuple(np.round(p / cell).astype(int)), []).append(i)
    groups = sorted(keyed.values(), key=lambda g: (-int(any(leaders[i] for i in g)), -len(g)))
    for g in groups[:max_labels]:
        names: dict[str, int] = {}
        for i in g:
            names[words[i]] = names.get(words[i], 0) + 1
        parts = [f"{w}×{c}" if c > 1 else w for w, c in sorted(names.items(), key=lambda kv: -kv[1])]
        label = ", ".join(parts[:3]) + (" …" if len(parts) > 3 else "")
        x, y = pts[g[0]]
        ax.annotate(
            label,
            (x, y),
            xytext=(4, 4),
            textcoords="offset points",
            fontsize=7,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.7, "lw": 0},
        )


def _panel(ax: Axes, data: dict, k: int, lim: tuple) -> None:
    pts = np.asarray(data["tokens"][k])
    lead = np.asarray(data["leaders"][k], dtype=bool)
    v, b = np.asarray(data["v"]), data["b"]
    (x0, x1), (y0, y1) = lim
    gx, gy = np.meshgrid(np.linspace(x0, x1, 200), np.linspace(y0, y1, 200))
    H = v[0] * gx + v[1] * gy + b
    ax.contourf(gx, gy, H, levels=[-np.inf, 0, np.inf], colors=[NEG, POS], alpha=0.12)
    ax.contour(gx, gy, H, levels=[0], colors="k", linewidths=1)
    ax.scatter(pts[~lead, 0], pts[~lead, 1], s=14, c="#455a64", alpha=0.7, label="word")
    ax.scatter(pts[lead, 0], pts[lead, 1], s=60, facecolors="none", edgecolors="k", linewidths=1.4, label="leader")
    mean = pts.mean(axis=0)
    ax.scatter([mean[0]], [mean[1]], marker="*", s=160, c="gold", edgecolors="k", zorder=5, label="mean token")
    _labels(ax, pts, data["words"], lead)
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_title(f"layer {k}", fontsize=9)
    ax.tick_params(labelsize=7)


def _limits(data: dict) -> tuple:
    allp = np.asarray(data["tokens"]).reshape(-1, 2)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    pad = 0.12 * (hi - lo).max() + 1e-9
    return (lo[0] - pad, hi[0] + pad), (lo[1] - pad, hi[1] + pad)


def figure9(data: dict, path: str | Path, *, layers: list[int] | None = None) -> Path:
    """Figure 9: the review's words layer by layer in the plane, decision line, shaded half-planes
    (green: positive), the mean token (star), leaders (circled), words labelled."""
    plt = _plt()
    K = len(data["tokens"]) - 1
    ks = layers if layers is not None else sorted({0, 1, 2, K // 2, K})
    fig, axes = plt.subplots(1, len(ks), figsize=(3.6 * len(ks), 3.8), squeeze=False)
    lim = _limits(data)
    for ax, k in zip(axes[0], ks):
        _panel(ax, data, k, lim)
    axes[0][-1].legend(fontsize=7, loc="best")  # the last layer has the fewest distinct points
    side = "positive" if data["decision_value"] > 0 else "negative"
    fig.suptitle(f"{side} (H = {data['decision_value']:+.2f}, alpha = {data['alpha']:.2f})", fontsize=10)
    return _save(fig, path)


def figure9_gif(data: dict, path: str | Path, *, ms_per_layer: int = 700) -> Path:
    """The animated Figure 9: one frame per layer (Pillow GIF)."""
    from PIL import Image

    from ..io import atomic_write

    plt = _plt()
    lim = _limits(data)
    frames = []
    for k in range(len(data["tokens"])):
        fig, ax = plt.subplots(figsize=(5, 5))
        _panel(ax, data, k, lim)
        buf = io.BytesIO()
        fig.savefig(buf, dpi=90, format="png")
        plt.close(fig)
        buf.seek(0)
        frames.append(Image.open(buf).convert("P", palette=Image.Palette.ADAPTIVE))
    p = Path(path)
    atomic_write(
        p,
        lambda tmp: frames[0].save(
            tmp, format="GIF", save_all=True, append_images=frames[1:], duration=ms_per_layer, loop=0
        ),
    )
    return p
