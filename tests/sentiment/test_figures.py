"""Figure 9 is readable (labels apart, inside their panel, leader first; legend over no data),
the figures read results only, and there is one cluster tolerance."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from attndyn import InputError
from attndyn.analysis import cluster_tolerance
from attndyn.plotting import _sentiment as figs
from attndyn.sentiment import CLUSTER_FLOOR, CLUSTER_RTOL, figure9_data

WORDS = ["wonderful", "boring", "acting", "not_good", "plot", "although", "music", "waste", "story", "really"]


def crowded(n: int = 40, layers: int = 8, seed: int = 0) -> dict:
    """Figure 9 data of a made-up review: n words pulled layer by layer onto three leaders
    (named LEAD...), many of them crowded near the middle at first."""
    rng = np.random.default_rng(seed)
    z = np.concatenate([rng.normal(scale=0.3, size=(n - 3, 2)), [[2.0, 1.5], [-2.0, 0.5], [0.5, -2.0]]])
    words = [WORDS[i % len(WORDS)] + str(i) for i in range(n - 3)] + ["LEADwonderful", "LEADwaste", "LEADboring"]
    lead = np.zeros(n, bool)
    lead[-3:] = True
    tokens = []
    for _ in range(layers + 1):
        tokens.append(z.tolist())
        nearest = np.argmin(((z[:, None] - z[None, -3:]) ** 2).sum(-1), axis=1)
        z = z + 0.6 * (z[-3:][nearest] - z)
    return {
        "words": words,
        "tokens": tokens,
        "leaders": [lead.tolist()] * (layers + 1),
        "v": [1.0, 0.4],
        "b": -0.1,
        "decision_value": 0.7,
        "alpha": 1.3,
    }


def _check_readable(fig) -> int:
    renderer = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.get_title().startswith("layer")]
    shown = 0
    for ax in panels:
        frame = ax.get_window_extent(renderer)
        labels = [t for t in ax.texts if t.get_visible() and t.get_text()]
        boxes = [t.get_window_extent(renderer) for t in labels]
        for t, b in zip(labels, boxes):
            assert frame.x0 <= b.x0 and b.x1 <= frame.x1 and frame.y0 <= b.y0 and b.y1 <= frame.y1, t.get_text()
            names = [w.split("×")[0] for w in t.get_text().replace(" …", "").split(", ")]
            if any(w.startswith("LEAD") for w in names):
                assert names[0].startswith("LEAD"), t.get_text()  # the leader is named first
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                assert not boxes[i].overlaps(boxes[j]), (labels[i].get_text(), labels[j].get_text())
        shown += len(labels)
    (legend,) = fig.legends
    lbox = legend.get_window_extent(renderer)
    assert not any(lbox.overlaps(ax.get_window_extent(renderer)) for ax in panels)  # outside every panel
    page = fig.bbox
    assert page.x0 <= lbox.x0 and lbox.x1 <= page.x1 and page.y0 <= lbox.y0  # ... and on the page
    return shown


def test_figure9_gif_frames_are_readable_too():
    data = crowded(seed=2)
    lim = figs._limits(data)
    assert _check_readable(figs._figure9_frame(data, 0, lim, figs.MAX_LABELS)) >= 3


@pytest.mark.parametrize("seed", [0, 1])
def test_figure9_labels_apart_inside_and_leader_first(seed):
    data = crowded(seed=seed)
    fig = figs.draw_figure9(data)
    shown = _check_readable(fig)
    assert shown >= 5 * 3  # every panel keeps labels (at least the three leaders' groups)
    last = [t.get_text() for t in fig.axes[-1].texts if t.get_visible()]
    assert sorted(x.split(",")[0] for x in last) == ["LEADboring", "LEADwaste", "LEADwonderful"]


def test_figure9_labels_name_the_leader_first_then_the_others_by_count():
    pts = np.array([[0.0, 0.0]] * 4 + [[5.0, 5.0]])
    words = ["plot", "plot", "waste", "acting", "good"]
    leaders = np.array([0, 0, 1, 0, 0], bool)
    assert figs.figure9_labels(pts, words, leaders) == [(2, "waste, plot×2, acting"), (4, "good")]


def test_figure9_of_a_fitted_model_in_every_format(fitted, tmp_path):
    data = figure9_data(fitted, "great wonderful film but boring awful plot")
    json.dumps(data)  # JSON-able: the figure reads results only
    _check_readable(figs.draw_figure9(data))
    out = figs.write(figs.draw_figure9(data), tmp_path / "f9.png")
    with Image.open(out) as im:
        assert im.format == "PNG"
    with Image.open(figs.figure9_gif(data, tmp_path / "f9.gif")) as im:
        assert im.n_frames == len(data["tokens"])
    assert figs.write(figs.draw_figure9(data, layers=[0]), tmp_path / "f9.jpg").read_bytes()[:2] == b"\xff\xd8"


def test_figure9_refuses_tokens_off_the_plane():
    data = crowded()
    data["tokens"] = [[[0.0, 0.0, 0.0]]]
    with pytest.raises(InputError, match=r"needs a d = 2 model; its tokens have shape \(1, 1, 3\)"):
        figs.draw_figure9(data)
    with pytest.raises(InputError, match="has no suffix"):
        figs.write(figs.draw_figure10([]), "noext")


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 6), st.integers(1, 3)), elements=st.floats(-1e6, 1e6)))
def test_one_cluster_tolerance_gives_the_numbers_of_both_former_copies(z):
    scale = float(np.abs(z).max())
    # the sentiment copy: rtol x max(scale, 1e-12); the dynamics' copy: rtol x max(1, scale)
    assert cluster_tolerance(z, CLUSTER_RTOL, floor=CLUSTER_FLOOR) == CLUSTER_RTOL * max(scale, 1e-12)
    assert cluster_tolerance(z, 1e-6) == 1e-6 * max(1.0, scale)
