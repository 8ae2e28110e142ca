"""Downloads of the explorer: a figure as PNG or SVG, a state as a zip of the files the CLI reads."""

from __future__ import annotations

import io
import json
import zipfile
from typing import TYPE_CHECKING, Any

import numpy as np

from .._validation import InputError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["figure_bytes", "bundle"]


def figure_bytes(fig: Figure, fmt: str) -> bytes:
    """The figure encoded as ``"png"`` or ``"svg"``."""
    if fmt not in ("png", "svg"):
        raise InputError(f"format {fmt!r}: choose png or svg")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, dpi=150, bbox_inches="tight")
    return buf.getvalue()


def _encode(value: Any) -> bytes:
    if isinstance(value, np.ndarray):
        buf = io.BytesIO()
        np.save(buf, value, allow_pickle=False)
        return buf.getvalue()
    if isinstance(value, (dict, list)):
        return (json.dumps(value, indent=2) + "\n").encode()
    return str(value).encode()


def bundle(files: dict[str, Any]) -> bytes:
    """A zip of ``{name: array (.npy) | dict/list (.json) | text}``, ready to unpack and rerun.

    >>> import zipfile, io
    >>> z = zipfile.ZipFile(io.BytesIO(bundle({"A.npy": np.eye(2), "state.json": {"alpha": 0.5}})))
    >>> sorted(z.namelist()), np.load(io.BytesIO(z.read("A.npy"))).tolist()
    (['A.npy', 'state.json'], [[1.0, 0.0], [0.0, 1.0]])
    """
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, value in files.items():
            z.writestr(name, _encode(value))
    return buf.getvalue()
