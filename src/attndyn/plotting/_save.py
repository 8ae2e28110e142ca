"""Saving figures: PNG, SVG and PDF, each written atomically (readers never see half a file)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from .._io import atomic_write
from .._validation import InputError
from ._style import DPI

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["save_figure", "FORMATS", "png_bytes"]

FORMATS = ("png", "svg", "pdf")


def save_figure(
    fig: Figure, stem: str | os.PathLike, *, formats: tuple[str, ...] = FORMATS, dpi: int = DPI
) -> list[Path]:
    """Write ``fig`` as ``stem.png``, ``stem.svg`` and ``stem.pdf`` (or the ``formats`` given).

    Returns the written paths in the order of ``formats``. Each file is written to a temporary
    name in the same folder and renamed, so an interrupted run leaves no truncated figure.

    >>> from attndyn.plotting._style import new_figure
    >>> import tempfile, pathlib
    >>> fig = new_figure(); _ = fig.add_subplot().plot([0, 1], [0, 1])
    >>> [p.suffix for p in save_figure(fig, pathlib.Path(tempfile.mkdtemp()) / "line")]
    ['.png', '.svg', '.pdf']
    """
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise InputError(f"formats={formats!r}: choose among {', '.join(FORMATS)}")
    stem = Path(stem)
    paths = []
    for fmt in formats:
        target = stem.with_name(stem.name + "." + fmt)
        # svg: a fixed hash salt keeps the file identical between runs
        meta = {"Date": None} if fmt in ("svg", "pdf") else {}

        def write(tmp: Path, fmt: str = fmt, meta: dict[str, None] = meta) -> None:
            fig.savefig(tmp, format=fmt, dpi=dpi, metadata=meta)

        atomic_write(target, write)
        paths.append(target)
    return paths


def png_bytes(fig: Figure, *, dpi: int = DPI) -> bytes:
    """The figure rendered as PNG, in memory (for inlining into HTML or animation frames)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()
