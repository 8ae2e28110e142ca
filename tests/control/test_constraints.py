"""Score preferences are linear in A and agree with the engine's scores (hardmax eq. (1.1b))."""

import numpy as np
import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attndyn import attention
from attndyn.control._constraints import Preference, follows, follows_only, leads, margins, preference_rows
from attndyn.control._invariant import first_deviations, layer_schedule, positions

finite = st.floats(-3, 3, allow_nan=False, allow_infinity=False)


@settings(max_examples=40, deadline=None)
@given(
    arrays(np.float64, (5, 3), elements=finite),
    arrays(np.float64, (3, 3), elements=finite),
    st.integers(0, 4),
    st.integers(0, 4),
    st.integers(0, 4),
)
def test_margin_is_the_normalised_score_gap(Z, A, i, j, l):
    p = Preference(i, j, l, 0, Z)
    s = attention.scores(torch.from_numpy(Z)[None], torch.from_numpy(A))[0].numpy()  # s[i, j] = <A z_i, z_j>
    norm = np.linalg.norm(Z[i]) * np.linalg.norm(Z[j] - Z[l])
    if not Z[i].any() or np.array_equal(Z[j], Z[l]):  # the scores tie for every A (exactly, at any scale)
        assert p.margin(A) == -np.inf and not p.row().any()
        return
    assert p.row().any() and np.linalg.norm(p.row()) == pytest.approx(1.0)  # normalised even where |z| underflows
    assume(norm > 1e-6)
    assert p.margin(A) == pytest.approx((s[i, j] - s[i, l]) / norm, rel=1e-9, abs=1e-9)
    # linear in A: the row is G with <A, G> the margin
    assert float(preference_rows([p])[0] @ A.reshape(-1)) == pytest.approx(p.margin(A), rel=1e-9, abs=1e-9)


def test_leader_constraints_hold_exactly_when_the_engine_says_leader():
    rng = np.random.default_rng(3)
    for _ in range(20):
        Z, A = rng.standard_normal((7, 2)), rng.standard_normal((2, 2))
        s = Z @ A.T @ Z.T  # s[i, j] = <A z_i, z_j>
        for i in range(7):
            engine_leader = int(np.argmax(s[i])) == i and (s[i] < s[i, i]).sum() == 6
            assert (margins(A, leads(Z, i)) > 0).all() == engine_leader


def test_the_three_kinds_count_their_constraints():
    Z = np.arange(8.0).reshape(4, 2) + 1
    assert len(leads(Z, 1)) == 3 and len(follows(Z, 1, 2)) == 1 and len(follows_only(Z, 1, 2)) == 3
    assert {(p.j, p.l) for p in follows_only(Z, 1, 2)} == {(2, 0), (2, 1), (2, 3)}
    assert preference_rows([]).shape == (0, 0)


def test_invariant_positions_are_the_engine_positions_when_everyone_follows_its_leader():
    # three leaders at the corners, followers that follow only them under A = I
    import attndyn

    Z = np.array([[3.0, 0.0], [0.0, 3.0], [-3.0, -3.0], [2.0, 0.3], [0.2, 2.1], [-1.9, -2.0]])
    owner = (0, 1, 2, 0, 1, 2)
    traj = attndyn.hardmax(Z, alpha=0.7, layers=12, save=attndyn.SaveAt(every=1, follow=True))
    for k in range(13):
        assert np.allclose(traj.ys[k, 0].numpy(), positions(Z, owner, 0.7, k), atol=1e-12)
    assert first_deviations(traj.follow[:, 0].numpy(), owner, list(range(6))) == []
    assert first_deviations(traj.follow[:, 0].numpy(), (0, 1, 2, 1, 1, 2), [3]) == [(3, 0)]


def test_layer_schedule():
    assert layer_schedule(60, 0.5) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 32, 60]
    assert layer_schedule(3, 1.0) == [0, 1, 2, 3]
    assert layer_schedule(200, 1.0)[-1] == 200 and 128 not in layer_schedule(200, 1.0)  # 2^-128 adds nothing
