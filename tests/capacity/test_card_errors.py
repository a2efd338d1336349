"""Cards that report hardware trouble drain themselves, on the real database: the operator's
signed report drains the card with a short notice, its sessions are given notice and paused,
super admins are told; a report repeated drains once, another cluster's operator is refused,
cards the cluster does not have are ignored, and malformed reports are refused."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

import httpx
from sqlalchemy import select

from gshare.capacity.models import Drain, GpuCard
from gshare.clusters.callbacks import key_ring_of
from gshare.events.models import Notification
from tests.builders import Builder
from tests.sessions.world import SessionWorld, admission_loop_turn, session_world

CARD = "GPU-00000"  # the world's first card


async def _report(
    w: SessionWorld,
    items: list[dict[str, Any]],
    *,
    as_cluster: uuid.UUID | None = None,
    path_cluster: uuid.UUID | None = None,
) -> httpx.Response:
    """The operator of `as_cluster` (the world's by default) reports card trouble."""
    build = w.build
    keys = await key_ring_of(build.app).get(build.clock.now())
    token = keys.mint(str(as_cluster or w.cluster_id), build.clock.now())
    return await build.anonymous().put(
        f"/internal/v1/clusters/{path_cluster or w.cluster_id}/card-errors",
        json={"items": items},
        headers={"Authorization": f"Bearer {token}"},
    )


def _xid(card: str = CARD, xid: int = 79, detail: str = "") -> dict[str, Any]:
    return {"card_uuid": card, "xid": xid, "kind": "xid", "detail": detail}


async def _drains(w: SessionWorld) -> list[tuple[Drain, str]]:
    async with w.build.sessions() as db:
        found = await db.execute(
            select(Drain, GpuCard.uuid)
            .join(GpuCard, GpuCard.id == Drain.card_id)
            .order_by(Drain.created_at, Drain.id)
        )
        return [(drain, card) for drain, card in found.all()]


async def _notifications(w: SessionWorld, user_id: uuid.UUID) -> list[Notification]:
    async with w.build.sessions() as db:
        found = await db.scalars(
            select(Notification)
            .where(Notification.user_id == user_id, Notification.kind == "card.drained.error")
            .order_by(Notification.created_at)
        )
        return list(found)


async def test_a_card_reporting_a_fatal_xid_drains_itself_and_super_admins_are_told(
    build: Builder,
) -> None:
    w = await session_world(build, n_cards=1)
    root = await build.user(super_admin=True)
    retired = await build.user(super_admin=True, active=False)
    victim = await w.running(0, "1/2")
    now = build.clock.now()
    answer = await _report(w, [_xid(detail="DCGM_FI_DEV_XID_ERRORS is 79 (was 0)")])
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"drained": 1}
    [(drain, card)] = await _drains(w)
    assert (card, drain.scope, drain.source, drain.status) == (CARD, "card", "xid", "active")
    assert drain.cluster_id == w.cluster_id
    assert drain.reason == "XID 79: the GPU has fallen off the bus"
    assert drain.deadline == now + timedelta(minutes=2)
    # The card takes no new session; the one on it is given notice, then paused and queued.
    later = await w.create(1, "1/2")
    assert later["state"] == "queued"
    await admission_loop_turn(w.build)
    seen = await w.read(0, victim["id"])
    assert seen["state"] == "running"
    assert (seen["notice"]["kind"], seen["notice"]["reason"]) == ("drain", "xid")
    build.clock.advance(timedelta(minutes=2))
    await admission_loop_turn(w.build)
    assert (await w.read(0, victim["id"]))["state"] == "resuming"
    assert (await w.read(1, later["id"]))["state"] == "queued"
    [told] = await _notifications(w, root.id)
    assert CARD in told.title
    assert "XID 79: the GPU has fallen off the bus" in told.body
    assert told.data["cards"][0]["card_uuid"] == CARD
    assert told.data["cards"][0]["reported"] == ["DCGM_FI_DEV_XID_ERRORS is 79 (was 0)"]
    assert await _notifications(w, retired.id) == []


async def test_the_same_report_twice_drains_the_card_once(build: Builder) -> None:
    w = await session_world(build, n_cards=2)
    root = await build.user(super_admin=True)
    trouble = [
        _xid(),
        {"card_uuid": CARD, "xid": None, "kind": "ecc_dbe", "detail": ""},
        {"card_uuid": "GPU-00001", "xid": None, "kind": "row_remap", "detail": ""},
    ]
    first = await _report(w, trouble)
    assert first.json() == {"drained": 2}
    again = await _report(w, trouble)
    assert again.status_code == 200
    assert again.json() == {"drained": 0}
    reasons = {card: drain.reason for drain, card in await _drains(w)}
    assert sorted(reasons) == [CARD, "GPU-00001"]
    assert reasons[CARD].startswith("XID 79: the GPU has fallen off the bus; double-bit ECC")
    assert reasons["GPU-00001"].startswith("a row remap failed")
    [told] = await _notifications(w, root.id)  # one notification for the report
    assert "2 cards" in told.title


async def test_two_reports_of_a_card_at_once_drain_it_once(build: Builder) -> None:
    w = await session_world(build, n_cards=1, users=1)
    answers = await asyncio.gather(*[_report(w, [_xid()]) for _ in range(4)])
    assert all(a.status_code == 200 for a in answers), [a.text for a in answers]
    assert sorted(a.json()["drained"] for a in answers) == [0, 0, 0, 1]
    assert len(await _drains(w)) == 1


async def test_another_clusters_operator_is_refused_and_names_none_of_its_cards(
    build: Builder,
) -> None:
    w = await session_world(build, n_cards=1)
    other = await build.cluster()
    refused = await _report(w, [_xid()], as_cluster=other.id)
    assert refused.status_code == 401
    # Its own path, naming this cluster's card: the card is not its to drain.
    ignored = await _report(w, [_xid()], as_cluster=other.id, path_cluster=other.id)
    assert ignored.status_code == 200, ignored.text
    assert ignored.json() == {"drained": 0}
    assert await _drains(w) == []


async def test_cards_the_cluster_does_not_have_are_ignored(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    root = await build.user(super_admin=True)
    answer = await _report(w, [_xid("GPU-nowhere"), _xid("GPU-00000-but-not-quite")])
    assert answer.status_code == 200, answer.text
    assert answer.json() == {"drained": 0}
    assert await _drains(w) == []
    assert await _notifications(w, root.id) == []


MALFORMED: dict[str, list[dict[str, Any]]] = {
    "too many items": [_xid()] * 1001,
    "a long detail": [_xid(detail="x" * 501)],
    "a control character in the detail": [_xid(detail="bell\x07")],
    "NUL in the card": [_xid(card="GPU-\x00")],
    "NUL in the detail": [_xid(detail="\x00")],
    "a long card": [_xid(card="G" * 129)],
    "an empty card": [_xid(card="")],
    "an XID without its code": [{"card_uuid": CARD, "xid": None, "kind": "xid", "detail": ""}],
    "a code without XID": [{"card_uuid": CARD, "xid": 79, "kind": "ecc_dbe", "detail": ""}],
    "a code too large": [{"card_uuid": CARD, "xid": 2**31, "kind": "xid", "detail": ""}],
    "an unknown kind": [{"card_uuid": CARD, "xid": 79, "kind": "fire", "detail": ""}],
    "an unknown field": [{**_xid(), "extra": 1}],
}


async def test_malformed_reports_are_refused(build: Builder) -> None:
    w = await session_world(build, n_cards=1, users=1)
    for what, items in MALFORMED.items():
        answer = await _report(w, items)
        assert answer.status_code == 422, (what, answer.text)
    assert await _drains(w) == []


async def test_standing_trouble_drained_for_before_is_not_drained_again(build: Builder) -> None:
    """An operator that restarts sees the XID its card still shows: a drain a super admin has
    ended since is not started again for it, while a new event is."""
    w = await session_world(build, n_cards=1)
    root = await build.signed_in(await build.user(super_admin=True))
    assert (await _report(w, [_xid()])).json() == {"drained": 1}
    [(drain, _)] = await _drains(w)
    assert (await root.post(f"/api/v1/drains/{drain.id}/end")).status_code == 200
    standing = {**_xid(), "standing": True}
    assert (await _report(w, [standing])).json() == {"drained": 0}
    # Standing trouble of another kind, or the same seen anew, drains the card.
    assert (await _report(w, [_xid()])).json() == {"drained": 1}
