"""Train a run folder, the whole lifecycle: what ``attndyn sentiment train`` does, for a Python caller.

:func:`train_run` checks every setting, reads the data, splits it and takes its sha256 *before* the folder is
touched; then, under the folder's exclusive lock (:class:`~attndyn.sentiment._runfolder.RunFolder`), it either
leaves a finished run as it is, or refuses a run trained with other settings, or empties it
(``overwrite=True``), and trains (or resumes, bit for bit, from the last checkpoint), saves the model, and
writes ``test.json``: the test split's scores. A failure before the first checkpoint leaves the folder as it
was; an interrupt after it keeps the last finished epoch (:func:`interrupted_line` says what was kept).

>>> from attndyn.sentiment import HardmaxSentimentClassifier
>>> from attndyn.sentiment._runs import train_run
>>> train_run(HardmaxSentimentClassifier(d=2), "runs/d2", threads=0)
Traceback (most recent call last):
...
attndyn._validation.InputError: threads must be an integer from 1 to ... (CPU threads for torch; this machine has ... cores), got 0
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .._errors import param
from .._io import write_json
from .._validation import InputError
from ._data import DEFAULT_DATA, read_reviews
from ._layout import CACHE, EVALUATION_FILES, TEST
from ._runfolder import RunFolder, RunLock, data_identity, drop_overwritten, resolve_settings, restore_run

if TYPE_CHECKING:
    import numpy as np

    from ._corpus import Corpus
    from ._data import Reviews
    from ._estimator import HardmaxSentimentClassifier
    from ._train import EncodedSplit

__all__ = [
    "TrainedRun",
    "train_run",
    "interrupted_line",
    "check_threads",
    "evaluation_data",
    "sample_run_texts",
    "OpenRun",
    "open_run",
]


class TrainedRun(NamedTuple):
    """What :func:`train_run` gives back: the ``report`` (``test.json``) and whether the folder already held a
    finished run, left unchanged (``complete``)."""

    report: dict[str, Any]
    complete: bool


class _TrainingJob(NamedTuple):
    """What a training trains, all settled before the run folder is touched (:func:`_training_job`)."""

    est: HardmaxSentimentClassifier  # its parameters checked; run_dir is the run
    run: Path
    data: Path
    reviews: Reviews
    train_idx: np.ndarray
    test_idx: np.ndarray
    settings: dict  # settings.json
    record: dict  # data.json
    threads: int  # torch's CPU threads


def check_threads(threads: Any) -> int:
    """``threads``: an integer from 1 to max(256, the machine's cores)."""
    most = max(256, os.cpu_count() or 1)
    if isinstance(threads, bool) or not isinstance(threads, int) or not 1 <= threads <= most:
        raise InputError(
            f"{param('threads', 'threads')} must be an integer from 1 to {most} (CPU threads for torch; this machine "
            f"has {os.cpu_count()} cores), got {threads}"
        )
    return threads


def _training_job(est: HardmaxSentimentClassifier, run: Path, data: Path, split: str, threads: int) -> _TrainingJob:
    """The estimator's parameters checked, the data read and split and its sha256 taken: the job, before the folder
    is touched."""
    import numpy as np

    from ._corpus import SPLITS, split_indices

    check_threads(threads)
    est.set_params(run_dir=str(run))
    est.check_params()
    if split not in SPLITS:
        raise InputError(f"{param('split', 'split')} must be one of {SPLITS}, got {split!r}")
    seed = int(est.random_state)
    reviews = read_reviews(data)
    tr, te = split_indices(reviews, split, seed)
    one = np.unique(np.asarray(reviews.labels)[tr])
    if len(one) < 2:  # the estimator would say "y must hold exactly two classes" of a file that holds both
        raise InputError(
            f"the training part of the {split} split of {str(data)!r} ({len(tr)} of {len(reviews)} reviews) holds "
            f"one class only ({one.tolist()}); give more reviews of each class"
        )
    ident = data_identity(data)
    settings = resolve_settings(est, split=split, threads=threads, data=ident)
    record = RunFolder.data_record(ident, split=split, seed=seed, n_train=len(tr), n_test=len(te))
    return _TrainingJob(est, run, data, reviews, tr, te, settings, record, threads)


def _open_run(folder: RunFolder, est: HardmaxSentimentClassifier, settings: dict, *, overwrite: bool) -> None:
    """Under the run's lock: empty the folder (``overwrite``), or refuse to resume a run trained with other settings
    and check its checkpoint before anything is trained."""
    from ._estimator import HardmaxSentimentClassifier
    from ._train import check_checkpoint

    if folder.open(settings, HardmaxSentimentClassifier(d=est.d).resolved_params(), overwrite=overwrite):
        check_checkpoint(folder.path)


def _fit_in_run(job: _TrainingJob, lock: RunLock) -> tuple[Corpus, float]:
    """Tokenize the corpus (cached in the run), write settings.json and data.json, and fit the estimator on the
    training reviews; the corpus and the training seconds. A failure before any checkpoint leaves the folder as
    it was."""
    from .._threads import limit_threads
    from ._corpus import load_corpus

    est, run, train_idx = job.est, job.run, job.train_idx
    try:
        with limit_threads(torch_threads=job.threads):
            corpus = load_corpus(
                job.data,
                split=job.record["split"],
                seed=job.record["seed"],
                tokenizer=est.tokenizer,
                cache_dir=RunFolder(run).cache,
                reviews=job.reviews,
            )
            RunFolder(run).write_records(job.settings, job.record)
            t0 = time.perf_counter()
            est.fit(
                [corpus.reviews.texts[i] for i in train_idx],
                corpus.reviews.labels[train_idx],
                tokens=[corpus.tokens[i] for i in train_idx],
            )
    except BaseException:  # an error, Ctrl-C or SIGTERM
        if not RunFolder(run).has_checkpoint():
            restore_run(run)  # a run that --overwrite set aside comes back
            lock.undo()  # nothing was trained: leave the folder as it was
        else:
            drop_overwritten(run)
        raise
    drop_overwritten(run)
    return corpus, time.perf_counter() - t0


def _test_report(est: HardmaxSentimentClassifier, corpus: Corpus, test_idx: np.ndarray, seconds: float) -> dict:
    """``test.json``: :func:`~attndyn.sentiment._evaluate.accuracy_report` on the test reviews, alpha, the best
    epoch, the training seconds and why training stopped."""
    from ._evaluate import accuracy_report

    test = est.encode(y=corpus.reviews.labels[test_idx], tokens=[corpus.tokens[i] for i in test_idx])
    rep = accuracy_report(est.model_, test)
    rep.update(
        {"alpha": est.alpha_, "best_epoch": est.best_epoch_, "train_seconds": seconds, "stop_reason": est.stop_reason_}
    )
    if est.model_.config.registers:  # the temperature the second stage fitted (the estimator's _calibrated)
        rep["decision_scale"] = est.decision_scale_
        rep["register_side"] = est.register_side_
    return rep


def _finished_report(run: Path, est: HardmaxSentimentClassifier) -> dict | None:
    """The recorded test report of a run that trained to its end (its checkpoint stopped early or ran every
    epoch, and test.json was written after it); None for a run with work left."""
    from ._modelfile import read_json
    from ._train import checkpoint_state

    state = checkpoint_state(run)
    if state is None or not (run / TEST).is_file():
        return None
    if not (state.get("stopped") or state["epoch"] + 1 >= int(est.resolved_params()["epochs"])):
        return None
    try:
        rep = read_json(run / TEST)
    except InputError:  # damaged: training again rewrites it
        return None
    return rep if isinstance(rep, dict) else None


def train_run(
    estimator: HardmaxSentimentClassifier,
    run: str | os.PathLike,
    *,
    data: str | os.PathLike = DEFAULT_DATA,
    split: str = "random",
    threads: int = 2,
    overwrite: bool = False,
) -> TrainedRun:
    """Train ``estimator`` (its settings, ``random_state`` as the seed of the split and of training, its
    ``device``) on the training part of ``split`` of ``data`` into the run folder ``run``, exactly as
    ``attndyn sentiment train`` does; then score the test part into ``test.json``.

    ``split``: ``"random"`` (seeded 70/30, the paper's protocol) or ``"official"`` (25k/25k). ``threads``: torch's
    CPU threads (the weights do not depend on it). A folder holding a finished run with the same settings is left
    unchanged (``complete=True``); one with other settings is refused, unless ``overwrite``. The estimator is
    fitted in place (``run_dir`` set to ``run``).
    """
    run = Path(run)
    job = _training_job(estimator, run, Path(data), split, threads)
    folder = RunFolder(run)
    with folder.lock() as lock:
        _open_run(folder, job.est, job.settings, overwrite=overwrite)
        rep = _finished_report(run, job.est)
        if rep is not None:
            return TrainedRun(rep, complete=True)
        for name in EVALUATION_FILES:  # an evaluation of earlier weights is stale once the run trains again
            (run / name).unlink(missing_ok=True)
        corpus, seconds = _fit_in_run(job, lock)
        job.est.save(run)
        rep = _test_report(job.est, corpus, job.test_idx, seconds)
        write_json(run / TEST, rep)
    return TrainedRun(rep, complete=False)


def interrupted_line(run: str | os.PathLike) -> str:
    """What an interrupted training kept: its last finished epoch (checkpoint), and how to go on."""
    from ._train import checkpoint_state

    state = checkpoint_state(Path(run))
    if state is None:
        return "interrupted before the first epoch ended; nothing was kept: rerun the same command to start again"
    return f"interrupted after epoch {state['epoch'] + 1}; rerun the same command to resume"


def _is_external(info: dict, path: Path | str, data: Path | str | None) -> bool:
    """Whether ``path`` is another data set than the run's (scored whole): a ``data`` whose sha256 (or, for runs
    that recorded none, whose path) differs from data.json's. The run's own data file changed since training
    (no ``data``) is an InputError."""
    if "sha256" in info:
        got = data_identity(path)
        if got["sha256"] != info["sha256"]:
            if data is None:
                raise InputError(
                    f"the run's data file {str(path)!r} changed since training (sha256 {got['sha256'][:12]}…, data.json "
                    f"records {info['sha256'][:12]}…); restore it or pass its copy with {param('data.flag', 'data=')}, "
                    "or retrain"
                )
            return True  # another data set: every row of it is scored, none was seen in training
        return False
    return data is not None and Path(data).resolve() != Path(info["data"]).resolve()


def _external_test(est: HardmaxSentimentClassifier, path: Path | str) -> tuple[EncodedSplit, str]:
    """Every row of another data set, encoded, and how the report names it."""
    import numpy as np

    reviews = read_reviews(path)
    test = est.encode(reviews.texts, np.asarray(est.classes_)[reviews.labels])
    return test, f"all {len(reviews)} rows of {Path(path).name} (not the training data)"


def _run_test(est: HardmaxSentimentClassifier, run: Path, path: Path | str, info: dict) -> tuple[EncodedSplit, str]:
    """The test reviews of the run's own split, encoded (the split's sizes checked against data.json), and its name."""
    from ._corpus import load_corpus

    corpus = load_corpus(path, split=info["split"], seed=info["seed"], tokenizer=est.tokenizer, cache_dir=run / CACHE)
    if "n_test" in info and (len(corpus.train_idx), len(corpus.test_idx)) != (info.get("n_train"), info["n_test"]):
        raise InputError(
            f"the {info['split']} split of {str(path)!r} has {len(corpus.train_idx)}/{len(corpus.test_idx)} "
            f"train/test reviews but data.json records {info.get('n_train')}/{info['n_test']}; this is not the "
            f"run's data: omit {param('data.flag', 'data')}, or retrain"
        )
    te = corpus.test_idx
    test = est.encode(y=corpus.reviews.labels[te], tokens=[corpus.tokens[i] for i in te])
    return test, info["split"]


def evaluation_data(
    estimator: HardmaxSentimentClassifier, run: str | os.PathLike, data: str | os.PathLike | None = None
) -> tuple[EncodedSplit, str]:
    """What ``attndyn sentiment evaluate`` scores, encoded, and its name: the test split of the run's own data
    (by its sha256 in data.json; a folder written by ``save()`` reads the default data and split), or every row of
    ``data`` when that is another data set. Read under the run's reading lock (:meth:`RunFolder.reading`)."""
    run = Path(run)
    info = RunFolder(run).data_or_default(estimator.random_state)
    given = None if data is None else Path(data)
    path = given or Path(info["data"])
    if _is_external(info, path, given):
        return _external_test(estimator, path)
    return _run_test(estimator, run, path, info)


def sample_run_texts(
    estimator: HardmaxSentimentClassifier,
    run: str | os.PathLike,
    n: int,
    seed: int,
    data: str | os.PathLike | None = None,
) -> tuple[list[str], np.ndarray, str, Path | str]:
    """A seeded sample of ``n`` reviews for a faithfulness study of the run: of its test split (its own data), or of
    every row of ``data`` when that is another data set. Returns ``(texts, rows, pool, path)``
    (:func:`attndyn.sentiment._faithfulness.sample_texts`)."""
    from ._faithfulness import sample_texts

    run = Path(run)
    info = RunFolder(run).data_or_default(estimator.random_state)
    given = None if data is None else Path(data)
    path = given or Path(info["data"])
    if _is_external(info, path, given):
        return (*sample_texts(path, n, seed), path)
    texts, rows, pool = sample_texts(path, n, seed, split=info["split"], split_seed=info["seed"])
    return texts, rows, pool, path


class OpenRun(NamedTuple):
    """A trained run, opened by :func:`open_run`: its fitted ``estimator``, its data's ``reviews``, the train and
    test indices of its split, and its data record (``data.json``, or the default data and split)."""

    estimator: HardmaxSentimentClassifier
    reviews: Reviews
    train_idx: np.ndarray
    test_idx: np.ndarray
    data: dict[str, Any]


def open_run(run: str | os.PathLike, *, data: str | os.PathLike | None = None) -> OpenRun:
    """A run folder's model, data and split, read under its reading lock (refused while a training holds it): the
    model with every check of :meth:`HardmaxSentimentClassifier.load`, the reviews of ``data`` (default: the file
    its data.json names; a folder written by ``save()`` reads the default data), split as the training split it.
    The reviews must be the run's own (the sha256 data.json records): the split's indices of another file are other
    reviews, some of them seen in training."""
    from ._estimator import HardmaxSentimentClassifier

    folder = RunFolder(run)
    with folder.reading():
        est = HardmaxSentimentClassifier.load(folder.path)
        info = folder.data_or_default(est.random_state)
    if "sha256" in info and _is_external(info, Path(data or info["data"]), None if data is None else Path(data)):
        raise InputError(
            f"{str(data)!r} is not the run's data (data.json records {str(info['data'])!r}, sha256 "
            f"{info['sha256'][:12]}…): the run's split picks its test reviews by position; give that file, or omit "
            f"{param('data.flag', 'data')}"
        )
    reviews = read_reviews(data or info["data"])
    tr, te = folder.split(reviews, info)
    return OpenRun(est, reviews, tr, te, info)
