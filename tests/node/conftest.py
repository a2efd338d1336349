"""One real node per run: a control plane of its own with a kubelet, containerd and runc on this
host (gshare.devnode), the session images copied into it, and the local-path provisioner."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from gshare import devnode
from gshare.devcluster import Cluster, testenv_bin
from gshare.operator.inventory import Card
from tests.containers import engine_env, image

A100 = "NVIDIA-A100-SXM4-80GB"
CARD = "GPU-real0-00-a100"


# Package-scoped: stopped once this folder's tests are done, not at the end of the run.
@pytest.fixture(scope="package")
def real_node(images: None) -> Iterator[devnode.RealNode]:
    reason = devnode.unavailable()
    if reason and not os.environ.get("CI"):
        pytest.skip(reason)
    assert reason is None, reason  # in CI, where root is given, a missing piece fails
    folder = Path(tempfile.mkdtemp(prefix="gshare-node-"))
    cluster = Cluster("node", folder / "cluster", testenv_bin()).start()
    node = devnode.RealNode(cluster, "node-real", [Card(CARD, 10, 81920, 100, A100, 0, True)])
    try:
        node.start()
        node.load_images(devnode.session_images(image), engine_env())
        node.start_provisioner(helper_image=image("session-terminal"))
        yield node
    finally:
        node.stop()
        cluster.stop()
