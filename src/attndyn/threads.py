"""How many threads a run uses: small problems choose one thread themselves (a measured rule).

Two pools are involved: torch's intra-op threads (every tensor operation) and numba's threads
(the compiled hardmax kernels, :func:`attndyn._kernels.threads_for`). Waking a pool and waiting
at its barrier costs tens of microseconds on a quiet machine, and milliseconds when the cores are
busy with other work, because a thread that is not scheduled holds everyone else up (measured on
the 2-core project machine, docs/benchmarks.md "Threads": a 40-token softmax run 20x slower with
2 threads on busy cores; the bookkeeping of a (3000, 128, 2) hardmax run, a few element-wise
operations on (B, n) tensors per layer, 8x slower). So:

* torch runs an engine call on one thread when one layer or field evaluation of torch work is
  below ``TORCH_MIN_WORK`` multiply-adds (:func:`torch_threads_for`); a hardmax run whose layers go
  through the compiled kernel leaves torch O(B) bookkeeping per layer (one thread whatever the
  setting: below torch's parallel grain) and a few passes over the tokens per run, which use the
  caller's threads from ``TORCH_MIN_PASS`` token coordinates on (2 MB of float64; measured on the
  2-core machine, docs/benchmarks.md "Threads": 2 threads took about 2 ms off a 40 ms run);
* the compiled kernels use their threads above ``attndyn._kernels.PARALLEL_MIN_WORK``.

The caller's setting is restored afterwards; nothing is changed for large problems.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

__all__ = ["TORCH_MIN_WORK", "TORCH_MIN_PASS", "torch_threads_for", "limit_torch_threads", "one_thread_when_small"]

# Below this many multiply-adds per layer / field evaluation, torch's threads cost more than they save.
TORCH_MIN_WORK = 1 << 24
# A compiled hardmax run's torch work is a few passes over its B n d tokens: threads from 2 MB of float64 on.
TORCH_MIN_PASS = 1 << 18


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


def _shape_of(tokens: Any) -> tuple[int, int, int]:
    shape = tuple(tokens.shape) if hasattr(tokens, "shape") else np.shape(tokens)
    if len(shape) == 2:
        shape = (1, *shape)
    return shape if len(shape) == 3 else (1, 1, 1)  # malformed input: the entry point reports it


def _on_gpu(tokens: Any, device: Any) -> bool:
    if isinstance(tokens, torch.Tensor) and tokens.device.type != "cpu":
        return True
    try:
        return device is not None and torch.device(device).type != "cpu"
    except (RuntimeError, TypeError):  # a bad device: the entry point reports it
        return False


def one_thread_when_small(engine: str) -> Callable:
    """Decorator for the entry points :func:`attndyn.hardmax` (``engine="hardmax"``) and
    :func:`attndyn.softmax` (``"softmax"``): the call runs with ``torch_threads_for(work)`` torch
    threads, ``work`` the torch multiply-adds of one layer or field evaluation."""

    def wrap(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def run(tokens: Any, *args: Any, **kw: Any) -> Any:
            B, n, d = _shape_of(tokens)
            if _on_gpu(tokens, kw.get("device")):
                return fn(tokens, *args, **kw)
            work = B * n * n * d
            if engine == "hardmax":
                grad = (
                    isinstance(tokens, torch.Tensor)
                    and tokens.requires_grad
                    or getattr(kw.get("A"), "requires_grad", False)
                )
                if kw.get("dtype", torch.float64) == torch.float64 and not grad:
                    # The compiled kernel does the layers (and writes the kept states); torch keeps the
                    # books: O(B) per layer, below torch's parallel grain (one thread whatever the
                    # setting), and a few passes over the tokens per run (validation, scale, the first
                    # kept state), which threads speed up once they are large.
                    threads = torch.get_num_threads() if B * n * d >= TORCH_MIN_PASS else 1
                    with limit_torch_threads(threads):
                        return fn(tokens, *args, **kw)
            with limit_torch_threads(torch_threads_for(work)):
                return fn(tokens, *args, **kw)

        return run

    return wrap
