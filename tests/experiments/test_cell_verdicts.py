"""A cell whose numerics cannot carry its verdict is a failed cell, not an ok row (issue 34)."""

import pytest

from attndyn.experiments._registry import get_experiment
from attndyn.experiments._run import cell_row


def _name(old: str, new: str) -> str:
    """The cell's registered name: ``new`` once the hyphenated names are registered (old ones then warn)."""
    from attndyn.experiments import _registry as registry

    return new if new in getattr(registry, "RENAMED", {}).values() else old


@pytest.mark.parametrize("regime", ["polytope", "collapse"])
def test_a_table_1_step_that_does_not_resolve_the_dynamics_fails_the_cell(regime):
    exp = get_experiment(_name("table_1", "table-1"))
    row = cell_row(exp, 0, exp.arguments({"regime": regime, "step": 10.0}, "cell"))
    assert row["status"] == "failed" and row["matches"] is None
    assert "times their size: step = 10 does not resolve the dynamics" in row["error"]
    ok = cell_row(exp, 0, exp.arguments({"regime": regime, "step": 0.1}, "cell"))
    assert ok["status"] == "ok" and ok["matches"] is True
