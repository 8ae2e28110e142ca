"""A fitted sentiment model without scikit-learn: read it from its folder, encode texts, decide.

:class:`FittedModel` is what a trained :class:`~attndyn.sentiment.HardmaxSentimentClassifier` predicts
with (its ``settings_``, ``vocab_``, ``classes_`` and ``model_``), and :func:`load_model` reads one from a
folder written by ``save()`` or ``attndyn sentiment train``, with every check of
:mod:`attndyn.sentiment._modelfile`. The estimator's ``load`` and ``predict``/``predict_proba`` go through
here, and so does ``attndyn sentiment predict``, which then needs torch but not scikit-learn.

The decision value of a text is H = <v, mean of the last layer's real tokens> + b (hardmax paper, Section
6; the hardmax layers are the core engine's, eq. (1.1)), and its probability of ``classes[1]`` is
sigmoid(H).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .._devices import resolve_device
from .._errors import param
from .._validation import InputError
from ._layout import CONFIG, VOCAB, WEIGHTS
from ._model import SentimentConfig, SentimentTransformer
from ._modelfile import (
    HASHED,
    MAX_JSON_BYTES,
    MAX_WEIGHTS_BYTES,
    SEAL,
    check_config_record,
    check_vocab,
    check_weights,
    read_json,
    read_model_file,
    seal,
)
from ._recipes import SETTINGS, split_settings
from ._text import TextConfig, Tokenizer, Vocabulary, encode
from ._train import EncodedSplit, predict_logits

__all__ = ["FittedModel", "load_model", "seal_model_folder", "check_texts", "sigmoid"]

_NOT_A_MODEL = "give a folder written by save() or by `attndyn sentiment train`"


#: The ``inference`` values: the paper's hardmax, or the softmax the model was trained with.
INFERENCES = ("hardmax", "softmax")


def check_texts(X: Any, name: str = "X") -> list[str]:
    """A list of strings, or an InputError naming what is wrong. A one-column pandas DataFrame gives its rows
    (iterating a DataFrame would give its column names), and so does an array of shape (n, 1); one of several
    columns is refused.

    >>> import pandas as pd
    >>> check_texts(pd.DataFrame({"review": ["great fun", "dull"]}))
    ['great fun', 'dull']
    """
    if isinstance(X, str):
        raise InputError(f"{name} must be a list of texts, got one string; wrap it in a list: [text]")
    if getattr(X, "ndim", None) == 2 and hasattr(X, "columns") and hasattr(X, "iloc"):  # a pandas DataFrame
        columns = [str(c) for c in X.columns]
        if len(columns) != 1:
            first = X.columns[0] if columns else "review"
            raise InputError(
                f"{name} is a DataFrame of {len(columns)} columns {columns}, not a list of texts; "
                f"pass the one column of texts, e.g. df[{first!r}]"
            )
        X = X.iloc[:, 0]
    elif getattr(X, "ndim", None) == 2 and hasattr(X, "shape"):  # a 2-D array: its one column, as a DataFrame's
        if X.shape[1] != 1:
            raise InputError(
                f"{name} is an array of shape {tuple(X.shape)}, not a list of texts; "
                "pass a 1-D array or list of strings, e.g. X[:, 0]"
            )
        X = X[:, 0]
    try:
        texts = list(X)
    except TypeError:
        raise InputError(f"{name} must be a list of texts, got {type(X).__name__}") from None
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise InputError(f"{name}[{i}] is {type(t).__name__}, not a text; pass strings only")
    if not texts:
        raise InputError(f"{name} is empty; give at least one text")
    return texts


def sigmoid(h: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-h)) without overflow: 0.5 (1 + tanh(h / 2)).

    >>> sigmoid(np.array([-1e4, 0.0, 1e4])).tolist()
    [0.0, 0.5, 1.0]
    """
    return 0.5 * (1.0 + np.tanh(0.5 * np.asarray(h, dtype=np.float64)))


@dataclass(frozen=True, eq=False)
class FittedModel:
    """A trained model and what reading a text needs: ``settings`` (every setting as trained, and ``d``),
    ``vocab``, the two ``classes`` (H > 0 means ``classes[1]``), the network, and ``inference`` ("hardmax", the
    paper's, or "softmax"). A loaded one also holds the estimator's ``params`` as given (None: the recipe for
    d), the training ``history`` and ``best_epoch``."""

    settings: Mapping[str, Any]
    vocab: Vocabulary
    classes: np.ndarray
    model: SentimentTransformer
    inference: str = "hardmax"
    params: Mapping[str, Any] = field(default_factory=dict)
    history: list[dict] = field(default_factory=list)
    best_epoch: int = -1

    @cached_property
    def tokenizer(self) -> Tokenizer:
        """The tokenizer the model was trained with (its :class:`~attndyn.sentiment._text.TextConfig`)."""
        return TextConfig(**split_settings(self.settings)[TextConfig]).tokenizer()

    @property
    def max_len(self) -> int:
        return int(self.settings["max_len"])

    def encode(self, X: Any = None, y: Any = None, *, tokens: list[list[str]] | None = None) -> EncodedSplit:
        """Texts ``X`` (or their ``tokens``) as model input: word indices cut to ``max_len``, the mask, and
        ``y`` as 1.0 for ``classes[1]`` (None: zeros)."""
        if tokens is None:
            tokens = [self.tokenizer(t) for t in check_texts(X)]
        ids, mask = encode(tokens, self.vocab, self.max_len)
        if y is None:
            lab = torch.zeros(len(tokens))
        else:
            lab = torch.as_tensor((np.asarray(y) == self.classes[1]).astype(np.float32))
        return EncodedSplit(ids, mask, lab)

    def decision_function(self, X: Any) -> np.ndarray:
        """H per text (positive: ``classes[1]``)."""
        if self.inference not in INFERENCES:  # set_params can change it after fit's check
            raise InputError(
                f"inference must be 'hardmax' or 'softmax', got {self.inference!r}; "
                "set it with set_params(inference='hardmax')"
            )
        return predict_logits(self.model, self.encode(X), hardmax=self.inference == "hardmax").numpy()

    def predict_proba(self, X: Any) -> np.ndarray:
        """(N, 2) probabilities of ``classes[0]`` and ``classes[1]``: 1 - sigmoid(H) and sigmoid(H)."""
        H = self.decision_function(X)
        if not np.isfinite(H).all():
            i = int(np.flatnonzero(~np.isfinite(H))[0])
            raise InputError(
                f"the model's decision value for text {i} is {H[i]}, not a number; its weights are out of range: retrain it"
            )
        p = sigmoid(H)
        return np.stack([1.0 - p, p], axis=1)

    def known_words(self, X: Any) -> list[list[str]]:
        """The words of each text that the model reads: its tokens found in ``vocab``, the first ``max_len``."""
        index = self.vocab.index
        return [[w for w in self.tokenizer(t) if w in index][: self.max_len] for t in check_texts(X)]


def _check_folder(p: Path) -> None:
    if p.exists() and not p.is_dir():
        raise InputError(f"model folder {str(p)!r} is a file, not a folder; {_NOT_A_MODEL}")
    if not p.is_dir():
        raise InputError(f"model folder {str(p)!r} does not exist; {_NOT_A_MODEL}")
    for name in (CONFIG, VOCAB, WEIGHTS):
        if not (p / name).is_file():
            raise InputError(f"{str(p)!r} has no {name}; {_NOT_A_MODEL}")


def _refuse_unfinished(p: Path) -> None:
    """An InputError for a run folder whose training stopped before its end: a checkpoint and a config.json that
    is not sealed with every file (``save()`` seals it when training ends). An unreadable config.json is left to
    the checks that follow."""
    from ._runfolder import RunFolder

    try:
        rec = json.loads((p / CONFIG).read_text())
    except (OSError, ValueError):
        return
    sealed = isinstance(rec, dict) and SEAL in rec and set(rec.get("files") or ()) == set(HASHED)
    if not sealed and RunFolder(p).has_checkpoint():
        raise InputError(
            f"run folder {str(p)!r} holds a training that stopped before its end (interrupted: it has a checkpoint "
            "and no sealed model yet); its weights are not final: "
            f"{param('resume', 'train it to its end (attndyn.sentiment.train_run with the same settings)')}"
        )


def load_model(path: str | Path, *, device: str = "cpu") -> FittedModel:
    """Read a folder written by ``save()`` (or a training run folder). JSON and safetensors only: no code
    from the file is ever executed.

    Every file is checked first (:mod:`attndyn.sentiment._modelfile`): the config against its schema and the
    sha256 of its content, the vocabulary against the embedding and its recorded sha256, the weights against
    theirs, their shapes and their finiteness; any problem is one InputError. A folder whose config.json records
    no sha256 of its content or of its files (saved before folders were sealed, or the key deleted) is refused:
    an edit could not be detected; :func:`seal_model_folder` seals one you trust. A run folder that a training
    holds is refused too (its weights are not final; a shared lock is held while the files are read). The
    network is placed on ``device`` ("cpu", "cuda" or "auto"), whatever device it was trained on.
    """
    from ._runfolder import RunFolder

    dev = resolve_device(device)
    p = Path(path)
    _check_folder(p)
    with RunFolder(p).reading():
        _refuse_unfinished(p)  # before the weights are checked: an unfinished register run's lack the registers
        rec, words, tensors = _read_checked(p, device)
        if SEAL not in rec or set(rec["files"]) != set(HASHED):
            raise InputError(
                f"{str(p / 'config.json')!r} records no sha256 of its content and files: the folder was saved "
                "before models were sealed, or the seal was deleted, so an edit (swapped 'classes', another "
                "max_len) cannot be detected; if you trust this folder, seal it with "
                f"{param('seal', 'attndyn.sentiment.seal_model_folder(path)')} and load it again"
            )
    mc: SentimentConfig = rec["model"]
    model = SentimentTransformer(mc)
    model.load_state_dict({k: v.to(torch.float32) for k, v in tensors.items()})
    model.eval()
    return FittedModel(
        settings={k: v for k, v in rec["estimator"].items() if k in SETTINGS or k == "d"},
        vocab=Vocabulary(list(words)),
        classes=np.asarray(rec["classes"], dtype=rec.get("classes_dtype")),
        model=model.to(dev),
        inference=rec["estimator"].get("inference", "hardmax"),
        params={**rec["params"], "device": device},
        history=rec.get("history", []),
        best_epoch=rec.get("best_epoch", -1),
    )


def _read_checked(p: Path, device: str) -> tuple[dict, list[str], dict[str, torch.Tensor]]:
    """The checked config record, the words and the tensors of folder ``p`` (every check but the seal's presence)."""
    raw = read_json(p / CONFIG)
    if isinstance(raw, dict) and isinstance(raw.get("estimator"), dict):
        raw["estimator"]["device"] = device  # where it runs now, not where it was trained
    rec = check_config_record(raw, p / CONFIG)
    mc: SentimentConfig = rec["model"]
    files = rec["files"]
    vocab_bytes = read_model_file(p / VOCAB, MAX_JSON_BYTES)
    if VOCAB in files and hashlib.sha256(vocab_bytes).hexdigest() != files[VOCAB]:
        raise InputError(
            f"{str(p / 'vocab.json')!r} does not match the sha256 config.json records: it was edited or "
            "replaced; restore it from the saved model or retrain"
        )
    words = check_vocab(read_json(p / VOCAB), p / VOCAB, mc.vocab_size)
    tensors = check_weights(
        read_model_file(p / WEIGHTS, MAX_WEIGHTS_BYTES),
        p / WEIGHTS,
        mc,
        files.get(WEIGHTS),
    )
    return rec, words, tensors


def seal_model_folder(path: str | Path) -> Path:
    """Seal a model folder that records no sha256 (saved before folders were sealed): every check of
    :func:`load_model` but the seal's, then config.json rewritten with the sha256 of ``weights.safetensors`` and
    ``vocab.json`` (``"files"``) and of its own content (:func:`~attndyn.sentiment._modelfile.seal`), so that
    later edits are refused. Seal only a folder you trust: what it holds now becomes what loads. A folder that is
    already sealed is left as it is (a seal that does not match is refused, as by :func:`load_model`)."""
    from .._io import write_text
    from ._runfolder import RunFolder

    p = Path(path)
    _check_folder(p)
    with RunFolder(p).reading():
        _read_checked(p, "cpu")  # a recorded seal or file hash that does not match is refused here
        raw = read_json(p / CONFIG)
        files = {name: hashlib.sha256((p / name).read_bytes()).hexdigest() for name in HASHED}
        if SEAL in raw and raw.get("files") == files:
            return p
        body = {k: v for k, v in raw.items() if k != SEAL}
        write_text(p / CONFIG, json.dumps(seal({**body, "files": files}), indent=2) + "\n")
    return p
