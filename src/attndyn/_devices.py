"""Where a computation runs: ``"cpu"``, ``"cuda"`` (``"cuda:N"``) or ``"auto"`` (CUDA when present).

The one place where device names given by users (the estimator's ``device=``, the CLI's
``--device``) become :class:`torch.device` objects.
"""

from __future__ import annotations

from typing import Any

import torch

from ._errors import param
from ._validation import InputError

__all__ = ["resolve_device", "DEVICE_CHOICES"]

DEVICE_CHOICES = ("cpu", "cuda", "auto")


def resolve_device(device: Any) -> torch.device:
    """``"auto"`` → CUDA if available else CPU; ``"cpu"``, ``"cuda"``, ``"cuda:N"`` or a
    :class:`torch.device` as given, after checking that it exists here.

    >>> resolve_device("cpu")
    device(type='cpu')
    >>> resolve_device("auto").type in ("cpu", "cuda")
    True
    """
    if isinstance(device, str) and device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    name, given = param("device", "device"), param("device.given", "device=") + repr(device)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise InputError(f"{name} must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}") from None
    if dev.type not in ("cpu", "cuda"):
        raise InputError(f"{name} must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InputError(f"{given} but CUDA is not available on this machine; use 'cpu' or 'auto'")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise InputError(f"{given} but this machine has {torch.cuda.device_count()} CUDA device(s)")
    return dev
