"""Each verdict of the reproduce report tests the claim it names, with its threshold stated beside it."""

from __future__ import annotations

import re

import numpy as np
import pytest

from attndyn.analysis import radius_decay
from attndyn.reproduce._statistics import VERTEX_REDUCTION_MAX


def _check(result, prefix):
    (check,) = [c for c in result.checks if c.claim.startswith(prefix)]
    return check


def test_theorem_c5_verdict_is_the_fitted_decay_with_its_threshold(quick_report):
    res = quick_report["softmax-thmC.5"]
    ratio = _check(res, "radius at T = 20 over initial radius")
    assert ratio.passed is None  # one time shows no limit: informational
    at = _check(res, "radius r(t) = max_i |x_i(t)|_inf at t = ")
    radii = [float(v) for v in at.measured.split(", ")]
    assert len(radii) == 6 and all(np.diff(radii) < 0)
    fit = _check(res, "decay exponent p of r(t) ~ t^p")
    assert "pass: |p - (-0.5)| <= 0.1" in fit.paper
    p = float(re.match(r"(-?\d\.\d+) \(rms residual", fit.measured).group(1))
    assert fit.passed is (abs(p + 0.5) <= 0.1) is True
    assert res.params["decay_fit"]["exponent"] == pytest.approx(p, abs=5e-4)
    assert any("softmax_thmC5_radius" in f for ref in res.figures for f in ref.files)


def test_table1_polytope_vertices_are_compared_with_the_initial_hull(quick_report):
    res = quick_report["softmax-table1"]
    verts = res.params["polytope_vertices"]
    K, hull0 = np.array(verts["vertices_of_K"]), np.array(verts["vertices_of_initial_hull"])
    check = _check(res, "V = I: mean vertices of K")
    assert float(check.measured) == pytest.approx(K.mean(), abs=5e-3)
    assert f"at most {VERTEX_REDUCTION_MAX:g} x the mean vertices of conv(z_i(0)), {hull0.mean():.2f}" in check.paper
    assert check.passed is bool(K.mean() <= VERTEX_REDUCTION_MAX * hull0.mean())
    at = _check(res, "V = I: fraction of tokens at a vertex of K")
    assert at.paper.endswith("pass: 1") and at.passed is (at.measured == "1")


def test_every_judged_check_states_what_passes(quick_report):
    """The verdicts this session reworked say their threshold in the paper column."""
    for name, prefix in [
        ("softmax-thmC.5", "decay exponent"),
        ("softmax-table1", "V = I: mean vertices of K"),
        ("softmax-table1", "V = I: fraction of tokens"),
    ]:
        assert "pass:" in _check(quick_report[name], prefix).paper


def test_the_fit_would_reject_an_exponential_collapse():
    t = np.linspace(0.0, 20.0, 41)
    assert not radius_decay(t, 2.0 * np.exp(-0.3 * t)).matches


@pytest.mark.parametrize("name", ["softmax-thm3.1", "softmax-thm4.1", "softmax-conj4.2", "softmax-thm5.1"])
def test_a_softmax_section_shows_whether_its_run_has_settled(quick_report, name):
    # the theorems are limits and the checks read the tokens at the horizon: the library's own gate is shown
    row = _check(quick_report[name], "what the check reads has settled by the horizon")
    assert row.passed is None and (
        row.measured == "yes" or row.measured.startswith("no: undecided: what the check reads")
    )


def test_fig4_shows_how_boolean_p_is_beside_its_rank(quick_report):
    # rank <= 2 also holds for uniform attention (rank 1): the Boolean distance beside it tells clusters apart
    row = _check(quick_report["softmax-fig4"], "distance of P(T) to a Boolean matrix")
    assert row.passed is None and "uniform attention: 2(1 - 1/n) = 1.90" in row.paper and 0 <= float(row.measured) <= 2
