"""The sphere's figures read finished results: the heatmaps with the gamma curve, tokens on the circle and on S^2."""

from __future__ import annotations

import numpy as np
import pytest

import attndyn.sphere as sp
from attndyn import InputError
from attndyn.plotting._sphere import phase_diagram_figure, sphere_tokens_figure


def test_phase_figure_has_one_heatmap_per_statistic_and_the_gamma_curve():
    pd = sp.phase_diagram(systems=4, n=4, betas=[0.5, 2.0, 8.0], time=8.0, checkpoints=5, delta=0.1)
    fig = phase_diagram_figure(pd, ("fraction", "clusters", "one_cluster"))
    heat = [ax for ax in fig.axes if ax.collections and ax.get_xlabel() == "$t$"]
    assert len(heat) == 3
    reached = np.isfinite(pd.gamma_times)
    assert reached.any()
    line = heat[0].get_lines()[0]
    np.testing.assert_allclose(line.get_xdata(), pd.gamma_times[reached])
    np.testing.assert_allclose(heat[0].collections[0].get_array().reshape(3, 5), pd.fraction)
    with pytest.raises(InputError, match=r"statistics=\('energy',\): choose among fraction, clusters, one_cluster"):
        phase_diagram_figure(pd, ("energy",))


def test_tokens_on_the_circle_and_on_the_sphere():
    rng = np.random.default_rng(0)
    for d, lines in ((2, 5), (3, 5)):
        x = rng.standard_normal((5, d))
        traj = sp.evolve(x / np.linalg.norm(x, axis=1, keepdims=True), time=1.0)
        fig = sphere_tokens_figure(traj)
        assert len([ln for ln in fig.axes[0].get_lines()]) >= lines
    x4 = np.eye(4)
    with pytest.raises(InputError, match=r"tokens in dimension 4: the figure draws d = 2 \(circle\) or d = 3"):
        sphere_tokens_figure(sp.evolve(x4, time=0.1))
    with pytest.raises(InputError, match=r"expected a SphereTrajectory"):
        sphere_tokens_figure(object())


def test_frames_turn_the_sphere_and_follow_the_circle():
    from attndyn.plotting._sphere import sphere_frames

    rng = np.random.default_rng(1)
    for d in (2, 3):
        x = rng.standard_normal((4, d))
        traj = sp.evolve(x / np.linalg.norm(x, axis=1, keepdims=True), time=2.0)
        frames = sphere_frames(traj, frames=5)
        assert len(frames) == 5 and all(f[:4] == b"\x89PNG" for f in frames) and frames[0] != frames[-1]
