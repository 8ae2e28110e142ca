"""Resource budgets checked before a run starts: memory kept, steps taken.

A run that cannot fit is refused at once with an :class:`~attndyn.InputError` naming the
estimate and the remedy, instead of growing until the machine gives out.
"""

from __future__ import annotations

import os

import torch

from ._validation import InputError

__all__ = ["default_max_memory", "check_memory", "kept_count", "human_bytes"]

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
    if estimate > limit:
        raise InputError(
            f"this run would keep about {human_bytes(estimate)} ({what}), over the limit of {human_bytes(limit)}; "
            f"{remedy}, or raise max_memory"
        )


def kept_count(steps: int, every: int | None) -> int:
    """How many states SaveAt(every=...) keeps out of steps + 1 (the first and the last always)."""
    if steps == 0:
        return 1
    if every is None:
        return 2
    return steps // every + 1 + (steps % every != 0)
