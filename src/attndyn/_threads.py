"""How many threads a block of work may use: one context manager for torch's and the BLAS pools.

Two kinds of pool are involved: torch's intra-op threads (every tensor operation) and the BLAS /
OpenMP pools of numpy and scipy (eigen-solvers, matrix products), which ``threadpoolctl`` reaches.
:func:`limit_threads` caps either for the duration of a block and restores the caller's settings;
it never raises a count. Which limit a run needs is decided where the run is set up
(:func:`attndyn.hardmax`, :func:`attndyn.softmax`, the pretrained analyses, ``attndyn.reproduce``);
this module gives the mechanism and the shared rule for torch work, :func:`torch_threads_for`.
Waking a pool and waiting at its barrier costs more than small problems gain, above all on busy
cores (docs/benchmarks.md, "Threads").
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

import torch
from threadpoolctl import threadpool_limits

__all__ = ["TORCH_MIN_WORK", "torch_threads_for", "limit_torch_threads", "limit_threads"]

# Below this many multiply-adds per layer / field evaluation, torch's threads cost more than they save.
TORCH_MIN_WORK = 1 << 24


def torch_threads_for(work: int) -> int:
    """torch intra-op threads for ``work`` multiply-adds per step: 1 below ``TORCH_MIN_WORK``, else
    the current setting.

    >>> torch_threads_for(40 * 40 * 3)
    1
    """
    return 1 if work < TORCH_MIN_WORK else torch.get_num_threads()


@contextmanager
def limit_torch_threads(threads: int) -> Iterator[None]:
    """Run the block with at most ``threads`` torch intra-op threads, then restore the setting."""
    old = torch.get_num_threads()
    if threads >= old:
        yield
        return
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(old)


@contextmanager
def limit_threads(*, torch_threads: int | None = None, blas_threads: int | None = None) -> Iterator[None]:
    """Run the block with at most ``torch_threads`` torch intra-op threads and ``blas_threads`` threads
    in every pool threadpoolctl finds (BLAS and OpenMP: numpy's, scipy's, scikit-learn's, and
    torch's own OpenMP pool where torch is built with it); None sets no limit of that kind. The
    caller's settings are restored afterwards (torch's last).

    >>> with limit_threads(torch_threads=1, blas_threads=1):
    ...     torch.get_num_threads()
    1
    """
    with ExitStack() as stack:
        if torch_threads is not None:
            stack.enter_context(limit_torch_threads(torch_threads))
        if blas_threads is not None:
            stack.enter_context(threadpool_limits(limits=blas_threads))
        yield
