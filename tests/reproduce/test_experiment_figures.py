"""The report's figures of issue 24, read off the figures the experiments build (quick settings, nothing saved)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from matplotlib.markers import MarkerStyle

from attndyn.reproduce._registry import SECTIONS, Context, FigureRef


@dataclass
class Capture(Context):
    """A context that keeps each figure (by stem) and its caption instead of writing files."""

    kept: dict = field(default_factory=dict)

    def figure(self, fig, stem, caption):
        self.kept[stem] = (fig, caption)
        return FigureRef(caption=caption, files=())


def _figures(name, tmp_path):
    ctx = Capture(out=tmp_path, quick=True, animations=False, max_frames=2)  # the slider is not under test
    SECTIONS[name].run(ctx)
    return ctx.kept


def test_theorem_c5_plot_has_axis_labels_and_no_leader_stars(tmp_path):
    fig, caption = _figures("softmax-thmC.5", tmp_path)["softmax_thmC5"]
    ax = fig.axes[0]
    assert [ln for ln in ax.get_lines() if ln.get_marker() == "*"] == []
    assert len([ln for ln in ax.get_lines() if ln.get_marker() == "o"]) == 40
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("coordinate 1 of $x_i$", "coordinate 2 of $x_i$")
    assert "no token leads" in ax.get_title() and "No token leads" in caption


def test_conjecture_4_2_plot_fits_each_eigen_axis_and_says_the_tokens_diverge(tmp_path):
    fig, caption = _figures("softmax-conj4.2", tmp_path)["softmax_fig7"]
    ax = fig.axes[0]
    spans = np.array([np.ptp(ax.get_xlim3d()), np.ptp(ax.get_ylim3d()), np.ptp(ax.get_zlim3d())])
    assert spans[2] > 50 * spans[:2].max()  # the diverging axis no longer squashes the two clustering ones
    assert spans[:2].max() < 30  # the positive coordinates stay O(1): their lines are apart on screen
    title = ax.get_title()
    assert "tokens diverge" in title and "axes not to scale" in title
    assert "$\\lambda$ = 1.96" in ax.get_xlabel() and "$\\lambda$ = -0.22" in ax.get_zlabel()
    assert "V's eigenbasis" in caption


def _is_star(collection):
    star = MarkerStyle("*")
    want = star.get_path().transformed(star.get_transform()).vertices
    paths = collection.get_paths()
    return len(paths) == 1 and paths[0].vertices.shape == want.shape and np.allclose(paths[0].vertices, want)


def test_theorem_3_1_plot_stays_to_scale_with_its_leader_stars(tmp_path):
    fig, _ = _figures("softmax-thm3.1", tmp_path)["softmax_fig5"]
    ax = fig.axes[0]
    spans = [np.ptp(ax.get_xlim3d()), np.ptp(ax.get_ylim3d()), np.ptp(ax.get_zlim3d())]
    assert spans == pytest.approx([spans[0]] * 3)
    assert "not to scale" not in ax.get_title() and "no token leads" not in ax.get_title()
    assert sum(len(c.get_offsets()) for c in ax.collections if _is_star(c)) >= 3  # the vertices of K lead


@pytest.mark.parametrize(
    ("name", "stems"),
    [
        ("hardmax-fig1", ["hardmax_fig1"]),
        ("hardmax-fig2", ["hardmax_fig2"]),
        ("hardmax-emerging-leader", ["hardmax_emerging_leader"]),
        ("hardmax-theorem-1.1", ["hardmax_theorem_1_1_example"]),
    ],
)
def test_hardmax_figures_label_every_axis(name, stems, tmp_path):
    kept = _figures(name, tmp_path)
    assert sorted(kept) == stems
    for fig, _ in kept.values():
        axes = [ax for ax in fig.axes if ax.axison]
        assert axes and all(ax.get_xlabel().strip() and ax.get_ylabel().strip() for ax in axes)


def test_fig2_slider_frames_label_every_axis(tmp_path):
    from attndyn.reproduce._hardmax_experiments import _fig2_frame, _fig2_runs

    ctx = Context(out=tmp_path, quick=True)
    fig = _fig2_frame(_fig2_runs(ctx), 5, hull=True)
    assert len(fig.axes) == 4
    assert all(
        ax.get_xlabel() == "coordinate 1 of $z_i$" and ax.get_ylabel() == "coordinate 2 of $z_i$" for ax in fig.axes
    )
