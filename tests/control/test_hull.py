"""What can never lead at layer 0: convex-weight certificates, checked against qhull and the engine."""

import numpy as np
import pytest
import torch
from scipy.spatial import ConvexHull

from attndyn import hardmax_step
from attndyn.control import leadable, never_leads


def test_certificates_are_valid_and_match_qhull_vertices():
    rng = np.random.default_rng(0)
    for _ in range(15):
        Z = rng.standard_normal((12, 2))
        vertices = set(ConvexHull(Z).vertices.tolist())
        assert set(leadable(Z)) == vertices
        for i in set(range(12)) - vertices:
            cert = never_leads(Z, i)
            assert cert is not None and cert.check(Z) and cert.origin_weight == 0.0
            assert cert.weights[i] == 0 and cert.weights.sum() == pytest.approx(1.0)


def test_a_certified_token_leads_for_no_matrix():
    rng = np.random.default_rng(1)
    Z = rng.standard_normal((10, 3))
    inside = [i for i in range(10) if never_leads(Z, i) is not None]
    assert inside
    for _ in range(200):
        A = torch.from_numpy(rng.standard_normal((3, 3)))
        lead = hardmax_step(torch.from_numpy(Z)[None], alpha=0.5, A=A).leader[0]
        assert not lead[inside].any()


def test_spd_certificates_use_the_origin():
    Z = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 3.0]])  # z_0 is a vertex, but between 0 and z_1
    assert never_leads(Z, 0) is None
    cert = never_leads(Z, 0, spd=True)
    assert cert is not None and cert.check(Z) and cert.origin_weight == pytest.approx(0.5)
    assert cert.record() == {"token": 0, "weights": {1: 0.5}, "origin_weight": 0.5, "residual": 0.0, "spd": True}
    assert "the hull of the other tokens and the origin" in cert.sentence()
    # no SPD matrix makes token 0 lead: <A z0, z0 - z1> = -<A z0, z0> < 0
    rng = np.random.default_rng(2)
    for _ in range(100):
        M = rng.standard_normal((2, 2))
        A = torch.from_numpy(M @ M.T + 1e-3 * np.eye(2))
        assert not hardmax_step(torch.from_numpy(Z)[None], alpha=1.0, A=A).leader[0, 0]
    assert leadable(Z, spd=True) == [1, 2] and leadable(Z) == [0, 1, 2]


def test_duplicates_and_a_forged_certificate():
    Z = np.array([[1.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])
    cert = never_leads(Z, 0)  # a copy of token 1 ties with it for every A
    assert cert is not None and cert.record()["weights"] == {1: 1.0}
    forged = type(cert)(token=0, weights=np.array([0.0, 0.5, 0.5]), origin_weight=0.0, residual=0.0, spd=False)
    assert not forged.check(Z)
