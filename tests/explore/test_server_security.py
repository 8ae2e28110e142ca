"""The explorer's server answers only this machine's names and serves no module-import route (issue 34)."""

from __future__ import annotations

import contextlib
import http.client
import io
import threading

import pytest

pytest.importorskip("panel")


@pytest.fixture(scope="module")
def port():
    from attndyn.explore._app import serve

    server = serve(0, open_browser=False)
    thread = threading.Thread(target=server.io_loop.start, daemon=True)
    thread.start()
    yield server.port
    server.io_loop.add_callback(server.io_loop.stop)
    thread.join(timeout=30)
    server.stop()


def _get(port: int, path: str, host: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.putrequest("GET", path, skip_host=True)
    conn.putheader("Host", host)
    conn.endheaders()
    res = conn.getresponse()
    body = res.read()
    conn.close()
    return res.status, body


@pytest.mark.parametrize("host", ["localhost:{port}", "127.0.0.1:{port}"])
def test_the_page_answers_this_machines_names(port, host):
    status, body = _get(port, "/", host.format(port=port))
    assert status == 200 and b"<html" in body.lower()


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "localhost:1", "localhost", "10.0.0.5:{port}"])
def test_an_unknown_host_header_is_refused(port, host):
    """A DNS-rebinding page sends its own name: 403 for the page, the static files and the websocket alike."""
    for path in ("/", "/static/js/bokeh.min.js", "/ws"):
        assert _get(port, path, host.format(port=port))[0] == 403


def test_no_route_imports_a_module(port):
    """GET /components/this/x/y/z printed the Zen of Python on the server (Panel imported `this`)."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        status, _ = _get(port, "/components/this/x/y/z", f"localhost:{port}")
        assert _get(port, "/components/panel/pane/Markdown/_stylesheets/x.css", f"localhost:{port}")[0] == 404
    assert status == 404 and "Beautiful is better than ugly" not in printed.getvalue()
    assert _get(port, "/static/js/bokeh.min.js", f"localhost:{port}")[0] == 200  # the files the page needs stay
