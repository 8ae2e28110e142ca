"""A behavioural test suite for sentiment classifiers, in the spirit of CheckList (Ribeiro et al., ACL 2020).

Four categories, every item written here by hand (no review of the data set is reused):

- ``simple``: minimum functionality, short sentences that are plainly positive or negative
  ("The film was good.", "A waste of time.");
- ``negation``: a negated sentiment word decides the label ("not good", "not bad at all",
  "never dull");
- ``mixed``: both polarities, with an overall label a reader agrees on ("The acting was bad,
  but the story was wonderful and I loved it.");
- ``invariance``: a labelled sentence and the same sentence followed by a neutral one ("I
  watched it on a Sunday."); the item passes when both predictions are equal (whatever they are).

:func:`score` runs any classifier (an object with ``predict(texts)`` returning 0/1, or such a
function) and returns the fraction passed per category, with the failures.

>>> n = {c: len(v) for c, v in ITEMS.items()}; n["invariance"] = len(INVARIANCE_PAIRS)
>>> n, sum(n.values()) >= 60
({'simple': 34, 'negation': 16, 'mixed': 12, 'invariance': 14}, True)
>>> rule = lambda texts: [int("good" in t or "great" in t) for t in texts]
>>> score(rule)["simple"]["n"]
34
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._validation import InputError

__all__ = [
    "ITEMS",
    "INVARIANCE_PAIRS",
    "NEUTRAL_SENTENCES",
    "HELDOUT_ITEMS",
    "HELDOUT_INVARIANCE_PAIRS",
    "SUITES",
    "CATEGORIES",
    "score",
    "summary",
]

CATEGORIES = ("simple", "negation", "mixed", "invariance")

_SIMPLE_POSITIVE = [
    "The film was good.",
    "A really good story.",
    "A great movie.",
    "This was an excellent film.",
    "Wonderful acting and a beautiful story.",
    "I loved this movie.",
    "A brilliant film.",
    "The best film I have seen this year.",
    "An amazing performance.",
    "Superb direction.",
    "A fantastic cast.",
    "I enjoyed every minute of it.",
    "Highly recommended.",
    "A delightful and charming comedy.",
    "A perfect film.",
    "The acting was great.",
    "A masterpiece.",
    "What a lovely film.",
]
_SIMPLE_NEGATIVE = [
    "The film was bad.",
    "A really bad story.",
    "A terrible movie.",
    "This was an awful film.",
    "Boring and dull.",
    "I hated this movie.",
    "The worst film I have ever seen.",
    "A waste of time.",
    "Poor acting and a stupid plot.",
    "A horrible mess.",
    "The script was weak.",
    "Utterly disappointing.",
    "Pathetic.",
    "The acting was terrible.",
    "Dreadful direction.",
    "A mediocre film.",
]
_NEGATION = [
    ("The film was not good.", 0),
    ("Not a good movie.", 0),
    ("This movie is not great.", 0),
    ("I did not like it.", 0),
    ("I did not enjoy this film.", 0),
    ("The acting was not good.", 0),
    ("Not worth watching.", 0),
    ("I would not recommend it.", 0),
    ("No good.", 0),
    ("It was not bad at all.", 1),
    ("The film was never dull.", 1),
    ("Never boring.", 1),
    ("I was not disappointed.", 1),
    ("The story was never boring.", 1),
    ("Not bad at all, a fine film.", 1),
    ("The acting is not bad.", 1),
]
_MIXED = [
    ("The acting was bad, but the story was wonderful and I loved it.", 1),
    ("Great cast, but a boring, stupid and awful film.", 0),
    ("Some scenes are dull, yet overall it is a brilliant and moving film.", 1),
    ("The music was nice, but the film was terrible and a waste of time.", 0),
    ("Despite a weak start, this is an excellent, wonderful movie.", 1),
    ("Beautiful photography cannot save this dull, boring, pointless mess.", 0),
    ("The first half is slow, but the ending is amazing and the film is great.", 1),
    ("One good scene in an otherwise awful and dreadful movie.", 0),
    ("Not perfect, but a wonderful and enjoyable film.", 1),
    ("The lead is good, but the script is terrible, the plot is stupid and the film is boring.", 0),
    ("A few silly moments, but a superb, touching and beautiful story.", 1),
    ("Nice costumes, but the worst acting and a horrible, pathetic script.", 0),
]

#: The test items of the labelled categories: ``{category: [(text, label), ...]}``, label 1 = positive.
ITEMS: dict[str, list[tuple[str, int]]] = {
    "simple": [(t, 1) for t in _SIMPLE_POSITIVE] + [(t, 0) for t in _SIMPLE_NEGATIVE],
    "negation": _NEGATION,
    "mixed": _MIXED,
}

#: Sentences that say nothing about a film's quality.
NEUTRAL_SENTENCES = [
    "I watched it on a Sunday.",
    "The film is two hours long.",
    "It was released in the spring.",
    "My brother came with me.",
    "It was shown at the local cinema.",
    "The director is from Canada.",
    "I saw it with friends.",
]

#: ``(text, text + " " + neutral sentence)``: the label must not change.
INVARIANCE_PAIRS: list[tuple[str, str]] = [
    (t, t + " " + NEUTRAL_SENTENCES[i % len(NEUTRAL_SENTENCES)])
    for i, t in enumerate(_SIMPLE_POSITIVE[:7] + _SIMPLE_NEGATIVE[:7])
]


# ---- the held-out suite ---------------------------------------------------------------------------------------
# Written once, on 2026-11-27, before the sign prior of issue 30 was tuned, and never used to choose a setting:
# the suite the recipe is tuned on is the one above; this one says whether that tuning carries over to sentences
# it has not seen (other words, other sentence shapes).
_HELDOUT_SIMPLE_POSITIVE = [
    "Good.",
    "A good film.",
    "It is a good movie.",
    "Such a great story.",
    "An excellent cast.",
    "The ending was wonderful.",
    "We loved the music.",
    "A beautiful and touching film.",
    "The performances are brilliant.",
    "A truly impressive debut.",
    "Terrific fun from start to end.",
    "The dialogue is clever and witty.",
    "One of the best comedies.",
    "A gripping thriller.",
    "I really enjoyed the film.",
]
_HELDOUT_SIMPLE_NEGATIVE = [
    "Bad.",
    "A bad film.",
    "It is a bad movie.",
    "Such a boring story.",
    "An awful cast.",
    "The ending was terrible.",
    "We hated the music.",
    "A dull and tedious film.",
    "The performances are pathetic.",
    "A truly disappointing debut.",
    "Painful from start to end.",
    "The dialogue is stupid and lame.",
    "One of the worst comedies.",
    "A predictable, forgettable thriller.",
    "I really disliked the film and was bored.",
]
_HELDOUT_NEGATION = [
    ("It is not a good film.", 0),
    ("The story was not great.", 0),
    ("Not an excellent movie.", 0),
    ("I did not love it.", 0),
    ("The cast was not impressive.", 0),
    ("I could not recommend this movie.", 0),
    ("The ending was not wonderful.", 0),
    ("It is not a bad film.", 1),
    ("The story was not boring.", 1),
    ("Never dull for a minute.", 1),
    ("The acting was not terrible.", 1),
    ("Not a disappointing movie.", 1),
]
_HELDOUT_MIXED = [
    ("The sets are bad, but the cast is brilliant and the story is wonderful.", 1),
    ("A great poster for a boring, awful and pointless film.", 0),
    ("The start is dull, but it becomes a superb and beautiful movie.", 1),
    ("Good costumes, but a terrible script and a stupid, tedious plot.", 0),
    ("Though a little slow, it is an excellent and moving story.", 1),
    ("One nice song cannot save this awful, dreadful mess.", 0),
    ("Not flawless, but a wonderful, charming and clever comedy.", 1),
    ("The actors try hard, but the film is boring, lame and a waste of time.", 0),
]
_HELDOUT_NEUTRAL = [
    "We bought the tickets online.",
    "The cinema was full.",
    "It has English subtitles.",
    "I went there by bus.",
    "The film was made in Spain.",
    "It came out last year.",
]

#: The held-out suite (:func:`score` with ``suite="heldout"``), in the shape of :data:`ITEMS`.
HELDOUT_ITEMS: dict[str, list[tuple[str, int]]] = {
    "simple": [(t, 1) for t in _HELDOUT_SIMPLE_POSITIVE] + [(t, 0) for t in _HELDOUT_SIMPLE_NEGATIVE],
    "negation": _HELDOUT_NEGATION,
    "mixed": _HELDOUT_MIXED,
}

#: The held-out invariance pairs, in the shape of :data:`INVARIANCE_PAIRS`.
HELDOUT_INVARIANCE_PAIRS: list[tuple[str, str]] = [
    (t, t + " " + _HELDOUT_NEUTRAL[i % len(_HELDOUT_NEUTRAL)])
    for i, t in enumerate(_HELDOUT_SIMPLE_POSITIVE[3:9] + _HELDOUT_SIMPLE_NEGATIVE[3:9])
]

#: The two suites: ``tuning`` (the recipe is chosen on it) and ``heldout`` (never used to choose).
SUITES: dict[str, tuple[dict[str, list[tuple[str, int]]], list[tuple[str, str]]]] = {
    "tuning": (ITEMS, INVARIANCE_PAIRS),
    "heldout": (HELDOUT_ITEMS, HELDOUT_INVARIANCE_PAIRS),
}


def _predictor(classifier: Any) -> Callable[[list[str]], np.ndarray]:
    fn = getattr(classifier, "predict", classifier)
    if not callable(fn):
        raise InputError(
            f"score needs a classifier with predict(texts) or a function of a list of texts, got "
            f"{type(classifier).__name__}"
        )
    return lambda texts: np.asarray(fn(list(texts))).astype(int).reshape(-1)


def score(classifier: Any, *, categories: Sequence[str] = CATEGORIES, suite: str = "tuning") -> dict[str, dict]:
    """Per category: ``{"accuracy": passed / n, "n": n, "failures": [texts]}``.

    ``suite``: ``"tuning"`` (:data:`ITEMS`, :data:`INVARIANCE_PAIRS`: the suite recipes are chosen on) or
    ``"heldout"`` (:data:`HELDOUT_ITEMS`, :data:`HELDOUT_INVARIANCE_PAIRS`: written before tuning, never used to choose).

    ``classifier``: an object with ``predict(texts)`` giving 0/1 per text (1 = positive), such as
    a fitted :class:`~attndyn.sentiment.HardmaxSentimentClassifier` or a scikit-learn pipeline, or
    such a function. An invariance item passes when the two texts of the pair get the same label.
    """
    unknown = [c for c in categories if c not in CATEGORIES]
    if unknown:
        raise InputError(f"unknown checklist categories {unknown}; choose from {list(CATEGORIES)}")
    if suite not in SUITES:
        raise InputError(f"unknown checklist suite {suite!r}; choose from {list(SUITES)}")
    labelled, pairs = SUITES[suite]
    predict = _predictor(classifier)
    out: dict[str, dict] = {}
    for cat in categories:
        if cat == "invariance":
            a = predict([p[0] for p in pairs])
            b = predict([p[1] for p in pairs])
            ok = a == b
            failures = [p[1] for p, good in zip(pairs, ok) if not good]
        else:
            items = labelled[cat]
            pred = predict([t for t, _ in items])
            ok = pred == np.asarray([y for _, y in items])
            failures = [t for (t, _), good in zip(items, ok) if not good]
        out[cat] = {"accuracy": float(np.mean(ok)), "n": int(len(ok)), "failures": failures}
    return out


def summary(result: dict[str, dict]) -> str:
    """One line: ``simple 1.00 (34), negation 0.81 (16), ...``."""
    return ", ".join(f"{c} {r['accuracy']:.2f} ({r['n']})" for c, r in result.items())
