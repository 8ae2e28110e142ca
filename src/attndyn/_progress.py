"""Progress bars for long work (rich), silent unless asked for."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.progress import Task

__all__ = ["progress_bar"]


@contextmanager
def progress_bar(
    total: int | None, description: str, *, enabled: bool = True, completed: int = 0, unit: str | None = None
) -> Iterator[Callable[[float], None]]:
    """Context manager yielding ``advance(amount)``; a no-op when ``enabled`` is False.

    Bars go to standard error so that ``--json`` output on standard output stays clean.
    ``completed`` starts the bar part-way (resumed work); ``unit`` adds a rate column ("12.3 cells/s").
    """
    if not enabled:

        def skip(amount: float = 1) -> None:
            pass

        yield skip
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    class RateColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            return Text("" if task.speed is None else f"{task.speed:.1f} {unit}/s")

    columns = [
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ]
    if unit is not None:
        columns.append(RateColumn())
    with Progress(*columns, console=Console(stderr=True), transient=False) as bar:
        task = bar.add_task(description, total=total, completed=completed)

        def advance(amount: float = 1) -> None:
            bar.advance(task, amount)

        yield advance
