"""Optional values the type checker made explicit: each missing one is a clear InputError, not a TypeError."""

import dataclasses

import numpy as np
import pytest
import torch

import attndyn
from attndyn import InputError
from attndyn.sentiment._model import word_leaders

SQUARE = [[1, 1], [-1, 1], [-1, -1], [1, -1], [0.2, 0.1]]


def test_leaders_of_a_hardmax_trajectory_without_leader_records():
    traj = attndyn.hardmax(SQUARE, alpha=0.5, layers=5)
    assert sorted(attndyn.leaders(traj).indices) == [0, 1, 2, 3]
    bare = dataclasses.replace(traj, leader_since=None)
    with pytest.raises(InputError, match=r"no leader record \(leader_since is None\); use one made by attndyn.hardmax"):
        attndyn.leaders(bare)


def test_hyperplanes_regime_needs_a_simple_positive_leading_eigenvalue():
    x = np.random.default_rng(0).standard_normal((6, 2))
    traj = attndyn.softmax(x, time=0.5, V=-np.eye(2), method="rk4", step=0.1, rescaled=True)
    assert attndyn.analysis.leading_direction(-np.eye(2)) is None  # no simple positive leading eigenvalue
    with pytest.raises(InputError, match=r"regime='hyperplanes' needs V's largest-modulus eigenvalue real, positive"):
        attndyn.softmax_geometry(traj, regime="hyperplanes")


def test_word_leaders_needs_follow_sets():
    z = torch.tensor([SQUARE], dtype=torch.float64)
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with_follow = attndyn.hardmax(z, alpha=0.5, layers=2, save=attndyn.SaveAt(every=1, follow=True))
    lead = word_leaders(with_follow, ids)
    assert lead.shape == (3, 1, 5) and lead[-1, 0].tolist() == [True, True, True, True, False]
    without = attndyn.hardmax(z, alpha=0.5, layers=2)
    with pytest.raises(
        InputError, match=r"word_leaders needs the follow sets: run hardmax with save=SaveAt\(follow=True\)"
    ):
        word_leaders(without, ids)
