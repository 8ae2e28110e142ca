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
    assert cert.record() == {
        "token": 0,
        "weights": {1: 0.5},
        "origin_weight": 0.5,
        "residual": 0.0,
        "spd": True,
        "zero_token": False,
    }
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


DOC_Z = [[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]]  # the docstrings' example: token 0 is the origin


def test_a_zero_token_never_leads_it_ties_with_every_token():
    """z_i = 0 scores 0 against every token for every A, so C_i is every token and i does not lead (n >= 2)."""
    assert leadable(DOC_Z) == [1, 2] and leadable(DOC_Z, spd=True) == [1, 2]
    for spd in (False, True):
        cert = never_leads(DOC_Z, 0, spd=spd)
        assert cert is not None and cert.zero_token and cert.check(DOC_Z)
        assert cert.record() == {
            "token": 0,
            "weights": {1: 1.0},
            "origin_weight": 0.0,
            "residual": 0.0,
            "spd": spd,
            "zero_token": True,
        }
        assert cert.sentence().startswith("token 0 is the zero vector")
        assert not cert.check([[1.0, 0.0], [2.0, 0.0], [0.0, 2.0], [0.5, 0.5]])  # not zero there: no proof
    rng = np.random.default_rng(3)
    for _ in range(50):
        A = torch.from_numpy(rng.standard_normal((2, 2)))
        assert not hardmax_step(torch.tensor(DOC_Z)[None], alpha=0.5, A=A).leader[0, 0]
    assert never_leads([[0.0, 0.0], [0.0, 0.0]], 1).weights.tolist() == [1.0, 0.0]  # all zero: no 0/0
    for spd in (False, True):  # the only token is its own unique maximiser: it leads
        assert never_leads([[0.0, 0.0]], 0, spd=spd) is None and leadable([[0.0, 0.0]], spd=spd) == [0]


def test_a_zero_target_is_refused_with_its_certificate():
    from attndyn.control import choose_A

    res = choose_A(DOC_Z, [0], spd=False, layers=5)
    assert res.verdict == "not_reached" and res.certificates[0].zero_token
    assert res.reason.startswith("token 0 is the zero vector")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: never_leads(DOC_Z, 7), r"token index i = 7 is out of range for 4 tokens; give 0 to 3"),
        (lambda: never_leads(DOC_Z, -1), r"token index i = -1 is out of range for 4 tokens"),
        (lambda: never_leads(DOC_Z, 1.5), r"i must be a token index \(an integer\), got 1.5"),
        (lambda: leadable([1.0, 2.0]), r"tokens must be one sequence of shape \(n, d\), got shape \(2,\)"),
        (
            lambda: leadable(np.zeros((2, 3, 2))),
            r"tokens must be one sequence of shape \(n, d\), got shape \(2, 3, 2\)",
        ),
        (lambda: never_leads([[1.0, np.nan]], 0), r"tokens contains NaN"),
    ],
)
def test_bad_input_is_named(call, match):
    from attndyn import InputError

    with pytest.raises(InputError, match=match):
        call()


def test_a_certificate_is_about_layer_0_only_and_the_refusal_says_so():
    # token 5 lies in the hull of tokens 2, 3 and 4 (so no A makes it lead at layer 0), yet under this SPD A it
    # leads from layer 1: choose_A's refusal must not claim that no A makes the target lead at all
    import warnings

    import attndyn
    from attndyn.control import choose_A

    Z = np.array([[2.5366441214319964, -1.4278565519369861], [0.2709608496501097, 0.7107438213949278],
                  [0.1712685346067944, 0.07017421946686193], [-0.32252985452248023, 1.1569945879815653],
                  [-1.7151649376547593, -1.0685159286712818], [-1.3315465903833874, -0.6410011019550628]])  # fmt: skip
    A = np.array([[0.5090214020893938, -0.82529192783467], [-0.82529192783467, 1.7664555991421498]])
    assert never_leads(Z, 5, spd=True) is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lead = attndyn.leaders(attndyn.hardmax(Z, alpha=0.5, layers=30, A=A))
    assert 5 in lead.indices and lead.since[lead.indices.index(5)] == 1
    res = choose_A(Z, [0, 5], spd=False)
    assert res.verdict == "not_reached" and "a token can still come to lead at a later layer" in res.reason


@pytest.mark.parametrize("offset", [1e-12, 1e-13, 1e-14])
def test_a_token_just_outside_the_hull_gets_no_certificate(offset):
    # 1e-13 off the segment of the other two: outside their hull, and an SPD A makes it lead (the engine proves it)
    Z = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5 + offset]])
    assert never_leads(Z, 2) is None and never_leads(Z, 2, spd=True) is None
    assert leadable(Z, spd=True) == [0, 1, 2]
    import attndyn

    A = np.diag([2.0, 1.0 / (0.5 + offset)])
    assert 2 in attndyn.leaders(attndyn.hardmax(Z, alpha=0.5, layers=5, A=A)).indices


def test_a_token_exactly_on_the_hull_keeps_its_certificate():
    Z = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [0.25, 0.75]])
    assert never_leads(Z, 2).record()["weights"] == {0: 0.5, 1: 0.5}
    cert = never_leads(Z, 3)
    assert cert is not None and cert.check(Z) and cert.residual == 0
    assert leadable(Z) == [0, 1]
