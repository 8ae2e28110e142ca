"""The experiment layer: samplers draw what their hypotheses say, the Wilson interval is the closed form at
the confidence asked for, reproduce and sweep share the per-instance checks, and the layer sits low."""

from __future__ import annotations

import ast
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import norm

import attndyn
from attndyn.analysis import is_good_triple, leading_direction
from attndyn.experiments import (
    EXPERIMENTS,
    ginibre_leading_count,
    random_orthogonal,
    random_spd,
    table1_instance,
    theorem_1_1_instance,
    token_cloud,
    wilson_interval,
)
from attndyn.experiments._cells import table1_solve, theorem_1_1_run

SHIPPED = ("good-triple", "sentiment-leaders", "sphere-energy", "sphere-phase", "table-1", "theorem-1.1")  # shipped


def _closed_form(k: int, n: int, c: float) -> tuple[float, float]:
    z = norm.ppf(0.5 + c / 2)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 500), frac=st.floats(0, 1), c=st.sampled_from([0.9, 0.95, 0.99]))
def test_wilson_interval_is_the_closed_form_at_the_level_asked(n, frac, c):
    k = round(frac * n)
    lo, hi = wilson_interval(k, n, confidence_level=c)
    elo, ehi = _closed_form(k, n, c)
    assert lo == (0.0 if k == 0 else pytest.approx(elo, abs=1e-12))
    assert hi == (1.0 if k == n else pytest.approx(ehi, abs=1e-12))
    # a higher level gives a wider interval
    lo99, hi99 = wilson_interval(k, n, confidence_level=0.999)
    assert lo99 <= lo and hi <= hi99


def test_wilson_interval_of_no_trials_is_nan_and_there_is_one_at_95_percent_by_default():
    assert all(math.isnan(v) for v in wilson_interval(0, 0, confidence_level=0.99))
    assert attndyn.experiments.wilson_interval is wilson_interval  # one function, in one public home
    assert not hasattr(attndyn.sweep, "wilson_interval")
    assert wilson_interval(14, 100) == wilson_interval(14, 100, confidence_level=0.95)
    assert wilson_interval(14, 100) != wilson_interval(14, 100, confidence_level=0.99)


@pytest.mark.parametrize("d", [2, 3, 5])
def test_table1_instances_satisfy_their_rows_hypotheses(d):
    rng = np.random.default_rng(d)
    for _ in range(5):
        m = table1_instance("polytope", rng, d)
        assert np.array_equal(m["V"], np.eye(d)) and np.linalg.eigvalsh(m["Q"].T @ m["K"]).min() > 0
        m = table1_instance("hyperplanes", rng, d)
        assert is_good_triple(m["Q"], m["K"], m["V"])
        assert np.abs(np.linalg.eigvals(m["V"])).max() == pytest.approx(1.0)
        m = table1_instance("paranormal", rng, d)
        ev = np.sort(np.linalg.eigvalsh(m["V"]))[::-1]
        assert np.allclose(m["V"], m["V"].T) and np.allclose(ev[:2], 1.0) and np.all(np.abs(ev[ev < 1 - 1e-9]) < 0.9)
        m = table1_instance("collapse", rng, d)
        assert np.array_equal(m["V"], -np.eye(d)) and np.allclose(m["Q"].T @ m["K"], np.eye(d))


def test_unknown_regime_and_ensemble_are_named():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="regime = 'cube' is not a row of Table 1; choose among polytope"):
        table1_instance("cube", rng, 3)
    with pytest.raises(ValueError, match="ensemble = 'gue' is not an ensemble; choose among ginibre"):
        attndyn.experiments.random_matrix(rng, 3, "gue")


def test_samplers_draw_their_laws():
    rng = np.random.default_rng(1)
    O = random_orthogonal(rng, 4)
    assert np.allclose(O @ O.T, np.eye(4))
    A = random_spd(rng, 4, cond_max=5.0)
    ev = np.linalg.eigvalsh(A)
    assert np.allclose(A, A.T) and ev.min() >= 1 - 1e-12 and ev.max() <= 5 + 1e-12
    z = token_cloud(rng, 50, 3)
    assert z.shape == (50, 3) and np.abs(z).max() <= 1
    # d = 1: a 1 x 1 matrix has a real, positive, simple leading eigenvalue iff its entry is positive
    assert ginibre_leading_count(np.random.default_rng(2), 1, 40) == int(
        (np.random.default_rng(2).standard_normal(40) > 0).sum()
    )
    assert leading_direction(np.eye(2)) is None  # a double eigenvalue is not simple


def test_theorem_1_1_cell_is_the_shared_instance_check():
    params = {"n": 7, "d": 2, "alpha": 0.8, "A": "spd", "cond_max": 10.0, "layers": 2000, "rtol": 1e-13}
    row = EXPERIMENTS["theorem-1.1"](5, params)
    rng = np.random.default_rng(5)
    z, A = theorem_1_1_instance(rng, 7, 2)
    assert np.array_equal(z, token_cloud(np.random.default_rng(5), 7, 2))  # tokens first, then A
    again, rep = theorem_1_1_run(z, A, alpha=0.8, layers=2000, rtol=1e-13)
    assert row == again and rep.holds and row["leaders"] == len(rep.leaders)


def test_table_1_cell_is_the_shared_solve_on_the_first_sequence():
    params = {"regime": "polytope", "n": 9, "d": 3, "time": 15.0, "collapse_time": 20.0, "step": 0.1}
    row = EXPERIMENTS["table-1"](2, params)
    rng = np.random.default_rng(2)
    mats = table1_instance("polytope", rng, 3)
    traj = table1_solve(rng.standard_normal((9, 3)), mats, "polytope", time=15.0, step=0.1)
    rep = attndyn.softmax_geometry(traj, 0, regime="polytope")
    assert rep.undecided is None
    assert row["matches"] == rep.measured_holds and row["vertices"] == rep.measured["vertices"]


def test_cells_never_store_an_undecided_verdict_as_a_measurement():
    """Pass 6, H1-H3: a run the library calls undecided (not converged, not settled) or a step that does not resolve
    the dynamics was stored as holds = False / matches = False / an energy decrease, with status ok: a failed
    cell now, with the reason."""
    from attndyn.experiments import CellFailed

    def cell(name: str, seed: int, **params: object) -> dict:
        exp = EXPERIMENTS[name]
        return exp(seed, exp.arguments(params))

    with pytest.raises(CellFailed, match="Theorem 1.1's check is undecided"):  # alpha small: 20 layers move little
        cell("theorem-1.1", 0, n=8, d=2, alpha=0.003, layers=20)
    with pytest.raises(CellFailed, match="the limit verdict is undecided: what the check reads"):
        cell("table-1", 2, regime="polytope", n=9, d=3, time=3.0, step=0.1)
    with pytest.raises(CellFailed, match=r"one rk4 step moved a token by .* lower step"):
        cell("sphere-energy", 0, n=16, d=3, beta=8.0, time=1.0, step=0.01)
    row = cell("sphere-energy", 0, n=16, d=3, beta=8.0, time=1.0, step=0.0005)
    assert row["energy_monotone"]  # the same system, resolved: the energy never decreases


# The packages the experiment layer may import (modules of the core are single files); sentiment only inside the
# sentiment-leaders cell, which reads a trained model (test_every_cell_registers_where_it_is_defined).
LOW = {"analysis", "sentiment", "sphere"}
HIGH = {"reproduce", "sweep", "pretrained", "plotting", "cli", "sentiment", "control", "explore", "experiments"}


def test_every_cell_registers_where_it_is_defined():
    # a fresh interpreter: importing the registry lists every shipped cell, without importing sweep or sentiment
    code = (
        "import sys, attndyn.experiments as e; print(sorted(e.EXPERIMENTS)); "
        "print(sorted(m for m in ('attndyn.sweep', 'attndyn.sentiment', 'sklearn') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [str(sorted(SHIPPED)), "[]"]


def test_the_experiment_layer_imports_only_the_core_and_analysis():
    root = Path(attndyn.__file__).parent / "experiments"
    bad = []
    for path in root.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):  # function-level imports too
            if isinstance(node, ast.ImportFrom) and node.level >= 2:
                tops = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
                bad += [f"{path.name}: {t}" for t in tops if t in HIGH - LOW]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attndyn."):
                bad.append(f"{path.name}: {node.module}")
    assert bad == []


def test_reproduce_monte_carlo_claims_name_registered_cells():
    from attndyn.reproduce import SECTIONS as CLAIMS

    cells = {name: exp.cell for name, exp in CLAIMS.items() if exp.cell is not None}
    assert cells == {
        "hardmax-theorem-1.1": "theorem-1.1",
        "softmax-table1": "table-1",
        "softmax-ginibre": "good-triple",
        "sphere-energy": "sphere-energy",
    }
    assert set(cells.values()) <= set(EXPERIMENTS)


def test_ginibre_count_is_the_good_triple_cell_with_identity_qk():
    # reproduce's softmax-ginibre counts what the good-triple cell decides, matrix by matrix
    for seed in range(30):
        row = EXPERIMENTS["good-triple"](seed, {"d": 4, "ensemble": "ginibre", "qk": "identity"})
        assert row["good"] == bool(ginibre_leading_count(np.random.default_rng(seed), 4, 1))


def test_run_cells_checks_every_cell_before_running_and_fills_defaults():
    from attndyn import InputError
    from attndyn.experiments._run import run_cells

    rows = run_cells("theorem-1.1", [(3, {"n": 6, "d": 2, "alpha": 0.5})])
    assert rows[0]["layers"] == 2000 and rows[0]["A"] == "spd" and rows[0]["status"] == "ok"
    direct = EXPERIMENTS["theorem-1.1"](3, {k: rows[0][k] for k in EXPERIMENTS["theorem-1.1"].params})
    assert {k: rows[0][k] for k in direct} == direct
    for bad, words in (({"n": 6, "d": 2}, "needs parameter 'alpha'"), ({"n": 0, "d": 2, "alpha": 1.0}, "cells[1].n")):
        with pytest.raises(InputError, match=re.escape(words)):
            run_cells("theorem-1.1", [(0, {"n": 6, "d": 2, "alpha": 1.0}), (1, bad)])


def test_a_cell_that_fails_is_a_row_not_a_traceback():
    from attndyn.experiments import CellFailed, Experiment, Param, registered
    from attndyn.experiments._run import run_cells

    def fn(seed, *, x):
        if x < 0:
            raise CellFailed("negative")
        if x == 0:
            raise ZeroDivisionError("x is zero")
        return {"y": 1.0 / x}

    exp = Experiment("reciprocal_test", fn, {"x": Param(float, minimum=-9, maximum=9)}, {"y": "float64"}, "y")
    with registered(exp):
        rows = run_cells("reciprocal_test", [(0, {"x": 2.0}), (1, {"x": -1.0}), (2, {"x": 0.0})])
    assert [(r["status"], r["y"]) for r in rows] == [("ok", 0.5), ("failed", None), ("error", None)]
    assert rows[2]["error"] == "ZeroDivisionError: x is zero"


def test_run_cells_on_a_dask_cluster_gives_the_same_rows():
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    from attndyn.experiments._run import run_cells

    cells = [(s, {"regime": r, "n": 8}) for s, r in enumerate(("polytope", "hyperplanes", "collapse"))]
    here = run_cells("table-1", cells)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            there = run_cells("table-1", cells, client=client, chunk=2)
    strip = lambda rows: [{k: v for k, v in r.items() if k != "seconds"} for r in rows]  # noqa: E731
    assert strip(here) == strip(there)
    assert [r["seed"] for r in there] == [0, 1, 2] and all(r["status"] == "ok" for r in there)


@pytest.mark.parametrize("row", ["boolean", "polytope", "hyperplanes", "paranormal", "collapse", "codimension"])
def test_table1_figures_value_matrices_fall_in_their_rows(row):
    from attndyn.analysis import regime_of
    from attndyn.experiments._configurations import TABLE1_HORIZONS, table1_value_matrix

    V = table1_value_matrix(row, np.random.default_rng(0))
    eye = np.eye(len(V))
    quick, full = TABLE1_HORIZONS[row]
    assert 0 < quick <= full
    if row == "codimension":  # Fig. 7a's V makes a good triple with Q = K = I: its regime is named, not inferred
        assert sorted(np.linalg.eigvals(V).real.round(6)) == [-0.22, 0.25, 1.96]
    else:
        assert regime_of(eye, eye, V) == row


def test_table1_value_matrix_names_a_bad_row_and_a_missing_generator():
    from attndyn.experiments._configurations import table1_value_matrix

    with pytest.raises(attndyn.InputError, match=r"^regime = 'cube' is not a row of Table 1; choose among boolean"):
        table1_value_matrix("cube")
    with pytest.raises(attndyn.InputError, match=r"^regime = 'codimension' draws V at random; give rng"):
        table1_value_matrix("codimension")


def test_sphere_phase_reads_gamma_on_the_curve_of_its_attention():
    """Pass 6, M2: the USA orthogonal start (n = 3, beta = 5) reaches 1 - delta at t = 0.30, but the cell read SA's
    curve (t = 17.6) and said False at t = 9; with random K^T Q no curve applies: None, not False."""
    exp = EXPERIMENTS["sphere-phase"]
    base = {"beta": 5.0, "time": 9.0, "systems": 2, "n": 3, "d": 3, "step": 0.1}
    assert exp(0, exp.arguments({**base, "attention": "usa"}))["gamma_reached"] is True
    assert exp(0, exp.arguments({**base, "attention": "sa"}))["gamma_reached"] is False
    kq = next(k for k in attndyn.sphere.KQ_ENSEMBLES if k != "identity")
    assert exp(0, exp.arguments({**base, "kq": kq}))["gamma_reached"] is None


@pytest.mark.parametrize(
    "args, kwargs, match",
    [
        ((2.7, 10), {}, r"k = 2\.7 must be a count"),
        ((3, 2), {}, "k must be at most n"),
        ((-1, 2), {}, r"k = -1 must be a count"),
        ((1, 2), {"confidence_level": 1.0}, "strictly between 0 and 1"),
        ((1, 2), {"confidence_level": 95}, "strictly between 0 and 1"),
    ],
)
def test_wilson_interval_refuses_what_is_not_a_count_or_a_level(args, kwargs, match):
    """Pass 6, L4: 2.7 successes were read as 2, a level of 1 gave (nan, nan) and k > n scipy's raw ValueError."""
    from attndyn import InputError
    from attndyn.experiments import wilson_interval

    with pytest.raises(InputError, match=match):
        wilson_interval(*args, **kwargs)
    assert wilson_interval(np.int64(3), np.int64(3))[1] == 1.0  # numpy counts are counts
