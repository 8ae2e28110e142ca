"""Interrupted trainings say what they kept and resume bit for bit; a run in training is not read; a finished run
is left alone."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from attndyn.cli import main
from attndyn.sentiment._runfolder import RunLock

SRC = Path(__file__).resolve().parents[2] / "src"
TRAIN = ["sentiment", "train", "--min-freq", "1", "--no-progress", "--threads", "1", "--patience", "50"]


@pytest.fixture(scope="module")
def data(tmp_path_factory, make_corpus, write_csv):
    tmp = tmp_path_factory.mktemp("interrupts")
    return write_csv(tmp / "d.csv", *make_corpus(300))


def _start(argv):
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    code = "from attndyn.cli import main; main()"
    return subprocess.Popen(
        [sys.executable, "-c", code, *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_as_from_a_terminal,
    )


def _as_from_a_terminal() -> None:
    """Ctrl-C's default action in the child, as in a terminal (a shell running the suite in the background
    starts it with SIGINT ignored, and Python then installs no KeyboardInterrupt handler)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _checkpoint_epoch(run):
    from attndyn.sentiment._train import checkpoint_state

    state = checkpoint_state(run)
    return None if state is None else state["epoch"] + 1


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_training_says_its_epoch_and_resumes_bit_for_bit(data, tmp_path, signum, capsys):
    argv = TRAIN + ["--epochs", "60", "--data", str(data)]  # long enough that the signal lands mid-run, even under load
    run = tmp_path / "run"
    proc = _start(argv + ["--run", str(run)])
    try:
        deadline = time.monotonic() + 120
        while not (run / "checkpoint.safetensors").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read()  # still training after its first epoch
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    kept = _checkpoint_epoch(run)
    assert proc.returncode == 130, err
    assert 1 <= kept < 60 and not (run / "test.json").exists()
    assert err == f"interrupted after epoch {kept}; rerun the same command to resume\n"  # one line, no traceback
    capsys.readouterr()
    assert main(["sentiment", "predict", "--model", str(run), "a good film"]) == 2  # not final: said so, not "seal it"
    err = capsys.readouterr().err
    assert "holds a training that stopped before its end" in err and "rerun the same `attndyn sentiment train`" in err
    assert main(argv + ["--run", str(run)]) == 0  # resumed here, to the end
    straight = tmp_path / "straight"
    assert main(argv + ["--run", str(straight)]) == 0
    assert (run / "weights.safetensors").read_bytes() == (straight / "weights.safetensors").read_bytes()
    histories = [json.loads((r / "metrics.json").read_text())["history"] for r in (run, straight)]
    for rows in histories:
        for r in rows:
            r.pop("seconds")  # wall-clock time aside, the same history
    assert histories[0] == histories[1]
    test = [json.loads((r / "test.json").read_text()) for r in (run, straight)]
    assert [{k: v for k, v in t.items() if not k.endswith("seconds")} for t in test] == [
        {k: v for k, v in test[1].items() if not k.endswith("seconds")}
    ] * 2


def test_an_interrupt_before_the_first_epoch_keeps_nothing(data, tmp_path, monkeypatch, capsys):
    import attndyn.sentiment._estimator as estimator

    def stop(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(estimator, "train", stop)
    run = tmp_path / "fresh" / "run"
    assert main(TRAIN + ["--epochs", "2", "--data", str(data), "--run", str(run)]) == 130
    assert capsys.readouterr().err == (
        "interrupted before the first epoch ended; nothing was kept: rerun the same command to start again\n"
    )
    assert list(tmp_path.iterdir()) == []  # the folder it made is gone


def test_a_run_in_training_is_not_read_and_a_reader_holds_off_a_training(
    data, tmp_path, capsys, snapshot, locked_by_another_process
):
    run = tmp_path / "run"
    argv = TRAIN + ["--epochs", "1", "--data", str(data), "--run", str(run)]
    assert main(argv) == 0
    capsys.readouterr()
    with locked_by_another_process(run) as holder:
        before = snapshot(run)
        for cmd in (
            ["sentiment", "predict", "--model", str(run), "good film"],
            ["sentiment", "evaluate", str(run)],
            ["sentiment", "explain", "--model", str(run), "good film"],
        ):
            assert main(cmd) == 2, cmd
            out, err = capsys.readouterr()
            assert out == "" and err == (
                f"error: run folder {str(run)!r} is being trained by process {holder.pid} (it holds the run's lock), "
                "so its weights are not final; wait for the training to end, or stop it (rerunning it resumes), "
                "then run this again\n"
            )
        assert snapshot(run) == before  # no evaluation.json, stale or not
    with RunLock(run, shared=True):  # what predict, evaluate and explain hold while they read
        assert main(argv + ["--overwrite"]) == 2
        assert f"is in use by process {os.getpid()} (it is reading the run)" in capsys.readouterr().err
        assert main(["sentiment", "predict", "--model", str(run), "good film"]) == 0  # readers share it


def test_resuming_drops_the_evaluation_of_earlier_weights(data, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(TRAIN + ["--epochs", "1", "--data", str(data), "--run", str(run)]) == 0
    partial = tmp_path / "partial"
    shutil.copytree(run, partial)
    (partial / "test.json").unlink()  # as if interrupted before its test report
    assert main(["sentiment", "evaluate", str(partial), "--no-figures"]) == 0
    assert (partial / "evaluation.json").exists()
    assert main(TRAIN + ["--epochs", "1", "--data", str(data), "--run", str(partial)]) == 0
    assert not (partial / "evaluation.json").exists() and (partial / "test.json").exists()
