"""Plotting reads result objects and never simulates; figures save as PNG, SVG and PDF."""

from __future__ import annotations

import importlib

import numpy as np
import pytest
import torch

import attndyn
from attndyn import InputError, SaveAt, plotting
from attndyn.plotting._animation import frame_indices

FIG1 = [[1.0, 0.0], [2.0, 1.0], [2.0, -1.0], [1.5, 2.5], [-1.0, 0.5]]


@pytest.fixture(scope="module")
def hard():
    z = np.random.default_rng(0).uniform(-1, 1, (9, 2))
    return attndyn.hardmax(z, alpha=0.5, layers=12, save=SaveAt(follow=True))


@pytest.fixture(scope="module")
def soft3():
    x = np.random.default_rng(1).standard_normal((12, 3))
    return attndyn.softmax(x, time=4.0, step=0.2, rescaled=True, save=SaveAt(every=2))


@pytest.fixture(scope="module")
def soft1():
    x = np.random.default_rng(2).standard_normal((10, 1))
    return attndyn.softmax(x, time=4.0, step=0.2, save=SaveAt(every=4, attention=True))


@pytest.fixture()
def no_simulation(monkeypatch):
    """Any attempt to run the dynamics fails the test."""

    def boom(*a, **k):
        raise AssertionError("a plot function ran the dynamics")

    hardmax_module = importlib.import_module("attndyn._hardmax")  # (attndyn.hardmax is also the function)
    monkeypatch.setattr(hardmax_module, "hardmax_step", boom)
    monkeypatch.setattr(hardmax_module, "_hardmax_step", boom)  # the layers of the run loop
    monkeypatch.setattr(hardmax_module._HardmaxRecord, "observe", boom)  # ... one by one or all in one call
    monkeypatch.setattr(hardmax_module, "hardmax", boom)
    monkeypatch.setattr("attndyn._dynamics.SoftmaxAttention.__call__", boom)
    monkeypatch.setattr("attndyn._dynamics.SoftmaxAttention.discrete_step", boom)


def test_save_figure_writes_png_svg_pdf(tmp_path):
    fig = plotting.step_geometry(FIG1)
    paths = plotting.save_figure(fig, tmp_path / "sub" / "fig1")
    assert [p.name for p in paths] == ["fig1.png", "fig1.svg", "fig1.pdf"]
    assert paths[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in paths[1].read_bytes()[:400]
    assert paths[2].read_bytes()[:5] == b"%PDF-"
    assert not list((tmp_path / "sub").glob(".*tmp"))  # atomic: no temporary left behind


def test_save_figure_rejects_unknown_format(tmp_path):
    with pytest.raises(InputError, match="choose among png, svg, pdf"):
        plotting.save_figure(plotting.step_geometry(FIG1), tmp_path / "x", formats=("jpg",))


def test_plots_never_run_the_dynamics(hard, soft3, soft1, no_simulation):
    figs = [
        plotting.plot_trajectory(hard),
        plotting.hardmax_panels(hard, (0, 1, 5, 12)),
        plotting.plot_trajectory(soft3),
        plotting.plot_trajectory(soft1),
        plotting.attention_matrices(soft1),
        plotting.coordinates(soft3),
    ]
    assert all(len(f.axes) >= 1 for f in figs)
    assert len(plotting.render_frames(soft3, [0, len(soft3) - 1])) == 2


def test_fig1_attracting_sets():
    """Hardmax paper Fig. 1: C_1 = {2, 3} for A = I, {4} for A = [[2,1],[1,1]] (0-based here)."""
    fig = plotting.step_geometry(FIG1)
    ax = fig.axes[0]
    assert plotting.draw_step_geometry(ax, FIG1, 0) == [1, 2]
    assert plotting.draw_step_geometry(ax, FIG1, 0, A=[[2, 1], [1, 1]]) == [3]
    with pytest.raises(InputError, match=r"shape \(n, 2\)"):
        plotting.draw_step_geometry(ax, np.ones((3, 3)), 0)


def test_follow_matrix_computed_equals_saved(hard):
    plain = attndyn.hardmax(hard.initial_tokens, alpha=0.5, layers=12)  # follow sets not kept
    for k in (0, 3, len(hard) - 1):
        assert np.array_equal(plotting.follow_matrix(hard, k), plotting.follow_matrix(plain, k))
        assert np.array_equal(plotting.follow_matrix(hard, k), hard.follow[k, 0].numpy())  # (T, B, n, n)


def test_leaders_are_stars(hard):
    fig = plotting.plot_trajectory(hard)
    stars = [ln for ln in fig.axes[0].lines if ln.get_marker() == "*"]
    assert len(stars) == int(hard.leader_mask[-1].sum())


def test_attention_plots_need_kept_attention(soft3):
    with pytest.raises(InputError, match=r"SaveAt\(attention=True\)"):
        plotting.attention_matrices(soft3)


def test_query_key_clouds():
    x = np.random.default_rng(3).standard_normal((8, 2))
    traj = attndyn.softmax(x, time=1.0, step=0.1, Q=[[1.0, 0.2], [0.1, 0.8]], save=SaveAt(every=5, attention=True))
    fig = plotting.query_key_clouds(traj)
    assert len(fig.axes) == len(frame_indices(traj, 4))


def test_batched_trajectory_needs_sequence():
    z = np.random.default_rng(4).uniform(-1, 1, (2, 5, 2))
    traj = attndyn.hardmax(z, alpha=1.0, layers=3)
    with pytest.raises(InputError, match="pass sequence=b"):
        plotting.plot_trajectory(traj)
    ax = plotting.plot_trajectory(traj, sequence=1).axes[0]
    drawn = sorted(
        (float(ln.get_xdata()[0]), float(ln.get_ydata()[0])) for ln in ax.get_lines() if ln.get_marker() != "None"
    )
    assert drawn == sorted(map(tuple, traj.ys[-1, 1].tolist()))  # sequence 1's final tokens, not sequence 0's


def test_gif_and_mp4(tmp_path, hard, monkeypatch):
    p = plotting.animate(hard, tmp_path / "run.gif", max_frames=3)
    from PIL import Image

    with Image.open(p) as im:
        assert im.format == "GIF" and im.n_frames == 3
    monkeypatch.setattr("attndyn.plotting._animation.shutil.which", lambda name: None)
    with pytest.raises(InputError, match="MP4 needs ffmpeg.*write a .gif instead"):
        plotting.animate(hard, tmp_path / "run.mp4")
    with pytest.raises(InputError, match=r"must end in \.gif or \.mp4"):
        plotting.animate(hard, tmp_path / "run.avi")


def test_figures_are_agg_without_pyplot(hard):
    before = hard.ys.clone()
    fig = plotting.plot_trajectory(hard)
    assert type(fig.canvas).__name__ == "FigureCanvasAgg"
    assert torch.equal(hard.ys, before)  # the trajectory is untouched


@pytest.mark.skipif(not plotting.ffmpeg_available(), reason="ffmpeg not installed: MP4 output is optional")
def test_mp4_with_ffmpeg(tmp_path, hard):
    p = plotting.animate(hard, tmp_path / "run.mp4", max_frames=3)
    assert p.stat().st_size > 0


def test_tokens_of_dimension_four_are_drawn_in_3d():
    z = np.random.default_rng(5).uniform(-1, 1, (7, 4))
    fig = plotting.plot_trajectory(attndyn.hardmax(z, alpha=0.5, layers=5))
    assert fig.axes[0].name == "3d"


def test_3d_state_draws_the_leaders_as_stars_above_the_followers_in_four_artists():
    z = np.random.default_rng(6).uniform(-1, 1, (60, 3))
    traj = attndyn.hardmax(z, alpha=0.5, layers=8)
    lead = attndyn.leaders(traj)
    fig = plotting.plot_trajectory(traj, index=8, hull=False)
    fig.canvas.draw()  # projects the 3-D artists
    ax = fig.axes[0]
    trails, circles, stars = ax.collections  # whatever n: one artist each, so a turning figure stays fast
    assert len(trails.get_segments()) == 60 and len(circles.get_offsets()) + len(stars.get_offsets()) == 60
    at8 = traj.tokens.numpy()[8]  # (n, 3)
    assert np.allclose(np.column_stack(stars._offsets3d), at8[list(lead.indices)])  # the stars are the leaders
    assert not ax.computed_zorder and trails.get_zorder() < circles.get_zorder() < stars.get_zorder()


def test_animate_takes_frames_without_a_trajectory(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from PIL import Image

    from attndyn.plotting._animation import animate
    from attndyn.plotting._save import png_bytes

    frames = []
    for k in range(3):
        fig = Figure(figsize=(1, 1))
        fig.add_subplot().plot([0, k], [0, 1])
        frames.append(png_bytes(fig, dpi=40))
    out = animate(None, tmp_path / "f.gif", frames=frames)
    with Image.open(out) as gif:
        assert gif.n_frames == 3
    with pytest.raises(attndyn.InputError, match="needs a trajectory or pre-rendered frames"):
        animate(None, tmp_path / "g.gif")
    assert not (tmp_path / "g.gif").exists()


def test_a_leader_keeps_its_star_when_a_follower_reaches_its_float_value():
    """Pass 7, F1: after 120 layers of Fig. 2's triangle (alpha = 0.5) a follower is within rounding of leader 1, their
    scores tie, and the picture lost that leader's star and the shaded triangle K. Stars come from the run's
    certified leaders now (a strict leader stays one)."""
    from matplotlib.patches import Polygon

    from attndyn.experiments._configurations import FIG2_CONFIGS
    from attndyn.plotting import plot_trajectory

    z = np.array(FIG2_CONFIGS["triangle polytope"], dtype=float)
    traj = attndyn.hardmax(z, alpha=0.5, layers=120, save=attndyn.SaveAt(follow=True))
    last = traj.tokens[-1].numpy()
    assert traj.follow[-1, 0, 1].sum() == 2 and not traj.leader_mask[-1, 0, 1]  # the tie that hid the star
    fig = plot_trajectory(traj)
    ax = fig.axes[0]
    stars = [
        (float(line.get_xdata()[0]), float(line.get_ydata()[0])) for line in ax.get_lines() if line.get_marker() == "*"
    ]
    assert sorted(stars) == sorted(tuple(map(float, last[i])) for i in (0, 1, 2))
    hull = [p for p in ax.patches if isinstance(p, Polygon)]
    assert len(hull) == 1 and len(hull[0].get_xy()) - 1 == 3
