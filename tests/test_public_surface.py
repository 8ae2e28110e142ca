"""The public surface: what a user may import, counted.

Implementation modules are private (``_name.py``) behind a few faces, as in diffrax: the package
``__init__`` files and three core modules documented on their own. A face's ``__all__`` is its public
names; this test counts them over the faces and fails above :data:`CEILING` (a name added to a face must
be worth a place there), checks that every listed name exists, and that no two public classes or
registries share a name across the faces (one ``Experiment``, one ``EXPERIMENTS``). The count and the
ceiling are in CHANGELOG.md.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Mapping

import pytest

import attndyn

#: The public modules: every other module of the package has a private name or sits in a private package.
FACES = (
    "attndyn",
    "attndyn.attention",
    "attndyn.solvers",
    "attndyn.margins",
    "attndyn.analysis",
    "attndyn.sphere",
    "attndyn.control",
    "attndyn.plotting",
    "attndyn.sentiment",
    "attndyn.experiments",
    "attndyn.pretrained",
    "attndyn.reproduce",
    "attndyn.sweep",
    "attndyn.explore",
    "attndyn.cli",
)

#: At most this many public names over all the faces (234 when this was set: see CHANGELOG.md).
CEILING = 240


def _public_modules() -> list[str]:
    """Every module of the package whose dotted name has no private part."""
    out = []

    def walk(package) -> None:  # noqa: ANN001
        for info in pkgutil.iter_modules(package.__path__):
            if info.name.startswith("_"):
                continue
            name = f"{package.__name__}.{info.name}"
            out.append(name)
            if info.ispkg:
                walk(importlib.import_module(name))

    walk(attndyn)
    return sorted(out)


def _names(face: str) -> list[str]:
    return list(importlib.import_module(face).__all__)


def public_name_count() -> int:
    return sum(len(_names(face)) for face in FACES)


def test_every_public_module_is_a_face():
    assert sorted(set(_public_modules()) - set(FACES)) == []
    assert set(FACES) - {"attndyn"} <= set(_public_modules())


def test_the_faces_declare_at_most_the_ceiling_of_public_names():
    n = public_name_count()
    assert n <= CEILING, f"{n} public names over the faces, above the ceiling of {CEILING}: keep the new ones private"


@pytest.mark.parametrize("face", FACES)
def test_every_listed_name_exists_once(face):
    names = _names(face)
    assert len(names) == len(set(names)), f"{face}.__all__ lists a name twice"
    module = importlib.import_module(face)
    missing = [name for name in names if not hasattr(module, name)]
    assert missing == [], f"{face}.__all__ lists names it does not have"
    assert all(not name.startswith("_") for name in names)


def test_no_two_public_classes_or_registries_share_a_name():
    seen: dict[str, dict[int, str]] = {}
    for face in FACES:
        module = importlib.import_module(face)
        for name in _names(face):
            obj = getattr(module, name)
            if inspect.isclass(obj) or isinstance(obj, Mapping):
                seen.setdefault(name, {}).setdefault(id(obj), f"{face}.{name}")
                if inspect.isclass(obj) and obj.__name__ != name:
                    seen.setdefault(obj.__name__, {}).setdefault(id(obj), f"{face}.{name}")
    shared = {name: sorted(where.values()) for name, where in seen.items() if len(where) > 1}
    assert shared == {}


def test_a_shared_name_is_found(monkeypatch):
    """The check above can fail: two different classes named alike in two faces."""
    import attndyn.control as control
    import attndyn.sweep as sweep

    class Cell:  # not attndyn.sweep.Cell
        pass

    monkeypatch.setattr(control, "Cell", Cell, raising=False)
    monkeypatch.setattr(control, "__all__", [*control.__all__, "Cell"])
    with pytest.raises(AssertionError):
        test_no_two_public_classes_or_registries_share_a_name()
    assert sweep.Cell is not Cell
