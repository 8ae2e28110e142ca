"""numba's on-disk cache of attndyn's kernels, keyed on the sources of all of them.

numba keys a cached compiled function on the contents of its own source file only, while attndyn's kernels
inline functions of other modules: the planar run (:mod:`attndyn._planar_run`) is made of the phase functions of
:mod:`attndyn._kernels`. After an edit of ``_kernels.py`` alone, numba would load the run compiled before the edit
and run the old phase functions: tests and benchmarks of a working tree would measure code that is no longer
there. The locators here give every cached kernel of attndyn's modules the contents of all the modules that
define kernels (:data:`SOURCES`) as its stamp, beside numba's own, so that an edit of any of them compiles them
all again (an installed attndyn never changes between its runs: only a working tree pays). Each module that defines
a cached kernel imports this one first (a kernel's locator is chosen when it is defined).
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import Any

from numba.core import caching

__all__ = ["SOURCES", "sources_digest"]

_HERE = Path(__file__).resolve().parent

#: The modules that define attndyn's cached kernels, and those whose functions these kernels compile in.
SOURCES = ("_distinct.py", "_jit_cache.py", "_kernels.py", "_planar_run.py", "_share.py", "margins.py")


@functools.lru_cache(maxsize=8)
def _digest(stamps: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for path, _, _ in stamps:
        h.update(Path(path).read_bytes())
    return h.hexdigest()


def sources_digest(folder: Path | None = None, names: tuple[str, ...] = SOURCES) -> str:
    """sha256 of the contents of the files ``names`` in ``folder`` (default: attndyn's; read again when one's size or
    time changes)."""
    folder = _HERE if folder is None else folder
    stamps = []
    for name in names:
        st = os.stat(folder / name)
        stamps.append((str(folder / name), st.st_mtime_ns, st.st_size))
    return _digest(tuple(stamps))


class _AllSources:
    """A locator mixin: numba's stamp of the kernel's own file, and the digest of :data:`SOURCES`."""

    def get_source_stamp(self) -> Any:
        return (super().get_source_stamp(), sources_digest())  # type: ignore[misc]

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> Any:
        if Path(py_file).resolve().parent != _HERE:
            return None  # not attndyn's: numba's own locators
        return super().from_function(py_func, py_file)  # type: ignore[misc]


def _numba_class(name: str) -> Any:
    """numba's class ``name`` (public in recent numba, with a leading underscore in older ones)."""
    return getattr(caching, name, None) or getattr(caching, "_" + name)


class _UserProvided(_AllSources, _numba_class("UserProvidedCacheLocator")):  # type: ignore[misc]
    """NUMBA_CACHE_DIR set: attndyn's kernels there."""


class _InTree(_AllSources, _numba_class("InTreeCacheLocator")):  # type: ignore[misc]
    """attndyn's kernels beside their sources (``__pycache__``)."""


_impl = _numba_class("CacheImpl")
if not any(isinstance(c, type) and issubclass(c, _AllSources) for c in _impl._locator_classes):
    _impl._locator_classes[:0] = [_UserProvided, _InTree]  # tried first, in numba's order
