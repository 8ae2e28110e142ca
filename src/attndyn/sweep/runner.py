"""Running a sweep: cells in chunks on dask.distributed (or in this process), rows to Parquet.

The engine is dask's: a :class:`distributed.LocalCluster` with ``workers`` processes, or an
existing cluster by its scheduler address. Tasks are chunks of cells; a chunk on a worker that
dies is rerun by the scheduler elsewhere, and as cells are pure functions of (parameters, seed)
the rows do not depend on where or how often they ran. At most a few chunks per worker are in
flight, so a sweep of millions of cells needs no more memory than one of thousands.

A cell that raises is recorded with its error and retried once; a chunk lost twice to dead
workers is recorded the same way. Rows are buffered and written in batches (every ``batch``
rows and at least every ``flush_seconds``); a run that is killed loses at most the unwritten
buffer, which the next run recomputes.
"""

from __future__ import annotations

import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._validation import InputError, check_int
from ..progress import progress_bar
from .registry import get_experiment
from .spec import SweepSpec, load_spec
from .store import SweepStore

__all__ = ["run_sweep", "SweepRun", "run_cells"]


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


def run_cells(experiment: str, cells: list[tuple[int, int, dict, dict]], attempt: int) -> list[dict]:
    """Run cells ``(index, seed, point, params)`` of ``experiment`` one after another; a cell that
    raises gives a row with ``status = "error"`` and the exception as ``error``. (The task function.)"""
    exp = get_experiment(experiment)
    rows = []
    for index, seed, point, params in cells:
        t0 = time.perf_counter()
        try:
            out, status, error = exp(seed, params), "ok", None
        except Exception as exc:  # the cell's failure is data: recorded, retried once
            out, status = dict.fromkeys(exp.outputs), "error"
            error = f"{type(exc).__name__}: {exc}".splitlines()[0][:500] or type(exc).__name__
        rows.append(
            {
                "cell": index,
                "seed": seed,
                **point,
                **out,
                "status": status,
                "error": error,
                "attempts": attempt,
                "seconds": time.perf_counter() - t0,
            }
        )
    return rows


class _Serial:
    """Runs each chunk in this process when it is submitted (``workers=0``): the plain loop."""

    def __init__(self) -> None:
        import torch
        from threadpoolctl import threadpool_limits

        self._limits = threadpool_limits(1)  # as dask's workers do (OMP/BLAS threads = 1): same rows, bit for bit
        self._torch = torch.get_num_threads()
        torch.set_num_threads(1)
        self._done: deque = deque()

    def submit(self, experiment: str, chunk: list, attempt: int) -> None:
        self._done.append((chunk, attempt, run_cells(experiment, chunk, attempt)))

    def next_done(self) -> tuple[list, int, Any]:
        return self._done.popleft()

    def close(self) -> None:
        import torch

        torch.set_num_threads(self._torch)
        self._limits.restore_original_limits()


class _Dask:
    """Submits chunks to a dask.distributed client and hands back completed ones."""

    def __init__(self, client: Any) -> None:
        from distributed import as_completed

        self.client = client
        self._meta: dict[str, tuple[list, int]] = {}
        self._ac = as_completed()

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
        pass


def _rows_for_lost_chunk(experiment: str, chunk: list, attempt: int, exc: BaseException) -> list[dict]:
    exp = get_experiment(experiment)
    error = f"{type(exc).__name__}: {exc}".splitlines()[0][:500]
    return [
        {
            "cell": i,
            "seed": s,
            **point,
            **dict.fromkeys(exp.outputs),
            "status": "error",
            "error": error,
            "attempts": attempt,
            "seconds": None,
        }
        for i, s, point, _ in chunk
    ]


def run_sweep(
    spec: SweepSpec | str | os.PathLike,
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
        spec: a :class:`SweepSpec` or the path of a TOML spec.
        out: the sweep folder (created; a folder of another spec is refused, naming the difference).
        workers: worker processes of a new LocalCluster (one thread each); ``0`` runs the cells in
            this process without dask (a plain loop).
        scheduler: address of an existing dask scheduler (``tcp://host:8786``) instead of a LocalCluster.
        client: an existing :class:`distributed.Client` (tests, notebooks) instead of either.
        max_cells: run at most this many of the cells left (in sweep order).
        chunk: cells per dask task. batch: rows per Parquet file. flush_seconds: write at least this often.
        retry_failed: also rerun cells recorded as failed by earlier runs.
        progress: show a progress bar (cells done and left, rate) on standard error.
        log: where to say what is left (default: standard error); on_chunk: called with the number
            of cells finished so far in this call after each chunk.
    """
    t_start = time.perf_counter()
    if not isinstance(spec, SweepSpec):
        spec = load_spec(spec)
    chunk, batch, max_cells, workers = _check_options(chunk, batch, max_cells, workers, scheduler, client)
    say = log or (lambda msg: print(msg, file=sys.stderr))
    store = SweepStore(out, spec)
    store.open()
    try:
        finished, failed_before = store.finished(retry_failed=retry_failed)
        left_all = [i for i in range(spec.n_cells) if i not in finished]
        todo = left_all if max_cells is None else left_all[:max_cells]
        say(_plan_line(spec, len(finished), failed_before, len(left_all), len(todo)))
        ran = failed = 0
        if todo:
            ran, failed = _execute(
                spec,
                store,
                todo,
                workers=workers,
                scheduler=scheduler,
                client=client,
                chunk=chunk,
                batch=batch,
                flush_seconds=flush_seconds,
                progress=progress,
                done_before=len(finished),
                on_chunk=on_chunk,
            )
        left = len(left_all) - ran
        seconds = time.perf_counter() - t_start
        say(
            f"sweep {spec.experiment}: ran {ran} cells in {seconds:.1f} s ({ran / max(seconds, 1e-9):.1f} cells/s)"
            + (f", {failed} failed" if failed else "")
            + f"; {left} left; rows in {store.out / 'rows'}"
        )
        return SweepRun(spec.n_cells, len(finished), ran, failed, left, seconds, store.out)
    finally:
        store.close()


def _check_options(
    chunk: Any, batch: Any, max_cells: Any, workers: Any, scheduler: str | None, client: Any
) -> tuple[int, int, int | None, int | None]:
    """Check :func:`run_sweep`'s sizes (chunk, batch >= 1; max_cells >= 0 or None; workers >= 0 unless a
    scheduler or client is given) and that at most one of scheduler and client is given."""
    chunk = check_int(chunk, "chunk", minimum=1)
    batch = check_int(batch, "batch", minimum=1)
    if max_cells is not None:
        max_cells = check_int(max_cells, "max_cells", minimum=0)
    if scheduler is not None and client is not None:
        raise InputError("give scheduler=ADDRESS or client=CLIENT, not both")
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


def _chunks(spec: SweepSpec, todo: list[int], size: int) -> Iterator[list]:
    for a in range(0, len(todo), size):
        yield [(c.index, c.seed, c.point, spec.params(c.point)) for c in spec.cells(todo[a : a + size])]


def _execute(
    spec: SweepSpec,
    store: SweepStore,
    todo: list[int],
    *,
    workers: int | None,
    scheduler: str | None,
    client: Any,
    chunk: int,
    batch: int,
    flush_seconds: float,
    progress: bool,
    done_before: int,
    on_chunk: Callable[[int], None] | None,
) -> tuple[int, int]:
    ex, slots, own_client, cluster = _open_executor(client, scheduler, workers)
    source = _chunks(spec, todo, chunk)
    buffer: list[dict] = []
    ran = failed = inflight = 0
    last_flush = time.monotonic()
    try:
        with progress_bar(
            done_before + len(todo), f"{spec.experiment}", enabled=progress, completed=done_before, unit="cells"
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
                ran += len(keep)
                failed += sum(r["status"] != "ok" for r in keep)
                advance(len(keep))
                if on_chunk is not None:
                    on_chunk(ran)
                if len(buffer) >= batch or time.monotonic() - last_flush >= flush_seconds:
                    store.append(buffer)
                    buffer, last_flush = [], time.monotonic()
    finally:
        try:
            store.append(buffer)  # what finished is kept, also on Ctrl-C or an error
        finally:
            _close_executor(ex, own_client, cluster)
    return ran, failed


def _open_executor(client: Any, scheduler: str | None, workers: int | None) -> tuple[Any, int, Any, Any]:
    """The executor of :func:`_execute` and how many chunks it may have in flight: this process (``workers=0``,
    one at a time), or dask (the given client, a new client of ``scheduler``, or a new LocalCluster of
    ``workers`` processes), three chunks per worker thread. Also returns the client and cluster opened here
    (None where the caller gave them), which :func:`_close_executor` closes."""
    own_client = cluster = None
    if client is None and scheduler is None and workers == 0:
        return _Serial(), 1, None, None
    if client is None:
        from distributed import Client, LocalCluster

        if scheduler is not None:
            own_client = client = Client(scheduler)
        else:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None)
            own_client = client = Client(cluster)
    n_threads = sum(client.nthreads().values()) or 1
    slots = 3 * n_threads  # chunks in flight: enough to keep every worker busy, few enough to bound memory
    return _Dask(client), slots, own_client, cluster


def _close_executor(ex: Any, own_client: Any, cluster: Any) -> None:
    """Close the executor, then the client and the cluster that :func:`_open_executor` opened."""
    ex.close()
    if own_client is not None:
        own_client.close()
    if cluster is not None:
        cluster.close()


def _settle(ex: Any, experiment: str, cells: list, attempt: int, result: Any) -> tuple[list[dict] | None, int]:
    """The rows of a finished chunk to keep, and how many chunks were submitted again (see the module): a chunk
    lost with its workers runs once more (rows None), or is recorded as failed on its second loss; cells that
    raised on their first attempt run once more (their rows are not kept now); second attempts are kept."""
    if isinstance(result, BaseException):
        if attempt == 1:  # the whole chunk was lost with its workers: once more
            ex.submit(experiment, cells, 2)
            return None, 1
        result = _rows_for_lost_chunk(experiment, cells, attempt, result)
    retry = [c for c, r in zip(cells, result) if r["status"] != "ok" and attempt == 1]
    if retry:
        ex.submit(experiment, retry, 2)
    return [r for r in result if r["status"] == "ok" or attempt > 1], int(bool(retry))
