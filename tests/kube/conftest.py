"""A real control plane for the Kubernetes tests, started once per run."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gshare.devcluster import Cluster, a100_nodes, testenv_bin


@pytest.fixture(scope="session")
def kube() -> Iterator[Cluster]:
    folder = Path(tempfile.mkdtemp(prefix="gshare-kube-"))
    cluster = Cluster("test", folder / "a", testenv_bin()).start()
    try:
        cluster.add_gpu_nodes(a100_nodes(2, 4))
        cluster.add_volumes(60)
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="module")
def second_kube() -> Iterator[Cluster]:
    """Another, independent cluster: no nodes and no CRD until a test adds them."""
    folder = Path(tempfile.mkdtemp(prefix="gshare-kube-"))
    cluster = Cluster("second", folder / "b", testenv_bin()).start()
    try:
        yield cluster
    finally:
        cluster.stop()
