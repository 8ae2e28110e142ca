"""Interpretable sentiment analysis with a hardmax transformer (hardmax paper, Section 6).

``recipes`` holds every setting's default per d, ``data`` reads IMDb, ``text`` tokenizes, ``model`` is the network, ``train`` the loop,
``estimator`` the scikit-learn face, ``explain``/``evaluate`` read a fitted model, ``attribution``
splits its decision exactly over the input words, ``baselines``/``faithfulness`` measure word
explanations by deleting words; :mod:`attndyn.plotting._sentiment` draws their results.
"""

from typing import TYPE_CHECKING

from .._lazy import attach

# Imported on first use (attndyn._lazy): a command imports only the modules it uses.
if TYPE_CHECKING:
    from ._attribution import Attribution, attribute, cluster_flow
    from ._data import (
        ImdbSplit,
        Reviews,
        download_imdb,
        load_imdb,
        read_aclimdb,
        read_csv,
        read_reviews,
        split_official,
        split_random,
    )
    from ._estimator import HardmaxSentimentClassifier
    from ._explain import CLUSTER_FLOOR, CLUSTER_RTOL, Explanation, explain, figure9_data, trajectory_of
    from ._inference import seal_model_folder
    from ._model import SentimentConfig, SentimentTransformer
    from ._pinning import PINNED_KERNELS, KernelPaths, kernel_paths, pin_kernels
    from ._recipes import RECIPES, recipe
    from ._text import TextConfig, Tokenizer, Vocabulary
    from ._train import TrainConfig

__getattr__, __dir__ = attach(__name__, __file__)

__all__ = [
    "CLUSTER_FLOOR",
    "CLUSTER_RTOL",
    "RECIPES",
    "Attribution",
    "Explanation",
    "HardmaxSentimentClassifier",
    "ImdbSplit",
    "KernelPaths",
    "PINNED_KERNELS",
    "Reviews",
    "SentimentConfig",
    "SentimentTransformer",
    "TextConfig",
    "Tokenizer",
    "TrainConfig",
    "Vocabulary",
    "attribute",
    "cluster_flow",
    "download_imdb",
    "explain",
    "figure9_data",
    "load_imdb",
    "read_aclimdb",
    "read_csv",
    "kernel_paths",
    "pin_kernels",
    "read_reviews",
    "recipe",
    "seal_model_folder",
    "split_official",
    "split_random",
    "trajectory_of",
]
