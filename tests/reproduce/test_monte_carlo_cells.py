"""reproduce's Monte Carlo claims are cells of the one registry of experiments: every instance is recomputed
from the seed and parameters the report records, and a dask scheduler gives the same report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attndyn.experiments import EXPERIMENTS as CELLS
from attndyn.reproduce import SECTIONS, reproduce

CLAIMS = ("hardmax-theorem-1.1", "softmax-table1", "softmax-ginibre")


def _rows(experiment: str, cells: list[dict]) -> list[dict]:
    exp = CELLS[experiment]
    return [exp(c["seed"], {k: v for k, v in c.items() if k != "seed"}) for c in cells]


def test_each_claim_names_the_cell_function_its_report_records(quick_report):
    for name in CLAIMS:
        params = quick_report[name].params
        assert SECTIONS[name].cell == params["experiment"] and params["experiment"] in CELLS


def test_theorem_1_1_claim_is_its_recorded_cells(quick_report):
    res = quick_report["hardmax-theorem-1.1"]
    rows = _rows("theorem-1.1", res.params["cells"])
    N = res.params["N"]
    assert len(rows) == N and len({c["seed"] for c in res.params["cells"]}) == N
    held = sum(r["holds"] for r in rows)
    assert res.checks[0].measured == f"{held / N:.3g} ({held}/{N})"
    lead, verts = np.mean([r["leaders"] for r in rows]), np.mean([r["vertices"] for r in rows])
    assert res.checks[1].measured == f"{lead:.2f} / {verts:.2f}"


def test_table1_claim_is_its_recorded_cells(quick_report):
    res = quick_report["softmax-table1"]
    rows = _rows("table-1", res.params["cells"])
    for regime, counts in res.params["rows"].items():
        mine = [r for r, c in zip(rows, res.params["cells"]) if c["regime"] == regime]
        assert counts == {"matching": sum(r["matches"] for r in mine), "decided": len(mine), "total": len(mine)}
    poly = [r for r, c in zip(rows, res.params["cells"]) if c["regime"] == "polytope"]
    assert res.params["polytope_vertices"]["vertices_of_K"] == [r["vertices"] for r in poly]


def test_ginibre_claim_is_its_recorded_seeds(quick_report):
    res = quick_report["softmax-ginibre"]
    good = sum(
        CELLS["good-triple"](s, {"d": 128, "ensemble": "ginibre", "qk": "identity"})["good"]
        for s in res.params["seeds"]
    )
    assert res.checks[0].measured.startswith(f"{good / res.params['N']:.3g} (")


def test_a_dask_scheduler_gives_the_same_claims(quick_report, tmp_path):
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        there = reproduce(out=tmp_path / "o", quick=True, only=CLAIMS, scheduler=cluster.scheduler_address)
    for name in CLAIMS:
        assert there[name].record()["checks"] == quick_report[name].record()["checks"]
        assert there[name].params == quick_report[name].params
    assert there.config.record()["scheduler"] == cluster.scheduler_address


def test_an_unreachable_scheduler_is_one_line(tmp_path):
    from attndyn.cli import main

    code = main(["reproduce", "--quick", "--only", "softmax-ginibre", "--out", str(tmp_path), "--scheduler", "nope"])
    assert code == 2


def test_a_table1_row_passes_on_its_decided_instances_with_few_undecided():
    """A cell whose tokens still move at the horizon is undecided, neither a match nor a counterexample: the row
    is judged on the others, and fails when more than a tenth of it is undecided (the horizon is then too short)."""
    from attndyn.reproduce._registry import Context
    from attndyn.reproduce._statistics import UNDECIDED_MAX, _row_check, _row_counts

    ok = {"status": "ok", "matches": True, "error": None}
    undecided = {"status": "failed", "matches": None, "error": "CellFailed: the limit verdict is undecided: ..."}
    solve = {"status": "failed", "matches": None, "error": "CellFailed: the solve failed: ..."}
    assert _row_counts([ok] * 98 + [undecided] * 2) == (98, 98)
    assert _row_counts([ok] * 99 + [solve]) == (99, 100)  # a failed solve is decided, and does not match
    ctx = Context(out=Path("unused"), quick=False)
    check = _row_check(ctx, "hyperplanes", 98, 98)
    assert check.passed and check.measured == "1 (98/98 decided; 2 undecided: params.failures)"
    assert not _row_check(ctx, "hyperplanes", 99, 100).passed
    too_few = round(100 * (1 - UNDECIDED_MAX)) - 1
    assert not _row_check(ctx, "hyperplanes", too_few, too_few).passed
