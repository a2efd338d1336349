"""Bookings over HTTP on the real database: who may book for which group, the capacity and
policy checks with the moment or week that does not fit, edits and cancellation, what each
caller sees, the calendar, and hostile inputs, none of which may end in a 500."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select

from gshare.audit.models import AuditEntry
from gshare.capacity.models import Booking
from gshare.events.models import Event, Notification
from gshare.identity.models import Group, Organization, User
from tests.builders import Builder
from tests.capacity.builders import A100, CapacityWorld, admit, capacity_world

API = "/api/v1"


@dataclass
class World:
    capacity: CapacityWorld
    org: Organization
    group: Group
    root: httpx.AsyncClient
    admin: httpx.AsyncClient  # the group's admin
    member: httpx.AsyncClient
    member_user: User
    outsider: httpx.AsyncClient  # admin of a group in another organization
    outsider_group: Group
    start: datetime  # a Monday 09:00 UTC a week ahead

    def tier(self, name: str) -> str:
        return str(self.capacity.tiers[name].id)

    def body(self, tier: str = "exclusive", count: int = 1, **more: Any) -> dict[str, Any]:
        starts = more.pop("starts_at", self.start)
        ends = more.pop("ends_at", None)
        if ends is None:
            ends = starts + timedelta(hours=2) if isinstance(starts, datetime) else starts
        return {
            "group_id": str(more.pop("group_id", self.group.id)),
            "tier_id": self.tier(tier),
            "count": count,
            "starts_at": _iso(starts),
            "ends_at": _iso(ends),
            "title": more.pop("title", "Tuesday class"),
            **more,
        }


def _iso(moment: datetime | str) -> str:
    return moment if isinstance(moment, str) else moment.isoformat()


async def _world(build: Builder, n_cards: int = 4) -> World:
    now = build.clock.now()
    capacity = await capacity_world(build.sessions, now, n_cards=n_cards, users=1)
    async with build.sessions() as db:
        group = await db.get(Group, capacity.group_id)
        assert group is not None
        org = await db.get(Organization, group.org_id)
        assert org is not None
    admin_user = await build.user("Ada Admin")
    await build.member(admin_user, group)
    await build.group_admin(admin_user, group)
    member_user = await build.user("Mo Member")
    await build.member(member_user, group)
    other_org = await build.org("Elsewhere")
    outsider_group = await build.group(other_org, "Elsewhere lab")
    outsider = await build.user("Oz Outsider")
    await build.member(outsider, outsider_group)
    await build.group_admin(outsider, outsider_group)
    root = await build.signed_in(await build.user("Root", super_admin=True))
    monday = (now + timedelta(days=7)).replace(hour=9, minute=0, second=0, microsecond=0)
    monday -= timedelta(days=monday.weekday())
    if monday <= now:
        monday += timedelta(days=7)
    return World(
        capacity,
        org,
        group,
        root,
        await build.signed_in(admin_user),
        await build.signed_in(member_user),
        member_user,
        await build.signed_in(outsider),
        outsider_group,
        monday,
    )


def _error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code, response.text
    return error


async def test_a_group_admin_books_and_the_members_see_it_and_are_told(build: Builder) -> None:
    w = await _world(build)
    made = await w.admin.post(f"{API}/bookings", json=w.body(count=2, notice_minutes=5))
    assert made.status_code == 201, made.text
    booking = made.json()
    assert booking["count"] == 2
    assert booking["model"] == A100
    assert booking["tier_name"] == "exclusive"
    assert booking["group_name"] == w.group.name
    assert booking["notice_minutes"] == 5
    assert booking["can_manage"] is True
    assert booking["next_window"] == [booking["starts_at"], booking["ends_at"]]

    seen = (await w.member.get(f"{API}/bookings")).json()["items"]
    assert [(b["id"], b["can_manage"]) for b in seen] == [(booking["id"], False)]
    assert (await w.member.get(f"{API}/bookings/{booking['id']}")).status_code == 200
    # Another organization's admin neither lists nor reads it.
    assert (await w.outsider.get(f"{API}/bookings")).json()["items"] == []
    _error(await w.outsider.get(f"{API}/bookings/{booking['id']}"), 404, "booking_not_found")

    async with build.sessions() as db:
        told = set(
            await db.scalars(
                select(Notification.user_id).where(Notification.kind == "booking.changed")
            )
        )
        audited = list(
            await db.scalars(select(AuditEntry.action).where(AuditEntry.target_id == booking["id"]))
        )
        # Every console's calendar refreshes: an event to everyone, naming only the model.
        live = list(await db.scalars(select(Event).where(Event.kind == "booking.changed")))
    assert w.member_user.id in told
    assert audited == ["capacity.booking_created"]
    assert [(e.user_id, e.group_id, e.org_id, e.private, e.everyone, e.data) for e in live] == [
        (None, None, None, False, True, {"model": A100})
    ]


async def test_who_may_book_for_which_group(build: Builder) -> None:
    w = await _world(build)
    _error(await w.member.post(f"{API}/bookings", json=w.body()), 403, "forbidden")
    _error(await w.outsider.post(f"{API}/bookings", json=w.body()), 403, "forbidden")
    anonymous = build.anonymous()
    assert (await anonymous.post(f"{API}/bookings", json=w.body())).status_code == 401
    assert (await anonymous.get(f"{API}/bookings")).status_code == 401
    # An org admin books for any group of the organization; the super admin for any group.
    org_admin = await build.user("Olga Org")
    await build.org_admin(org_admin, w.org)
    olga = await build.signed_in(org_admin)
    assert (await olga.post(f"{API}/bookings", json=w.body())).status_code == 201
    other = w.body(group_id=w.outsider_group.id)
    assert (await w.root.post(f"{API}/bookings", json=other)).status_code == 201
    _error(
        await w.admin.post(f"{API}/bookings", json=w.body(group_id=uuid.uuid4())),
        404,
        "group_not_found",
    )
    _error(
        await w.admin.post(f"{API}/bookings", json={**w.body(), "tier_id": str(uuid.uuid4())}),
        404,
        "tier_not_found",
    )


async def test_a_booking_that_does_not_fit_names_the_first_moment_short(build: Builder) -> None:
    w = await _world(build, n_cards=4)
    first = await w.admin.post(f"{API}/bookings", json=w.body(count=3))
    assert first.status_code == 201, first.text
    # 9 quarter-card sessions fill 3 cards: 3 + 3 > 4 from the first booking's start.
    late = w.start + timedelta(hours=1)
    refused = await w.admin.post(
        f"{API}/bookings", json=w.body("1/4", 9, starts_at=late, ends_at=late + timedelta(hours=2))
    )
    error = _error(refused, 409, "booking_conflict")
    assert late.isoformat() in error["message"]
    checked = await w.admin.post(
        f"{API}/bookings/check",
        json=w.body("1/4", 9, starts_at=late, ends_at=late + timedelta(hours=2)),
    )
    assert checked.status_code == 200
    assert checked.json()["fits"] is False
    assert checked.json()["code"] == "booking_conflict"
    assert datetime.fromisoformat(checked.json()["at"]) == late
    # Back to back is no overlap; 4 quarter-card sessions fill one card, which is free.
    after = w.start + timedelta(hours=2)
    assert (
        await w.admin.post(f"{API}/bookings", json=w.body("1/4", 9, starts_at=after))
    ).status_code == 201
    assert (
        await w.admin.post(f"{API}/bookings", json=w.body("1/4", 4, starts_at=late))
    ).status_code == 201
    async with build.sessions() as db:
        assert len(list(await db.scalars(select(Booking)))) == 3


async def test_a_weekly_booking_conflicts_in_the_week_that_is_full(build: Builder) -> None:
    w = await _world(build, n_cards=2)
    week3 = w.start + timedelta(days=14)
    one_off = await w.admin.post(
        f"{API}/bookings",
        json=w.body(count=2, starts_at=week3 + timedelta(hours=1), title="Paper deadline"),
    )
    assert one_off.status_code == 201, one_off.text
    weekly = w.body(count=1, weekly_until=_iso(w.start + timedelta(days=60)))
    error = _error(await w.admin.post(f"{API}/bookings", json=weekly), 409, "booking_conflict")
    assert (week3 + timedelta(hours=1)).isoformat() in error["message"]
    # Until the week before, it fits.
    weekly["weekly_until"] = _iso(week3)
    made = await w.admin.post(f"{API}/bookings", json=weekly)
    assert made.status_code == 201, made.text
    assert made.json()["weekly_until"] is not None


async def test_the_organizations_horizon_and_weekly_card_hours_are_kept(build: Builder) -> None:
    w = await _world(build, n_cards=4)
    far = build.clock.now() + timedelta(days=91)
    _error(
        await w.admin.post(f"{API}/bookings", json=w.body(starts_at=far)), 422, "booking_too_far"
    )
    # Only the super admin sets the booking keys.
    keys = {"values": {"max_booked_card_hours_week": 5, "max_booking_days_ahead": 120}}
    org_admin = await build.user("Olga Org")
    await build.org_admin(org_admin, w.org)
    olga = await build.signed_in(org_admin)
    assert (await olga.put(f"{API}/policies/orgs/{w.org.id}", json=keys)).status_code == 403
    assert (await w.root.put(f"{API}/policies/orgs/{w.org.id}", json=keys)).status_code == 200
    assert (await w.admin.post(f"{API}/bookings", json=w.body(starts_at=far))).status_code == 201
    # 2 cards for 2 hours is 4 card-hours; another 2 would make 6 in the same week.
    assert (await w.admin.post(f"{API}/bookings", json=w.body(count=2))).status_code == 201
    later = w.start + timedelta(days=1)
    error = _error(
        await w.admin.post(f"{API}/bookings", json=w.body(count=1, starts_at=later)),
        409,
        "booking_quota",
    )
    assert "6.0" in error["message"]
    # The next week is another week.
    assert (
        await w.admin.post(f"{API}/bookings", json=w.body(starts_at=w.start + timedelta(days=7)))
    ).status_code == 201


async def test_a_booking_is_edited_before_it_starts_and_cancelled_once(build: Builder) -> None:
    w = await _world(build, n_cards=2)
    made = (await w.admin.post(f"{API}/bookings", json=w.body(count=1))).json()
    other = (await w.admin.post(f"{API}/bookings", json=w.body(count=1, title="Second"))).json()
    url = f"{API}/bookings/{made['id']}"
    # Two cards, both booked: growing one is checked beside the other, not itself.
    _error(await w.admin.patch(url, json={"count": 2}), 409, "booking_conflict")
    _error(await w.member.patch(url, json={"count": 1}), 403, "forbidden")
    edited = await w.admin.patch(url, json={"title": "Renamed", "notice_minutes": 0})
    assert edited.status_code == 200, edited.text
    assert (edited.json()["title"], edited.json()["notice_minutes"]) == ("Renamed", 0)
    assert (await w.admin.post(f"{API}/bookings/{other['id']}/cancel")).status_code == 200
    _error(await w.admin.post(f"{API}/bookings/{other['id']}/cancel"), 409, "booking_cancelled")
    grown = await w.admin.patch(url, json={"count": 2})
    assert grown.status_code == 200, grown.text
    # Once it has started, it is no longer edited.
    soon = build.clock.now() + timedelta(minutes=5)
    started = (await w.admin.post(f"{API}/bookings", json=w.body(starts_at=soon))).json()
    build.clock.advance(timedelta(minutes=6))
    _error(
        await w.admin.patch(f"{API}/bookings/{started['id']}", json={"count": 2}),
        409,
        "booking_started",
    )
    assert [b["id"] for b in (await w.member.get(f"{API}/bookings")).json()["items"]] == [
        started["id"],
        made["id"],
    ]
    everything = (await w.member.get(f"{API}/bookings", params={"ended": True})).json()
    assert {b["id"]: b["status"] for b in everything["items"]} == {
        started["id"]: "active",
        made["id"]: "active",
        other["id"]: "cancelled",
    }


async def test_the_calendar_shows_booked_and_free_without_names(build: Builder) -> None:
    w = await _world(build, n_cards=4)
    assert (await w.admin.post(f"{API}/bookings", json=w.body(count=3))).status_code == 201
    day = {
        "starts_at": _iso(w.start - timedelta(hours=1)),
        "ends_at": _iso(w.start + timedelta(hours=4)),
    }
    found = await w.outsider.get(f"{API}/bookings/calendar", params={"model": A100, **day})
    assert found.status_code == 200, found.text
    body = found.json()
    assert "Tuesday class" not in found.text
    assert str(w.group.id) not in found.text
    [cards] = body["resources"]
    assert (cards["pool"], cards["unit"], cards["capacity"]) == ("hami-core", "cards", 4)
    assert [(s["booked"], s["free"]) for s in cards["steps"]] == [(0, 4), (3, 1), (0, 4)]
    assert datetime.fromisoformat(cards["steps"][1]["starts_at"]) == w.start
    _error(
        await w.member.get(f"{API}/bookings/calendar", params={"model": "nope", **day}),
        404,
        "model_not_found",
    )
    too_long = {**day, "ends_at": _iso(w.start + timedelta(days=70))}
    _error(
        await w.member.get(f"{API}/bookings/calendar", params={"model": A100, **too_long}),
        422,
        "invalid_window",
    )


async def test_hostile_bookings_never_end_in_a_server_error(build: Builder) -> None:
    w = await _world(build)
    bad: list[dict[str, Any]] = [
        w.body(title="nul\x00byte"),
        w.body(title="x" * 201),
        w.body(title="   "),
        w.body(count=0),
        w.body(count=10**12),
        w.body(starts_at="9999-12-31T23:00:00+00:00", ends_at="9999-12-31T23:30:00+00:00"),
        w.body(weekly_until="9999-12-31T00:00:00+00:00"),
        w.body(starts_at="2026-12-10T10:00:00", ends_at="2026-12-10T12:00:00"),  # no zone
        w.body(starts_at="9999-12-31T23:59:59+00:00"),
        w.body(
            starts_at="9999-12-30T10:00:00+00:00",
            ends_at="9999-12-30T12:00:00+00:00",
            weekly_until="9999-12-30T13:00:00+00:00",
        ),
        w.body(
            starts_at="0001-01-02T10:00:00+00:00",
            ends_at="0001-01-02T12:00:00+00:00",
            weekly_until="0001-01-30T13:00:00+00:00",
        ),
        w.body(ends_at=w.start - timedelta(hours=1)),
        w.body(ends_at=w.start + timedelta(days=15)),
        w.body(weekly_until=_iso(w.start + timedelta(days=400))),
        w.body(weekly_until=_iso(w.start - timedelta(days=1))),
        w.body(
            ends_at=w.start + timedelta(days=8), weekly_until=_iso(w.start + timedelta(days=30))
        ),
        w.body(starts_at=build.clock.now() - timedelta(days=1)),
        w.body(notice_minutes=-1),
        w.body(notice_minutes=10**9),
        {**w.body(), "tier_id": "not-a-uuid"},
        {**w.body(), "group_id": None},
        {},
    ]
    for body in bad:
        response = await w.admin.post(f"{API}/bookings", json=body)
        assert response.status_code in (404, 409, 422), (body, response.text)
        # The check answers a refusal it finds itself as its result, never as a 500.
        checked = await w.admin.post(f"{API}/bookings/check", json=body)
        assert checked.status_code in (404, 422) or (
            checked.status_code == 200 and checked.json()["fits"] is False
        ), (body, checked.text)
    made = (await w.admin.post(f"{API}/bookings", json=w.body())).json()
    for change in (
        {"count": -1},
        {"title": "\x00"},
        {"ends_at": _iso(w.start - timedelta(hours=3))},
        {"starts_at": "9999-12-31T23:59:59+00:00"},
        {"weekly_until": "0001-01-01T00:00:00+00:00"},
    ):
        response = await w.admin.patch(f"{API}/bookings/{made['id']}", json=change)
        assert response.status_code in (409, 422), (change, response.text)
    for path in ("/bookings/not-a-uuid", f"/bookings/{uuid.uuid4()}"):
        assert (await w.admin.get(f"{API}{path}")).status_code in (404, 422)
    calendar = await w.admin.get(
        f"{API}/bookings/calendar",
        params={"model": "\x00", "starts_at": "x", "ends_at": "9999-12-31T23:59:59Z"},
    )
    assert calendar.status_code == 422
    async with build.sessions() as db:
        assert len(list(await db.scalars(select(Booking)))) == 1


async def test_the_same_booking_twice_at_once_is_booked_once_where_one_fits(
    build: Builder,
) -> None:
    w = await _world(build, n_cards=2)
    body = w.body(count=2)
    answers = await asyncio.gather(
        w.admin.post(f"{API}/bookings", json=body), w.admin.post(f"{API}/bookings", json=body)
    )
    assert sorted(a.status_code for a in answers) == [201, 409]
    async with build.sessions() as db:
        assert len(list(await db.scalars(select(Booking)))) == 1


async def test_a_running_booking_says_how_many_sessions_of_it_the_group_holds(
    build: Builder,
) -> None:
    w = await _world(build, n_cards=4)
    now = build.clock.now()
    running = await w.admin.post(
        f"{API}/bookings", json=w.body(count=3, starts_at=now, ends_at=now + timedelta(hours=1))
    )
    assert running.status_code == 201, running.text
    assert running.json()["in_use"] == 0
    later = (await w.admin.post(f"{API}/bookings", json=w.body(count=1))).json()
    assert later["in_use"] is None  # not running yet
    # One of the group's members holds a whole card now.
    outcome = await admit(build.sessions, w.capacity.ask(0, "exclusive"), now, w.capacity.settings)
    assert outcome.allocation is not None
    found = {b["id"]: b["in_use"] for b in (await w.member.get(f"{API}/bookings")).json()["items"]}
    assert found == {running.json()["id"]: 1, later["id"]: None}
