"""Resource budgets: memory kept and steps taken, checked before a run starts; time and memory, while it runs.

A run that cannot fit is refused at once with an :class:`~attndyn.InputError` naming the
estimate and the remedy, instead of growing until the machine gives out. Inside :func:`run_budget` (the
explorer runs each edit so) the run loop also checks, at every step, the time spent and how much the
process's resident memory has grown, and stops the run with :class:`BudgetExceeded` past either.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import torch

from ._errors import param
from ._validation import InputError

__all__ = [
    "default_max_memory",
    "check_memory",
    "check_matrix_memory",
    "kept_count",
    "human_bytes",
    "BudgetExceeded",
    "RunBudget",
    "run_budget",
    "check_run_budget",
    "check_time_estimate",
]

# Without an explicit max_memory, the (d, d) matrices of a run and their working copies may take at most
# this many bytes: d of a few thousand. A huge d with a few tokens (three tokens in d = 10,000: 240 KB) would
# otherwise build gigabytes of matrices and spend minutes on O(d^3) checks before its first step.
MATRIX_BUDGET = 2**30

# Without an explicit max_memory, a run may keep at most this fraction of the device's memory.
MEMORY_FRACTION = 0.5


def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1000
    return f"{n:.3g} PB"  # pragma: no cover


def default_max_memory(device: torch.device) -> float:
    """Half of the device's memory: physical RAM on the CPU, the card's memory on CUDA."""
    if device.type == "cuda":
        _, total = torch.cuda.mem_get_info(device)
        return MEMORY_FRACTION * total
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        total = 16 * 10**9
    return MEMORY_FRACTION * total


def check_memory(estimate: float, max_memory: float | None, device: torch.device, what: str, remedy: str) -> None:
    """Refuse a run whose kept results would need more than ``max_memory`` bytes."""
    if max_memory is not None:
        if isinstance(max_memory, bool) or not isinstance(max_memory, (int, float)) or not max_memory > 0:
            raise InputError(f"max_memory must be a positive number of bytes, got {max_memory!r}")
    limit = default_max_memory(device) if max_memory is None else float(max_memory)
    budget = _ACTIVE.get()
    if max_memory is None and budget is not None and estimate > budget.memory:
        raise BudgetExceeded(
            f"{budget.work} would keep about {human_bytes(estimate)} ({what}), over {budget.owner}'s memory budget "
            f"of {human_bytes(budget.memory)}; {budget.remedy}"
        )
    if estimate > limit:
        raise InputError(
            f"this run would keep about {human_bytes(estimate)} ({what}), over the limit of {human_bytes(limit)}; "
            f"{remedy}, or raise {param('max_memory', 'max_memory')}"
        )


def check_matrix_memory(
    d: int, copies: int, dtype: torch.dtype, device: torch.device, max_memory: float | None, what: str
) -> None:
    """Refuse, before any is built, a run whose ``copies`` (d, d) matrices (``what``: the matrices and the working
    copies the engine makes) would take more than ``max_memory`` bytes (default :data:`MATRIX_BUDGET`)."""
    item = torch.empty((), dtype=dtype).element_size()
    estimate = float(copies) * d * d * item
    limit = MATRIX_BUDGET if max_memory is None else max_memory
    if estimate > limit:
        check_memory(
            estimate,
            limit,
            device,
            f"{what} in dimension d = {d}: {copies} matrices of {d} x {d}",
            "lower the tokens' dimension (project them, e.g. onto their principal components)",
        )


def kept_count(steps: int, every: int | None) -> int:
    """How many states SaveAt(every=...) keeps out of steps + 1 (the first and the last always)."""
    if steps == 0:
        return 1
    if every is None:
        return 2
    return steps // every + 1 + (steps % every != 0)


class BudgetExceeded(InputError):
    """Work run inside :func:`run_budget` went past its time or memory budget (a one-line message, as for bad
    input: the remedy is to ask for less)."""


def resident_bytes() -> float:
    """The process's resident memory now (Linux: /proc/self/statm), or 0 where it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return float(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):  # pragma: no cover - not Linux
        return 0.0


@dataclass
class RunBudget:
    """``seconds`` of time and ``memory`` bytes of growth of the resident memory for the work inside
    :func:`run_budget`; ``owner`` names whose budget it is and ``remedy`` what to ask for instead, in messages."""

    seconds: float
    memory: float
    owner: str
    remedy: str
    work: str = "this work"
    start: float = field(default_factory=time.monotonic)
    resident: float = field(default_factory=resident_bytes)
    _next_memory_check: float = 0.0

    def check(self, where: str) -> None:
        """Raise :class:`BudgetExceeded` if the time is spent, or (read every 50 ms) memory grew past the budget."""
        now = time.monotonic()
        if now - self.start > self.seconds:
            raise BudgetExceeded(
                f"{self.work} ran past {self.owner}'s time budget of {self.seconds:g} s ({where}) and was stopped; "
                f"{self.remedy}"
            )
        if now >= self._next_memory_check:
            self._next_memory_check = now + 0.05
            grown = resident_bytes() - self.resident
            if grown > self.memory:
                raise BudgetExceeded(
                    f"{self.work} took {human_bytes(grown)} more memory ({where}), over {self.owner}'s memory budget "
                    f"of {human_bytes(self.memory)}, and was stopped; {self.remedy}"
                )


_ACTIVE: ContextVar[RunBudget | None] = ContextVar("attndyn_run_budget", default=None)


@contextmanager
def run_budget(
    seconds: float, memory: float, *, owner: str, remedy: str, work: str = "this work"
) -> Iterator[RunBudget]:
    """Run the block under a time and memory budget (for this thread): the run loops check it at every step
    (:func:`check_run_budget`) and a run's memory estimate is held to it (:func:`check_memory`).

    >>> with run_budget(0.0, 1e9, owner="the example", remedy="ask for less") as budget:
    ...     check_run_budget("the example's loop", 1, 10)
    Traceback (most recent call last):
    attndyn._budget.BudgetExceeded: this work ran past the example's time budget of 0 s (the example's loop, step 1 of 10) and was stopped; ask for less
    """
    budget = RunBudget(seconds, memory, owner, remedy, work)
    token = _ACTIVE.set(budget)
    try:
        yield budget
    finally:
        _ACTIVE.reset(token)


def budget_active() -> bool:
    """Whether a :func:`run_budget` is in force (a run then checks it at every step, so it cannot do all its steps
    in one call)."""
    return _ACTIVE.get() is not None


def check_run_budget(what: str, step: int, steps: int) -> None:
    """Inside :func:`run_budget`: raise :class:`BudgetExceeded` once its time or memory is spent, at ``step`` of
    ``steps`` of ``what`` (a run loop calls this at every step); else nothing."""
    budget = _ACTIVE.get()
    if budget is not None:
        budget.check(f"{what}, step {step:,} of {steps:,}")


def check_time_estimate(what: str, seconds: float) -> None:
    """Inside :func:`run_budget`: refuse work that cannot be stopped part-way (a solver call, a figure
    export) before it starts, when its estimate ``seconds`` exceeds the time the budget has left; else
    nothing. Work that can be stopped checks :func:`check_run_budget` as it goes instead.

    >>> with run_budget(1.0, 1e9, owner="the example", remedy="ask for less"):
    ...     check_time_estimate("the solve", 30.0)
    Traceback (most recent call last):
    attndyn._budget.BudgetExceeded: the solve would take about 30 s, more than the 1 s left of the example's time budget of 1 s; ask for less
    """
    budget = _ACTIVE.get()
    if budget is None:
        return
    left = max(0.0, budget.seconds - (time.monotonic() - budget.start))
    if seconds > left:
        raise BudgetExceeded(
            f"{what} would take about {seconds:.3g} s, more than the {left:.2g} s left of {budget.owner}'s time "
            f"budget of {budget.seconds:g} s; {budget.remedy}"
        )
