"""Fuzz corpus of the core commands: every bad input gets one line on standard error, exit status 2,
no traceback, and nothing written or changed (the README's error contract)."""

import importlib
import json
import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attndyn.cli import main


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    np.save("t.npy", rng.standard_normal((8, 2)))
    np.save("t1.npy", rng.standard_normal((5, 1)))
    np.save("eye.npy", np.eye(2))
    np.save("eye3.npy", np.eye(3))
    np.save("nan.npy", np.array([[np.nan, 1.0], [0.0, 1.0]]))
    np.save("c.npy", np.ones((2, 2), dtype=complex))
    np.save("s.npy", np.array(["a", "b"]))
    np.save("empty.npy", np.zeros((0, 2)))
    np.save("r4.npy", np.zeros((1, 2, 3, 4)))
    Path("int.json").write_text("[[" + "9" * 400 + ", 1], [2, 3]]")
    Path("deep.json").write_text("[" * 100_000 + "]" * 100_000)
    Path("ragged.json").write_text("[[1, 2], [3]]")
    Path("bools.json").write_text("[[true, false], [1, 2]]")
    Path("gap.json").write_text('{"note": "a null here is fine", "tokens": [[1, null], [1, 2]]}')
    Path("ragged.csv").write_text("x,y\n1,2\n3\n4,5\n")
    Path("obj.json").write_text('{"x": [[1, 2]]}')
    Path("null.json").write_text("null")
    Path("bad.json").write_text("{not json")
    Path("latin1.csv").write_bytes(b"\xff1,2\n3,4\n")
    Path("str.csv").write_text("a,b\nc,d\n")
    Path("latin.csv").write_bytes("1,2\n3,\xe9\n".encode("latin-1"))
    Path("bin.npy").write_bytes(os.urandom(64))
    Path("t.txt").write_text("1 2\n")
    Path("folder").mkdir()
    Path("outfile").write_text("I am a file")
    Path("bad.toml").write_text('experiment = "nope"\n[grid]\nd = [2]\n[monte_carlo]\nseeds = 2\n')
    Path("badsyntax.toml").write_text("experiment = = 1\n")
    return tmp_path


HARDMAX = [
    ["hardmax", "missing.npy"],
    ["hardmax", "folder"],
    ["hardmax", "t.txt"],
    ["hardmax", "nan.npy"],
    ["hardmax", "c.npy"],
    ["hardmax", "s.npy"],
    ["hardmax", "empty.npy"],
    ["hardmax", "r4.npy"],
    ["hardmax", "int.json"],
    ["hardmax", "deep.json"],
    ["hardmax", "ragged.json"],
    ["hardmax", "obj.json"],
    ["hardmax", "null.json"],
    ["hardmax", "bad.json"],
    ["hardmax", "str.csv"],
    ["hardmax", "latin.csv"],
    ["hardmax", "bin.npy"],
    ["hardmax", "t.npy", "--alpha", "0"],
    ["hardmax", "t.npy", "--alpha", "nan"],
    ["hardmax", "t.npy", "--alpha", "abc"],
    ["hardmax", "t.npy", "--layers", "-1"],
    ["hardmax", "t.npy", "--layers", str(10**20)],
    ["hardmax", "t.npy", "--tol", "-1"],
    ["hardmax", "t.npy", "--matrix", "eye3.npy"],
    ["hardmax", "t.npy", "--matrix", "nan.npy"],
    ["hardmax", "t.npy", "--bogus"],
    ["hardmax"],
    ["hardmax", "latin1.csv"],
]

SOFTMAX = [
    ["softmax", "missing.npy"],
    ["softmax", "nan.npy"],
    ["softmax", "deep.json"],
    ["softmax", "t.npy", "--step", "0"],
    ["softmax", "t.npy", "--step", "1e-9"],
    ["softmax", "t.npy", "--time", "nan"],
    ["softmax", "t.npy", "--time", "-1"],
    ["softmax", "t.npy", "--time", "inf"],
    ["softmax", "t.npy", "--beta", "nan"],
    ["softmax", "t.npy", "--method", "bogus"],
    ["softmax", "t.npy", "--V", "eye3.npy"],
    ["softmax", "t.npy", "--Q", "missing.npy"],
    ["softmax", "t.npy", "--max-steps", "0"],
    ["softmax", "t1.npy", "--V", "eye.npy"],
    ["softmax", "t.npy", "--rescaled", "--method", "discrete", "--V", "eye.npy", "--step", "1e-300"],
]

DEMO = [
    ["demo", "--out", "outfile"],
    ["demo", "--out", "outfile/sub"],
    ["demo", "--seed", "-1"],
    ["demo", "--seed", "abc"],
    ["demo", "--seed", "1.5"],
    ["demo", "--out", "."],
    ["demo", "--bogus"],
    ["demo", "extra-argument"],
    ["demo", "--out"],
    ["demo", "--seed"],
    ["demo", "--out", ""],
    ["demo", "--json"],
]

REPRODUCE = [
    ["reproduce", "--only", "no-such-experiment", "--out", "r"],
    ["reproduce", "--only", "", "--out", "r"],
    ["reproduce", "--out", "outfile", "--quick"],
    ["reproduce", "--formats", "bmp", "--out", "r", "--quick"],
    ["reproduce", "--formats", ",", "--out", "r", "--quick"],
    ["reproduce", "--seed", "-1", "--out", "r", "--quick"],
    ["reproduce", "--seed", "abc"],
    ["reproduce", "--sentiment-run", "missing-folder", "--out", "r", "--quick", "--only", "hardmax-fig2"],
    ["reproduce", "--sentiment-run", "outfile", "--out", "r", "--quick", "--only", "hardmax-fig2"],
    ["reproduce", "--bogus"],
    ["reproduce", "extra-argument"],
    ["reproduce", "--out"],
    ["reproduce", "--scheduler", "nope", "--out", "r", "--quick"],
    ["reproduce", "--scheduler", "tcp://host:99999", "--out", "r", "--quick"],
    ["reproduce", "--scheduler", "", "--out", "r", "--quick"],
    ["reproduce", "--scheduler"],
    ["reproduce", "--scheduler", "inproc://x", "--out", "r", "--quick"],
    ["reproduce", "--scheduler", "tls://127.0.0.1:1", "--out", "r", "--quick"],
    ["reproduce", "--scheduler", "ucx://127.0.0.1:1", "--out", "r", "--quick"],
    ["reproduce", "--scheduler", "wss://127.0.0.1:1", "--out", "r", "--quick"],
    ["reproduce", "--scheduler", "tcp://127.0.0.1:1", "--out", "r", "--quick"],  # unreachable: no empty r/
]


CONTROL = [
    ["control", "t.npy", "--leaders", "0,99"],
    ["control", "t.npy", "--leaders", "x"],
    ["control", "t.npy"],
    ["control", "missing.npy", "--leaders", "0"],
    ["control", "t.npy", "--leaders", "0", "--alpha", "-1"],
    ["control", "t.npy", "--leaders", "0", "--layers", "-2"],
    ["control", "t.npy", "--leaders", "0", "--figure", "f.xyz"],
    ["control", "t.npy", "--leaders", "0,0"],
    ["control", "nan.npy", "--leaders", "0"],
    ["control", "deep.json", "--leaders", "0"],
    ["control", "t.npy", "--leaders", "0", "--bogus"],
    ["control", "t.npy", "--leaders", ""],
]

SWEEP = [
    ["sweep", "missing.toml", "--out", "o"],
    ["sweep", "bad.toml", "--out", "o"],
    ["sweep", "badsyntax.toml", "--out", "o"],
    ["sweep", "folder", "--out", "o"],
    ["sweep", "summarize", "missing-dir"],
    ["sweep", "summarize", "folder"],
    ["sweep", "bad.toml"],
]


@pytest.mark.parametrize("argv", HARDMAX + SOFTMAX + DEMO + REPRODUCE + CONTROL + SWEEP, ids=lambda a: " ".join(a)[:60])
def test_bad_input_is_one_line_and_exit_2(refused, files, argv):
    refused(files, argv)


# Leaders [0, 3] where exact arithmetic has all four at layer 0 (token 1's score underflows).
WIDE = [[1e150, 0.0], [0.0, 1e-150], [-1.0, 0.0], [0.0, -1.0]]


def test_hardmax_refuses_a_dynamic_range_float64_cannot_carry(capsys, refused, files):
    Path("wide.json").write_text(json.dumps(WIDE))
    refused(files, ["hardmax", "wide.json"])
    refused(files, ["control", "wide.json", "--leaders", "0,1,2,3"])
    err = main(["hardmax", "wide.json"]) and capsys.readouterr().err
    assert "dynamic range of 1e+300" in err and "float64 resolves in dimension 2 (1/(2 gamma_5) = 9.01e+14)" in err


@pytest.mark.parametrize("R", [1e3, 1e7])
def test_within_the_dynamic_range_the_leaders_are_exact(R):
    """The same pattern with a range of R**2 <= 1e14 (below 1/(2 gamma_5) = 9e14): the exact leaders, all four."""
    import attndyn

    traj = attndyn.hardmax([[R, 0.0], [0.0, 1 / R], [-1.0, 0.0], [0.0, -1.0]], layers=5, check_hypotheses=False)
    assert attndyn.leaders(traj).indices == (0, 1, 2, 3) and attndyn.leaders(traj).since == (0, 0, 0, 0)


def test_dynamic_range_limit_both_sides_and_per_dtype():
    import torch

    import attndyn
    from attndyn import InputError

    limit = 1 / (2 * attndyn.margins.gamma(5, torch.float64))
    attndyn.hardmax(
        [[1.0, 0.0], [0.0, 1.01 / limit], [0.0, 0.0]], layers=1, check_hypotheses=False
    )  # zero: not counted
    with pytest.raises(InputError, match=r"tokens span a dynamic range of 9.1e\+14 .* drop or zero the tiny"):
        attndyn.hardmax([[1.0, 0.0], [0.0, 0.99 / limit]], layers=1)
    with pytest.raises(InputError, match=r"tokens \(sequence 1\) span .* more than float32 resolves"):
        attndyn.hardmax([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1e-7]]], layers=1, dtype=torch.float32)
    mask = [[True, True], [True, False]]  # padding does not count
    attndyn.hardmax([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 0.0], [0.0, 1e-300]]], layers=1, mask=mask)


def test_corpus_size_per_command():
    for corpus in (HARDMAX, SOFTMAX, DEMO, REPRODUCE, CONTROL):
        assert len(corpus) >= 12


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.recursive(
        st.one_of(
            st.floats(allow_nan=True, allow_infinity=True),
            st.integers(-(10**30), 10**30),
            st.text(max_size=3),
            st.none(),
            st.booleans(),
        ),
        lambda inner: st.lists(inner, max_size=4),
        max_leaves=12,
    )
)
def test_generated_token_files_never_crash(capsys, snapshot, files, data):
    Path("gen.json").write_text(json.dumps(data))
    before = snapshot(files)
    for command in (["hardmax", "gen.json", "--layers", "3"], ["softmax", "gen.json", "--time", "0.3"]):
        code = main(command)
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        if code == 0:
            assert err == "" or all(line.startswith("warning:") for line in err.strip().splitlines())
        else:
            assert code == 2 and len(err.strip().splitlines()) == 1, (data, err)
        assert snapshot(files) == before


def test_out_of_memory_is_one_line(capsys, files, monkeypatch):

    def boom(*a, **k):
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: you tried")

    # a run's layers, one by one or in one call (attndyn._planar_run)
    monkeypatch.setattr(importlib.import_module("attndyn._hardmax")._HardmaxRecord, "observe", boom)
    code = main(["hardmax", "t.npy"])
    _, err = capsys.readouterr()
    assert code == 2 and err.strip() == (
        "error: not enough memory for this run; use fewer or smaller inputs, or keep fewer states"
    )


@pytest.mark.parametrize("command", [["hardmax"], ["softmax"], ["control", "--leaders", "0"]])
def test_a_pipe_or_closed_stdin_as_token_file_is_refused_without_waiting(refused, files, tmp_path_factory, command):
    """Issue 34: a FIFO token file blocked forever; /dev/stdin was said not to exist."""
    pipes = tmp_path_factory.mktemp("pipes")  # outside ``files``: the snapshot would read the pipe
    os.mkfifo(pipes / "t.json")
    line = refused(files, [command[0], str(pipes / "t.json"), *command[1:]])
    assert "is a pipe or socket, not a regular file: reading it can wait forever" in line
    os.symlink("/proc/self/fd/987654", pipes / "stdin.json")  # what /dev/stdin is when standard input is closed
    line = refused(files, [command[0], str(pipes / "stdin.json"), *command[1:]])
    assert "which does not exist (a closed standard input, or a broken link)" in line


@pytest.mark.parametrize(
    "name, message",
    [
        ("ragged.csv", r"TOKENS file 'ragged.csv': line 3 has 1 value where line 2 has 2; give every token"),
        ("ragged.json", r"TOKENS file 'ragged.json' is ragged: its lists have different lengths"),
        # numpy reads true/false as 1/0 (accepted as tokens) and null as NaN (said to be "NaN")
        ("bools.json", r"TOKENS file 'bools.json' holds true at \[0\]\[0\] where a number belongs"),
        ("gap.json", r"TOKENS file 'gap.json' holds null at \[0\]\[1\] where a number belongs"),
    ],
)
def test_a_ragged_token_file_names_the_file_and_the_row(refused, files, name, message):
    """Issue 34: numpy's "setting an array element with a sequence. The requested array has an inhomogeneous
    shape..." passed through."""
    refused(files, ["hardmax", name], message)
