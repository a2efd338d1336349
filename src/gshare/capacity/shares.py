"""A group's GPU use against its share, as its members see it: the decayed usage the queue
weighs, the cards it runs now, its equal share of the cards among the groups running or
waiting (the share preemption defends), how that went over the decay window, its
organization's other groups the same way (no users), and, for its admins, each member's."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from gshare.capacity import queue, repository
from gshare.capacity.admission import fair_share
from gshare.capacity.preemption import fair_shares
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
    share: float | None  # None: neither running nor waiting, so in no split now


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
    active_groups: int
    settings: queue.FairShareSettings
    history: list[queue.UsePoint]
    groups: list[Standing]
    members: list[MemberUse] | None


def _cards(interval: repository.UseInterval) -> float:
    return queue.card_share(interval.kind, interval.denominator, interval.compute_percent)


async def group_share(ctx: Context, group_id: uuid.UUID, settings: Settings) -> GroupShare:
    scope = await identity.scope_of_group(ctx.db, group_id)
    require(ctx, Action.FAIR_SHARE_READ, scope, target_type="group", target_id=group_id)
    assert scope.org_id is not None
    db, now = ctx.db, ctx.now
    fair = fair_share(settings)
    org_groups = await identity.groups_of_org(db, scope.org_id)
    names = {g.id: g.name for g in org_groups}
    since = now - fair.half_life * COMPUTED_HALF_LIVES
    intervals = await repository.use_intervals(db, list(names), since)
    usage = await repository.usage_of(db, "group", list(names))
    active = await repository.active_groups(db)
    cards = await repository.usable_card_count(db)
    # Its share as if it joined, when it is neither running nor waiting.
    shares = fair_shares(float(cards), dict.fromkeys(active | {group_id}, 1.0))
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
            shares[g] if g in active or g == group_id else None,
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
    org_name = (await identity.names(db, "org", [scope.org_id])).get(scope.org_id, "")
    return GroupShare(
        mine,
        scope.org_id,
        org_name,
        cards,
        len(active | {group_id}) if mine.share is not None else len(active),
        fair,
        history,
        standings,
        members,
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


def in_words(found: GroupShare) -> str:
    """What the numbers mean for the group's requests, in the queue's own terms."""
    g, fair = found.group, found.settings
    hours = fair.half_life.total_seconds() / 3600
    half_life = f"{hours:g} hour" + ("" if hours == 1 else "s")
    share = (
        f"its share is {g.share:.2f} of {found.cards} cards, split equally among the "
        f"{found.active_groups} group{'' if found.active_groups == 1 else 's'} running or waiting"
        if g.share is not None
        else f"there are {found.cards} cards"
    )
    base = (
        f"{g.name} runs {g.in_use:.2f} cards now; {share}. Its recent use, the number the queue "
        f"weighs (decayed by half every {half_life}), is {g.usage:.2f} cards: among waiting "
        "requests, those of groups and people who used less go first."
    )
    if g.share is None or g.share <= 0:
        return base
    if g.in_use < g.share:
        return base + (
            " It runs below its share: while it waits, a card may be freed for it, with notice, "
            "from a group running above its own."
        )
    if g.in_use > g.share:
        return base + (
            " It runs above its share: its sessions may be given notice for a group below its "
            "share that waits."
        )
    return base
