"""How the command line names the parameters the library's errors name (:func:`attndyn._errors.param`).

The library words an :class:`~attndyn.InputError` for a Python caller (``url=``, ``overwrite=True``); the
command line prints :meth:`~attndyn.InputError.worded` with :data:`FLAGS`, its own flags, instead.

>>> flag_of("min_log_odds"), flag_of("random_state"), FLAGS["setting.lr"], FLAGS["overwrite"]
('--min-log-odds', '--seed', '--lr', '--overwrite')
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

__all__ = ["FLAGS", "flag_of"]

_SETTING_FLAGS = {"random_state": "--seed", "data.sha256": "--data (sha256)", "data.size": "--data (size in bytes)"}

#: The parameter keys of the library's errors, and the flags (or phrases) the command line shows for them.
_WORDS = {
    # attndyn sentiment train and the readers of its run folder
    "run": "--run",
    "run.new": "--run NEW",
    "with.run.new": " with --run NEW",
    "overwrite": "--overwrite",
    "checkpoint.remove": " (command line: --overwrite, or --run NEW)",
    "retrain": "retrain the run (attndyn sentiment train --run NEW ...)",
    "resume": "rerun the same `attndyn sentiment train` command to finish it (it resumes from the checkpoint)",
    "positive_label": "give a data file whose sentiment column says positive (or 1) for the positive reviews",
    # attndyn data imdb, and the data a run reads
    "url": "--url",
    "sha256": "--sha256",
    "sha256.none": "None, on the command line --sha256 none,",
    "download": "--download",
    "data": "--data ",
    "data.flag": "--data",
    "file": "--file",
    "encoding": "--encoding",
    "threads": "--threads",
    "split": "--split",
    "data.end": "",
    "columns": " (the header's first line)",
    "split.random": "--split random",
    # attndyn sphere, softmax
    "normalize": "--normalize",
    "norm": "--norm ",
    "seed": "--seed 0",
    "method.discrete": "--method discrete",
    "method.euler": "--method euler",
    "attention.sa": "--attention sa",
    "rescaled": "--rescaled",
    "delta": "--delta",
    "checkpoints": "--checkpoints",
    "save.layers": "run fewer --layers or fewer sequences (in Python, keep fewer with save=SaveAt(every=k))",
    "save.states": "ask for fewer steps (a shorter --time, a larger --step) or fewer sequences (in Python, keep fewer "
    "with save=SaveAt(every=k))",
    "max_memory": "the memory limit (the Python API's max_memory=; the command line keeps half the machine's memory)",
    # attndyn reproduce
    "only": "--only",
    "sentiment_run": "--sentiment-run",
    # attndyn sweep (and reproduce)
    "out": "--out",
    "sweep.folder": "the --out folder of `attndyn sweep`",
    # attndyn pretrained
    "model": "--model",
    "seal": "`attndyn sentiment seal FOLDER`",
    "model.path": "--model PATH",
    "imdb.run": "--sentiment-run",
    "reviews": "--reviews ",
    "text": "TEXT",
}


def flag_of(setting: str) -> str:
    """The train flag of an estimator setting: ``min_log_odds`` → ``--min-log-odds``, ``random_state`` → ``--seed``."""
    return _SETTING_FLAGS.get(setting, "--" + setting.replace("_", "-"))


class _Flags(Mapping[str, str]):
    """:data:`_WORDS`, and ``setting.NAME`` → :func:`flag_of` ``(NAME)``."""

    def __getitem__(self, key: str) -> str:
        if key.startswith("setting."):
            return flag_of(key.removeprefix("setting."))
        return _WORDS[key]

    def __iter__(self) -> Iterator[str]:
        return iter(_WORDS)

    def __len__(self) -> int:
        return len(_WORDS)


FLAGS: Mapping[str, str] = _Flags()
