"""Issue 24's figure faults, each read off the returned matplotlib figure: leader stars only where attention singles
tokens out, axis labels, labels clear of the markers, integer ticks for counts, limits that fit diverging tokens."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch
from matplotlib.text import Text

import attndyn
from attndyn import InputError, SaveAt, plotting
from attndyn.control import choose_A
from attndyn.plotting import _pretrained as pretrained_plots
from attndyn.plotting._leadership import DISTINCT_RATIO, distinct_rows
from attndyn.pretrained import depth_clusters


def _markers(ax, marker):
    return [ln for ln in ax.get_lines() if ln.get_marker() == marker]


@pytest.fixture(scope="module")
def collapse():
    """Theorem C.5 in miniature: V = -I, original dynamics (1); every token runs into the origin."""
    x = np.random.default_rng(91).standard_normal((12, 2))
    return attndyn.softmax(x, time=20.0, step=0.2, V=-np.eye(2), save=SaveAt(every=10, attention=True))


# --- 1. Theorem C.5: no leaders on a collapsing cloud, axes labelled ---------------------------------------------


def test_collapse_draws_no_leader_stars_no_follow_colours_and_labels_its_axes(collapse):
    fig = plotting.plot_trajectory(collapse, hull=False)
    ax = fig.axes[0]
    assert _markers(ax, "*") == []
    dots = _markers(ax, "o")
    assert len(dots) == 12 and {d.get_markerfacecolor() for d in dots} == {"#bbbbbb"}  # nobody followed
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("coordinate 1 of $x_i$", "coordinate 2 of $x_i$")
    assert ax.get_title().splitlines() == ["t = 20", "attention nearly uniform: no token leads"]


def test_stars_follow_the_state_not_the_experiment(collapse):
    """The same run at t = 0 (tokens spread, attention peaked) has stars; a clustering run keeps its stars."""
    start = plotting.plot_trajectory(collapse, index=0, hull=False).axes[0]
    assert len(_markers(start, "*")) >= 2 and "no token leads" not in start.get_title()
    x = np.random.default_rng(4).standard_normal((12, 2))
    cluster = attndyn.softmax(x, time=6.0, step=0.1, rescaled=True, save=SaveAt(every=20))
    ax = plotting.plot_trajectory(cluster, hull=False).axes[0]
    assert len(_markers(ax, "*")) >= 2 and "no token leads" not in ax.get_title()
    assert (ax.get_xlabel(), ax.get_ylabel()) == (
        "coordinate 1 of $z_i$",
        "coordinate 2 of $z_i$",
    )  # the rescaled run evolves z (eq. (4))


@pytest.mark.parametrize("rescaled", [False, True])
def test_distinct_rows_is_max_at_least_twice_min_of_the_attention_row(rescaled):
    """Read off the kept attention P (eq. (2)), or off the state's scores (rescaled: seen through e^{tV}, eq. (4)):
    the same rows, and they are those with max_j P_ij >= 2 min_j P_ij."""
    x = np.random.default_rng(7).standard_normal((9, 2))
    V = -np.eye(2) if not rescaled else np.array([[1.0, 0.3], [0.1, -0.2]])
    kw = dict(time=8.0, step=0.1, V=V, rescaled=rescaled)
    with_p = attndyn.softmax(x, save=SaveAt(every=8, attention=True), **kw)
    without = attndyn.softmax(x, save=SaveAt(every=8), **kw)
    seen = set()
    for k in range(len(with_p.ts)):
        P = with_p.attention[k, 0].numpy()
        expected = P.max(axis=1) >= DISTINCT_RATIO * P.min(axis=1)
        np.testing.assert_array_equal(distinct_rows(with_p, k, 0), expected)
        np.testing.assert_array_equal(distinct_rows(without, k, 0), expected)
        seen.update(expected.tolist())
    assert seen == {True, False} or rescaled  # the collapse passes from peaked rows to flat ones


def test_identical_tokens_single_nobody_out_but_a_lone_token_leads():
    same = attndyn.softmax(np.ones((4, 2)), time=1.0, step=0.5)
    assert not distinct_rows(same, -1, 0).any()
    alone = attndyn.softmax([[1.0, 2.0]], time=1.0, step=0.5)
    assert distinct_rows(alone, -1, 0).tolist() == [True]
    hard = attndyn.hardmax([[1.0, 0.0], [1.0, 0.1], [1.0, 0.2]], alpha=0.5, layers=2)
    assert distinct_rows(hard, -1, 0).all()  # hardmax picks its arg-max set exactly (eq. (1.1b))


# --- 2. Table 1: counts and intervals on the bars ----------------------------------------------------------------


def test_table1_bars_carry_counts_wilson_intervals_and_axis_labels():
    from scipy.stats import binomtest

    from attndyn.reproduce._statistics import FIGURE_CONFIDENCE, fractions_figure

    counts = {"polytope": (4, 4), "hyperplanes": (3, 10), "paranormal": (0, 5), "collapse": (20, 20)}
    ax = fractions_figure(counts).axes[0]
    assert [t.get_text() for t in ax.texts] == ["4/4", "3/10", "0/5", "20/20"]
    assert [p.get_width() for p in ax.patches] == pytest.approx([1.0, 0.3, 0.0, 1.0])
    (bars,) = [c for c in ax.collections if len(c.get_segments()) == 4]  # the error bars' horizontal segments
    for seg, (k, n) in zip(bars.get_segments(), counts.values()):
        ci = binomtest(k, n).proportion_ci(confidence_level=FIGURE_CONFIDENCE, method="wilson")
        assert sorted(seg[:, 0]) == pytest.approx([ci.low, ci.high])
    assert ax.get_xlabel().startswith("fraction of sequences") and "Wilson" in ax.get_xlabel()
    assert ax.get_ylabel() == "row of Table 1"


# --- 3. control: labels beside the markers, above them, apart ----------------------------------------------------


def _discs(ax, renderer):
    """(centre, radius) in pixels of every marker drawn in ``ax``: Line2D markers and scatter points."""
    px = ax.figure.dpi / 72
    out = []
    for ln in ax.get_lines():
        if ln.get_marker() not in ("None", "", None):
            out += [(c, ln.get_markersize() / 2 * px) for c in ax.transData.transform(ln.get_xydata())]
    for coll in ax.collections:
        sizes = coll.get_sizes()
        if len(sizes):
            cs = ax.transData.transform(coll.get_offsets())
            out += [(c, np.sqrt(sizes[i % len(sizes)]) / 2 * px) for i, c in enumerate(cs)]
    return out


def _meets(box, centre, r):
    nx, ny = np.clip(centre[0], box.x0, box.x1), np.clip(centre[1], box.y0, box.y1)
    return (centre[0] - nx) ** 2 + (centre[1] - ny) ** 2 < r**2


def test_control_labels_sit_above_every_marker_clear_of_stars_rings_and_each_other():
    tokens = np.random.default_rng(1).standard_normal((14, 2))  # examples/control_leaders.py, the README figure
    res = choose_A(tokens, [1, 7], spd=False, layers=30)
    fig = plotting.control_comparison(res)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.texts if t.get_text().isdigit()]
        assert sorted(int(t.get_text()) for t in labels) == list(range(14))
        markers = [a.get_zorder() for a in [*ax.get_lines(), *ax.collections]]
        assert min(t.get_zorder() for t in labels) > max(markers)
        boxes = [Text.get_window_extent(t, renderer) for t in labels]  # the text, not its leader line
        assert not any(a.overlaps(b) for i, a in enumerate(boxes) for b in boxes[i + 1 :])
        discs = _discs(ax, renderer)
        assert len(discs) >= 2 * 14 + 2 * 2  # start dots, final tokens, rings and star outlines were all found
        assert not any(_meets(box, c, r) for box in boxes for c, r in discs)
        assert (ax.get_xlabel(), ax.get_ylabel()) == ("$z_1$", "$z_2$")


# --- 4. clusters against depth: integer ticks --------------------------------------------------------------------


def test_cluster_counts_and_depths_have_integer_ticks():
    hidden = np.random.default_rng(3).standard_normal((7, 14, 16))  # (L + 1, n, d)
    hidden[1:] += 4.0 * np.random.default_rng(4).standard_normal(16)  # the tokens draw together with depth
    analysis = SimpleNamespace(clusters=depth_clusters(hidden), forward=SimpleNamespace(tokens=list(range(14))))
    fig = pretrained_plots.clusters_depth(analysis)
    fig.canvas.draw()
    counts = fig.axes[0]
    assert len(set(analysis.clusters.clusters)) > 1
    lo, hi = counts.get_ylim()
    shown = [v for v in counts.get_yticks() if lo <= v <= hi]
    assert len(shown) >= 2 and all(float(v).is_integer() for v in shown)
    for ax in fig.axes[:3]:
        assert all(float(v).is_integer() for v in ax.get_xticks())


# --- 5. 3-D: limits that fit, equal aspect only where meaningful, divergence said ---------------------------------


def _limits3d(ax):
    return np.array([ax.get_xlim3d(), ax.get_ylim3d(), ax.get_zlim3d()])


def test_diverging_3d_tokens_get_one_fitted_axis_each_and_the_title_says_so():
    """Theorem 5.1's V = diag(1, 1, -1/2): x_3 diverges like e^{t/2}; x_1, x_2 stay O(1) and must stay readable."""
    x = np.random.default_rng(81).standard_normal((10, 3))
    traj = attndyn.softmax(x, time=7.0, step=0.1, V=np.diag([1.0, 1.0, -0.5]), rescaled=True, save=SaveAt(every=5))
    ax = plotting.plot_trajectory(traj, hull=False).axes[0]
    ys = traj.tokens.numpy().reshape(-1, 3)
    lo, hi = ys.min(axis=0), ys.max(axis=0)
    lim = _limits3d(ax)
    assert np.all(lim[:, 0] <= lo) and np.all(lim[:, 1] >= hi)  # every drawn point in view
    assert np.all(lim[:, 1] - lim[:, 0] <= 1.2 * (hi - lo))  # and each axis fitted to its own extent
    title = ax.get_title()
    assert "tokens diverge: extent ×" in title and "axes not to scale" in title


def test_clustering_3d_tokens_are_drawn_to_scale():
    x = np.random.default_rng(31).standard_normal((12, 3))
    traj = attndyn.softmax(x, time=5.0, step=0.1, rescaled=True, save=SaveAt(every=10))
    ax = plotting.plot_trajectory(traj).axes[0]
    spans = np.diff(_limits3d(ax), axis=1).ravel()
    assert spans == pytest.approx(np.full(3, spans[0]))  # one scale on the three axes
    assert ax.get_box_aspect() == pytest.approx(ax.get_box_aspect()[0] * np.ones(3))
    assert "not to scale" not in ax.get_title() and "diverge" not in ax.get_title()
    assert [ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()] == [
        "coordinate 1 of $z_i$",
        "coordinate 2 of $z_i$",
        "coordinate 3 of $z_i$",
    ]


def test_eigenbasis_draws_c_equal_R_inverse_z_with_one_axis_per_eigenvalue():
    """Conjecture 4.2's picture: in V's eigenbasis the tokens approach lines parallel to the diverging axis."""
    S = np.array([[1.0, 0.4, -0.3], [0.2, 1.0, 0.5], [-0.4, 0.1, 1.0]])
    V = S @ np.diag([1.96, -0.22, 0.25]) @ np.linalg.inv(S)
    x = np.random.default_rng(71).standard_normal((10, 3))
    traj = attndyn.softmax(x, time=16.0, step=0.1, V=V, rescaled=True, save=SaveAt(every=10))
    ax = plotting.plot_trajectory(traj, hull=False, eigenbasis=True).axes[0]
    w, R = np.linalg.eig(V)
    order = np.argsort(-w.real)
    c = np.linalg.solve(R.real, traj.tokens.numpy().reshape(-1, 3).T).T[:, order]  # c = R^{-1} z
    lim = _limits3d(ax)
    assert np.all(lim[:, 0] <= c.min(axis=0) + 1e-9) and np.all(lim[:, 1] >= c.max(axis=0) - 1e-9)
    assert np.all(lim[:, 1] - lim[:, 0] <= 1.2 * np.ptp(c, axis=0))
    assert [ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()] == [
        r"$c_{1}$ ($\lambda$ = 1.96)",
        r"$c_{2}$ ($\lambda$ = 0.25)",
        r"$c_{3}$ ($\lambda$ = -0.22)",
    ]
    assert "axes not to scale" in ax.get_title()


def test_eigenbasis_refuses_hardmax_runs_and_complex_spectra():
    hard = attndyn.hardmax([[1.0, 0.0], [0.0, 1.0], [0.3, 0.3]], alpha=0.5, layers=3)
    with pytest.raises(InputError, match="eigenbasis=True needs a softmax run"):
        plotting.plot_trajectory(hard, eigenbasis=True)
    rot = attndyn.softmax(np.eye(2), time=1.0, step=0.5, V=torch.tensor([[0.0, -1.0], [1.0, 0.0]]))
    with pytest.raises(InputError, match=r"needs a value matrix V with real eigenvalues.*pass eigenbasis=False"):
        plotting.plot_trajectory(rot, eigenbasis=True)


# --- 6. every panel's axes labelled (issue 34): hardmax Figs. 1, 2, 7, the value-matrix spectra, the frames ---------


def _unlabelled(fig):
    """The visible panels of ``fig`` (colour bars and switched-off panels aside) missing an x or a y label."""
    return [ax for ax in fig.axes if ax.axison and not (ax.get_xlabel().strip() and ax.get_ylabel().strip())]


def test_step_geometry_panels_name_their_coordinates():
    fig = plotting.step_geometry([[1, 0], [2, 1], [2, -1]], matrices={"A = I": None, "A = 2I": 2 * np.eye(2)})
    assert len(fig.axes) == 2 and _unlabelled(fig) == []
    assert {(ax.get_xlabel(), ax.get_ylabel()) for ax in fig.axes} == {("first coordinate", "second coordinate")}


def test_hardmax_grid_labels_every_panel_and_names_each_row():
    runs = {
        name: attndyn.hardmax(z, alpha=0.5, layers=6)
        for name, z in {
            "square": [[1, 1], [-1, 1], [-1, -1], [1, -1.2]],
            "line": [[0.5, 0], [1, 0.1], [2, 0.3]],
        }.items()
    }
    fig = plotting.hardmax_grid(runs, (0, 2, 5))
    assert len(fig.axes) == 6 and _unlabelled(fig) == []
    first = [ax.get_ylabel() for ax in fig.axes[::3]]
    assert first == ["square\ncoordinate 2 of $z_i$", "line\ncoordinate 2 of $z_i$"]
    assert {ax.get_xlabel() for ax in fig.axes} == {"coordinate 1 of $z_i$"}


def test_value_matrix_spectra_read_re_and_im_lambda():
    rng = np.random.default_rng(3)
    ev = [np.linalg.eigvals(rng.standard_normal((8, 8))) for _ in range(4)]  # 4 layers: two panels switched off
    spectra = SimpleNamespace(
        layer_eigenvalues=ev,
        layer_leading=np.array([True, False, True, False]),
        layer_good=np.array([False, False, True, False]),
        head_eigenvalues=[[e[:4], e[4:]] for e in ev],
        head_good=np.array([[True, False]] * 4),
    )
    for fig in (pretrained_plots.layer_eigenvalues(spectra), pretrained_plots.head_eigenvalues(spectra)):
        shown = [ax for ax in fig.axes if ax.axison]
        assert len(shown) == 4 and _unlabelled(fig) == []
        assert {(ax.get_xlabel(), ax.get_ylabel()) for ax in shown} == {("Re λ", "Im λ")}


def test_slider_frames_name_their_coordinates():
    from attndyn.plotting._animation import _draw_frame

    traj = attndyn.softmax(np.random.default_rng(1).standard_normal((5, 3)), time=1.0, step=0.5)
    ax = _draw_frame(traj, 1, None, ((-3, 3), (-3, 3)), 3, "x", 3.0).axes[0]
    assert [ax.get_xlabel(), ax.get_ylabel(), ax.get_zlabel()] == [
        "coordinate 1 of $x_i$",
        "coordinate 2 of $x_i$",
        "coordinate 3 of $x_i$",
    ]
