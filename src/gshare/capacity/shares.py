"""A group's GPU use against its share, as its members see it, at both levels of fair share:
its organization's decayed usage, cards in use and share of the cards among the organizations
running or waiting, and the group's the same way within its organization (the shares
preemption defends), how the group's use went over the decay window, its organization's other
groups the same way (no users), and, for its admins, each member's."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from gshare.capacity import queue, repository, service
from gshare.capacity.admission import fair_share
from gshare.capacity.preemption import split_shares
from gshare.identity import service as identity
from gshare.identity.authz import Context, require
from gshare.identity.permissions import Action, is_allowed
from gshare.kit.settings import Settings

# The chart shows two half-lives, computed from six back (what is left out weighs under 2 %).
SHOWN_HALF_LIVES = 2
COMPUTED_HALF_LIVES = 6
POINTS = 48


@dataclass(frozen=True)
class Standing:
    group_id: uuid.UUID
    name: str
    usage: float  # decayed, in cards: what the queue weighs
    in_use: float  # cards now
    share: float | None  # of its organization's; None: neither running nor waiting
    weight: float = 1.0  # its weight among its organization's groups


@dataclass(frozen=True)
class OrgStanding:
    org_id: uuid.UUID
    name: str
    usage: float  # decayed, in cards: the sum of its groups'
    in_use: float  # cards now
    share: float  # of the cards, among the organizations running or waiting (with it)
    weight: float  # its weight among organizations


@dataclass(frozen=True)
class MemberUse:
    user_id: uuid.UUID
    email: str
    usage: float  # the user's decayed usage (across their groups), as the queue weighs it
    in_use: float  # cards now, within this group


@dataclass(frozen=True)
class GroupShare:
    group: Standing
    org_id: uuid.UUID
    org_name: str
    cards: int
    active_groups: int  # of its organization, running or waiting (with it)
    settings: queue.FairShareSettings
    history: list[queue.UsePoint]
    groups: list[Standing]
    members: list[MemberUse] | None
    org: OrgStanding
    active_orgs: int  # running or waiting (with its own)


def _cards(interval: repository.UseInterval) -> float:
    return queue.card_share(interval.kind, interval.denominator, interval.compute_percent)


async def group_share(ctx: Context, group_id: uuid.UUID, settings: Settings) -> GroupShare:
    scope = await identity.scope_of_group(ctx.db, group_id)
    require(ctx, Action.FAIR_SHARE_READ, scope, target_type="group", target_id=group_id)
    assert scope.org_id is not None
    db, now, org_id = ctx.db, ctx.now, scope.org_id
    fair = fair_share(settings)
    org_groups = await identity.groups_of_org(db, org_id)
    names = {g.id: g.name for g in org_groups}
    since = now - fair.half_life * COMPUTED_HALF_LIVES
    intervals = await repository.use_intervals(db, list(names), since)
    usage = await repository.usage_of(db, "group", list(names))
    active = await repository.active_groups(db)
    cards = await repository.usable_card_count(db)
    # Its shares as if it joined, when it is neither running nor waiting.
    splitting = active | {group_id}
    tenants = await service.fair_share_tenants(db, splitting | set(names))
    shares = split_shares(float(cards), splitting, tenants)
    in_use: dict[uuid.UUID, float] = {}
    for i in intervals:
        if i.released_at is None:
            in_use[i.group_id] = in_use.get(i.group_id, 0.0) + _cards(i)
    standings = [
        Standing(
            g,
            names[g],
            usage.get(g, 0.0),
            in_use.get(g, 0.0),
            shares.groups.get(g) if g in splitting else None,
            tenants.group_weight(g),
        )
        for g in sorted(names, key=lambda g: names[g].lower())
    ]
    mine = next(s for s in standings if s.group_id == group_id)
    shown_from = now - fair.half_life * SHOWN_HALF_LIVES
    curve = queue.usage_curve(
        [(i.admitted_at, i.released_at, _cards(i)) for i in intervals if i.group_id == group_id],
        since,
        now,
        (now - shown_from) / POINTS,
        fair,
    )
    history = [p for p in curve if p.at >= shown_from]
    members = None
    if is_allowed(ctx.actor, Action.FAIR_SHARE_USERS_READ, scope):
        members = await _members(ctx, group_id, intervals)
    org_name = (await identity.names(db, "org", [org_id])).get(org_id, "")
    org_usage = await repository.usage_of(db, "org", [org_id])
    org = OrgStanding(
        org_id,
        org_name,
        org_usage.get(org_id, 0.0),
        sum(in_use.values()),
        shares.orgs.get(org_id, 0.0),
        tenants.org_weight(org_id),
    )
    return GroupShare(
        mine,
        org_id,
        org_name,
        cards,
        sum(1 for g in splitting if g in names),
        fair,
        history,
        standings,
        members,
        org,
        len({tenants.org(g) for g in splitting}),
    )


async def _members(
    ctx: Context, group_id: uuid.UUID, intervals: list[repository.UseInterval]
) -> list[MemberUse]:
    listed = (await identity.members_of_groups(ctx.db, [group_id])).get(group_id, [])
    # Members now: a guest whose membership expired is no longer one.
    current = await identity.current_memberships_among(
        ctx.db, [(u, group_id) for u in listed], ctx.now
    )
    ids = [u for u in listed if (u, group_id) in current]
    emails = await identity.emails(ctx.db, ids)
    usage = await repository.usage_of(ctx.db, "user", ids)
    now_in_use: dict[uuid.UUID, float] = {}
    for i in intervals:
        if i.group_id == group_id and i.released_at is None:
            now_in_use[i.user_id] = now_in_use.get(i.user_id, 0.0) + _cards(i)
    out = [MemberUse(u, emails.get(u, ""), usage.get(u, 0.0), now_in_use.get(u, 0.0)) for u in ids]
    return sorted(out, key=lambda m: (-m.usage, m.email))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def in_words(found: GroupShare) -> str:
    """What the numbers mean for the group's requests, in the queue's own terms: first its
    organization among organizations, then the group within its organization."""
    g, org, fair = found.group, found.org, found.settings
    hours = fair.half_life.total_seconds() / 3600
    half_life = f"{hours:g} hour" + ("" if hours == 1 else "s")
    parts = [
        f"{org.name} runs {org.in_use:.2f} cards now; its share is {org.share:.2f} of "
        f"{found.cards} cards, split by weight among the "
        f"{_plural(found.active_orgs, 'organization')} running or waiting."
    ]
    share = (
        f"its share is {g.share:.2f} of its organization's, split by weight among the "
        f"organization's {_plural(found.active_groups, 'group')} running or waiting"
        if g.share is not None
        else f"there are {found.cards} cards"
    )
    parts.append(f"{g.name} runs {g.in_use:.2f} cards now; {share}.")
    parts.append(
        f"Recent use, the number the queue weighs (decayed by half every {half_life}), is "
        f"{org.usage:.2f} cards for {org.name} and {g.usage:.2f} cards for {g.name}. "
        "Organizations take turns, the one that used less for its weight first; within an "
        "organization, the requests of groups and people who used less go first."
    )
    if org.share > 0:
        if org.in_use < org.share:
            parts.append(
                f"{org.name} runs below its share: while its requests wait, a card may be freed "
                "for them, with notice, from an organization running above its own."
            )
        elif org.in_use > org.share:
            parts.append(
                f"{org.name} runs above its share: its sessions may be given notice for an "
                "organization below its share that waits."
            )
    if g.share is not None and g.share > 0:
        if g.in_use < g.share:
            parts.append(
                "Within its organization it runs below its share: while it waits, a card may be "
                "freed for it, with notice, from a group of its organization running above its own."
            )
        elif g.in_use > g.share:
            parts.append(
                "Within its organization it runs above its share: its sessions may be given "
                "notice for a group of its organization below its share that waits."
            )
    return " ".join(parts)
