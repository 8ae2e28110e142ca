"""The control page: click the tokens that should lead; choose_A answers; one click loads A into the playground."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..._validation import parse_indices
from .._control_view import ControlState, control_figure, control_inputs, control_summary, run_control
from .common import Downloads, Guard, checked_values, escape, lib, on_document

if TYPE_CHECKING:
    from ...control import ControlResult
    from .hardmax import Playground

__all__ = ["ControlPage"]


class ControlPage:
    """Works on the playground's current tokens; ``Load A`` hands the answer back to it."""

    def __init__(self, playground: Playground) -> None:
        pn = lib("panel")
        bm = lib("bokeh.models")
        figure = lib("bokeh.plotting").figure

        w = pn.widgets
        self.playground = playground
        self.guard = Guard()
        self.leaders = w.TextInput(label="tokens that should lead (click, shift-click; or type 0, 2)", value="")
        self.spd = w.Checkbox(label="SPD A (semidefinite program; needs the 'control' extra)", value=False)
        self.solve = w.Button(label="choose A", color="primary")
        self.load = w.Button(label="load A into the playground", disabled=True)
        self.refresh = w.Button(label="take the playground's tokens")
        self.status = pn.pane.HTML(
            "<small>no A yet: pick the tokens that should lead, then choose A (the figure buttons wait for it)</small>",
            sizing_mode="stretch_width",
        )
        self.result: ControlResult | None = None
        self.solved: ControlState | None = None  # the request self.result answers (the exports pair them)
        self.src = bm.ColumnDataSource({"x": [], "y": [], "label": []})
        p = figure(width=520, height=480, match_aspect=True, tools="tap,pan,wheel_zoom,reset", title="tokens (layer 0)")
        r = p.scatter("x", "y", source=self.src, size=12, selection_color="gold", nonselection_alpha=0.5)
        p.add_layout(
            bm.LabelSet(x="x", y="y", text="label", source=self.src, x_offset=6, y_offset=4, text_font_size="9pt")
        )
        p.select_one(bm.TapTool).renderers = [r]
        self.plot = p
        self.src.selected.on_change("indices", lambda attr, old, new: self._tapped(new))
        self.solve.on_click(lambda e: self.guard(self.run))
        self.load.on_click(lambda e: self.guard(self._load))
        self.refresh.on_click(lambda e: self.guard(self.take_tokens))
        self.exports = Downloads("control", self.figure, self.inputs, self.guard, waiting="choose A first")
        self.guard(self.take_tokens, now=True)

    def take_tokens(self) -> None:
        Z = np.asarray(self.playground.tokens, dtype=np.float64)
        self.tokens = Z

        def draw() -> None:
            self.plot.title.text = "tokens (layer 0)" if Z.shape[1] == 2 else "3-D tokens (layer 0), seen along z_3"
            self.src.data = {"x": Z[:, 0], "y": Z[:, 1], "label": [str(i) for i in range(len(Z))]}
            self.src.selected.indices = []

        on_document(draw)

    def _tapped(self, indices: list[int]) -> None:
        self.leaders.value = ", ".join(map(str, sorted(indices)))

    def state(self) -> ControlState:
        checked_values(self.playground.alpha, self.playground.layers)
        idx = sorted(set(parse_indices(self.leaders.value, "leaders", len(self.tokens))))
        layers = max(60, int(self.playground.layers.value))
        return ControlState(self.tokens, tuple(idx), bool(self.spd.value), float(self.playground.alpha.value), layers)

    def run(self) -> None:
        state = self.state()
        res = run_control(state)
        self.result, self.solved = res, state
        self.load.disabled = res.trajectory is None
        self.exports.figures_ready(True)
        lines = "<br>".join(escape(s) for s in control_summary(res))
        self.status.object = f'<span id="control-verdict">{res.verdict}</span><br>{lines}'

    def _load(self) -> None:
        if self.result is None or self.result.trajectory is None:
            raise ValueError("no A to load: choose A first")
        self.playground.tokens = self.tokens
        self.playground.load_A(self.result.A)

    def figure(self) -> Any:
        if self.result is None:
            raise ValueError("nothing to export yet: choose A first")
        return control_figure(self.result)

    def inputs(self) -> dict[str, Any]:
        if self.result is not None and self.solved is not None:  # the request of the A shown, not the fields' edits
            return control_inputs(self.solved, self.result)
        return control_inputs(self.state(), None)

    def panel(self) -> Any:
        pn = lib("panel")

        controls = pn.Column(
            self.refresh, self.leaders, self.spd, self.solve, self.load,
            self.exports.panel, width=360,
        )  # fmt: skip
        return pn.Row(controls, pn.Column(self.guard.pane, pn.pane.Bokeh(self.plot), self.status))
