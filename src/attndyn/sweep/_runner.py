"""Running a sweep: cells in chunks on dask.distributed (or in this process), rows to Parquet.

The engine is dask's: a :class:`distributed.LocalCluster` with ``workers`` processes, or an
existing cluster by its scheduler address. Tasks are chunks of cells; a chunk on a worker that
dies is rerun by the scheduler elsewhere, and as cells are pure functions of (parameters, seed)
the rows do not depend on where or how often they ran. At most a few chunks per worker are in
flight, so a sweep of millions of cells needs no more memory than one of thousands.

A cell that raises is recorded with its error and retried once; a chunk lost twice to dead
workers is recorded the same way; a cell that reports a failed computation (:class:`CellFailed`) or whose
outputs do not match their declared types (None, NaN, infinite, another type: checked when the cell finishes, so
a batch always writes) is recorded with ``status = "failed"`` and its reason, and not retried (it would fail
again).
Cells to run are enumerated lazily from the numbers of those finished, so planning a sweep of 10^9
cells takes no more memory than one of ten. Rows are buffered and written in batches (every ``batch``
rows and at least every ``flush_seconds``); a run that is killed loses at most the unwritten
buffer, which the next run recomputes.
"""

from __future__ import annotations

import itertools
import logging
import os
import signal
import sys
import time
import warnings
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._progress import progress_bar
from .._validation import InputError, check_int, check_nonnegative
from ..experiments._registry import get_experiment
from ..experiments._run import cell_row, check_scheduler, connect
from ._spec import SweepSpec, load_spec, parse_spec
from ._store import SweepStore, read_rows, require_extra

__all__ = ["run_sweep", "SweepRun", "SweepInterrupted", "run_cells"]

#: The most cells per dask task (a task's cells and rows are held at once; more buys nothing).
MAX_CHUNK = 10_000


class SweepInterrupted(KeyboardInterrupt):
    """A sweep stopped by Ctrl-C or SIGTERM after writing what had finished: ``kept`` cells have rows in ``out``
    (None when they could not be counted then); running the same sweep again resumes."""

    def __init__(self, kept: int | None, out: Path) -> None:
        what = "the rows written so far are" if kept is None else f"{kept} cells"
        super().__init__(f"interrupted: {what} kept in {out}; rerun the same command to resume")
        self.kept, self.out = kept, out


@dataclass(frozen=True)
class SweepRun:
    """What one call of :func:`run_sweep` did.

    Attributes:
        total: cells in the spec. done_before: finished before this call (failed ones included).
        ran: cells this call finished. failed: cells of this call recorded as failed (after the retry).
        left: cells still to run. seconds: wall time of this call (cluster start included).
        out: the sweep folder.
    """

    total: int
    done_before: int
    ran: int
    failed: int
    left: int
    seconds: float
    out: Path

    @property
    def rate(self) -> float:
        """Cells per second of this call."""
        return self.ran / self.seconds if self.seconds > 0 else 0.0


def run_cells(experiment: str, cells: list[tuple[int, int, dict, dict, str]], attempt: int) -> list[dict]:
    """Run cells ``(index, seed, point, params, cell_id)`` of ``experiment`` one after another: each row is the
    cell's :func:`~attndyn.experiments._run.cell_row` (outputs, status, error, seconds) with its place in the
    sweep. (The task function.)"""
    exp = get_experiment(experiment)
    rows = []
    for index, seed, point, params, cell_id in cells:
        row = cell_row(exp, seed, params)
        rows.append(
            {
                "cell": index,
                "cell_id": cell_id,
                "seed": seed,
                **point,
                **{k: v for k, v in row.items() if k in exp.outputs},
                "status": row["status"],
                "error": row["error"],
                "attempts": attempt,
                "seconds": row["seconds"],
            }
        )
    return rows


class _Serial:
    """Runs each chunk in this process when it is submitted (``workers=0``): the plain loop."""

    def __init__(self) -> None:
        from .._threads import limit_threads  # deferred: it imports torch

        # one torch and one OMP/BLAS thread, as dask's workers have: the same rows, bit for bit; undone by close()
        self._limits = ExitStack()
        self._limits.enter_context(limit_threads(torch_threads=1, blas_threads=1))
        self._done: deque = deque()

    def submit(self, experiment: str, chunk: list, attempt: int) -> None:
        self._done.append((chunk, attempt, run_cells(experiment, chunk, attempt)))

    def next_done(self) -> tuple[list, int, Any]:
        return self._done.popleft()

    def close(self) -> None:
        self._limits.close()


class _Dask:
    """Submits chunks to a dask.distributed client and hands back completed ones."""

    def __init__(self, client: Any) -> None:
        from distributed import as_completed

        self.client = client
        self._meta: dict[str, tuple[list, int]] = {}
        self._ac = as_completed()
        self._sigint = _quiet_on_sigint() if _main_thread() else None  # restored by close()

    def submit(self, experiment: str, chunk: list, attempt: int) -> None:
        key = f"attndyn-sweep-{experiment}-{chunk[0][0]}-{len(chunk)}-a{attempt}-{os.getpid()}-{time.monotonic_ns()}"
        fut = self.client.submit(run_cells, experiment, chunk, attempt, key=key, pure=False)
        self._meta[fut.key] = (chunk, attempt)
        self._ac.add(fut)

    def next_done(self) -> tuple[list, int, Any]:
        fut = next(self._ac)
        chunk, attempt = self._meta.pop(fut.key)
        if fut.status == "finished":
            result = fut.result()
        else:  # the scheduler gave up on it (KilledWorker: its workers died), or it was cancelled
            exc = fut.exception() if fut.status == "error" else RuntimeError(f"task {fut.status}")
            result = exc
        fut.release()
        return chunk, attempt, result

    def close(self) -> None:
        if self._sigint is not None:
            signal.signal(signal.SIGINT, self._sigint)


def _rows_for_lost_chunk(experiment: str, chunk: list, attempt: int, exc: BaseException) -> list[dict]:
    exp = get_experiment(experiment)
    error = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
    return [
        {
            "cell": i,
            "cell_id": cell_id,
            "seed": s,
            **point,
            **dict.fromkeys(exp.outputs),
            "status": "error",
            "error": error,
            "attempts": attempt,
            "seconds": None,
        }
        for i, s, point, _, cell_id in chunk
    ]


def run_sweep(
    spec: SweepSpec | dict | str | os.PathLike,
    out: str | os.PathLike,
    *,
    workers: int | None = 2,
    scheduler: str | None = None,
    client: Any = None,
    max_cells: int | None = None,
    chunk: int = 8,
    batch: int = 1000,
    flush_seconds: float = 10.0,
    retry_failed: bool = False,
    progress: bool = False,
    log: Callable[[str], None] | None = None,
    on_chunk: Callable[[int], None] | None = None,
) -> SweepRun:
    """Run the cells of ``spec`` not yet finished in ``out``; returns a :class:`SweepRun`.

    Args:
        spec: a :class:`SweepSpec`, a dict as :func:`~attndyn.sweep.parse_spec` takes (the parsed TOML), or the
            path of a TOML spec.
        out: the sweep folder (created; a folder of another spec is refused, naming the difference).
        workers: worker processes of a new LocalCluster (one thread each), at most the cores of this
            machine (more are reduced to that, saying so); ``0`` runs the cells in this process without dask
            (a plain loop).
        scheduler: address of an existing dask scheduler (``tcp://host:8786``) instead of a LocalCluster;
            checked before anything is created, and reached before the folder is written.
        client: an existing :class:`distributed.Client` (tests, notebooks) instead of either.
        max_cells: run at most this many of the cells left (in sweep order).
        chunk: cells per dask task. batch: rows per Parquet file. flush_seconds: write at least this often
            (a finite number >= 0).
        retry_failed: also rerun cells recorded as failed by earlier runs.
        progress: show a progress bar (cells done and left, rate) on standard error.
        log: where to say what is left (default: standard error); on_chunk: called with the number
            of cells finished so far in this call after each chunk.

    Raises:
        InputError: a bad option or spec, a folder of another spec or in use, a damaged part (named),
            the sweep extra missing; nothing is created or changed then.
        SweepInterrupted: (a KeyboardInterrupt) on Ctrl-C or SIGTERM-as-KeyboardInterrupt, after the rows
            that finished were written; it says how many cells the folder keeps.
    """
    t_start = time.perf_counter()
    spec = _as_spec(spec)
    chunk, batch, max_cells, workers = _check_options(chunk, batch, max_cells, workers, scheduler, client)
    flush_seconds = check_nonnegative(flush_seconds, "flush_seconds")
    say = log or (lambda msg: print(msg, file=sys.stderr))
    store, workers, own_client = _open(spec, out, workers, scheduler, client, say)
    tally = _Tally()
    try:
        finished, failed_before, _ = store.finished(retry_failed=retry_failed)
        n_left = spec.n_cells - len(finished)
        n_todo = n_left if max_cells is None else min(n_left, max_cells)
        say(_plan_line(spec, len(finished), failed_before, n_left, n_todo))
        if n_todo:
            _execute(
                spec,
                store,
                itertools.islice(_left(spec.n_cells, finished), n_todo),
                n_todo,
                tally,
                workers=workers,
                client=client or own_client,
                own_client=own_client,
                chunk=chunk,
                batch=batch,
                flush_seconds=flush_seconds,
                progress=progress,
                done_before=len(finished),
                on_chunk=on_chunk,
            )
    except KeyboardInterrupt:
        store.close()
        raise SweepInterrupted(_kept(store.out), store.out) from None
    finally:
        store.close()
        if own_client is not None:
            own_client.close()  # (closed already when cells ran; closing again does nothing)
    seconds = time.perf_counter() - t_start
    say(
        f"sweep {spec.experiment}: ran {tally.ran} cells in {seconds:.1f} s ({tally.ran / max(seconds, 1e-9):.1f} cells/s)"
        + (f", {tally.failed} failed" if tally.failed else "")
        + f"; {n_left - tally.ran} left; rows in {store.out / 'rows'}"
    )
    return SweepRun(spec.n_cells, len(finished), tally.ran, tally.failed, n_left - tally.ran, seconds, store.out)


def _as_spec(spec: Any) -> SweepSpec:
    """``spec`` as a :class:`SweepSpec`: itself, parsed from a dict (:func:`parse_spec`) or read from a TOML path
    (:func:`load_spec`); anything else is an :class:`InputError` saying what to pass."""
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, dict):
        return parse_spec(spec)
    if isinstance(spec, (str, os.PathLike)):
        return load_spec(spec)
    shown = repr(spec) if len(repr(spec)) <= 40 else repr(spec)[:37] + "..."
    raise InputError(
        f"spec = {shown} ({type(spec).__name__}) is not a spec; give a SweepSpec, a dict such as "
        '{"experiment": "good-triple", "grid": {"d": [8]}, "monte_carlo": {"seeds": 10}}, or a TOML file\'s path'
    )


def _open(
    spec: SweepSpec, out: Any, workers: int | None, scheduler: str | None, client: Any, say: Callable[[str], None]
) -> tuple[SweepStore, int | None, Any]:
    """The store of ``out`` opened (locked, spec.json written), the workers to start (at most the cores), and
    a client of ``scheduler`` (None without one). Everything that can be refused is checked before the folder
    is created: the sweep extra, the folder, the scheduler (reached first)."""
    require_extra(dask=client is not None or scheduler is not None or workers != 0)
    store = SweepStore(out, spec)
    store.check()
    if client is None and scheduler is None and workers is not None and workers > (n_cores := cores()):
        say(f"workers = {workers} is more than the {n_cores} cores here; using {n_cores} (any number: give scheduler)")
        workers = n_cores
    own_client = connect(scheduler) if scheduler is not None else None
    try:
        store.open()
    except BaseException:
        if own_client is not None:
            own_client.close()
        raise
    return store, workers, own_client


@dataclass
class _Tally:
    """Cells finished (and failed among them) by this call so far."""

    ran: int = 0
    failed: int = 0


def _kept(out: Path) -> int | None:
    """Cells with a row in ``out`` (after an interruption; None if the rows cannot be read now: an interrupt that
    landed inside a library's first import of a module can leave it unusable in this process)."""
    try:
        return int(read_rows(out)["cell"].nunique())
    except Exception:  # the count is for a message; the folder is checked again on the next run
        return None


def cores() -> int:
    """CPU cores this process may use."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _left(n_cells: int, finished: Iterable[int]) -> Iterator[int]:
    """Cell numbers 0..n_cells-1 not in ``finished`` (sorted, unique), in order, lazily."""
    start = 0
    for done in finished:
        yield from range(start, int(done))
        start = int(done) + 1
    yield from range(start, n_cells)


def _check_options(
    chunk: Any, batch: Any, max_cells: Any, workers: Any, scheduler: Any, client: Any
) -> tuple[int, int, int | None, int | None]:
    """Check :func:`run_sweep`'s sizes (chunk, batch >= 1; max_cells >= 0 or None; workers >= 0 unless a
    scheduler or client is given), the scheduler's address, and that at most one of scheduler and client
    is given."""
    chunk = check_int(chunk, "chunk", minimum=1, maximum=MAX_CHUNK)
    batch = check_int(batch, "batch", minimum=1)
    if max_cells is not None:
        max_cells = check_int(max_cells, "max_cells", minimum=0)
    if scheduler is not None and client is not None:
        raise InputError("give scheduler=ADDRESS or client=CLIENT, not both")
    if scheduler is not None:
        check_scheduler(scheduler)
    if client is None and scheduler is None:
        workers = check_int(workers, "workers", minimum=0)
    return chunk, batch, max_cells, workers


def _plan_line(spec: SweepSpec, finished: int, failed_before: int, left: int, todo: int) -> str:
    """What a run of the sweep starts from: cells finished (failed among them), left, and to run now."""
    return (
        f"sweep {spec.experiment}: {spec.n_cells} cells, {finished} finished"
        + (f" ({failed_before} failed)" if failed_before else "")
        + f", {left} left"
        + (f"; running {todo}" if todo != left else "")
    )


def _chunks(spec: SweepSpec, todo: Iterator[int], size: int) -> Iterator[list]:
    """Tasks of ``size`` cells ``(index, seed, point, params, cell_id)``, built as they are submitted."""
    keys: dict[int, str] = {}  # canonical parameters of each grid point seen, for the cell ids
    while batch := list(itertools.islice(todo, size)):
        out = []
        for i in batch:
            c = spec.cell(i)
            p = i % spec.n_points
            key = keys.get(p) or keys.setdefault(p, spec.point_key(c.point))
            if len(keys) > 4096:
                keys.clear()
            out.append((c.index, c.seed, c.point, spec.params(c.point), spec.cell_id(c.seed, c.point, key)))
        yield out


def _execute(
    spec: SweepSpec,
    store: SweepStore,
    todo: Iterator[int],
    n_todo: int,
    tally: _Tally,
    *,
    workers: int | None,
    client: Any,
    own_client: Any,
    chunk: int,
    batch: int,
    flush_seconds: float,
    progress: bool,
    done_before: int,
    on_chunk: Callable[[int], None] | None,
) -> None:
    """Run the cells ``todo`` (``n_todo`` of them), counting them in ``tally``; rows written in batches, and
    what finished is written also on an interruption."""
    ex, slots, own_client, cluster = _open_executor(client, own_client, workers)
    source = _chunks(spec, todo, chunk)
    buffer: list[dict] = []
    inflight = 0
    last_flush = time.monotonic()
    interrupted = False
    try:
        with progress_bar(
            done_before + n_todo, f"{spec.experiment}", enabled=progress, completed=done_before, unit="cells"
        ) as advance:
            exhausted = False
            while True:
                while not exhausted and inflight < slots:
                    nxt = next(source, None)
                    if nxt is None:
                        exhausted = True
                        break
                    ex.submit(spec.experiment, nxt, 1)
                    inflight += 1
                if inflight == 0:
                    break
                cells, attempt, result = ex.next_done()
                keep, resubmitted = _settle(ex, spec.experiment, cells, attempt, result)
                inflight += resubmitted - 1
                if keep is None:  # the whole chunk runs again
                    continue
                buffer += keep
                tally.ran += len(keep)
                tally.failed += sum(r["status"] != "ok" for r in keep)
                advance(len(keep))
                if on_chunk is not None:
                    on_chunk(tally.ran)
                if len(buffer) >= batch or time.monotonic() - last_flush >= flush_seconds:
                    store.append(buffer)
                    buffer, last_flush = [], time.monotonic()
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        try:
            store.append(buffer)  # what finished is kept, also on Ctrl-C or an error
        finally:
            _close_executor(ex, own_client, cluster, quiet=interrupted)


def _open_executor(client: Any, own_client: Any, workers: int | None) -> tuple[Any, int, Any, Any]:
    """The executor of :func:`_execute` and how many chunks it may have in flight: this process (``workers=0``,
    one at a time), or dask (the given client, or a new LocalCluster of ``workers`` processes), three chunks
    per worker thread. Also returns the client and cluster to close (``own_client``, or those opened here)."""
    cluster = None
    if client is None and workers == 0:
        return _Serial(), 1, None, None
    if client is None:
        from distributed import Client, LocalCluster

        # the workers start with SIGINT ignored (Python keeps an inherited SIG_IGN): a Ctrl-C in the terminal,
        # which reaches the whole process group, stops this process, which then stops them without a traceback
        old = signal.signal(signal.SIGINT, signal.SIG_IGN) if _main_thread() else None
        try:
            with warnings.catch_warnings():
                # its diagnostics server listens on a free port (":0"), never on a default another cluster holds
                warnings.filterwarnings("ignore", message="Port .* is already in use", category=UserWarning)
                cluster = LocalCluster(
                    n_workers=workers,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=":0",
                    silence_logs=logging.ERROR,
                )
                own_client = client = Client(cluster)
        finally:
            if old is not None:
                signal.signal(signal.SIGINT, old)
    n_threads = sum(client.nthreads().values()) or 1
    slots = 3 * n_threads  # chunks in flight: enough to keep every worker busy, few enough to bound memory
    return _Dask(client), slots, own_client, cluster


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


_DASK_LOGGERS = ("distributed", "tornado", "tornado.application", "asyncio")


def _silence_dask() -> None:
    for name in _DASK_LOGGERS:
        logging.getLogger(name).setLevel(logging.CRITICAL)


def _quiet_on_sigint() -> Any:
    """While a dask sweep runs, Ctrl-C first silences dask's loggers, then interrupts: distributed's event loop
    can log a traceback of its own (a NameError in ``sync``'s cancel callback) as the interruption unwinds, before
    this process catches it. Returns the previous handler."""

    def handler(signum: int, frame: Any) -> None:
        _silence_dask()
        raise KeyboardInterrupt

    return signal.signal(signal.SIGINT, handler)


def _close_executor(ex: Any, own_client: Any, cluster: Any, *, quiet: bool = False) -> None:
    """Close the executor, then the client and the cluster opened for it; ``quiet`` (after an interruption):
    dask's own messages about the tasks it drops are not shown, and a close that fails or times out (a worker
    caught mid-task can keep a LocalCluster from closing within its 60 s) is let go: the rows are kept by then,
    and the interruption, not dask's cleanup, is what the user is told (exit 130; once seen in CI as "timed out
    after 60 s", exit 2)."""
    if quiet:
        _silence_dask()
    for close in (ex.close, getattr(own_client, "close", None), getattr(cluster, "close", None)):
        if close is None:
            continue
        try:
            close()
        except Exception:
            if not quiet:
                raise  # after an interrupt it is let go: the interrupt is the story


def _settle(ex: Any, experiment: str, cells: list, attempt: int, result: Any) -> tuple[list[dict] | None, int]:
    """The rows of a finished chunk to keep, and how many chunks were submitted again (see the module): a chunk
    lost with its workers runs once more (rows None), or is recorded as failed on its second loss; cells that
    raised on their first attempt run once more (their rows are not kept now); second attempts are kept, and so
    are cells that failed by their own account (status "failed": they would fail again)."""
    if isinstance(result, BaseException):
        if attempt == 1:  # the whole chunk was lost with its workers: once more
            ex.submit(experiment, cells, 2)
            return None, 1
        result = _rows_for_lost_chunk(experiment, cells, attempt, result)
    retry = [c for c, r in zip(cells, result) if r["status"] == "error" and attempt == 1]
    if retry:
        ex.submit(experiment, retry, 2)
    return [r for r in result if r["status"] != "error" or attempt > 1], int(bool(retry))
