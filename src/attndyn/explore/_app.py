"""The explorer app: five pages in tabs, served by Panel (Bokeh's server) from the installed packages only.

Every script and style sheet comes from the local server (Bokeh's and Panel's bundled files under
``/static``); no template, font or CDN is used, so the page works with the network off.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

__all__ = ["build", "serve", "warm_up", "free_port", "allowed_hosts"]

TITLE = "attndyn explore"


def build(model: str | Path | None = None) -> Any:
    """One session's page: the five views in tabs (the sentiment tab needs ``model``, a trained run folder)."""
    import panel as pn

    from ._pages.control import ControlPage
    from ._pages.hardmax import Playground
    from ._pages.sentiment import SentimentPage
    from ._pages.softmax import SoftmaxPage
    from ._pages.sphere import SpherePage

    playground = Playground()
    control = ControlPage(playground)
    tabs = pn.Tabs(
        ("Hardmax playground", playground.panel()),
        ("Softmax regimes", SoftmaxPage().panel()),
        ("Control", control.panel()),
        ("Sentiment", SentimentPage(model).panel()),
        ("Sphere", SpherePage().panel()),
        dynamic=False,
    )
    header = pn.pane.HTML(
        f"<h2 style='margin:4px 0'>{TITLE}</h2><small>hardmax (Alcalde, Fantuzzi &amp; Zuazua 2024) and softmax "
        "(Geshkovski, Letrouit, Polyanskiy &amp; Rigollet 2023) self-attention dynamics, live</small>"
    )
    return pn.Column(header, tabs, sizing_mode="stretch_width")


def free_port(address: str = "127.0.0.1") -> int:
    """A port nobody listens on now (the OS picks it)."""
    import socket

    with socket.socket() as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


def warm_up() -> None:
    """Compile the hardmax kernels and import the views once, so the first page answers quickly."""
    import numpy as np

    from ._hardmax_view import HardmaxState, run_hardmax

    run_hardmax(HardmaxState(np.random.default_rng(0).uniform(-1, 1, (20, 2)), np.eye(2), layers=5))


# The route of Panel's ComponentResourceHandler: /components/<module>/<class>/<attribute>/<path> imports the
# module its URL names (GET /components/this/x/y/z ran `import this` on the server). The pages use none of it.
_MODULE_IMPORT_ROUTE = "/components/"


def allowed_hosts(port: int) -> frozenset[str]:
    """The Host headers the explorer answers: this machine's names with the port (a page of another site, even one
    whose name resolves here by DNS rebinding, sends its own name and is refused)."""
    return frozenset(f"{name}:{port}" for name in ("localhost", "127.0.0.1", "[::1]"))


def _harden(app: Any, port: int) -> None:
    """Drop the module-import route from the tornado application ``app`` and answer 403 to any request whose Host
    header is not one of :func:`allowed_hosts` (the websocket's Origin is checked by Bokeh as well)."""
    from tornado.web import ErrorHandler

    for router in (app.wildcard_router, app.default_router):
        router.rules = [r for r in router.rules if not _is_module_route(r)]
    hosts = allowed_hosts(port)
    find = app.find_handler

    def find_handler(request: Any, **kwargs: Any) -> Any:
        if request.host.lower() not in hosts:
            return app.get_handler_delegate(request, ErrorHandler, {"status_code": 403})
        return find(request, **kwargs)

    app.find_handler = find_handler


def _is_module_route(rule: Any) -> bool:
    regex = getattr(rule.matcher, "regex", None)
    return regex is not None and regex.pattern.startswith(_MODULE_IMPORT_ROUTE)


def serve(
    port: int = 0, *, open_browser: bool = True, model: str | Path | None = None, address: str = "127.0.0.1"
) -> Any:
    """Start the server on ``address:port`` (0: a free port) in this thread's event loop; returns the server.

    The caller runs ``server.io_loop.start()`` (blocking) or stops it with ``server.stop()``.
    """
    import panel as pn

    port = port or free_port(address)
    server = pn.serve(
        {"/": lambda: build(model)},
        port=port,
        address=address,
        show=False,
        start=False,
        title=TITLE,
        websocket_origin=[f"localhost:{port}", f"127.0.0.1:{port}"],
        verbose=False,
    )
    _harden(server._tornado, port)
    threading.Thread(target=warm_up, daemon=True).start()
    if open_browser:
        import webbrowser

        server.io_loop.add_callback(lambda: webbrowser.open(f"http://localhost:{server.port}/"))
    return server
