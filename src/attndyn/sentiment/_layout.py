"""A run folder's layout: the name of every file in it, written once (docs/run-folders.md).

:mod:`attndyn.sentiment._runfolder` reads and writes run folders by these names, and so do the training loop
(:mod:`attndyn.sentiment._train`: checkpoint, weights, metrics) and the model files (config, vocabulary, weights).
"""

__all__ = [
    "SETTINGS",
    "DATA",
    "CONFIG",
    "VOCAB",
    "WEIGHTS",
    "CHECKPOINT",
    "METRICS",
    "TEST",
    "EVALUATION",
    "CACHE",
    "EVALUATION_FILES",
    "RUN_FILES",
]

SETTINGS = "settings.json"
DATA = "data.json"
CONFIG = "config.json"
VOCAB = "vocab.json"
WEIGHTS = "weights.safetensors"
CHECKPOINT = "checkpoint.safetensors"
METRICS = "metrics.json"
TEST = "test.json"
EVALUATION = "evaluation.json"
CACHE = "cache"
#: What ``evaluate`` writes: stale once the run trains again.
EVALUATION_FILES = (EVALUATION, "figure8.png", "figure10.png", "accuracy.png")
#: What ``train`` and ``evaluate`` write in a run folder (``overwrite=True`` removes these and nothing else;
#: the tokenization ``cache/`` stays, it is keyed by the data file and the tokenizer).
RUN_FILES = (SETTINGS, DATA, CONFIG, VOCAB, WEIGHTS, CHECKPOINT, METRICS, TEST, *EVALUATION_FILES)
#: Where ``overwrite=True`` keeps the discarded run's files until the new run has finished an epoch (a training that
#: fails before its first checkpoint puts them back: the old run is not lost to a bad setting).
OVERWRITTEN = ".overwritten"
