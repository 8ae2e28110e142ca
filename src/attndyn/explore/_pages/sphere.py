"""The Sphere page: beta, SA/USA, normalisation, causal mask -> tokens on the circle, energy and cluster curves."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...plotting._style import color  # the house style: the live view colours tokens as the exported figure does
from .._sphere_view import NORM_CHOICES, SphereResult, SphereState, run_sphere, sphere_inputs, sphere_view_figure
from .common import Guard, downloads, escape, exported, lib, on_document

__all__ = ["SpherePage"]


class SpherePage:
    """Widgets of the Sphere view; ``result`` is the last good run."""

    def __init__(self) -> None:
        pn = lib("panel")

        w = pn.widgets
        self.guard = Guard()
        self.n = w.IntSlider(label="n tokens", start=2, end=128, value=32, width=150)  # with d and seed: 360 px
        self.d = w.Select(label="d", options=[2, 3], value=2, width=65)
        self.seed = w.IntInput(label="seed", value=0, width=75)
        self.beta = w.FloatSlider(label="beta", start=0.0, end=12.0, step=0.5, value=1.0, css_classes=["beta-slider"])
        self.time = w.FloatSlider(label="time T", start=1.0, end=60.0, step=1.0, value=20.0)
        self.attention = w.Select(label="attention", options=["sa", "usa"], value="sa")
        self.norm = w.Select(label="normalisation", options=list(NORM_CHOICES), value=NORM_CHOICES[0])
        self.causal = w.Checkbox(label="causal mask (i attends to j <= i)", value=False)
        self.status = pn.pane.HTML("", sizing_mode="stretch_width")
        self.result: SphereResult | None = None
        self._build_plots()
        for wdg in (self.d, self.seed, self.attention, self.norm, self.causal):
            wdg.param.watch(lambda e: self.guard(self.rerun), "value")
        for wdg in (self.n, self.beta, self.time):
            wdg.param.watch(lambda e: self.guard(self.rerun), "value_throttled")
        self.guard(self.rerun, now=True)

    def _build_plots(self) -> None:
        bm = lib("bokeh.models")
        figure = lib("bokeh.plotting").figure

        self.tokens = bm.ColumnDataSource({"x": [], "y": [], "color": []})
        self.curves = bm.ColumnDataSource({"t": [], "energy": [], "count": []})
        self.plot = figure(width=420, height=420, title="tokens at T (first two coordinates)", match_aspect=True)
        theta = np.linspace(0, 2 * np.pi, 200)
        self.plot.line(np.cos(theta), np.sin(theta), color="#bbbbbb")
        self.plot.scatter("x", "y", source=self.tokens, color="color", size=8)
        self.energy_plot = figure(width=380, height=200, title="interaction energy E_beta(t)")
        self.energy_plot.line("t", "energy", source=self.curves)
        self.count_plot = figure(width=380, height=200, title="clusters (angle 1e-3) against t")
        self.count_plot.step("t", "count", source=self.curves, mode="after")

    def state(self) -> SphereState:
        return SphereState(
            n=int(self.n.value), d=int(self.d.value), seed=int(self.seed.value), beta=float(self.beta.value),
            time=float(self.time.value), attention=self.attention.value, norm=self.norm.value,
            causal=bool(self.causal.value),
        )  # fmt: skip

    def rerun(self) -> None:
        res = run_sphere(self.state())
        self.result = res
        on_document(lambda: self._draw(res))

    def _draw(self, res: SphereResult) -> None:
        x = res.trajectory.final_tokens.detach().cpu().numpy()
        colors = [color(i) for i in range(len(x))]
        self.tokens.data = {"x": x[:, 0], "y": x[:, 1], "color": colors}
        self.curves.data = {"t": res.trajectory.ts.numpy(), "energy": res.energies, "count": res.counts}
        c, e = res.clusters, res.energy
        longest = c.longest_plateau
        plateau = (
            "none"
            if longest is None
            else f"{longest['value']:.0f} clusters for t in [{longest['start']:.3g}, {longest['end']:.3g}]"
        )
        self.status.object = (
            f'<b>beta</b> <span id="sphere-beta">{res.state.beta:g}</span>, <b>clusters at T:</b> '
            f'<span id="sphere-clusters">{len(c.clusters)}</span> '
            f"(order parameter {c.order_parameter:.4f}); longest metastable plateau: {escape(plateau)}<br>"
            f'<b>E_beta nondecreasing:</b> <span id="sphere-energy">{"undecided" if e.holds is None else "holds" if e.holds else "does not hold"}</span>'
            f"{'' if e.applies else ' (USA with Q = K = V = I is where the theorem applies)'}"
            f" <small>({1000 * res.seconds:.0f} ms)</small>"
        )

    def figure(self) -> Any:
        return sphere_view_figure(exported(self.result))

    def inputs(self) -> dict[str, Any]:
        return sphere_inputs(exported(self.result).state)

    def panel(self) -> Any:
        pn = lib("panel")

        controls = pn.Column(
            pn.Row(self.n, self.d, self.seed), self.beta, self.time, self.attention, self.norm, self.causal,
            downloads("sphere", self.figure, self.inputs, self.guard), width=360,
        )  # fmt: skip
        return pn.Row(
            controls,
            pn.Column(self.guard.pane, pn.Row(self.plot, pn.Column(self.energy_plot, self.count_plot)), self.status),
        )
