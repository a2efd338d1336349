"""The worker's metrics as a scrape of the real endpoint sees them: each loop's runs, failures
and durations, and the queue length and metering lag its ticks leave."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import timedelta

import pytest

from gshare.kit import metrics
from gshare.worker.loops import Loop, Worker, worker_loops
from tests.builders import Builder
from tests.eventually import eventually
from tests.scrape import metrics_endpoint, scrape, value
from tests.sessions.world import session_world, settings_of


@pytest.fixture
def worker_gauges() -> Iterator[metrics.WorkerGauges]:
    metrics.WORKER_GAUGES.forget()
    yield metrics.WORKER_GAUGES
    metrics.WORKER_GAUGES.forget()


async def test_each_loop_counts_its_runs_failures_and_durations() -> None:
    async def fine() -> None:
        return None

    async def broken() -> None:
        raise RuntimeError("the cluster is away")

    worker = Worker([Loop("probe fine", 0.01, fine), Loop("probe broken", 0.01, broken)])
    with metrics_endpoint() as server:
        before = await scrape(server)

        async def three_more_ticks() -> bool:
            seen = await scrape(server)
            return all(
                value(seen, "gshare_worker_loop_runs_total", loop=name)
                >= value(before, "gshare_worker_loop_runs_total", loop=name) + 3
                for name in ("probe fine", "probe broken")
            )

        worker.start()
        try:
            await eventually(three_more_ticks, "three ticks of each loop", interval=0.02)
        finally:
            await worker.stop()
        # Compared once the loops have stopped: a scrape in the middle of a tick may see one
        # counter moved and not yet the other.
        seen = await scrape(server)
    fine_failures = value(seen, "gshare_worker_loop_failures_total", loop="probe fine")
    assert fine_failures == value(before, "gshare_worker_loop_failures_total", loop="probe fine")
    broken_runs = value(seen, "gshare_worker_loop_runs_total", loop="probe broken")
    assert value(seen, "gshare_worker_loop_failures_total", loop="probe broken") == broken_runs
    timed = value(seen, "gshare_worker_loop_duration_seconds_count", loop="probe fine")
    assert timed == value(seen, "gshare_worker_loop_runs_total", loop="probe fine")
    last = "gshare_worker_loop_last_success_timestamp_seconds"
    assert value(seen, last, loop="probe fine") > time.time() - 60
    assert value(seen, last, loop="probe broken") == 0


async def test_the_queue_length_and_metering_lag_after_their_ticks(
    build: Builder, worker_gauges: metrics.WorkerGauges
) -> None:
    w = await session_world(build, n_cards=1)
    running = await w.running(0, "exclusive")
    waiting = await w.create(1, "exclusive")
    assert waiting["state"] == "queued"
    loops = {
        loop.name: loop for loop in worker_loops(settings_of(build), build.sessions, build.clock)
    }
    with metrics_endpoint() as server:
        await loops["admission queue"].tick()
        assert value(await scrape(server), "gshare_queue_length") == 1

        build.clock.advance(timedelta(seconds=90))
        assert ("gshare_metering_lag_seconds", ()) not in await scrape(server)  # no tick yet
        await loops["metering"].tick()
        assert value(await scrape(server), "gshare_metering_lag_seconds") == 0  # just metered
        build.clock.advance(timedelta(seconds=45))  # and no tick since
        assert value(await scrape(server), "gshare_metering_lag_seconds") == 45

        assert (await w.act(0, running["id"], "stop")).status_code == 200
        await loops["admission queue"].tick()
        assert value(await scrape(server), "gshare_queue_length") == 0
