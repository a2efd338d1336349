"""The operator reads Kubernetes objects that others can write: whatever shape they take, it
skips or reports what it cannot use, and what it sends is what the API accepts."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from gshare.capacity.schemas import InventoryReport
from gshare.operator.inventory import (
    MAX_CARDS_PER_NODE,
    Card,
    NodeInventory,
    format_register,
    parse_register,
)
from gshare.operator.report import inventory_body, session_id_of, status_body
from gshare.operator.spec import SpecError, spec_of
from gshare.sessions.schemas import StatusReport


def _card(n: int, **changes: Any) -> Card:
    values: dict[str, Any] = {
        "uuid": f"GPU-{n}",
        "split_count": 10,
        "memory_mib": 81920,
        "cores": 100,
        "model": "NVIDIA-A100",
        "numa": 0,
        "healthy": True,
    }
    return Card(**{**values, **changes})


def test_register_entries_the_api_would_refuse_are_skipped_and_named() -> None:
    good = _card(1)
    bad = [
        _card(2, memory_mib=2**31),
        _card(3, split_count=2**40),
        _card(4, uuid="G" * 129),
        _card(5, model="M" * 121),
        _card(1),  # announced twice
    ]
    inventory = parse_register("gpu-0", format_register([good, *bad]))
    assert inventory.cards == (good,)
    assert len(inventory.problems) == len(bad)
    many = parse_register("gpu-1", format_register([_card(n) for n in range(100)]))
    assert len(many.cards) == MAX_CARDS_PER_NODE
    assert any("more than" in p for p in many.problems)
    assert parse_register("gpu-2", 42).cards == ()  # type: ignore[arg-type]
    InventoryReport.model_validate(inventory_body([inventory, many], 1))


def test_a_card_announced_by_two_nodes_is_reported_once() -> None:
    card = _card(1)
    nodes = [
        NodeInventory("gpu-a", (card, _card(2))),
        NodeInventory("gpu-b", (card, _card(3))),
    ]
    body = inventory_body(nodes, 7)
    report = InventoryReport.model_validate(body)  # the API would refuse a card named twice
    assert [[c.uuid for c in n.cards] for n in report.nodes] == [
        ["GPU-1", "GPU-2"],
        ["GPU-3"],
    ]


@pytest.mark.parametrize(
    "status",
    [
        {"phase": "Exploded"},
        {"phase": None},
        {"phase": ["Running"]},
        {"phase": "Running", "observedGeneration": "abc"},
        {"phase": "Running", "observedGeneration": -1},
        {"phase": "Running", "observedGeneration": 2**63},
        {"phase": "Running", "observedGeneration": 1.5},
        {"phase": "Running", "observedGeneration": True},
        {"phase": "Running", "observedGeneration": {"a": 1}},
    ],
)
def test_statuses_that_cannot_be_reports_are_not_sent(status: dict[str, Any]) -> None:
    assert status_body(status) is None


def test_a_reported_status_is_one_the_api_takes() -> None:
    body = status_body({"phase": "Failed", "message": ["not", "text"], "observedGeneration": 3})
    assert body is not None
    assert body["message"] == ""
    StatusReport.model_validate(body)
    long = status_body({"phase": "Failed", "message": "x" * 5000})
    assert long is not None
    StatusReport.model_validate(long)


def test_only_uuid_session_ids_become_report_paths() -> None:
    good = str(uuid.uuid4())
    assert session_id_of(good) == good
    for bad in ("../../clusters/x/inventory", "", None, 5, good + "/x", "x" * 10_000):
        assert session_id_of(bad) is None


SPEC: dict[str, Any] = {
    "sessionId": "s-1",
    "ownerId": "u-1",
    "sessionType": "jupyterlab",
    "image": "jupyter/base",
    "cpuMillicores": 1000,
    "memoryMiB": 2048,
}


@pytest.mark.parametrize(
    "changes",
    [
        {"sessionId": None},
        {"sessionId": {"a": 1}},
        {"sessionType": "minecraft"},
        {"desiredState": "Exploded"},
        {"cpuMillicores": "lots"},
        {"memoryMiB": None},
        {"gpu": ["node"]},
        {"gpu": {"node": "n"}},
        {"volumes": {"a": 1}},
        {"volumes": ["home"]},
        {"volumes": [{"name": "h", "kind": "home", "mountPath": "/h", "sizeGiB": "big"}]},
    ],
)
def test_a_malformed_spec_is_a_spec_error(changes: dict[str, Any]) -> None:
    with pytest.raises(SpecError, match="the spec is not valid"):
        spec_of({**SPEC, **changes})
    assert spec_of(SPEC).session_id == "s-1"  # the spec without the change is fine
