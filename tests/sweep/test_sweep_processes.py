"""`attndyn sweep` as processes: two sweeps started at the same instant on a fresh folder (one runs, the other
is refused in one line), and Ctrl-C / SIGTERM (one line saying what was kept, exit 130, no dask tracebacks)."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attndyn.sweep import read_folder_spec, read_rows, run_sweep

pytestmark = pytest.mark.filterwarnings("ignore:Creating scratch directories is taking a surprisingly long time")

SRC = Path(__file__).parents[2] / "src"
ENV = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}

# Waits until every process of the trial is ready (imports done) and then starts the sweep at once.
BARRIER = """
import sys, time
from pathlib import Path
from attndyn.cli import main
ready, n = Path(sys.argv[1]), int(sys.argv[2])
(ready / str(__import__("os").getpid())).touch()
while len(list(ready.iterdir())) < n:
    time.sleep(0.0005)
sys.exit(main(sys.argv[3:]))
"""


def test_two_sweeps_started_at_once_in_threads_one_runs_the_other_is_refused(tmp_path):
    import threading

    from attndyn import InputError
    from attndyn.sweep import parse_spec

    for t in range(12):
        out, barrier, results = tmp_path / f"out{t}", threading.Barrier(2), {}

        def go(d: int, out: Path, barrier: threading.Barrier, results: dict) -> None:
            spec = parse_spec({"experiment": "good-triple", "grid": {"d": [d]}, "monte_carlo": {"seeds": 5}})
            barrier.wait()
            try:
                results[d] = run_sweep(spec, out, workers=0, log=lambda m: None).ran
            except InputError as exc:
                results[d] = str(exc)

        threads = [threading.Thread(target=go, args=(d, out, barrier, results)) for d in (2, 3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        (winner,) = [d for d, r in results.items() if r == 5]
        (refusal,) = [r for r in results.values() if r != 5]
        assert re.search(r"is being written by (process \d+|another process)|holds a sweep of another spec", refusal)
        assert read_folder_spec(out).grid["d"] == (winner,)
        assert list(read_rows(out)["d"]) == [winner] * 5


@pytest.mark.slow
def test_two_specs_started_at_once_on_a_fresh_folder_one_runs_the_other_is_refused(tmp_path):
    trials = 1
    procs = []
    for t in range(trials):
        ready = tmp_path / f"ready{t}"
        ready.mkdir()
        for d in (2, 3):
            spec = tmp_path / f"d{d}.toml"
            spec.write_text(f'experiment = "good-triple"\n[grid]\nd = [{d}]\n[monte_carlo]\nseeds = 30\n')
            argv = ["sweep", str(spec), "--out", str(tmp_path / f"out{t}"), "--workers", "0", "--no-progress"]
            procs.append(
                (t, subprocess.Popen([sys.executable, "-c", BARRIER, str(ready), "2", *argv], env=ENV, text=True,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            )  # fmt: skip
    results: dict[int, list] = {t: [] for t in range(trials)}
    for t, p in procs:
        out, err = p.communicate(timeout=240)
        results[t].append((p.returncode, err))
    for t, pair in results.items():
        assert sorted(code for code, _ in pair) == [0, 2], pair
        refused = next(err for code, err in pair if code == 2)
        assert refused.count("\n") == 1 and refused.startswith("error: ") and "Traceback" not in refused
        assert re.search(r"is being written by (process \d+|another process)|holds a sweep of another spec", refused)
        folder = tmp_path / f"out{t}"
        (d,) = read_folder_spec(folder).grid["d"]
        rows = read_rows(folder)  # checked against spec.json: every row is a cell of the spec it names
        assert len(rows) == 30 and (rows["d"] == d).all()


def _start(tmp_path: Path, workers: str, seeds: int = 4000) -> tuple[subprocess.Popen, Path]:
    spec = tmp_path / "g.toml"
    spec.write_text(f'experiment = "good-triple"\n[grid]\nd = [40]\n[monte_carlo]\nseeds = {seeds}\n')
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", "from attndyn.cli import main; main()", "sweep", str(spec), "--out", str(out)]
    cmd += ["--workers", workers, "--chunk", "2", "--batch", "4", "--no-progress"]
    proc = subprocess.Popen(
        cmd,
        env=ENV,
        start_new_session=True,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=_as_from_a_terminal,
    )
    deadline = time.monotonic() + 180
    while not list((out / "rows").glob("part-*.parquet")) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return proc, out


def _as_from_a_terminal() -> None:
    """Ctrl-C's default action in the child, as in a terminal (a shell running the suite in the background
    starts it with SIGINT ignored, and Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _check_interrupted(proc: subprocess.Popen, out: Path) -> None:
    try:
        _, err = proc.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    lines = err.splitlines()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and all(line.startswith("sweep good-triple: ") for line in lines[:-1]), err
    # the count, or (the rows unreadable at that moment: an interrupt inside a first import) no number, never -1
    m = re.fullmatch(
        r"interrupted: (?:(?P<n>\d+) cells|the rows written so far are) kept in (?P<out>.*); rerun the same command "
        "to resume",
        lines[-1],
    )
    assert m and Path(m["out"]) == out, lines[-1]
    rows = read_rows(out)
    assert 0 < len(rows) < 4000 and (m["n"] is None or len(rows) == int(m["n"]))
    again = run_sweep(read_folder_spec(out), out, workers=0, max_cells=2, log=lambda m: None)
    assert again.done_before == len(rows)


@pytest.mark.slow
def test_ctrl_c_in_the_terminal_stops_a_dask_sweep_in_one_line(tmp_path):
    pytest.importorskip("distributed")
    proc, out = _start(tmp_path, "1")
    time.sleep(0.5)
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal does: the sweep and its dask workers get it
    _check_interrupted(proc, out)


def test_sigterm_stops_a_sweep_in_one_line(tmp_path):
    proc, out = _start(tmp_path, "0")
    os.kill(proc.pid, signal.SIGTERM)
    _check_interrupted(proc, out)


def test_an_interrupt_whose_rows_cannot_be_counted_says_so_without_a_number(tmp_path):
    """A SIGTERM under load once printed "interrupted: -1 cells kept": the rows could not be read at that moment."""
    from attndyn.sweep._runner import SweepInterrupted, _kept

    assert _kept(tmp_path / "no-sweep-here") is None  # unreadable: no spec.json
    exc = SweepInterrupted(None, tmp_path)
    assert str(exc) == f"interrupted: the rows written so far are kept in {tmp_path}; rerun the same command to resume"
    assert str(SweepInterrupted(3, tmp_path)).startswith("interrupted: 3 cells kept in ")


def test_after_an_interrupt_a_failing_dask_close_does_not_hide_it():
    """Once in CI a LocalCluster took more than its 60 s to close after Ctrl-C, and its TimeoutError replaced the
    interrupt (exit 2, "timed out after 60 s"). After an interrupt (quiet) each close is tried and a failure let go;
    otherwise a failure is raised as before."""
    from attndyn.sweep._runner import _close_executor

    closed = []

    class Part:
        def __init__(self, name, fails):
            self.name, self.fails = name, fails

        def close(self):
            closed.append(self.name)
            if self.fails:
                raise TimeoutError("timed out after 60 s")

    _close_executor(Part("ex", False), Part("client", True), Part("cluster", True), quiet=True)
    assert closed == ["ex", "client", "cluster"]
    with pytest.raises(TimeoutError):
        _close_executor(Part("ex", False), Part("client", False), Part("cluster", True), quiet=False)
