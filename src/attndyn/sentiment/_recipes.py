"""One recipe per d: every sentiment setting, its default and the per-d changes, written once.

A setting belongs to exactly one frozen dataclass, which holds its default (the reported d = 2
model): the architecture to :class:`~attndyn.sentiment._model.SentimentConfig`, the text side to
:class:`~attndyn.sentiment._text.TextConfig`, the loop to
:class:`~attndyn.sentiment._train.TrainConfig`. :data:`RECIPES` lists, per range of d, the
settings that differ from those defaults: the reported d = 16 model of docs/sentiment-results.md is the
d = 2 model with smaller initial word vectors, a looser log-odds filter, bigram tokens, more
word dropout and lower, decaying learning rates. The estimator's parameters and the CLI's options
default to None, which means "the recipe for d" (:func:`resolve`); an explicit value wins.

>>> recipe(2)["epochs"], recipe(16)["epochs"], recipe(16)["bigrams"], recipe(64)["lr"]
(8, 7, 5, 0.001)
>>> resolve({"d": 16, "epochs": 3, "lr": None})["epochs"], resolve({"d": 16, "lr": None})["lr"]
(3, 0.001)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from types import MappingProxyType
from typing import Any

import numpy as np

from .._devices import resolve_device
from .._errors import param
from .._validation import InputError
from ._config import check_integer
from ._model import SentimentConfig
from ._text import TextConfig
from ._train import TrainConfig

__all__ = [
    "Recipe",
    "RECIPES",
    "SETTINGS",
    "PARAMS",
    "recipe",
    "recipe_for",
    "resolve",
    "split_settings",
    "check_params",
    "configs",
]

#: Dataclass fields that are not settings: learned from the data (``vocab_size``), given by the
#: estimator's ``random_state`` (``seed``) or the estimator's own parameter (``d``), or kept
#: inside the loop (``clip_norm``, ``eval_batch_size``: their defaults are the only values used).
NOT_SETTINGS = ("vocab_size", "d", "seed", "clip_norm", "eval_batch_size")

_OWNERS: tuple[type, ...] = (SentimentConfig, TextConfig, TrainConfig)

#: Every setting name -> the dataclass that holds it and its default.
SETTINGS: Mapping[str, type] = MappingProxyType(
    {f.name: cls for cls in _OWNERS for f in fields(cls) if f.name not in NOT_SETTINGS}
)


#: The parameters of :class:`~attndyn.sentiment.HardmaxSentimentClassifier` and their defaults: ``d``, every
#: setting (None: the recipe for d), which label is positive sentiment (None: inferred), then how the estimator
#: runs. A saved model's config.json records these (a file from before ``positive_label`` loads with None).
PARAMS: Mapping[str, Any] = MappingProxyType(
    {
        "d": 2,
        **dict.fromkeys(SETTINGS),
        "positive_label": None,
        "inference": "hardmax",
        "random_state": 0,
        "run_dir": None,
        "verbose": False,
        "device": "cpu",
    }
)


def _default(cls: type, name: str) -> Any:
    f = cls.__dataclass_fields__[name]  # type: ignore[attr-defined]
    return f.default if f.default is not MISSING else f.default_factory()


@dataclass(frozen=True)
class Recipe:
    """The settings for ``min_d <= d`` (up to the next recipe's ``min_d``): the dataclasses'
    defaults, with ``changes`` applied. ``measured`` says where its numbers are reported."""

    name: str
    min_d: int
    changes: Mapping[str, Any]
    measured: str

    def __post_init__(self) -> None:
        unknown = sorted(set(self.changes) - set(SETTINGS))
        if unknown:
            raise InputError(f"recipe {self.name!r} changes unknown settings {unknown}; known: {sorted(SETTINGS)}")


#: The recipes, by increasing ``min_d``. d < 16 uses the d = 2 recipe (measured at d = 2, 4 and 8:
#: 0.869-0.876 with at most 0.23 clusters per token); d >= 16 the d = 16 one (measured at d = 16
#: only; in higher dimensions the random part of N(0, 0.12^2) word vectors grows like sqrt(d), so
#: larger d may need a smaller ``embed_init_std`` to keep the clusters).
RECIPES: tuple[Recipe, ...] = (
    Recipe("d2", 1, MappingProxyType({}), "docs/sentiment-results.md"),
    Recipe(
        "d16",
        16,
        MappingProxyType(
            {
                "embed_init_std": 0.12,
                "min_log_odds": 0.1,
                "bigrams": 5,
                "word_dropout": 0.25,
                "embed_lr": 3e-3,
                "lr": 1e-3,
                "lr_decay": 0.7,
                "epochs": 7,
                "patience": 2,
            }
        ),
        "docs/sentiment-results.md",
    ),
)


def _check_d(d: Any) -> int:
    """d as a Python int: an integer >= 1 (Python or NumPy, as a grid search passes it), else an InputError."""
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)) or d < 1:
        raise InputError(f"d must be a positive integer, got {d!r}")
    return int(d)


def recipe_for(d: int) -> Recipe:
    """The recipe that applies to dimension ``d``: the last one with ``min_d <= d``."""
    d = _check_d(d)
    return [r for r in RECIPES if r.min_d <= d][-1]


def recipe(d: int) -> dict[str, Any]:
    """Every setting (:data:`SETTINGS`) with its value for dimension ``d``."""
    r = recipe_for(d)
    return {name: r.changes.get(name, _default(cls, name)) for name, cls in SETTINGS.items()}


def resolve(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` (holding ``d``) with every setting that is None or absent taken from the recipe
    for ``d``; names that are not settings pass through unchanged."""
    base = recipe(params.get("d", 2))
    # NumPy integers (a grid search's values) as Python ints: the configs' checks take ints, and JSON writes them
    out = {k: int(v) if isinstance(v, np.integer) else v for k, v in params.items()}
    for name, value in base.items():
        if out.get(name) is None:
            out[name] = value
    return out


def split_settings(settings: Mapping[str, Any]) -> dict[type, dict[str, Any]]:
    """Resolved ``settings`` grouped by owning dataclass (model settings include ``d``)."""
    groups: dict[type, dict[str, Any]] = {cls: {} for cls in _OWNERS}
    for name, cls in SETTINGS.items():
        groups[cls][name] = settings[name]
    groups[SentimentConfig]["d"] = settings["d"]
    return groups


def configs(
    settings: Mapping[str, Any], vocab_size: int, seed: int = 0
) -> tuple[SentimentConfig, TextConfig, TrainConfig]:
    """The three dataclasses of resolved ``settings`` (each checks its own fields): the model's for a vocabulary
    of ``vocab_size`` words, the text's, and the loop's seeded by ``seed``."""
    groups = split_settings(settings)
    return (
        SentimentConfig(vocab_size=vocab_size, **groups[SentimentConfig]),
        TextConfig(**groups[TextConfig]),
        TrainConfig(**groups[TrainConfig], seed=seed),
    )


def _check_positive_label(label: Any) -> None:
    """None, or one label as ``y`` may hold them: an integer (not a boolean), a finite number or a string."""
    ok = label is None or (
        isinstance(label, (str, int, float, np.integer, np.floating)) and not isinstance(label, (bool, np.bool_))
    )
    if not ok or (isinstance(label, (float, np.floating)) and not np.isfinite(label)):
        raise InputError(
            f"positive_label must be the label of positive sentiment (an integer or a string such as 'pos'), "
            f"or None to infer it, got {label!r}"
        )


def check_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """Check the estimator's parameters (:data:`PARAMS`; absent ones take their defaults) before any tokenizing
    or training: unknown names, each setting's type and range (strings such as ``alpha_min="0.5"``, NaN and
    infinities are refused with the setting's name); return the resolved settings (:func:`resolve`).

    >>> check_params({"d": 16})["bigrams"]
    5
    >>> check_params({"d": 2, "alpha_min": "0.5"})
    Traceback (most recent call last):
    attndyn._validation.InputError: alpha_min must be a positive number, got '0.5' (a str); pass a number such as 0.5, not a string
    """
    unknown = sorted(set(params) - set(PARAMS))
    if unknown:
        raise InputError(f"unknown parameters {unknown}; the estimator's parameters are {sorted(PARAMS)}")
    p = {**PARAMS, **params}
    if p["inference"] not in ("hardmax", "softmax"):
        raise InputError(f"inference must be 'hardmax' or 'softmax', got {p['inference']!r}")
    if not isinstance(p["verbose"], (bool, np.bool_)):
        raise InputError(f"verbose must be True or False, got {p['verbose']!r}")
    if p["run_dir"] is not None and not isinstance(p["run_dir"], (str, os.PathLike)):
        raise InputError(f"run_dir must be a folder path or None, got {p['run_dir']!r}")
    check_integer(p["random_state"], param("setting.random_state", "random_state"), low=0)  # CLI: --seed
    _check_positive_label(p["positive_label"])
    resolve_device(p["device"])
    settings = resolve(p)
    configs(settings, vocab_size=1)
    return settings
