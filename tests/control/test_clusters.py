"""Cluster targets: every token ends with the leader named for it."""

import numpy as np
import pytest

import attndyn
from attndyn import InputError
from attndyn.control import choose_A_for_clusters
from attndyn.control._assign import final_owners

Z4 = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.5], [0.5, 0.6]])


@pytest.mark.parametrize("spd", [False, True])
def test_partition_reached_and_checked_by_the_engine(spd):
    if spd:
        pytest.importorskip("cvxpy")
    Z = np.array([[3.0, 0.0], [0.0, 3.0], [-3.0, -2.0], [1.5, 0.2], [0.1, 1.2], [-1.0, -0.2], [0.4, -0.8]])
    T = [0, 1, 2, 0, 1, 2, 2]
    res = choose_A_for_clusters(Z, T, spd=spd)
    assert res.reached and res.clusters_found == tuple(T)
    traj = attndyn.hardmax(Z, alpha=res.alpha, layers=res.layers, A=res.A, check_hypotheses=False)
    final = traj.final_tokens.numpy()
    for i, l in enumerate(T):  # independently: token i ends at leader l's position
        assert np.linalg.norm(final[i] - final[l]) < 1e-6
    assert res.record()["clusters_requested"] == T


def test_a_crossing_partition_is_not_reached():
    res = choose_A_for_clusters(Z4, [0, 1, 1, 0], spd=False)
    assert res.verdict == "not_reached" and res.trajectory is None and "best margin" in res.reason
    assert choose_A_for_clusters(Z4, [0, 1, 0, 1], spd=False).clusters_found == (0, 1, 0, 1)


def test_interior_leader_target_is_certified():
    res = choose_A_for_clusters([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]], [3, 3, 3, 3], spd=False)
    assert res.verdict == "not_reached" and res.certificates[0].token == 3


def test_final_owners():
    assert final_owners(np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 2.0]]), (0,)) == (0, 0, -1)


@pytest.mark.parametrize(
    "targets, match",
    [
        ([0, 1, 1], "targets has 3 entries for 4 tokens"),
        ([0, 1, 2, 7], r"targets \[7\] out of range"),
        ([0, 2, 1, 1], r"targets\[1\] = 2 but targets\[2\] = 1"),
        ("ab", r"targets must be a list of token indices \(integers\), got .ab."),
    ],
)
def test_malformed_targets(targets, match):
    with pytest.raises(InputError, match=match):
        choose_A_for_clusters(Z4, targets, spd=False)


def test_a_short_run_counts_tokens_that_followed_their_leader_throughout():
    Z = np.array([[3.0, 0.0], [0.0, 3.0], [-3.0, -2.0], [1.5, 0.2], [0.1, 1.2], [-1.0, -0.2], [0.4, -0.8]])
    T = [0, 1, 2, 0, 1, 2, 2]
    res = choose_A_for_clusters(Z, T, spd=False, layers=3)
    assert final_owners(res.trajectory.final_tokens.numpy(), (0, 1, 2)) != tuple(T)  # 3 layers close no gap
    assert res.reached and res.clusters_found == tuple(T)
