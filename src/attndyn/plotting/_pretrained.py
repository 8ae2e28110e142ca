"""Figures of a pretrained model's analysis (:mod:`attndyn.pretrained`); they read results and compute nothing new.

- :func:`attention_layers`: the head-averaged attention of every layer, leaders marked on the diagonal;
- :func:`leader_counts`: in how many heads each token leads, layer by layer;
- :func:`clusters_depth`: clusters, mean cosine similarity and effective rank against depth;
- :func:`layer_eigenvalues`, :func:`head_eigenvalues`: value-matrix spectra in the complex plane (the
  softmax paper's Figure 10);
- :func:`imdb_comparison`: MiniLM's leader words beside the hardmax sentiment model's.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ._style import color, new_figure, to_numpy

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "attention_layers",
    "leader_counts",
    "clusters_depth",
    "layer_eigenvalues",
    "head_eigenvalues",
    "imdb_comparison",
]


def _grid(k: int, cols: int) -> tuple[int, int]:
    cols = min(cols, k)
    return math.ceil(k / cols), cols


def _panels(k: int, cols: int, *, size: float, pad: tuple[float, float]) -> tuple[Figure, np.ndarray]:
    """A figure and its (rows, cols) grid of axes for ``k`` panels, at most ``cols`` columns of ``size``
    inches plus ``pad`` inches of width and height; the panels after the ``k``-th are switched off."""
    rows, cols = _grid(k, cols)
    fig = new_figure(size * cols + pad[0], size * rows + pad[1])
    grid = fig.subplots(rows, cols, squeeze=False)
    for ax in grid.ravel()[k:]:
        ax.axis("off")
    return fig, grid


def _complex_plane(ax: Axes) -> None:
    """The real and imaginary axes, at equal scale, labelled Re λ and Im λ."""
    ax.axhline(0, color="#dddddd", lw=0.5)
    ax.axvline(0, color="#dddddd", lw=0.5)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("Re λ", fontsize=7, labelpad=1)
    ax.set_ylabel("Im λ", fontsize=7, labelpad=1)


def attention_layers(analysis: Any, *, head: int | None = None, cols: int = 3) -> Figure:
    """One panel per layer: the attention matrix (mean over heads, or ``head``); a star on (i, i) for every
    token leading in at least half the heads of that layer (in ``head`` when given)."""
    att = to_numpy(analysis.forward.attention)  # (L, H, n, n)
    leads = to_numpy(analysis.leaders.leads)  # (L, H, n)
    toks = list(analysis.forward.tokens)
    L, H, n, _ = att.shape
    fig, axes = _panels(L, cols, size=3.0, pad=(0.6, 0.4))
    for ell, ax in enumerate(axes.ravel()[:L]):
        P = att[ell].mean(axis=0) if head is None else att[ell, head]
        lead = leads[ell].sum(axis=0) >= max(1, H / 2) if head is None else leads[ell, head] > 0
        im = ax.imshow(P, cmap="Blues", vmin=0, vmax=1)
        idx = np.flatnonzero(lead)
        ax.scatter(idx, idx, marker="*", s=90, color=color(1), edgecolor="white", linewidth=0.5, zorder=3)
        ax.set_title(f"layer {ell}" + ("" if head is None else f", head {head}"), fontsize=9)
        ticks = np.arange(n) if n <= 40 else np.linspace(0, n - 1, 20).astype(int)
        ax.set_xticks(ticks, [toks[i] for i in ticks], rotation=90, fontsize=6)
        ax.set_yticks(ticks, [toks[i] for i in ticks], fontsize=6)
    fig.colorbar(im, ax=axes, shrink=0.6, label="attention" + (" (mean over heads)" if head is None else ""))
    fig.suptitle(
        "attention by layer; stars: leaders (C_i = {i})" + (" in >= half the heads" if head is None else ""),
        fontsize=10,
    )
    return fig


def leader_counts(analysis: Any) -> Figure:
    """Heat map tokens x layers: in how many heads the token's hardmax follow set is itself."""
    counts = to_numpy(analysis.leaders.counts)  # (L, n)
    toks = list(analysis.forward.tokens)
    L, n = counts.shape
    H = int(analysis.leaders.leads.shape[1])
    fig = new_figure(max(4.0, 0.28 * n + 1.5), 0.35 * L + 1.6)
    ax = fig.add_subplot()
    im = ax.imshow(counts, cmap="Oranges", vmin=0, vmax=H, aspect="auto")
    ax.set_yticks(range(L), [f"layer {ell}" for ell in range(L)], fontsize=7)
    ticks = np.arange(n) if n <= 60 else np.linspace(0, n - 1, 30).astype(int)
    ax.set_xticks(ticks, [toks[i] for i in ticks], rotation=90, fontsize=7)
    for ell in range(L):
        for i in range(n):
            if counts[ell, i] > 0 and n <= 60:
                ax.text(i, ell, str(int(counts[ell, i])), ha="center", va="center", fontsize=6)
    fig.colorbar(im, ax=ax, label=f"heads (of {H}) in which the token leads")
    return fig


def clusters_depth(analysis: Any) -> Figure:
    """Clusters at the stated tolerance, mean cosine similarity and effective rank against depth."""
    from matplotlib.ticker import MaxNLocator

    c = analysis.clusters
    depth = np.arange(len(c.clusters))
    fig = new_figure(9.0, 2.8)
    axes = fig.subplots(1, 3)
    for ax, y, label in zip(
        axes,
        (c.clusters, c.cosine, c.effective_rank),
        (f"clusters (tol {c.tol:g} on the sphere)", "mean cosine similarity", "effective rank"),
    ):
        ax.plot(depth, y, "o-", color=color(0))
        ax.set_xlabel("depth (0: embeddings)")
        ax.set_title(label, fontsize=9)
        ax.grid(alpha=0.3, lw=0.5)
    n = len(analysis.forward.tokens)
    axes[0].axhline(n, color="#999999", lw=0.8, ls="--", label=f"n = {n} tokens (no two together)")
    axes[0].legend(fontsize=7, loc="best")
    axes[0].yaxis.set_major_locator(MaxNLocator(integer=True))  # a count of clusters: whole numbers only
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # depth: a layer index
    return fig


def _plane(ax: Axes, ev: np.ndarray, *, c: str, size: float = 6, label: str | None = None, mark: bool = True) -> None:
    ax.scatter(ev.real, ev.imag, s=size, color=c, alpha=0.7, linewidths=0, label=label)
    if mark:
        top = ev[np.argmax(np.abs(ev))]
        ax.scatter([top.real], [top.imag], s=50, facecolor="none", edgecolor="black", linewidth=0.8, zorder=3)


def layer_eigenvalues(spectra: Any, *, cols: int = 3, title: str | None = None) -> Figure:
    """The eigenvalues of every layer's value matrix W_V in the complex plane (softmax paper, Figure 10).

    The eigenvalue of largest modulus is circled; the panel title says whether it is real, positive and
    simple (the spectral half of Definition 1) and whether (W_Q, W_K, W_V) is a good triple."""
    L = len(spectra.layer_eigenvalues)
    fig, axes = _panels(L, cols, size=2.7, pad=(0.0, 0.3))
    for ell, ax in enumerate(axes.ravel()[:L]):
        ev = spectra.layer_eigenvalues[ell]
        _plane(ax, ev, c=color(0))
        r = float(np.abs(ev).max())
        t = np.linspace(0, 2 * np.pi, 200)
        ax.plot(r * np.cos(t), r * np.sin(t), color="#bbbbbb", lw=0.6)
        _complex_plane(ax)
        ok = "lambda_1 real>0 simple" if spectra.layer_leading[ell] else "lambda_1 not real>0"
        ax.set_title(f"layer {ell}: {ok}" + (", good triple" if spectra.layer_good[ell] else ""), fontsize=7)
        ax.tick_params(labelsize=6)
    fig.suptitle(title or "eigenvalues of each layer's value matrix W_V (circle: spectral radius)", fontsize=9)
    return fig


def head_eigenvalues(spectra: Any, *, cols: int = 3, title: str | None = None) -> Figure:
    """The nonzero eigenvalues of every head's W_O^h W_V^h, one panel per layer, one colour per head; a filled
    square marks lambda_1 of the heads forming a good triple, a circle lambda_1 of the other heads."""
    L = len(spectra.head_eigenvalues)
    fig, axes = _panels(L, cols, size=2.7, pad=(0.0, 0.3))
    for ell, ax in enumerate(axes.ravel()[:L]):
        for h, ev in enumerate(spectra.head_eigenvalues[ell]):
            _plane(ax, ev, c=color(h), size=4, mark=False)
            top = ev[np.argmax(np.abs(ev))]
            good = bool(spectra.head_good[ell, h])
            ax.scatter(
                [top.real],
                [top.imag],
                s=28,
                marker="s" if good else "o",
                facecolor=color(h) if good else "none",
                edgecolor="black",
                linewidth=0.6,
                zorder=3,
            )
        _complex_plane(ax)
        ax.set_title(
            f"layer {ell}: good triples {int(spectra.head_good[ell].sum())}/{spectra.head_good.shape[1]}", fontsize=7
        )
        ax.tick_params(labelsize=6)
    fig.suptitle(
        title or "nonzero eigenvalues of each head's W_O^h W_V^h (squares: lambda_1 of good-triple heads)", fontsize=9
    )
    return fig


def imdb_comparison(record: dict, *, top: int = 15) -> Figure:
    """Left: per-review overlap of the two models' leader words against what chance gives; right: the most
    frequent leader words of each model (from :meth:`attndyn.pretrained._imdb.LeaderComparison.record`)."""
    per = record["per_review"]
    ov = np.array([r["overlap"] for r in per])
    ch = np.array([r["chance"] for r in per])
    fig = new_figure(10.0, 3.8)
    a, b, c = fig.subplots(1, 3, width_ratios=[1.2, 1, 1])
    bins = np.linspace(0, 1, 21)
    a.hist(ov, bins=bins, alpha=0.7, color=color(0), label=f"MiniLM top-k vs sentiment leaders (mean {ov.mean():.2f})")
    a.hist(ch, bins=bins, alpha=0.5, color="#999999", label=f"chance k/|candidates| (mean {ch.mean():.2f})")
    a.set_xlabel("fraction of the sentiment model's leader words\nthat are among MiniLM's k top leader words")
    a.set_ylabel("reviews")
    a.legend(fontsize=7)
    a.set_title(f"{len(per)} IMDb test reviews", fontsize=9)
    for ax, key, name, k in (
        (b, "top_sentiment_leaders", "hardmax sentiment model (d = 2)", 0),
        (c, "top_minilm_leaders", "MiniLM (top-k per review)", 2),
    ):
        words = record[key][:top]
        ax.barh([w for w, _ in words][::-1], [n for _, n in words][::-1], color=color(k))
        ax.set_title(f"leader words: {name}", fontsize=8)
        ax.set_xlabel("reviews")
        ax.tick_params(labelsize=7)
    return fig
