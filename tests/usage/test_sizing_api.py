"""Right-sizing through the API: a member's own recent sessions of an image on a tier, their
peaks as the rollup recorded them, and the advice; nobody else's sessions count."""

from __future__ import annotations

import uuid
from datetime import timedelta

from gshare.usage.models import UsageHour
from tests.builders import Builder
from tests.capacity.builders import A100
from tests.sessions.world import SessionWorld, session_world

GIB = 1024


async def _ran(w: SessionWorld, member: int, tier: str, peak_gib: float) -> str:
    """A session of the member on the tier, stopped, whose hour peaked at `peak_gib`."""
    session = await w.running(member, tier)
    assert (await w.act(member, session["id"], "stop")).status_code == 200
    row = await w.row(session["id"])
    w.build.clock.advance(timedelta(hours=1))
    async with w.build.sessions() as db, db.begin():
        db.add(
            UsageHour(
                allocation_id=uuid.uuid4(),
                hour=w.build.clock.now().replace(minute=0, second=0, microsecond=0),
                session_id=row.id,
                user_id=row.owner_id,
                group_id=w.group_id,
                org_id=uuid.uuid4(),
                cluster_id=w.cluster_id,
                model=A100,
                tier=tier,
                vram_limit_mib=session["vram_mib"],
                held_seconds=3600.0,
                gpu_seconds=1800.0,
                idle_gpu_seconds=0.0,
                measured_seconds=3600.0,
                credits=0,
                vram_peak_mib=int(peak_gib * GIB),
                vram_mib_seconds=0.0,
            )
        )
    return row.image


async def test_a_member_is_told_a_cheaper_tier_would_have_held_their_sessions(
    build: Builder,
) -> None:
    w = await session_world(build, n_cards=2)
    for _ in range(3):
        image = await _ran(w, 0, "1/2", 4.5)
    # Another member's sessions on the same image and tier peaked high: they do not count.
    await _ran(w, 1, "1/2", 39)
    answer = await w.members[0].get(
        "/api/v1/usage/sizing", params={"image": image, "tier_id": w.tier("1/2")}
    )
    assert answer.status_code == 200, answer.text
    advice = answer.json()
    assert advice["sessions"] == 3
    assert advice["peak_vram_mib"] == int(4.5 * GIB)
    assert advice["smaller"]["name"] == "1/8"
    assert advice["smaller"]["tier_id"] == w.tier("1/8")
    assert advice["in_words"].startswith(f"Your last 3 sessions on 1/2 {A100} peaked at 4.5 GiB")
    other = await w.members[1].get(
        "/api/v1/usage/sizing", params={"image": image, "tier_id": w.tier("1/2")}
    )
    assert other.json()["smaller"] is None
    assert other.json()["sessions"] == 1
    # Another image: no history.
    fresh = await w.members[0].get(
        "/api/v1/usage/sizing", params={"image": "other:1", "tier_id": w.tier("1/2")}
    )
    assert fresh.json() == {
        "sessions": 0,
        "peak_vram_mib": None,
        "smaller": None,
        "near_limit": 0,
        "in_words": None,
    }


async def test_sizing_refuses_bad_input(build: Builder) -> None:
    w = await session_world(build, n_cards=1)
    member = w.members[0]
    for params, status in (
        ({"image": "x", "tier_id": str(uuid.uuid4())}, 404),
        ({"image": "", "tier_id": w.tier("1/2")}, 422),
        ({"image": "x\x00", "tier_id": w.tier("1/2")}, 422),
        ({"image": "x" * 513, "tier_id": w.tier("1/2")}, 422),
        ({"image": "x", "tier_id": "nope"}, 422),
        ({"image": "x"}, 422),
    ):
        answer = await member.get("/api/v1/usage/sizing", params=params)
        assert answer.status_code == status, (params, answer.text)
    assert (await build.anonymous().get("/api/v1/usage/sizing")).status_code == 401
