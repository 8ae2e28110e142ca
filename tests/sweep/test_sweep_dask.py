"""Sweeps on a real dask.distributed LocalCluster (2 worker processes): a worker killed mid-sweep
loses and duplicates nothing and the rows equal a serial run's bit for bit; an `attndyn sweep`
process killed mid-sweep resumes with nothing lost."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attndyn.sweep import parse_spec, read_rows, run_sweep

pytest.importorskip("distributed")

# dask's Server (scheduler, nannies: they live in this process) warns when creating its scratch folder takes
# more than 1 s, which happens on a loaded machine and says nothing about the sweep; warnings are errors here.
pytestmark = pytest.mark.filterwarnings("ignore:Creating scratch directories is taking a surprisingly long time")

SRC = Path(__file__).parents[2] / "src"


def same_rows(a, b) -> bool:
    """Equal bit for bit in every column but the timing."""
    cols = [c for c in a.columns if c != "seconds"]
    return list(a.columns) == list(b.columns) and a[cols].reset_index(drop=True).equals(b[cols].reset_index(drop=True))


def test_rows_on_the_cluster_equal_a_serial_run(client, tmp_path):
    spec = parse_spec(
        {
            "experiment": "theorem-1.1",
            "grid": {"n": [5, 9], "alpha": [0.5, 2]},
            "monte_carlo": {"seeds": 3},
            "fixed": {"d": 2},
        }
    )
    run = run_sweep(spec, tmp_path / "dask", client=client, chunk=2, log=lambda m: None)
    assert (run.ran, run.failed) == (12, 0)
    serial = run_sweep(spec, tmp_path / "serial", workers=0, log=lambda m: None)
    assert serial.ran == 12
    assert same_rows(read_rows(tmp_path / "dask"), read_rows(tmp_path / "serial"))
    assert read_rows(tmp_path / "dask")["holds"].all()


def test_a_worker_killed_mid_sweep_loses_and_duplicates_nothing(client, tmp_path):
    spec = parse_spec(
        {
            "experiment": "good-triple",
            "grid": {"d": [48, 96]},
            "monte_carlo": {"seeds": 120},
            "fixed": {"qk": "ginibre"},
        }
    )
    before = client.run(os.getpid)  # {address: pid}
    killed = {}

    def kill_one(done: int) -> None:
        if killed or done < 16:
            return
        busy = {w: len(k) for w, k in client.processing().items()}
        victim = max(busy, key=busy.get)
        killed[victim] = (before[victim], busy[victim])
        os.kill(before[victim], signal.SIGKILL)

    run = run_sweep(spec, tmp_path / "dask", client=client, chunk=4, batch=32, log=lambda m: None, on_chunk=kill_one)
    assert killed, "the sweep ended before a worker could be killed"
    ((pid, queued),) = killed.values()
    assert queued >= 1  # it held work when it died
    assert (run.ran, run.failed, run.left) == (240, 0, 0)
    rows = read_rows(tmp_path / "dask", all_rows=True)
    assert sorted(rows["cell"]) == list(range(240))  # none lost, none twice
    run_sweep(spec, tmp_path / "serial", workers=0, log=lambda m: None)
    assert same_rows(rows.sort_values("cell"), read_rows(tmp_path / "serial"))
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker
    assert pid not in client.run(os.getpid).values()


def test_a_killed_sweep_process_resumes_with_nothing_lost(tmp_path):
    spec_file = tmp_path / "g.toml"
    spec_file.write_text('experiment = "good-triple"\n[grid]\nd = [24, 48]\n[monte_carlo]\nseeds = 150\n')
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [
        sys.executable,
        "-c",
        "from attndyn.cli import main; main()",
        "sweep",
        str(spec_file),
        "--out",
        str(out),
        "--no-progress",
    ]
    # its own process group: killing the group ends the sweep and its dask worker processes at once
    proc = subprocess.Popen(
        cmd + ["--workers", "1", "--chunk", "2", "--batch", "6"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 120
        while (
            len(list((out / "rows").glob("part-*.parquet"))) < 2 and proc.poll() is None and time.monotonic() < deadline
        ):
            time.sleep(0.02)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()
    partial = read_rows(out, all_rows=True)
    assert 12 <= len(partial) < 300, "the sweep was not killed in the middle"
    assert (out / ".lock").exists()  # left behind by the killed process, taken over below
    done = subprocess.run(cmd + ["--workers", "0"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert f"300 cells, {len(partial)} finished, {300 - len(partial)} left" in done.stderr
    rows = read_rows(out, all_rows=True)
    assert sorted(rows["cell"]) == list(range(300))
    run_sweep(
        parse_spec({"experiment": "good-triple", "grid": {"d": [24, 48]}, "monte_carlo": {"seeds": 150}}),
        tmp_path / "serial",
        workers=0,
        log=lambda m: None,
    )
    assert same_rows(rows.sort_values("cell"), read_rows(tmp_path / "serial"))


def test_a_running_cluster_by_its_scheduler_address(client, tmp_path):
    spec = parse_spec({"experiment": "good-triple", "grid": {"d": [3]}, "monte_carlo": {"seeds": 10}})
    run = run_sweep(spec, tmp_path / "s", scheduler=client.scheduler.address, log=lambda m: None)
    assert run.ran == 10 and sorted(read_rows(tmp_path / "s")["cell"]) == list(range(10))
