"""Datetime inputs: aware only, read as UTC, and refused with a 4xx when they cannot be stored."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gshare.kit.datetimes import EARLIEST, LATEST, utc_instant
from gshare.kit.pagination import encode_cursor
from tests.builders import Builder

# Valid ISO 8601 instants whose UTC value falls outside what Python can hold.
OVERFLOWING = ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"]
# Representable, but too close to the edge for a time zone's view of it.
AT_THE_EDGE = ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999+00:00"]
OUT_OF_RANGE = OVERFLOWING + AT_THE_EDGE
NAIVE = "2026-03-02T09:00:00"

offsets = st.timedeltas(min_value=timedelta(hours=-23, minutes=-59), max_value=timedelta(hours=23))


@given(st.datetimes(), st.builds(timezone, offsets))
def test_an_instant_is_kept_in_utc_or_refused(local: datetime, zone: timezone) -> None:
    value = local.replace(tzinfo=zone)
    # Measured from datetime.min as timedeltas, which cannot overflow here.
    position = local - datetime.min - value.utcoffset()  # type: ignore[operator]
    window = (
        EARLIEST.replace(tzinfo=None) - datetime.min,
        LATEST.replace(tzinfo=None) - datetime.min,
    )
    if not window[0] <= position <= window[1]:
        with pytest.raises(ValueError, match="must lie between"):
            utc_instant(value)
        return
    utc = utc_instant(value)
    assert utc == value
    assert utc.tzinfo is UTC
    # A day either way, seen from any time zone, stays representable.
    for tz in (timezone(timedelta(hours=23, minutes=59)), timezone(-timedelta(hours=23))):
        (utc + timedelta(days=1)).astimezone(tz)
        (utc - timedelta(days=1)).astimezone(tz)


def test_the_window_edges_are_accepted_and_naive_times_refused() -> None:
    assert utc_instant(EARLIEST) == EARLIEST
    assert utc_instant(LATEST) == LATEST
    with pytest.raises(ValueError, match="time zone"):
        utc_instant(datetime(2026, 1, 1))
    for text in OUT_OF_RANGE:
        with pytest.raises(ValueError, match="must lie between"):
            utc_instant(datetime.fromisoformat(text))


def _assert_invalid(response_status: int, body: dict[str, dict[str, str]], field: str) -> None:
    assert response_status == 422, body
    assert body["error"]["code"] == "invalid_request"
    assert field in body["error"]["message"]


@pytest.mark.parametrize("value", [*OUT_OF_RANGE, NAIVE])
async def test_audit_filters_refuse_times_that_cannot_be_stored(build: Builder, value: str) -> None:
    root = await build.signed_in(await build.user(super_admin=True))
    for name in ("since", "until"):
        response = await root.get("/api/v1/audit", params={name: value})
        _assert_invalid(response.status_code, response.json(), name)


@pytest.mark.parametrize("value", [*OUT_OF_RANGE, NAIVE])
async def test_wallet_history_filters_refuse_times_that_cannot_be_stored(
    build: Builder, value: str
) -> None:
    member = await build.signed_in(await build.user())
    wallet = (await member.get("/api/v1/wallets/me")).json()["id"]
    for name in ("since", "until"):
        response = await member.get(f"/api/v1/wallets/{wallet}/entries", params={name: value})
        _assert_invalid(response.status_code, response.json(), name)


async def test_filters_at_the_window_edges_work(build: Builder) -> None:
    root = await build.signed_in(await build.user(super_admin=True))
    await root.post("/api/v1/orgs", json={"name": "Edge"})
    wallet = (await root.get("/api/v1/wallets/me")).json()["id"]
    everything = {"since": EARLIEST.isoformat(), "until": LATEST.isoformat()}
    audit = await root.get("/api/v1/audit", params=everything)
    assert audit.status_code == 200
    assert "org.create" in [e["action"] for e in audit.json()["items"]]
    assert (
        await root.get(f"/api/v1/wallets/{wallet}/entries", params=everything)
    ).status_code == 200
    # The same instant written in another zone reads as UTC.
    after = await root.get("/api/v1/audit", params={"since": "2026-03-02T12:00:00+03:00"})
    assert after.status_code == 200
    assert after.json()["items"] == audit.json()["items"]


@pytest.mark.parametrize("value", [*OUT_OF_RANGE, NAIVE])
async def test_a_guest_end_date_that_cannot_be_stored_is_refused(
    build: Builder, value: str
) -> None:
    root = await build.signed_in(await build.user(super_admin=True))
    group = await build.group(await build.org())
    guest = await build.user()
    response = await root.put(
        f"/api/v1/groups/{group.id}/members/{guest.id}",
        json={"role": "guest", "expires_at": value},
    )
    _assert_invalid(response.status_code, response.json(), "expires_at")


async def test_a_guest_may_end_at_the_latest_instant(build: Builder) -> None:
    root = await build.signed_in(await build.user(super_admin=True))
    group = await build.group(await build.org())
    guest = await build.user()
    put = await root.put(
        f"/api/v1/groups/{group.id}/members/{guest.id}",
        json={"role": "guest", "expires_at": "9999-12-31T22:59:59+23:00"},
    )
    assert put.status_code == 200, put.text
    assert datetime.fromisoformat(put.json()["expires_at"]) == LATEST.replace(microsecond=0)
    listed = await root.get(f"/api/v1/groups/{group.id}/members")
    assert listed.status_code == 200
    me = await (await build.signed_in(guest)).get("/api/v1/me")
    assert me.status_code == 200
    assert [m["group_id"] for m in me.json()["memberships"]] == [str(group.id)]


@pytest.mark.parametrize("value", [*OUT_OF_RANGE, NAIVE, "not a time"])
@pytest.mark.parametrize("path", ["/api/v1/orgs", "/api/v1/users"])
async def test_cursors_with_times_that_cannot_be_stored_are_invalid(
    build: Builder, value: str, path: str
) -> None:
    root = await build.signed_in(await build.user(super_admin=True))
    cursor = encode_cursor((value, uuid.uuid4()))
    response = await root.get(path, params={"cursor": cursor})
    assert response.status_code == 400, response.text
    assert response.json()["error"]["code"] == "invalid_cursor"
