"""Folders written by older attndyn versions, read as today's: one function per older form, each with its test
(tests/sentiment/test_older.py). Nothing else in the package knows what older versions wrote.

* :func:`model_record`: a model folder's ``config.json`` from before a setting, ``params`` or ``files`` existed;
* :func:`run_settings`: a run folder's ``settings.json`` from before a setting existed;
* :func:`run_settings_from_config`: a run folder from before ``settings.json`` existed, read from its
  ``config.json`` and ``data.json``.

A model or run folder from before the estimator's ``positive_label`` needs nothing here: it loads with None, which
infers ``classes_[1]`` as before for the 0/1 labels that ``attndyn sentiment train`` gives.

A folder sealed before the sha256 of its content and files were recorded is still refused by the loader until
:func:`attndyn.sentiment.seal_model_folder` seals it: reading it is a decision of its owner, not of this module.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ABSENT_SETTINGS", "model_record", "run_settings", "run_settings_from_config"]

#: Settings added after models were first saved, with the value that reproduces how a file
#: without them was trained (its tokenizer kept "not" beside "not_good"; no lexicon was kept).
ABSENT_SETTINGS = {
    "merge_negations": False,
    "lexicon": False,
    "lexicon_examples": 0,
    "prior_weight": 0.0,
    "prior_margin": 2.0,
    "registers": 0,
    "register_shift": 8.0,
    "register_length": 16.0,
}


def model_record(rec: dict[str, Any]) -> dict[str, Any]:
    """A model's ``config.json`` record as today's version writes it: the estimator settings the file predates at
    :data:`ABSENT_SETTINGS` (in ``estimator`` and in ``params``), ``params`` (the settings passed) as the settings
    used where the file has none, and no ``files`` hashes (``{}``) where it records none. An ``estimator`` or
    ``params`` that is not an object is left as it is, for the checks to name."""
    est = rec["estimator"]
    if not isinstance(est, dict):
        return rec
    absent = {k: v for k, v in ABSENT_SETTINGS.items() if k not in est}  # settings the file predates
    given = rec.get("params", est)  # as passed to the estimator (None: the recipe for d); older files: as used
    if isinstance(given, dict):
        given = {**given, **absent}
    return {**rec, "estimator": {**est, **absent}, "params": given, "files": rec.get("files", {})}


def run_settings(flat: dict[str, Any]) -> dict[str, Any]:
    """A run folder's flat settings (``settings.json``, flattened) with the settings it predates at
    :data:`ABSENT_SETTINGS`."""
    return {**ABSENT_SETTINGS, **flat}


def run_settings_from_config(estimator: dict[str, Any], data: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    """The flat settings of a run folder written before ``settings.json``: the estimator settings its
    ``config.json`` records (``estimator``; the others at ``defaults``, or at :data:`ABSENT_SETTINGS` where the
    folder predates them) and the split its ``data.json`` records (``data``, when it is an object that has one)."""
    flat = {**defaults, **ABSENT_SETTINGS, **estimator}
    if isinstance(data, dict) and "split" in data:
        flat["split"] = data["split"]
    return flat
