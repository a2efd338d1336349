"""The admins' view of the worker: each loop's last run, lag and errors, and the clusters whose
GPU metrics cannot be read (nothing on them is paused for idleness)."""

from __future__ import annotations

import uuid
from datetime import datetime

from fastapi import APIRouter
from pydantic import Field

from gshare.clusters import service as clusters
from gshare.identity.authz import require
from gshare.identity.dependencies import Ctx
from gshare.identity.permissions import Action
from gshare.kit.schemas import ResponseModel
from gshare.kit.web import declare
from gshare.worker import health

router = APIRouter()


class LoopOut(ResponseModel):
    name: str
    interval_seconds: float
    last_run_at: datetime
    last_ok_at: datetime | None
    lag_seconds: float | None = Field(
        description="How far past its interval the last success is; 0 when on time."
    )
    failures: int = Field(description="Ticks in a row that failed.")
    last_error: str


class MetricsProblem(ResponseModel):
    cluster_id: uuid.UUID
    cluster_name: str
    at: datetime | None
    error: str


class Orphans(ResponseModel):
    cluster_id: uuid.UUID
    cluster_name: str
    resources: list[str] = Field(
        description="GShareSession resources that no live session of the cluster stands for."
    )


class WorkerHealth(ResponseModel):
    loops: list[LoopOut]
    metrics_problems: list[MetricsProblem]
    orphans: list[Orphans]


@router.get("/api/v1/worker/health", response_model=WorkerHealth, **declare(Action.WORKER_HEALTH))
async def worker_health(ctx: Ctx) -> WorkerHealth:
    require(ctx, Action.WORKER_HEALTH, target_type="worker")
    out = []
    for loop in await health.loops(ctx.db):
        lag = None
        if loop.last_ok_at is not None:
            late = (ctx.now - loop.last_ok_at).total_seconds() - loop.interval_seconds
            lag = max(0.0, round(late, 1))
        out.append(
            LoopOut(
                name=loop.name,
                interval_seconds=loop.interval_seconds,
                last_run_at=loop.last_run_at,
                last_ok_at=loop.last_ok_at,
                lag_seconds=lag,
                failures=loop.failures,
                last_error=loop.last_error,
            )
        )
    problems = [
        MetricsProblem(cluster_id=i, cluster_name=n, at=a, error=e)
        for i, n, a, e in await clusters.metrics_problems(ctx.db)
    ]
    left = [
        Orphans(cluster_id=i, cluster_name=n, resources=r)
        for i, n, r in await clusters.orphans(ctx.db)
    ]
    return WorkerHealth(loops=out, metrics_problems=problems, orphans=left)
