"""Sweep's cell function over a trained sentiment model; the cells of the papers' statements live in
:mod:`attndyn.experiments.cells`, in the one registry :mod:`attndyn.experiments.registry`."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np

from ..experiments.registry import Param, experiment

if TYPE_CHECKING:
    from ..sentiment import HardmaxSentimentClassifier
    from ..sentiment.data import Reviews

__all__ = ["sentiment_leaders"]


@functools.lru_cache(maxsize=4)
def _sentiment_run(run: str, data: str) -> tuple[HardmaxSentimentClassifier, Reviews, np.ndarray]:
    """(estimator, reviews, shuffled test indices) of a run folder, loaded once per process: the run's data
    (``data``, else what its ``data.json`` records) and split, read by :class:`~attndyn.sentiment.runfolder.RunFolder`."""
    from ..sentiment import HardmaxSentimentClassifier
    from ..sentiment.data import read_reviews
    from ..sentiment.runfolder import RunFolder

    folder = RunFolder(run)
    est = HardmaxSentimentClassifier.load(folder.path)
    info = folder.data_or_default(est.random_state)
    reviews = read_reviews(data or info["data"])
    _, test = folder.split(reviews, info)
    return est, reviews, test[np.random.default_rng(0).permutation(len(test))]


@experiment(
    "sentiment_leaders",
    params={
        "run": Param(str, help="a run folder of `attndyn sentiment train`"),
        "data": Param(str, "", help="reviews (default: the run's data.json)"),
    },
    outputs={
        "d": "int64",
        "words": "int64",
        "leaders": "int64",
        "leaders_per_word": "float64",
        "correct": "bool",
        "probability": "float64",
    },
    primary="leaders",
    title="Hardmax paper Section 6: leaders per review of a trained sentiment model",
)
def sentiment_leaders(seed: int, *, run: str, data: str) -> dict:
    """Review number ``seed`` of the run's test split (in a fixed shuffled order) through the trained
    model's hardmax layers; ``leaders`` are the distinct leader words at the last layer
    (:func:`attndyn.sentiment.explain`), ``correct`` whether the prediction is right."""
    from ..sentiment import explain

    est, reviews, order = _sentiment_run(run, data)
    if seed >= len(order):
        raise IndexError(f"seed {seed} is beyond the {len(order)} test reviews of {run}")
    i = int(order[seed])
    ex = explain(est, reviews.texts[i])
    return {
        "d": int(est.model_.config.d),
        "words": len(ex.words),
        "leaders": len(ex.leaders),
        "leaders_per_word": len(ex.leaders) / len(ex.words),
        "correct": bool(ex.label == est.classes_[int(reviews.labels[i])]),
        "probability": float(ex.probability),
    }
