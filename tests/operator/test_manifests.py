"""The pure manifest builders and HAMi's registration annotation."""

from __future__ import annotations

import uuid
from dataclasses import replace

from gshare.operator.crd import session_crd
from gshare.operator.inventory import Card, format_register, parse_register
from gshare.operator.manifests import (
    GPU,
    GPU_CORES,
    GPU_MEMORY,
    POD_HASH,
    USE_UUID,
    VGPU_MODE,
    GpuAssignment,
    OperatorConfig,
    SessionSpec,
    Volume,
    children,
    owner_reference,
    pod_matches,
)

CONFIG = OperatorConfig()
OWNER = owner_reference("s1", "uid-1")


def make_spec(**overrides: object) -> SessionSpec:
    fields: dict[str, object] = {
        "session_id": str(uuid.uuid4()),
        "owner_id": str(uuid.uuid4()),
        "session_type": "jupyterlab",
        "image": "registry.example/gshare/jupyterlab:1",
        "cpu_millicores": 2000,
        "memory_mib": 8192,
        "gpu": GpuAssignment(node="gpu-1", card_uuid="GPU-abc", vram_mib=20480, cores_percent=25),
        "volumes": (Volume(name="home", kind="home", mount_path="/home/gshare", size_gib=20),),
    } | overrides
    return SessionSpec(**fields)  # type: ignore[arg-type]


def by_kind(objects: list[dict]) -> dict[str, dict]:
    return {o["kind"]: o for o in objects}


def test_a_running_fractional_session_gets_every_child_with_hami_resources() -> None:
    spec = make_spec()
    objects = by_kind(children(spec, CONFIG, OWNER))
    assert set(objects) == {"PersistentVolumeClaim", "Pod", "Service", "Ingress", "NetworkPolicy"}
    pod = objects["Pod"]
    container = pod["spec"]["containers"][0]
    assert container["resources"]["limits"] == {
        "cpu": "2000m",
        "memory": "8192Mi",
        GPU: "1",
        GPU_MEMORY: "20480",
        GPU_CORES: "25",
    }
    assert pod["metadata"]["annotations"] == {
        USE_UUID: "GPU-abc",
        VGPU_MODE: "hami-core",
        POD_HASH: pod["metadata"]["annotations"][POD_HASH],
    }
    assert pod["spec"]["schedulerName"] == "hami-scheduler"
    assert pod["spec"]["nodeSelector"] == {"kubernetes.io/hostname": "gpu-1"}
    security = container["securityContext"]
    assert security["allowPrivilegeEscalation"] is False
    assert security["capabilities"] == {"drop": ["ALL"]}
    assert security["readOnlyRootFilesystem"] is True
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    for obj in objects.values():
        assert obj["metadata"]["ownerReferences"] == [OWNER]
        assert obj["metadata"]["namespace"] == "gshare-sessions"
    ingress = objects["Ingress"]
    assert ingress["spec"]["rules"][0]["host"] == f"{spec.session_id}.sessions.gshare.local"
    assert ingress["metadata"]["annotations"]["nginx.ingress.kubernetes.io/auth-url"].endswith(
        spec.session_id
    )
    policy = objects["NetworkPolicy"]["spec"]
    assert policy["ingress"][0]["from"] == [
        {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}
    ]
    out = [peer for rule in policy["egress"] for peer in rule["to"]]
    metadata = ["169.254.169.254/32", "100.100.100.200/32"]
    assert {"ipBlock": {"cidr": "0.0.0.0/0", "except": metadata}} in out
    assert all("podSelector" not in peer for peer in out)  # never other sessions' pods


def test_the_ingress_checks_every_request_and_sends_a_ticket_away_through_the_api() -> None:
    config = replace(
        CONFIG,
        auth_url="http://api.internal/internal/v1/session-access",
        signin_url="https://console.example.org/api/v1/session-entry",
    )
    spec = make_spec()
    ingress = by_kind(children(spec, config, OWNER))["Ingress"]
    notes = {
        key.removeprefix("nginx.ingress.kubernetes.io/"): value
        for key, value in ingress["metadata"]["annotations"].items()
    }
    assert {key: notes[key] for key in notes if key.startswith("auth-")} == {
        "auth-url": f"http://api.internal/internal/v1/session-access/{spec.session_id}",
        "auth-response-headers": "X-GShare-User",
        "auth-always-set-cookie": "true",
        "auth-method": "GET",
        "auth-signin": "https://console.example.org/api/v1/session-entry",
        "auth-signin-redirect-param": "rd",
    }


def test_a_mig_slice_uses_hami_mig_mode_without_core_limits() -> None:
    gpu = GpuAssignment(node="gpu-2", card_uuid="GPU-mig", vram_mib=10240, mig_profile="1g.10gb")
    pod = by_kind(children(make_spec(gpu=gpu), CONFIG, OWNER))["Pod"]
    assert pod["metadata"]["annotations"][VGPU_MODE] == "mig"
    assert GPU_CORES not in pod["spec"]["containers"][0]["resources"]["limits"]


def test_a_paused_session_keeps_only_its_volume() -> None:
    objects = children(make_spec(desired_state="Paused"), CONFIG, OWNER)
    assert [o["kind"] for o in objects] == ["PersistentVolumeClaim"]


def test_a_kept_home_volume_outlives_the_session() -> None:
    spec = make_spec(volumes=(Volume(name="home", kind="home", mount_path="/h", keep=True),))
    claim = by_kind(children(spec, CONFIG, OWNER))["PersistentVolumeClaim"]
    assert "ownerReferences" not in claim["metadata"]


def test_a_cpu_session_asks_for_no_gpu() -> None:
    pod = by_kind(children(make_spec(gpu=None), CONFIG, OWNER))["Pod"]
    assert GPU not in pod["spec"]["containers"][0]["resources"]["limits"]
    assert list(pod["metadata"]["annotations"]) == [POD_HASH]
    assert pod["spec"]["schedulerName"] == "hami-scheduler"


def test_hami_registration_round_trips_and_flags_bad_entries() -> None:
    cards = [Card(f"GPU-{i}", 10, 81920, 100, "NVIDIA-A100-SXM4-80GB", 0, i != 3) for i in range(4)]
    parsed = parse_register("gpu-1", format_register(cards))
    assert parsed.cards == tuple(cards)
    assert parsed.problems == ()
    broken = parse_register("gpu-1", "GPU-a,10,81920,100,A100,0,true:GPU-b,ten,1,1,A,0,true:x:")
    assert [c.uuid for c in broken.cards] == ["GPU-a"]
    assert len(broken.problems) == 2
    assert parse_register("n", None).cards == ()


def test_the_crd_is_structural_with_status_and_columns() -> None:
    crd = session_crd()
    version = crd["spec"]["versions"][0]
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]][:3] == [
        "Type",
        "Desired",
        "Phase",
    ]
    assert crd["metadata"]["name"] == "gsharesessions.gshare.io"


def test_a_pod_matches_only_the_spec_it_was_made_for() -> None:
    spec = make_spec()
    first = by_kind(children(spec, CONFIG, OWNER))["Pod"]
    again = by_kind(children(replace(spec, revision=7), CONFIG, OWNER))["Pod"]
    moved = replace(spec, gpu=GpuAssignment("node-b", "GPU-other", 20480, 25))
    other_card = by_kind(children(moved, CONFIG, OWNER))["Pod"]
    assert pod_matches(first, again)
    assert not pod_matches(first, other_card)
    # A pod made before pods were stamped is taken as the wanted one (no restart on upgrade).
    unstamped = {**first, "metadata": {**first["metadata"], "annotations": {}}}
    assert pod_matches(unstamped, other_card)
