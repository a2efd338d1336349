"""The image catalog and volumes through the API: who manages what, the storage limit, shared
volumes of a group, and the inputs a hostile caller might send."""

from __future__ import annotations

import asyncio
import uuid

from tests.builders import Builder
from tests.capacity.builders import set_policy
from tests.sessions.world import API, JUPYTER_IMAGE, session_world


async def test_the_catalog_is_seeded_and_only_the_super_admin_changes_it(build: Builder) -> None:
    w = await session_world(build)
    listed = (await w.members[0].get(f"{API}/catalog")).json()["items"]
    assert {i["session_type"] for i in listed} == {"jupyterlab", "vscode", "terminal"}
    body = {"session_type": "terminal", "name": "Plain shell", "reference": "registry.local/sh:2"}
    assert (await w.members[0].post(f"{API}/catalog", json=body)).status_code == 403
    root = await build.signed_in(await build.user("Root", super_admin=True))
    added = await root.post(f"{API}/catalog", json=body)
    assert added.status_code == 201, added.text
    twice = await asyncio.gather(*(root.post(f"{API}/catalog", json=body) for _ in range(2)))
    assert [r.status_code for r in twice] == [409, 409]
    image_id = added.json()["id"]
    off = await root.patch(f"{API}/catalog/{image_id}", json={"enabled": False})
    assert off.json()["enabled"] is False
    seen = (await w.members[0].get(f"{API}/catalog")).json()["items"]
    assert image_id not in {i["id"] for i in seen}
    everything = (await root.get(f"{API}/catalog?include_disabled=true")).json()["items"]
    assert image_id in {i["id"] for i in everything}
    # A disabled image, or one of another type, cannot start a session.
    refused = await w.members[0].post(
        f"{API}/sessions", json=w.body(None, image_id=image_id, session_type="terminal")
    )
    assert refused.status_code == 404
    assert refused.json()["error"]["code"] == "image_not_found"
    mismatched = await w.members[0].post(
        f"{API}/sessions", json=w.body(None, session_type="vscode", image_id=JUPYTER_IMAGE)
    )
    assert mismatched.status_code == 404
    for bad in ("", "UPPER/Case", "a" * 513, "img\x00:1", "img:1;rm -rf /", " "):
        response = await root.post(f"{API}/catalog", json=body | {"name": "x", "reference": bad})
        assert response.status_code == 422, bad


async def test_home_volumes_obey_the_storage_limit_and_are_kept_after_a_stop(
    build: Builder,
) -> None:
    w = await session_world(build)
    await set_policy(build.sessions, build.clock.now(), "group", w.group_id, {"storage_gb": 30})
    first = await w.create(0, None, home_size_gib=20)
    home = first["volumes"][0]["volume_id"]
    too_big = await w.members[0].post(f"{API}/sessions", json=w.body(None, home_size_gib=20))
    assert too_big.status_code == 403
    assert too_big.json()["error"]["code"] == "storage_limit"
    # The same home cannot be mounted by two sessions at once.
    busy = await w.members[0].post(f"{API}/sessions", json=w.body(None, home_volume_id=home))
    assert busy.status_code == 409
    volumes = (await w.members[0].get(f"{API}/volumes")).json()
    assert volumes["home_total_gib"] == 20
    assert volumes["storage_limit_gib"] == 30
    (mine,) = volumes["items"]
    assert [u["session_id"] for u in mine["used_by"]] == [first["id"]]
    assert (await w.members[0].delete(f"{API}/volumes/{home}")).status_code == 409
    await w.act(0, first["id"], "stop")
    await _removed(build, first["id"])
    again = await w.create(0, None, home_volume_id=home)
    assert again["volumes"][0]["volume_id"] == home
    # Someone else's home is not theirs to mount or delete.
    stolen = await w.members[1].post(f"{API}/sessions", json=w.body(None, home_volume_id=home))
    assert stolen.status_code == 404
    assert (await w.members[1].delete(f"{API}/volumes/{home}")).status_code == 404
    assert (await w.members[1].get(f"{API}/volumes")).json()["items"] == []


async def _removed(build: Builder, session_id: str) -> None:
    from gshare.sessions import service
    from gshare.sessions.models import InteractiveSession

    async with build.sessions() as db, db.begin():
        row = await db.get(InteractiveSession, uuid.UUID(session_id), with_for_update=True)
        assert row is not None
        await service.removed(db, row, build.clock.now())


async def test_group_admins_make_shared_volumes_that_members_mount(build: Builder) -> None:
    w = await session_world(build)
    admin = await build.signed_in(await build.user("Root", super_admin=True))
    created = await admin.post(
        f"{API}/groups/{w.group_id}/volumes",
        json={"name": "datasets", "size_gib": 100, "access_mode": "ReadOnlyMany"},
    )
    assert created.status_code == 201, created.text
    shared = created.json()["id"]
    same = await admin.post(
        f"{API}/groups/{w.group_id}/volumes", json={"name": "datasets", "size_gib": 1}
    )
    assert same.status_code == 409
    assert (
        await w.members[0].post(
            f"{API}/groups/{w.group_id}/volumes", json={"name": "mine", "size_gib": 1}
        )
    ).status_code == 403
    session = await w.create(0, None, shared_volume_ids=[shared])
    mounts = {v["mount_path"]: v["read_only"] for v in session["volumes"]}
    assert mounts == {"/home/gshare": False, "/shared/datasets": True}
    listed = (await w.members[1].get(f"{API}/volumes")).json()["items"]
    assert [v["name"] for v in listed] == ["datasets"]
    in_use = await admin.delete(f"{API}/groups/{w.group_id}/volumes/{shared}")
    assert in_use.status_code == 409
    for name in ("Upper", "-dash", "a" * 41, "x\x00y", ""):
        bad = await admin.post(
            f"{API}/groups/{w.group_id}/volumes", json={"name": name, "size_gib": 1}
        )
        assert bad.status_code == 422, name


async def test_hostile_session_inputs_get_clear_errors(build: Builder) -> None:
    w = await session_world(build)
    member = w.members[0]
    cases = [
        w.body(None, name="x" * 81),
        w.body(None, name="bad\x00name"),
        w.body(None, cpu_millicores=10**12),
        w.body(None, memory_mib=-1),
        w.body(None, home_size_gib=0),
        w.body(None, shared_volume_ids=[str(uuid.uuid4()) for _ in range(9)]),
        w.body(None, session_type="emacs"),
        w.body(None, unknown=1),
        {},
    ]
    for body in cases:
        response = await member.post(f"{API}/sessions", json=body)
        assert response.status_code == 422, (body, response.text)
    other_group = await member.post(
        f"{API}/sessions", json=w.body(None, group_id=str(uuid.uuid4()))
    )
    assert other_group.status_code == 404
    unknown_tier = await member.post(
        f"{API}/sessions", json=w.body(None, tier_id=str(uuid.uuid4()))
    )
    assert unknown_tier.status_code == 404
    for path in ("not-a-uuid", "00000000-0000-0000-0000-000000000000"):
        assert (await member.get(f"{API}/sessions/{path}")).status_code in (404, 422)
    listed = await member.get(f"{API}/sessions", params={"state": ["nonsense"]})
    assert listed.status_code == 422
    assert (await member.get(f"{API}/sessions")).json()["items"] == []  # nothing was created


async def test_the_same_create_twice_at_once_makes_two_sessions_and_bills_each(
    build: Builder,
) -> None:
    w = await session_world(build)
    made = await asyncio.gather(
        *(w.members[0].post(f"{API}/sessions", json=w.body()) for _ in range(2))
    )
    assert [m.status_code for m in made] == [201, 201]
    assert {m.json()["state"] for m in made} == {"starting"}
    assert len({m.json()["volumes"][0]["volume_id"] for m in made}) == 2


async def test_creates_at_once_cannot_pass_the_storage_limit(build: Builder) -> None:
    w = await session_world(build)
    await set_policy(build.sessions, build.clock.now(), "group", w.group_id, {"storage_gb": 20})
    burst = (
        w.members[0].post(f"{API}/sessions", json=w.body(None, home_size_gib=10)) for _ in range(5)
    )
    made = await asyncio.gather(*burst)
    assert sorted(r.status_code for r in made) == [201, 201, 403, 403, 403]
    assert (await w.members[0].get(f"{API}/volumes")).json()["home_total_gib"] == 20


async def test_a_shared_volume_is_never_both_deleted_and_mounted(build: Builder) -> None:
    w = await session_world(build, users=1)
    admin = await build.signed_in(await build.user("Root", super_admin=True))
    for n in range(5):
        volume = await admin.post(
            f"{API}/groups/{w.group_id}/volumes", json={"name": f"data-{n}", "size_gib": 1}
        )
        volume_id = volume.json()["id"]
        mount = w.members[0].post(
            f"{API}/sessions", json=w.body(None, shared_volume_ids=[volume_id])
        )
        delete = admin.delete(f"{API}/groups/{w.group_id}/volumes/{volume_id}")
        mounted, deleted = await asyncio.gather(mount, delete)
        assert (mounted.status_code, deleted.status_code) in ((201, 409), (404, 204))


async def test_members_see_only_their_own_sessions_on_a_shared_volume(build: Builder) -> None:
    w = await session_world(build)
    admin = await build.signed_in(await build.user("Root", super_admin=True))
    shared = (
        await admin.post(f"{API}/groups/{w.group_id}/volumes", json={"name": "team", "size_gib": 5})
    ).json()["id"]
    secret = await w.create(0, None, name="secret-project", shared_volume_ids=[shared])
    mine = await w.create(1, None, name="mine", shared_volume_ids=[shared])
    for path in (f"{API}/volumes", f"{API}/groups/{w.group_id}/volumes"):
        items = (await w.members[1].get(path)).json()["items"]
        (seen,) = [v for v in items if v["name"] == "team"]
        assert [u["session_id"] for u in seen["used_by"]] == [mine["id"]], path
        assert seen["used_by_others"] == 1
    (everything,) = (await admin.get(f"{API}/groups/{w.group_id}/volumes")).json()["items"]
    assert {u["session_id"] for u in everything["used_by"]} == {secret["id"], mine["id"]}


async def test_names_with_control_characters_are_refused(build: Builder) -> None:
    w = await session_world(build)
    for name in ("a\nb", "red\x1b[31m", "\u202egnp.exe", "\ufeff", "bell\x07"):
        response = await w.members[0].post(f"{API}/sessions", json=w.body(None, name=name))
        assert response.status_code == 422, name
