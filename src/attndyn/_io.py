"""Reading token files and writing results atomically."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ._errors import InputError

__all__ = [
    "check_writable",
    "load_array",
    "check_input_file",
    "read_input_bytes",
    "atomic_write",
    "write_json",
    "write_text",
    "write_bytes",
    "file_sha256",
]


# Token files larger than this are refused before they are parsed (a .csv or .json parses to several
# times its size in memory); /dev/zero or /dev/urandom under a token file's name is refused after reading this.
MAX_BYTES = 64 * 2**20


def load_array(path: str | os.PathLike, name: str = "TOKENS", *, max_bytes: int = MAX_BYTES) -> np.ndarray:
    """Load a numeric array from ``.npy``, ``.csv`` (one row a token, no header needed) or ``.json``.

    A JSON file holds a nested list (n x d or B x n x d) or an object with a ``"tokens"`` key.
    ``.npy`` files are read with ``allow_pickle=False``. At most ``max_bytes`` bytes are read
    (64 MiB by default): a larger file, or an endless one such as ``/dev/zero``, is refused.
    Errors name the file and the problem.
    """
    p = Path(path)
    check_input_file(p, f"{name} file", folder_hint="give a .npy, .csv or .json file")
    suffix = p.suffix.lower()
    if suffix not in (".npy", ".json", ".csv"):
        raise InputError(f"{name} file {str(p)!r} has an unknown type {suffix!r}; use .npy, .csv or .json")
    try:
        data = _read_bounded(p, f"{name} file", max_bytes)
        arr = _parse(data, suffix, p, name)
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


def check_input_file(p: Path, name: str, *, folder_hint: str = "give a file") -> None:
    """Refuse, naming the input as ``name`` (e.g. ``"TOKENS file"``, ``"--file"``) and the path, what cannot be read as an input file without waiting or reading
    forever: a missing path (a link to a closed standard input said as such), a folder, a pipe or socket (a
    reader waits for a writer that may never come), a terminal. Regular files pass; so do other character
    devices (/dev/zero), which :func:`read_input_bytes` reads up to its bound."""
    try:
        st = p.stat()
    except FileNotFoundError:
        if p.is_symlink():
            raise InputError(
                f"{name} {str(p)!r} is a link to {os.readlink(p)!r}, which does not exist (a closed standard input, "
                "or a broken link); save the data to a regular file and give its path"
            ) from None
        raise InputError(f"{name} {str(p)!r} does not exist") from None
    except OSError as exc:
        raise InputError(f"{name} {str(p)!r} cannot be read ({exc.strerror}); give a readable file") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{name} {str(p)!r} is a folder; {folder_hint}")
    if stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        raise InputError(
            f"{name} {str(p)!r} is a pipe or socket, not a regular file: reading it can wait forever for a writer; "
            "save the data to a regular file and give its path"
        )
    if stat.S_ISCHR(st.st_mode):
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)
        try:
            tty = os.isatty(fd)
        finally:
            os.close(fd)
        if tty:
            raise InputError(
                f"{name} {str(p)!r} is a terminal, not a file: reading it waits for typing; "
                "save the data to a regular file and give its path"
            )


def read_input_bytes(path: str | os.PathLike, name: str, max_bytes: int) -> bytes:
    """The bytes of an input file (:func:`check_input_file` first, naming it ``name``), or an InputError when it
    holds more than ``max_bytes``: a 6 GB sparse file under a model's or a review file's name is refused, not
    read whole."""
    p = Path(path)
    check_input_file(p, name)
    return _read_bounded(p, name, max_bytes, "")


def _read_bounded(
    p: Path, name: str, max_bytes: int, hint: str = ", or raise max_bytes of attndyn._io.load_array"
) -> bytes:
    """The file's bytes, or an :class:`InputError` when it holds more than ``max_bytes``."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 1:
        raise InputError(f"max_bytes must be a positive number of bytes, got {max_bytes!r}")
    too_big = InputError(
        f"{name} {str(p)!r} is larger than max_bytes = {max_bytes} bytes ({max_bytes / 2**20:.3g} MiB); "
        f"give a smaller regular file{hint}"
    )
    if p.is_file() and p.stat().st_size > max_bytes:
        raise too_big
    with p.open("rb") as f:  # devices and pipes report no size: read one byte past the limit
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise too_big
    return data


def _parse(data: bytes, suffix: str, p: Path, name: str) -> np.ndarray:
    """The array held by a file's bytes (``suffix``: .npy, .json or .csv)."""
    if suffix == ".npy":
        if not data:  # np.load raises EOFError, which the command line would take for Ctrl-C
            raise InputError(f"{name} file {str(p)!r} is empty (0 bytes); give a .npy file written by numpy.save")
        if not data.startswith(b"\x93NUMPY"):
            raise InputError(
                f"{name} file {str(p)!r} is not a .npy file (it does not start with numpy's magic bytes); "
                "write it with numpy.save, or give the numbers as .csv or .json"
            )
        try:
            return np.load(io.BytesIO(data), allow_pickle=False)
        except EOFError:
            raise InputError(f"{name} file {str(p)!r} is cut short; write it again with numpy.save") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name} file {str(p)!r} is not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r}); "
            "save it as UTF-8 (plain ASCII numbers are), or as .npy"
        ) from None
    if suffix == ".json":
        obj = json.loads(text)
        if isinstance(obj, dict):
            if "tokens" not in obj:
                raise InputError(f"{name} file {str(p)!r} is a JSON object without a 'tokens' key")
            obj = obj["tokens"]
        where = _not_a_number(obj) if ("true" in text or "false" in text or "null" in text) else None
        if where is not None:
            raise InputError(
                f"{name} file {str(p)!r} holds {where[1]} at {where[0] or 'the top'} where a number belongs; "
                "give numbers only (a missing value is not a coordinate)"
            )
        try:
            return np.array(obj, dtype=np.float64)
        except ValueError as exc:
            if "inhomogeneous" not in str(exc):
                raise
            raise InputError(
                f"{name} file {str(p)!r} is ragged: its lists have different lengths (e.g. tokens of different "
                "dimensions); give an (n, d) or (B, n, d) array"
            ) from None
    lines = [
        (k, r) for k, r in enumerate(csv.reader(io.StringIO(text, newline="")), 1) if r and any(c.strip() for c in r)
    ]
    if lines and not _numeric(lines[0][1]):
        lines = lines[1:]  # a header line
    if lines:
        width = len(lines[0][1])
        ragged = next(((k, r) for k, r in lines if len(r) != width), None)
        if ragged is not None:
            raise InputError(
                f"{name} file {str(p)!r}: line {ragged[0]} has {len(ragged[1])} value{'s' * (len(ragged[1]) != 1)} "
                f"where line {lines[0][0]} has {width}; give every token (one a line) the same number of coordinates"
            )
    return np.array([[float(c) for c in r] for k, r in lines], dtype=np.float64)


def _not_a_number(obj: object, at: str = "") -> tuple[str, str] | None:
    """The first JSON true, false or null in the nested lists ``obj`` (numpy would read them as 1, 0 and NaN):
    where it is (``[i][j]``) and what it is; None when there is none."""
    if obj is None or isinstance(obj, bool):
        return at, json.dumps(obj)
    if isinstance(obj, list):
        for i, x in enumerate(obj):
            found = _not_a_number(x, f"{at}[{i}]")
            if found is not None:
                return found
    return None


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


def check_writable(out: str | os.PathLike, name: str) -> Path:
    """Create the folder ``out`` (with its parents) and write and remove a file in it, before any work: an
    :class:`InputError` naming ``name`` (a parameter or a flag) when it cannot be written; returns it as a Path."""
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=out, prefix=".write-test-")
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise InputError(
            f"{name} {str(out)!r} is not writable ({exc.strerror or exc}); choose a folder you can write to"
        ) from None
    return out


def check_output_file(path: str | os.PathLike, name: str, *, inputs: tuple[str | os.PathLike | None, ...] = ()) -> Path:
    """Refuse, before any work, an output file name that cannot be written (an :class:`InputError` naming
    ``name``, a flag): a folder, a name under a file, a folder that cannot be written to, or one of the command's
    ``inputs``, which writing would overwrite. Creates the file's folder, as writing it would; returns the Path."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{name} {str(p)!r} is a folder; give a file name")
    for q in inputs:
        if q is not None and p.exists() and Path(q).exists() and os.path.samefile(p, q):
            raise InputError(f"{name} {str(p)!r} is an input of this command ({str(q)!r}); give another name")
    above = next((a for a in p.parents if a.exists()), None)  # the nearest existing path above the name
    if above is not None and not above.is_dir():
        raise InputError(f"{name} {str(p)!r} is not a file name in a folder ({str(above)!r} is a file); choose another")
    check_writable(p.parent, f"the folder of {name}")
    return p


def write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write(path, lambda p: p.write_text(text, encoding="utf-8"))


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """``obj`` as strict JSON, atomically: a NaN or infinite number is written as null (Python's bare ``NaN`` is not
    JSON, and strict parsers refuse the whole file).

    >>> import json, tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> json.loads(write_json(f, {"a": [1.0, float("nan")], "b": float("inf")}).read_text())
    {'a': [1.0, None], 'b': None}
    """
    return write_text(path, json.dumps(finite_json(obj), indent=2, sort_keys=False, allow_nan=False) + "\n")


def finite_json(obj: Any) -> Any:
    """``obj`` with every float that is not finite (NaN, +-inf) replaced by None, through dicts, lists and tuples."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: finite_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite_json(v) for v in obj]
    return obj


def file_sha256(path: str | os.PathLike, *, chunk: int = 1 << 20) -> str:
    """Hex sha256 of a file's bytes, read in chunks (constant memory)."""
    h = hashlib.sha256()
    with Path(path).open("rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    return atomic_write(path, lambda p: p.write_bytes(data))
