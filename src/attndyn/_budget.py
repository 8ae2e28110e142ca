"""Resource budgets checked before a run starts: memory kept, steps taken.

A run that cannot fit is refused at once with an :class:`~attndyn.InputError` naming the
estimate and the remedy, instead of growing until the machine gives out.
"""

from __future__ import annotations

import os

import torch

from ._validation import InputError

__all__ = ["default_max_memory", "check_memory", "check_matrix_memory", "kept_count", "human_bytes"]

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
    if estimate > limit:
        raise InputError(
            f"this run would keep about {human_bytes(estimate)} ({what}), over the limit of {human_bytes(limit)}; "
            f"{remedy}, or raise max_memory"
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
