"""The run loop both engines share (attndyn._loop), the typed run parameters, "converged" and "settled"."""

import ast
import dataclasses
import importlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import attndyn
from attndyn import SaveAt, StopOnConvergence
from attndyn._loop import Run, StepFailure
from attndyn._trajectory import HardmaxParams, SoftmaxParams
from attndyn.analysis._theorems import SETTLED_RTOL, SOFTMAX_SETTLED_RTOL
from attndyn.cli import main

hardmax_module = importlib.import_module("attndyn._hardmax")  # (attndyn.hardmax is the function)
SQUARE = [[1, 1], [-1, 1], [-1, -1], [1, -1], [0.3, 0.1], [-0.2, 0.5], [0.1, -0.6], [-0.5, -0.2]]


class Scripted:
    """A record whose step k moves every sequence by moves[k] (scale 1), failing at state ``fail``."""

    def __init__(self, moves, fail=None):
        self.moves, self.fail, self.seen, self.kept = moves, fail, [], []

    def observe(self, k, run):
        if k == self.fail:
            raise StepFailure(0.5, 0.25, "scripted failure")
        self.seen.append(k)
        return torch.tensor([self.moves[k]], dtype=torch.float64), torch.ones(1, dtype=torch.float64)

    def keep(self, k):
        self.kept.append(k)


def test_the_loop_keeps_what_save_asks_and_the_state_it_stops_at():
    moves = [2.0**-k for k in range(11)]
    rec = Scripted(moves)
    run = Run(SaveAt(every=3), StopOnConvergence(rtol=1 / 16), last=10, batch=1)
    run.loop(rec, description="test", progress=False)
    # 2**-4 = 1/16 is the first move <= rtol * scale: converged at step 4, which is kept although 4 % 3 != 0
    assert rec.seen == [0, 1, 2, 3, 4] and rec.kept == run.kept == [0, 3, 4]
    stats = run.stats(function_evals=5, message="m")
    assert (stats.steps, stats.converged, stats.converged_at, stats.stop_reason) == (4, True, (4,), "converged")
    assert stats.final_change == (1 / 16,)


def test_without_a_test_a_step_that_moves_nothing_converges_but_the_run_goes_on():
    rec = Scripted([1.0, 0.5, 0.0, 0.0, 0.0, 0.0])
    run = Run(SaveAt(every=None), None, last=5, batch=1)
    run.loop(rec, description="test", progress=False)
    assert rec.seen == [0, 1, 2, 3, 4, 5] and rec.kept == [0, 5]
    assert run.converged and run.converged_at.tolist() == [2] and run.stop_reason == "completed"
    unmoved = Run(SaveAt(), None, last=2, batch=1)
    unmoved.loop(Scripted([1.0, 1.0, 1e-300]), description="test", progress=False)
    assert not unmoved.converged and unmoved.converged_at.tolist() == [-1]


@pytest.mark.parametrize("first", [0, 63, 64, 65, 130, 199])
def test_without_a_test_the_first_unmoved_step_is_found_however_many_steps_are_held_back(first):
    """Without a stop test the steps are tested in batches (of 64) and when the run ends: the first step that moves
    nothing is converged_at whichever batch holds it, and final_change is the last step's move over its scale."""
    moves = [1.0] * first + [0.0] + [0.5, 0.0] * 100
    rec = Scripted(moves[:200])
    run = Run(SaveAt(every=None), None, last=199, batch=1)
    run.loop(rec, description="test", progress=False)
    assert len(run._pending) < 64  # held back in bounded batches: memory does not grow with the steps
    stats = run.stats(function_evals=200, message="")
    assert stats.converged_at == (first,) and stats.steps == 199 and stats.final_change == (moves[199],)


def test_a_failed_step_ends_the_run_and_keeps_the_last_state_reached():
    rec = Scripted([1.0] * 10, fail=5)
    run = Run(SaveAt(every=4), None, last=9, batch=1)
    run.loop(rec, description="test", progress=False)
    assert rec.kept == [0, 4] and run.k == 4  # state 4 was kept by save; nothing else to keep
    rec = Scripted([1.0] * 10, fail=7)
    run = Run(SaveAt(every=4), None, last=9, batch=1)
    run.loop(rec, description="test", progress=False)
    assert rec.kept == [0, 4, 6] and run.k == 6
    stats = run.stats(function_evals=7, message=run.message)
    assert (stats.stop_reason, stats.failed_at, stats.message) == ("solver_failed", (0.5, 0.25), "scripted failure")


def test_a_stopped_run_keeps_the_follow_sets_of_the_layer_it_stops_at():
    z = np.random.default_rng(4).standard_normal((3, 15, 2))
    stop = StopOnConvergence(rtol=1e-9)
    every = attndyn.hardmax(z, alpha=1.0, layers=300, stop=stop, save=SaveAt(follow=True))
    ends = attndyn.hardmax(z, alpha=1.0, layers=300, stop=stop, save=SaveAt(every=None, follow=True))
    assert ends.stats.stop_reason == "converged" and every.stats.steps == ends.stats.steps < 300
    assert ends.layers.tolist() == [0, ends.stats.steps]
    assert torch.equal(ends.follow[-1], every.follow[-1]) and torch.equal(ends.ys[-1], every.ys[-1])
    dyn = hardmax_module.HardmaxAttention(A=torch.eye(2, dtype=torch.float64), alpha=1.0)
    assert torch.equal(ends.follow[-1], dyn.follow_sets(ends.ys[-1]))


def test_run_parameters_are_typed():
    hard = attndyn.hardmax(SQUARE, alpha=0.25, layers=3, tol=1e-9)
    assert isinstance(hard.params, HardmaxParams)
    assert (hard.params.alpha, hard.params.tol, hard.params.layers) == (0.25, 1e-9, 3)
    assert torch.equal(hard.params.A, torch.eye(2, dtype=torch.float64))
    assert list(vars(hard.params)) == ["alpha", "A", "tol", "layers", "causal"]
    assert hard.params.causal is False
    assert hard.params == hard.params and hard.params != attndyn.hardmax(SQUARE, alpha=0.5, layers=3).params
    with pytest.raises(dataclasses.FrozenInstanceError, match="alpha"):
        hard.params.alpha = 1.0  # type: ignore[misc]
    V = np.array([[2.0, 0.0], [0.0, 1.0]])
    soft = attndyn.softmax(np.random.default_rng(0).standard_normal((6, 2)), time=1.0, V=V, step=0.3, rescaled=True)
    p = soft.params
    assert isinstance(p, SoftmaxParams) and list(vars(p)) == [
        "Q",
        "K",
        "V",
        "beta",
        "rescaled",
        "method",
        "step",
        "time",
        "causal",
    ]
    assert p.V.shape == (1, 2, 2) and torch.equal(p.V[0], torch.tensor(V)) and p.rescaled and p.method == "rk4"
    assert p.step == pytest.approx(0.25) and p.time == 1.0  # the grid actually used: 4 steps of 1/4
    assert soft.sequence(0).params is p


def test_run_parameters_as_a_mapping_still_work_but_are_deprecated():
    hard = attndyn.hardmax(SQUARE, alpha=0.25, layers=3, tol=1e-9)
    deprecated = r"as a mapping .* is deprecated .* read the field \(params.alpha\) or vars\(params\)"
    with pytest.warns(DeprecationWarning, match=deprecated):
        assert list(hard.params) == ["alpha", "A", "tol", "layers", "causal"]  # the former dict's keys, then causal
    with pytest.warns(DeprecationWarning, match=deprecated):
        assert hard.params["A"] is hard.params.A and hard.params.get("V") is None and "alpha" in hard.params
    with pytest.warns(DeprecationWarning, match=deprecated):
        assert dict(hard.params) == vars(hard.params) and len(hard.params) == 5
    with pytest.warns(DeprecationWarning, match=deprecated), pytest.raises(KeyError, match="V"):
        hard.params["V"]
    with pytest.raises(TypeError, match="does not support item assignment"):
        hard.params["alpha"] = 1.0  # type: ignore[index]


def test_converged_and_settled_agree_across_stats_report_and_json(tmp_path, capsys):
    rng = np.random.default_rng(7)
    batch = np.concatenate([np.array(SQUARE)[None], rng.standard_normal((2, 8, 2))])
    path = tmp_path / "tokens.npy"
    np.save(path, batch)
    seen = set()
    for layers in (2, 30, 200):
        traj = attndyn.hardmax(batch, alpha=0.5, layers=layers)
        assert main(["hardmax", str(path), "--json", "--layers", str(layers)]) == 0
        recs = json.loads(capsys.readouterr().out)["sequences"]
        for b, rec in enumerate(recs):
            one = traj.sequence(b)
            report = attndyn.hardmax_theorem(traj, b)
            settled = traj.stats.final_change[b] <= SETTLED_RTOL
            assert rec["converged"] == report.converged == one.stats.converged == rec["theorem"]["converged"]
            assert rec["settled"] == report.settled == settled == rec["theorem"]["settled"]
            assert rec["settled_rtol"] == report.settled_rtol == rec["theorem"]["settled_rtol"] == SETTLED_RTOL
            seen.add((rec["converged"], rec["settled"]))
    assert seen == {(False, False), (False, True), (True, True)}  # the two words do differ
    x = rng.standard_normal((2, 5, 2))
    np.save(path, x)
    traj = attndyn.softmax(x, time=10.0, rescaled=True, step=0.1)
    assert main(["softmax", str(path), "--json", "--rescaled"]) == 0
    for b, rec in enumerate(json.loads(capsys.readouterr().out)["sequences"]):
        assert rec["converged"] == traj.sequence(b).stats.converged
        assert rec["settled"] == (traj.stats.final_change[b] <= SOFTMAX_SETTLED_RTOL)
        assert rec["settled_rtol"] == SOFTMAX_SETTLED_RTOL


def test_human_output_names_both_verdicts(tmp_path, capsys):
    path = tmp_path / "square.npy"
    np.save(path, np.array(SQUARE, dtype=float))
    assert main(["hardmax", str(path)]) == 0
    out = capsys.readouterr().out
    assert "converged: False" in out and "settled (relative change of the last step <= 0.0001): True" in out


def test_the_theorem_reads_a_settled_run_with_a_stated_tolerance():
    traj = attndyn.hardmax(SQUARE, alpha=0.5, layers=30)
    change = traj.stats.final_change[0]
    assert 1e-7 < change < SETTLED_RTOL
    report = attndyn.hardmax_theorem(traj)
    assert report.settled and report.holds and not report.converged
    strict = attndyn.hardmax_theorem(traj, settled_rtol=change / 2)
    assert not strict.settled and not strict.holds and strict.record()["settled_rtol"] == change / 2
    with pytest.warns(DeprecationWarning, match=r"converged_rtol=\.\.\.\) is deprecated .* pass settled_rtol="):
        former = attndyn.hardmax_theorem(traj, converged_rtol=change / 2)
    assert not former.settled and former.settled_rtol == change / 2


def test_softmax_converged_without_a_test_means_the_last_step_moved_nothing():
    lone = attndyn.softmax([[1.0, 2.0]], time=1.0, rescaled=True)  # eq. (4): a lone token does not move
    assert lone.stats.final_change == (0.0,) and lone.stats.converged and lone.stats.converged_at == (10,)
    moving = attndyn.softmax([[1.0, 2.0], [0.5, -1.0]], time=1.0)
    assert moving.stats.final_change[0] > 0 and not moving.stats.converged


ENGINE_FILES = ["_loop.py", "_hardmax.py", "_softmax.py", "_dynamics.py", "_trajectory.py"]


@pytest.mark.parametrize("name", ENGINE_FILES)
def test_engine_functions_are_short(name):
    """No function of the engines is longer than 60 lines of code (its docstring aside)."""
    path = Path(attndyn.__file__).parent / name
    long = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            doc = node.body[0] if isinstance(node.body[0], ast.Expr) else None
            doc_lines = doc.end_lineno - doc.lineno + 1 if doc is not None else 0
            if node.end_lineno - node.lineno + 1 - doc_lines > 60:
                long.append(node.name)
    assert long == []
