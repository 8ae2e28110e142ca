"""A sweep's folder: ``spec.json`` (the resolved spec), ``rows/part-NNNNNN.parquet`` (batches of
rows, each written atomically) and ``.lock`` (the process running it).

Rows are only ever added. A cell may have several rows (a failed cell retried by a later run);
:func:`read_rows` keeps the last one written, so a reader sees exactly one row per cell.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from .._validation import InputError
from ..io import atomic_write, write_json
from .registry import RESERVED
from .spec import SweepSpec, spec_differences

__all__ = ["SweepStore", "read_rows", "read_spec"]


def _arrow_schema(spec: SweepSpec) -> Any:  # a pyarrow.Schema
    import pyarrow as pa  # type: ignore[import-untyped]

    types = {"bool": pa.bool_(), "int64": pa.int64(), "float64": pa.float64(), "string": pa.string()}
    exp = spec.exp
    cols = [("cell", "int64"), ("seed", "int64")] + [(k, exp.params[k].arrow_type) for k in spec.grid]
    cols += list(exp.outputs.items()) + [(k, RESERVED[k]) for k in ("status", "error", "attempts", "seconds")]
    return pa.schema([(name, types[t]) for name, t in cols])


def read_spec(out: str | os.PathLike) -> dict:
    p = Path(out) / "spec.json"
    if not p.is_file():
        raise InputError(f"{str(out)!r} is not a sweep folder (no spec.json); give the --out folder of `attndyn sweep`")
    return json.loads(p.read_text(encoding="utf-8"))


def read_rows(out: str | os.PathLike, *, all_rows: bool = False) -> Any:  # a pandas DataFrame
    """The rows of a sweep folder as a pandas DataFrame sorted by cell, one row per cell (the last
    written) unless ``all_rows``."""
    import pandas as pd  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    from .spec import parse_spec

    record = read_spec(out)
    schema = _arrow_schema(parse_spec(record))
    parts = sorted((Path(out) / "rows").glob("part-*.parquet"))
    if not parts:
        return schema.empty_table().to_pandas()
    frame = pd.concat([pq.read_table(p, schema=schema).to_pandas() for p in parts], ignore_index=True)
    if not all_rows:
        frame = frame.drop_duplicates("cell", keep="last")
    return frame.sort_values("cell", kind="stable").reset_index(drop=True)


class SweepStore:
    """Append-only Parquet storage of one sweep, refusing a spec other than the one it was started with."""

    def __init__(self, out: str | os.PathLike, spec: SweepSpec) -> None:
        self.out = Path(out)
        self.spec = spec
        self.schema = _arrow_schema(spec)
        self._locked = False

    def open(self) -> None:
        """Create the folder (or check that its spec.json is this spec) and take the lock."""
        if self.out.exists() and not self.out.is_dir():
            raise InputError(f"--out {str(self.out)!r} is a file; give a folder")
        spec_path = self.out / "spec.json"
        new = self.spec.record()
        if spec_path.is_file():
            old = json.loads(spec_path.read_text(encoding="utf-8"))
            diff = spec_differences(old, new)
            if diff:
                raise InputError(
                    f"{str(self.out)!r} holds a sweep of another spec ({'; '.join(diff)}); "
                    "use a new --out folder, or restore the spec to resume"
                )
        elif self.out.is_dir() and any(self.out.iterdir()):
            raise InputError(
                f"--out {str(self.out)!r} is a folder that is not empty and holds no spec.json; give a new folder"
            )
        else:
            write_json(spec_path, new)
        (self.out / "rows").mkdir(parents=True, exist_ok=True)
        self._lock()

    def _lock(self) -> None:
        lock = self.out / ".lock"
        me = {"host": socket.gethostname(), "pid": os.getpid()}
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                other = json.loads(lock.read_text())
            except (OSError, ValueError):
                other = {}
            if other.get("host") == me["host"] and not _alive(other.get("pid")):
                lock.unlink(missing_ok=True)  # left by a process that was killed
                return self._lock()
            raise InputError(
                f"{str(self.out)!r} is being written by process {other.get('pid')} on {other.get('host')}; "
                f"wait for it, or delete {str(lock)!r} if that process is gone"
            ) from None
        with os.fdopen(fd, "w") as f:
            json.dump(me, f)
        self._locked = True

    def close(self) -> None:
        if self._locked:
            (self.out / ".lock").unlink(missing_ok=True)
            self._locked = False

    def finished(self, *, retry_failed: bool = False) -> tuple[set[int], int]:
        """``(cells that need no run, how many of them failed)``; failed cells count as finished
        unless ``retry_failed``."""
        rows = read_rows(self.out)
        failed = rows["status"] != "ok"
        done = rows["cell"][~failed] if retry_failed else rows["cell"]
        return {int(c) for c in done}, int(failed.sum())

    def append(self, rows: list[dict[str, Any]]) -> Path | None:
        """Write ``rows`` as the next Parquet part, atomically (a reader sees all of it or none)."""
        if not rows:
            return None
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(rows, schema=self.schema)
        folder = self.out / "rows"
        existing = [int(p.stem.split("-")[1]) for p in folder.glob("part-*.parquet")]
        target = folder / f"part-{max(existing, default=-1) + 1:06d}.parquet"
        return atomic_write(target, lambda tmp: pq.write_table(table, tmp))


def _alive(pid: Any) -> bool:
    if not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
