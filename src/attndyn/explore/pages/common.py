"""What every page shares: the one-line error, guarded callbacks and the export buttons."""

from __future__ import annotations

import html
import io
from collections.abc import Callable
from typing import Any, TypeVar

from ..._errors import InputError
from .._log import quiet_error

__all__ = ["Guard", "Downloads", "downloads", "escape", "exported", "on_document", "lib", "checked_values"]

T = TypeVar("T")


#: The most tokens one edit may send (a dragged token table), and the most solver steps of one softmax run: what
#: the widgets can ask for, with room; a page that sends more (a hand-made websocket message) is refused in one line.
EDIT_MAX_TOKENS = 1000
EDIT_MAX_STEPS = 20_000


def checked_values(*widgets: Any) -> None:
    """Refuse, in one line, a number outside its widget's range (``start``, ``end``) or not finite: the server
    checks what a page sends, since nothing stops a websocket message from setting ``value`` beyond the slider."""
    import math

    for w in widgets:
        v, lo, hi = w.value, getattr(w, "start", None), getattr(w, "end", None)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"{w.name} = {v!r} is not a number")
        if not math.isfinite(v) or (lo is not None and v < lo) or (hi is not None and v > hi):
            raise InputError(f"{w.name} = {v!r} is outside its range ({lo} to {hi})")


def escape(text: str) -> str:
    return html.escape(text, quote=True)


def lib(name: str) -> Any:
    """An optional module of the explore extra (``panel``, ``bokeh.models``, ``bokeh.plotting``), imported on
    first use; typed ``Any``, since the pages only pass values through Panel's and Bokeh's widgets."""
    import importlib

    return importlib.import_module(name)


def on_document(draw: Callable[[], None]) -> None:
    """Apply changes to Bokeh models with the document's lock: on the server's next tick (a page being
    served), or now (no server: tests, notebooks)."""
    pn = lib("panel")

    doc = pn.state.curdoc
    if doc is None or doc.session_context is None:
        draw()
    else:
        doc.add_next_tick_callback(draw)


class Guard:
    """Runs a page's update; bad input shows one line in the page (``error`` pane) and keeps the last good state."""

    def __init__(self) -> None:
        pn = lib("panel")

        self.pane = pn.pane.HTML("", css_classes=["explore-error"], sizing_mode="stretch_width")
        self.depth = 0  # updates run inside updates (a preset that fills a text box): the outermost clears the line

    def __call__(self, update: Callable[[], Any]) -> bool:
        self.depth += 1
        if self.depth == 1:
            self.pane.object = ""
        try:
            update()
        except Exception as exc:  # user input: one line in the page, never a traceback on the server
            self.pane.object = f'<span id="error" style="color:#b00">{escape(quiet_error(exc))}</span>'
            return False
        finally:
            self.depth -= 1
        return True


def exported(result: T | None) -> T:
    """The page's current result, for an export button; ValueError (the one line in the page) while there is
    none yet."""
    if result is None:
        raise ValueError("nothing to export yet")
    return result


class Downloads:
    """A page's export buttons: the current figure as PNG and SVG, the current state as a zip of CLI inputs.

    ``waiting`` (a page with no figure until the user acts, e.g. the Control tab before A is chosen): the figure
    buttons start disabled, with ``waiting`` as their tooltip, until :meth:`figures_ready` (a click would
    otherwise download an empty file)."""

    def __init__(
        self,
        stem: str,
        figure: Callable[[], Any],
        inputs: Callable[[], dict[str, Any]],
        guard: Guard,
        *,
        waiting: str | None = None,
    ) -> None:
        pn = lib("panel")

        from ..export import bundle, figure_bytes

        def make(kind: str) -> Callable[[], io.BytesIO]:
            def callback() -> io.BytesIO:
                out: list[bytes] = [b""]

                def work() -> None:
                    out[0] = bundle(inputs()) if kind == "zip" else figure_bytes(figure(), kind)

                guard(work)
                return io.BytesIO(out[0])

            return callback

        def button(kind: str, filename: str, label: str, width: int) -> Any:
            return pn.widgets.FileDownload(callback=make(kind), filename=filename, label=label, width=width)

        # labels short enough for the 360-pixel column of controls (three in one row were cut off)
        self.png = button("png", f"{stem}.png", "figure (PNG)", 165)
        self.svg = button("svg", f"{stem}.svg", "figure (SVG)", 165)
        self.state = button("zip", f"{stem}-inputs.zip", "state for the CLI (zip: JSON, NPY)", 340)
        self.waiting = waiting
        self.panel = pn.Column(pn.Row(self.png, self.svg), self.state)
        self.figures_ready(waiting is None)

    def figures_ready(self, ready: bool) -> None:
        """Enable the figure buttons (there is a figure to export), or disable them with the waiting tooltip."""
        for b in (self.png, self.svg):
            b.disabled = not ready
            b.description = None if ready else self.waiting


def downloads(stem: str, figure: Callable[[], Any], inputs: Callable[[], dict[str, Any]], guard: Guard) -> Any:
    """The three export buttons of :class:`Downloads`, laid out for a column of controls."""
    return Downloads(stem, figure, inputs, guard).panel
