"""Reading token files and writing results atomically."""

from __future__ import annotations

import csv
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ._validation import InputError

__all__ = ["load_array", "atomic_write", "write_json", "write_text", "write_bytes", "file_sha256"]


def load_array(path: str | os.PathLike, name: str = "TOKENS") -> np.ndarray:
    """Load a numeric array from ``.npy``, ``.csv`` (one row a token, no header needed) or ``.json``.

    A JSON file holds a nested list (n x d or B x n x d) or an object with a ``"tokens"`` key.
    ``.npy`` files are read with ``allow_pickle=False``. Errors name the file and the problem.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"{name} file {str(p)!r} does not exist")
    if p.is_dir():
        raise InputError(f"{name} path {str(p)!r} is a folder; give a .npy, .csv or .json file")
    suffix = p.suffix.lower()
    try:
        if suffix == ".npy":
            arr = np.load(p, allow_pickle=False)
        elif suffix == ".json":
            data = json.loads(p.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                if "tokens" not in data:
                    raise InputError(f"{name} file {str(p)!r} is a JSON object without a 'tokens' key")
                data = data["tokens"]
            arr = np.array(data, dtype=np.float64)
        elif suffix == ".csv":
            with p.open(newline="", encoding="utf-8") as f:
                rows = [r for r in csv.reader(f) if r and any(c.strip() for c in r)]
            if rows and not _numeric(rows[0]):
                rows = rows[1:]  # a header line
            arr = np.array([[float(c) for c in r] for r in rows], dtype=np.float64)
        else:
            raise InputError(f"{name} file {str(p)!r} has an unknown type {suffix!r}; use .npy, .csv or .json")
    except InputError:
        raise
    except (ValueError, TypeError, OSError, OverflowError, RecursionError, MemoryError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if isinstance(exc, RecursionError):
            first = "lists nested too deeply; give an (n, d) or (B, n, d) array"
        raise InputError(f"{name} file {str(p)!r} could not be read: {first}") from None
    if arr.dtype == object or not np.issubdtype(arr.dtype, np.number):
        raise InputError(f"{name} file {str(p)!r} does not hold a rectangular numeric array")
    return arr


def _numeric(row: list[str]) -> bool:
    try:
        [float(c) for c in row]
        return True
    except ValueError:
        return False


def atomic_write(path: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp_path)`` then rename onto ``path``: readers never see a half-written file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def file_sha256(path: str | os.PathLike, *, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in chunks (constant memory)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda p: p.write_bytes(data))
