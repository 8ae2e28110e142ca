"""Progress bars for long work (rich), silent unless asked for."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["progress_bar"]


@contextmanager
def progress_bar(total: int | None, description: str, *, enabled: bool = True) -> Iterator[Callable[[float], None]]:
    """Context manager yielding ``advance(amount)``; a no-op when ``enabled`` is False.

    Bars go to standard error so that ``--json`` output on standard output stays clean.
    """
    if not enabled:

        def skip(amount: float = 1) -> None:
            pass

        yield skip
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(description, total=total)

        def advance(amount: float = 1) -> None:
            bar.advance(task, amount)

        yield advance
