"""The runner without dask (workers=0): rows, resume, refusal of a changed spec, failures retried
once, summaries with Wilson intervals."""

from __future__ import annotations

import math

import numpy as np
import pytest

from attndyn import InputError
from attndyn.cli import main
from attndyn.cli._flags import FLAGS
from attndyn.experiments import Experiment, Param, registered, wilson_interval
from attndyn.sweep import parse_spec, read_folder_spec, read_rows, run_sweep, summarize

SPEC = {"experiment": "good-triple", "grid": {"d": [3, 6]}, "monte_carlo": {"seeds": 15}}


def measurement_columns(frame):
    return frame.drop(columns=["seconds"])


def test_rows_are_the_cell_functions_outputs(tmp_path):
    spec = parse_spec(SPEC)
    run = run_sweep(spec, tmp_path / "s", workers=0, log=lambda m: None)
    assert (run.total, run.ran, run.failed, run.left, run.done_before) == (30, 30, 0, 0, 0)
    rows = read_rows(tmp_path / "s")
    assert list(rows["cell"]) == list(range(30))
    assert (rows["status"] == "ok").all() and rows["error"].isna().all() and (rows["attempts"] == 1).all()
    for r in rows.itertuples():
        assert r.seed == r.cell // 2 and r.d == (3, 6)[r.cell % 2]
        want = spec.exp(r.seed, spec.params({"d": r.d}))
        assert (r.good, r.paranormal) == (want["good"], want["paranormal"])


def test_resume_skips_finished_cells_and_says_how_many_are_left(tmp_path):
    spec = parse_spec(SPEC)
    said = []
    first = run_sweep(spec, tmp_path / "s", workers=0, max_cells=11, chunk=1, batch=4, log=said.append)
    assert (first.ran, first.left) == (11, 19)
    assert len(list((tmp_path / "s" / "rows").glob("part-*.parquet"))) == 3  # batches of 4, 4, 3
    second = run_sweep(spec, tmp_path / "s", workers=0, log=said.append)
    assert (second.done_before, second.ran, second.left) == (11, 19, 0)
    assert "30 cells, 11 finished, 19 left" in said[2]
    whole = run_sweep(spec, tmp_path / "ref", workers=0, log=lambda m: None)
    assert whole.ran == 30
    a, b = read_rows(tmp_path / "s", all_rows=True), read_rows(tmp_path / "ref")
    assert a["cell"].is_unique
    assert measurement_columns(a.sort_values("cell").reset_index(drop=True)).equals(measurement_columns(b))


def test_a_changed_spec_is_refused_naming_the_difference(tmp_path):
    run_sweep(parse_spec(SPEC), tmp_path / "s", workers=0, max_cells=2, log=lambda m: None)
    changed = parse_spec({**SPEC, "grid": {"d": [3, 6, 9]}, "fixed": {"ensemble": "goe"}})
    with pytest.raises(
        InputError,
        match=r"holds a sweep of another spec \(grid.d: \[3, 6\] -> \[3, 6, 9\]; "
        r"fixed.ensemble: 'ginibre' -> 'goe'\); use a new out folder",
    ) as err:
        run_sweep(changed, tmp_path / "s", workers=0)
    assert "; use a new --out folder, or restore the spec" in err.value.worded(FLAGS)  # the command line's words
    with pytest.raises(InputError, match=r"monte_carlo.seeds: 15 -> 14\); a sweep's seeds may grow, not shrink"):
        run_sweep(parse_spec({**SPEC, "monte_carlo": {"seeds": 14}}), tmp_path / "s", workers=0)
    with pytest.raises(InputError, match=r"monte_carlo.seeds: 15 -> 16; monte_carlo.first_seed: 0 -> 1\); use"):
        run_sweep(parse_spec({**SPEC, "monte_carlo": {"seeds": 16, "first_seed": 1}}), tmp_path / "s", workers=0)
    with pytest.raises(InputError, match=r"grid.d: \[3, 6\] -> \[3\]; monte_carlo.seeds: 15 -> 16\); use"):
        run_sweep(parse_spec({**SPEC, "grid": {"d": [3]}, "monte_carlo": {"seeds": 16}}), tmp_path / "s", workers=0)


def test_a_sweep_grows_by_seeds_on_its_folder_and_its_rows_are_a_fresh_runs(tmp_path):
    more = parse_spec({**SPEC, "monte_carlo": {"seeds": 20}})
    run_sweep(parse_spec(SPEC), tmp_path / "s", workers=0, max_cells=7, log=lambda m: None)
    said: list[str] = []
    grown = run_sweep(more, tmp_path / "s", workers=0, log=said.append)
    assert (grown.done_before, grown.ran, grown.left) == (7, 33, 0)
    assert read_folder_spec(tmp_path / "s").record() == more.record()  # spec.json says what the rows are
    run_sweep(more, tmp_path / "ref", workers=0, log=lambda m: None)
    a, b = read_rows(tmp_path / "s"), read_rows(tmp_path / "ref")
    assert measurement_columns(a).equals(measurement_columns(b))
    with pytest.raises(InputError, match=r"monte_carlo.seeds: 20 -> 15\); a sweep's seeds may grow, not shrink"):
        run_sweep(parse_spec(SPEC), tmp_path / "s", workers=0)


def test_a_folder_that_is_not_a_sweep_is_refused(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match=r"is a folder that is not empty and holds no spec.json"):
        run_sweep(parse_spec(SPEC), tmp_path / "x", workers=0)


def test_a_folder_in_use_is_refused_and_a_lock_file_left_behind_blocks_nothing(tmp_path):
    import fcntl
    import json
    import os

    run_sweep(parse_spec(SPEC), tmp_path / "s", workers=0, max_cells=1, log=lambda m: None)
    lock = tmp_path / "s" / ".lock"
    assert lock.read_bytes() == b""  # taking the lock writes nothing
    fd = os.open(lock, os.O_RDWR)  # another holder of the flock (a second open file description)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(InputError, match=rf"is being written by process {os.getpid()}; wait for it to finish"):
            run_sweep(parse_spec(SPEC), tmp_path / "s", workers=0)
    finally:
        os.close(fd)
    # the holder is gone: a lock file left behind (by an older attndyn naming a dead process, or empty) is taken
    lock.write_text(json.dumps({"host": "here", "pid": 2**22 + 12345}))
    assert run_sweep(parse_spec(SPEC), tmp_path / "s", workers=0, max_cells=3, log=lambda m: None).ran == 3
    lock.write_text("")
    assert run_sweep(parse_spec(SPEC), tmp_path / "s", workers=0, log=lambda m: None).ran == 26


CALLS: list[tuple[int, int]] = []


def flaky(seed: int, *, k: int) -> dict:
    """Fails on seed 1 always, on seed 2 the first time only."""
    CALLS.append((seed, k))
    if seed == 1 or (seed == 2 and CALLS.count((seed, k)) == 1):
        raise ValueError(f"bad luck at seed {seed}\nsecond line")
    return {"y": float(seed * k)}


def threads_seen(seed: int, *, k: int) -> dict:
    """The torch and BLAS threads a cell runs with."""
    import torch
    from threadpoolctl import threadpool_info

    blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
    return {"torch": torch.get_num_threads(), "blas": max(blas, default=1)}


def test_cells_run_on_one_thread_and_the_callers_threads_come_back(tmp_path):
    import torch

    exp = Experiment("threads", threads_seen, {"k": Param(int)}, {"torch": "int64", "blas": "int64"}, primary="torch")
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        with registered(exp):
            spec = parse_spec({"experiment": "threads", "grid": {"k": [1]}, "monte_carlo": {"seeds": 2}})
            run_sweep(spec, tmp_path / "s", workers=0, log=lambda m: None)
            rows = read_rows(tmp_path / "s")
        assert list(rows["torch"]) == [1, 1] and list(rows["blas"]) == [1, 1]  # as on dask's workers
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_a_failing_cell_is_recorded_with_its_error_and_retried_once(tmp_path):
    CALLS.clear()
    exp = Experiment("flaky", flaky, {"k": Param(int)}, {"y": "float64"}, primary="y")
    with registered(exp):
        spec = parse_spec({"experiment": "flaky", "grid": {"k": [1, 10]}, "monte_carlo": {"seeds": 4}})
        run = run_sweep(spec, tmp_path / "s", workers=0, log=lambda m: None)
        rows = read_rows(tmp_path / "s", all_rows=True)
        assert (run.ran, run.failed) == (8, 2)
        assert rows["cell"].is_unique and len(rows) == 8
        bad = rows[rows["status"] == "error"]
        assert list(bad["seed"]) == [1, 1] and (bad["attempts"] == 2).all() and bad["y"].isna().all()
        assert (bad["error"] == "ValueError: bad luck at seed 1").all()  # one line
        retried = rows[(rows["seed"] == 2)]
        assert (retried["status"] == "ok").all() and (retried["attempts"] == 2).all()
        assert list(retried["y"]) == [2.0, 20.0]
        assert CALLS.count((1, 1)) == 2 and CALLS.count((0, 1)) == 1  # retried once, not more
        again = run_sweep(spec, tmp_path / "s", workers=0, log=lambda m: None)
        assert again.ran == 0  # failures are finished cells ...
        again = run_sweep(spec, tmp_path / "s", workers=0, retry_failed=True, log=lambda m: None)
        assert (again.ran, again.failed) == (2, 2)  # ... unless asked to retry them
        assert len(read_rows(tmp_path / "s", all_rows=True)) == 10 and len(read_rows(tmp_path / "s")) == 8
        summary = summarize(tmp_path / "s", write=False)
        assert list(summary.table["cells_ok"]) == [3, 3] and list(summary.table["cells_failed"]) == [1, 1]


def test_wilson_interval_matches_the_closed_form_and_covers():
    assert all(math.isnan(v) for v in wilson_interval(0, 0))
    lo, hi = wilson_interval(0, 20)
    assert lo == 0.0 and hi == pytest.approx(1.959964**2 / (20 + 1.959964**2), rel=1e-6)
    lo, hi = wilson_interval(20, 20)
    assert hi == 1.0 and lo == pytest.approx(20 / (20 + 1.959964**2), rel=1e-6)
    # coverage of the 95% interval for p = 0.14, n = 200, by exact binomial sum
    from scipy.stats import binom

    n, p = 200, 0.14
    cover = sum(binom.pmf(k, n, p) for k in range(n + 1) if wilson_interval(k, n)[0] <= p <= wilson_interval(k, n)[1])
    assert 0.93 <= cover <= 0.97


def test_summary_counts_fractions_and_writes_table_and_plot(tmp_path):
    spec = parse_spec({"experiment": "good-triple", "grid": {"d": [1, 4]}, "monte_carlo": {"seeds": 40}})
    run_sweep(spec, tmp_path / "s", workers=0, log=lambda m: None)
    rows = read_rows(tmp_path / "s")
    s = summarize(tmp_path / "s")
    t = s.table
    for d in (1, 4):
        k = int(rows.loc[rows["d"] == d, "good"].sum())
        r = t[t["d"] == d].iloc[0]
        assert r["cells_ok"] == 40 and r["good_count"] == k and r["good_frac"] == k / 40
        assert (r["good_lo"], r["good_hi"]) == wilson_interval(k, 40)
    assert set(s.files) == {"csv", "json", "png"} and all(p.stat().st_size > 0 for p in s.files.values())
    assert s.files["png"].read_bytes()[:4] == b"\x89PNG"
    assert "good-triple: 80 rows of 80 cells" in s.text()


def test_numeric_outputs_are_summarized_by_mean_and_interval(tmp_path):
    exp = Experiment(
        "gauss",
        lambda seed, *, mu: {"x": float(np.random.default_rng(seed).normal(mu))},
        {"mu": Param(float)},
        {"x": "float64"},
        primary="x",
    )
    with registered(exp):
        run_sweep(
            parse_spec({"experiment": "gauss", "grid": {"mu": [0, 5]}, "monte_carlo": {"seeds": 50}}),
            tmp_path / "s",
            workers=0,
            log=lambda m: None,
        )
        t = summarize(tmp_path / "s", plot=False).table
    xs = np.array([np.random.default_rng(s).normal(5.0) for s in range(50)])
    r = t[t["mu"] == 5.0].iloc[0]
    assert r["x_mean"] == pytest.approx(xs.mean())
    assert r["x_hi"] - r["x_mean"] == pytest.approx(1.959964 * xs.std(ddof=1) / math.sqrt(50), rel=1e-6)
    assert r["x_lo"] < 5.0 < r["x_hi"]


def test_cli_runs_resumes_and_summarizes(tmp_path, capsys):
    spec = tmp_path / "g.toml"
    spec.write_text('experiment = "good-triple"\n[grid]\nd = [2, 4]\n[monte_carlo]\nseeds = 10\n')
    out = tmp_path / "out"
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "0", "--max-cells", "5", "--no-progress"]) == 0
    assert "5 cells run (0 failed), 15 left of 20" in capsys.readouterr().out
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "0", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert "20 cells, 5 finished, 15 left" in captured.err and "15 cells run (0 failed), 0 left of 20" in captured.out
    assert main(["sweep", "summarize", str(out)]) == 0
    text = capsys.readouterr().out
    assert "good-triple: 20 rows of 20 cells" in text and "summary.png" in text
    spec.write_text('experiment = "good-triple"\n[grid]\nd = [2, 8]\n[monte_carlo]\nseeds = 10\n')
    assert main(["sweep", str(spec), "--out", str(out), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "grid.d: [2, 4] -> [2, 8]" in err


@pytest.mark.parametrize("ensemble, drawn", [("ginibre", True), ("goe", False)])
def test_plot_shows_the_papers_value_only_where_it_applies(tmp_path, ensemble, drawn):
    from attndyn.plotting._sweep import sweep_figure

    spec = parse_spec(
        {
            "experiment": "good-triple",
            "grid": {"d": [2, 4]},
            "monte_carlo": {"seeds": 6},
            "fixed": {"ensemble": ensemble},
        }
    )
    run_sweep(spec, tmp_path / "s", workers=0, log=lambda m: None)
    s = summarize(tmp_path / "s", write=False)
    ax = sweep_figure(s).axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert any("about 14%" in label for label in labels) == drawn
    ys = [line.get_ydata() for line in ax.get_lines() if line.get_marker() == "o"]
    assert np.allclose(ys[0], s.table["good_frac"])  # the plotted points are the summary's fractions


def test_summary_of_a_grid_with_a_parameter_named_n_and_points_without_rows(tmp_path):
    from attndyn.plotting._sweep import sweep_figure

    spec = parse_spec(
        {
            "experiment": "theorem-1.1",
            "grid": {"n": [2, 3], "alpha": [0.5, 1.0]},
            "monte_carlo": {"seeds": 3},
            "fixed": {"d": 1},
        }
    )
    run_sweep(spec, tmp_path / "s", workers=0, max_cells=3, log=lambda m: None)  # the last point has no row yet
    s = summarize(tmp_path / "s", write=False)
    assert list(s.table["n"]) == [2, 2, 3, 3] and list(s.table["cells_ok"]) == [1, 1, 1, 0]
    assert math.isnan(s.table["holds_frac"].iloc[3]) and math.isnan(s.table["leaders_mean"].iloc[3])
    assert len(sweep_figure(s).axes[0].get_lines()) >= 2  # one line per alpha, NaN points left out
    assert "-" in s.text().splitlines()[-1]


def test_an_optional_output_states_its_own_denominator_and_one_cell_has_no_interval(tmp_path):
    """Pass 6, L5: an optional bool measured in fewer cells than cells_ok gave count and frac without the number of
    cells that measured it (count / cells_ok read wrong), and one cell's mean printed as "[nan, nan]"."""
    exp = Experiment(
        "half",
        lambda seed, *, mu: {"x": float(seed), "b": None if seed % 2 else bool(seed % 4)},
        {"mu": Param(float)},
        {"x": "float64", "b": "bool"},
        primary="x",
        optional=("b",),
    )
    with registered(exp):
        run_sweep(
            parse_spec({"experiment": "half", "grid": {"mu": [0]}, "monte_carlo": {"seeds": 8}}),
            tmp_path / "s",
            workers=0,
            log=lambda m: None,
        )
        r = summarize(tmp_path / "s", plot=False).table.iloc[0]
        assert (r["cells_ok"], r["b_n"], r["b_count"], r["b_frac"], r["x_n"]) == (8, 4, 2, 0.5, 8)
        run_sweep(
            parse_spec({"experiment": "half", "grid": {"mu": [0]}, "monte_carlo": {"seeds": 1}}),
            tmp_path / "one",
            workers=0,
            log=lambda m: None,
        )
        text = summarize(tmp_path / "one", plot=False).text()
    assert "0.0000 (one cell)" in text and "nan" not in text
