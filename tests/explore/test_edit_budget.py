"""Issue 34 (7): an edit runs under a time and memory budget, with one line in the page when it is exceeded, and in
a worker thread, so that the server keeps answering every session while it runs."""

from __future__ import annotations

import http.client
import threading
import time

import pytest

import attndyn
import attndyn._budget
from attndyn.explore._pages import common

pn = pytest.importorskip("panel")


@pytest.fixture
def playground():
    from attndyn.explore._pages.hardmax import Playground

    return Playground()


def _error(page) -> str:
    line = page.guard.pane.object
    assert line.count('id="error"') == 1 and "\n" not in line, line
    return line


def test_an_edit_past_its_time_budget_is_stopped_with_one_line(monkeypatch):
    from attndyn.explore._pages.softmax import SoftmaxPage

    page = SoftmaxPage()
    kept = page.result
    monkeypatch.setattr(common, "EDIT_SECONDS", 0.2)
    page.step.value = 0.003  # time 10: 3,334 rk4 steps of 40 tokens, far more than 0.2 s
    assert page.result is kept
    assert "error: this edit ran past the explorer&#x27;s time budget of 0.2 s (softmax rk4, step " in _error(page)
    assert "and was stopped; ask for less (fewer tokens, layers or steps)" in _error(page)
    monkeypatch.setattr(common, "EDIT_SECONDS", 15.0)
    page.step.value = 0.1  # within the budget again: the line goes, the run shows
    assert page.guard.pane.object == "" and page.result is not kept


def test_an_edit_over_its_memory_budget_is_refused_before_it_runs(playground, monkeypatch):
    kept = playground.result
    monkeypatch.setattr(common, "EDIT_MEMORY", 1000.0)
    playground.layers.value = 100
    assert playground.result is kept
    assert "error: this edit would keep about " in _error(playground)
    assert "over the explorer&#x27;s memory budget of 1 KB; ask for less" in _error(playground)


def test_an_edit_whose_memory_grows_past_the_budget_is_stopped(playground, monkeypatch):
    kept = playground.result
    monkeypatch.setattr(attndyn._budget, "resident_bytes", lambda: 1e15)  # as if the run had taken a petabyte
    playground.layers.value = 40
    assert playground.result is kept
    assert "error: this edit took " in _error(playground) and "over the explorer&#x27;s memory budget of 1 GB" in (
        _error(playground)
    )


def test_without_a_budget_the_library_is_unchanged():
    traj = attndyn.hardmax([[1.0, 0.0], [0.0, 1.0], [0.3, 0.2]], layers=50)
    assert traj.stats.steps == 50
    with attndyn._budget.run_budget(60, 1e12, owner="a test", remedy="none"):
        assert attndyn.hardmax([[1.0, 0.0], [0.0, 1.0], [0.3, 0.2]], layers=50).stats.steps == 50


def test_an_edit_runs_off_the_event_loop_and_other_sessions_are_answered(monkeypatch):
    """A slow edit of one session (it waits until the test lets it go); meanwhile a new session's page is served, and
    the edit's result reaches its page when it ends. (Before, edits ran on the event loop: the page waited for the
    edit, here for ever.)"""
    from attndyn.explore import _app as app
    from attndyn.explore._pages import hardmax

    real, release, finished, pages = hardmax.run_hardmax, threading.Event(), threading.Event(), []

    def slow(state):
        if state.layers == 27:
            release.wait(120)
            finished.set()
        return real(state)

    init = hardmax.Playground.__init__

    def record(self):
        init(self)
        pages.append((self, pn.state.curdoc))

    monkeypatch.setattr(hardmax, "run_hardmax", slow)
    monkeypatch.setattr(hardmax.Playground, "__init__", record)
    server = app.serve(0, open_browser=False)
    thread = threading.Thread(target=server.io_loop.start, daemon=True)
    thread.start()
    try:
        assert _get(server.port) == 200
        page, doc = pages[0]

        def edit():
            page.layers.value = 27  # as the slider's websocket message does, on the event loop

        doc.add_next_tick_callback(edit)
        time.sleep(0.5)
        assert _get(server.port, timeout=60) == 200 and not finished.is_set()  # served while the edit runs
        release.set()
        assert finished.wait(60)
        end = time.monotonic() + 30
        while page.result.state.layers != 27 and time.monotonic() < end:
            time.sleep(0.1)
        assert page.result.state.layers == 27 and page.guard.pane.object == ""
    finally:
        release.set()
        server.io_loop.add_callback(server.io_loop.stop)
        thread.join(timeout=30)
        server.stop()


def _get(port: int, timeout: float = 120) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.request("GET", "/", headers={"Host": f"localhost:{port}"})
    res = conn.getresponse()
    res.read()
    conn.close()
    return res.status


def test_a_solve_whose_estimate_exceeds_the_time_left_is_refused_before_it_starts(playground, monkeypatch):
    """A solver call cannot be stopped part-way: inside an edit it is refused first when its estimated time is more
    than the edit has left (the control page's linear program)."""
    from attndyn.explore._pages.control import ControlPage

    page = ControlPage(playground)
    page.leaders.value = "0, 1"
    monkeypatch.setattr(common, "EDIT_SECONDS", 1e-6)
    page.guard(page.run)
    assert page.result is None
    line = _error(page)
    assert "error: the LP of " in line and " constraints on a 2 x 2 matrix would take about " in line, line
    assert "left of the explorer&#x27;s time budget of 1e-06 s; ask for less" in line
    monkeypatch.setattr(common, "EDIT_SECONDS", 15.0)
    page.guard(page.run)
    assert page.guard.pane.object == "" and page.result is not None


def test_without_a_budget_a_solve_is_not_held_to_one():
    from attndyn.control import choose_A

    Z = [[2.0, 0.0], [0.0, 2.0], [-1.0, -1.5], [0.1, 0.2]]
    with attndyn._budget.run_budget(60, 1e12, owner="a test", remedy="none"):
        assert choose_A(Z, [0, 1]).verdict == "reached"
    assert choose_A(Z, [0, 1]).verdict == "reached"
