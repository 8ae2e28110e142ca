"""The softmax regimes page: Table 1 presets or typed Q, K, V; beta, time, method -> regime, verdict, P(t)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._errors import InputError
from ...plotting._style import color  # the house style: the live view colours tokens as the exported figure does
from .._parse import matrix_text, parse_matrix
from .._softmax_view import (
    V_PRESETS,
    SoftmaxResult,
    SoftmaxState,
    V_preset,
    run_softmax,
    softmax_figure,
    softmax_inputs,
    softmax_tokens,
)
from .common import EDIT_MAX_STEPS, Guard, checked_values, downloads, escape, exported, lib, on_document

__all__ = ["SoftmaxPage"]

REGIMES = ("infer", "boolean", "polytope", "hyperplanes", "paranormal", "collapse", "codimension")


class SoftmaxPage:
    """Widgets of the regimes view; ``result`` is the last good run."""

    def __init__(self) -> None:
        pn = lib("panel")

        w = pn.widgets
        self.guard = Guard()
        self.preset = w.Select(label="V (Table 1)", options=list(V_PRESETS), value=V_PRESETS[1])
        self.Q, self.K, self.V = (w.TextInput(label=f"{m} (Enter to apply)", value="1 0; 0 1") for m in "QKV")
        self.n = w.IntSlider(label="n tokens", start=2, end=200, value=40, width=240)  # with the seed: 360 pixels
        self.seed = w.IntInput(label="seed", value=0, width=80)
        self.beta = w.FloatSlider(label="beta", start=0.1, end=10.0, step=0.1, value=1.0)
        self.time = w.FloatSlider(label="time T", start=0.5, end=60.0, step=0.5, value=10.0)
        self.at = w.FloatSlider(label="time shown", start=0.0, end=10.0, step=0.1, value=10.0)
        self.method = w.Select(label="method", options=["rk4", "heun", "midpoint", "euler", "discrete", "dopri5"])
        self.step = w.FloatInput(label="step", value=0.1, step=0.05, start=1e-4)
        self.rescaled = w.Checkbox(label="rescaled tokens z = exp(-tV) x (eq. 4)", value=True)
        self.regime = w.Select(label="regime to check", options=list(REGIMES), value="infer")
        self.status = pn.pane.HTML("", sizing_mode="stretch_width")
        self.result: SoftmaxResult | None = None
        self._build_plots()
        self._hold = False  # a preset fills several boxes: one run at the end, none on the way (Q 1 x 1, V 2 x 2)
        self.preset.param.watch(lambda e: self.guard(self._load_preset), "value")
        for wdg in (self.Q, self.K, self.V, self.beta, self.method, self.step, self.rescaled, self.regime, self.seed):
            wdg.param.watch(lambda e: None if self._hold else self.guard(self.rerun), "value")
        for wdg in (self.n, self.time, self.at):
            wdg.param.watch(lambda e: None if self._hold else self.guard(self.rerun), "value_throttled")
        self.guard(self._load_preset, now=True)

    def _build_plots(self) -> None:
        bm = lib("bokeh.models")
        figure = lib("bokeh.plotting").figure

        self.paths = bm.ColumnDataSource({"xs": [], "ys": [], "color": []})
        self.now = bm.ColumnDataSource({"x": [], "y": [], "color": []})
        self.image = bm.ColumnDataSource({"image": [np.zeros((1, 1))], "dw": [1], "dh": [1]})
        self.plot = figure(width=480, height=440, title="tokens (first two coordinates; d = 1: x against t)")
        self.plot.multi_line("xs", "ys", source=self.paths, color="color", alpha=0.4)
        self.plot.scatter("x", "y", source=self.now, color="color", size=7)
        # P(t) in token indices: row i (the token attending) down the side, column j (attended) along the top
        self.attn = figure(
            width=400, height=400, title="attention matrix P(t)", x_range=bm.Range1d(-0.5, 0.5),
            y_range=bm.Range1d(0.5, -0.5), x_axis_location="above", tools="pan,wheel_zoom,reset,hover",
            tooltips=[("i, j", "$y{0}, $x{0}"), ("P", "@image{0.000}")],
        )  # fmt: skip
        self.attn.xaxis.axis_label, self.attn.yaxis.axis_label = "token j (attended)", "token i"
        for axis in (self.attn.xaxis, self.attn.yaxis):
            axis.ticker.min_interval = 1  # whole tokens only
        mapper = bm.LinearColorMapper(palette="Viridis256", low=0.0, high=1.0)
        self.attn.image("image", x=-0.5, y=-0.5, dw="dw", dh="dh", source=self.image, color_mapper=mapper)
        self.attn.add_layout(bm.ColorBar(color_mapper=mapper, width=10), "right")

    def _load_preset(self) -> None:
        V, rescaled, regime, T = V_preset(self.preset.value)
        d = len(V)
        I = matrix_text(np.eye(d))
        self._hold = True
        try:
            self.Q.value, self.K.value, self.V.value = I, I, matrix_text(V)
            self.rescaled.value, self.regime.value = rescaled, regime or "infer"
            self.at.end = max(self.at.end, T)  # a preset longer than the last run: "time shown" must reach T first
            self.time.value, self.at.value = T, T
        finally:
            self._hold = False
        self.rerun()

    def state(self) -> SoftmaxState:
        checked_values(self.n, self.seed, self.beta, self.time, self.at, self.step)
        if self.time.value / self.step.value > EDIT_MAX_STEPS:
            raise InputError(
                f"time {self.time.value:g} with step {self.step.value:g} needs {self.time.value / self.step.value:,.0f} "
                f"steps, over the explorer budget of {EDIT_MAX_STEPS:,}; raise step (the command line takes --max-steps)"
            )
        d = len(parse_matrix(self.V.value, "V"))
        Q, K, V = (parse_matrix(x.value, m, d=d) for x, m in ((self.Q, "Q"), (self.K, "K"), (self.V, "V")))
        return SoftmaxState(
            softmax_tokens(int(self.n.value), d, int(self.seed.value)), Q, K, V, float(self.beta.value),
            float(self.time.value), self.method.value, float(self.step.value), bool(self.rescaled.value),
            float(self.at.value), None if self.regime.value == "infer" else self.regime.value,
        )  # fmt: skip

    def rerun(self) -> None:
        res = run_softmax(self.state())
        self.result = res
        self.at.end = res.state.time
        on_document(lambda: self._draw(res))

    def _draw(self, res: SoftmaxResult) -> None:
        traj = res.trajectory
        Y = traj.ys[: res.index + 1, 0].detach().cpu().numpy()  # (k+1, n, d)
        ts = traj.ts[: res.index + 1].detach().cpu().numpy()
        n = Y.shape[1]
        colors = [color(i) for i in range(n)]
        if Y.shape[2] == 1:
            xs, ys = [ts.tolist()] * n, Y[:, :, 0].T.tolist()
            now_x, now_y = np.full(n, ts[-1]), Y[-1, :, 0]
        else:
            xs, ys = Y[:, :, 0].T.tolist(), Y[:, :, 1].T.tolist()
            now_x, now_y = Y[-1, :, 0], Y[-1, :, 1]
        self.paths.data = {"xs": xs, "ys": ys, "color": colors}
        self.now.data = {"x": now_x, "y": now_y, "color": colors}
        # row 0 of the image is drawn at y = -0.5, the top of the flipped axis: P as printed, in token indices
        self.image.data = {"image": [res.attention], "dw": [n], "dh": [n]}
        self.attn.x_range.update(start=-0.5, end=n - 0.5)
        self.attn.y_range.update(start=n - 0.5, end=-0.5)
        measured = ", ".join(
            f"{k} = {v!s}" for k, v in res.report.measured.items() if isinstance(v, (int, float, bool))
        )
        self.status.object = (
            f'<b>regime:</b> <span id="regime">{res.regime}</span> — <b>verdict:</b> '
            f'<span id="softmax-verdict">{escape(res.report.verdict)}</span><br>'
            f"{escape(res.report.statement)}<br><small>{escape(measured)}</small><br>"
            f"<b>t = {float(traj.ts[res.index]):.2f}:</b> tokens attending most to themselves: "
            f"{', '.join(map(str, res.leaders)) or 'none'} <small>({1000 * res.seconds:.0f} ms)</small>"
        )

    def figure(self) -> Any:
        return softmax_figure(exported(self.result))

    def inputs(self) -> dict[str, Any]:
        return softmax_inputs(exported(self.result).state)

    def panel(self) -> Any:
        pn = lib("panel")

        controls = pn.Column(
            self.preset, self.Q, self.K, self.V, pn.Row(self.n, self.seed), self.beta, self.time, self.at,
            self.method, self.step, self.rescaled, self.regime, downloads("softmax", self.figure, self.inputs, self.guard),
            width=360,
        )  # fmt: skip
        return pn.Row(controls, pn.Column(self.guard.pane, pn.Row(self.plot, self.attn), self.status))
