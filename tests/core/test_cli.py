"""The command line: JSON contract, one-line errors with exit status 2, warnings."""

import json

import numpy as np
import pytest

from attndyn.cli import main

pytestmark = pytest.mark.smoke  # part of the quick subset: pytest -m smoke


@pytest.fixture
def square(tmp_path):
    p = tmp_path / "square.npy"
    np.save(p, np.array([[1, 1], [-1, 1], [-1, -1], [1, -1], [0.2, 0.1]], dtype=float))
    return p


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_hardmax_json_contract(capsys, square):
    code, out, _ = run(capsys, "hardmax", square, "--json", "--layers", "60")
    assert code == 0
    rec = json.loads(out)
    assert set(rec) == {
        *("final_tokens", "leaders", "rounding_events", "clusters", "converged", "layers", "theorem"),
        *("settled", "settled_rtol"),  # issue 11 item 2: "settled" is the last step's size, "converged" the run's test
    }
    assert [r["index"] for r in rec["leaders"]] == [0, 1, 2, 3]
    # min_j <z_i, z_i - z_j>: the interior point (0.2, 0.1) is the closest rival of corners (1, 1) and (1, -1)
    assert [r["margin"] for r in rec["leaders"]] == pytest.approx([1.7, 2.0, 2.0, 1.9], rel=1e-15)
    assert rec["rounding_events"] == []
    assert all(r["since_layer"] == 0 for r in rec["leaders"])
    assert sorted(len(c["members"]) for c in rec["clusters"]) == [1, 1, 1, 2]
    # 60 layers leave the interior token ~1e-11 from its corner (ratio 2/3 per layer): settled, not converged
    assert rec["settled"] and not rec["converged"] and rec["theorem"]["holds"] and rec["layers"] == 60


def test_batch_json_and_csv_and_json_inputs(capsys, tmp_path):
    b = tmp_path / "batch.json"
    b.write_text(json.dumps({"tokens": np.random.default_rng(0).standard_normal((2, 5, 2)).tolist()}))
    code, out, _ = run(capsys, "hardmax", b, "--json")
    assert code == 0 and len(json.loads(out)["sequences"]) == 2
    c = tmp_path / "t.csv"
    c.write_text("x,y\n1,0\n0,1\n0.5,0.4\n")
    code, out, _ = run(capsys, "hardmax", c, "--json", "--layers", "5")
    assert code == 0 and len(json.loads(out)["final_tokens"]) == 3


def test_matrix_option_and_human_summary(capsys, square, tmp_path):
    A = tmp_path / "A.npy"
    np.save(A, np.array([[2.0, 1.0], [1.0, 1.0]]))
    code, out, _ = run(capsys, "hardmax", square, "--matrix", A)
    assert code == 0 and "leaders:" in out and "Theorem 1.1" in out


def test_softmax_json_has_attention(capsys, tmp_path):
    p = tmp_path / "x.npy"
    np.save(p, np.random.default_rng(1).standard_normal((6, 2)))
    code, out, _ = run(capsys, "softmax", p, "--json", "--rescaled", "--time", "3", "--method", "dopri5")
    rec = json.loads(out)
    assert code == 0 and np.array(rec["attention_final"]).shape == (6, 6)
    assert rec["theorem"]["regime"] == "polytope"


@pytest.mark.parametrize(
    "args, match",
    [
        (["hardmax", "MISSING.npy"], "does not exist"),
        (["hardmax", "BAD"], "could not be read"),
        (["hardmax", "NAN"], "contains NaN"),
        (["hardmax", "SQUARE", "--alpha", "0"], "^error: --alpha must be a positive"),  # the flag, not alpha=
        (["hardmax", "SQUARE", "--tol", "-1"], "^error: --tol must be a non-negative"),
        (["hardmax", "SQUARE", "--layers", "-1"], "^error: --layers must be an integer >= 0"),
        (["control", "SQUARE", "--leaders", "0", "--alpha", "0"], "^error: --alpha must be a positive"),
        (["control", "SQUARE", "--leaders", "0", "--layers", "0"], "^error: --layers must be an integer >= 1"),
        (["control", "SQUARE", "--leaders", "0", "--rounds", "0"], "^error: --rounds must be an integer >= 1"),
        (["control", "SQUARE", "--leaders", "0", "--margin", "-1"], "^error: --margin must be a non-negative"),
        (["control", "SQUARE", "--leaders", "0", "--max-constraints", "0"], "^error: --max-constraints must be"),
        (
            ["control", "SQUARE", "--leaders", "0,1", "--max-constraints", "1"],
            r"over --max-constraints = 1;.*raise --max-c",
        ),
        (["hardmax", "SQUARE", "--matrix", "RECT"], "last axis must be 2"),
        (["hardmax", "SQUARE", "--layers", "x"], "Invalid value for '--layers'"),
        (["softmax", "SQUARE", "--method", "rk45"], "unknown method"),
        (["hardmax", "EMPTY"], "empty|could not be read"),
        (["hardmax", "TXT"], "unknown type"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, square, args, match):
    files = {
        "SQUARE": square,
        "BAD": tmp_path / "bad.csv",
        "NAN": tmp_path / "nan.npy",
        "RECT": tmp_path / "rect.npy",
        "EMPTY": tmp_path / "empty.json",
        "TXT": tmp_path / "t.txt",
    }
    files["BAD"].write_text("1,2\n3,oops\n")
    np.save(files["NAN"], np.array([[1.0, np.nan]]))
    np.save(files["RECT"], np.ones((2, 3)))
    files["EMPTY"].write_text("[]")
    files["TXT"].write_text("1 2")
    argv = [str(files.get(a, a)) for a in args]
    code, out, err = run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    assert "Traceback" not in err
    import re

    assert re.search(match, lines[0])


def test_hypothesis_warning_is_one_line(capsys, tmp_path):
    p = tmp_path / "dup.npy"
    np.save(p, np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]]))
    code, _, err = run(capsys, "hardmax", p)
    assert code == 0 and "warning: some tokens are repeated" in err


def test_demo_writes_results(capsys, tmp_path):
    code, out, _ = run(capsys, "demo", "--out", tmp_path / "demo")
    assert code == 0
    out = " ".join(out.split())
    # issue 34: each verdict says what "converged" and "settled" mean; the triangle's centre printed 1.738e-07
    assert "converged: False (no step left the tokens exactly unchanged; not needed: the verdicts read" in out
    assert "settled (relative change of the last step <= 0.0001): True (the final tokens show the limits" in out
    assert "│ (0, 1.2) │ 0 3 6" in out and "e-07" not in out
    res = json.loads((tmp_path / "demo" / "results.json").read_text())
    assert res["hardmax: square polytope"]["theorem"]["holds"]
    cfg = json.loads((tmp_path / "demo" / "config.json").read_text())
    assert cfg == {
        "seed": 0,
        "hardmax": {"alpha": 0.5, "layers": 30},
        "softmax": {"time": 10.0, "method": "rk4", "step": 0.1, "rescaled": True},
    }


def test_atomic_write_leaves_no_temporary_and_normal_permissions(tmp_path):
    import os

    from attndyn._io import write_json

    p = write_json(tmp_path / "sub" / "r.json", {"a": 1})
    assert json.loads(p.read_text()) == {"a": 1}
    assert [q.name for q in p.parent.iterdir()] == ["r.json"]
    assert os.stat(p).st_mode & 0o044  # readable by group/others under the usual umask


def test_demo_refuses_an_unwritable_out_before_any_run(capsys, tmp_path, monkeypatch):
    import errno
    import tempfile

    import attndyn._hardmax

    def readonly(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    def no_run(*args, **kwargs):
        raise AssertionError("a run started before the folder was checked")

    monkeypatch.setattr(tempfile, "mkstemp", readonly)
    monkeypatch.setattr(attndyn._hardmax, "hardmax", no_run)
    code, out, err = run(capsys, "demo", "--out", tmp_path / "demo")
    assert (
        code == 2
        and err
        == f"error: --out {str(tmp_path / 'demo')!r} is not writable (Read-only file system); choose a folder you can write to\n"
    )


def test_a_file_that_is_not_utf8_names_the_byte_and_the_fix(capsys, tmp_path):
    p = tmp_path / "x.csv"
    p.write_bytes(b"1,2\n\xff3,4\n")
    code, _, err = run(capsys, "hardmax", p)
    assert code == 2 and "is not UTF-8 text (byte 4: b'\\xff'); save it as UTF-8" in err


def test_small_softmax_tokens_are_not_one_cluster_at_the_origin(capsys, tmp_path):
    """Pass 8, item 3: the softmax summary clustered with an absolute floor of 1e-3, so 40 distinct tokens of size
    1e-4 were one cluster printed at (0, 0, 0); the tolerance is relative to the tokens now, as the API's."""
    x = 1e-4 * np.random.default_rng(0).standard_normal((40, 3))
    path = tmp_path / "small.npy"
    np.save(path, x)
    code, out, _ = run(capsys, "softmax", path, "--rescaled", "--time", "3", "--json")
    assert code == 0
    rec = json.loads(out)
    assert len(rec["clusters"]) == 40 and rec["cluster_tol"] < 1e-6


@pytest.mark.parametrize("args", [("softmax", "--time", "1e308"), ("sphere", "--time", "1e308")])
def test_a_time_no_float_can_count_in_steps_is_one_line(capsys, square, args):
    """Pass 8, item 4: time / step overflowed to inf and math.ceil raised OverflowError (a traceback, exit 1)."""
    tokens = square
    if args[0] == "sphere":
        tokens = square.parent / "unit.npy"
        np.save(tokens, np.eye(3))
    code, out, err = run(capsys, args[0], tokens, *args[1:])
    assert code == 2 and "needs more steps than a float can count" in err and "Traceback" not in err


def test_reproduce_refuses_an_empty_out_before_any_work(capsys, tmp_path):
    """Pass 8, item 10: `reproduce --out ''` wrote report.html, results.json and figures/ into the current folder."""
    code, _, err = run(capsys, "reproduce", "--quick", "--out", "", "--only", "hardmax-fig1")
    assert code == 2 and "--out needs a folder name" in err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run(capsys, "reproduce", "--quick", "--out", blocker / "sub", "--only", "hardmax-fig1")
    assert code == 2 and "is a file, not a folder" in err


def test_the_step_budget_is_named_by_its_flag(capsys, square):
    """New-user pass: `attndyn softmax` said "raise max_steps" (before and during the run) and
    "max_steps must be ...": Python names, where the command line has --max-steps."""
    code, _, err = run(capsys, "softmax", square, "--max-steps", "5")
    assert code == 2 and err == (
        "error: --time=10 with --step=0.1 needs 100 steps, over --max-steps 5; lower --time or raise --step, "
        "or raise --max-steps\n"
    )
    code, _, err = run(capsys, "softmax", square, "--max-steps", "5", "--method", "dopri5")
    assert code == 2 and err.startswith("error: dopri5 failed at t=") and err.count("\n") == 1
    assert err.endswith("step budget exhausted (5 steps); raise --max-steps\n")
    code, _, err = run(capsys, "softmax", square, "--max-steps", "0")
    assert code == 2 and err == "error: --max-steps must be an integer >= 1, got 0\n"


def test_the_library_keeps_naming_its_parameters():
    import attndyn

    with pytest.raises(attndyn.InputError, match=r"over max_steps=5; lower time or raise step, or raise max_steps$"):
        attndyn.softmax(np.eye(2), time=10.0, step=0.1, max_steps=5)
    traj = attndyn.softmax(np.eye(2), V=2 * np.eye(2), time=5.0, method="dopri5", max_steps=2, rtol=1e-12)
    assert traj.stats.message.endswith("step budget exhausted (2 steps); raise max_steps")


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"", "is empty (0 bytes)"),
        (b"hello\n", "is not a .npy file"),
        (None, "could not be read"),  # a real .npy cut inside its header
    ],
)
def test_an_empty_or_foreign_npy_is_an_error_not_an_interrupt(capsys, tmp_path, square, content, said):
    # np.load raises EOFError on an empty file, which click turns into Abort: the command said "interrupted"
    # (exit 130), as if Ctrl-C had been pressed; a text file was said to hold pickled data
    bad = tmp_path / "bad.npy"
    bad.write_bytes(square.read_bytes()[:90] if content is None else content)
    for args in (["hardmax", bad], ["hardmax", square, "--matrix", bad], ["softmax", bad, "--time", "1"]):
        code, out, err = run(capsys, *args)
        assert code == 2 and out == "" and err.startswith("error: ") and said in err, (args, err)
        assert "interrupted" not in err and "pickle" not in err and err.count("\n") == 1


def test_tokens_near_the_float_range_are_clustered_and_printed_as_they_are(capsys, tmp_path):
    # a tolerance of the tokens' size overflowed: "tol must be a non-negative finite number, got inf" (no --tol was
    # given); and an unsettled run's centers, zeroed below that tolerance, printed as (0, 0)
    big = tmp_path / "big.npy"
    np.save(big, np.array([[1e308, 1e308], [-1e308, 1e308], [0, 0]]))
    for layers in ("3", "200"):
        code, out, err = run(capsys, "hardmax", big, "--layers", layers, "--json")
        assert code == 0, err
        rec = json.loads(out)
        assert sorted(c["members"] for c in rec["clusters"]) == [[0], [1], [2]]
        assert rec["clusters"][0]["center"] == [1e308, 1e308]
    assert rec["theorem"]["limits_on_boundary"]  # the tie's mean (0, 1e308) is on the segment
    code, out, _ = run(capsys, "hardmax", big, "--layers", "5")
    assert code == 0 and "(1e+308, 1e+308)" in out and "(-1e+308, 1e+308)" in out
