"""The control figures read results; they never simulate."""

import importlib

import numpy as np
import pytest

from attndyn import InputError
from attndyn.control import choose_A
from attndyn.plotting import control_comparison, counterfactual_bars


def test_comparison_has_two_panels_with_the_leaders_in_the_titles(monkeypatch):
    res = choose_A([[2.0, 0.0], [0.0, 2.0], [-1.0, -1.5], [0.1, 0.2]], [1, 2], spd=False, layers=20)

    hm = importlib.import_module("attndyn._hardmax")  # the module (attndyn.hardmax is the function)
    for name in ("hardmax", "hardmax_step", "_hardmax_step"):
        monkeypatch.setattr(hm, name, lambda *a, **k: pytest.fail("a plot ran the dynamics"))
    monkeypatch.setattr(hm._HardmaxRecord, "observe", lambda *a, **k: pytest.fail("a plot ran the dynamics"))
    fig = control_comparison(res, title="t")
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[0].startswith("A = I: leaders [0, 1, 2]") and titles[1].startswith("chosen A: leaders [1, 2]")


def test_comparison_in_3d_and_without_a_run():
    rng = np.random.default_rng(0)
    Z = rng.standard_normal((8, 3))
    from attndyn.control import leadable

    res = choose_A(Z, leadable(Z)[:3], spd=False, layers=10)
    if res.trajectory is not None:
        assert [ax.name for ax in control_comparison(res).axes] == ["3d", "3d"]
    bad = choose_A([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]], [3], spd=False)
    with pytest.raises(InputError, match="no A was found"):
        control_comparison(bad)


def test_counterfactual_bars():
    fig = counterfactual_bars(["good", "bad", "plot"], [0.9, 0.1, 0.5], 0.6, reached=[True, True, False])
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["good", "bad", "plot"]
    with pytest.raises(InputError, match="2 words but 1 probabilities"):
        counterfactual_bars(["a", "b"], [0.5], 0.5)
