"""Control does not depend on the scale of the tokens: the answer for 2**k * Z is the answer for Z."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attndyn.control import choose_A, choose_A_for_clusters, leadable, never_leads
from attndyn.control._scale import unit_scale

SQUARE = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -1.0]])
RNG_TOKENS = np.random.default_rng(3).standard_normal((7, 2))


def _same(a, b, k):
    assert a.verdict == b.verdict and a.reason == b.reason
    assert np.array_equal(a.A, b.A) and a.margin == b.margin
    assert a.leaders_found == b.leaders_found and a.since == b.since
    if a.trajectory is not None:
        assert np.array_equal(np.ldexp(a.trajectory.ys.numpy(), k), b.trajectory.ys.numpy())
    assert [c.record()["weights"] for c in a.certificates] == [c.record()["weights"] for c in b.certificates]


def test_unit_scale_is_exact_and_the_same_bits_at_every_scale():
    Zs, e = unit_scale(RNG_TOKENS)
    for k in (-1000, -500, -1, 0, 7, 500, 1000):
        Zk, ek = unit_scale(np.ldexp(RNG_TOKENS, k))
        assert np.array_equal(Zk, Zs) and ek == e + k
    assert np.abs(Zs).max() >= 0.5 and np.abs(Zs).max() < 1.0
    assert unit_scale(np.zeros((2, 2)))[1] == 0


@pytest.mark.parametrize("scale", [1e-150, 1e-12, 1e-9, 1e150, 1e300])
def test_the_square_is_reached_at_any_scale(scale):
    """Issue 26: at scale 1e-150 an absolute tolerance gave a false hull certificate; at 1e300 scipy raised."""
    res = choose_A(SQUARE * scale, [0, 1, 2, 3], spd=False, layers=20)
    assert res.verdict == "reached" and res.leaders_found == (0, 1, 2, 3), res.reason
    assert res.margin == pytest.approx(np.sqrt(0.5))
    assert leadable(SQUARE * scale) == [0, 1, 2, 3]


@settings(max_examples=6, deadline=None)
@given(k=st.integers(-500, 500))
def test_choose_A_same_answer_for_2k_Z(k):
    for Z, S in ((SQUARE, [0, 2]), (RNG_TOKENS, leadable(RNG_TOKENS)[:2])):
        _same(choose_A(Z, S, spd=False, layers=20), choose_A(np.ldexp(Z, k), S, spd=False, layers=20), k)


@pytest.mark.parametrize("k", [-1000, -500, 500, 1000])
def test_extreme_powers_unreachable_and_clusters(k):
    Z = np.vstack([SQUARE, [[0.2, 0.1]]])
    _same(choose_A(Z, [4], spd=False, layers=10), choose_A(np.ldexp(Z, k), [4], spd=False, layers=10), k)
    T = [0, 1, 2, 3, 0]
    a = choose_A_for_clusters(Z, T, spd=False, layers=10)
    b = choose_A_for_clusters(np.ldexp(Z, k), T, spd=False, layers=10)
    _same(a, b, k)
    assert a.clusters_found == b.clusters_found


def test_random_tokens_times_1e_minus_12():
    Z = RNG_TOKENS
    S = leadable(Z)
    a, b = choose_A(Z, S, spd=False, layers=20), choose_A(Z * 1e-12, S, spd=False, layers=20)
    assert a.verdict == b.verdict and a.leaders_found == b.leaders_found
    assert leadable(Z * 1e-12) == S


def test_certificate_tolerance_is_relative():
    """A token outside the hull by 1e-6 of the scale is never certified inside, at any scale; inside, always."""
    for scale in (1e-200, 1e-8, 1.0, 1e200):
        out = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [0.5 + 1e-6, 0.5 + 1e-6]]) * scale
        assert never_leads(out, 3) is None
        inside = out.copy()
        inside[3] = [0.25 * scale, 0.25 * scale]
        cert = never_leads(inside, 3)
        assert cert is not None and cert.check(inside) and cert.residual <= 1e-15


def _circle(n):
    t = np.linspace(0, 2 * np.pi, n, endpoint=False)
    return np.stack([np.cos(t), np.sin(t)], axis=1)  # every token a hull vertex: nothing reduces


def test_the_constraint_count_of_a_refusal_is_the_whole_problem():
    """Issue 34 (10): the refusal named the count where it first crossed the limit (999,500 of 19,990,000)."""
    import re

    from attndyn import InputError
    from attndyn.control._invariant import invariant_preferences

    Z = _circle(80)
    owner = tuple(0 if i < 40 else 2 for i in range(80))
    total = len(invariant_preferences(Z, owner, 0.5, [0, 1, 2, 3], max_constraints=10**9))
    with pytest.raises(InputError, match=r"would have \d+ constraints") as err:
        invariant_preferences(Z, owner, 0.5, [0, 1, 2, 3], max_constraints=100)
    assert int(re.search(r"have (\d+) constraints", str(err.value))[1]) == total


def test_control_refuses_a_large_problem_with_its_full_count():
    from attndyn import InputError

    Z = _circle(200)
    with pytest.raises(InputError, match=r"would have \d+ constraints") as err:
        choose_A(Z, [0, 2], spd=False, layers=5, max_constraints=1000)
    import re

    shown = int(re.search(r"have (\d+) constraints", str(err.value))[1])
    assert shown >= 198 * 199  # at least "each of the 198 others does not lead", 199 alternatives each
