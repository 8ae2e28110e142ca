"""A scheduler that dies during a run is an error of the run (one InputError), never a failing cell or claim."""

import concurrent.futures

import pytest

from attndyn import InputError
from attndyn.experiments._run import run_cells


def _name(old: str, new: str) -> str:
    """The cell's registered name: ``new`` once the hyphenated names are registered (old ones then warn)."""
    from attndyn.experiments import _registry as registry

    return new if new in getattr(registry, "RENAMED", {}).values() else old


class _Future:
    def __init__(self, exc):
        self.exc = exc

    def result(self):
        raise self.exc


class _DeadClient:
    """What a client of a scheduler killed mid-run gives back: futures whose result() raises."""

    status = "closed"

    def __init__(self, exc):
        self.exc = exc

    def submit(self, *args, **kwargs):
        return _Future(self.exc)


class FutureCancelledError(concurrent.futures.CancelledError):
    """distributed's name for a future the scheduler dropped."""


@pytest.mark.parametrize("exc", [FutureCancelledError("lost"), OSError("Connection refused"), TimeoutError()])
def test_a_dead_scheduler_is_an_error_of_the_run(exc):
    with pytest.raises(InputError, match=r"the dask scheduler stopped answering during the run .* run again$"):
        run_cells(_name("good_triple", "good-triple"), [(0, {"d": 2})], client=_DeadClient(exc))


def test_a_bug_in_a_chunk_on_a_live_cluster_is_not_called_a_dead_scheduler():
    client = _DeadClient(ZeroDivisionError("a bug"))
    client.status = "running"
    with pytest.raises(ZeroDivisionError):
        run_cells(_name("good_triple", "good-triple"), [(0, {"d": 2})], client=client)
