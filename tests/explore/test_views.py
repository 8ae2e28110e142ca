"""The explorer's views as plain functions: the same answers as the library, bad input refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

import attndyn
from attndyn import InputError
from attndyn.explore._control_view import ControlState, control_inputs, control_summary, run_control
from attndyn.explore._hardmax_view import (
    A_PRESETS,
    TOKEN_PRESETS,
    A_preset,
    A_presets_for,
    HardmaxState,
    hardmax_figure,
    hardmax_inputs,
    run_hardmax,
    token_preset,
    turn,
)
from attndyn.explore._parse import matrix_text, parse_matrix
from attndyn.explore._softmax_view import V_PRESETS, SoftmaxState, V_preset, run_softmax, softmax_tokens


@pytest.mark.parametrize("preset", TOKEN_PRESETS)
def test_playground_leaders_are_the_library_leaders(preset):
    z = token_preset(preset, n=40, seed=3)
    A = A_preset("random SPD", d=z.shape[1], seed=1)
    res = run_hardmax(HardmaxState(z, A, alpha=0.7, layers=25, layer=25))
    lib = attndyn.leaders(attndyn.hardmax(z, alpha=0.7, A=A, layers=25))
    assert res.leaders.indices == lib.indices and res.leaders.since == lib.since
    assert res.leaders_at(25) == list(lib.indices)
    assert res.theorem.holds == attndyn.hardmax_theorem(res.trajectory).holds


def test_playground_fig7_leader_emerges_at_layer_1_and_follows_token_1_before():
    res0 = run_hardmax(HardmaxState(token_preset("Fig. 7: leader at layer 1"), np.eye(2), layers=40, layer=0))
    assert dict(zip(res0.leaders.indices, res0.leaders.since))[0] == 1  # hardmax paper, Example 5.2
    assert res0.follow[0].tolist() == [False, True, False]  # C_1(Z^0) = {2}
    assert 0 not in res0.leaders_at(0)
    res1 = run_hardmax(HardmaxState(res0.state.tokens, np.eye(2), layers=40, layer=1))
    assert res1.follow[0].tolist() == [True, False, False] and 0 in res1.leaders_at(1)


def test_playground_hull_of_the_square_is_its_corners():
    res = run_hardmax(HardmaxState(token_preset("Fig. 2: square polytope"), np.eye(2), layers=30, layer=30))
    assert sorted(res.hull) == [0, 1, 2, 3]
    assert res.verdict().startswith("Theorem 1.1 holds: 4 leaders")


def test_3d_cube_corners_lead_from_layer_0_and_span_K():
    # with A = I a corner c of [-1, 1]^3 scores <c, c> = 3 against itself and less against every other token
    res = run_hardmax(HardmaxState(token_preset("3-D: cube polytope"), np.eye(3), layers=30, layer=30))
    corners = list(range(8))
    assert list(res.leaders.indices) == corners and set(res.leaders.since) == {0}
    assert sorted(res.hull) == corners and res.verdict() == "Theorem 1.1 holds: 8 leaders, K has 8 vertices"
    inner = res.states[30, 8:]  # (4, 3): each inner token ends on a corner
    assert np.allclose(np.abs(inner), 1.0, atol=1e-3)


def test_3d_presets_have_the_right_shapes_and_A_presets_per_dimension():
    assert token_preset("3-D: random cloud", n=17, seed=2).shape == (17, 3)
    assert np.array_equal(
        token_preset("3-D: random cloud", n=5, seed=2), token_preset("3-D: random cloud", n=5, seed=2)
    )
    assert A_presets_for(2) == A_PRESETS and A_presets_for(3) == ("I", "diagonal", "random SPD")
    for name in A_presets_for(3):
        A = A_preset(name, d=3, seed=0)
        assert A.shape == (3, 3) and np.allclose(A, A.T) and np.linalg.eigvalsh(A).min() > 0  # SPD: Theorem 1.1
    for name in set(A_PRESETS) - set(A_presets_for(3)):
        with pytest.raises(
            InputError, match="does not exist for d = 3; choose one of I, diagonal, random SPD or type a 3 x 3 A"
        ):
            A_preset(name, d=3)


def test_3d_figure_is_seen_from_the_angles_asked_and_turning_it_reruns_nothing(monkeypatch):
    import attndyn.explore._hardmax_view as hv

    res = run_hardmax(HardmaxState(token_preset("3-D: random cloud", n=30, seed=1), np.eye(3), layers=12, layer=4))
    fig = hardmax_figure(res, azimuth=25, elevation=-10)
    ax = fig.axes[0]
    assert ax.name == "3d" and (ax.azim, ax.elev) == (25, -10)
    monkeypatch.setattr(hv, "hardmax", lambda *a, **k: pytest.fail("turning reran the dynamics"))
    assert turn(fig, azimuth=140) is fig and (ax.azim, ax.elev) == (140, -10)  # None keeps the elevation
    labels = sorted(t.get_text().strip() for t in ax.texts)
    since = dict(zip(res.leaders.indices, res.leaders.since))
    assert labels == sorted(f"{i} (layer {since[i]})" for i in res.leaders_at(4))
    pairs = int((res.follow & ~np.eye(30, dtype=bool)).sum())  # who follows whom at layer 4, self excluded
    fig.canvas.draw()
    assert sum(len(c.get_segments()) for c in ax.collections if c.get_zorder() == 2) == pairs


def test_turning_a_2d_picture_is_refused():
    res = run_hardmax(HardmaxState(token_preset("Fig. 2: square polytope"), np.eye(2), layers=5))
    with pytest.raises(InputError, match="turn\\(\\): the figure is a 2-D picture"):
        hardmax_figure(res, azimuth=30)
    with pytest.raises(InputError, match=r"tokens of shape \(4, 4\): the playground draws \(n, 2\) or \(n, 3\) tokens"):
        run_hardmax(HardmaxState(np.eye(4), np.eye(4), layers=5))


def test_playground_a_non_spd_A_runs_with_a_note_or_is_refused_when_spd_is_required():
    z, R = token_preset("Fig. 2: square polytope"), A_preset("rotation")
    res = run_hardmax(HardmaxState(z, R, layers=10))
    assert any("not symmetric positive definite" in n for n in res.notes)
    assert not res.theorem.hypotheses["A_spd"]
    with pytest.raises(InputError, match="A is not symmetric positive definite; type an SPD matrix"):
        run_hardmax(HardmaxState(z, R, layers=10, require_spd=True))


def test_playground_refuses_bad_states():
    z = token_preset("Fig. 2: square polytope")
    with pytest.raises(InputError, match=r"layers=0: choose 1 <= layers <= 500"):
        run_hardmax(HardmaxState(z, np.eye(2), layers=0))
    with pytest.raises(InputError, match="unknown token preset 'nope'"):
        token_preset("nope")
    with pytest.raises(InputError, match="A preset 'rotation' does not exist for d = 3"):
        A_preset("rotation", d=3)
    assert set(A_PRESETS) >= {"I", "diagonal", "rotation", "random SPD"}
    with pytest.raises(InputError, match="A is 2 x 2 but the tokens have d = 3; type a 3 x 3 matrix"):
        parse_matrix("1 0; 0 1", "A", d=3)


@pytest.mark.parametrize(
    "text, message",
    [
        ("nan 0; 0 1", r"A has a non-finite entry \(nan\); type finite numbers"),
        ("1 0 0; 0 1 0", "A is 2 x 3; type a square matrix"),
        ("1 0; 0", r"A: the rows have different lengths \[1, 2\]"),
        ("", "A is empty"),
        ("1 x; 0 1", "A has an entry that is not a number"),
        ("[[1, 0], [0, 1]", "is not valid JSON"),
        ("1 0 0; 0 1 0; 0 0 1", "A is 3 x 3 but the tokens have d = 2"),
    ],
)
def test_typed_matrices_refused_in_one_line(text, message):
    with pytest.raises(InputError, match=message) as err:
        parse_matrix(text, "A", d=2)
    assert "\n" not in str(err.value)


def test_typed_matrix_round_trip():  # typed indices: tests/core/test_indices.py
    M = np.array([[2.0, -0.5], [1e-3, 3.25]])
    assert np.array_equal(parse_matrix(matrix_text(M), "A"), M)


@pytest.mark.parametrize("preset", V_PRESETS)
def test_softmax_view_regime_and_attention(preset):
    V, rescaled, regime, T = V_preset(preset)
    d = len(V)
    I = np.eye(d)
    res = run_softmax(
        SoftmaxState(softmax_tokens(12, d), I, I, V, time=min(T, 6.0), rescaled=rescaled, at=2.0, regime=regime)
    )
    assert res.regime == (regime or attndyn.analysis.regime_of(I, I, V))
    assert np.allclose(res.attention.sum(axis=1), 1.0)  # P(t) is row-stochastic
    assert abs(float(res.trajectory.ts[res.index]) - 2.0) < 0.2
    mask = attndyn.analysis.self_attending(res.attention)
    assert res.leaders == tuple(np.flatnonzero(mask))


def test_softmax_view_collapse_holds_and_singular_rescaling_is_refused():
    I = np.eye(2)
    res = run_softmax(SoftmaxState(softmax_tokens(20, 2), I, I, -I, time=20.0, rescaled=False))
    assert (res.regime, res.report.holds) == ("collapse", True)
    bad = SoftmaxState(softmax_tokens(5, 2), I, I, -I, time=2.0, method="discrete", step=1.0, rescaled=True)
    with pytest.raises(InputError, match=r"I \+ step\*V is singular"):
        run_softmax(bad)
    with pytest.raises(InputError, match="Q is 3 x 3 but the tokens have d = 2"):
        run_softmax(SoftmaxState(softmax_tokens(5, 2), np.eye(3), I, I))


def test_control_view_reaches_or_certifies():
    Z = np.array([[2.0, 0.0], [0.0, 2.0], [-1.0, -1.5], [0.1, 0.2], [0.5, -0.3]])
    res = run_control(ControlState(Z, (1, 2)))
    assert res.verdict == "reached" and res.leaders_found == (1, 2)
    assert attndyn.leaders(attndyn.hardmax(Z, alpha=0.5, A=res.A, layers=60, check_hypotheses=False)).indices == (1, 2)
    lines = control_summary(res)
    assert lines[0].startswith("reached") and "margin" in lines[1]
    cert = run_control(ControlState(Z, (3,)))
    assert cert.verdict == "not_reached" and cert.certificates[0].check(Z)
    assert "token 3 cannot lead at layer 0" in control_summary(cert)[-1]
    with pytest.raises(InputError, match="no token is selected to lead"):
        run_control(ControlState(Z, ()))
    assert "A.npy" in control_inputs(ControlState(Z, (1, 2)), res)


@pytest.mark.parametrize("cloud, d", [("random cloud", 2), ("3-D: random cloud", 3)])
def test_exported_inputs_rerun_from_the_cli(tmp_path, capsys, cloud, d):
    from attndyn.cli import main
    from attndyn.explore._export import bundle

    state = HardmaxState(token_preset(cloud, n=30, seed=2), A_preset("random SPD", d=d, seed=4), alpha=0.8, layers=20)
    res = run_hardmax(state)
    import io
    import zipfile

    zipfile.ZipFile(io.BytesIO(bundle(hardmax_inputs(state)))).extractall(tmp_path)
    assert np.load(tmp_path / "tokens.npy").shape == (30, d) and np.load(tmp_path / "A.npy").shape == (d, d)
    cmd = (tmp_path / "command.txt").read_text().split()
    assert cmd[:3] == ["attndyn", "hardmax", "tokens.npy"]
    args = [str(tmp_path / a) if a.endswith(".npy") else a for a in cmd[1:]]
    assert main(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["leaders"] == res.leaders.records()
    assert (
        main(
            [
                "hardmax",
                str(tmp_path / "state.json"),
                "--layers",
                "20",
                "--alpha",
                "0.8",
                "--matrix",
                str(tmp_path / "A.npy"),
                "--json",
            ]
        )
        == 0
    )
    assert json.loads(capsys.readouterr().out)["leaders"] == res.leaders.records()


def test_a_matrix_typed_by_the_page_reads_back_bit_for_bit():
    """Pass 6, L1: six digits moved a control answer by 2e-7, under its margin, and the playground showed other
    leaders than the control view verified; the box now holds the shortest round-tripping digits."""
    rng = np.random.default_rng(0)
    for _ in range(50):
        M = rng.standard_normal((3, 3)) * 10.0 ** rng.integers(-8, 8)
        assert np.array_equal(parse_matrix(matrix_text(M), "A"), M)
    assert matrix_text(np.eye(2)) == "1 0; 0 1"


@pytest.mark.parametrize("text", ["  ;  ", ";", " ; ; "])
def test_a_matrix_of_empty_rows_says_no_numbers_were_typed(text):
    with pytest.raises(InputError, match="A: no numbers typed; type a square matrix"):
        parse_matrix(text, "A")
