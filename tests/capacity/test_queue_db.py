"""The admission queue on the real database: fair-share order between groups, anti-starvation
reservations, requests skipped for credits, cancelled, dropped or refused at dequeue."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest
from sqlalchemy import delete, update

from gshare.capacity import admission, repository, service
from gshare.credits import operations
from gshare.identity.authz import Context
from gshare.identity.models import Group, Organization, User
from gshare.identity.permissions import Actor
from gshare.kit.errors import Conflict, NotFound
from tests.builders import Builder
from tests.capacity.builders import (
    admit,
    allocations_of,
    another_group,
    apply,
    capacity_world,
    card_rows,
    cards,
    dequeue,
    release,
    request_row,
    set_policy,
    super_admin,
)
from tests.credits.builders import assert_ledger_clean


async def _standings(sessions, now, settings):
    async with sessions() as db:
        return await admission.standings(db, now, settings)


async def test_the_light_groups_request_goes_first_once_the_heavy_group_has_usage(
    sessions, clock
) -> None:
    t0 = clock.now()
    w = await capacity_world(sessions, t0, n_cards=1, users=2)
    light = await another_group(sessions, t0)
    running = await admit(sessions, w.ask(0, "exclusive"), t0, w.settings)
    assert running.allocation is not None
    heavy_wait = await admit(sessions, w.ask(1, "exclusive"), t0, w.settings)
    later = t0 + timedelta(minutes=10)
    light_wait = await admit(sessions, light.ask(w, 0, "exclusive"), later, w.settings)
    assert heavy_wait.position == 1
    assert light_wait.position == 2

    async with sessions() as db, db.begin():
        heavy = await db.get(Group, w.group_id)
        assert heavy is not None
        # As sampling keeps it: the group's usage, and its organization's.
        await repository.store_usage(
            db,
            [
                {"subject_kind": kind, "subject_id": subject, "usage": 2.0, "sampled_at": t0}
                for kind, subject in (("group", w.group_id), ("org", heavy.org_id))
            ],
        )
    order = await _standings(sessions, later, w.settings)
    assert order[light_wait.request.id].position == 1
    assert order[heavy_wait.request.id].position == 2
    assert order[light_wait.request.id].priority.value > order[heavy_wait.request.id].priority.value

    await release(sessions, running.request.id, later)
    summary = await dequeue(sessions, later, w.settings)
    assert summary.admitted == [light_wait.request.id]
    assert (await request_row(sessions, heavy_wait.request.id)).status == "queued"


async def test_a_starving_exclusive_request_reserves_a_card_small_ones_stay_off(
    sessions, clock
) -> None:
    t0 = clock.now()
    w = await capacity_world(sessions, t0, n_cards=2, users=2)
    quarters = [await admit(sessions, w.ask(0, "1/4"), t0, w.settings) for _ in range(5)]
    assert all(q.allocation is not None for q in quarters)
    lone = quarters[4].allocation
    assert lone is not None
    whole = await admit(sessions, w.ask(1, "exclusive"), t0, w.settings)
    assert whole.request.status == "queued"

    early = await dequeue(sessions, t0 + timedelta(minutes=30), w.settings)
    assert early.reserved == {}  # not starving yet

    starving = t0 + timedelta(minutes=w.settings.starvation_limit_minutes + 1)
    summary = await dequeue(sessions, starving, w.settings)
    assert summary.reserved == {lone.card_id: whole.request.id}
    assert (await request_row(sessions, whole.request.id)).reserved_card_id == lone.card_id

    small = await admit(sessions, w.ask(0, "1/4"), starving, w.settings)
    assert small.allocation is None
    assert small.request.status == "queued"
    again = await dequeue(sessions, starving, w.settings)
    assert again.admitted == []
    assert again.reserved == {lone.card_id: whole.request.id}

    await release(sessions, lone.request_id, starving)
    summary = await dequeue(sessions, starving, w.settings)
    assert summary.admitted == [whole.request.id]
    [placed] = await allocations_of(sessions, whole.request.id)
    assert placed.card_id == lone.card_id
    assert (await request_row(sessions, small.request.id)).status == "queued"
    assert (await request_row(sessions, whole.request.id)).reserved_card_id is None


async def test_a_request_its_owner_cannot_pay_for_is_skipped_others_admitted(
    sessions, clock
) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=3, user_credits=20)
    running = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    poor = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    other = await admit(sessions, w.ask(2, "1/2"), now + timedelta(seconds=1), w.settings)
    assert poor.request.status == other.request.status == "queued"
    async with sessions() as db, db.begin():
        await operations.move(
            db,
            from_id=w.wallets.users[1],
            to_id=w.wallets.group,
            amount=15 * 10**6,
            kind="return",
            now=now,
        )

    await release(sessions, running.request.id, now)
    summary = await dequeue(sessions, now, w.settings)
    assert summary.insufficient_credits == [poor.request.id]
    assert summary.admitted == [other.request.id]
    skipped = await request_row(sessions, poor.request.id)
    assert skipped.status == "insufficient_credits"
    assert skipped.reason
    assert skipped.decided_at == now
    assert await allocations_of(sessions, poor.request.id) == []
    await assert_ledger_clean(sessions)


async def test_only_a_queued_request_is_cancelled_and_only_by_whom_it_concerns(
    sessions, clock
) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=2)
    running = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    waiting = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    owner = Actor(w.user_ids[1], "owner@example.org", member_of={w.group_id: w.group_id})
    stranger = Actor(w.user_ids[0], "other@example.org")

    async with sessions() as db, db.begin():
        with pytest.raises(NotFound) as hidden:
            await admission.cancel(Context(db, stranger, now), waiting.request.id)
    assert hidden.value.status == 404
    async with sessions() as db, db.begin():
        with pytest.raises(Conflict) as admitted:
            await admission.cancel(
                Context(db, Actor(w.user_ids[0], "o@example.org"), now), running.request.id
            )
    assert admitted.value.code == "not_queued"

    async with sessions() as db, db.begin():
        cancelled = await admission.cancel(Context(db, owner, now), waiting.request.id)
        assert cancelled.status == "cancelled"
    async with sessions() as db, db.begin():
        with pytest.raises(Conflict):
            await admission.cancel(Context(db, owner, now), waiting.request.id)

    await release(sessions, running.request.id, now)
    summary = await dequeue(sessions, now, w.settings)
    assert summary.admitted == []
    assert (await request_row(sessions, waiting.request.id)).status == "cancelled"


async def test_a_deactivated_users_request_is_dropped_at_dequeue(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=3)
    running = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    gone = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    stays = await admit(sessions, w.ask(2, "exclusive"), now + timedelta(seconds=1), w.settings)
    async with sessions() as db, db.begin():
        await db.execute(update(User).where(User.id == w.user_ids[1]).values(active=False))
    await release(sessions, running.request.id, now)
    summary = await dequeue(sessions, now, w.settings)
    assert summary.dropped == [gone.request.id]
    assert summary.admitted == [stays.request.id]
    dropped = await request_row(sessions, gone.request.id)
    assert dropped.status == "dropped"
    assert dropped.reason


async def test_a_retired_tiers_request_is_refused_at_dequeue(sessions, clock) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=3)
    running = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    retired = await admit(sessions, w.ask(1, "1/2"), now, w.settings)
    stays = await admit(sessions, w.ask(2, "exclusive"), now + timedelta(seconds=1), w.settings)
    root = await super_admin(sessions, now)
    async with sessions() as db, db.begin():
        await service.retire_tier(Context(db, root, now), w.tiers["1/2"].id)
    await release(sessions, running.request.id, now)
    summary = await dequeue(sessions, now, w.settings)
    assert summary.refused == [retired.request.id]
    assert summary.admitted == [stays.request.id]
    refused = await request_row(sessions, retired.request.id)
    assert refused.status == "refused"
    assert "retired" in refused.reason
    card = next(iter((await card_rows(sessions, w.cluster_id)).values()))
    assert card.carved_tier_id == w.tiers["exclusive"].id


async def test_a_request_the_policy_now_refuses_is_refused_and_others_admitted(
    sessions, clock
) -> None:
    now = clock.now()
    w = await capacity_world(sessions, now, n_cards=1, users=3)
    running = await admit(sessions, w.ask(0, "exclusive"), now, w.settings)
    denied = await admit(sessions, w.ask(1, "exclusive"), now, w.settings)
    stays = await admit(sessions, w.ask(2, "exclusive"), now + timedelta(seconds=1), w.settings)
    await set_policy(sessions, now, "user", w.user_ids[1], {"allowed_tiers": ["1/8"]})
    await release(sessions, running.request.id, now)
    summary = await dequeue(sessions, now, w.settings)
    assert summary.refused == [denied.request.id]
    assert summary.admitted == [stays.request.id]
    refused = await request_row(sessions, denied.request.id)
    assert refused.status == "refused"
    assert "user policy" in refused.reason


async def test_a_reservation_moves_when_its_card_goes_unhealthy(sessions, clock) -> None:
    t0 = clock.now()
    w = await capacity_world(sessions, t0, n_cards=3, users=2)
    quarters = [await admit(sessions, w.ask(0, "1/4"), t0, w.settings) for _ in range(9)]
    assert all(q.allocation is not None for q in quarters)
    whole = await admit(sessions, w.ask(1, "exclusive"), t0, w.settings)
    assert whole.request.status == "queued"
    starving = t0 + timedelta(minutes=w.settings.starvation_limit_minutes + 1)
    first = await dequeue(sessions, starving, w.settings)
    [(sick_id, holder)] = first.reserved.items()
    assert holder == whole.request.id

    found = {c.id: c for c in (await card_rows(sessions, w.cluster_id)).values()}
    sick = found[sick_id].uuid
    reported = [dataclasses.replace(c, healthy=c.uuid != sick) for c in cards(3)]
    assert await apply(sessions, w.cluster_id, 2, reported, starving)
    moved = await dequeue(sessions, starving, w.settings)
    [(card_id, holder)] = moved.reserved.items()
    assert holder == whole.request.id
    assert card_id != sick_id
    assert (await request_row(sessions, whole.request.id)).reserved_card_id == card_id


async def test_sampling_folds_held_cards_into_usage_once_per_interval(sessions, clock) -> None:
    t0 = clock.now()
    w = await capacity_world(sessions, t0, n_cards=2, users=1)
    idle = await another_group(sessions, t0)
    assert (await admit(sessions, w.ask(0, "exclusive"), t0, w.settings)).allocation

    async def sample(at):
        async with sessions() as db, db.begin():
            return await admission.sample_usage(db, at, w.settings)

    async def usage():
        async with sessions() as db:
            return {(r.subject_kind, r.subject_id): r.usage for r in await repository.usage(db)}

    entry = (await usage())[("group", w.group_id)]
    assert entry > 0  # the entry penalty, before any sample
    step = timedelta(seconds=w.settings.fair_share_interval_seconds)
    assert await sample(t0 + step)
    assert not await sample(t0 + step + step / 2)  # within one interval of the last
    assert await sample(t0 + 2 * step)
    sampled = await usage()
    assert sampled[("group", w.group_id)] > entry
    assert sampled[("user", w.user_ids[0])] == sampled[("group", w.group_id)]
    assert ("group", idle.group_id) not in sampled


async def test_an_organizations_usage_outlives_the_group_it_was_used_in(sessions, clock) -> None:
    """An organization's usage is kept in its own row: a group used and then deleted (its
    members gone, its sessions stopped) takes none of it away, so a new group cannot wash an
    organization's recent use off."""
    t0 = clock.now()
    w = await capacity_world(sessions, t0, n_cards=2, users=1)
    request = w.ask(0, "exclusive")
    assert (await admit(sessions, request, t0, w.settings)).allocation
    step = timedelta(seconds=w.settings.fair_share_interval_seconds)
    for n in (1, 2, 3):
        async with sessions() as db, db.begin():
            assert await admission.sample_usage(db, t0 + n * step, w.settings)
    await release(sessions, request.request_id, t0 + 3 * step)
    async with sessions() as db:
        group = await db.get(Group, w.group_id)
        assert group is not None
        org_id = group.org_id
        before = (await admission.usage_state(db)).by_org[org_id]
    assert before > 0
    # The group goes, as an org admin may delete one whose members left.
    async with sessions() as db, db.begin():
        await db.execute(delete(Group).where(Group.id == w.group_id))
    async with sessions() as db:
        assert (await admission.usage_state(db)).by_org[org_id] == pytest.approx(before)


async def test_a_weight_an_org_admin_sets_on_its_group_does_not_move_it_ahead_of_another_org(
    build: Builder,
) -> None:
    """Two organizations used as much lately. One's admin weighs its group 1000 (a key its
    admins may set): its member's later request stays behind the other organization's."""
    sessions, t0 = build.sessions, build.clock.now()
    w = await capacity_world(sessions, t0, n_cards=1, users=2)
    other = await another_group(sessions, t0)
    running = await admit(sessions, w.ask(0, "exclusive"), t0, w.settings)
    assert running.allocation is not None
    earlier = await admit(sessions, other.ask(w, 0, "exclusive"), t0, w.settings)
    async with sessions() as db, db.begin():
        org = await db.get(Organization, (await db.get(Group, w.group_id)).org_id)  # type: ignore[union-attr]
        assert org is not None
        theirs = (await db.get(Group, other.group_id)).org_id  # type: ignore[union-attr]
        await repository.store_usage(
            db,
            [
                {"subject_kind": kind, "subject_id": s, "usage": 2.0, "sampled_at": t0}
                for kind, s in (
                    ("group", w.group_id),
                    ("group", other.group_id),
                    ("org", org.id),
                    ("org", theirs),
                )
            ],
        )
    admin = await build.user()
    await build.org_admin(admin, org)
    org_admin = await build.signed_in(admin)
    weighed = await org_admin.put(
        f"/api/v1/policies/groups/{w.group_id}", json={"values": {"queue_weight": 1000}}
    )
    assert weighed.status_code == 200, weighed.text

    later = t0 + timedelta(minutes=20)
    weighted = await admit(sessions, w.ask(1, "exclusive"), later, w.settings)
    order = await _standings(sessions, later, w.settings)
    assert order[earlier.request.id].position == 1
    assert order[weighted.request.id].position == 2
    await release(sessions, running.request.id, later)
    summary = await dequeue(sessions, later, w.settings)
    assert summary.admitted == [earlier.request.id]
    assert (await request_row(sessions, weighted.request.id)).status == "queued"
