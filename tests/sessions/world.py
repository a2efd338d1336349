"""A world for session tests: a connected cluster of A100 cards with priced tiers, members of a
group signed in to the API, the catalog's images, and helpers to report as the operator."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import select, update

from gshare.capacity import tasks as capacity_tasks
from gshare.clusters.callbacks import key_ring_of
from gshare.identity.models import User
from gshare.kit.settings import Settings
from gshare.sessions.models import InteractiveSession
from tests.builders import PASSWORD, Builder, hashed
from tests.capacity.builders import CapacityWorld, capacity_world

API = "/api/v1"
JUPYTER_IMAGE = "6f0c1e0a-5b1e-4c53-9b65-3f4a1d9e0001"
_sequence = iter(range(1_000, 10**9))


@dataclass
class SessionWorld:
    build: Builder
    capacity: CapacityWorld
    members: list[httpx.AsyncClient]

    @property
    def group_id(self) -> uuid.UUID:
        return self.capacity.group_id

    @property
    def cluster_id(self) -> uuid.UUID:
        return self.capacity.cluster_id

    def tier(self, name: str) -> str:
        return str(self.capacity.tiers[name].id)

    def body(self, tier: str | None = "1/4", **extra: Any) -> dict[str, Any]:
        return {
            "session_type": "jupyterlab",
            "image_id": JUPYTER_IMAGE,
            "group_id": str(self.group_id),
            "tier_id": self.tier(tier) if tier else None,
            **extra,
        }

    async def create(self, member: int = 0, tier: str | None = "1/4", **extra: Any) -> dict:
        response = await self.members[member].post(f"{API}/sessions", json=self.body(tier, **extra))
        assert response.status_code == 201, response.text
        return dict(response.json())

    async def act(self, member: int, session_id: str, action: str) -> httpx.Response:
        return await self.members[member].post(f"{API}/sessions/{session_id}/{action}")

    async def read(self, member: int, session_id: str) -> dict:
        response = await self.members[member].get(f"{API}/sessions/{session_id}")
        assert response.status_code == 200, response.text
        return dict(response.json())

    async def report(
        self,
        session_id: str,
        phase: str,
        message: str = "",
        *,
        revision: int | None = None,
        steps: list[dict[str, Any]] | None = None,
        drift: dict[str, Any] | None = None,
        sequence: int | None = None,
    ) -> httpx.Response:
        """The operator of the cluster the session runs on reports its phase, for the spec the
        session wants now unless `revision` names another."""
        build = self.build
        row = await self.row(session_id)
        keys = await key_ring_of(build.app).get(build.clock.now())
        token = keys.mint(str(row.cluster_id or self.cluster_id), build.clock.now())
        body = {
            "generation": row.observed_generation + 1,
            "sequence": next(_sequence) if sequence is None else sequence,
            "phase": phase,
            "message": message,
            "revision": row.spec_generation if revision is None else revision,
        }
        if steps is not None:
            body["steps"] = steps
        if drift is not None:
            body["drift"] = drift
        client = build.anonymous()
        return await client.post(
            f"/internal/v1/sessions/{session_id}/status",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        )

    async def utilization(
        self, samples: list[dict[str, Any]], *, readable: bool = True, error: str = ""
    ) -> httpx.Response:
        """The operator reports what its metrics source says of the cluster's sessions."""
        keys = await key_ring_of(self.build.app).get(datetime.now(UTC))
        token = keys.mint(str(self.cluster_id), self.build.clock.now())
        body = {
            "sequence": next(_sequence),
            "source": "hami",
            "readable": readable,
            "error": error,
            "samples": samples,
        }
        return await self.build.anonymous().post(
            f"/internal/v1/clusters/{self.cluster_id}/utilization",
            json=body,
            headers={"Authorization": f"Bearer {token}"},
        )

    async def row(self, session_id: str) -> InteractiveSession:
        async with self.build.sessions() as db:
            row = await db.get(InteractiveSession, uuid.UUID(session_id))
        assert row is not None
        return row

    async def running(self, member: int = 0, tier: str | None = "1/4", **extra: Any) -> dict:
        created = await self.create(member, tier, **extra)
        assert created["state"] == "starting", created
        assert (await self.report(created["id"], "Running")).status_code == 200
        return await self.read(member, created["id"])


async def signed_in(build: Builder, user_id: uuid.UUID) -> httpx.AsyncClient:
    """A client signed in as a user the capacity builders made (they have no password)."""
    async with build.sessions() as db, db.begin():
        await db.execute(
            update(User).where(User.id == user_id).values(password_hash=hashed(PASSWORD))
        )
    async with build.sessions() as db:
        user = (await db.scalars(select(User).where(User.id == user_id))).one()
    return await build.signed_in(user)


async def session_world(
    build: Builder, *, n_cards: int = 2, users: int = 2, user_credits: int = 100
) -> SessionWorld:
    capacity = await capacity_world(
        build.sessions, build.clock.now(), n_cards=n_cards, users=users, user_credits=user_credits
    )
    members = [await signed_in(build, u) for u in capacity.user_ids]
    await members[0].get("/.well-known/gshare-internal-jwks.json")  # creates the key set
    return SessionWorld(build, capacity, members)


async def admission_loop_turn(build: Builder) -> None:
    """One turn of the worker's admission loop: the queue, then the notices (preemption and
    drains), then the queue again for the cards the notices freed."""
    settings = settings_of(build)
    await capacity_tasks.dequeue_once(build.sessions, settings, build.clock.now())
    await capacity_tasks.preempt_once(build.sessions, settings, build.clock.now())
    await capacity_tasks.dequeue_once(build.sessions, settings, build.clock.now())


def settings_of(build: Builder) -> Settings:
    settings: Settings = build.app.state.settings
    return settings
