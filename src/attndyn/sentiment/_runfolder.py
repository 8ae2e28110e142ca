"""Run folders you can trust: the settings that fix a training's results, compared before
anything is written, and one training per folder at a time.

A run folder of ``attndyn sentiment train`` records its resolved settings in ``settings.json``:
every estimator setting that changes the result, the split, the thread count and the data file's
identity (its size and sha256, not its path, so a moved copy is the same data). A later ``train``
on the folder resumes only when its own settings are equal; otherwise it is refused before the
folder is touched, naming each differing setting and the ways out (another run folder, or
``overwrite=True`` to discard the run; the command line words them as its flags). Folders written before ``settings.json`` existed are compared
on what their ``config.json`` and ``data.json`` record.

:class:`RunLock` holds an exclusive ``flock`` (an OS-level advisory lock, POSIX; :mod:`attndyn._lock`) on the
folder itself, so taking it writes nothing; the OS drops it when the process ends, however it ends. A
second process is refused with the holder's pid (read from ``/proc/locks`` where there is one).

>>> flat_settings({"estimator": {"d": 2}, "split": "random", "data": {"sha256": "ab", "size": 3}})
{'d': 2, 'split': 'random', 'data.sha256': 'ab', 'data.size': 3}
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import threading
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .._errors import param
from .._io import file_sha256, write_json
from .._lock import FolderLock, lock_holder  # noqa: F401  (lock_holder: read here by tests and callers)
from .._validation import InputError
from ._data import DEFAULT_DATA
from ._layout import (  # the layout's names (the files a run folder holds)
    CACHE,
    CHECKPOINT,
    CONFIG,
    DATA,
    OVERWRITTEN,
    RUN_FILES,
    SETTINGS,
    WEIGHTS,
)
from ._older import run_settings, run_settings_from_config

if TYPE_CHECKING:
    import numpy as np

    from ._data import Reviews

__all__ = [
    "RunFolder",
    "RunLock",
    "data_identity",
    "resolve_settings",
    "flat_settings",
    "recorded_settings",
    "check_resume",
    "clear_run",
    "drop_overwritten",
    "restore_run",
]

_NOT_RESULTS = ("run_dir", "verbose")  # estimator settings that do not change what is learned


def data_identity(path: str | os.PathLike) -> dict[str, Any]:
    """``{"path": absolute path, "size": bytes, "sha256": hex}`` of a data file, or of an aclImdb
    folder (then over its ``*.txt`` files in sorted order: relative path, size and contents)."""
    p = Path(path)
    if p.is_file():
        return {"path": str(p.resolve()), "size": p.stat().st_size, "sha256": file_sha256(p)}
    if not p.is_dir():
        raise InputError(f"data path {str(p)!r} does not exist; give imdb.csv(.gz) or an aclImdb folder")
    h, size = hashlib.sha256(), 0
    for f in sorted(q for q in p.rglob("*.txt") if q.is_file()):
        data = f.read_bytes()
        h.update(f"{f.relative_to(p).as_posix()}\0{len(data)}\0".encode())
        h.update(data)
        size += len(data)
    return {"path": str(p.resolve()), "size": size, "sha256": h.hexdigest()}


class _Resolves(Protocol):
    """What :func:`resolve_settings` reads of an estimator (a HardmaxSentimentClassifier; not imported here:
    the estimator loads through :mod:`~attndyn.sentiment._inference`, which locks run folders with this module)."""

    def resolved_params(self) -> dict[str, Any]: ...


def resolve_settings(estimator: _Resolves, *, split: str, threads: int, data: dict[str, Any]) -> dict[str, Any]:
    """Everything that fixes the results of a training run, as stored in ``settings.json``: the
    estimator's settings with the recipe for d filled in (so a run started with the recipe's values
    written out resumes without them, and the other way round)."""
    params = {k: v for k, v in estimator.resolved_params().items() if k not in _NOT_RESULTS}
    if not isinstance(params["stop_words"], str):
        params["stop_words"] = list(params["stop_words"])
    if hasattr(params.get("positive_label"), "item"):  # a NumPy scalar, as JSON holds it
        params["positive_label"] = params["positive_label"].item()
    return {
        "estimator": params,
        "split": split,
        "threads": int(threads),
        "data": {"sha256": data["sha256"], "size": data["size"]},
    }


def flat_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """One level: estimator settings by name, then ``split``, ``threads``, ``data.sha256``, ``data.size``."""
    flat = dict(settings.get("estimator", {}))
    flat.update({k: v for k, v in settings.items() if k not in ("estimator", "data")})
    flat.update({f"data.{k}": v for k, v in settings.get("data", {}).items()})
    return flat


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise InputError(
            f"{str(path)!r} could not be read ({str(exc).splitlines()[0][:100]}); the run folder is damaged: "
            f"use {param('run.new', 'another run folder')}, or {param('overwrite', 'overwrite=True')} to start this one again"
        ) from None


def recorded_settings(run: Path, defaults: dict[str, Any]) -> dict[str, Any] | None:
    """The flat settings a run folder was trained with; None for a folder without a run.

    Older folders (no ``settings.json``) give what their ``config.json`` and ``data.json``
    record: the estimator settings (absent ones at their ``defaults``), the split and the seed
    (:mod:`attndyn.sentiment._older` reads every older form)."""
    if (run / SETTINGS).is_file():
        rec = _read(run / SETTINGS)
        if not isinstance(rec, dict):
            raise InputError(
                f"{str(run / SETTINGS)!r} is not a settings object; use {param('run.new', 'another run folder')}, or {param('overwrite', 'overwrite=True')} to start this run again"
            )
        return run_settings(flat_settings(rec))  # what an older version did not record: at its old value
    if not (run / CONFIG).is_file():
        if (run / CHECKPOINT).exists() or (run / WEIGHTS).exists():
            raise InputError(
                f"run folder {str(run)!r} holds weights but no config.json or {SETTINGS}; its settings are unknown: "
                f"use {param('run.new', 'another run folder')}, or {param('overwrite', 'overwrite=True')} to start it again"
            )
        return None
    cfg = _read(run / CONFIG)
    est = cfg.get("estimator") if isinstance(cfg, dict) else None
    if not isinstance(est, dict):
        raise InputError(
            f"{str(run / 'config.json')!r} records no estimator settings; use {param('run.new', 'another run folder')}, or {param('overwrite', 'overwrite=True')} to start this run again"
        )
    info = _read(run / DATA) if (run / DATA).is_file() else {}
    results = {k: v for k, v in est.items() if k not in _NOT_RESULTS}
    return run_settings_from_config(results, info, {k: v for k, v in defaults.items() if k not in _NOT_RESULTS})


#: Recorded in settings.json but not compared on resuming: the weights do not depend on them (the thread count:
#: tests/sentiment/test_thread_independence.py).
NOT_COMPARED = ("threads",)


def check_resume(run: Path, settings: dict[str, Any], defaults: dict[str, Any]) -> bool:
    """True when ``run`` holds a run to resume with exactly ``settings``, False when it holds
    none; an InputError naming every differing setting otherwise. Reads only."""
    old = recorded_settings(run, defaults)
    if old is None:
        return False
    new = flat_settings(settings)
    diffs = [
        k for k in old if k in new and k not in NOT_COMPARED and _compared(k, old[k]) != _compared(k, new[k])
    ]  # what an older folder lacks is not compared
    if diffs:
        shown = ", ".join(f"{param('setting.' + k, k)} {_show(old.get(k))} (now {_show(new[k])})" for k in diffs)
        raise InputError(
            f"run folder {str(run)!r} was trained with other settings: {shown}; resuming would mix them. "
            f"Rerun with the folder's settings to resume, give a new folder{param('with.run.new', '')}, "
            f"or add {param('overwrite', 'overwrite=True')} to discard this run and start again"
        )
    return True


def _norm(v: Any) -> Any:
    return json.loads(json.dumps(v))  # tuples → lists, numpy → plain, as the file holds them


def _compared(key: str, v: Any) -> Any:
    """What a setting is compared as on resuming: its JSON form; a device by the kind of device it names here
    ("auto" is the CPU on a machine without CUDA, so a run started with --device auto resumes with --device cpu)."""
    if key == "device" and isinstance(v, str):
        import torch

        kind = v.split(":")[0]
        return ("cuda" if torch.cuda.is_available() else "cpu") if kind == "auto" else kind
    return _norm(v)


def _show(v: Any) -> str:
    if isinstance(v, str) and len(v) == 64 and all(c in "0123456789abcdef" for c in v):
        return v[:12] + "…"
    return json.dumps(v)


def clear_run(run: Path) -> list[str]:
    """Set aside the files a run writes (:data:`RUN_FILES`), for ``overwrite=True``: moved into
    :data:`OVERWRITTEN` (a folder left there by an earlier overwrite is discarded first), from where
    :func:`restore_run` puts them back and :func:`drop_overwritten` removes them; returns their names."""
    aside = run / OVERWRITTEN
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside)
    gone = []
    for name in RUN_FILES:
        f = run / name
        if f.is_file() or f.is_symlink():
            aside.mkdir(exist_ok=True)
            os.replace(f, aside / name)
            gone.append(name)
    return gone


def restore_run(run: Path) -> list[str]:
    """Put back the files :func:`clear_run` set aside (a new training failed before its first epoch ended), over
    whatever that training wrote under the same names; returns their names."""
    aside = run / OVERWRITTEN
    if not aside.is_dir():
        return []
    back = []
    for name in RUN_FILES:
        if (aside / name).is_file():
            os.replace(aside / name, run / name)
            back.append(name)
    shutil.rmtree(aside, ignore_errors=True)
    return back


def drop_overwritten(run: Path) -> None:
    """Remove the files :func:`clear_run` set aside (the new run has its own checkpoint now)."""
    aside = run / OVERWRITTEN
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)


class RunLock(FolderLock):
    """The lock of a run folder (:class:`attndyn._lock.FolderLock` on the folder itself): exclusive for the life
    of a training, shared (``shared=True``) while a finished run is read.

    ``with RunLock(run): ...`` creates the folder when needed; if another process holds the
    lock, InputError names its pid. ``created`` tells whether this lock made the folder, and
    :meth:`undo` removes what was added since (used when a fresh run fails before its first epoch).
    The exclusive lock is reentrant within one thread: while a thread trains a run (it holds the lock), a nested
    exclusive lock of the same folder in that thread is granted without a second ``flock`` (which the OS would
    refuse), so :func:`attndyn.sentiment._runs.train_run` and the estimator's ``fit`` take the same lock; any other
    thread or process, and any reader (a shared lock, even in that thread), is refused.
    """

    _held: dict[tuple[Path, int], int] = {}  # (run folder, thread) holding it exclusively -> nesting depth

    def __init__(self, run: str | os.PathLike, *, shared: bool = False) -> None:
        super().__init__(run, shared=shared, create=not shared, busy=_reading_busy if shared else _training_busy)
        self.run = self.folder
        self._nested: tuple[Path, int] | None = None

    def acquire(self) -> RunLock:
        if not self.shared and self.run.exists() and not self.run.is_dir():
            raise InputError(
                f"{param('run', 'run folder')} {str(self.run)!r} is a file, not a folder; give a folder path"
            )
        key = (self.run.resolve(), threading.get_ident()) if self.run.exists() and not self.shared else None
        if key is not None and key in RunLock._held:  # this thread already trains it: nested, nothing to take
            RunLock._held[key] += 1
            self._nested = key
            return self
        super().acquire()
        if not self.shared:
            RunLock._held[(self.run.resolve(), threading.get_ident())] = 1
        return self

    @property
    def held(self) -> bool:
        return self._nested is not None or super().held

    def release(self) -> None:
        if self._nested is not None:
            RunLock._held[self._nested] -= 1
            self._nested = None
            return
        if self.held and not self.shared:
            RunLock._held.pop((self.run.resolve(), threading.get_ident()), None)
        super().release()

    def __enter__(self) -> RunLock:
        return self.acquire()


def _training_busy(run: Path, who: str, exclusive: bool) -> str:
    holder = "a training holds its lock" if exclusive else "it is reading the run"
    return (
        f"run folder {str(run)!r} is in use by {who} ({holder}); wait for it to "
        f"finish or stop it, or give another folder{param('with.run.new', '')}"
    )


def _reading_busy(run: Path, who: str, exclusive: bool) -> str:
    return (
        f"run folder {str(run)!r} is being trained by {who} (it holds the run's lock), so its weights "
        "are not final; wait for the training to end, or stop it (rerunning it resumes), then run this again"
    )


class RunFolder:
    """A run folder of ``attndyn sentiment train``: the one reader and writer of its ``settings.json``, its
    ``data.json`` (the data file, the split and its seed), its lock and its split.

    A folder without ``data.json`` (written by :meth:`HardmaxSentimentClassifier.save`) reads as the default
    data (:data:`attndyn.sentiment._data.DEFAULT_DATA`) and the random split seeded by the model's ``random_state``:

    >>> RunFolder("no/such/run").data_or_default(random_state=0)
    {'data': '../shared/data/imdb/imdb.csv.gz', 'split': 'random', 'seed': 0}
    """

    def __init__(self, path: str | os.PathLike) -> None:
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunFolder({str(self.path)!r})"

    @property
    def cache(self) -> Path:
        """The folder of cached tokenized reviews."""
        return self.path / CACHE

    def has_checkpoint(self) -> bool:
        """Whether a training has finished an epoch here (its checkpoint exists)."""
        return (self.path / CHECKPOINT).exists()

    # ---- the lock ----
    def lock(self) -> RunLock:
        """The exclusive lock of a training (``with folder.lock() as lock: ...``), the folder created when needed."""
        return RunLock(self.path)

    def reading(self) -> AbstractContextManager[object]:
        """A shared lock while a finished run is read (predict, evaluate, explain): refused, naming the pid, while a
        training holds the run (its weights are not final), and no training starts meanwhile. Nothing to lock (and
        nothing taken) when the folder does not exist."""
        return RunLock(self.path, shared=True) if self.path.is_dir() else nullcontext()

    # ---- settings.json ----
    def open(self, settings: dict[str, Any], defaults: dict[str, Any], *, overwrite: bool) -> bool:
        """Under the lock, before a training: with ``overwrite`` set the files of the run there aside (False; see
        :func:`clear_run`);
        else True when the folder holds a run to resume with exactly ``settings``, False when it holds none, and
        an InputError naming every differing setting otherwise (:func:`check_resume`)."""
        if overwrite:
            clear_run(self.path)
            return False
        return check_resume(self.path, settings, defaults)

    def write_records(self, settings: dict[str, Any], data: dict[str, Any]) -> None:
        """Write ``settings.json`` (:func:`resolve_settings`) and ``data.json`` (:meth:`data_record`), atomically."""
        write_json(self.path / SETTINGS, settings)
        self.write_data(data)

    def write_data(self, data: dict[str, Any]) -> None:
        """Write ``data.json`` alone (a model trained outside ``train``, e.g. by a benchmark), atomically."""
        write_json(self.path / DATA, data)

    # ---- data.json and the split ----
    @staticmethod
    def data_record(ident: dict[str, Any], *, split: str, seed: int, n_train: int, n_test: int) -> dict[str, Any]:
        """The run's ``data.json``: the data file (path, sha256, size; :func:`data_identity`), the split, its seed
        and its sizes."""
        return {
            "data": ident["path"],
            "sha256": ident["sha256"],
            "size": ident["size"],
            "split": split,
            "seed": seed,
            "n_train": n_train,
            "n_test": n_test,
        }

    def data(self) -> dict[str, Any] | None:
        """The run's ``data.json`` (data path, sha256, split, seed), checked against its ``settings.json`` (folders
        trained before it existed, or by the benchmark, are taken as they are); None when there is none."""
        from ._corpus import SPLITS
        from ._modelfile import read_json  # (deferred: it imports torch)

        f = self.path / DATA
        if not f.is_file():
            return None
        info = read_json(f)
        ok = (
            isinstance(info, dict)
            and isinstance(info.get("data"), str)
            and info.get("split") in SPLITS
            and isinstance(info.get("seed"), int)
            and not isinstance(info.get("seed"), bool)
        )
        if not ok:
            raise InputError(
                f"{str(f)!r} must record 'data' (a path), 'split' {SPLITS} and 'seed' (an integer); "
                "the run folder is damaged: retrain it"
            )
        self._check_data(info, read_json)
        return info

    def _check_data(self, info: dict[str, Any], read_json: Any) -> None:
        """Refuse a ``data.json`` whose split, seed or data differ from what ``settings.json`` says was trained."""
        settings = self.path / SETTINGS
        if not settings.is_file():  # written with data.json by the same training, under its lock
            return
        rec = read_json(settings)
        est_rec = rec.get("estimator") if isinstance(rec, dict) else None
        data_rec = rec.get("data") if isinstance(rec, dict) else None
        if not (isinstance(est_rec, dict) and isinstance(data_rec, dict)):
            raise InputError(f"{str(settings)!r} is not a settings record; the run folder is damaged: retrain it")
        trained = {"split": rec.get("split"), "seed": est_rec.get("random_state"), "sha256": data_rec.get("sha256")}
        differ = [k for k, v in trained.items() if k in info and info[k] != v]
        if differ:
            shown = ", ".join(f"{k} {info[k]!r} (trained with {trained[k]!r})" for k in differ)
            raise InputError(
                f"{str(self.path / DATA)!r} records another split than the model was trained on: {shown}; its test "
                f"reviews would overlap the training ones: {param('retrain', 'retrain the run')}"
            )

    def data_or_default(self, random_state: int) -> dict[str, Any]:
        """:meth:`data`, or for a folder without ``data.json`` the default data and the random split seeded by
        ``random_state`` (the model's)."""
        info = self.data()
        return {"data": DEFAULT_DATA, "split": "random", "seed": int(random_state)} if info is None else info

    @staticmethod
    def split(reviews: Reviews, info: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
        """``(train_idx, test_idx)`` of the split ``info`` (a :meth:`data` record) names, over ``reviews``."""
        from ._corpus import split_indices  # (deferred: it imports torch)

        return split_indices(reviews, info["split"], info["seed"])
