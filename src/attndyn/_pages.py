"""Large CPU buffers on huge pages: the kept layers of a run, written once each.

A run writes its kept states into one buffer (``(T, B, n, d)``) allocated before the first layer. Linux hands
out such memory lazily, a 4 KiB page at a time, each on its first write; a 55 MB buffer is about 13,500 page
faults, and under a hypervisor those cost more than the layers that write the pages (docs/benchmarks.md,
"Memory pages"). numpy allocates its large arrays with ``madvise(MADV_HUGEPAGE)`` on Linux (unless
``NUMPY_MADVISE_HUGEPAGE=0``), so that the kernel may back them with 2 MiB pages where transparent huge pages are
set to ``madvise`` or ``always``; torch's CPU allocator does not. :func:`empty` and :func:`zeros` therefore make
CPU buffers of :data:`HUGE` bytes or more through numpy and share them with torch (:func:`torch.from_numpy`, no
copy); smaller ones, other devices and dtypes numpy lacks (bfloat16) go through torch. The values are the same
either way: only how the memory is mapped differs.

Such a buffer is also faulted in at once, in the calling thread (:func:`_fault_in`: one byte written per 4 KiB):
where the compiled kernel's threads were the first to write it, two threads faulting huge pages in at the same
time made a two-thread run slower than one thread (docs/benchmarks.md, "Memory pages").
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = ["HUGE", "empty", "zeros"]

#: Page size of the first-write pass (the smallest page the system may back a buffer with).
PAGE = 4096

#: Buffers from this size on (4 MiB: numpy asks for huge pages from there) are made through numpy.
HUGE = 1 << 22


def _numpy_dtype(dtype: torch.dtype) -> np.dtype | None:
    """numpy's dtype for ``dtype``, None where numpy has none (bfloat16)."""
    try:
        return torch.empty(0, dtype=dtype).numpy().dtype
    except TypeError:
        return None


def _through_numpy(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str | None) -> np.dtype | None:
    """numpy's dtype when a buffer of ``shape`` and ``dtype`` on ``device`` should be made through numpy."""
    if torch.device("cpu" if device is None else device).type != "cpu":
        return None
    size = int(np.prod(shape, dtype=np.int64)) * torch.empty(0, dtype=dtype).element_size()
    return _numpy_dtype(dtype) if size >= HUGE else None


def _fault_in(a: np.ndarray) -> np.ndarray:
    """Write one zero byte per :data:`PAGE` of the contiguous array ``a`` (every page it spans is then mapped, by
    this thread); an :func:`empty` buffer's values are undefined anyway, and a :func:`zeros` buffer's stay 0."""
    a.reshape(-1).view(np.uint8)[::PAGE] = 0
    return a


def empty(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str | None = None) -> Tensor:
    """:func:`torch.empty` of ``shape``, on huge pages where the system allows it (see the module)."""
    shape = tuple(int(s) for s in shape)
    np_dtype = _through_numpy(shape, dtype, device)
    if np_dtype is None:
        return torch.empty(shape, dtype=dtype, device=device)
    return torch.from_numpy(_fault_in(np.empty(shape, dtype=np_dtype)))


def zeros(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str | None = None) -> Tensor:
    """:func:`torch.zeros` of ``shape``, on huge pages where the system allows it (numpy's zeros come from
    ``calloc``: fresh pages are zero already, and :func:`_fault_in` only maps them)."""
    shape = tuple(int(s) for s in shape)
    np_dtype = _through_numpy(shape, dtype, device)
    if np_dtype is None:
        return torch.zeros(shape, dtype=dtype, device=device)
    return torch.from_numpy(_fault_in(np.zeros(shape, dtype=np_dtype)))
