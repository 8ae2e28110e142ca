"""The Panel pages without a browser: edits rerun through the views, bad input shows one line and keeps the last good state."""

from __future__ import annotations

import numpy as np
import pytest

import attndyn
import attndyn.explore._hardmax_view

pn = pytest.importorskip("panel")


@pytest.fixture
def playground():
    from attndyn.explore._pages.hardmax import Playground

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


def test_the_live_view_colours_tokens_as_the_exported_figure_does(playground):
    from attndyn.plotting._trajectories import _token_colours

    playground.A_text.value = "2 1; 1 1"
    inner, _, _ = _token_colours(playground.result.follow)
    assert list(playground.src["now"].data["color"]) == [c[0] for c in inner]
    assert len(set(playground.src["now"].data["color"])) >= 2  # more than one leader: colours differ


@pytest.fixture
def space(playground):
    """The playground on 100 random 3-D tokens with a random SPD A."""
    playground.n.value = 100
    playground.preset.value = "3-D: random cloud"
    playground.A_preset.value = "random SPD"
    return playground


def test_3d_tokens_show_the_library_leaders_in_the_turning_picture(space):
    res = space.result
    z, A = space.tokens, res.state.A  # A as typed in the box: the preset to 6 significant digits
    assert z.shape == (100, 3) and space.guard.pane.object == ""
    assert np.allclose(A, attndyn.explore._hardmax_view.A_preset("random SPD", d=3, seed=0), rtol=1e-5)
    lib = attndyn.leaders(attndyn.hardmax(z, alpha=0.5, A=A, layers=30))
    assert _shown(space) == ", ".join(map(str, lib.indices))
    assert space.space.visible and not space.plane.visible
    assert space.figure3d.axes[0].name == "3d" and space.picture.object[:4] == b"\x89PNG"
    space.layer.value = 3  # the picture follows the layer shown: the leaders there, with the layer they emerged at
    labels = sorted(t.get_text().strip() for t in space.figure3d.axes[0].texts)
    assert space.result.state.layer == 3 and labels
    assert labels == sorted(f"{i} (layer {k})" for i, k in zip(lib.indices, lib.since) if k <= 3)


def test_turning_changes_the_view_and_never_reruns(space, monkeypatch):
    from attndyn.explore._pages import hardmax as page_module

    res, fig, before = space.result, space.figure3d, space.picture.object
    monkeypatch.setattr(page_module, "run_hardmax", lambda state: pytest.fail("turning reran the dynamics"))
    space.azimuth.value = 35
    space.elevation.value = 60
    ax = fig.axes[0]
    assert (ax.azim, ax.elev) == (35, 60) and space.figure3d is fig and space.result is res
    assert space.picture.object != before and 'id="frame-ms"' in space.frame.object
    exported = space.figure().axes[0]  # the export is seen from where the reader looks
    assert (exported.azim, exported.elev) == (35, 60)


@pytest.mark.parametrize("bad", ["1 0; 0 1", "1 0 0; 0 nan 0; 0 0 1", "1 0 0; 0 1 0"])
def test_bad_typed_3d_A_shows_one_line_and_keeps_the_last_good_state(space, bad):
    before = space.result
    space.A_text.value = bad
    line = space.guard.pane.object
    assert space.result is before and line.count('id="error"') == 1 and "error: A" in line and "\n" not in line
    space.A_text.value = "2 0 0; 0 1 0; 0 0 1"
    assert space.guard.pane.object == "" and space.result.state.A.shape == (3, 3)


def test_a_2d_only_A_preset_is_refused_for_3d_tokens_and_2d_tokens_come_back_to_the_plane(space):
    before = space.result
    space.A_preset.value = "rotation"
    assert space.result is before
    assert (
        "does not exist for d = 3; choose one of I, diagonal, random SPD or type a 3 x 3 A" in space.guard.pane.object
    )
    space.control_A = np.eye(2)  # a control result solved for 2-D tokens
    space.A_preset.value = "control result"
    assert (
        space.result is before
        and "the control result is a 2 x 2 A but the tokens have d = 3" in space.guard.pane.object
    )
    space.A_preset.value = "diagonal"
    space.preset.value = "Fig. 2: square polytope"  # back to the plane: A is diagonal in d = 2
    assert space.guard.pane.object == "" and space.plane.visible and not space.space.visible
    assert space.figure3d is None
    assert space.A_text.value == "2 0; 0 1" and space.result.state.tokens.shape == (8, 2)
    assert _shown(space) == "0, 1, 2, 3"
    space.preset.value = "Fig. 1: one step"
    space.A_preset.value = "rotation"
    space.preset.value = "3-D: cube polytope"  # rotation has no 3-D form: A falls back to I
    assert space.A_preset.value == "I" and space.A_text.value == "1 0 0; 0 1 0; 0 0 1"
    assert _shown(space) == "0, 1, 2, 3, 4, 5, 6, 7" and space.guard.pane.object == ""


def test_3d_downloads(space):
    from attndyn.explore._export import figure_bytes

    files = space.inputs()
    assert files["tokens.npy"].shape == (100, 3) and files["A.npy"].shape == (3, 3)
    assert files["state.json"]["tokens"] == space.tokens.tolist()
    fig = space.figure()
    assert figure_bytes(fig, "png")[:4] == b"\x89PNG" and b"<svg" in figure_bytes(fig, "svg")[:400]


def test_control_result_loads_into_the_playground(playground):
    from attndyn.explore._pages.control import ControlPage

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
    from attndyn.explore._pages.softmax import SoftmaxPage

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
    from attndyn.explore._export import figure_bytes

    assert figure_bytes(png, "png")[:4] == b"\x89PNG" and b"<svg" in figure_bytes(png, "svg")[:400]


def test_app_builds_all_tabs():
    from attndyn.explore._app import build

    page = build(None)
    tabs = page.objects[1]
    assert [t for t in tabs._names] == ["Hardmax playground", "Softmax regimes", "Control", "Sentiment", "Sphere"]


def test_exports_before_any_result_say_so(playground):
    from attndyn.explore._pages.softmax import SoftmaxPage

    for page in (playground, SoftmaxPage()):
        page.result = None
        with pytest.raises(ValueError, match="nothing to export yet"):
            page.figure()
        with pytest.raises(ValueError, match="nothing to export yet"):
            page.inputs()


def test_control_exports_pair_the_A_with_the_request_it_answers(playground):
    """Issue 34 (6): the zip paired an A solved for leaders 0,2 with a command.txt for 1,3 typed afterwards."""
    from attndyn.explore._pages.control import ControlPage

    playground.preset.value = "Fig. 1: one step"
    page = ControlPage(playground)
    page.take_tokens()
    page.leaders.value = "1, 2"
    page.run()
    A = page.result.A
    page.leaders.value = "0"  # typed after the solve, not solved
    files = page.inputs()
    assert "--leaders 1,2 " in files["command.txt"] and files["state.json"]["leaders"] == [1, 2]
    assert np.array_equal(files["A.npy"], A)


def test_control_figure_buttons_wait_for_a_solve(playground):
    """Issue 34: "figure (PNG)" before a solve downloaded 0 bytes; the buttons are disabled (and say why) until
    there is an A, then give the figure."""
    from attndyn.explore._pages.control import ControlPage

    playground.preset.value = "Fig. 1: one step"
    page = ControlPage(playground)
    buttons = (page.exports.png, page.exports.svg)
    assert all(b.disabled and b.description == "choose A first" for b in buttons)
    assert "no A yet" in page.status.object and not page.exports.state.disabled  # the zip of the request works
    page.leaders.value = "1, 2"
    page.run()
    assert not any(b.disabled for b in buttons)
    assert page.exports.png.callback().getvalue()[:4] == b"\x89PNG" and page.guard.pane.object == ""


def test_the_server_refuses_values_outside_the_widgets_ranges(playground):
    """Issue 34: a websocket message may set a slider beyond its end (10,000 tokens took 3.9 GB; a typed step of
    0.0006 at the slider's maximum time froze every session); the server checks, one line, last state kept."""
    from attndyn.explore._pages.softmax import SoftmaxPage

    playground.layers.value = 10**6  # Panel accepts it: nothing but the server stands in the way
    assert playground.result.state.layers == 30
    assert "layers = 1000000 is outside its range (1 to 200)" in playground.guard.pane.object
    playground.layers.value = 30
    playground.src["edit"].data = {"x": list(range(5000)), "y": list(range(5000))}
    assert (
        playground.result.state.layers == 30
        and "the playground takes up to 1000 tokens" in playground.guard.pane.object
    )
    page = SoftmaxPage()
    kept = page.result
    page.time.value = 60.0
    page.step.value = 0.0006
    assert page.result is kept
    assert "needs 100,000 steps, over the explorer budget of 20,000; raise step" in page.guard.pane.object
    page.step.value = 0.1
    page.n.value = 10_000  # the slider answers on release (value_throttled): the next rerun reads it
    page.guard(page.rerun)
    assert "n tokens = 10000 is outside its range (2 to 200)" in page.guard.pane.object


def test_every_softmax_preset_runs_to_its_own_horizon():
    """A preset longer than the last run (collapse's T = 20 after V = I's 15) must stretch "time shown" first: the
    server's range check refused it ("outside its range"), and the page kept the last run."""
    from attndyn.explore._pages.softmax import SoftmaxPage
    from attndyn.explore._softmax_view import V_PRESETS, V_preset

    page = SoftmaxPage()
    for name in (*V_PRESETS, V_PRESETS[0], V_PRESETS[4], V_PRESETS[1]):
        page.preset.value = name
        T = V_preset(name)[3]
        assert page.guard.pane.object == "", (name, page.guard.pane.object)
        assert page.result.state.time == page.result.state.at == T == page.at.end
