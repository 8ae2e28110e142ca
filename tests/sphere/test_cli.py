"""``attndyn sphere``: the JSON contract, the human summary, the phase diagram's files, one-line refusals."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attndyn.cli import main


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((10, 3))
    np.save("s.npy", x / np.linalg.norm(x, axis=1, keepdims=True))
    np.save("raw.npy", x)
    np.save("ortho.npy", np.eye(2))
    np.save("zero.npy", np.array([[0.0, 0.0], [1.0, 0.0]]))
    np.save("nan.npy", np.array([[np.nan, 1.0], [0.0, 1.0]]))
    np.save("r4.npy", np.zeros((1, 2, 3, 4)))
    Path("bad.json").write_text("{not json")
    Path("outfile").write_text("I am a file")
    return tmp_path


def test_json_contract(capsys, files):
    code, out, _ = run(capsys, "sphere", "s.npy", "--beta", "1", "--time", "20", "--json")
    assert code == 0
    rec = json.loads(out)
    assert {"final_tokens", "clusters", "energy"} <= set(rec)
    x = np.array(rec["final_tokens"])
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-12)
    assert [c["members"] for c in rec["clusters"]] == [list(range(10))]  # d = 3, Q = K = V = I: one cluster
    assert rec["energy"] == pytest.approx(math.exp(1.0) / 2, rel=1e-6)  # all tokens equal: e^beta / (2 beta)
    assert rec["theorems"]["clusters"]["holds"] and rec["theorems"]["clusters"]["applies"]


def test_orthogonal_start_verdict_and_text(capsys, files):
    code, out, _ = run(capsys, "sphere", "ortho.npy", "--beta", "0", "--time", "1", "--step", "0.01", "--json")
    rec = json.loads(out)
    gamma = np.dot(*rec["final_tokens"])
    assert code == 0 and gamma == pytest.approx(math.tanh(1.0), abs=1e-9)
    assert rec["theorems"]["orthogonal_start"]["holds"] and rec["theorems"]["orthogonal_start"]["applies"]
    code, out, _ = run(capsys, "sphere", "ortho.npy", "--beta", "0", "--time", "1")
    assert code == 0 and "orthogonal_start: holds" in out and "energy E_beta" in out


def test_a_short_run_is_not_yet_clustered_and_a_coarse_step_is_named(capsys, files):
    # the clustering theorem speaks of t -> infinity: two clusters at t = 0.5 is "not yet", not a refutation
    code, out, _ = run(capsys, "sphere", "ortho.npy", "--beta", "0", "--time", "0.5")
    assert code == 0 and "clusters: not yet (2 clusters at the end of the run" in " ".join(out.split())
    assert "clusters: does NOT hold" not in out
    code, out, _ = run(capsys, "sphere", "ortho.npy", "--beta", "0", "--time", "40", "--step", "0.5")
    assert code == 0 and "clusters: holds" in out
    # the gamma check fails at a coarse step with the error and the step named as a suspect; it holds at a fine one
    code, out, _ = run(capsys, "sphere", "ortho.npy", "--beta", "-5", "--time", "3", "--step", "0.5")
    flat = " ".join(out.split())
    assert code == 0 and "orthogonal_start: does NOT hold (largest error" in flat and "smaller --step" in flat
    code, out, _ = run(capsys, "sphere", "ortho.npy", "--beta", "-5", "--time", "3", "--step", "0.01")
    assert code == 0 and "orthogonal_start: holds" in out


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--method", "rk4", "--norm", "pre"], "--norm 'pre' sets the layers of the discrete method"),
        (["--betas", "1", "--beta-max", "5"], "--betas 1 runs one beta, --beta-min 0.1: drop --beta-max"),
        (["--delta", "2"], "--delta must be below 2"),
    ],
)
def test_phase_refuses_options_it_would_ignore(capsys, files, argv, match):
    code, _, err = run(capsys, "sphere", "phase", "--out", "ph", "--systems", "1", "--n", "3", "--time", "0.2", *argv)
    assert code == 2 and match in err and err.count("\n") == 1 and not Path("ph").exists()


def test_layers_causal_and_noise(capsys, files):
    code, out, _ = run(capsys, "sphere", "s.npy", "--norm", "ngpt", "--step", "0.5", "--time", "5", "--json")
    assert code == 0 and json.loads(out)["stats"]["function_evals"] == 10
    code, out, _ = run(capsys, "sphere", "s.npy", "--causal", "--json")
    first = json.loads(out)["final_tokens"][0]
    np.testing.assert_allclose(first, np.load("s.npy")[0], atol=1e-14)  # token 0 attends only itself
    a = run(capsys, "sphere", "s.npy", "--method", "euler", "--noise", "0.3", "--seed", "4", "--json")[1]
    b = run(capsys, "sphere", "s.npy", "--method", "euler", "--noise", "0.3", "--seed", "4", "--json")[1]
    assert a == b


def test_normalize_flag(capsys, refused, files):
    refused(files, ["sphere", "raw.npy"], r"token 0 of sequence 0 has norm .*, not 1.*pass --normalize to divide")
    code, out, _ = run(capsys, "sphere", "raw.npy", "--normalize", "--json")
    assert code == 0


def test_phase_writes_the_diagram_and_its_figure(capsys, files):
    args = ["--systems", "4", "--n", "4", "--betas", "3", "--time", "2", "--checkpoints", "5"]
    code, out, err = run(capsys, "sphere", "phase", "--out", "ph", *args)
    assert code == 0, err
    rec = json.loads(Path("ph/phase.json").read_text())
    assert np.array(rec["fraction"]).shape == (3, 5) and rec["settings"]["systems"] == 4
    assert Path("ph/phase.png").stat().st_size > 1000
    config = json.loads(Path("ph/config.json").read_text())
    assert "written:" in out and config["command"].startswith("attndyn sphere phase --out ph --systems 4")
    assert config["run"]["seconds"] > 0 and config["run"]["cpus"] >= 1 and (config["run"]["load_1min_before"] or 0) >= 0


def test_phase_config_spells_every_float_in_full(capsys, files):
    """config.json's command wrote the floats with :g, six digits: --beta-min 0.1234567890123 came back as 0.123457,
    and the command it records did not rerun the diagram it describes."""
    args = ["--systems", "2", "--n", "3", "--betas", "2", "--checkpoints", "2", "--beta-min", "0.1234567890123",
            "--beta-max", "0.3", "--time", "0.30000000000000004", "--step", "0.1", "--delta", "0.0012345678901"]  # fmt: skip
    code, _, err = run(capsys, "sphere", "phase", "--out", "pg", *args)
    assert code == 0, err
    command = json.loads(Path("pg/config.json").read_text())["command"]
    for flag, value in zip(args[::2], args[1::2], strict=True):
        assert f"{flag} {value} " in command + " ", (flag, command)


SPHERE = [
    ["sphere", "missing.npy"],
    ["sphere", "nan.npy"],
    ["sphere", "zero.npy"],
    ["sphere", "r4.npy"],
    ["sphere", "bad.json"],
    ["sphere", "raw.npy"],
    ["sphere", "s.npy", "--beta", "nan"],
    ["sphere", "s.npy", "--beta", "800", "--attention", "usa"],
    ["sphere", "s.npy", "--attention", "softmax"],
    ["sphere", "s.npy", "--method", "rk5"],
    ["sphere", "s.npy", "--norm", "layer"],
    ["sphere", "s.npy", "--noise", "-1", "--seed", "0"],
    ["sphere", "s.npy", "--noise", "0.1"],
    ["sphere", "s.npy", "--noise", "0.1", "--seed", "0", "--method", "dopri5"],
    ["sphere", "s.npy", "--time", "0"],
    ["sphere", "s.npy", "--time", "1e9", "--step", "1e-3"],
    ["sphere", "s.npy", "--angle", "4"],
    ["sphere", "s.npy", "--bogus"],
    ["sphere", "phase"],
    ["sphere", "phase", "--out", "outfile"],
    ["sphere", "phase", "--out", "p", "--betas", "0"],
    ["sphere", "phase", "--out", "p", "--beta-min", "5", "--beta-max", "1"],
    ["sphere", "phase", "--out", "p", "--systems", "0"],
    ["sphere", "phase", "--out", "p", "--method", "dopri5"],
    ["sphere", "phase", "--out", "p", "--systems", "100000000", "--betas", "90"],
    ["sphere", "phase", "--out", "p", "--attention", "usa", "--beta-max", "900"],
    ["sphere", "phase", "--out", "p", "--kq", "wigner"],
    ["sphere", "s.npy", "--figure", "f.svg"],
    ["sphere", "s.npy", "--figure", "f.mp4"],
    ["sphere", "s.npy", "--figure", "outfile/f.png"],
    ["sphere", "s.npy", "--figure", "outfile/below/f.png"],
    ["sphere", "r4.npy", "--figure", "f.png"],
    ["sphere", "phase", "--out", "p", "--v", "random"],
    ["sphere", "phase", "--out", "p", "--betas", "1", "--beta-min", "1e308"],
]


@pytest.mark.parametrize("argv", SPHERE, ids=lambda a: " ".join(a)[:60])
def test_bad_input_is_one_line_exit_2_nothing_written(refused, files, argv):
    refused(files, argv)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.recursive(
        st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**30), 10**30), st.none()),
        lambda inner: st.lists(inner, max_size=4),
        max_leaves=12,
    )
)
def test_generated_token_files_never_crash(capsys, snapshot, files, data):
    Path("gen.json").write_text(json.dumps(data))
    before = snapshot(files)
    code = main(["sphere", "gen.json", "--time", "0.3", "--normalize"])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    if code != 0:
        assert code == 2 and len(err.strip().splitlines()) == 1, (data, err)
    assert snapshot(files) == before


def test_phase_with_random_parameters(capsys, files):
    args = [
        "--systems",
        "3",
        "--n",
        "4",
        "--betas",
        "2",
        "--time",
        "1",
        "--checkpoints",
        "2",
        "--kq",
        "goe",
        "--v",
        "minus",
    ]
    code, _, err = run(capsys, "sphere", "phase", "--out", "pr", *args)
    assert code == 0, err
    settings = json.loads(Path("pr/phase.json").read_text())["settings"]
    assert (settings["kq"], settings["v"]) == ("goe", "minus")
    assert "--kq goe --v minus" in json.loads(Path("pr/config.json").read_text())["command"]
    code, _, err = run(capsys, "sphere", "phase", "--out", "pi", "--beta-min", "nan")
    assert code == 2 and err.strip() == "error: --beta-min must be a finite number, got nan"


def test_figure_of_a_run(capsys, files):
    code, _, err = run(capsys, "sphere", "s.npy", "--time", "2", "--figure", "run.png")
    assert code == 0, err
    assert Path("run.png").read_bytes()[:4] == b"\x89PNG"
    code, _, err = run(capsys, "sphere", "s.npy", "--time", "2", "--figure", "run.gif")
    assert code == 0, err
    from PIL import Image

    with Image.open("run.gif") as gif:
        assert gif.format == "GIF" and gif.n_frames == 24


def test_json_is_strict_and_theorems_that_do_not_apply_make_no_claim(capsys, tmp_path):
    """Pass 8, items 5 and 8: SA at beta = 800 overflows the energy: --json printed NaN and Infinity (not JSON), and
    the text said "does NOT hold" for theorems whose hypotheses fail (SA, a start that is not orthogonal)."""
    x = np.random.default_rng(0).standard_normal((16, 3))
    path = tmp_path / "u16.npy"
    np.save(path, x / np.linalg.norm(x, axis=1, keepdims=True))
    code, out, _ = run(capsys, "sphere", path, "--beta", "800", "--time", "1", "--step", "0.01", "--json")
    assert code == 0
    json.loads(out, parse_constant=lambda c: pytest.fail(f"bare {c} in --json"))
    code, out, _ = run(capsys, "sphere", path, "--beta", "2", "--time", "5", "--attention", "usa")
    assert code == 0 and "does NOT hold (its hypotheses" not in out
    assert "orthogonal_start: makes no claim (its hypotheses do not all hold here)" in out


def test_a_run_over_the_step_budget_says_what_the_flags_can_change(capsys, files, monkeypatch):
    """New-user pass: `attndyn sphere run` said "raise max_steps", a Python parameter it has no flag for."""
    code, _, err = run(capsys, "sphere", "s.npy", "--time", "100000")
    assert code == 2 and err == (
        "error: --time=100000 with --step=0.1 needs 1e+06 steps, over the step budget of 100000; "
        "lower --time or raise --step\n"
    )
    import functools

    import attndyn.sphere as sp

    monkeypatch.setattr(sp, "evolve", functools.partial(sp.evolve, max_steps=5))  # an adaptive solve out of steps
    code, _, err = run(capsys, "sphere", "s.npy", "--method", "dopri5", "--time", "50")
    assert code == 2 and err.count("\n") == 1 and "max_steps" not in err, err
    assert err.endswith(
        "step budget exhausted (5 steps); use a shorter --time, or --method rk4 with a --step small enough for the "
        "field (a warning says when it is not)\n"
    )


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_phase_and_run_name_their_flags_not_python_parameters(capsys, files, value):
    """New-user pass: `sphere phase --delta 0` said "delta must be ...", and --time, --step, --beta, --n said theirs
    the same way."""
    for argv, flag in (
        (["phase", "--out", "ph", "--delta", value], "--delta"),
        (["phase", "--out", "ph", "--time", value], "--time"),
        (["run", "s.npy", "--step", value], "--step"),
        (["run", "s.npy", "--noise", "-1"], "--noise"),
        (["run", "s.npy", "--beta", "nan"], "--beta"),
    ):
        code, _, err = run(capsys, "sphere", *argv)
        assert code == 2 and err.startswith(f"error: {flag} must be a ") and err.count("\n") == 1, (argv, err)
    if value != "nan":  # an integer option
        code, _, err = run(capsys, "sphere", "phase", "--out", "ph", "--n", value)
        assert code == 2 and err == f"error: --n must be an integer >= 2, got {value}\n"
    for argv, message in (  # one token has no pair to cluster (it said "n must be", from the gamma curve's check)
        (["phase", "--out", "ph", "--n", "1"], "error: --n must be an integer >= 2, got 1\n"),
        (["phase", "--out", "ph", "--seed", "-1"], "error: --seed must be an integer >= 0, got -1\n"),
        (["run", "s.npy", "--noise", "0.1", "--seed", "-1"], "error: --seed must be an integer >= 0, got -1\n"),
    ):
        code, _, err = run(capsys, "sphere", *argv)
        assert code == 2 and err == message, (argv, err)
    assert not Path("ph").exists()
