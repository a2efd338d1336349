"""The worker's health view: every loop's last run, lag and errors, and the clusters whose GPU
metrics cannot be read, for the super admin alone."""

from __future__ import annotations

from datetime import timedelta

from gshare.clusters import service as clusters
from gshare.worker.health import Recorder
from tests.builders import Builder


async def test_loops_report_their_lag_and_failures(build: Builder) -> None:
    recorder = Recorder(build.sessions, build.clock)
    await recorder.ran("metering", 60, None)
    build.clock.advance(timedelta(seconds=5))
    await recorder.ran("metering", 60, None)  # within ten seconds of the last: not written
    build.clock.advance(timedelta(minutes=3))
    await recorder.ran("metering", 60, "OperationalError: connection refused")
    await recorder.ran("metering", 60, "OperationalError: connection refused")
    cluster = await build.cluster("lab")
    async with build.sessions() as db, db.begin():
        await clusters.metrics_reported(
            db, cluster.id, build.clock.now(), "HTTP 503 from the monitor", 1
        )
    root = await build.signed_in(await build.user("Root", super_admin=True))
    answer = (await root.get("/api/v1/worker/health")).json()
    metering = next(loop for loop in answer["loops"] if loop["name"] == "metering")
    assert metering["failures"] == 2
    assert metering["last_error"] == "OperationalError: connection refused"
    # Its last recorded success was 3 min 5 s ago, and it is due every minute.
    assert metering["lag_seconds"] == 125.0
    assert answer["metrics_problems"] == [
        {
            "cluster_id": str(cluster.id),
            "cluster_name": "lab",
            "at": build.clock.now().isoformat().replace("+00:00", "Z"),
            "error": "HTTP 503 from the monitor",
        }
    ]
    member = await build.signed_in(await build.user("Member"))
    assert (await member.get("/api/v1/worker/health")).status_code == 403
