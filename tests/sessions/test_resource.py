"""The GShareSession resource the API renders for a session: exactly the spec the operator reads
back, within the CRD's schema, naming the card only while the session is wanted running."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gshare.operator.crd import SPEC_SCHEMA, UUID_PATTERN
from gshare.operator.manifests import (
    COMMANDS,
    GPU,
    GPU_CORES,
    GPU_MEMORY,
    USE_UUID,
    VGPU_MODE,
    GpuAssignment,
    OperatorConfig,
    SessionSpec,
    Volume,
    children,
    name_of,
    owner_reference,
)
from gshare.operator.report import session_id_of
from gshare.operator.spec import spec_of
from gshare.operator.utilization import GpuSessions
from gshare.sessions.resource import Card, Mount, claim_name, resource

SESSION = uuid.UUID("5d1c3a52-7f0e-4b7e-9a51-0c1d2e3f4a5b")
OWNER = uuid.UUID("0b8e1f2a-3c4d-4e5f-8a9b-c0d1e2f3a4b5")
HOME = uuid.UUID("11111111-2222-4333-8444-555555555555")
SHARED = uuid.UUID("66666666-7777-4888-9999-aaaaaaaaaaaa")
NAMESPACE = "gshare-sessions"

FRACTION = Card("gpu-1", "GPU-abc", vram_mib=20480, cores_percent=25, mig_profile=None)
WHOLE = Card("gpu-2", "GPU-whole", vram_mib=None, cores_percent=None, mig_profile=None)
MIG = Card("gpu-3", "GPU-mig", vram_mib=10240, cores_percent=14, mig_profile="1g.10gb")
MOUNTS = (
    Mount(HOME, "home", "/home/gshare", "ReadWriteOnce", 20),
    Mount(SHARED, "shared", "/data", "ReadOnlyMany", 500),
)


def render(
    *,
    desired_state: str = "Running",
    card: Card | None = FRACTION,
    mounts: Sequence[Mount] = MOUNTS,
    revision: int | None = None,
) -> dict[str, Any]:
    extra = {} if revision is None else {"revision": revision}
    return resource(
        session_id=SESSION,
        owner_id=OWNER,
        session_type="jupyterlab",
        image="registry.example/gshare/jupyterlab:1",
        cpu_millicores=2000,
        memory_mib=8192,
        desired_state=desired_state,
        card=card,
        mounts=mounts,
        namespace=NAMESPACE,
        **extra,
    )


def test_a_running_session_renders_its_whole_resource() -> None:
    assert render(revision=7) == {
        "apiVersion": "gshare.io/v1alpha1",
        "kind": "GShareSession",
        "metadata": {"name": f"session-{SESSION}", "namespace": NAMESPACE},
        "spec": {
            "revision": 7,
            "sessionId": str(SESSION),
            "ownerId": str(OWNER),
            "sessionType": "jupyterlab",
            "image": "registry.example/gshare/jupyterlab:1",
            "cpuMillicores": 2000,
            "memoryMiB": 8192,
            "desiredState": "Running",
            "volumes": [
                {
                    "name": "home-0",
                    "kind": "home",
                    "mountPath": "/home/gshare",
                    "accessMode": "ReadWriteOnce",
                    "sizeGiB": 20,
                    "claimName": f"vol-{HOME}",
                    "keep": True,
                },
                {
                    "name": "shared-1",
                    "kind": "shared",
                    "mountPath": "/data",
                    "accessMode": "ReadOnlyMany",
                    "sizeGiB": 500,
                    "claimName": f"vol-{SHARED}",
                    "keep": True,
                },
            ],
            "gpu": {"node": "gpu-1", "cardUUID": "GPU-abc", "vramMiB": 20480, "coresPercent": 25},
        },
    }


def test_the_revision_is_zero_unless_given() -> None:
    assert render()["spec"]["revision"] == 0
    assert render(revision=2**40)["spec"]["revision"] == 2**40


def test_a_paused_session_keeps_no_card_and_a_cpu_session_has_none() -> None:
    paused = render(desired_state="Paused")
    assert paused["spec"]["desiredState"] == "Paused"
    assert "gpu" not in paused["spec"]
    assert paused["spec"]["volumes"] == render()["spec"]["volumes"]
    cpu_only = render(card=None)
    assert cpu_only["spec"]["desiredState"] == "Running"
    assert "gpu" not in cpu_only["spec"]


def test_a_mig_slice_names_its_profile_and_never_its_cores() -> None:
    gpu = render(card=MIG)["spec"]["gpu"]
    assert gpu == {
        "node": "gpu-3",
        "cardUUID": "GPU-mig",
        "vramMiB": 10240,
        "migProfile": "1g.10gb",
    }


def test_a_whole_card_names_only_the_node_and_the_card() -> None:
    assert render(card=WHOLE)["spec"]["gpu"] == {"node": "gpu-2", "cardUUID": "GPU-whole"}


def test_a_volume_is_its_own_claim_kept_beyond_the_session() -> None:
    assert claim_name(HOME) == "vol-11111111-2222-4333-8444-555555555555"
    assert render(mounts=())["spec"]["volumes"] == []
    volumes = render(mounts=[*MOUNTS, Mount(SHARED, "shared", "/more", "ReadWriteMany", 1)])
    names = [v["name"] for v in volumes["spec"]["volumes"]]
    assert names == ["home-0", "shared-1", "shared-2"]
    assert all(v["keep"] is True for v in volumes["spec"]["volumes"])


def test_the_operator_reads_back_exactly_the_session_it_was_given() -> None:
    body = render(revision=3)
    spec = spec_of(body["spec"])
    assert spec == SessionSpec(
        session_id=str(SESSION),
        owner_id=str(OWNER),
        session_type="jupyterlab",
        image="registry.example/gshare/jupyterlab:1",
        cpu_millicores=2000,
        memory_mib=8192,
        desired_state="Running",
        gpu=GpuAssignment(node="gpu-1", card_uuid="GPU-abc", vram_mib=20480, cores_percent=25),
        volumes=(
            Volume(
                name="home-0",
                kind="home",
                mount_path="/home/gshare",
                access_mode="ReadWriteOnce",
                size_gib=20,
                claim_name=f"vol-{HOME}",
                keep=True,
            ),
            Volume(
                name="shared-1",
                kind="shared",
                mount_path="/data",
                access_mode="ReadOnlyMany",
                size_gib=500,
                claim_name=f"vol-{SHARED}",
                keep=True,
            ),
        ),
        revision=3,
    )
    assert name_of(spec) == body["metadata"]["name"]
    assert session_id_of(body["spec"]["sessionId"]) == str(SESSION)


def test_the_operator_runs_the_pod_on_exactly_the_card_and_claims_admission_chose() -> None:
    objects = children(spec_of(render()["spec"]), OperatorConfig(), owner_reference("s", "u"))
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for obj in objects:
        by_kind.setdefault(obj["kind"], []).append(obj)
    assert sorted(by_kind) == [
        "Ingress",
        "NetworkPolicy",
        "PersistentVolumeClaim",
        "Pod",
        "Service",
    ]
    (pod,) = by_kind["Pod"]
    assert pod["metadata"]["name"] == f"session-{SESSION}"
    annotations = pod["metadata"]["annotations"]
    assert {k: annotations[k] for k in (USE_UUID, VGPU_MODE)} == {
        USE_UUID: "GPU-abc",
        VGPU_MODE: "hami-core",
    }
    limits = pod["spec"]["containers"][0]["resources"]["limits"]
    assert {k: limits[k] for k in (GPU, GPU_MEMORY, GPU_CORES)} == {
        GPU: "1",
        GPU_MEMORY: "20480",
        GPU_CORES: "25",
    }
    claims = {v["persistentVolumeClaim"]["claimName"] for v in pod["spec"]["volumes"][2:]}
    assert claims == {f"vol-{HOME}", f"vol-{SHARED}"}
    made = {c["metadata"]["name"]: c for c in by_kind["PersistentVolumeClaim"]}
    assert set(made) == {f"vol-{HOME}", f"vol-{SHARED}"}
    # Kept: no owner reference, so deleting the session's resource leaves the volume.
    assert all("ownerReferences" not in c["metadata"] for c in made.values())


def test_a_paused_resource_leaves_only_its_volumes_in_the_cluster() -> None:
    objects = children(
        spec_of(render(desired_state="Paused")["spec"]), OperatorConfig(), owner_reference("s", "u")
    )
    assert sorted(o["metadata"]["name"] for o in objects) == [f"vol-{HOME}", f"vol-{SHARED}"]


def test_the_utilization_reader_follows_the_card_only_while_running() -> None:
    sessions = GpuSessions()
    fraction, whole, mig, paused = (str(uuid.UUID(int=n)) for n in range(1, 5))
    sessions.follow(fraction, render(card=FRACTION)["spec"])
    sessions.follow(whole, render(card=WHOLE)["spec"])
    sessions.follow(mig, render(card=MIG)["spec"])
    sessions.follow(paused, render(card=FRACTION, desired_state="Paused")["spec"])
    assert sessions.cards() == {"GPU-abc": [fraction], "GPU-whole": [whole], "GPU-mig": [mig]}
    assert sessions.cards(with_mig=False) == {"GPU-abc": [fraction], "GPU-whole": [whole]}
    assert sessions.whole_card() == {whole}


# ---- the CRD's schema ----------------------------------------------------------------------


def _fits(schema: dict[str, Any], value: Any, where: str = "spec") -> list[str]:
    """What the apiserver would refuse or prune in `value` under this structural schema (the
    keywords the CRD uses; its CEL rules are checked by the callers)."""
    kind: str = schema.get("type", "")
    wrong = {
        "object": not isinstance(value, dict),
        "array": not isinstance(value, list),
        "string": not isinstance(value, str),
        "integer": type(value) is not int,
        "boolean": type(value) is not bool,
    }
    if wrong.get(kind):
        return [f"{where}: not {kind}"]
    problems = []
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{where}: {value!r} not one of {schema['enum']}")
    if kind == "string":
        if "pattern" in schema and not re.search(schema["pattern"], value):
            problems.append(f"{where}: {value!r} does not match {schema['pattern']}")
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", 1e9):
            problems.append(f"{where}: length {len(value)} out of range")
    if kind == "integer" and not schema.get("minimum", -1e30) <= value <= schema.get(
        "maximum", 1e30
    ):
        problems.append(f"{where}: {value} out of range")
    if kind == "array":
        if len(value) > schema.get("maxItems", 1e9):
            problems.append(f"{where}: too many items")
        for i, item in enumerate(value):
            problems += _fits(schema["items"], item, f"{where}[{i}]")
    if kind == "object":
        properties = schema.get("properties", {})
        problems += [f"{where}.{k}: missing" for k in schema.get("required", []) if k not in value]
        problems += [
            f"{where}.{k}: not in the schema (pruned)" for k in value if k not in properties
        ]
        for k, v in value.items():
            if k in properties:
                problems += _fits(properties[k], v, f"{where}.{k}")
    return problems


def test_every_field_rendered_is_one_the_crd_declares_and_accepts() -> None:
    for card in (FRACTION, WHOLE, MIG, None):
        for desired in ("Running", "Paused"):
            assert _fits(SPEC_SCHEMA, render(card=card, desired_state=desired)["spec"]) == []
    assert re.fullmatch(UUID_PATTERN, str(SESSION))


def test_the_schema_check_itself_finds_what_the_apiserver_would_refuse() -> None:
    spec = render()["spec"]
    bad = spec | {"cpuMillicores": 50, "sessionType": "shell", "extra": 1}
    bad["gpu"] = spec["gpu"] | {"coresPercent": "25"}
    assert _fits(SPEC_SCHEMA, bad) == [
        "spec.extra: not in the schema (pruned)",
        "spec.sessionType: 'shell' not one of ['vscode', 'jupyterlab', 'terminal']",
        "spec.cpuMillicores: 50 out of range",
        "spec.gpu.coresPercent: not integer",
    ]


cards = st.none() | st.builds(
    Card,
    node=st.from_regex(r"[a-z][a-z0-9-]{0,20}", fullmatch=True),
    card_uuid=st.from_regex(r"GPU-[0-9a-f]{1,36}", fullmatch=True),
    vram_mib=st.none() | st.integers(1, 2**20),
    cores_percent=st.none() | st.integers(1, 100),
    mig_profile=st.none() | st.from_regex(r"[1-7]g\.[1-9][0-9]?gb", fullmatch=True),
)
mounts = st.lists(
    st.builds(
        Mount,
        volume_id=st.uuids(version=4),
        kind=st.sampled_from(["home", "shared"]),
        mount_path=st.from_regex(r"/[a-z0-9/_.-]{0,40}", fullmatch=True),
        access_mode=st.sampled_from(["ReadWriteOnce", "ReadWriteMany", "ReadOnlyMany"]),
        size_gib=st.integers(1, 16384),
    ),
    max_size=16,
)


@given(
    session_id=st.uuids(version=4),
    owner_id=st.uuids(version=4),
    session_type=st.sampled_from(sorted(COMMANDS)),
    cpu=st.integers(100, 256000),
    memory=st.integers(128, 4194304),
    desired=st.sampled_from(["Running", "Paused"]),
    card=cards,
    chosen=mounts,
    revision=st.integers(0, 2**63 - 1),
)
def test_any_session_round_trips_through_the_operator_within_the_schema(
    session_id: uuid.UUID,
    owner_id: uuid.UUID,
    session_type: str,
    cpu: int,
    memory: int,
    desired: str,
    card: Card | None,
    chosen: list[Mount],
    revision: int,
) -> None:
    body = resource(
        session_id=session_id,
        owner_id=owner_id,
        session_type=session_type,
        image="registry.example/img:1",
        cpu_millicores=cpu,
        memory_mib=memory,
        desired_state=desired,
        card=card,
        mounts=chosen,
        namespace=NAMESPACE,
        revision=revision,
    )
    assert _fits(SPEC_SCHEMA, body["spec"]) == []
    gpu_fields = body["spec"].get("gpu", {})
    assert not ("migProfile" in gpu_fields and "coresPercent" in gpu_fields)
    spec = spec_of(body["spec"])
    assert (spec.session_id, spec.owner_id) == (str(session_id), str(owner_id))
    assert (spec.session_type, spec.cpu_millicores, spec.memory_mib) == (session_type, cpu, memory)
    assert (spec.desired_state, spec.revision) == (desired, revision)
    assert name_of(spec) == body["metadata"]["name"] == f"session-{session_id}"
    if card is None or desired == "Paused":
        assert spec.gpu is None
    else:
        assert spec.gpu == GpuAssignment(
            node=card.node,
            card_uuid=card.card_uuid,
            vram_mib=card.vram_mib,
            cores_percent=None if card.mig_profile else card.cores_percent,
            mig_profile=card.mig_profile,
        )
    assert [
        (v.kind, v.mount_path, v.access_mode, v.size_gib, v.claim_name) for v in spec.volumes
    ] == [(m.kind, m.mount_path, m.access_mode, m.size_gib, f"vol-{m.volume_id}") for m in chosen]
    assert len({v.name for v in spec.volumes}) == len(chosen)
