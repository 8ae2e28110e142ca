"""A saved sentiment model folder: ``config.json``, ``vocab.json``, ``weights.safetensors``, checked before use.

:meth:`HardmaxSentimentClassifier.save` writes the weights, then the vocabulary, then
``config.json`` last, which records the sha256 of the other two (``"files"``); a crash in between
leaves a folder whose hashes do not match, which :func:`read_model_folder` refuses rather than
loading a mix. Loading checks, in order, and stops at the first problem with one
:class:`~attndyn._validation.InputError` naming the file, what is wrong and the fix:

* ``config.json``: a JSON object with only the known keys (:data:`CONFIG_KEYS`), the format tag,
  estimator settings of the right types and ranges (the estimator's own checks), a model config
  (:class:`~attndyn.sentiment._model.SentimentConfig`, unknown keys named) that agrees with them,
  and exactly two distinct classes;
* ``vocab.json``: ``{"words": [...]}``, distinct strings starting with ``<pad>``, ``<unk>``, as
  many as the embedding has rows;
* ``weights.safetensors``: the recorded sha256 (one flipped bit is caught here), a readable
  safetensors file with exactly the model's tensors, their shapes from the config and the
  vocabulary size, floating dtype, and finite values (so no prediction can be ``nan``).

``config.json`` itself is covered by the sha256 of its content (``"sha256"``, :func:`content_sha256`:
every field, so swapped ``classes`` are refused). Folders saved before hashes were recorded (no
``"files"`` or ``"sha256"`` key) pass these checks, but :func:`~attndyn.sentiment._inference.load_model`
refuses them: only :func:`~attndyn.sentiment.seal_model_folder` (``attndyn sentiment seal``) seals one.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors.torch import load as load_safetensors

from .._io import read_input_bytes
from .._validation import InputError
from ._layout import VOCAB, WEIGHTS
from ._model import SentimentConfig, SentimentTransformer
from ._older import model_record
from ._recipes import PARAMS, check_params
from ._text import PAD, UNK

__all__ = [
    "FORMAT",
    "CONFIG_KEYS",
    "SEAL",
    "check_config_record",
    "check_vocab",
    "check_weights",
    "read_json",
    "content_sha256",
    "seal",
]

FORMAT = "attndyn.sentiment/1"
CONFIG_KEYS = (
    "format",
    "estimator",
    "params",
    "recipe",
    "model",
    "classes",
    "classes_dtype",
    "history",
    "best_epoch",
    "alpha",
    "kernels",
    "files",
    "sha256",
)
#: The key of config.json that holds the sha256 of its own content (:func:`content_sha256`).
SEAL = "sha256"
HASHED = (WEIGHTS, VOCAB)
FLOAT32_MAX = float(torch.finfo(torch.float32).max)
#: The dtypes a weights file may hold (loaded as float32).
WEIGHT_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)
_AGREE = (
    "d",
    "layers",
    "tau",
    "alpha_min",
    "registers",
    "register_shift",
    "register_length",
)  # model settings the estimator must state identically


#: The largest config.json or vocab.json read, and the largest weights file: larger ones are refused unread.
MAX_JSON_BYTES = 64 * 2**20
MAX_WEIGHTS_BYTES = 2**30


def read_model_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of one file of a model folder: a regular file of at most ``max_bytes`` (a 6 GB sparse file or a
    pipe under its name is refused, not read), else one InputError naming it."""
    return read_input_bytes(path, "model file", max_bytes)


def read_json(path: Path) -> Any:
    """Parse a JSON file (at most :data:`MAX_JSON_BYTES`); damaged text or bytes end in one InputError naming it."""
    data = read_model_file(path, MAX_JSON_BYTES)
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise InputError(
            f"{str(path)!r} is not valid JSON ({str(exc).splitlines()[0][:120]}); "
            "restore it from the model you saved, or retrain"
        ) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _check_envelope(rec: Any, where: str) -> None:
    """A JSON object with the format tag, only :data:`CONFIG_KEYS`, and 'estimator', 'model' and 'classes'."""
    if not isinstance(rec, dict):
        raise InputError(f"{where!r} must hold a JSON object (an attndyn sentiment model config), got {_kind(rec)}")
    if rec.get("format") != FORMAT:
        raise InputError(
            f"{where!r} is not an attndyn sentiment model config (format {rec.get('format')!r}, expected {FORMAT!r})"
        )
    unknown = sorted(set(rec) - set(CONFIG_KEYS))
    if unknown:
        raise InputError(f"{where!r} has unknown keys {unknown}; allowed: {list(CONFIG_KEYS)}")
    for key in ("estimator", "model", "classes"):
        if key not in rec:
            raise InputError(
                f"{where!r} has no {key!r}; it was not written by save() or a finished `attndyn sentiment train`"
            )


def _recorded_settings(rec: dict, where: str) -> tuple[dict, dict]:
    """``(estimator, params)``: the settings used and those passed (None: the recipe for d), both objects of known
    estimator settings (``rec`` as today's version writes it: :func:`attndyn.sentiment._older.model_record`)."""
    params = rec["estimator"]
    if not isinstance(params, dict):
        raise InputError(f"{where!r}: 'estimator' must be a JSON object of settings, got {_kind(params)}")
    allowed = PARAMS
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise InputError(f"{where!r}: unknown estimator settings {unknown}; allowed: {sorted(allowed)}")
    given = rec["params"]
    if not isinstance(given, dict) or sorted(set(given) - set(allowed)):
        raise InputError(f"{where!r}: 'params' must be a JSON object of estimator settings, got {given!r}")
    return params, given


def disagreeing(used: dict, given: dict) -> list[str]:
    """The settings passed (not None; the device aside: it does not fix the weights) whose value in ``given``
    differs from the one in ``used``, the settings the weights were trained with; sorted."""
    return sorted(k for k, v in given.items() if v is not None and k != "device" and used.get(k) != v)


def _checked_model(rec: dict, params: dict, given: dict, where: str) -> SentimentConfig:
    """The model config, after the estimator's own checks of ``params`` (:func:`~attndyn.sentiment._recipes.check_params`);
    the model must state :data:`_AGREE` as the estimator does, and every setting passed (not None) must be the one used."""
    try:
        check_params(params)
        model = SentimentConfig.from_dict(rec["model"])
    except InputError as exc:
        raise InputError(f"{where!r}: {exc}") from None
    stated = {**PARAMS, **params}
    for key in _AGREE:
        if getattr(model, key) != stated[key]:
            raise InputError(
                f"{where!r}: model {key} = {getattr(model, key)!r} but estimator {key} = {stated[key]!r}; "
                "the file was edited or mixed from two models"
            )
    differ = disagreeing(params, given)
    if differ:
        raise InputError(
            f"{where!r}: 'params' and 'estimator' disagree on {differ}; the file was edited or mixed from two models"
        )
    return model


def _check_classes(classes: Any, where: str) -> None:
    """Two distinct scalar labels of one type."""
    if (
        not isinstance(classes, list)
        or len(classes) != 2
        or not all(_scalar(c) for c in classes)
        or classes[0] == classes[1]
        or type(classes[0]) is not type(classes[1])
    ):
        raise InputError(
            f"{where!r}: 'classes' must be two distinct labels of one type such as [0, 1], got {classes!r}"
        )


#: The kinds of label array a model may record (``classes_dtype``): bool, integers, floats, text.
CLASS_KINDS = "biufU"


def _check_classes_dtype(rec: dict, where: str) -> None:
    """The optional 'classes_dtype': a NumPy dtype string (e.g. ``"<i8"``, ``"<U3"``) of a kind in
    :data:`CLASS_KINDS` that holds both 'classes' exactly (a file that predates it has none: NumPy's default)."""
    if "classes_dtype" not in rec:
        return
    s = rec["classes_dtype"]
    try:
        dt = np.dtype(s) if isinstance(s, str) else None
        ok = (
            dt is not None
            and dt.kind in CLASS_KINDS
            and np.asarray(rec["classes"], dtype=dt).tolist() == rec["classes"]
        )
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok:
        raise InputError(
            f"{where!r}: 'classes_dtype' must be the NumPy dtype of the labels {rec['classes']!r} (such as '<i8' or "
            f"'<U8'), got {s!r}"
        )


def _check_training_record(rec: dict, where: str) -> None:
    """The optional 'best_epoch' (an integer), 'history' (a list of objects) and 'alpha' (positive, finite)."""
    if "best_epoch" in rec and not (isinstance(rec["best_epoch"], int) and not isinstance(rec["best_epoch"], bool)):
        raise InputError(f"{where!r}: 'best_epoch' must be an integer, got {rec['best_epoch']!r}")
    if "history" in rec and not (isinstance(rec["history"], list) and all(isinstance(r, dict) for r in rec["history"])):
        raise InputError(f"{where!r}: 'history' must be a list of objects, got {_kind(rec['history'])}")
    if "alpha" in rec and not (_real(rec["alpha"]) and math.isfinite(rec["alpha"]) and rec["alpha"] > 0):
        raise InputError(f"{where!r}: 'alpha' must be a positive finite number, got {rec['alpha']!r}")


def _checked_files(rec: dict, where: str) -> dict:
    """The 'files': a map from some of :data:`HASHED` to sha256 hex digests (``{}`` in a file that predates them)."""
    files = rec["files"]
    if not (
        isinstance(files, dict)
        and set(files) <= set(HASHED)
        and all(isinstance(h, str) and len(h) == 64 and all(c in "0123456789abcdef" for c in h) for h in files.values())
    ):
        raise InputError(f"{where!r}: 'files' must map {list(HASHED)} to sha256 hex digests, got {files!r}")
    return files


def content_sha256(rec: dict) -> str:
    """sha256 of a config record's content: every field but :data:`SEAL` itself and ``estimator.device`` (where
    the model runs, set again at load), as canonical JSON (sorted keys, no spaces), so that ``classes`` or any
    setting edited in config.json no longer matches what :meth:`save` recorded."""
    body = {k: v for k, v in rec.items() if k != SEAL}
    if isinstance(body.get("estimator"), dict):
        body["estimator"] = {k: v for k, v in body["estimator"].items() if k != "device"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


def seal(rec: dict) -> dict:
    """The record with its :func:`content_sha256` under :data:`SEAL` (what :meth:`save` writes)."""
    return {**rec, SEAL: content_sha256(rec)}


def _check_seal(rec: dict, where: str) -> None:
    """A recorded :data:`SEAL` must match the content (folders saved before it was recorded have none)."""
    if SEAL in rec and rec[SEAL] != content_sha256(rec):
        raise InputError(
            f"{where!r} does not match the sha256 of its content that it records: it was edited (a setting, "
            "'classes', the history...) or damaged; restore it from the saved model or retrain"
        )


def check_config_record(rec: Any, path: Path) -> dict:
    """Check a parsed ``config.json``; return it with ``estimator`` holding every setting. The schema is checked
    first, then the recorded sha256 of the content (:func:`content_sha256`)."""
    where = str(path)
    _check_envelope(rec, where)
    today = model_record(rec)  # a file an older version wrote, read as today's
    params, given = _recorded_settings(today, where)
    model = _checked_model(today, params, given, where)
    _check_classes(today["classes"], where)
    _check_classes_dtype(today, where)
    _check_training_record(today, where)
    files = _checked_files(today, where)
    _check_seal(rec, where)  # over the file's content as written
    return {**today, "estimator": params, "params": {**given}, "model": model, "files": files}


def check_vocab(obj: Any, path: Path, vocab_size: int) -> list[str]:
    """Check a parsed ``vocab.json`` against the model's embedding rows; return the words."""
    where = str(path)
    if not isinstance(obj, dict) or "words" not in obj:
        raise InputError(f'{where!r} must hold a JSON object {{"words": [...]}}, got {_kind(obj)}')
    unknown = sorted(set(obj) - {"words"})
    if unknown:
        raise InputError(f"{where!r} has unknown keys {unknown}; allowed: ['words']")
    words = obj["words"]
    if not isinstance(words, list) or not all(isinstance(w, str) for w in words):
        raise InputError(f"{where!r}: 'words' must be a list of strings")
    if words[:2] != [PAD, UNK]:
        raise InputError(f"{where!r}: the words must start with {PAD!r}, {UNK!r}, got {words[:2]!r}")
    if len(set(words)) != len(words):
        raise InputError(f"{where!r}: the words are not distinct; the file is damaged")
    if len(words) != vocab_size:
        raise InputError(
            f"{where!r} holds {len(words)} words but the model has {vocab_size} (config.json model.vocab_size); "
            "the vocabulary and the model come from different runs: restore the matching vocab.json"
        )
    return words


def check_weights(
    data: bytes, path: Path, config: SentimentConfig, expected_sha256: str | None
) -> dict[str, torch.Tensor]:
    """Check the bytes of ``weights.safetensors``: hash, format, tensor names, shapes, dtype, finiteness."""
    where = str(path)
    if not data:
        raise InputError(f"{where!r} is empty; restore the weights or retrain")
    if expected_sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != expected_sha256:
            raise InputError(
                f"{where!r} has sha256 {got[:16]}… but config.json records {expected_sha256[:16]}…: the file is "
                "damaged or was replaced; restore it from the saved model or retrain"
            )
    try:
        tensors = load_safetensors(data)
    except Exception as exc:  # safetensors raises its own error type on any malformed header or body
        raise InputError(
            f"{where!r} is not a readable safetensors file ({str(exc).splitlines()[0][:120]}); "
            "it is truncated or damaged: restore it or retrain"
        ) from None
    expected = {k: tuple(v.shape) for k, v in _shapes_model(config, tensors).state_dict().items()}
    missing, extra = sorted(set(expected) - set(tensors)), sorted(set(tensors) - set(expected))
    if missing or extra:
        raise InputError(f"{where!r} does not hold this model's tensors (missing {missing}, unexpected {extra})")
    for name, shape in expected.items():
        t = tensors[name]
        if tuple(t.shape) != shape:
            raise InputError(
                f"{where!r}: {name} has shape {tuple(t.shape)} but config.json (d = {config.d}, "
                f"{config.vocab_size} words) needs {shape}"
            )
        if t.dtype not in WEIGHT_DTYPES:  # float8 and others: no finiteness test, no arithmetic to trust
            raise InputError(
                f"{where!r}: {name} has dtype {str(t.dtype).replace('torch.', '')}, expected float32 "
                "(or float16, bfloat16, float64); convert the weights or retrain"
            )
        if not bool(torch.isfinite(t).all()):
            bad = "NaN" if bool(torch.isnan(t).any()) else "infinite"
            raise InputError(f"{where!r}: {name} holds {bad} values; the weights are damaged: restore them or retrain")
        big = float(t.abs().max()) if t.numel() else 0.0
        if big > FLOAT32_MAX:  # the model runs in float32: 1e300 would become inf (and "tokens contains inf")
            raise InputError(
                f"{where!r}: {name} holds values up to {big:.3g}, beyond float32's range ({FLOAT32_MAX:.3g}) in which "
                "the model runs; the weights are damaged: restore them or retrain"
            )
    return tensors


def _shapes_model(config: SentimentConfig, tensors: dict[str, torch.Tensor]) -> SentimentTransformer:
    """The model ``config`` describes, for its tensor shapes: on the CPU when it is no larger than the weights
    already read (building on the meta device imports torch's compiler, seconds), else on the meta device, so
    that nothing is allocated whatever the config claims."""
    held = sum(t.numel() for t in tensors.values())
    if config.vocab_size * config.d <= held:
        return SentimentTransformer(config)
    with torch.device("meta"):
        return SentimentTransformer(config)


def _scalar(v: Any) -> bool:
    return isinstance(v, (str, int)) and not isinstance(v, bool) or (_real(v) and math.isfinite(v))


def _real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _kind(v: Any) -> str:
    return "null" if v is None else f"a {type(v).__name__}"
