"""The sphere's cells in the one registry: pure functions of their parameters and seed; attndyn sweep runs them."""

from __future__ import annotations

import numpy as np
import pytest

from attndyn.experiments import EXPERIMENTS, get_experiment
from attndyn.experiments._run import run_cells
from attndyn.sphere import phase_diagram


def test_a_phase_cell_is_a_column_of_the_diagram():
    exp = get_experiment("sphere-phase")
    args = exp.arguments({"beta": 4.0, "time": 3.0, "systems": 8, "n": 6})
    row = exp(5, args)
    pd = phase_diagram(systems=8, n=6, betas=[4.0], time=3.0, checkpoints=2, seed=5)
    assert row["fraction_clustered"] == pd.fraction[0, -1] and row["clusters_median"] == pd.clusters[0, -1]
    assert exp(5, args) == row  # pure: the same seed, the same row


def test_energy_cells_hold_on_random_starts():
    rows = run_cells("sphere-energy", [(s, {"n": 8, "beta": 2.0, "time": 3.0}) for s in range(5)])
    assert [r["status"] for r in rows] == ["ok"] * 5
    assert all(r["energy_monotone"] for r in rows) and max(r["largest_drop"] for r in rows) < 1e-12


def test_attndyn_sweep_runs_and_resumes_a_phase_diagram(tmp_path):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from attndyn.sweep import read_rows, run_sweep

    spec = tmp_path / "phase.toml"
    spec.write_text(
        'experiment = "sphere-phase"\n[grid]\nbeta = [0.5, 6.0]\ntime = [1.0, 8.0]\n'
        "[monte_carlo]\nseeds = 2\n[fixed]\nsystems = 4\nn = 5\n"
    )
    first = run_sweep(spec, tmp_path / "out", workers=0, max_cells=3, progress=False)
    assert (first.ran, first.left) == (3, 5)
    rest = run_sweep(spec, tmp_path / "out", workers=0, progress=False)
    assert (rest.ran, rest.left) == (5, 0)
    rows = read_rows(tmp_path / "out")
    assert len(rows) == 8 and set(rows["status"]) == {"ok"}
    late = rows[rows["time"] == 8.0].groupby("beta")["fraction_clustered"].mean()
    assert late[0.5] > late[6.0]  # small beta clusters first: the diagram's shape
    assert "sphere-phase" in EXPERIMENTS and np.isfinite(rows["clusters_median"]).all()
