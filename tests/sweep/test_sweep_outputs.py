"""A cell's outputs are checked against their declared types when the cell finishes (API pass 2): None, NaN,
infinite and wrongly typed outputs make a failed cell with its reason, never an ok row of nonsense nor a batch
that Parquet refuses (which lost every unwritten row); and the sweep's entry points refuse bad input in one line."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attndyn import InputError
from attndyn.experiments import CellFailed, Experiment, Param, experiment, registered
from attndyn.experiments._registry import EXPERIMENTS, output_value
from attndyn.sweep import parse_spec, read_rows, run_sweep, summarize

QUIET = {"workers": 0, "log": lambda m: None}
CALLS: list[int] = []

BAD = {  # what seed k returns, beside ok = True and x = 1.0
    1: {"ok": None},
    2: {"x": None},
    3: {"x": math.nan},
    4: {"x": math.inf},
    5: {"ok": 1},  # an int for a bool
    6: {"ok": "yes"},
    7: {"x": 10**30},  # an int float64 cannot hold exactly
    8: {"n": 2**63},  # past int64
    9: {"tag": 3},
}
REASONS = {
    1: "CellFailed: output ok is None; return True or False (declared bool)",
    2: "CellFailed: output x is None; return a finite number (declared float64)",
    3: "CellFailed: output x is NaN",
    4: "CellFailed: output x = inf (float) is not a finite number (declared float64)",
    5: "CellFailed: output ok = 1 (int) is not True or False (declared bool)",
    6: "CellFailed: output ok = 'yes' (str) is not True or False (declared bool)",
    7: "CellFailed: output x = 1000000000000000000000000000000 is an integer that float64 cannot hold exactly; "
    "return float(x) to round it",
    8: "CellFailed: output n = 9223372036854775808 (int) is not an integer in [-2**63, 2**63) (declared int64)",
    9: "CellFailed: output tag = 3 (int) is not a string (declared string)",
}


def typed(seed: int, *, k: int) -> dict:
    """Numpy scalars and an exact int for a float are fine; the seeds of BAD return a bad output."""
    CALLS.append(seed)
    good = {"ok": np.bool_(seed % 2 == 0), "x": 2 if seed == 0 else np.float32(seed), "n": np.int32(seed), "tag": "t"}
    return {**good, "maybe": None, **BAD.get(seed, {})}


TYPED = Experiment(
    "typed",
    typed,
    {"k": Param(int, minimum=0, maximum=9)},
    {"ok": "bool", "x": "float64", "n": "int64", "tag": "string", "maybe": "float64"},
    primary="ok",
    optional=("maybe",),
)


def test_bad_outputs_fail_their_cell_with_the_reason_and_the_good_cells_are_written(tmp_path):
    CALLS.clear()
    with registered(TYPED):
        spec = parse_spec({"experiment": "typed", "grid": {"k": [1]}, "monte_carlo": {"seeds": 12}})
        run = run_sweep(spec, tmp_path / "s", batch=100, **QUIET)  # one batch: nothing may spoil it
        rows = read_rows(tmp_path / "s", all_rows=True).sort_values("seed")
        table = summarize(tmp_path / "s", write=False, plot=False).table
        again = run_sweep(spec, tmp_path / "s", **QUIET)
    assert (run.ran, run.failed, again.ran) == (12, 9, 0)
    assert sorted(CALLS) == list(range(12))  # not retried: they would fail again
    failed = rows[rows["status"] == "failed"]
    assert dict(zip(failed["seed"], failed["error"])) == REASONS
    assert (failed["attempts"] == 1).all() and failed[["ok", "x", "n", "tag"]].isna().all().all()
    ok = rows[rows["status"] == "ok"]
    assert list(ok["seed"]) == [0, 10, 11] and list(ok["ok"]) == [True, True, False]
    assert list(ok["x"]) == [2.0, 10.0, 11.0] and list(ok["n"]) == [0, 10, 11] and ok["maybe"].isna().all()
    assert (table["cells_ok"][0], table["cells_failed"][0], table["ok_count"][0]) == (3, 9, 2)


def test_a_cell_that_returns_none_for_everything_is_failed_not_ok(tmp_path):
    exp = Experiment(
        "nones", lambda seed, *, d: {"ok": None, "x": None}, {"d": Param(int)}, {"ok": "bool", "x": "float64"}, "ok"
    )
    with registered(exp):
        spec = parse_spec({"experiment": "nones", "grid": {"d": [2]}, "monte_carlo": {"seeds": 4}})
        run = run_sweep(spec, tmp_path / "s", **QUIET)
        rows = read_rows(tmp_path / "s", all_rows=True)
        t = summarize(tmp_path / "s", write=False, plot=False).table
    assert (run.ran, run.failed) == (4, 4) and set(rows["status"]) == {"failed"}
    assert (t["cells_ok"][0], t["cells_failed"][0], t["ok_count"][0]) == (0, 4, 0)


def test_output_value_is_strict_and_stores_python_values():
    assert output_value("x", "float64", np.float32(0.5)) == 0.5 and type(output_value("x", "float64", 3)) is float
    assert output_value("ok", "bool", np.bool_(True)) is True and type(output_value("n", "int64", np.uint8(7))) is int
    for kind, value in [("bool", 0), ("int64", 3.0), ("int64", True), ("float64", True), ("float64", -math.inf)]:
        with pytest.raises(CellFailed, match=rf"output v = .* is not .* \(declared {kind}\)"):
            output_value("v", kind, value)


def test_the_experiment_decorator_refuses_a_bad_declaration_in_one_line():
    with pytest.raises(
        InputError,
        match=r"experiment 'bad-type': output x has type 'float', which is not an output type; declare one of "
        r"'bool', 'int64', 'float64', 'string' \(float64 for a number\)",
    ):
        experiment("bad-type", params={}, outputs={"x": "float"}, primary="x")(lambda seed: {"x": 1.0})
    with pytest.raises(InputError, match=r"primary = 'y' is not an output; give one of x"):
        experiment("bad-primary", params={}, outputs={"x": "float64"}, primary="y")(lambda seed: {"x": 1.0})
    with pytest.raises(InputError, match=r"optional output 'z' is not an output; give some of x"):
        experiment("bad-optional", params={}, outputs={"x": "float64"}, primary="x", optional=("z",))(lambda s: {})
    assert not {"bad-type", "bad-primary", "bad-optional"} & set(EXPERIMENTS)


def test_run_sweep_takes_a_dict_and_refuses_other_specs_and_options(tmp_path):
    spec = {"experiment": "good-triple", "grid": {"d": [2]}, "monte_carlo": {"seeds": 2}}
    run = run_sweep(spec, tmp_path / "s", **QUIET)
    assert (run.ran, run.failed) == (2, 0) and len(read_rows(tmp_path / "s")) == 2
    with pytest.raises(InputError, match=r"spec = \[\] \(list\) is not a spec; give a SweepSpec, a dict such as"):
        run_sweep([], tmp_path / "t", **QUIET)
    with pytest.raises(InputError, match=r"flush_seconds must be a non-negative finite number, got -1"):
        run_sweep(spec, tmp_path / "t", flush_seconds=-1, **QUIET)
    with pytest.raises(InputError, match=r"the spec must be a table \(a dict of experiment, grid, .*got a list"):
        parse_spec([])
    assert not (tmp_path / "t").exists()
