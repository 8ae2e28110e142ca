"""The sentiment page: a review through a trained model -- prediction, words through the layers, clusters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...plotting._sentiment import NEG, POS, REGISTER, figure9_labels  # the exported figure's colours, labels
from .._sentiment_view import (
    SentimentResult,
    load_model,
    place_labels,
    run_sentiment,
    sentiment_figure,
    sentiment_inputs,
)
from .common import Guard, downloads, escape, exported, lib, on_document

__all__ = ["SentimentPage"]

FRAME = (480, 400)  # the plot's inner frame in pixels: the word labels are placed against it


class SentimentPage:
    """Needs a trained run folder (``attndyn explore --model RUN``); without one it says how to get one."""

    def __init__(self, model: str | Path | None) -> None:
        pn = lib("panel")

        self.run = model
        self.guard = Guard()
        self.model: Any = None
        self.result: SentimentResult | None = None
        self.text = pn.widgets.TextAreaInput(
            label="review", value="The film was good, the music wonderful.", height=100
        )
        self.go = pn.widgets.Button(label="explain", color="primary")
        self.layer = pn.widgets.IntSlider(label="layer", start=0, end=1, value=1)
        self.status = pn.pane.HTML("", sizing_mode="stretch_width")
        self.table = pn.pane.HTML("", sizing_mode="stretch_width")
        if model is None:
            return
        self._build_plot()
        self.go.on_click(lambda e: self.guard(self.explain))
        self.layer.param.watch(lambda e: on_document(self._draw), "value")
        self.guard(self._load, now=True)

    def _load(self) -> None:
        assert self.run is not None  # only called with a model
        self.model = load_model(self.run)
        self.explain()

    def _build_plot(self) -> None:
        bm = lib("bokeh.models")
        figure = lib("bokeh.plotting").figure

        self.words = bm.ColumnDataSource({"x": [], "y": [], "color": []})
        self.leads = bm.ColumnDataSource({"x": [], "y": []})
        self.registers = bm.ColumnDataSource({"x": [], "y": []})  # a register model's registers (none: empty)
        self.labels = bm.ColumnDataSource({"x": [], "y": [], "text": [], "dx": [], "dy": []})
        self.line = bm.ColumnDataSource({"x": [], "y": []})
        p = figure(
            frame_width=FRAME[0], frame_height=FRAME[1], x_range=bm.Range1d(0, 1), y_range=bm.Range1d(0, 1),
            title="words at the layer shown (circled: leaders)", tools="pan,wheel_zoom,reset",
        )  # fmt: skip
        # as the exported Figure 9 draws them: words coloured by their side of the decision line, leaders circled
        p.scatter("x", "y", source=self.words, color="color", size=7, legend_label="word (colour: side of H = 0)")
        p.scatter(
            "x",
            "y",
            source=self.leads,
            size=16,
            fill_alpha=0,
            line_color="black",
            line_width=1.5,
            legend_label="leader",
        )
        p.line("x", "y", source=self.line, color="black", line_dash="dashed", legend_label="decision line H = 0")
        # hollow diamonds, as the exported figure's: a word that joined a register shows inside it (legend: _draw)
        self.register_glyph = p.scatter(
            "x", "y", source=self.registers, marker="diamond", size=11, fill_alpha=0, line_color=REGISTER,
            line_width=1.5,
        )  # fmt: skip
        p.add_layout(
            bm.LabelSet(
                x="x", y="y", text="text", x_offset="dx", y_offset="dy", source=self.labels, text_font_size="9pt",
                background_fill_color="white", background_fill_alpha=0.7,
            )
        )  # fmt: skip
        legend = p.legend[0]
        legend.orientation, legend.label_text_font_size = "horizontal", "8pt"
        p.add_layout(legend, "below")  # over no word
        self.plot = p

    def explain(self) -> None:
        if self.model is None:
            raise ValueError("no model: start with attndyn explore --model RUN")
        res = run_sentiment(self.model, self.text.value)
        self.result = res
        K = len(res.figure9["tokens"]) - 1
        self.layer.end = max(K, 1)
        self.status.object = f'<b>prediction:</b> <span id="prediction">{escape(res.headline())}</span>'
        rows = "".join(
            f"<tr><td>{escape(c['leaders'])}</td><td>{c['share']:+.2f}</td><td>{c['size']}</td><td>{escape(c['words'])}</td></tr>"
            for c in res.clusters()
        )
        words = "".join(
            f"<tr><td>{escape(w['word'])}</td><td>{w['count']}</td><td>{w['contribution']:+.4f}</td></tr>"
            for w in res.words()
        )
        self.table.object = (
            f"<table><tr><th>leaders</th><th>share</th><th>size</th><th>words</th></tr>{rows}</table>"
            f'<table id="attributions"><tr><th>word</th><th>count</th><th>exact contribution to H</th></tr>{words}</table>'
        )
        if self.layer.value != K:
            self.layer.value = K  # draws
        else:
            on_document(self._draw)

    def _draw(self) -> None:
        if self.result is None:
            return
        data = self.result.figure9
        Z = np.asarray(data["tokens"], dtype=np.float64)  # (K+1, n + R, d): the words, then R registers
        R = int(data.get("registers", 0))
        n = Z.shape[1] - R
        if Z.shape[2] == 1:  # d = 1: the words on a line
            Z = np.concatenate([Z, np.zeros_like(Z)], axis=2)
        k = min(int(self.layer.value), len(Z) - 1)
        P = Z[k, :, :2]  # (n + R, 2) the plane shown
        lead = np.asarray(data["leaders"][k], dtype=bool)
        v, b = np.asarray(data["v"]), float(data["b"])
        side = Z[k] @ v + b > 0 if len(v) == Z.shape[2] else np.ones(len(P), dtype=bool)
        # the same limits at every layer (all layers' words, padded), so the words move and the axes do not
        lo, hi = Z[..., :2].reshape(-1, 2).min(axis=0), Z[..., :2].reshape(-1, 2).max(axis=0)
        span, scale = float((hi - lo).max()), float(np.abs(Z[..., :2]).max())
        pad = 0.12 * span if span > 1e-6 * scale else 0.25 * scale or 1.0  # all words at one place: a margin
        lo, hi = lo - pad, hi + pad
        self.plot.x_range.update(start=lo[0], end=hi[0])
        self.plot.y_range.update(start=lo[1], end=hi[1])
        self.words.data = {"x": P[:n, 0], "y": P[:n, 1], "color": np.where(side[:n], POS, NEG)}
        self.leads.data = {"x": P[:n][lead[:n], 0], "y": P[:n][lead[:n], 1]}  # leader words (registers all lead)
        self.registers.data = {"x": P[n:, 0], "y": P[n:, 1]}
        if R:
            self._name_registers()
        # one label per group of words at one place, leader first (as the exported figure), none overlapping
        groups = figure9_labels(P, list(data["words"]), lead, R)
        pixels = (P - lo) / (hi - lo) * np.asarray(FRAME)  # (n + R, 2) in the plot's frame, y up
        kept = place_labels(pixels[[i for i, _ in groups]], [t for _, t in groups], FRAME)
        anchors = [groups[j][0] for j, _, _ in kept]
        self.labels.data = {
            "x": P[anchors, 0], "y": P[anchors, 1], "text": [groups[j][1] for j, _, _ in kept],
            "dx": [dx for _, dx, _ in kept], "dy": [dy for _, _, dy in kept],
        }  # fmt: skip
        if len(v) == 2 and abs(v[1]) > 1e-12:  # the decision line <v, z> + b = 0
            x = np.array([lo[0], hi[0]])
            self.line.data = {"x": x, "y": -(b + v[0] * x) / v[1]}

    def _name_registers(self) -> None:
        """The registers' legend entry, added when a register model is first drawn (a plain model's has none)."""
        legend = self.plot.legend[0]
        if not any(self.register_glyph in item.renderers for item in legend.items):
            legend.items.append(lib("bokeh.models").LegendItem(label="register", renderers=[self.register_glyph]))

    def figure(self) -> Any:
        return sentiment_figure(exported(self.result))

    def inputs(self) -> dict[str, Any]:
        text = self.result.text if self.result is not None else self.text.value  # the review the figure shows
        return sentiment_inputs(text, self.run or "RUN")

    def panel(self) -> Any:
        pn = lib("panel")

        if self.run is None:
            return pn.pane.HTML(
                "<p>Start with <code>attndyn explore --model RUN</code>, RUN a folder written by "
                "<code>attndyn sentiment train --run RUN</code>, to read reviews here.</p>"
            )
        controls = pn.Column(
            self.text, self.go, self.layer, downloads("sentiment", self.figure, self.inputs, self.guard), width=360
        )
        return pn.Row(controls, pn.Column(self.guard.pane, self.status, pn.pane.Bokeh(self.plot), self.table))
