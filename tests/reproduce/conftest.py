from __future__ import annotations

import pytest

from attndyn.reproduce import reproduce


@pytest.fixture(scope="session")
def quick_report(tmp_path_factory):
    """One quick run of every experiment (the whole of `attndyn reproduce --quick`), shared by the tests."""
    out = tmp_path_factory.mktemp("reproduce") / "out"
    return reproduce(out=out, quick=True)
