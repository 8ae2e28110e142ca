"""Shared pieces of the sweep tests: a module-scoped dask cluster (starting one takes seconds)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 worker processes (one thread each) and its client."""
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster) as c:
            c.wait_for_workers(2)
            yield c
