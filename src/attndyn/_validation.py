"""Input checks at the API boundary.

Every public entry point funnels user input through these helpers, so that a bad
argument fails early with an :class:`InputError` naming the argument, the value and
the fix (the CLI turns it into a one-line message and exit status 2). Inputs that are
legal but outside a theorem's hypotheses raise a :class:`HypothesisWarning` instead.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ._errors import HypothesisWarning, InputError

__all__ = ["InputError", "HypothesisWarning", "as_tokens", "as_matrix", "check_positive", "check_int", "parse_indices"]


SUPPORTED_DTYPES = (torch.float64, torch.float32)


def check_dtype(dtype: Any) -> torch.dtype:
    """float64 (exact ties, the default) or float32; anything else is refused."""
    if dtype not in SUPPORTED_DTYPES:
        raise InputError(f"dtype must be torch.float64 (the default) or torch.float32, got {dtype!r}")
    return dtype


def check_device(device: Any) -> torch.device | None:
    """A usable torch device (None: where the input already is)."""
    if device is None:
        return None
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise InputError(f"device {device!r} is not a torch device; use 'cpu', 'cuda' or 'cuda:N'") from None
    if dev.type == "meta":
        raise InputError("device 'meta' holds no data; use 'cpu' or 'cuda'")
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError(f"device {device!r} asked for, but CUDA is not available here; use device='cpu'")
    if dev.type not in ("cpu", "cuda"):
        raise InputError(f"device {device!r} is not supported; use 'cpu' or 'cuda'")
    return dev


def _to_tensor(value: Any, name: str, dtype: torch.dtype, device: torch.device | str | None) -> Tensor:
    device = check_device(device)
    if isinstance(value, Tensor):
        t = value
        if t.layout != torch.strided:
            raise InputError(f"{name} is a {t.layout} tensor; pass a dense one ({name}.to_dense())")
        if t.device.type == "meta":
            raise InputError(f"{name} is a meta tensor (no data); pass a tensor on 'cpu' or 'cuda'")
    else:
        try:
            arr = np.asarray(value)
        except Exception as exc:  # ragged lists and the like
            raise InputError(
                f"{name} could not be read as an array ({exc}); pass a rectangular array of numbers"
            ) from None
        if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise InputError(f"{name} must be a rectangular array of numbers, got dtype {arr.dtype}")
        t = torch.from_numpy(np.ascontiguousarray(arr).reshape(arr.shape))  # ascontiguousarray makes 0-d 1-d
    if t.is_complex():
        raise InputError(f"{name} must be real, got a complex array")
    return t.to(dtype=dtype, device=device if device is not None else t.device)


def check_finite(t: Tensor, name: str) -> None:
    """Refuse NaN and infinities. A finite sum has only finite terms (a NaN or an infinity makes the sum NaN or
    infinite), so on the CPU one numpy pass decides the common case (numpy uses no thread: torch's reduction would
    wake torch's OpenMP pool, whose threads then spin for milliseconds on the cores the compiled kernels are about
    to use); a sum that overflows, and other devices, go to the extremes (torch)."""
    if t.device.type == "cpu" and t.is_floating_point() and t.dtype != torch.bfloat16 and t.numel():
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(np.sum(t.detach().resolve_neg().numpy())):
                return
    lo, hi = torch.aminmax(t) if t.is_floating_point() and t.numel() else (t.new_zeros(()), t.new_zeros(()))
    if not (bool(torch.isfinite(lo)) and bool(torch.isfinite(hi))):  # NaN propagates, +-inf is an extreme: one pass
        bad = "NaN" if bool(torch.isnan(t).any()) else "inf"
        raise InputError(f"{name} contains {bad}; remove or replace non-finite values")


def as_tokens(
    tokens: Any,
    *,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    name: str = "tokens",
) -> tuple[Tensor, bool]:
    """Return ``(tokens as a (B, n, d) tensor, was_batched)``.

    Accepts one sequence ``(n, d)`` or a batch ``(B, n, d)``; rejects anything else,
    empty input and non-finite values.
    """
    check_dtype(dtype)
    t = _to_tensor(tokens, name, dtype, device)
    if t.numel() == 0:
        raise InputError(f"{name} is empty (shape {tuple(t.shape)}); give at least one token of dimension >= 1")
    if t.ndim not in (2, 3):
        raise InputError(
            f"{name} must have shape (n, d) for one sequence or (B, n, d) for a batch, got shape {tuple(t.shape)}"
        )
    if t.numel() == 0 or any(s == 0 for s in t.shape):
        raise InputError(f"{name} is empty (shape {tuple(t.shape)}); give at least one token of dimension >= 1")
    check_finite(t, name)
    batched = t.ndim == 3
    return (t if batched else t.unsqueeze(0)), batched


def as_matrix(
    value: Any,
    name: str,
    d: int,
    *,
    dtype: torch.dtype,
    device: torch.device | str | None,
    square: bool = True,
    allow_heads: bool = False,
) -> Tensor:
    """A (d', d) matrix (square by default), or an (H, ., d) stack when ``allow_heads``."""
    t = _to_tensor(value, name, dtype, device)
    ok_rank = (2, 3) if allow_heads else (2,)
    if t.ndim not in ok_rank:
        want = "(d, d) or (heads, d, d)" if allow_heads else "(d, d)"
        raise InputError(f"{name} must be a matrix of shape {want}, got shape {tuple(t.shape)}")
    if t.shape[-1] != d:
        raise InputError(
            f"{name} has shape {tuple(t.shape)} but the tokens have dimension d={d}; its last axis must be {d}"
        )
    if square and t.shape[-2] != t.shape[-1]:
        raise InputError(f"{name} must be square ({d}x{d}), got shape {tuple(t.shape)}")
    check_finite(t, name)
    return t


def _check_number(value: Any, name: str, ok: Callable[[float], bool], *, kind: str, bounded: str) -> float:
    """``value`` as a finite float for which ``ok`` holds; the error says that ``name`` must be a ``kind`` number
    (when it is no number) or a ``bounded`` number (when it is not finite or not ``ok``)."""
    if isinstance(value, (str, bytes, bool)):
        raise InputError(f"{name} must be a {kind} number, got {value!r}")
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a {kind} number, got {value!r}") from None
    if not math.isfinite(v) or not ok(v):
        raise InputError(f"{name} must be a {bounded} number, got {value!r}")
    return v


def check_finite_number(value: Any, name: str) -> float:
    return _check_number(value, name, math.isfinite, kind="finite", bounded="finite")


def check_positive(value: Any, name: str) -> float:
    return _check_number(value, name, lambda v: v > 0, kind="positive", bounded="positive finite")


def check_nonnegative(value: Any, name: str) -> float:
    return _check_number(value, name, lambda v: v >= 0, kind="non-negative", bounded="non-negative finite")


def check_bool(value: Any, name: str) -> bool:
    """``value`` as a bool: True or False (numpy's bools too); anything else is refused.

    >>> check_bool(True, "causal")
    True
    """
    if not isinstance(value, (bool, np.bool_)):
        raise InputError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def check_int(value: Any, name: str, *, minimum: int = 0, maximum: int | None = None) -> int:
    want = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise InputError(f"{name} must be an integer {want}, got {value!r}")
    if value < minimum or (maximum is not None and value > maximum):
        raise InputError(f"{name} must be an integer {want}, got {value}")
    return int(value)


def parse_indices(text: str, name: str, n: int | None = None) -> list[int]:
    """Token indices typed as text, ``"0,2,5"`` -> ``[0, 2, 5]``, in the order given (repeats kept: ``--clusters``
    names one leader per token): integers separated by commas (spaces around them allowed), at least one, none
    negative, each below ``n`` when the number of tokens is given. Anything else is an :class:`InputError`
    naming ``name``. The command line and the explorer both read indices with it.

    >>> parse_indices(" 1, 7,1 ", "leaders", 8)
    [1, 7, 1]
    >>> parse_indices("1 7", "leaders")
    Traceback (most recent call last):
    ...
    attndyn._validation.InputError: leaders must be comma-separated token indices such as 0,2,5, got '1 7'
    """
    parts = [p.strip() for p in text.split(",")]
    if not any(parts):
        raise InputError(f"{name} is empty; give comma-separated token indices such as 0,2,5")
    try:
        out = [int(p) for p in parts]
    except ValueError:
        raise InputError(f"{name} must be comma-separated token indices such as 0,2,5, got {text!r}") from None
    bad = [i for i in out if i < 0 or (n is not None and i >= n)]
    if bad:
        where = f"the indices run from 0 to {n - 1}" if n is not None else "indices start at 0"
        raise InputError(f"{name}: token {bad[0]} does not exist; {where}")
    return out


def as_mask(mask: Any, shape: tuple[int, int], device: torch.device) -> Tensor | None:
    """A boolean (B, n) mask, True for real tokens; None passes through."""
    if mask is None:
        return None
    t = _to_tensor(mask, "mask", torch.float64, device) if not isinstance(mask, Tensor) else mask.to(device)
    if t.dtype != torch.bool:
        if not bool(((t == 0) | (t == 1)).all()):
            raise InputError("mask must be boolean (True = real token, False = padding)")
        t = t.bool()
    given = tuple(t.shape)
    if t.ndim == 1:
        t = t.unsqueeze(0)
    if tuple(t.shape) != shape:
        raise InputError(
            f"mask must have shape {shape[1:] if shape[0] == 1 else shape} (one flag per token), got {given}"
        )
    if not bool(t.any(dim=-1).all()):
        raise InputError("mask leaves a sequence with no real token; every sequence needs at least one True entry")
    return t


def warn_hypothesis(message: str, stacklevel: int = 3) -> None:
    """A :class:`HypothesisWarning`; ``message`` may mark parameters with :func:`attndyn._errors.param` (the command
    line words them as its flags). ``stacklevel`` as for :func:`warnings.warn`, counted from here."""
    warnings.warn(HypothesisWarning(message), stacklevel=stacklevel)


def pow2_normalized(t: Tensor) -> Tensor:
    """``t`` times the power of two that brings its largest entry into [0.5, 1) (exact in binary floating point,
    entries below the smallest normal number aside); an all-zero ``t`` is returned as it is.

    >>> pow2_normalized(torch.tensor([2.0**-1030, -(2.0**-1031)], dtype=torch.float64)).tolist()
    [0.5, -0.25]
    """
    big = t.detach().abs().amax() if t.numel() else t.new_zeros(())
    if not bool(big > 0):
        return t
    e = -int(torch.frexp(big).exponent)
    half = e // 2  # two steps: 2**e itself can overflow (e > 1023) where the product does not
    return t * (2.0**half) * (2.0 ** (e - half))


def is_spd(A: Tensor, *, rtol: float = 1e-12) -> bool:
    """Symmetric (to rounding) and positive definite, relative to A's own scale (A = 2**-1030 I and 1e308 I are SPD)."""
    A = pow2_normalized(A.detach())
    diag = torch.diagonal(A)
    if A.ndim == 2 and A.shape[0] == A.shape[1] and bool((A == torch.diag(diag)).all()):  # diagonal: no O(d^3)
        return bool(diag.min() > rtol * diag.abs().max().clamp_min(1e-300))
    if not torch.allclose(A, A.T, rtol=1e-10, atol=1e-12 * float(A.abs().max().clamp_min(1e-300))):
        return False
    ev = torch.linalg.eigvalsh((A + A.T) / 2)
    return bool(ev.min() > rtol * ev.abs().max().clamp_min(1e-300))
