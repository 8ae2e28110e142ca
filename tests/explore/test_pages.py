"""The Panel pages without a browser: edits rerun through the views, bad input shows one line and keeps the last good state."""

from __future__ import annotations

import numpy as np
import pytest

import attndyn

pn = pytest.importorskip("panel")


@pytest.fixture
def playground():
    from attndyn.explore.pages.hardmax import Playground

    return Playground()


def _shown(page) -> str:
    return page.status.object.split('<span id="leaders">')[1].split("</span>")[0]


def test_playground_shows_the_library_leaders_after_edits(playground):
    playground.A_text.value = "2 1; 1 1"
    playground.layers.value = 12
    z = playground.tokens
    lib = attndyn.leaders(attndyn.hardmax(z, alpha=0.5, A=[[2, 1], [1, 1]], layers=12))
    assert _shown(playground) == ", ".join(map(str, lib.indices))
    assert playground.layer.value == 12 and playground.result.state.layers == 12


@pytest.mark.parametrize("bad", ["nan 0; 0 1", "1 2 3", "", "1 0; 0 1; 1 1"])
def test_bad_typed_A_shows_one_line_and_keeps_the_last_good_state(playground, bad):
    before = playground.result
    playground.A_text.value = bad
    assert playground.result is before
    line = playground.guard.pane.object
    assert line.count('id="error"') == 1 and "error: A" in line and "\n" not in line
    playground.A_text.value = "1 0; 0 2"  # a good entry clears the message
    assert playground.guard.pane.object == "" and playground.result is not before


def test_spd_required_refuses_a_rotation(playground):
    playground.spd.value = True
    before = playground.result
    playground.A_preset.value = "rotation"
    assert playground.result is before and "not symmetric positive definite" in playground.guard.pane.object


def test_dragged_tokens_rerun(playground):
    data = dict(playground.src["edit"].data)
    data["x"] = [*data["x"], 3.0]
    data["y"] = [*data["y"], 3.0]
    playground.src["edit"].data = data  # what Bokeh's PointDrawTool sends when a point is added
    assert len(playground.result.state.tokens) == 9
    assert 8 in playground.result.leaders.indices  # the new far corner leads


def test_control_result_loads_into_the_playground(playground):
    from attndyn.explore.pages.control import ControlPage

    playground.preset.value = "Fig. 1: one step"
    page = ControlPage(playground)
    page.take_tokens()
    page.leaders.value = "1, 2"
    page.run()
    assert page.result.verdict == "reached"
    page._load()
    assert np.allclose(playground.result.state.A, page.result.A)
    assert playground.result.leaders.indices == page.result.leaders_found
    page.leaders.value = "7"
    page.guard(page.run)
    assert "token 7 does not exist" in page.guard.pane.object


def test_softmax_page_and_downloads():
    from attndyn.explore.pages.softmax import SoftmaxPage

    page = SoftmaxPage()
    assert page.result.regime == "polytope"
    before = page.result
    page.V.value = "1 0; 0 inf"
    assert page.result is before and "non-finite" in page.guard.pane.object
    page.method.value, page.step.value = "discrete", 1.0
    page.V.value = "-1 0; 0 -1"
    assert page.result is before and "singular" in page.guard.pane.object
    assert set(page.inputs()) == {"tokens.npy", "Q.npy", "K.npy", "V.npy", "state.json", "command.txt"}
    png = page.figure()
    from attndyn.explore.export import figure_bytes

    assert figure_bytes(png, "png")[:4] == b"\x89PNG" and b"<svg" in figure_bytes(png, "svg")[:400]


def test_app_builds_all_tabs():
    from attndyn.explore.app import build

    page = build(None)
    tabs = page.objects[1]
    assert [t for t in tabs._names] == ["Hardmax playground", "Softmax regimes", "Control", "Sentiment"]


def test_exports_before_any_result_say_so(playground):
    from attndyn.explore.pages.softmax import SoftmaxPage

    for page in (playground, SoftmaxPage()):
        page.result = None
        with pytest.raises(ValueError, match="nothing to export yet"):
            page.figure()
        with pytest.raises(ValueError, match="nothing to export yet"):
            page.inputs()
