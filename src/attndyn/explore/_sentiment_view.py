r"""The sentiment view's logic: a review and a trained model -> the prediction, the words through the layers,
the clusters with their leaders and shares (hardmax paper, Section 6 and Figure 9), and each word's exact
contribution to the decision.

:func:`attndyn.sentiment.explain` gives the label, the probability and each cluster's leader words and
share of the decision value :math:`H = \langle v, \bar z^K\rangle + b`; :func:`attndyn.sentiment.figure9_data`
the words' positions at every layer of the model's hardmax dynamics (eq. (1.1)) and who leads at each.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..sentiment import Attribution, Explanation, HardmaxSentimentClassifier

__all__ = [
    "SentimentResult",
    "load_model",
    "run_sentiment",
    "sentiment_inputs",
    "sentiment_figure",
    "place_labels",
    "MAX_CHARS",
]

MAX_CHARS = 20_000  # a typed review longer than this is refused (a page, not a corpus)


def load_model(run: str | Path) -> HardmaxSentimentClassifier:
    """The trained model of a run or model folder (``attndyn sentiment train --run RUN``)."""
    from ..sentiment import HardmaxSentimentClassifier

    return HardmaxSentimentClassifier.load(Path(run))


@dataclass(frozen=True)
class SentimentResult:
    """The explanation of one review and Figure 9's data (``None`` fields of the data for d != 2 plots)."""

    text: str
    explanation: Explanation
    figure9: dict[str, Any]  # words, tokens (K+1, n [+ R], d), leaders (K+1, n [+ R]), v, b, H, alpha [, registers]
    attribution: Attribution  # each input word's exact share of H (attndyn.sentiment.attribute)

    def headline(self) -> str:
        e = self.explanation
        side = "positive" if e.decision_value > 0 else "negative"
        return f"{side} (p positive = {e.probability:.3f}; H = {e.decision_value:+.3f}, {e.known_words} known words)"

    def clusters(self) -> list[dict[str, Any]]:
        """One row per cluster: its leader words, its words, its share of the decision."""
        return [
            {"leaders": ", ".join(c.leaders), "share": round(c.share, 3), "size": c.size, "words": ", ".join(c.words)}
            for c in self.explanation.clusters
        ]

    def words(self, most: int = 12) -> list[dict[str, Any]]:
        """The word types with the largest exact contributions to H (they and the bias add up to H)."""
        return [
            {"word": w.word, "count": w.count, "contribution": round(w.contribution, 4)}
            for w in self.attribution.by_word[:most]
        ]


def run_sentiment(model: HardmaxSentimentClassifier, text: str) -> SentimentResult:
    """Explain ``text`` with ``model``; an empty or over-long review raises :class:`attndyn.InputError`."""
    from ..sentiment import attribute, explain, figure9_data

    if not isinstance(text, str) or not text.strip():
        raise InputError("the review is empty; type a few words, e.g. 'a wonderful film'")
    if len(text) > MAX_CHARS:
        raise InputError(f"the review has {len(text)} characters; type at most {MAX_CHARS}")
    return SentimentResult(text, explain(model, text), figure9_data(model, text), attribute(model, text))


def sentiment_inputs(text: str, run: str | Path) -> dict[str, Any]:
    """The files that rerun this explanation from the command line: the review and the command."""
    return {
        "review.txt": text,
        "state.json": {"text": text, "model": str(run)},
        "command.txt": f"attndyn sentiment explain --model {run} --file review.txt --json\n",
    }


def sentiment_figure(result: SentimentResult) -> Figure:
    """Figure 9 of the hardmax paper for this review (:func:`attndyn.plotting._sentiment.draw_figure9`, d = 2)."""
    from ..plotting._sentiment import draw_figure9

    return draw_figure9(result.figure9)


#: Where a label may sit relative to its point, in pixels (the label's lower-left corner, y up), tried in this
#: order: right, above-right, below-right, left, above, below; ``w``, ``h`` are the label's width and height.
_SPOTS = (
    lambda w, h: (6.0, -h / 2),
    lambda w, h: (6.0, 4.0),
    lambda w, h: (6.0, -h - 4.0),
    lambda w, h: (-w - 6.0, -h / 2),
    lambda w, h: (-w / 2, 8.0),
    lambda w, h: (-w / 2, -h - 8.0),
)


def place_labels(
    anchors: np.ndarray, texts: list[str], frame: tuple[float, float], *, char_px: float = 7.0, line_px: float = 14.0
) -> list[tuple[int, float, float]]:
    """Put labels beside their points without overlaps: ``(label, x_offset, y_offset)`` in pixels for each label
    drawn, in order of importance (the order of ``texts``).

    ``anchors`` (m, 2) are the points in pixels of a frame of ``frame`` = (width, height) pixels, y up; a label
    ``char_px`` per character wide and ``line_px`` high is tried at each spot of :data:`_SPOTS` in turn and sits at
    the first inside the frame that overlaps no label placed before it; a label with no such spot is not drawn
    (deterministic, as the exported figure's check is: :func:`attndyn.plotting.sentiment.draw_figure9`).

    >>> points = np.array([[100.0, 50.0], [102.0, 50.0], [100.0, 50.0], [100.0, 52.0], [195.0, 50.0]])
    >>> place_labels(points, ["good", "film", "plot", "acting", "end"], (200, 100))  # no spot is left for 'acting'
    [(0, 6.0, -7.0), (1, -34.0, -7.0), (2, -14.0, 8.0), (4, -27.0, -7.0)]
    """
    placed: list[tuple[float, float, float, float]] = []
    out = []
    W, H = frame
    for i, (text, (x, y)) in enumerate(zip(texts, np.asarray(anchors, dtype=float))):
        w, h = char_px * len(text), line_px
        for spot in _SPOTS:
            dx, dy = spot(w, h)
            box = (x + dx, y + dy, x + dx + w, y + dy + h)
            inside = 0 <= box[0] and box[2] <= W and 0 <= box[1] and box[3] <= H
            if inside and not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                placed.append(box)
                out.append((i, dx, dy))
                break
    return out
