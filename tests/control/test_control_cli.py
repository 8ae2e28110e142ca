"""attndyn control: the JSON contract, an A that re-simulates to the reported leaders, exit statuses."""

import json

import numpy as np
import pytest

from attndyn.cli import main

Z5 = [[2.0, 0.0], [0.0, 2.0], [-1.0, -1.5], [0.1, 0.2], [0.5, -0.3]]


@pytest.fixture
def tokens(tmp_path):
    p = tmp_path / "tokens.json"
    p.write_text(json.dumps(Z5))
    return p


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def test_json_contract_and_independent_resimulation(capsys, tokens, tmp_path):
    code, out, err = run(
        capsys,
        "control",
        tokens,
        "--leaders",
        "1,2",
        "--json",
        "--alpha",
        "0.7",
        "--layers",
        "40",
        "--save-matrix",
        tmp_path / "A.npy",
    )
    assert code == 0, err
    rec = json.loads(out)
    assert {"A", "alpha", "layers", "margin", "leaders_requested", "leaders_found", "reached", "rounds"} <= set(rec)
    assert rec["alpha"] == 0.7 and rec["layers"] == 40 and rec["reached"] and rec["verdict"] == "reached"
    assert rec["leaders_requested"] == [1, 2] and [r["index"] for r in rec["leaders_found"]] == [1, 2]
    assert rec["margin"] > 0 and rec["rounds"][0]["reached"]
    assert np.array_equal(np.load(tmp_path / "A.npy"), np.array(rec["A"]))  # JSON floats round-trip exactly
    # the A it prints, run through the plain hardmax command, gives exactly the leaders it reports
    code, out, _ = run(
        capsys, "hardmax", tokens, "--matrix", tmp_path / "A.npy", "--alpha", "0.7", "--layers", "40", "--json"
    )
    assert code == 0
    found = [(r["index"], r["since_layer"]) for r in json.loads(out)["leaders"]]
    assert found == [(r["index"], r["since_layer"]) for r in rec["leaders_found"]]


def test_text_output_and_figure(capsys, tokens, tmp_path):
    fig = tmp_path / "f.png"
    code, out, _ = run(capsys, "control", tokens, "--leaders", "1,2", "--figure", fig)
    assert code == 0 and fig.stat().st_size > 10_000
    assert "margin:" in out and "verdict: reached" in out and "leaders found by simulation" in out


def test_spd_flag(capsys, tokens):
    pytest.importorskip("cvxpy")
    code, out, _ = run(capsys, "control", tokens, "--leaders", "1,2", "--spd", "--json")
    rec = json.loads(out)
    assert code == 0 and rec["spd"] and np.linalg.eigvalsh(np.array(rec["A"])).min() > 0


def test_clusters_option(capsys, tokens):
    code, out, _ = run(capsys, "control", tokens, "--clusters", "0,1,0,1,0", "--json")
    rec = json.loads(out)
    assert code == 0 and rec["clusters_found"] == [0, 1, 0, 1, 0]


def test_layer0_only_exits_1(capsys, tokens):
    code, out, err = run(capsys, "control", tokens, "--leaders", "0", "--rounds", "2")
    assert code == 1 and "verdict: layer0_only" in out and err == ""


def test_an_undecided_run_exits_1_and_says_why(capsys, tmp_path):
    """Another token followed only itself within rounding: not "reached" (exit 1), the matrix still written."""
    p = tmp_path / "near.json"
    p.write_text(json.dumps([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.2, 0.2, 0.2], [-1, -1, -1]]))
    code, out, err = run(capsys, "control", p, "--leaders", "0", "--layers", "30", "--save-matrix", tmp_path / "A.npy")
    assert code == 1 and "verdict: undecided" in out and "within the rounding bound" in out and err == ""
    assert (tmp_path / "A.npy").exists()


@pytest.mark.parametrize(
    "args, match",
    [
        (["--leaders", "3"], "target not reached: token 3 lies in the hull of the other tokens"),
        (["--leaders", "x"], "--leaders must be comma-separated token indices"),
        (["--leaders", "9"], r"leaders \[9\] out of range"),
        ([], "give exactly one of --leaders"),
        (["--leaders", "1", "--clusters", "0,1,0,1,0"], "give exactly one of --leaders"),
        (["--leaders", "1,2", "--figure", "f.gif"], "must end in .png, .svg or .pdf"),
        (["--leaders", "1,2", "--alpha", "-1"], "alpha must be a positive"),
    ],
)
def test_infeasible_and_malformed_requests_exit_2_with_one_line(capsys, tokens, args, match):
    code, _, err = run(capsys, "control", tokens, *args)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    import re

    assert re.search(match, lines[0])


def test_missing_file(capsys, tmp_path):
    code, _, err = run(capsys, "control", tmp_path / "nope.npy", "--leaders", "0")
    assert code == 2 and "does not exist" in err


def test_not_reached_with_json_still_prints_the_record_and_the_certificate(capsys, tokens):
    code, out, err = run(capsys, "control", tokens, "--leaders", "0,3", "--json")
    assert code == 2 and len(err.strip().splitlines()) == 1
    rec = json.loads(out)
    assert rec["reached"] is False and rec["verdict"] == "not_reached" and rec["margin"] is None
    (cert,) = rec["certificates"]
    Z = np.array(Z5)
    w = np.zeros(len(Z))
    for j, v in cert["weights"].items():
        w[int(j)] = v
    assert cert["token"] == 3 and np.allclose(w @ Z, Z[3]) and w.sum() == pytest.approx(1.0) and (w >= 0).all()


def test_help_lists_the_command(capsys):
    code, out, _ = run(capsys, "control", "--help")
    assert code == 0 and "--leaders" in out and "--spd" in out


def test_output_names_that_cannot_be_written_are_refused_before_the_work(capsys, tokens, tmp_path):
    # --save-matrix naming TOKENS overwrote the user's tokens with A (exit 0); a --figure under a file failed after
    # the work with "[Errno 17] File exists"; a --save-matrix A.txt was written as .npy bytes
    npy = tmp_path / "tokens.npy"
    np.save(npy, np.array(Z5))
    before = npy.read_bytes()
    cases = [
        (npy, ["--save-matrix", npy], "is an input of this command"),
        (tokens, ["--figure", tokens / "f.png"], f"is not a file name in a folder ({str(tokens)!r} is a file)"),
        (tokens, ["--save-matrix", tokens / "A.npy"], "is not a file name in a folder"),
        (tokens, ["--save-matrix", tmp_path / "A.txt"], "end the name with .npy"),
    ]
    for given, extra, said in cases:
        code, out, err = run(capsys, "control", given, "--leaders", "1,2", *extra)
        assert code == 2 and out == "" and said in err and err.count("\n") == 1, (extra, err)
    assert npy.read_bytes() == before and not (tmp_path / "A.txt").exists()
