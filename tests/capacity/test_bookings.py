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
from tests.capacity.test_isolation_api import _dedicate_private
from tests.capacity.test_isolation_api import _world as isolation_world

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


# ---- tenancy and policy --------------------------------------------------------------------


async def _other_group(build: Builder, w: World, name: str) -> tuple[Group, httpx.AsyncClient]:
    """Another group of the same organization, with an admin of its own."""
    group = await build.group(w.org, name)
    admin = await build.user(f"{name} admin")
    await build.member(admin, group)
    await build.group_admin(admin, group)
    return group, await build.signed_in(admin)


async def test_a_group_books_a_modest_week_unless_the_super_admin_raises_it(
    build: Builder,
) -> None:
    w = await _world(build, n_cards=8)
    # Unset anywhere, the weekly card-hours have a default, and the effective policy says so.
    effective = await w.root.get(
        f"{API}/users/{w.member_user.id}/effective-policy", params={"group_id": str(w.group.id)}
    )
    assert effective.status_code == 200, effective.text
    found = {v["key"]: v for v in effective.json()["values"]}["max_booked_card_hours_week"]
    assert (found["value"], found["scope"]) == (168, None)
    # All eight cards around the clock for a day is 192 card-hours: over the week's 168.
    day = w.body(count=8, ends_at=w.start + timedelta(hours=24))
    error = _error(await w.admin.post(f"{API}/bookings", json=day), 409, "booking_quota")
    assert "168" in error["message"]
    seven = w.body(count=7, ends_at=w.start + timedelta(hours=24))
    assert (await w.admin.post(f"{API}/bookings", json=seven)).status_code == 201
    _error(await w.admin.post(f"{API}/bookings", json=w.body(count=1)), 409, "booking_quota")
    # The super admin raises it for the group; no one else may, the organization's admin neither.
    raised = {"values": {"max_booked_card_hours_week": 1000}}
    url = f"{API}/policies/groups/{w.group.id}"
    org_admin = await build.user("Olga Org")
    await build.org_admin(org_admin, w.org)
    olga = await build.signed_in(org_admin)
    _error(await olga.put(url, json=raised), 403, "policy_key_reserved")
    assert (await w.admin.put(url, json=raised)).status_code == 403
    assert (await w.root.put(url, json=raised)).status_code == 200
    assert (await w.admin.post(f"{API}/bookings", json=w.body(count=1))).status_code == 201


async def test_an_organizations_groups_book_within_its_cap_together(build: Builder) -> None:
    w = await _world(build, n_cards=8)
    lab, lab_admin = await _other_group(build, w, "Lab")
    cap = {"values": {"max_org_booked_card_hours_week": 10}}
    org_admin = await build.user("Olga Org")
    await build.org_admin(org_admin, w.org)
    olga = await build.signed_in(org_admin)
    # Only the super admin sets it, and for an organization (or everyone), not a group.
    assert (await olga.put(f"{API}/policies/orgs/{w.org.id}", json=cap)).status_code == 403
    assert (await olga.put(f"{API}/policies/groups/{w.group.id}", json=cap)).status_code == 403
    _error(await w.root.put(f"{API}/policies/groups/{w.group.id}", json=cap), 422, "invalid_policy")
    assert (await w.root.put(f"{API}/policies/orgs/{w.org.id}", json=cap)).status_code == 200
    # 3 cards for 2 hours is 6 card-hours; the lab's 6 more would make the organization's 12.
    assert (await w.admin.post(f"{API}/bookings", json=w.body(count=3))).status_code == 201
    error = _error(
        await lab_admin.post(f"{API}/bookings", json=w.body(count=3, group_id=lab.id)),
        409,
        "booking_quota",
    )
    assert "organization" in error["message"]
    assert "12.0" in error["message"]
    assert (
        await lab_admin.post(f"{API}/bookings", json=w.body(count=2, group_id=lab.id))
    ).status_code == 201
    # Another organization's groups are not counted.
    other = w.body(count=3, group_id=w.outsider_group.id)
    assert (await w.outsider.post(f"{API}/bookings", json=other)).status_code == 201


async def test_new_groups_do_not_multiply_what_an_organization_may_book(build: Builder) -> None:
    """Unset anywhere, an organization's groups together book at most 336 card-hours a week:
    its admins create groups freely, so each group's own 168 alone would not bound it."""
    w = await _world(build, n_cards=8)
    day = timedelta(hours=24)
    # 7 cards for a day is 168 card-hours: each group's whole default week.
    seven = w.body(count=7, ends_at=w.start + day)
    assert (await w.admin.post(f"{API}/bookings", json=seven)).status_code == 201
    lab, lab_admin = await _other_group(build, w, "Lab")
    lab_day = w.body(count=7, group_id=lab.id, starts_at=w.start + day, ends_at=w.start + 2 * day)
    assert (await lab_admin.post(f"{API}/bookings", json=lab_day)).status_code == 201
    third, third_admin = await _other_group(build, w, "Third")
    later = w.body(
        count=1,
        group_id=third.id,
        starts_at=w.start + 2 * day,
        ends_at=w.start + 2 * day + timedelta(hours=1),
    )
    error = _error(await third_admin.post(f"{API}/bookings", json=later), 409, "booking_quota")
    assert "organization" in error["message"]


async def test_two_groups_of_one_organization_booking_at_once_do_not_both_pass_its_cap(
    build: Builder,
) -> None:
    w = await _world(build, n_cards=8)
    lab, lab_admin = await _other_group(build, w, "Lab")
    cap = {"values": {"max_org_booked_card_hours_week": 10}}
    assert (await w.root.put(f"{API}/policies/orgs/{w.org.id}", json=cap)).status_code == 200
    answers = await asyncio.gather(
        w.admin.post(f"{API}/bookings", json=w.body(count=3)),
        lab_admin.post(f"{API}/bookings", json=w.body(count=3, group_id=lab.id)),
    )
    assert sorted(a.status_code for a in answers) == [201, 409], [a.text for a in answers]
    async with build.sessions() as db:
        assert len(list(await db.scalars(select(Booking)))) == 1


async def test_a_group_whose_policy_allows_no_gpu_session_books_none(build: Builder) -> None:
    w = await _world(build)
    url = f"{API}/policies/groups/{w.group.id}"
    made = (await w.admin.post(f"{API}/bookings", json=w.body(title="Before"))).json()
    refusing: list[dict[str, Any]] = [
        {"allowed_models": []},
        {"max_gpu_sessions": 0},
        {"allowed_tiers": ["1/4"]},
    ]
    for values in refusing:
        assert (await w.root.put(url, json={"values": values})).status_code == 200
        error = _error(await w.admin.post(f"{API}/bookings", json=w.body()), 403, "policy_denied")
        assert next(iter(values)) in error["message"]
        checked = (await w.admin.post(f"{API}/bookings/check", json=w.body())).json()
        assert (checked["fits"], checked["code"]) == (False, "policy_denied")
        # A booking made before is not grown past the policy either.
        edited = await w.admin.patch(f"{API}/bookings/{made['id']}", json={"count": 2})
        _error(edited, 403, "policy_denied")
    # What the policy allows is booked.
    assert (await w.admin.post(f"{API}/bookings", json=w.body("1/4"))).status_code == 201


async def test_removed_members_and_expired_guests_neither_read_nor_hear_of_its_bookings(
    build: Builder,
) -> None:
    w = await _world(build)
    leaver = await build.user("Lee Leaver")
    await build.member(leaver, w.group)
    guest = await build.user("Gus Guest")
    await build.member(
        guest, w.group, role="guest", expires_at=build.clock.now() + timedelta(minutes=5)
    )
    lee, gus = await build.signed_in(leaver), await build.signed_in(guest)
    made = (await w.admin.post(f"{API}/bookings", json=w.body(title="Secret class"))).json()
    url = f"{API}/bookings/{made['id']}"
    for client in (lee, gus):
        assert (await client.get(url)).status_code == 200
        assert [b["id"] for b in (await client.get(f"{API}/bookings")).json()["items"]] == [
            made["id"]
        ]

    async def told() -> dict[uuid.UUID, list[str]]:
        async with build.sessions() as db:
            rows = await db.execute(
                select(Notification.user_id, Notification.title).where(
                    Notification.kind == "booking.changed"
                )
            )
        found: dict[uuid.UUID, list[str]] = {}
        for user_id, title in rows:
            found.setdefault(user_id, []).append(title)
        return found

    before = await told()
    assert {leaver.id, guest.id} <= before.keys()
    removed = await w.admin.delete(f"{API}/groups/{w.group.id}/members/{leaver.id}")
    assert removed.status_code == 204, removed.text
    build.clock.advance(timedelta(minutes=6))
    for client in (lee, gus):
        _error(await client.get(url), 404, "booking_not_found")
        assert (await client.get(f"{API}/bookings")).json()["items"] == []
        listed = await client.get(f"{API}/bookings", params={"group_id": str(w.group.id)})
        assert listed.json()["items"] == []
    edited = await w.admin.patch(url, json={"title": "Renamed class"})
    assert edited.status_code == 200, edited.text
    after = await told()
    assert after[leaver.id] == before[leaver.id]
    assert after[guest.id] == before[guest.id]
    assert "Booking changed: Renamed class" in after[w.member_user.id]


async def test_the_calendar_counts_the_cards_the_groups_level_admits(build: Builder) -> None:
    """A dedicated tenant's members and admins see its own two cards, not the four shared ones
    it may not use; naming the group gives its view to anyone who sees it."""
    w = await isolation_world(build)
    capacity, root = w["capacity"], w["root"]
    await _dedicate_private(w)
    group = str(capacity.group_id)
    dedicated = {"values": {"isolation": "dedicated"}}
    assert (await root.put(f"{API}/policies/groups/{group}", json=dedicated)).status_code == 200
    org_admin = await build.user("Olga Org")
    await build.org_admin(org_admin, await _org(build, w["org_id"]))
    olga = await build.signed_in(org_admin)
    start = build.clock.now() + timedelta(days=2)
    day = {"model": A100, "starts_at": _iso(start), "ends_at": _iso(start + timedelta(hours=2))}

    async def capacity_seen(client: httpx.AsyncClient, **more: str) -> int:
        found = await client.get(f"{API}/bookings/calendar", params={**day, **more})
        assert found.status_code == 200, found.text
        [cards] = found.json()["resources"]
        return int(cards["capacity"])

    assert await capacity_seen(w["member"]) == 2
    assert await capacity_seen(olga) == 2
    for client in (w["member"], olga, root):
        assert await capacity_seen(client, group_id=group) == 2
    assert await capacity_seen(root) == 6
    assert await capacity_seen(w["stranger"]) == 4
    refused = await w["stranger"].get(f"{API}/bookings/calendar", params={**day, "group_id": group})
    _error(refused, 404, "group_not_found")
    # The free slots of the tiers say the same, the group named or not: it is the only one.
    for params in ({}, {"group_id": group}):
        tiers = (await w["member"].get(f"{API}/tiers", params=params)).json()["items"]
        assert {t["name"]: t["free_slots"] for t in tiers}["exclusive"] == 2


async def _org(build: Builder, org_id: uuid.UUID) -> Organization:
    async with build.sessions() as db:
        org = await db.get(Organization, org_id)
    assert org is not None
    return org
