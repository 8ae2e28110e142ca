"""What every page shares: the one-line error, guarded callbacks (each edit in a worker thread, under a time and
memory budget) and the export buttons."""

from __future__ import annotations

import html
import io
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from ..._errors import InputError
from .._log import quiet_error

__all__ = [
    "Guard",
    "Downloads",
    "downloads",
    "served_document",
    "escape",
    "exported",
    "on_document",
    "lib",
    "checked_values",
]

T = TypeVar("T")


#: The most tokens one edit may send (a dragged token table), and the most solver steps of one softmax run: what
#: the widgets can ask for, with room; a page that sends more (a hand-made websocket message) is refused in one line.
EDIT_MAX_TOKENS = 1000
EDIT_MAX_STEPS = 20_000

#: The budget of one edit (a widget change and the runs it starts): seconds, and bytes the process's resident memory
#: may grow by. The run loops check both at every step (attndyn._budget.run_budget) and stop the run past either; a
#: run whose memory estimate is over it is refused before it starts. One line in the page says so.
EDIT_SECONDS = 15.0
EDIT_MEMORY = 1e9
EDIT_REMEDY = "ask for less (fewer tokens, layers or steps); the page keeps its last result"

#: Worker threads for the edits of all sessions: the server's event loop only hands edits over, so it keeps
#: answering other pages (and this one) while an edit runs. One page runs its edits one at a time.
EDIT_THREADS = 4
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _edit_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=EDIT_THREADS, thread_name_prefix="attndyn-edit")
        return _pool


def served_document() -> Any:
    """The Bokeh document of the session being served in this thread, or None (tests, notebooks: no server)."""
    pn = lib("panel")

    doc = pn.state.curdoc
    return doc if doc is not None and doc.session_context is not None else None


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
    """Runs a page's edits; bad input, or an edit past its budget, shows one line in the page (``error`` pane) and
    keeps the last good state.

    On a server, an edit runs in a worker thread (the event loop stays free for every session) under the budget
    :data:`EDIT_SECONDS` / :data:`EDIT_MEMORY`, one at a time per page; edits started inside an edit run at once, in
    its thread. Without a server (tests, notebooks), and with ``now=True`` (the page's first state, an export
    that must answer at once), the edit runs now, in the caller's thread."""

    def __init__(self) -> None:
        pn = lib("panel")

        self.pane = pn.pane.HTML("", css_classes=["explore-error"], sizing_mode="stretch_width")
        self._local = threading.local()  # depth: updates run inside updates (a preset that fills a text box)
        self._lock = threading.Lock()  # one edit of this page at a time in the workers
        self._owner: int | None = None  # the worker thread running this page's edit

    def __call__(self, update: Callable[[], Any], *, now: bool = False) -> None:
        doc = None if now or self._owner == threading.get_ident() else served_document()
        if doc is None:
            self._run(update)
        else:
            _edit_pool().submit(self._in_worker, doc, update)

    def _in_worker(self, doc: Any, update: Callable[[], Any]) -> None:
        from panel.io.state import set_curdoc

        with self._lock, set_curdoc(doc):  # changes to the page reach the browser on the loop's next tick
            self._owner = threading.get_ident()
            try:
                self._run(update)
            finally:
                self._owner = None

    def _run(self, update: Callable[[], Any]) -> bool:
        from ..._budget import run_budget

        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        try:
            if depth:  # inside an edit: its budget holds
                update()
            else:
                self.pane.object = ""
                with run_budget(EDIT_SECONDS, EDIT_MEMORY, owner="the explorer", remedy=EDIT_REMEDY, work="this edit"):
                    update()
        except Exception as exc:  # user input: one line in the page, never a traceback on the server
            self.pane.object = f'<span id="error" style="color:#b00">{escape(quiet_error(exc))}</span>'
            return False
        finally:
            self._local.depth = depth
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

        from .._export import bundle, figure_bytes

        def make(kind: str) -> Callable[[], io.BytesIO]:
            def callback() -> io.BytesIO:
                out: list[bytes] = [b""]

                def work() -> None:
                    out[0] = bundle(inputs()) if kind == "zip" else figure_bytes(figure(), kind)

                guard(work, now=True)
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
