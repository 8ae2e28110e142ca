"""A sweep never answers wrongly (issue 26): canonical specs and cell identities, rows checked against them,
checksummed parts, failed solves recorded as failed, bounded planning."""

from __future__ import annotations

import json
import math
import tempfile
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attndyn import InputError
from attndyn.experiments import CellFailed, Experiment, Param, registered
from attndyn.sweep import SweepSpec, parse_spec, read_rows, run_sweep, summarize


def cheap(seed: int, *, a: int, b: str, c: bool, x: float) -> dict:
    """A cell that costs nothing and whose outputs depend on every parameter and the seed."""
    r = float(np.random.default_rng(seed).random())
    return {"y": r + a + x, "tag": f"{b}{int(c)}", "pos": r > 0.5}


CHEAP = Experiment(
    "cheap",
    cheap,
    {
        "a": Param(int, minimum=0, maximum=100),
        "b": Param(str, "x", choices=("z", "x", "y")),
        "c": Param(bool, False),
        "x": Param(float, 0.0, minimum=-1.0, maximum=1.0),
    },
    {"y": "float64", "tag": "string", "pos": "bool"},
    primary="pos",
)
GRID = {"a": [3, 1, 2], "b": ["y", "z"], "c": [True, False]}
QUIET = {"workers": 0, "log": lambda m: None}


@pytest.fixture(autouse=True)
def _cheap():
    with registered(CHEAP):
        yield


def spec_of(grid: dict, seeds: int = 3, **mc) -> SweepSpec:
    return parse_spec({"experiment": "cheap", "grid": grid, "monte_carlo": {"seeds": seeds, **mc}})


def rows_without_timing(out: Path):
    return read_rows(out, all_rows=True).sort_values("cell").drop(columns="seconds").reset_index(drop=True)


@st.composite
def reordered(draw):
    """GRID with its keys and each key's values in a random order."""
    keys = draw(st.permutations(list(GRID)))
    return {k: draw(st.permutations(GRID[k])) for k in keys}


@settings(max_examples=40, deadline=None)
@given(reordered())
def test_reordering_a_specs_keys_or_values_changes_neither_the_spec_nor_any_cell(grid):
    ref, spec = spec_of(GRID), spec_of(grid)
    assert spec.record() == ref.record() and list(spec.grid) == ["a", "b", "c"]
    assert spec.grid == {"a": (1, 2, 3), "b": ("z", "y"), "c": (False, True)}  # numbers up, choices' order
    for i in range(ref.n_cells):
        c, r = spec.cell(i), ref.cell(i)
        assert (c.seed, c.point) == (r.seed, r.point)
        assert spec.cell_id(c.seed, c.point) == ref.cell_id(r.seed, r.point)


@settings(max_examples=6, deadline=None)
@given(reordered(), st.integers(0, 35))
def test_a_sweep_resumed_with_its_keys_reordered_gives_the_rows_of_one_run(grid, first):
    with tempfile.TemporaryDirectory() as tmp:
        out, ref = Path(tmp) / "s", Path(tmp) / "ref"
        run_sweep(spec_of(GRID), out, max_cells=first, **QUIET)
        again = run_sweep(spec_of(grid), out, **QUIET)  # the same spec, written otherwise: accepted
        assert (again.done_before, again.ran, again.left) == (first, 36 - first, 0)
        run_sweep(spec_of(GRID), ref, **QUIET)
        rows = rows_without_timing(out)
        assert list(rows["cell"]) == list(range(36))  # every cell once: none twice, none missing
        assert rows.equals(rows_without_timing(ref))


def test_the_cell_id_is_the_values_and_the_seed_never_the_position():
    small, big = spec_of({"a": [2]}), spec_of({"a": [1, 2], "b": ["z", "x"]})
    c = small.cell(1)  # seed 1, a = 2 (b = x by default)
    same = next(d for d in big.cells() if d.seed == 1 and d.point == {"a": 2, "b": "x"})
    assert same.index != c.index and big.cell_id(same.seed, same.point) == small.cell_id(c.seed, c.point)
    key = json.dumps(
        {"experiment": "cheap", "params": {"a": 2, "b": "x", "c": False, "x": 0.0}},
        sort_keys=True,
        separators=(",", ":"),
    )
    import hashlib

    assert small.cell_id(1, {"a": 2}) == hashlib.sha256(f"{key}|1".encode()).hexdigest()[:32]
    assert small.cell_id(2, {"a": 2}) != small.cell_id(1, {"a": 2})


def test_cells_are_computed_from_their_number_and_match_the_product(tmp_path):
    spec = spec_of(GRID, seeds=2, first_seed=5)
    pts = [{"a": a, "b": b, "c": c} for a in (1, 2, 3) for b in ("z", "y") for c in (False, True)]
    assert spec.points == pts and spec.n_points == 12 and spec.n_cells == 24
    assert [(c.seed, c.point) for c in spec.cells()] == [(s, p) for s in (5, 6) for p in pts]


def test_planning_a_billion_cells_takes_no_memory_and_never_lists_the_points(tmp_path, monkeypatch):
    spec = spec_of({"a": [1, 2]}, seeds=500_000_000)
    assert spec.n_cells == 10**9
    monkeypatch.setattr(SweepSpec, "points", property(lambda self: pytest.fail("the runner listed the points")))
    tracemalloc.start()
    try:
        run = run_sweep(spec, tmp_path / "s", max_cells=10, **QUIET)
        again = run_sweep(spec, tmp_path / "s", max_cells=10, **QUIET)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (run.ran, run.left, again.done_before, again.left) == (10, 10**9 - 10, 10, 10**9 - 20)
    assert peak < 30e6, f"{peak / 1e6:.0f} MB traced while planning 10^9 cells"
    assert list(read_rows(tmp_path / "s")["cell"]) == list(range(20))


def nan_cell(seed: int, *, a: int) -> dict:
    if seed == 1:
        raise CellFailed("the solve diverged at t = 3")
    return {"v": math.nan if seed == 2 else float(a)}


def test_a_failed_computation_is_a_failed_cell_with_its_reason_never_ok_and_not_retried(tmp_path):
    exp = Experiment("nan_cell", nan_cell, {"a": Param(int, minimum=0, maximum=9)}, {"v": "float64"}, primary="v")
    with registered(exp):
        spec = parse_spec({"experiment": "nan_cell", "grid": {"a": [1]}, "monte_carlo": {"seeds": 3}})
        run = run_sweep(spec, tmp_path / "s", **QUIET)
        rows = read_rows(tmp_path / "s", all_rows=True)
        s = summarize(tmp_path / "s", write=False)
    assert (run.ran, run.failed) == (3, 2)
    assert list(rows["status"]) == ["ok", "failed", "failed"] and list(rows["attempts"]) == [1, 1, 1]
    assert list(rows["error"][1:]) == ["CellFailed: the solve diverged at t = 3", "CellFailed: output v is NaN"]
    assert rows["v"][1:].isna().all() and (s.table["cells_ok"][0], s.table["cells_failed"][0]) == (1, 2)


def test_table_1_with_a_solve_that_overflows_is_failed_not_ok_with_nan(tmp_path):
    spec = parse_spec(
        {
            "experiment": "table-1",
            "grid": {"regime": ["polytope"]},
            "monte_carlo": {"seeds": 1},
            "fixed": {"n": 6, "step": 10.0, "time": 1e4},
        }
    )
    run_sweep(spec, tmp_path / "s", **QUIET)
    (row,) = read_rows(tmp_path / "s").itertuples()
    assert row.status == "failed" and row.attempts == 1 and row.matches is None
    assert row.error.startswith("CellFailed: the solve failed: rk4 stopped: non-finite tokens at t=")
    table_1 = {"experiment": "table-1", "grid": {"regime": ["polytope"]}, "monte_carlo": {"seeds": 1}}
    with pytest.raises(InputError, match=r"fixed.time = 1e\+300 must be <= 10000.0 \(the range this experiment"):
        parse_spec({**table_1, "fixed": {"step": 1e300, "time": 1e300}})
    with pytest.raises(InputError, match=r"fixed.step = 1000.0 must be <= 10.0"):
        parse_spec({**table_1, "fixed": {"step": 1e3, "time": 1e4}})


@pytest.mark.parametrize(
    "mc, message",
    [
        ({"seeds": 1, "first_seed": 2**63 - 1}, r"first_seed = 9223372036854775807 with seeds = 1 goes past"),
        ({"seeds": 2**53 + 1}, r"seeds = 9007199254740993 must be an integer from 1 to 2\*\*53"),
        ({"seeds": 2**52, "first_seed": 2**52 + 1}, r"goes past the last seed, 2\*\*53 - 1"),
    ],
)
def test_seeds_are_bounded(mc, message):
    with pytest.raises(InputError, match=message):
        spec_of({"a": [1]}, **mc)


def test_every_numeric_parameter_of_the_shipped_experiments_has_a_declared_range():
    from attndyn.experiments import EXPERIMENTS

    for name in ("good-triple", "theorem-1.1", "table-1", "sentiment-leaders"):
        for pname, p in EXPERIMENTS[name].params.items():
            if p.kind in (int, float):
                assert p.minimum is not None and p.maximum is not None, f"{name}.{pname} has no range"
            elif p.kind is str and name != "sentiment-leaders":
                assert p.choices, f"{name}.{pname}"
    with pytest.raises(InputError, match=r"grid.d\[0\] = 12000 must be <= 1024"):
        parse_spec({"experiment": "good-triple", "grid": {"d": [12000]}, "monte_carlo": {"seeds": 1}})
    with pytest.raises(InputError, match=r"fixed.x = inf is not a finite number"):
        parse_spec({"experiment": "cheap", "grid": {"a": [1]}, "monte_carlo": {"seeds": 1}, "fixed": {"x": math.inf}})


# ---- rows read back are checked ------------------------------------------------------------------------------


@pytest.fixture
def three_parts(tmp_path):
    """A sweep of 36 cells stopped after 11, in parts of 4, 4 and 3 rows."""
    run_sweep(spec_of(GRID), tmp_path / "s", max_cells=11, chunk=1, batch=4, **QUIET)
    parts = sorted((tmp_path / "s" / "rows").glob("part-*.parquet"))
    assert len(parts) == 3
    return tmp_path / "s", parts


def _flip(path: Path, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[bit // 8] ^= 1 << (bit % 8)
    path.write_bytes(bytes(data))


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_every_single_bit_flip_of_a_part_is_refused_naming_the_part(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("flip")
    run_sweep(spec_of({"a": [1, 2]}), tmp / "s", **QUIET)
    (part,) = (tmp / "s" / "rows").glob("part-*.parquet")
    _flip(part, int(data.draw(st.floats(0, 1, exclude_max=True)) * 8 * part.stat().st_size))
    with pytest.raises(InputError, match=rf"'{part}' is damaged \(.*\); delete it and run the sweep again"):
        read_rows(tmp / "s")


def _rewrite(part: Path, change) -> Path:
    """The part with its rows changed by ``change(frame)``, written with a valid checksum in its name."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from attndyn._io import file_sha256

    table = pq.read_table(part)
    frame = change(table.to_pandas())
    pq.write_table(pa.Table.from_pandas(frame, schema=table.schema, preserve_index=False), part)
    new = part.with_name(f"{part.name[:12]}{file_sha256(part)[:16]}.parquet")
    part.rename(new)
    return new


def test_a_part_whose_rows_are_not_their_cells_is_refused(three_parts):
    out, parts = three_parts

    def swap_seed(f):
        f.loc[1, "seed"] = 7
        return f

    bad = _rewrite(parts[1], swap_seed)
    with pytest.raises(InputError, match=rf"'{bad}' is damaged \(its row of cell 5 is not cell 5 of this spec"):
        read_rows(out)


def test_a_cell_finished_twice_is_refused(three_parts):
    out, parts = three_parts
    import shutil

    copy = parts[0].with_name("part-000007-" + parts[0].name[12:])
    shutil.copy(parts[0], copy)
    with pytest.raises(InputError, match=rf"'{copy}' is damaged \(cell 0 is finished twice, here and in"):
        summarize(out, write=False)


def test_a_retried_failure_is_not_a_duplicate(three_parts):
    out, parts = three_parts

    def fail_all(f):
        f["status"], f["error"] = "error", "RuntimeError: lost"
        return f

    _rewrite(parts[0], fail_all)
    again = run_sweep(spec_of(GRID), out, retry_failed=True, max_cells=4, **QUIET)
    assert again.ran == 4 and len(read_rows(out, all_rows=True)) == 15 and len(read_rows(out)) == 11


def test_a_folder_of_the_older_format_and_a_damaged_spec_json_are_refused(three_parts):
    out, _ = three_parts
    record = json.loads((out / "spec.json").read_text())
    del record["format"]
    (out / "spec.json").write_text(json.dumps(record))
    with pytest.raises(InputError, match=r"spec.json' is of sweep format 1, not 2 .*; run the spec again into a new"):
        read_rows(out)
    for text, message in [
        ("[]", r"does not hold a sweep spec \(got \[\]\)"),
        ("{not json", r"spec.json' is damaged \(Expecting property name"),
        (
            '{"format": 2, "experiment": "cheap", "grid": {"a": [1]}}',
            r"not hold a valid sweep spec \(the spec has no \[monte_carlo\]",
        ),
    ]:
        (out / "spec.json").write_text(text)
        with pytest.raises(InputError, match=message):
            summarize(out, write=False)
        with pytest.raises(InputError, match=message):
            run_sweep(spec_of(GRID), out, **QUIET)


# ---- the lock, and two sweeps started at once -------------------------------------------------------------------


def test_a_fresh_folder_that_fails_to_be_written_is_removed_with_what_was_made_for_it(tmp_path, monkeypatch):
    from attndyn.sweep import _store as store

    def full_disk(path, obj):  # atomic_write removes its temporary file, then the error goes on
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(store, "write_json", full_disk)
    with pytest.raises(OSError, match="No space left"):
        run_sweep(spec_of(GRID), tmp_path / "a" / "b" / "s", **QUIET)
    assert list(tmp_path.iterdir()) == []  # the folders and the lock file are gone
    (tmp_path / "mine").mkdir()
    with pytest.raises(OSError, match="No space left"):
        run_sweep(spec_of(GRID), tmp_path / "mine", **QUIET)
    assert list(tmp_path.iterdir()) == [tmp_path / "mine"] and list((tmp_path / "mine").iterdir()) == []
