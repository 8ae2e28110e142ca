"""The sentiment view on a small model trained here: the explanation is the library's, an empty review is refused."""

from __future__ import annotations

import numpy as np
import pytest

from attndyn import InputError


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    from attndyn.sentiment import HardmaxSentimentClassifier

    rng = np.random.default_rng(0)
    pos, neg, neutral = ["great", "wonderful", "superb"], ["awful", "boring", "dull"], ["movie", "plot", "music"]
    texts = [" ".join([*rng.choice(pos if i % 2 else neg, 2), *rng.choice(neutral, 2)]) for i in range(60)]
    labels = [i % 2 for i in range(60)]
    clf = HardmaxSentimentClassifier(d=2, epochs=2, min_freq=1, random_state=0).fit(texts, labels)
    folder = tmp_path_factory.mktemp("run")
    clf.save(folder)
    return folder


def test_sentiment_view_is_the_library_explanation(run_folder):
    from attndyn.explore._sentiment_view import load_model, run_sentiment, sentiment_inputs
    from attndyn.sentiment import explain

    model = load_model(run_folder)
    res = run_sentiment(model, "a wonderful plot")
    assert res.explanation == explain(model, "a wonderful plot")
    Z = np.asarray(res.figure9["tokens"])
    assert Z.shape[1:] == (len(res.explanation.words), 2)
    assert abs(sum(c["share"] for c in res.clusters())) <= 1.0 + 1e-9
    assert res.headline().split(" ")[0] in {"positive", "negative"}
    assert sentiment_inputs("a wonderful plot", run_folder)["review.txt"] == "a wonderful plot"
    with pytest.raises(InputError, match="the review is empty; type a few words"):
        run_sentiment(model, "   ")


def test_sentiment_view_shows_the_exact_word_attributions(run_folder):
    """The words' contributions are the library's and, with the bias, add up to the decision value H."""
    from attndyn.explore._sentiment_view import load_model, run_sentiment
    from attndyn.sentiment import attribute

    model = load_model(run_folder)
    res = run_sentiment(model, "a wonderful plot but boring music")
    assert res.attribution == attribute(model, "a wonderful plot but boring music")
    shown = res.words(most=100)
    assert {w["word"] for w in shown} == {w.word for w in res.attribution.by_word}
    total = sum(w.contribution for w in res.attribution.by_word) + res.attribution.bias
    assert total == pytest.approx(res.explanation.decision_value, rel=1e-10, abs=1e-12)


def test_the_sentiment_page_colours_the_sides_as_the_exported_figure(run_folder):
    pytest.importorskip("panel")
    from attndyn.explore._pages.sentiment import SentimentPage
    from attndyn.plotting._sentiment import NEG, POS

    page = SentimentPage(run_folder)
    page.text.value = "great wonderful awful movie"
    page.explain()
    data = page.result.figure9
    k = page.layer.value
    side = np.asarray(data["tokens"])[k] @ np.asarray(data["v"]) + data["b"] > 0
    assert list(page.words.data["color"]) == [POS if s else NEG for s in side]


def test_the_sentiment_tab_exports_the_review_it_shows(run_folder):
    """Issue 34 (6): the zip held the text box's unexplained text while the PNG showed the last result."""
    pytest.importorskip("panel")
    from attndyn.explore._pages.sentiment import SentimentPage

    page = SentimentPage(str(run_folder))
    page.text.value = "a wonderful plot"
    page.explain()
    page.text.value = "boring music, never explained"
    files = page.inputs()
    assert files["review.txt"] == "a wonderful plot" == files["state.json"]["text"]


def test_the_sentiment_tab_refuses_a_folder_a_training_holds(run_folder):
    """Issue 34 (8): the tab read a run folder whose training lock was held (the CLI refused)."""
    pytest.importorskip("panel")
    from attndyn.explore._pages.sentiment import SentimentPage
    from attndyn.sentiment._runfolder import RunLock

    with RunLock(run_folder):
        page = SentimentPage(str(run_folder))
    assert page.model is None and "is being trained by process" in page.guard.pane.object


def test_the_sentiment_plot_circles_its_leaders_as_its_title_says_and_no_labels_overlap(run_folder):
    """Issue 34: the title said "(stars: leaders)" over circles, and the word labels overlapped."""
    pytest.importorskip("panel")
    from attndyn.explore._pages.sentiment import FRAME, SentimentPage

    page = SentimentPage(str(run_folder))
    page.text.value = "great wonderful superb movie plot music, awful boring dull movie plot music, great plot"
    page.explain()
    assert "circled: leaders" in page.plot.title.text and "star" not in page.plot.title.text
    names = [item.label.value for item in page.plot.legend[0].items]
    assert names == ["word (colour: side of H = 0)", "leader", "decision line H = 0"]
    data = page.result.figure9
    for k in range(len(data["tokens"])):
        page.layer.value = k
        lead = np.asarray(data["leaders"][k], dtype=bool)
        assert len(page.leads.data["x"]) == lead.sum() > 0
        labels = page.labels.data
        assert len(labels["text"]) >= 1
        x0, x1, y0, y1 = page.plot.x_range.start, page.plot.x_range.end, page.plot.y_range.start, page.plot.y_range.end
        px = (np.asarray(labels["x"]) - x0) / (x1 - x0) * FRAME[0] + np.asarray(labels["dx"])
        py = (np.asarray(labels["y"]) - y0) / (y1 - y0) * FRAME[1] + np.asarray(labels["dy"])
        boxes = [(x, y, x + 7.0 * len(t), y + 14.0) for x, y, t in zip(px, py, labels["text"])]
        for i, a in enumerate(boxes):
            assert 0 <= a[0] and a[2] <= FRAME[0] and 0 <= a[1] and a[3] <= FRAME[1], (k, labels["text"][i])
            for b in boxes[:i]:
                assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (k, a, b)


def test_place_labels_never_overlaps_and_keeps_the_most_important_first():
    from attndyn.explore._sentiment_view import place_labels

    rng = np.random.default_rng(0)
    points = rng.uniform(0, 300, (60, 2))
    texts = [f"word{i}" for i in range(60)]
    kept = place_labels(points, texts, (300, 300))
    assert kept[0][0] == 0 and [i for i, _, _ in kept] == sorted(i for i, _, _ in kept)
    boxes = [(points[i, 0] + dx, points[i, 1] + dy, 7.0 * len(texts[i]), 14.0) for i, dx, dy in kept]
    for j, (x, y, w, h) in enumerate(boxes):
        assert 0 <= x and x + w <= 300 and 0 <= y and y + h <= 300
        for bx, by, bw, bh in boxes[:j]:
            assert not (x < bx + bw and bx < x + w and y < by + bh and by < y + h)
    assert place_labels(points, texts, (300, 300)) == kept  # deterministic


def test_explore_takes_a_trained_run_folder(run_folder, monkeypatch):
    """`attndyn explore --model RUN` loads RUN before it starts (a folder that is not one is refused: test_cli.py)."""
    pytest.importorskip("panel")
    import attndyn.explore._app as explore_app
    from attndyn.cli import main

    class Started(Exception):
        pass

    def serve(port, *, open_browser, model):
        assert model == run_folder
        raise Started

    monkeypatch.setattr(explore_app, "serve", serve)
    with pytest.raises(Started):
        main(["explore", "--no-browser", "--model", str(run_folder)])
