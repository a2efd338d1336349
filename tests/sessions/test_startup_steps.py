"""A session's start-up steps: merged from the operator's reports for the latest start only,
never clobbered by an older or replayed report, refused when malformed, shown to its owner."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from gshare.clusters.callbacks import key_ring_of
from gshare.identity.models import User
from gshare.kit.clock import FrozenClock
from gshare.sessions import startup
from gshare.sessions.models import InteractiveSession
from gshare.sessions.startup import Step
from tests.builders import Builder
from tests.sessions.world import session_world

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


# ---- the pure merge -----------------------------------------------------------------------


def test_a_progress_step_keeps_its_first_time_and_a_warning_its_latest_words() -> None:
    stored = [
        Step("scheduled", _at(2)),
        Step("warning", _at(5), "FailedMount", "timed out", count=2),
    ]
    reported = [
        Step("scheduled", _at(3), message="on gpu-0"),
        Step("pulled", _at(40), "Pulled", "pulled", image_size_bytes=1024),
        Step("warning", _at(9), "FailedMount", "still timed out", count=5),
    ]
    assert startup.merged(stored, reported) == [
        Step("scheduled", _at(2)),
        Step("warning", _at(9), "FailedMount", "still timed out", count=5),
        Step("pulled", _at(40), "Pulled", "pulled", image_size_bytes=1024),
    ]


def test_the_kept_steps_are_bounded_and_keep_every_progress_step() -> None:
    progress = [Step(name, _at(i)) for i, name in enumerate(startup.STEPS)]
    warnings = [Step("warning", _at(100 + i), f"Reason{i}") for i in range(50)]
    kept = startup.merged(progress, warnings)
    assert len(kept) == startup.MAX_STEPS
    assert [s.step for s in kept[: len(progress)]] == list(startup.STEPS)
    assert kept[-1].reason == "Reason49"  # the newest warnings stay


def test_times_that_cannot_be_true_are_left_out() -> None:
    now, skew = _at(600), timedelta(minutes=5)
    steps = [Step("scheduled", _at(-3600)), Step("started", _at(10)), Step("ready", _at(2000))]
    assert startup.sane(steps, now=now, not_before=T0, skew=skew) == [steps[1]]


steps_st = st.lists(
    st.builds(
        Step,
        step=st.sampled_from(startup.STEP_NAMES),
        at=st.integers(0, 50).map(_at),
        reason=st.sampled_from(["", "FailedMount", "BackOff"]),
        message=st.sampled_from(["", "a", "b"]),
        image_size_bytes=st.none() | st.integers(0, 3),
        count=st.integers(1, 4),
    ),
    max_size=30,
)


@given(steps_st, steps_st)
def test_merging_is_idempotent_and_order_free(a: list[Step], b: list[Step]) -> None:
    """A replayed report changes nothing, and reports arriving in either order agree."""
    once = startup.merged(a, b)
    assert startup.merged(once, b) == once
    assert startup.merged(b, a) == once
    assert len(once) <= startup.MAX_STEPS
    assert len({s.key() for s in once}) == len(once)


def test_what_is_stored_reads_back_and_junk_in_the_column_is_skipped() -> None:
    steps = [Step("pulled", _at(1), "Pulled", "ok", image_size_bytes=7, count=2)]
    assert startup.from_json(startup.to_json(steps)) == steps
    junk = [{"step": "exploded", "at": T0.isoformat()}, {"step": "ready", "at": "yesterday"}, 3]
    assert startup.from_json(junk) == []
    assert startup.from_json({"not": "a list"}) == []


# ---- through the API ------------------------------------------------------------------------


def _step(step: str, seconds: float, **extra: object) -> dict[str, Any]:
    return {"step": step, "at": _at(seconds).isoformat(), **extra}


def _report(
    sequence: int, steps: list[dict[str, Any]] | None, *, revision: int = 1, generation: int = 1
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "generation": generation,
        "sequence": sequence,
        "phase": "Pending",
        "message": "",
        "revision": revision,
    }
    if steps is not None:
        body["steps"] = steps
    return body


class Reporting:
    def __init__(
        self, build: Builder, client: httpx.AsyncClient, row: InteractiveSession, token: str
    ) -> None:
        self.build, self.client, self.row, self.token = build, client, row, token

    async def post(self, body: dict[str, Any]) -> httpx.Response:
        return await self.client.post(
            f"/internal/v1/sessions/{self.row.id}/status",
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
        )

    async def stored(self) -> list[Step]:
        async with self.build.sessions() as db:
            row = await db.get(InteractiveSession, self.row.id)
            assert row is not None
            return startup.from_json(row.startup_steps)


async def _starting(build: Builder, client: httpx.AsyncClient, clock: FrozenClock) -> Reporting:
    """A session whose latest start, asked for at T0, runs under spec revision 1."""
    await client.get("/.well-known/gshare-internal-jwks.json")
    cluster = await build.cluster()
    row = await build.interactive_session(await build.user(), cluster)
    async with build.sessions() as db, db.begin():
        stored = await db.get(InteractiveSession, row.id)
        assert stored is not None
        stored.spec_generation = stored.startup_revision = 1
        stored.startup_requested_at = T0
    clock.advance(T0 + timedelta(minutes=10) - clock.now())
    token = (await key_ring_of(build.app).get(datetime.now(UTC))).mint(str(cluster.id), clock.now())
    return Reporting(build, client, row, token)


async def test_steps_of_the_latest_start_are_merged_and_shown_to_the_owner(
    build: Builder, client: httpx.AsyncClient, clock: FrozenClock
) -> None:
    reporting = await _starting(build, client, clock)
    first = [_step("allocated", 1), _step("scheduled", 2, message="on gpu-0")]
    assert (await reporting.post(_report(100, first))).json()["applied"] is True
    later = [
        _step("scheduled", 2, message="on gpu-0"),
        _step("pulling", 3, reason="Pulling"),
        _step("warning", 30, reason="ImagePullBackOff", message="Back-off pulling", count=4),
    ]
    assert (await reporting.post(_report(101, later))).json()["applied"] is True
    assert [s.step for s in await reporting.stored()] == [
        "allocated",
        "scheduled",
        "pulling",
        "warning",
    ]

    owner = await build.signed_in(await _owner(build, reporting.row))
    shown = (await owner.get(f"/api/v1/sessions/{reporting.row.id}")).json()
    assert shown["startup_requested_at"].startswith("2026-03-02T09:00:00")
    assert shown["startup_steps"][-1] == {
        "step": "warning",
        "at": _at(30).isoformat().replace("+00:00", "Z"),
        "reason": "ImagePullBackOff",
        "message": "Back-off pulling",
        "image_size_bytes": None,
        "count": 4,
    }
    listed = (await owner.get("/api/v1/sessions")).json()["items"]
    assert [len(s["startup_steps"]) for s in listed] == [4]
    stranger = await build.signed_in(await build.user())
    assert (await stranger.get(f"/api/v1/sessions/{reporting.row.id}")).status_code == 404


async def _owner(build: Builder, row: InteractiveSession) -> User:
    async with build.sessions() as db:
        user = await db.get(User, row.owner_id)
        assert user is not None
        return user


async def test_old_replayed_and_reordered_reports_never_clobber_newer_steps(
    build: Builder, client: httpx.AsyncClient, clock: FrozenClock
) -> None:
    reporting = await _starting(build, client, clock)
    newest = [_step("allocated", 1), _step("started", 50), _step("ready", 55)]
    assert (await reporting.post(_report(200, newest))).json()["applied"] is True
    kept = await reporting.stored()
    for stale in (
        _report(200, newest),  # the same report again
        _report(150, [_step("allocated", 1)]),  # an older one, arriving late
        _report(999, [], revision=0, generation=1),  # names no revision
        _report(300, [_step("allocated", 9)], revision=0, generation=0),  # an older generation
    ):
        await reporting.post(stale)
        assert await reporting.stored() == kept, stale
    # About a revision other than the latest start's (a pause after it): applied, steps kept.
    paused = _report(400, [], revision=2, generation=2)
    assert (await reporting.post(paused)).json()["applied"] is True
    assert await reporting.stored() == kept
    # A report without steps (an operator that does not send them) keeps them too.
    assert (await reporting.post(_report(500, None, generation=3))).json()["applied"] is True
    assert await reporting.stored() == kept


async def test_hostile_steps_are_refused_and_change_nothing(
    build: Builder, client: httpx.AsyncClient, clock: FrozenClock
) -> None:
    reporting = await _starting(build, client, clock)
    ok = _step("scheduled", 2)
    for bad in (
        [ok] * (startup.MAX_STEPS + 1),  # too many
        [_step("scheduled", 2, message="x" * (startup.MAX_MESSAGE + 1))],
        [_step("scheduled", 2, message="x" * 1_000_000)],
        [_step("scheduled", 2, message="evil\x00")],
        [_step("scheduled", 2, message="\x1b[31mred")],
        [_step("scheduled", 2, reason="Bad Reason")],
        [_step("scheduled", 2, reason="R" * 65)],
        [_step("exploded", 2)],
        [{"step": "ready", "at": "2026-03-02T09:00:00"}],  # no time zone
        [{"step": "ready", "at": "10000-01-01T00:00:00Z"}],
        [{**ok, "extra": 1}],
        [_step("pulled", 2, image_size_bytes=-1)],
        [_step("warning", 2, reason="BackOff", count=0)],
        "not a list",
    ):
        response = await reporting.post(_report(100, bad))  # type: ignore[arg-type]
        assert response.status_code == 422, bad
    assert await reporting.stored() == []
    # Times that cannot be true are left out; the rest of the report counts.
    future = [_step("ready", 10 * 3600), _step("allocated", -2 * 86400), _step("started", 60)]
    assert (await reporting.post(_report(100, future))).json()["applied"] is True
    assert [s.step for s in await reporting.stored()] == ["started"]


async def test_a_new_start_begins_with_no_steps(
    build: Builder, client: httpx.AsyncClient, clock: FrozenClock
) -> None:
    """Reports about the start before are not shown as this one's."""
    reporting = await _starting(build, client, clock)
    assert (await reporting.post(_report(100, [_step("ready", 60)]))).json()["applied"] is True
    async with build.sessions() as db, db.begin():
        row = await db.get(InteractiveSession, reporting.row.id)
        assert row is not None
        row.spec_generation = row.startup_revision = 3
        row.startup_steps = []
    late = _report(101, [_step("ready", 60)], revision=1, generation=2)
    assert (await reporting.post(late)).json()["applied"] is True
    assert await reporting.stored() == []
    fresh = _report(102, [_step("allocated", 120)], revision=3, generation=3)
    assert (await reporting.post(fresh)).json()["applied"] is True
    assert [s.step for s in await reporting.stored()] == ["allocated"]


async def test_a_failed_start_keeps_its_steps_until_the_next_start(build: Builder) -> None:
    """Through the real lifecycle: a start's steps stay visible after its pod failed (the spec
    moved on to a paused revision), and resuming begins a new start with none."""
    w = await session_world(build)
    sid = (await w.create())["id"]
    row = await w.row(sid)
    created_at = row.startup_requested_at
    assert created_at == build.clock.now()
    keys = await key_ring_of(build.app).get(build.clock.now())
    token = keys.mint(str(row.cluster_id), build.clock.now())
    reporting = Reporting(build, build.anonymous(), row, token)
    now = build.clock.now()
    pulled = {"step": "pulling", "at": now.isoformat()}
    backoff = {
        "step": "warning",
        "at": (now + timedelta(seconds=1)).isoformat(),
        "reason": "ImagePullBackOff",
        "message": "Back-off pulling image",
    }
    failed = {
        **_report(1_000, [pulled, backoff], revision=row.spec_generation),
        "phase": "Failed",
        "message": "ImagePullBackOff",
    }
    assert (await reporting.post(failed)).json()["applied"] is True
    shown = await w.read(0, sid)
    assert shown["state"] == "failed"
    assert [s["reason"] for s in shown["startup_steps"]] == ["", "ImagePullBackOff"]
    # The operator goes on to report the paused revision, without a pod and so without steps.
    paused = _report(1_001, [], revision=row.spec_generation + 1, generation=2)
    assert (await reporting.post({**paused, "phase": "Paused"})).json()["applied"] is True
    assert len((await w.read(0, sid))["startup_steps"]) == 2

    build.clock.advance(timedelta(minutes=5))
    resumed = (await w.act(0, sid, "resume")).json()
    assert resumed["state"] == "starting"
    assert resumed["startup_steps"] == []
    assert resumed["startup_requested_at"] != shown["startup_requested_at"]
