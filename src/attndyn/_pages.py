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
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

__all__ = ["HUGE", "empty", "zeros"]

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


def empty(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str | None = None) -> Tensor:
    """:func:`torch.empty` of ``shape``, on huge pages where the system allows it (see the module)."""
    shape = tuple(int(s) for s in shape)
    np_dtype = _through_numpy(shape, dtype, device)
    if np_dtype is None:
        return torch.empty(shape, dtype=dtype, device=device)
    return torch.from_numpy(np.empty(shape, dtype=np_dtype))


def zeros(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device | str | None = None) -> Tensor:
    """:func:`torch.zeros` of ``shape``, on huge pages where the system allows it (numpy's zeros come from
    ``calloc``: fresh pages are zero already, and no page is written before it is used)."""
    shape = tuple(int(s) for s in shape)
    np_dtype = _through_numpy(shape, dtype, device)
    if np_dtype is None:
        return torch.zeros(shape, dtype=dtype, device=device)
    return torch.from_numpy(np.zeros(shape, dtype=np_dtype))
