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
