"""One thread for BLAS and torch meanwhile: small matrices on a shared, busy machine."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["single_thread_blas", "single_thread_torch"]


@contextmanager
def single_thread_blas() -> Iterator[None]:
    """One BLAS thread meanwhile: eigen-solvers of 384 x 384 matrices are 15x slower on a busy 2-core
    machine with the default thread pool (measured 2.9 s vs 0.19 s per matrix)."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover
        yield
    else:
        with threadpool_limits(limits=1):
            yield


@contextmanager
def single_thread_torch() -> Iterator[None]:
    """One torch intra-op thread meanwhile (restored after): small matrices, a busy machine."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
