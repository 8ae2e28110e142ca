"""Interpretable sentiment analysis with a hardmax transformer (hardmax paper, Section 6).

:class:`HardmaxSentimentClassifier` is the scikit-learn face: every setting's default comes from one recipe
per d (:data:`RECIPES`); :func:`load_imdb` reads IMDb, :class:`Tokenizer` tokenizes, :class:`SentimentTransformer`
is the network. :func:`train_run` trains a run folder as ``attndyn sentiment train`` does and :func:`open_run`
opens one (its model, data and split) under the reading lock. :func:`explain` reads a fitted model,
:func:`attribute` splits its decision exactly over the input words, :func:`faithfulness` measures word
explanations by deleting words; :mod:`attndyn.plotting` draws their results.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

# Imported on first use (attndyn._lazy): a command imports only the modules it uses.
if TYPE_CHECKING:
    from ._attribution import Attribution, attribute, cluster_flow, influence
    from ._baselines import MethodSettings
    from ._data import ImdbSplit, Reviews, download_imdb, load_imdb, read_reviews
    from ._estimator import HardmaxSentimentClassifier
    from ._explain import CLUSTER_FLOOR, CLUSTER_RTOL, Explanation, explain, figure9_data, trajectory_of
    from ._faithfulness import StudySettings, faithfulness
    from ._inference import seal_model_folder
    from ._model import SentimentConfig, SentimentTransformer, distinct_words
    from ._pinning import PINNED_KERNELS, KernelPaths, kernel_paths, pin_kernels
    from ._recipes import RECIPES, recipe
    from ._runs import OpenRun, TrainedRun, open_run, train_run
    from ._text import TextConfig, Tokenizer, Vocabulary
    from ._train import TrainConfig

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "HardmaxSentimentClassifier",
    "RECIPES",
    "recipe",
    "SentimentConfig",
    "SentimentTransformer",
    "TextConfig",
    "TrainConfig",
    "Tokenizer",
    "Vocabulary",
    "distinct_words",
    "ImdbSplit",
    "Reviews",
    "download_imdb",
    "load_imdb",
    "read_reviews",
    "train_run",
    "TrainedRun",
    "open_run",
    "OpenRun",
    "seal_model_folder",
    "Explanation",
    "explain",
    "figure9_data",
    "trajectory_of",
    "CLUSTER_FLOOR",
    "CLUSTER_RTOL",
    "Attribution",
    "attribute",
    "cluster_flow",
    "influence",
    "faithfulness",
    "StudySettings",
    "MethodSettings",
    "pin_kernels",
    "kernel_paths",
    "KernelPaths",
    "PINNED_KERNELS",
]
