"""Lists of wallets load what they show in batches: the wallet tree runs as many statements for
thirty members as for three."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from gshare.identity.models import Organization
from tests.builders import Builder


@contextmanager
def counted(engine: AsyncEngine) -> Iterator[list[str]]:
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(args[2])

    event.listen(engine.sync_engine, "before_cursor_execute", count)
    try:
        yield statements
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", count)


async def _org_with(build: Builder, members: int) -> Organization:
    org = await build.org(f"Org of {members}")
    for g in range(2):
        group = await build.group(org, f"Group {g}")
        for m in range(members):
            await build.member(await build.user(f"Member {g}-{m}"), group)
    return org


async def _tree(client: httpx.AsyncClient, engine: AsyncEngine, org: Organization) -> list[str]:
    with counted(engine) as statements:
        response = await client.get(f"/api/v1/orgs/{org.id}/wallet-tree")
    assert response.status_code == 200, response.text
    return statements


async def test_the_wallet_tree_runs_the_same_statements_for_any_number_of_members(
    build: Builder, engine: AsyncEngine
) -> None:
    small, large = await _org_with(build, 3), await _org_with(build, 30)
    admin = await build.user("Olga Admin")
    await build.org_admin(admin, small)
    await build.org_admin(admin, large)
    client = await build.signed_in(admin)
    # The first call creates the wallets, the second finds them.
    first = [await _tree(client, engine, org) for org in (small, large)]
    again = [await _tree(client, engine, org) for org in (small, large)]
    assert len(first[0]) == len(first[1]), (first[0], first[1])
    assert len(again[0]) == len(again[1]), (again[0], again[1])
    tree = (await client.get(f"/api/v1/orgs/{large.id}/wallet-tree")).json()
    assert [len(g["members"]) for g in tree["groups"]] == [30, 30]
    assert tree["groups"][0]["members"][0]["owner_name"] == "Member 0-0"
