"""A sweep's folder: ``spec.json`` (the canonical spec), ``rows/part-NNNNNN-<sha256>.parquet`` (batches of
rows, each written atomically) and ``.lock``, the file whose ``flock`` a writing process holds (an empty file
left behind blocks nothing; :mod:`attndyn._lock`).

Rows are only ever added. A cell may have several rows (a failed cell retried by a later run);
:func:`read_rows` keeps the last one written, so a reader sees exactly one row per cell.

Nothing read back is trusted: a part's name carries the first 16 hex digits of the sha256 of its bytes
and its pages carry CRC checksums (both checked on every read), and every row must be the cell its number
says (seed, grid values and ``cell_id`` recomputed from the spec), with no cell finished twice. A part that
fails any of these is named in one line with the fix: delete it, and the next run recomputes its cells.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from .._errors import param
from .._io import file_sha256, write_json
from .._lock import FolderLock
from .._validation import InputError
from ..experiments._registry import RESERVED, STATUSES
from ._spec import SweepSpec, spec_differences, spec_from_record

__all__ = ["SweepStore", "read_rows", "read_spec", "read_folder_spec", "require_extra"]

_PART = re.compile(r"part-(\d{6,})-([0-9a-f]{16})\.parquet")
INSTALL = 'pip install -e ".[sweep]"'


def require_extra(*, dask: bool = False) -> None:
    """InputError naming the install command unless pyarrow and pandas (and dask.distributed) import."""
    names = ["pyarrow", "pyarrow.parquet", "pandas"] + (["distributed"] if dask else [])
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name.split(".")[0])
    if missing:
        raise InputError(f"sweeps need the sweep extra ({', '.join(dict.fromkeys(missing))} missing): {INSTALL}")


def _arrow_schema(spec: SweepSpec) -> Any:  # a pyarrow.Schema
    import pyarrow as pa  # type: ignore[import-untyped]

    types = {"bool": pa.bool_(), "int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}
    exp = spec.exp
    cols = [("cell", "int64"), ("cell_id", "string"), ("seed", "int64")]
    cols += [(k, exp.params[k].arrow_type) for k in spec.grid]
    cols += list(exp.outputs.items()) + [(k, RESERVED[k]) for k in ("status", "error", "attempts", "seconds")]
    return pa.schema([(name, types[t]) for name, t in cols])


def read_spec(out: str | os.PathLike) -> dict:
    """The record in OUT/spec.json (a dict); InputError if there is none or it is not JSON."""
    p = Path(out) / "spec.json"
    if not p.is_file():
        raise InputError(
            f"{str(out)!r} is not a sweep folder (no spec.json); give {param('sweep.folder', 'the out folder of a sweep')}"
        )
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"{str(p)!r} is damaged ({first}); restore it, or start a new folder") from None


def read_folder_spec(out: str | os.PathLike) -> SweepSpec:
    """The :class:`SweepSpec` of a sweep folder, checked (see :func:`spec_from_record`)."""
    return spec_from_record(read_spec(out), repr(str(Path(out) / "spec.json")))


def _parts(out: Path) -> list[Path]:
    """The parts of a folder in the order they were written; InputError for a file that is not one."""
    folder = out / "rows"
    if not folder.is_dir():
        return []
    found = []
    for p in folder.iterdir():
        if p.name.startswith("."):  # a temporary file of a write that did not finish: never a part
            continue
        m = _PART.fullmatch(p.name)
        if m is None:
            raise InputError(f"{str(p)!r} is not a part written by attndyn sweep; move it out of {str(folder)!r}")
        found.append((int(m.group(1)), p))
    return [p for _, p in sorted(found)]


def _damaged(part: Path, why: str) -> InputError:
    return InputError(f"{str(part)!r} is damaged ({why}); delete it and run the sweep again to recompute its cells")


def _read_part(part: Path, schema: Any, columns: list[str] | None) -> Any:  # a pandas DataFrame
    import pyarrow as pa
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    if file_sha256(part)[:16] != _PART.fullmatch(part.name).group(2):  # type: ignore[union-attr]
        raise _damaged(part, "its bytes do not match the checksum in its name: truncated, altered or replaced")
    try:
        table = pq.read_table(part, schema=schema, columns=columns, page_checksum_verification=True)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise _damaged(part, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__) from None
    return table.to_pandas()


def check_rows(spec: SweepSpec, frame: Any, part: Path) -> None:
    """InputError unless every row of ``frame`` (read from ``part``) is the cell its number says: number in
    range, seed and grid values of that cell, its ``cell_id`` (recomputed from the values), a known status."""
    cell = frame["cell"].to_numpy()
    outside = (cell < 0) | (cell >= spec.n_cells)
    if outside.any():
        raise _damaged(part, f"cell number {int(cell[outside][0])} is outside 0..{spec.n_cells - 1}")
    s, p = np.divmod(cell, spec.n_points)
    wrong = frame["seed"].to_numpy() != spec.first_seed + s
    digits = p.copy()
    for name, values in reversed(spec.grid.items()):
        digits, digit = np.divmod(digits, len(values))
        wrong |= frame[name].to_numpy() != np.asarray(values, dtype=object)[digit]
    keys: dict[int, str] = {}
    ids = [
        spec.cell_id(seed, {}, keys.get(q) or keys.setdefault(q, spec.point_key(spec.point(q))))
        for seed, q in zip(frame["seed"].tolist(), p.tolist())
    ]
    wrong |= frame["cell_id"].to_numpy() != np.asarray(ids, dtype=object)
    wrong |= ~frame["status"].isin(STATUSES).to_numpy()
    if wrong.any():
        c = int(cell[wrong][0])
        raise _damaged(part, f"its row of cell {c} is not cell {c} of this spec: {spec.cell(c)}")


def _check_duplicates(frame: Any, parts: list[Path]) -> None:
    """InputError if a cell has a row after an ``ok`` row (only failed cells are ever run again)."""
    last = ~frame["cell"].duplicated(keep="last").to_numpy()
    twice = (frame["status"] == "ok").to_numpy() & ~last
    if twice.any():
        c = int(frame["cell"].to_numpy()[twice][0])
        rows = frame[frame["cell"] == c]
        later = parts[int(rows["_part"].to_numpy()[-1])]
        raise _damaged(later, f"cell {c} is finished twice, here and in {parts[int(rows['_part'].to_numpy()[0])]}")


def read_rows(out: str | os.PathLike, *, all_rows: bool = False) -> Any:  # a pandas DataFrame
    """The rows of a sweep folder as a pandas DataFrame sorted by cell, one row per cell (the last
    written) unless ``all_rows``; every part checked (see the module)."""
    require_extra()
    import pandas as pd  # type: ignore[import-untyped]

    out = Path(out)
    spec = read_folder_spec(out)
    schema = _arrow_schema(spec)
    parts = _parts(out)
    if not parts:
        return schema.empty_table().to_pandas()
    frames = []
    for k, part in enumerate(parts):
        frame = _read_part(part, schema, None)
        check_rows(spec, frame, part)
        frames.append(frame.assign(_part=k))
    frame = pd.concat(frames, ignore_index=True)
    _check_duplicates(frame, parts)
    frame = frame.drop(columns="_part")
    if not all_rows:
        frame = frame.drop_duplicates("cell", keep="last")
    return frame.sort_values("cell", kind="stable").reset_index(drop=True)


def _busy(out: Path, who: str, exclusive: bool) -> str:
    return f"{str(out)!r} is being written by {who}; wait for it to finish, or stop it"


def _more_seeds(old: SweepSpec, new: SweepSpec) -> bool:
    """Whether ``new`` is ``old`` with more seeds and nothing else changed. Cells are numbered seed-major
    (:meth:`SweepSpec.cell`), so the cells of ``old`` keep their numbers and identities in ``new``: a folder's
    sweep may grow by seeds, and its spec.json is then rewritten."""
    return new.seeds > old.seeds and dataclasses.replace(old, seeds=new.seeds).record() == new.record()


class SweepStore:
    """Append-only Parquet storage of one sweep, refusing a spec other than the one it was started with (but
    for more seeds: :func:`_more_seeds`).

    :meth:`check` looks without writing; :meth:`open` takes the lock first, then checks again and writes
    ``spec.json`` (on a fresh folder), so that of two processes started at once on one folder one runs
    and the other is refused, and what ``spec.json`` says is what the rows are.
    """

    def __init__(self, out: str | os.PathLike, spec: SweepSpec) -> None:
        self.out = Path(out)
        self.spec = spec
        self.schema = _arrow_schema(spec)
        self._lock = FolderLock(self.out, file=".lock", busy=_busy)
        self._next = 0

    def check(self) -> None:
        """Refuse (InputError) a path that is a file, a folder of another spec, or a non-empty folder that is
        not a sweep's; reads only."""
        if self.out.exists() and not self.out.is_dir():
            raise InputError(f"{param('out', 'out')} {str(self.out)!r} is a file; give a folder")
        # the listing first, spec.json after it: a sweep opening the folder meanwhile writes spec.json before
        # anything else that is not "in the making", so a listing with other files and no spec.json after it
        # is a folder that is not a sweep's (checked the other way round, the race was real)
        others = self.out.is_dir() and any(not _in_the_making(p) for p in self.out.iterdir())
        if (self.out / "spec.json").is_file():
            old = read_folder_spec(self.out)
            diff = spec_differences(old.record(), self.spec.record())
            if diff and not _more_seeds(old, self.spec):
                fewer = "; a sweep's seeds may grow, not shrink" if _more_seeds(self.spec, old) else ""
                raise InputError(
                    f"{str(self.out)!r} holds a sweep of another spec ({'; '.join(diff)}){fewer}; "
                    f"use a new {param('out', 'out')} folder, or restore the spec to resume"
                )
        elif others:
            raise InputError(
                f"{param('out', 'out')} {str(self.out)!r} is a folder that is not empty and holds no spec.json; give a new folder"
            )

    def open(self) -> None:
        """Check, create the folder, take the lock, check again under it, write spec.json on a fresh folder.
        If this fails, what this call created is removed (never what another process wrote)."""
        self.check()
        missing = []
        p = self.out
        while not p.exists():
            missing.append(p)
            p = p.parent
        dirs: list[Path] = []  # folders this call made, outermost first
        made: list[Path] = []  # what it made under the lock
        try:
            for d in reversed(missing):
                try:
                    d.mkdir()
                    dirs.append(d)
                except FileExistsError:  # another process made it at the same moment: not ours to remove
                    pass
            self._lock.acquire()
            self.check()  # again: another process may have written the folder in between
            if not (self.out / "spec.json").is_file():
                made.append(write_json(self.out / "spec.json", self.spec.record()))
            if not (self.out / "rows").is_dir():
                (self.out / "rows").mkdir()
                made.append(self.out / "rows")
            for tmp in (self.out / "rows").glob(".part-*.tmp"):  # left by a run killed while writing a part
                tmp.unlink()
            parts = _parts(self.out)
            self._next = int(_PART.fullmatch(parts[-1].name).group(1)) + 1 if parts else 0  # type: ignore[union-attr]
            if _more_seeds(read_folder_spec(self.out), self.spec):  # last: nothing after it can fail
                write_json(self.out / "spec.json", self.spec.record())
        except BaseException:
            self._undo(dirs, made)
            raise

    def _undo(self, dirs: list[Path], made: list[Path]) -> None:
        """Remove what :meth:`open` made, newest first, and release the lock; a folder that another process
        has written in meanwhile stays."""
        if self._lock.held:
            for p in reversed(made):
                p.rmdir() if p.is_dir() else p.unlink(missing_ok=True)
            if self._lock.created:
                self._lock.path.unlink(missing_ok=True)
        self.close()
        for d in reversed(dirs):
            try:
                d.rmdir()
            except OSError:
                break

    def close(self) -> None:
        self._lock.release()

    def finished(self, *, retry_failed: bool = False) -> tuple[np.ndarray, int, int]:
        """``(cells that need no run, sorted; how many cells failed; how many cells have a row)``; failed
        cells need no run unless ``retry_failed``."""
        rows = read_rows(self.out)
        failed = (rows["status"] != "ok").to_numpy()
        cells = rows["cell"].to_numpy(dtype=np.int64)
        done = cells[~failed] if retry_failed else cells
        return np.sort(done), int(failed.sum()), len(cells)

    def append(self, rows: list[dict[str, Any]]) -> Path | None:
        """Write ``rows`` as the next part: to a temporary file, then renamed to a name carrying its sha256
        (a reader sees all of it or none, and can tell if its bytes change)."""
        if not rows:
            return None
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(rows, schema=self.schema)
        folder = self.out / "rows"
        tmp = folder / f".part-{self._next:06d}-{os.getpid()}.tmp"
        os.close(os.open(tmp, os.O_CREAT | os.O_TRUNC | os.O_WRONLY, 0o666))  # the usual permissions (umask)
        try:
            pq.write_table(table, tmp, write_page_checksum=True)
            target = folder / f"part-{self._next:06d}-{file_sha256(tmp)[:16]}.parquet"
            os.replace(tmp, target)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        self._next += 1
        return target


def _in_the_making(p: Path) -> bool:
    """The lock, or a file being written atomically (``.NAME.XXXX.tmp``): what a sweep that is just opening the
    folder leaves there before its spec.json appears."""
    return p.name == ".lock" or (p.name.startswith(".") and p.name.endswith(".tmp"))
