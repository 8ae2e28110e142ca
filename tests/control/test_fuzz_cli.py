"""Fuzz corpus of `attndyn control`: every bad input is one line on standard error, exit status 2, no traceback,
and nothing created or changed -- existing --save-matrix / --figure files included."""

import dataclasses
import importlib
import json
import os
from pathlib import Path

import numpy as np
import pytest

from attndyn.cli import main

Z5 = [[2.0, 0.0], [0.0, 2.0], [-1.0, -1.5], [0.1, 0.2], [0.5, -0.3]]


@pytest.fixture(scope="module")
def devices(tmp_path_factory):
    """/dev/zero and /dev/urandom under token-file names, outside the snapshot folder (which reads every file)."""
    d = tmp_path_factory.mktemp("devices")
    for name, target in (("zero.csv", "/dev/zero"), ("rand.json", "/dev/urandom")):
        os.symlink(target, d / name)
    return d


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("t.json").write_text(json.dumps(Z5))
    np.save("t.npy", np.array(Z5))
    Path("tiny.json").write_text(json.dumps((np.array(Z5) * 1e-150).tolist()))
    Path("huge.json").write_text(json.dumps((np.array(Z5) * 1e300).tolist()))
    Path("wide.json").write_text(json.dumps([[1e150, 0.0], [0.0, 1e-150], [-1.0, 0.0], [0.0, -1.0]]))
    Path("one.json").write_text("[[1.0, 2.0]]")
    Path("batch.json").write_text(json.dumps([Z5, Z5]))
    Path("nan.json").write_text("[[1.0, NaN], [0.0, 1.0]]")
    Path("ragged.json").write_text("[[1, 2], [3]]")
    Path("bad.json").write_text("{not json")
    Path("obj.json").write_text('{"x": 1}')
    Path("str.csv").write_text("a,b\nc,d\n")
    Path("bin.npy").write_bytes(os.urandom(64))
    t = np.random.default_rng(2).uniform(0, 2 * np.pi, 2000)
    np.save("circle.npy", np.c_[np.cos(t), np.sin(t)])  # every token a hull vertex: too many constraints
    Path("A.npy").write_bytes(b"existing matrix")
    Path("f.png").write_bytes(b"existing figure")
    Path("folder").mkdir()
    return tmp_path


CONTROL = [
    ["control", "t.json", "--leaders", "3", "--save-matrix", "A.npy", "--figure", "f.png"],  # inside the hull
    ["control", "t.json", "--clusters", "2,2,2,2,2", "--save-matrix", "A.npy", "--figure", "f.png"],
    ["control", "t.json", "--leaders", "0,99"],
    ["control", "t.json", "--leaders", "-1"],
    ["control", "t.json", "--leaders", "x"],
    ["control", "t.json", "--leaders", "0,0"],
    ["control", "t.json", "--leaders", ""],
    ["control", "t.json", "--leaders", "1.5"],
    ["control", "t.json"],
    ["control", "t.json", "--leaders", "0", "--clusters", "0,1,2,3,4"],
    ["control", "t.json", "--clusters", "0,1"],
    ["control", "t.json", "--clusters", "1,0,2,3,4"],
    ["control", "t.json", "--leaders", "0", "--alpha", "0"],
    ["control", "t.json", "--leaders", "0", "--alpha", "nan"],
    ["control", "t.json", "--leaders", "0", "--layers", "0"],
    ["control", "t.json", "--leaders", "0", "--rounds", "0"],
    ["control", "t.json", "--leaders", "0", "--margin", "-1"],
    ["control", "t.json", "--leaders", "0", "--max-constraints", "0"],
    ["control", "t.json", "--leaders", "1,2", "--max-constraints", "3", "--save-matrix", "A.npy"],
    ["control", "t.json", "--leaders", "0", "--figure", "f.xyz"],
    ["control", "t.json", "--leaders", "0", "--figure", "folder"],
    ["control", "t.json", "--leaders", "0", "--save-matrix", "folder"],
    ["control", "t.json", "--leaders", "0", "--save-matrix", "f.png", "--figure", "f.png"],
    ["control", "t.json", "--leaders", "0", "--bogus"],
    ["control", "missing.json", "--leaders", "0"],
    ["control", "folder", "--leaders", "0"],
    ["control", "one.json", "--leaders", "0"],
    ["control", "batch.json", "--leaders", "0"],
    ["control", "nan.json", "--leaders", "0"],
    ["control", "ragged.json", "--leaders", "0"],
    ["control", "bad.json", "--leaders", "0"],
    ["control", "obj.json", "--leaders", "0"],
    ["control", "str.csv", "--leaders", "0"],
    ["control", "bin.npy", "--leaders", "0"],
    ["control", "DEV/zero.csv", "--leaders", "0"],
    ["control", "DEV/rand.json", "--leaders", "0"],
    ["control", "wide.json", "--leaders", "0,1,2,3"],
    ["control", "tiny.json", "--leaders", "3"],
    ["control", "huge.json", "--leaders", "3", "--save-matrix", "A.npy"],
    ["control", "circle.npy", "--leaders", "0", "--save-matrix", "A.npy"],
]


@pytest.mark.parametrize("argv", CONTROL, ids=lambda a: " ".join(a[1:])[:60])
def test_bad_input_is_one_line_and_exit_2(refused, files, devices, argv):
    line = refused(files, [a.replace("DEV", str(devices)) for a in argv])
    assert not line.rstrip().endswith("()")


def test_corpus_size():
    assert len(CONTROL) >= 20


def test_messages(capsys, files, devices):
    for argv, message in (
        (["control", "circle.npy", "--leaders", "0"], "over --max-constraints = 200000; .* raise --max-constraints$"),
        (["control", str(devices / "zero.csv"), "--leaders", "0"], "is larger than max_bytes = 67108864 bytes"),
        (["control", "tiny.json", "--leaders", "3"], "target not reached: token 3 lies in the hull"),
        (["control", "wide.json", "--leaders", "0"], "dynamic range of 1e\\+300"),
    ):
        assert main(argv) == 2
        assert __import__("re").search(message, capsys.readouterr().err.strip()), argv


def test_not_reached_after_a_verified_run_writes_nothing(capsys, snapshot, files, monkeypatch):
    """A run that was verified but missed the target (issue 26: both files were overwritten, the reason ended
    in '()'): exit 2, the existing files untouched."""
    control = importlib.import_module("attndyn.control")
    real = control.choose_A

    def missed(*args, **kwargs):
        res = real(*args, **kwargs)
        assert res.trajectory is not None
        return dataclasses.replace(
            res, verdict="not_reached", reason="the engine's leaders are [1] (requested tokens [2] do not lead)"
        )

    monkeypatch.setattr(control, "choose_A", missed)
    before = snapshot(files)
    assert main(["control", "t.json", "--leaders", "1,2", "--save-matrix", "A.npy", "--figure", "f.png"]) == 2
    assert capsys.readouterr().err.strip().endswith("(requested tokens [2] do not lead)")
    assert snapshot(files) == before


def test_success_writes_both_files_atomically(capsys, files):
    assert main(["control", "t.json", "--leaders", "1,2", "--save-matrix", "A.npy", "--figure", "f.png"]) == 0
    assert np.load("A.npy").shape == (2, 2) and Path("f.png").read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in Path(".").glob(".*")) == []  # no temporary files left


def test_reason_never_ends_in_empty_parentheses():
    import attndyn
    from attndyn.control._choose import _verdict

    traj = attndyn.hardmax(Z5, layers=5)
    found = attndyn.leaders(traj)
    verdict, reason = _verdict(traj, found, (0, 1, 2, 3), achieved=0.1, how="", layers=5, n_rounds=1)
    assert verdict == "not_reached" and reason.endswith("(requested tokens [3] do not lead)")
