"""The operator's reporter against a real API process: refused tokens are retried until a good
one lands, reports the API cannot take are dropped, and only news is sent."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime
from pathlib import Path

from gshare.clusters.keystore import FileKeyStore, load_or_create
from gshare.clusters.tokens import KeySet, new_key
from gshare.operator.report import Reporter, ReportTarget
from gshare.sessions.models import InteractiveSession
from tests.builders import Builder
from tests.eventually import eventually
from tests.processes import start_api, stop


async def test_refused_tokens_are_retried_and_bad_reports_dropped(
    build: Builder, database_url: str, tmp_path: Path
) -> None:
    cluster = await build.cluster()
    owner = await build.user()
    placed = await build.interactive_session(owner, cluster)
    data_dir = tmp_path / "api"
    data_dir.mkdir()
    now = datetime.now(UTC)
    keys = await load_or_create(FileKeyStore(data_dir / "internal-keys.json"), now)
    token_file = tmp_path / "token"
    token_file.write_text(KeySet([new_key(now)]).mint(str(cluster.id), now))  # not the API's key
    api, base = start_api(database_url, data_dir)
    reporter = Reporter(
        ReportTarget(base, str(cluster.id), token_file),
        gather_seconds=0.05,
        first_pause_seconds=0.2,
    )
    running = asyncio.create_task(reporter.run())

    async def phase() -> str:
        async with build.sessions() as db:
            row = await db.get(InteractiveSession, placed.id)
            assert row is not None
            return row.phase

    try:
        status = {"phase": "Running", "message": "", "observedGeneration": 1}
        # A session this API does not place here is refused again and again; it must not hold
        # up the others.
        stranger = str(uuid.uuid4())
        reporter.status_changed(stranger, status)
        reporter.status_changed(str(placed.id), status)
        await eventually(
            lambda: reporter._refusals.get(str(placed.id), (0, 0.0))[0] >= 2,
            "the report to be refused twice",
        )
        assert await phase() == "Pending"  # refused, and kept for another try
        assert str(placed.id) in reporter._pending
        token_file.write_text(keys.mint(str(cluster.id), now))  # the fresh Secret lands
        await eventually(lambda: _is(phase, "Running"), "the report to be delivered")
        assert list(reporter._pending) == [stranger]
        reporter.session_gone(stranger)

        # The same status again is not news; a report the API cannot take is dropped.
        reporter.status_changed(str(placed.id), dict(status))
        assert reporter._pending == {}
        reporter.status_changed(str(placed.id), {**status, "phase": "Exploded"})
        await eventually(lambda: not reporter._pending, "the bad report to be dropped")
        assert await phase() == "Running"
    finally:
        running.cancel()
        stop(api)


async def _is(read, value: str) -> bool:
    return await read() == value


def test_pauses_stay_bounded_however_long_the_trouble() -> None:
    from pathlib import Path as P

    reporter = Reporter(ReportTarget("http://api", "c", P("/nonexistent")))
    assert reporter._pause(1) == 1.0
    assert reporter._pause(10_000) == 60.0


def test_without_a_configured_id_the_token_names_the_cluster(tmp_path: Path) -> None:
    """The all-in-one operator starts before its cluster is registered: it learns its id from
    the token the worker gives it (the API verifies that token; a made-up subject is refused
    there, and one that is not a cluster id is not even sent)."""
    now = datetime.now(UTC)
    keys = KeySet([new_key(now)])
    cluster = str(uuid.uuid4())
    target = ReportTarget("http://api", "", tmp_path / "token")
    assert target.cluster_for(keys.mint(cluster, now)) == cluster
    configured = ReportTarget(
        "http://api", "0" * 8 + "-0000-0000-0000-" + "0" * 12, target.token_file
    )
    assert configured.cluster_for(keys.mint(cluster, now)) == configured.cluster_id
    for token in ["not a token", keys.mint("../../users", now), keys.mint("", now)]:
        assert target.cluster_for(token) is None
