"""Small builders for test data, written straight to the database, and signed-in API clients."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from datetime import datetime

import httpx
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gshare.clusters.models import Cluster
from gshare.identity.models import AdminGrant, Group, Membership, Organization, User
from gshare.identity.passwords import hash_password_sync
from gshare.kit.clock import FrozenClock
from gshare.sessions.models import InteractiveSession

PASSWORD = "plum-tractor-velvet-42"
_hashes: dict[str, str] = {}
_seq = itertools.count(1)


def hashed(password: str) -> str:
    if password not in _hashes:
        _hashes[password] = hash_password_sync(password)
    return _hashes[password]


@dataclass
class Builder:
    sessions: async_sessionmaker[AsyncSession]
    clock: FrozenClock
    app: FastAPI
    clients: list[httpx.AsyncClient] = field(default_factory=list)

    async def _add(self, *rows: object) -> None:
        async with self.sessions() as db, db.begin():
            db.add_all(rows)

    async def user(
        self,
        name: str | None = None,
        *,
        email: str | None = None,
        password: str = PASSWORD,
        super_admin: bool = False,
        must_change: bool = False,
        active: bool = True,
    ) -> User:
        n = next(_seq)
        name = name or f"User {n}"
        email = email or f"{name.lower().replace(' ', '.')}.{n}@example.org"
        user = User(
            id=uuid.uuid4(),
            email=email.lower(),
            name=name,
            password_hash=hashed(password),
            must_change_password=must_change,
            is_super_admin=super_admin,
            active=active,
            created_at=self.clock.now(),
            password_changed_at=self.clock.now(),
        )
        await self._add(user)
        return user

    async def org(self, name: str | None = None) -> Organization:
        org = Organization(
            id=uuid.uuid4(), name=name or f"Org {next(_seq)}", created_at=self.clock.now()
        )
        await self._add(org)
        return org

    async def group(self, org: Organization, name: str | None = None) -> Group:
        group = Group(
            id=uuid.uuid4(),
            org_id=org.id,
            name=name or f"Group {next(_seq)}",
            created_at=self.clock.now(),
        )
        await self._add(group)
        return group

    async def member(
        self, user: User, group: Group, role: str = "member", expires_at: datetime | None = None
    ) -> Membership:
        membership = Membership(
            user_id=user.id,
            group_id=group.id,
            role=role,
            expires_at=expires_at,
            created_at=self.clock.now(),
        )
        await self._add(membership)
        return membership

    async def org_admin(self, user: User, org: Organization) -> None:
        await self._add(
            AdminGrant(
                id=uuid.uuid4(),
                user_id=user.id,
                role="org_admin",
                org_id=org.id,
                created_at=self.clock.now(),
            )
        )

    async def group_admin(self, user: User, group: Group) -> None:
        await self._add(
            AdminGrant(
                id=uuid.uuid4(),
                user_id=user.id,
                role="group_admin",
                group_id=group.id,
                created_at=self.clock.now(),
            )
        )

    async def cluster(
        self, name: str | None = None, *, sessions_domain: str = "sessions.gshare.local"
    ) -> Cluster:
        cluster = Cluster(
            id=uuid.uuid4(),
            name=name or f"cluster-{next(_seq)}",
            api_server="https://127.0.0.1:1",
            sessions_domain=sessions_domain,
            status="connected",
            status_message="",
            inventory_sequence=0,
            created_at=self.clock.now(),
        )
        await self._add(cluster)
        return cluster

    async def interactive_session(
        self,
        owner: User,
        cluster: Cluster | None,
        *,
        desired_state: str = "Running",
        phase: str = "Pending",
        ended: bool = False,
        group: Group | None = None,
    ) -> InteractiveSession:
        """A session as admission would have placed it on `cluster`, run for `group` (by
        default a new group the owner is a member of)."""
        if group is None:
            group = await self.group(await self.org())
            await self.member(owner, group)
        row = InteractiveSession(
            id=uuid.uuid4(),
            owner_id=owner.id,
            group_id=group.id,
            session_type="jupyterlab",
            cluster_id=cluster.id if cluster else None,
            desired_state=desired_state,
            created_at=self.clock.now(),
            ended_at=self.clock.now() if ended else None,
            phase=phase,
            state={"Running": "running", "Paused": "paused", "Failed": "failed"}.get(
                phase, "starting"
            ),
            phase_message="",
            observed_generation=0,
            status_sequence=0,
        )
        await self._add(row)
        return row

    def anonymous(self, client_ip: str = "198.51.100.10") -> httpx.AsyncClient:
        transport = httpx.ASGITransport(app=self.app, client=(client_ip, 40000))
        client = httpx.AsyncClient(transport=transport, base_url="http://testserver")
        self.clients.append(client)
        return client

    async def signed_in(self, user: User, password: str = PASSWORD) -> httpx.AsyncClient:
        """A client signed in as `user`, sending its CSRF token on every request."""
        client = self.anonymous()
        response = await client.post(
            "/api/v1/auth/login", json={"email": user.email, "password": password}
        )
        assert response.status_code == 200, response.text
        client.headers["X-CSRF-Token"] = response.json()["csrf_token"]
        return client

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()
