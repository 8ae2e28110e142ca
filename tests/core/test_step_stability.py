"""A fixed step beyond its scheme's stability interval (attndyn.solvers.STABILITY_INTERVAL) on the softmax field:
the run warns and its verdict is undecided, where a step inside the interval follows the flow (the sphere's
counterpart: tests/sphere/test_stability.py)."""

import warnings

import numpy as np
import pytest
import torch

import attndyn
from attndyn import HypothesisWarning
from attndyn._softmax import unstable_step
from attndyn.analysis import softmax_geometry
from attndyn.cli import main

Z = np.random.default_rng(0).normal(size=(6, 2))


def test_v_minus_40_at_the_default_step_is_undecided_not_a_failed_collapse():
    """V = -40 I contracts at rate 40: rk4 at step 0.1 (h x rate = 4 > 2.785) blew the tokens up to 1e34 and said
    the collapse does NOT hold."""
    with pytest.warns(HypothesisWarning, match=r"step 0.1 is beyond rk4's stability interval .* use step <= 0.07 or"):
        bad = attndyn.softmax(Z, time=5.0, V=-40 * np.eye(2))
    rep = softmax_geometry(bad)
    assert rep.regime == "collapse" and rep.measured_holds is False and rep.holds is None
    assert rep.undecided.startswith("the step 0.1 is beyond rk4's stability interval") and "\x1e" not in rep.undecided
    assert float(bad.final_tokens.abs().max()) > 1e34  # what the unstable steps did (docs/engines.md: "past 1e34")
    with warnings.catch_warnings():
        warnings.simplefilter("error", HypothesisWarning)  # inside the interval (2.0 <= 2.785): no warning
        for run in (
            attndyn.softmax(Z, time=5.0, V=-40 * np.eye(2), step=0.05),
            attndyn.softmax(Z, time=5.0, V=-40 * np.eye(2), method="dopri5"),
        ):
            assert softmax_geometry(run).holds is True


def test_the_rate_sums_the_heads_and_layers_are_not_judged():
    V = torch.stack([torch.eye(2, dtype=torch.float64) * 20, torch.eye(2, dtype=torch.float64) * 20])
    with pytest.warns(HypothesisWarning, match=r"step x rate = 4 > 2.785 \(rate 40 = sum of \|\|V_h\|\|\)"):
        run = attndyn.softmax(Z, time=0.2, V=V)
    assert unstable_step(run.params) is not None
    layers = attndyn.softmax(Z, time=0.2, V=-40 * np.eye(2), method="discrete", step=0.01)  # a model of its own
    assert unstable_step(layers.params) is None


def test_the_command_line_warns_in_its_flags(capsys, tmp_path):
    np.save(tmp_path / "z.npy", Z)
    np.save(tmp_path / "V.npy", -40 * np.eye(2))
    assert main(["softmax", str(tmp_path / "z.npy"), "--V", str(tmp_path / "V.npy"), "--time", "5"]) == 0
    out, err = capsys.readouterr()
    assert err == (
        "warning: the step 0.1 is beyond rk4's stability interval for this field: step x rate = 4 > 2.785 (rate 40 = "
        "||V||), so the run can be integration error, in any dtype; use --step <= 0.07 or an adaptive --method "
        "(dopri5)\n"
    )
    assert "collapse: undecided" in out
