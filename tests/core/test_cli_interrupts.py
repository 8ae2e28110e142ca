"""Ctrl-C and SIGTERM end any command with one line on standard error and exit status 130."""

import os
import signal
import time

import numpy as np
import pytest

import attndyn._hardmax as dynamics  # the commands import the engine when they run
from attndyn.cli import Interrupted, main


@pytest.fixture
def tokens(tmp_path):
    np.save(tmp_path / "z.npy", np.array([[1.0, 0.0], [0.0, 1.0], [0.2, 0.2]]))
    return str(tmp_path / "z.npy")


def test_ctrl_c_in_any_command_says_interrupted(tokens, monkeypatch, capsys):
    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(dynamics, "hardmax", stop)
    assert main(["hardmax", tokens]) == 130
    assert capsys.readouterr() == ("", "interrupted\n")


def test_sigterm_is_ctrl_c_and_the_handler_is_put_back(tokens, monkeypatch, capsys):
    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the signal arrives first
        raise AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr(dynamics, "hardmax", terminated)
    before = signal.getsignal(signal.SIGTERM)
    assert main(["hardmax", tokens]) == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_command_prints_its_own_line(tokens, monkeypatch, capsys):
    def stop(*args, **kwargs):
        raise Interrupted("interrupted after 3 of 7 cells; rerun the same command to resume")

    monkeypatch.setattr(dynamics, "hardmax", stop)
    assert main(["hardmax", tokens]) == 130
    assert capsys.readouterr().err == "interrupted after 3 of 7 cells; rerun the same command to resume\n"


def test_reproduce_says_no_report_was_written(tmp_path, monkeypatch, capsys):
    import attndyn.reproduce

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(attndyn.reproduce, "reproduce", stop)
    out = tmp_path / "r"
    assert main(["reproduce", "--quick", "--out", str(out)]) == 130
    assert capsys.readouterr().err == (
        f"interrupted before the report was written ({str(out)!r} may hold some figures); "
        "rerun the same command to run the sections again\n"
    )


def test_pretrained_summary_prints_plain_numbers(capsys):
    from attndyn.cli._pretrained import _summary

    record = {
        "model": "m",
        "layers": 1,
        "heads": 2,
        "width": 4,
        "n_tokens": 2,
        "tokens": ["[CLS]", "good"],
        "leaders": {"per_layer": [{"layer": 0, "words": ["[CLS]"], "leaders": [0]}]},
        "clusters": {"tol": 0.5, "clusters": [2], "cosine_mean": [0.5], "effective_rank": [1.5]},
        "spectra": None,
        "idealized": {
            "layer": 0,
            "head": 1,
            "start_depth": 0,
            "regime": "good triple",
            "statement": "Theorem 4.1",
            "holds": True,
            "measured": {"radius_ratio": np.float64(0.123456), "clusters": np.int64(3), "flat": np.bool_(False)},
        },
    }
    _summary(record)
    out = capsys.readouterr().out
    assert "np." not in out and "{" not in out
    assert out.splitlines()[-1].endswith("Theorem 4.1: holds (measured: radius ratio 0.1235, clusters 3, flat no)")


def test_ctrl_c_while_the_command_line_loads_is_one_line():
    """New-user pass: Ctrl-C in the first ~0.1 s printed a traceback: it came during the imports of the script's
    entry point (typer, click, rich), before attndyn.cli's handler. Here the import of typer waits for the signal;
    the child runs the line pip's ``attndyn`` script runs, for the entry point pyproject.toml names."""
    import subprocess
    import sys
    import tomllib
    from pathlib import Path

    import attndyn

    root = Path(attndyn.__file__).parents[2]
    module, function = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]["attndyn"].split(":")
    code = (
        "import sys, time\n"
        "class SlowTyper:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'typer':\n"
        "            print('loading', flush=True)\n"
        "            time.sleep(60)\n"
        "sys.meta_path.insert(0, SlowTyper())\n"
        f"from {module} import {function}\n"
        f"sys.exit({function}())\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root / "src"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen(
        [sys.executable, "-c", code, "--version"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "loading\n"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert (proc.returncode, err, out) == (130, "interrupted\n", "")


def test_the_script_entry_point_turns_a_late_or_early_ctrl_c_into_one_line(monkeypatch, capsys):
    """The entry point wraps attndyn.cli.main: a KeyboardInterrupt it lets through (before its own handler is
    installed, or after) ends with the same line and status."""
    import attndyn.cli
    from attndyn.__main__ import main as entry

    def interrupted(argv=None):
        raise KeyboardInterrupt

    monkeypatch.setattr(attndyn.cli, "main", interrupted)
    assert entry() == 130
    assert capsys.readouterr() == ("", "interrupted\n")
