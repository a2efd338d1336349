"""The operator from the control plane's image, against the test cluster's API server: it makes
a session's children, as the operator process does, and ends cleanly on SIGTERM."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gshare.devcluster import Cluster
from tests.containers import container, image, read_only_as_user
from tests.eventually import eventually_sync
from tests.kube.test_operator import ALL, NAMESPACE, SESSIONS, _children, _session

pytestmark = pytest.mark.usefixtures("images")


def test_the_operator_image_reconciles_and_stops_on_sigterm(kube: Cluster, tmp_path: Path) -> None:
    kube.install_crd()
    kube.create_namespace(NAMESPACE)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kube.embedded_kubeconfig())
    kubeconfig.chmod(0o644)
    options = (
        *read_only_as_user(10001),
        "--network", "host",
        "--volume", f"{kubeconfig}:/etc/gshare/kubeconfig:ro",
        "--env", "KUBECONFIG=/etc/gshare/kubeconfig",
        "--env", f"GSHARE_OPERATOR_NAMESPACE={NAMESPACE}",
        "--env", "GSHARE_METRICS_PORT=0",
    )  # fmt: skip
    with container(image("gshare"), "operator", options=options) as operator:
        body = _session()
        name = body["metadata"]["name"]
        with kube.client() as client:
            assert client.post(SESSIONS, json=body).status_code == 201
            eventually_sync(
                lambda: set(_children(client, name)) == ALL,
                f"every child of the session\n{operator.logs()}",
                timeout=90,
            )
        assert operator.running()
        begun = time.monotonic()
        assert operator.stop(timeout_s=30) == 0, operator.logs()
        assert time.monotonic() - begun < 25, "it ended on SIGTERM, not on the SIGKILL after it"
