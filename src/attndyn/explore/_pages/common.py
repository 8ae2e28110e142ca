"""What every page shares: the one-line error, guarded callbacks and the export buttons."""

from __future__ import annotations

import html
import io
from collections.abc import Callable
from typing import Any, TypeVar

from ..._errors import InputError
from .._log import quiet_error

__all__ = ["Guard", "downloads", "escape", "exported", "on_document", "lib", "checked_values"]

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


def downloads(stem: str, figure: Callable[[], Any], inputs: Callable[[], dict[str, Any]], guard: Guard) -> Any:
    """Three buttons: the current figure as PNG and SVG, and the current state as a zip of CLI inputs."""
    pn = lib("panel")

    from .._export import bundle, figure_bytes

    def make(kind: str) -> Callable[[], io.BytesIO]:
        def callback() -> io.BytesIO:
            out: list[bytes] = [b""]

            def work() -> None:
                out[0] = bundle(inputs()) if kind == "zip" else figure_bytes(figure(), kind)

            guard(work)
            return io.BytesIO(out[0])

        return callback

    names = {"png": f"{stem}.png", "svg": f"{stem}.svg", "zip": f"{stem}-inputs.zip"}
    labels = {"png": "figure (PNG)", "svg": "figure (SVG)", "zip": "state (JSON/NPY for the CLI)"}
    return pn.Row(*(pn.widgets.FileDownload(callback=make(k), filename=f, label=labels[k]) for k, f in names.items()))
