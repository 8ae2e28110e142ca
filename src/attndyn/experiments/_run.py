"""Running cells of the registry: one cell's row, and a list of cells in this process or on a Dask cluster.

A cell is a pure function of its parameters and seed (:mod:`attndyn.experiments._registry`), so where it runs does not change its
row: ``attndyn reproduce`` runs its Monte Carlo claims through :func:`run_cells` (in this process by default, on
a ``dask.distributed`` client when given one) and ``attndyn sweep`` runs its chunks of cells through
:func:`cell_row`.

>>> rows = run_cells("good-triple", [(0, {"d": 2, "ensemble": "positive"}), (1, {"d": 3, "ensemble": "positive"})])
>>> [(r["seed"], r["status"], r["good"]) for r in rows]
[(0, 'ok', True), (1, 'ok', True)]
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable
from typing import Any

from .._validation import InputError
from ._registry import CellFailed, Experiment, get_experiment

__all__ = ["cell_row", "run_cells", "check_scheduler", "connect"]

# Schemes an address alone cannot connect with: what each needs instead.
_NOT_BY_ADDRESS = {
    "tls": "a tls:// scheduler needs certificates (a dask Security object) that an address cannot carry",
    "wss": "a wss:// scheduler needs certificates (a dask Security object) that an address cannot carry",
    "ucx": "a ucx:// scheduler needs the UCX transport (ucx-py), which attndyn does not set up",
}
_ADDRESS = re.compile(r"(?:(?:tcp|ws)://)?(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(\d{1,5})")


def cell_row(exp: Experiment, seed: int, params: dict[str, Any]) -> dict[str, Any]:
    """The outputs of one cell with ``status`` ("ok"; "failed": the cell raised :class:`CellFailed`, its
    computation failed; "error": it raised anything else), ``error`` (the exception's first line, None when ok)
    and ``seconds``. A cell that does not finish has None for every output."""
    t0 = time.perf_counter()
    try:
        out, status, error = exp(seed, params), "ok", None
    except Exception as exc:  # the cell's failure is data: recorded, never lost in a traceback
        out, status = dict.fromkeys(exp.outputs), "failed" if isinstance(exc, CellFailed) else "error"
        error = f"{type(exc).__name__}: {exc}".splitlines()[0][:500] or type(exc).__name__
    return {**out, "status": status, "error": error, "seconds": time.perf_counter() - t0}


def _run_chunk(name: str, cells: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    exp = get_experiment(name)
    return [{"seed": seed, **params, **cell_row(exp, seed, params)} for seed, params in cells]


def run_cells(
    name: str, cells: Iterable[tuple[int, dict[str, Any]]], *, client: Any = None, chunk: int = 16
) -> list[dict[str, Any]]:
    """Rows of the registered experiment ``name`` for each cell ``(seed, params)``, in the order given: the seed,
    every parameter (declared defaults filled in), the outputs, ``status``, ``error`` and ``seconds``
    (:func:`cell_row`). Parameters are checked before any cell runs. ``client``: a ``dask.distributed.Client``
    that runs chunks of ``chunk`` cells on its workers; None runs them here, one after another. Both give the
    same rows when torch and BLAS run on one thread here, as on dask's workers (``attndyn reproduce`` does)."""
    exp = get_experiment(name)
    checked = [(int(seed), exp.arguments(dict(params), f"cells[{i}]")) for i, (seed, params) in enumerate(cells)]
    if client is None:
        return _run_chunk(name, checked)
    parts = [checked[a : a + chunk] for a in range(0, len(checked), chunk)]
    futures = [client.submit(_run_chunk, name, part, pure=False) for part in parts]
    try:
        return [row for fut in futures for row in fut.result()]
    except Exception as exc:  # a cell's own error is in its row (cell_row): this is the cluster's
        if not _cluster_lost(exc, client):
            raise
        raise InputError(
            f"the dask scheduler stopped answering during the run ({type(exc).__name__}: "
            f"{str(exc).splitlines()[0][:160] if str(exc) else 'no message'}); the run is incomplete, not a "
            "measurement: restart the scheduler and its workers and run again"
        ) from None


def _cluster_lost(exc: BaseException, client: Any) -> bool:
    """``exc``, raised by a future's ``result()``, says that the scheduler or its workers went away (a cancelled
    future, a closed connection, a killed worker, a client that is no longer running), not that a cell failed."""
    import concurrent.futures

    lost = {"FutureCancelledError", "CancelledError", "CommClosedError", "KilledWorker", "StreamClosedError"}
    return (
        isinstance(exc, (OSError, TimeoutError, concurrent.futures.CancelledError))
        or type(exc).__name__ in lost
        or getattr(client, "status", "running") != "running"
    )


def check_scheduler(scheduler: Any) -> str:
    """``scheduler`` if it is the address of a dask scheduler that an address alone reaches
    (``tcp://10.0.0.5:8786`` or ws://, a port 1-65535; inproc:// of a scheduler in this very process), else an
    :class:`InputError` with an example: inproc:// of another process (the command line's case), tls://, wss://
    and ucx:// are refused with what each needs (a ``client=`` connected by the caller)."""
    scheme = scheduler.split("://", 1)[0].lower() if isinstance(scheduler, str) and "://" in scheduler else None
    if scheme == "inproc":  # inproc://HOST/PID/N: a scheduler of LocalCluster(processes=False) in process PID
        m = re.fullmatch(r"inproc://[^/]+/(\d+)/\d+", scheduler)
        if m is None or int(m[1]) != os.getpid():
            raise InputError(
                f"scheduler = {scheduler!r}: an inproc:// address names a scheduler inside one process (a "
                "LocalCluster(processes=False) of that process), not one this run can reach; give a tcp:// address "
                "such as tcp://10.0.0.5:8786"
            )
        return scheduler
    if scheme in _NOT_BY_ADDRESS:
        raise InputError(
            f"scheduler = {scheduler!r}: {_NOT_BY_ADDRESS[scheme]}; give a tcp:// address such as "
            "tcp://10.0.0.5:8786, or connect a dask.distributed.Client yourself and pass client="
        )
    m = _ADDRESS.fullmatch(scheduler) if isinstance(scheduler, str) else None
    if m is None or not 1 <= int(m.group(2)) <= 65535:
        raise InputError(
            f"scheduler = {scheduler!r} is not the address of a dask scheduler; give one such as "
            "tcp://10.0.0.5:8786 (a protocol tcp or ws, a host and a port 1-65535)"
        )
    return scheduler


def connect(scheduler: str) -> Any:
    """A ``dask.distributed.Client`` of the scheduler at ``scheduler``; an :class:`InputError` if the address is
    malformed, the scheduler cannot be reached, or dask.distributed is not installed (the sweep extra)."""
    check_scheduler(scheduler)
    try:
        from distributed import Client
    except ImportError:
        raise InputError(
            'running cells on a dask scheduler needs dask.distributed: pip install -e ".[sweep]"'
        ) from None
    try:
        return Client(scheduler, timeout="10s")
    except (OSError, TimeoutError) as exc:
        first = str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__
        raise InputError(
            f"could not reach the dask scheduler at scheduler = {scheduler!r} ({first}); start it "
            "(dask scheduler) or check the address"
        ) from None
