"""The sentiment page: a review through a trained model -- prediction, words through the layers, clusters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ...plotting._sentiment import NEG, POS  # the exported figure's colours of the two sides
from .._sentiment_view import SentimentResult, load_model, run_sentiment, sentiment_figure, sentiment_inputs
from .common import Guard, downloads, escape, exported, lib, on_document

__all__ = ["SentimentPage"]


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
        self.guard(self._load)

    def _load(self) -> None:
        assert self.run is not None  # only called with a model
        self.model = load_model(self.run)
        self.explain()

    def _build_plot(self) -> None:
        bm = lib("bokeh.models")
        figure = lib("bokeh.plotting").figure

        self.words = bm.ColumnDataSource({"x": [], "y": [], "word": [], "color": [], "size": []})
        p = figure(width=560, height=500, match_aspect=True, title="words at the layer shown (stars: leaders)")
        p.scatter("x", "y", source=self.words, color="color", size="size")
        p.add_layout(
            bm.LabelSet(x="x", y="y", text="word", source=self.words, x_offset=5, y_offset=3, text_font_size="9pt")
        )
        self.line = bm.ColumnDataSource({"x": [], "y": []})
        p.line("x", "y", source=self.line, color="black", line_dash="dashed")
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
        Z = np.asarray(data["tokens"], dtype=np.float64)  # (K+1, n, d)
        k = min(int(self.layer.value), len(Z) - 1)
        lead = np.asarray(data["leaders"][k], dtype=bool)
        side = Z[k] @ np.asarray(data["v"]) + data["b"] > 0
        colors = np.where(side, POS, NEG)
        self.words.data = {
            "x": Z[k, :, 0], "y": Z[k, :, 1] if Z.shape[2] > 1 else np.zeros(Z.shape[1]), "word": data["words"],
            "color": colors, "size": np.where(lead, 16, 7),
        }  # fmt: skip
        v, b = np.asarray(data["v"]), float(data["b"])
        if Z.shape[2] == 2 and abs(v[1]) > 1e-12:  # the decision line <v, z> + b = 0
            x = np.array([Z[k, :, 0].min(), Z[k, :, 0].max()])
            self.line.data = {"x": x, "y": -(b + v[0] * x) / v[1]}

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
