"""How the command line names the parameters the library's errors name (:func:`attndyn._errors.param`).

The library words an :class:`~attndyn.InputError` for a Python caller (``url=``, ``overwrite=True``); the
command line prints :meth:`~attndyn.InputError.worded` with :data:`FLAGS`, its own flags, instead.

>>> flag_of("min_log_odds"), flag_of("random_state"), FLAGS["setting.lr"], FLAGS["overwrite"]
('--min-log-odds', '--seed', '--lr', '--overwrite')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

from .._errors import InputError

__all__ = ["FLAGS", "SPHERE_RUN_FLAGS", "check_annealing", "flag_of", "settings_as_flags", "worded_by"]

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
    "time": "--time",
    "step": "--step",
    "beta": "--beta",
    "noise": "--noise",
    "max_steps": "--max-steps",
    "max_steps.over": "--max-steps ",
    "max_steps.raise": ", or raise --max-steps",
    "max_steps.spent": "raise --max-steps",
    "systems": "--systems",
    "n": "--n",
    "d": "--d",
    "normalize": "--normalize",
    "norm": "--norm ",
    "seed": "--seed 0",
    "seed.flag": "--seed",
    "method": "--method",
    "method.discrete": "--method discrete",
    "method.euler": "--method euler",
    "attention.sa": "--attention sa",
    "rescaled": "--rescaled",
    "delta": "--delta",
    "beta_max": "--beta-max",
    "checkpoints": "--checkpoints",
    "save.layers": "run fewer --layers or fewer sequences (in Python, keep fewer with save=SaveAt(every=k))",
    "save.states": "ask for fewer steps (a shorter --time, a larger --step) or fewer sequences (in Python, keep fewer "
    "with save=SaveAt(every=k))",
    "max_memory": "the memory limit (the Python API's max_memory=; the command line keeps half the machine's memory)",
    # the commands with --device
    "device": "--device",
    "device.given": "--device ",
    # attndyn hardmax, control
    "alpha": "--alpha",
    "tol": "--tol",
    "layers": "--layers",
    "rounds": "--rounds",
    "margin": "--margin",
    "max_constraints": "--max-constraints",
    # attndyn reproduce
    "only": "--only",
    "sentiment_run": "--sentiment-run",
    # attndyn sweep (and reproduce)
    "out": "--out",
    "sweep.folder": "the --out folder of `attndyn sweep`",
    # attndyn pretrained
    "cluster_tol": "--cluster-tol",
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
    """:data:`_WORDS` (``own`` words first: a command's own), and ``setting.NAME`` → :func:`flag_of` ``(NAME)``."""

    def __init__(self, own: Mapping[str, str] | None = None) -> None:
        self._words = {**_WORDS, **(own or {})}

    def __getitem__(self, key: str) -> str:
        if key.startswith("setting."):
            return flag_of(key.removeprefix("setting."))
        return self._words[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._words)

    def __len__(self) -> int:
        return len(self._words)


FLAGS: Mapping[str, str] = _Flags()

#: ``attndyn sphere run`` has no --max-steps (it keeps the library's budget): its refusals say what its flags can
#: change instead.
SPHERE_RUN_FLAGS: Mapping[str, str] = _Flags(
    {
        "max_steps.over": "the step budget of ",
        "max_steps.raise": "",
        "max_steps.spent": "use a shorter --time, or --method rk4 with a --step small enough for the field (a "
        "warning says when it is not)",
    }
)


@contextmanager
def worded_by(words: Mapping[str, str]) -> Iterator[None]:
    """Inside the block, an :class:`~attndyn.InputError` names its parameters by ``words`` (a command's own
    :data:`FLAGS`, such as :data:`SPHERE_RUN_FLAGS`) instead of by :data:`FLAGS`."""
    try:
        yield
    except InputError as exc:
        raise InputError(exc.worded(words)) from None


def settings_as_flags(message: str, settings: Iterable[str]) -> str:
    """A message of the sentiment model's settings checks, which name a setting as Python does (``alpha_init must be
    a positive number``), with each named by its train flag (:func:`flag_of`): every name with an underscore (no
    word of prose has one), and a one-word name (``tau``, ``d``) where it opens the message.

    >>> settings_as_flags("alpha_min must satisfy 0 < alpha_min < alpha_init=1.0, got 2", ["alpha_min", "alpha_init"])
    '--alpha-min must satisfy 0 < --alpha-min < --alpha-init=1.0, got 2'
    >>> settings_as_flags("tau must be a positive number, got 0.0 (a tau of 0 is the hardmax)", ["tau"])
    '--tau must be a positive number, got 0.0 (a tau of 0 is the hardmax)'
    """
    names = sorted(settings, key=len, reverse=True)  # the longest first: tau_start before tau
    joined = [n for n in names if "_" in n]
    if joined:
        message = re.sub(r"(?<![\w-])(" + "|".join(map(re.escape, joined)) + r")\b", lambda m: flag_of(m[1]), message)
    first = message.split(" ", 1)[0]
    if first in names:
        message = flag_of(first) + message[len(first) :]
    return message


def check_annealing(settings: Mapping[str, object], d: int) -> None:
    """An InputError where one annealing flag would do nothing: --tau-start with no annealing epochs (given as 0 or
    left at the recipe's 0), or annealing epochs with no --tau-start to anneal from."""
    tau_start, epochs = settings["tau_start"], settings["anneal_epochs"]
    if tau_start is not None and not epochs:
        raise InputError(
            f"--tau-start {tau_start:g} anneals the temperature over --anneal-epochs, which is 0 (the recipe for "
            f"d = {d} does not anneal); give --anneal-epochs 1 or more, or drop --tau-start"
        )
    if epochs and tau_start is None:
        raise InputError(
            f"--anneal-epochs {epochs} anneals the temperature from --tau-start, which is not given (the recipe for "
            f"d = {d} does not anneal); give --tau-start (e.g. 1.0), or drop --anneal-epochs"
        )
