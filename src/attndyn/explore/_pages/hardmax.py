"""The hardmax playground page: presets, dragged or added tokens, A, alpha, layers -> trajectories and leaders.

2-D tokens are drawn in a Bokeh plane where they can be dragged and added; 3-D tokens in the library's
picture (:func:`hardmax_figure`, matplotlib's 3-D axes), turned by an azimuth player and an elevation
slider: turning redraws that picture from the last result (:func:`turn`) and never reruns the dynamics.
"""

from __future__ import annotations

import io
import time
from typing import Any

import numpy as np

from ..._validation import InputError
from ...plotting._style import color  # the house style: the live view colours tokens as the exported figure does
from .._hardmax_view import (
    A_PRESETS,
    TOKEN_PRESETS,
    A_preset,
    HardmaxResult,
    HardmaxState,
    hardmax_figure,
    hardmax_inputs,
    run_hardmax,
    token_preset,
    turn,
)
from .._parse import matrix_text, parse_matrix
from .common import EDIT_MAX_TOKENS, Guard, checked_values, downloads, escape, exported, lib, on_document

__all__ = ["Playground"]

LIVE_DPI = 90  # the turning 3-D picture: about 500 x 470 pixels (the exported PNG uses 150 dpi)


def _hull_order(points: np.ndarray) -> np.ndarray:
    """Indices of 2-D points sorted by angle around their mean (a convex polygon's drawing order)."""
    c = points.mean(axis=0)
    return np.argsort(np.arctan2(points[:, 1] - c[1], points[:, 0] - c[0]))


class Playground:
    """Widgets and Bokeh sources of the playground; ``result`` is the last good run."""

    def __init__(self) -> None:
        pn = lib("panel")

        w = pn.widgets
        self.guard = Guard()
        self.preset = w.Select(
            label="tokens", options=list(TOKEN_PRESETS), value="Fig. 2: square polytope", css_classes=["tokens-select"]
        )
        self.n = w.IntSlider(label="n (random clouds)", start=3, end=200, value=50, width=240, css_classes=["n-slider"])
        self.seed = w.IntInput(label="seed", value=0, width=80)
        self.A_preset = w.Select(label="A preset", options=[*A_PRESETS, "control result"], value="I")
        self.A_text = w.TextInput(
            label="A (rows separated by ';', Enter to apply)", value="1 0; 0 1", css_classes=["A-input"]
        )
        self.spd = w.Checkbox(label="A must be SPD (Theorem 1.1)", value=False)
        self.alpha = w.FloatSlider(
            label="alpha", start=0.05, end=3.0, step=0.05, value=0.5, css_classes=["alpha-slider"]
        )
        self.layers = w.IntSlider(label="layers", start=1, end=200, value=30, css_classes=["layers-slider"])
        self.layer = w.IntSlider(label="layer shown", start=0, end=30, value=30, css_classes=["layer-slider"])
        self.status = pn.pane.HTML("", sizing_mode="stretch_width")
        # the 3-D view: the library's picture as a PNG, turned by these two (the player plays the azimuth)
        self.azimuth = w.Player(
            label="azimuth (degrees)", start=-180, end=180, step=5, value=-60, interval=250, loop_policy="loop",
            show_value=True, show_loop_controls=False, width=360, css_classes=["azimuth-player"],
        )  # fmt: skip
        self.elevation = w.IntSlider(
            label="elevation (degrees)", start=-90, end=90, step=5, value=30, width=240, css_classes=["elevation"]
        )
        self.picture = pn.pane.PNG(None, width=500, css_classes=["view-3d"])
        self.frame = pn.pane.HTML("", sizing_mode="stretch_width")
        self.figure3d: Any = None  # the matplotlib figure of the last 3-D result, turned in place
        self._turn_pending = False
        self.tokens = token_preset(self.preset.value)
        self.A = np.eye(2)
        self.control_A: np.ndarray | None = None
        self.result: HardmaxResult | None = None
        self._quiet = self._hold = False
        self._build_plot()
        self._watch()
        self.guard(self.rerun, now=True)

    def _build_plot(self) -> None:
        bm = lib("bokeh.models")
        figure = lib("bokeh.plotting").figure

        columns: dict[str, dict[str, list]] = {
            "edit": {"x": [], "y": []},
            "paths": {"xs": [], "ys": [], "color": []},
            "now": {"x": [], "y": [], "color": [], "i": []},
            "lead": {"x": [], "y": [], "label": []},
            "edges": {"x0": [], "y0": [], "x1": [], "y1": []},
            "hull": {"x": [], "y": []},
        }
        self.src = {k: bm.ColumnDataSource(v) for k, v in columns.items()}
        p = figure(
            width=620, height=560, match_aspect=True, tools="pan,wheel_zoom,reset", title="drag or click to add tokens"
        )
        p.x_range.range_padding = p.y_range.range_padding = 0.2
        p.patch("x", "y", source=self.src["hull"], fill_alpha=0.12, line_alpha=0.4, color="#555")
        p.multi_line("xs", "ys", source=self.src["paths"], color="color", alpha=0.35)
        p.segment("x0", "y0", "x1", "y1", source=self.src["edges"], color="#999", alpha=0.6)
        p.scatter("x", "y", source=self.src["now"], color="color", size=7)
        p.scatter("x", "y", source=self.src["lead"], marker="star", size=18, color="gold", line_color="black")
        p.add_layout(
            bm.LabelSet(
                x="x", y="y", text="label", source=self.src["lead"], x_offset=8, y_offset=6, text_font_size="9pt"
            )
        )
        r = p.scatter("x", "y", source=self.src["edit"], size=9, fill_alpha=0, line_color="black")
        p.add_tools(bm.PointDrawTool(renderers=[r], empty_value=0.0))
        self.plot = p
        self.src["edit"].on_change("data", lambda attr, old, new: self._edited())
        pn = lib("panel")
        self.plane = pn.Column(pn.pane.Bokeh(p))  # shown while the tokens are 2-D
        self.space = pn.Column(self.picture, self.frame, pn.Row(self.azimuth, self.elevation), visible=False)

    def _watch(self) -> None:
        self.preset.param.watch(lambda e: self._new_tokens(), "value")
        self.n.param.watch(lambda e: self._new_tokens(), "value_throttled")
        self.seed.param.watch(lambda e: self._new_tokens(), "value")
        self.A_preset.param.watch(lambda e: None if self._hold else self._new_A(), "value")
        self.A_text.param.watch(lambda e: None if self._hold else self.guard(self.rerun), "value")
        for wdg in (self.azimuth, self.elevation):
            wdg.param.watch(lambda e: self._turn_requested(), "value")
        for wdg in (self.spd, self.alpha, self.layer):
            wdg.param.watch(lambda e: None if self._hold else self.guard(self.rerun), "value")
        self.layers.param.watch(lambda e: self._layers_changed(), "value")

    def _layers_changed(self) -> None:
        """A new depth: the layer shown moves to the last one, then one rerun."""
        self._hold = True
        try:
            L = int(self.layers.value)
            self.layer.param.update(end=L, value=L)
        finally:
            self._hold = False
        self.guard(self.rerun)

    @property
    def d(self) -> int:
        """The dimension of the tokens (2 or 3): typed A is read as a d x d matrix."""
        return int(np.shape(self.tokens)[1])

    def _new_tokens(self) -> None:
        def update() -> None:
            checked_values(self.n, self.seed)
            z = token_preset(self.preset.value, n=int(self.n.value), seed=int(self.seed.value))
            new_d = z.shape[1] != self.d
            self.tokens = z
            if new_d:
                self._fit_A()
            self.rerun()

        self.guard(update)

    def _named_A(self, name: str) -> np.ndarray:
        """The A preset ``name`` (or the control result) for the tokens' dimension; InputError if there is none."""
        if name != "control result":
            return A_preset(name, d=self.d, seed=int(self.seed.value))
        if self.control_A is None:
            raise InputError("no control result yet: solve one in the Control tab")
        if len(self.control_A) != self.d:
            k = len(self.control_A)
            raise InputError(
                f"the control result is a {k} x {k} A but the tokens have d = {self.d}; solve one for these tokens"
            )
        return self.control_A

    def _fit_A(self) -> None:
        """The tokens changed dimension: A becomes its preset in the new dimension, or I where the preset has none
        (rotation and Fig. 1's A are 2-D); no rerun here (the caller reruns once)."""
        name = self.A_preset.value
        try:
            A = self._named_A(name)
        except InputError:
            name, A = "I", np.eye(self.d)
        self._hold = True
        try:
            self.A_preset.value = name
            self.A_text.value = matrix_text(A)
        finally:
            self._hold = False

    def _new_A(self) -> None:
        def update() -> None:
            self.A_text.value = matrix_text(self._named_A(self.A_preset.value))  # triggers the rerun

        self.guard(update)

    def load_A(self, A: np.ndarray) -> None:
        """Use ``A`` (the control view's answer) in the playground."""
        self.control_A = np.asarray(A, dtype=np.float64)
        if self.A_preset.value == "control result":
            self._new_A()
        else:
            self.A_preset.value = "control result"

    def _edited(self) -> None:
        if self._quiet or self.d != 2:  # the plane is hidden while the tokens are 3-D
            return
        data = self.src["edit"].data

        def update() -> None:
            if len(data["x"]) > EDIT_MAX_TOKENS or len(data["y"]) != len(data["x"]):
                raise InputError(
                    f"the edited tokens come as {len(data['x'])} x and {len(data['y'])} y values; the playground "
                    f"takes up to {EDIT_MAX_TOKENS} tokens, one x and one y each"
                )
            self.tokens = np.column_stack([np.asarray(data["x"], float), np.asarray(data["y"], float)])
            self.rerun()

        self.guard(update)

    def state(self) -> HardmaxState:
        """The state the widgets describe (typed A parsed, refused if bad; numbers outside their widgets' ranges
        refused, as a hand-made websocket message can send them)."""
        checked_values(self.alpha, self.layers, self.layer)
        A = parse_matrix(self.A_text.value, "A", d=self.d)
        layers = int(self.layers.value)
        return HardmaxState(
            self.tokens, A, float(self.alpha.value), layers, int(self.layer.value), bool(self.spd.value)
        )

    def rerun(self) -> None:
        """Run the state, then redraw; raises on bad input (the guard keeps the last good picture)."""
        t0 = time.perf_counter()
        state = self.state()
        res = run_hardmax(state)
        self.result, self.A = res, state.A
        on_document(lambda: self._show(res, t0))

    def _show(self, res: HardmaxResult, t0: float) -> None:
        three = res.states.shape[-1] == 3
        if three:
            self._draw_space(res)
        else:
            self.figure3d = None
            self._draw(res)
        self.plane.visible, self.space.visible = not three, three
        self._report(res, time.perf_counter() - t0)

    def _draw_space(self, res: HardmaxResult) -> None:
        """Build the library's 3-D picture of ``res`` (seen from the current angles) and show it."""
        self.figure3d = hardmax_figure(res, azimuth=self.azimuth.value, elevation=self.elevation.value)
        self._render()

    def _turn_requested(self) -> None:
        """The angle changed: turn the last 3-D picture once the server is free (frames asked for meanwhile
        are merged into one, so a player faster than the drawing does not queue them up)."""
        if self.figure3d is None or self._turn_pending:
            return
        self._turn_pending = True

        def now() -> None:
            self._turn_pending = False
            self.guard(self.turn_picture)

        on_document(now)

    def turn_picture(self) -> None:
        """Show the last 3-D picture from the current azimuth and elevation; the dynamics are not rerun."""
        if self.figure3d is None:
            raise ValueError("no 3-D picture to turn: choose 3-D tokens")
        turn(self.figure3d, azimuth=self.azimuth.value, elevation=self.elevation.value)
        self._render()

    def _render(self) -> None:
        """The 3-D picture as a PNG in the page. It is laid out (constrained layout) on its first frame only:
        the layout is then frozen, so a turn redraws the artists and lays out nothing."""
        fig = self.figure3d
        t0 = time.perf_counter()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=LIVE_DPI, pil_kwargs={"compress_level": 1})  # fast, a little larger
        if fig.get_layout_engine() is not None:
            fig.set_layout_engine("none")
        self.picture.object = buf.getvalue()
        ms = 1000 * (time.perf_counter() - t0)
        self.frame.object = (
            f"<small>seen from azimuth {self.azimuth.value}°, elevation {self.elevation.value}°: drawn in "
            f'<span id="frame-ms">{ms:.0f}</span> ms (▶ turns it)</small>'
        )

    def _draw(self, res: HardmaxResult) -> None:
        S, k = res.states, res.state.layer  # (L+1, n, 2)
        follow = res.follow
        first = np.where(follow.any(axis=1), follow.argmax(axis=1), np.arange(len(follow)))
        # as the exported figure paints them (attndyn.plotting, Fig. 2): the k-th followed token has colour k
        own = {int(j): color(k) for k, j in enumerate(np.nonzero(follow.any(axis=0))[0])}
        colors = [own.get(int(j), "#bbbbbb") for j in first]
        lead = res.leaders_at(k)
        since = dict(zip(res.leaders.indices, res.leaders.since))
        ii, jj = np.nonzero(follow & ~np.eye(len(follow), dtype=bool))
        self._quiet = True
        try:
            self.src["edit"].data = {"x": S[0, :, 0].tolist(), "y": S[0, :, 1].tolist()}
        finally:
            self._quiet = False
        self.src["paths"].data = {"xs": S[: k + 1, :, 0].T.tolist(), "ys": S[: k + 1, :, 1].T.tolist(), "color": colors}
        self.src["now"].data = {"x": S[k, :, 0], "y": S[k, :, 1], "color": colors, "i": list(range(len(colors)))}
        self.src["lead"].data = {
            "x": S[k, lead, 0],
            "y": S[k, lead, 1],
            "label": [f"{i} (layer {since[i]})" for i in lead],
        }
        self.src["edges"].data = {"x0": S[k, ii, 0], "y0": S[k, ii, 1], "x1": S[k, jj, 0], "y1": S[k, jj, 1]}
        hull = np.asarray(res.hull, dtype=int)
        pts = S[k, hull] if len(hull) >= 2 else np.zeros((0, 2))
        order = _hull_order(pts) if len(pts) else np.zeros(0, dtype=int)
        self.src["hull"].data = {"x": pts[order, 0], "y": pts[order, 1]}

    def _report(self, res: HardmaxResult, seconds: float) -> None:
        k = res.state.layer
        lead = ", ".join(map(str, res.leaders_at(k))) or "none"
        emerged = ", ".join(f"{i}: layer {s}" for i, s in zip(res.leaders.indices, res.leaders.since)) or "none"
        rounding = ", ".join(f"token {e.index} at layer {e.layer}" for e in res.leaders.rounding) or "none"
        notes = "".join(f"<br><i>note: {escape(n)}</i>" for n in res.notes)
        self.status.object = (
            f'<b>leaders at layer {k}:</b> <span id="leaders">{lead}</span><br>'
            f"<b>emerged:</b> {emerged}<br><b>rounding events:</b> {rounding}<br>"
            f'<b>verdict:</b> <span id="verdict">{escape(res.verdict())}</span>{notes}<br>'
            f"<small>n = {len(res.states[0])}, {res.state.layers} layers: computed and drawn in "
            f'<span id="redraw-ms">{1000 * seconds:.0f}</span> ms</small>'
        )

    def figure(self) -> Any:
        res = exported(self.result)
        if res.states.shape[-1] == 3:  # as seen now
            return hardmax_figure(res, azimuth=self.azimuth.value, elevation=self.elevation.value)
        return hardmax_figure(res)

    def inputs(self) -> dict[str, Any]:
        return hardmax_inputs(exported(self.result).state)

    def panel(self) -> Any:
        pn = lib("panel")

        controls = pn.Column(
            self.preset, pn.Row(self.n, self.seed), self.A_preset, self.A_text, self.spd, self.alpha, self.layers,
            self.layer, downloads("hardmax", self.figure, self.inputs, self.guard), width=360,
        )  # fmt: skip
        return pn.Row(controls, pn.Column(self.guard.pane, self.plane, self.space, self.status))
