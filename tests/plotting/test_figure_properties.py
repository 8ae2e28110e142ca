"""Properties of the figures a reader relies on, read off the returned matplotlib objects."""

from __future__ import annotations

import numpy as np
import pytest

import attndyn
from attndyn import SaveAt, plotting


def _markers(ax, marker):
    return [ln for ln in ax.get_lines() if ln.get_marker() == marker]


@pytest.fixture(scope="module")
def good_triple():
    """Softmax paper Fig. 6 in miniature: followers converge onto the leaders' hyperplanes."""
    V = np.array([[1.2, 0.2], [0.2, -0.05]])
    x = np.random.default_rng(5).standard_normal((15, 2))
    return attndyn.softmax(x, time=6.0, V=V, rescaled=True, step=0.1, save=SaveAt(every=5))


def test_leader_stars_are_drawn_above_every_token(good_triple):
    fig = plotting.plot_trajectory(good_triple, hull=False)
    ax = fig.axes[0]
    stars, dots = _markers(ax, "*"), _markers(ax, "o")
    assert stars and dots  # the run has leaders and followers
    assert min(s.get_zorder() for s in stars) > max(d.get_zorder() for d in dots)
    assert max(ln.get_zorder() for ln in ax.get_lines() if ln.get_marker() in ("None", "", None)) < min(
        d.get_zorder() for d in dots
    )  # trails under the tokens


def test_leader_stars_above_tokens_in_hardmax_panels_and_labels_on_top():
    z = [[1.0, 1.0], [-1.0, 1.0], [-1.0, -1.0], [1.0, -1.0], [0.3, 0.1], [-0.2, 0.5]]
    traj = attndyn.hardmax(z, alpha=0.5, layers=10)
    fig = plotting.plot_trajectory(traj, labels=list("abcdef"))
    ax = fig.axes[0]
    stars, dots = _markers(ax, "*"), _markers(ax, "o")
    assert len(stars) == 4 and len(dots) == 2
    assert min(s.get_zorder() for s in stars) > max(d.get_zorder() for d in dots)
    assert min(t.get_zorder() for t in ax.texts) > max(s.get_zorder() for s in stars)


def test_every_attention_heatmap_has_axis_labels():
    x = np.random.default_rng(2).standard_normal((10, 1))
    traj = attndyn.softmax(x, time=4.0, step=0.2, save=SaveAt(every=4, attention=True))
    fig = plotting.attention_matrices(traj)
    maps = [ax for ax in fig.axes if ax.images]
    assert len(maps) == 5
    for ax in maps:
        assert ax.get_xlabel() == "key j (sorted by $x(0)$)"
        assert ax.get_ylabel() == "query i (sorted by $x(0)$)"
    unsorted = plotting.attention_matrices(traj, sort=False)
    assert {(ax.get_xlabel(), ax.get_ylabel()) for ax in unsorted.axes if ax.images} == {("key j", "query i")}


def test_tokens_over_time_has_a_legend_naming_lines_mean_and_range():
    x = np.random.default_rng(2).standard_normal((10, 1))
    traj = attndyn.softmax(x, time=2.0, step=0.2)
    fig = plotting.coordinates(traj, title="tokens x_i(t)")
    legend = fig.axes[0].get_legend()
    assert legend is not None
    assert [t.get_text() for t in legend.get_texts()] == ["one token each", "mean over tokens", "range (min to max)"]
