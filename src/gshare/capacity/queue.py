"""Queue order and dequeue: fair-share priorities and admitting what fits. Pure: no I/O.

Usage is measured in cards (a 1/4 tier running for the whole window counts 0.25) and decayed
with a half-life: u = (1 - A) * u + A * current, A = 1 - 0.5 ** (interval / half_life). Each
admission adds an entry penalty A * request at once, so a burst cannot jump the queue before
sampling catches up. An organization's usage is the sum of its groups'.

The order is fair at two levels. Organizations take turns: the k-th turn of an organization
counts the wait of its k-th longest-waiting request (of one class: booked, starving or the
rest), and its priority is
    turn value = turn's waited_hours * wait_bonus_per_hour - org usage / org weight
(the org weight is the organization's `org_weight`, which only a super admin sets). Within an
organization its own order decides which request takes each of its turns:
    value = waited_hours * wait_bonus_per_hour - (user usage + group usage) / weight
(the weight is the request's effective `queue_weight`). Invariants:
- the order is: booked requests, then starving ones, then the rest; within each, turns by
  turn value (highest first), then the longer turn wait, then the organization's id; within one
  organization by value (highest first), then enqueue time, then request id: deterministic;
- nothing inside an organization (how its members are split into groups, its groups' and
  users' weights, their usage) moves another organization's requests: where an organization's
  turns fall depends only on its usage, its `org_weight` and the waits of its requests;
- a request past `starvation_limit` goes before the others; if it does not fit it reserves one
  card (at most `max_reserved_cards` are held at once, given in priority order), and
  no other request is placed on that card until it is released;
- dequeue never places more than `placement` allows (it places through one `PlacementIndex`
  and `assume`s each decision), and a request whose owner cannot afford the hold is skipped
  and reported, never placed.
"""

from __future__ import annotations

import heapq
import math
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Literal

from gshare.capacity.placement import (
    HAMI_CORE,
    MIG,
    CapacitySnapshot,
    Placement,
    PlacementIndex,
    PlacementRequest,
    within_reach,
)


@dataclass(frozen=True)
class FairShareSettings:
    half_life: timedelta = timedelta(hours=4)
    sampling_interval: timedelta = timedelta(minutes=1)
    wait_bonus_per_hour: float = 1.0
    starvation_limit: timedelta = timedelta(hours=2)
    # Cards held at once for starving requests: each held card idles while it drains, so a
    # deep backlog where everyone starves must not hold every card.
    max_reserved_cards: int = 1


@dataclass(frozen=True)
class QueuedRequest:
    request: PlacementRequest
    user_id: uuid.UUID
    group_id: uuid.UUID
    enqueued_at: datetime
    weight: float = 1.0  # the effective policy's queue weight
    # Within what its group booked and is running now: it goes ahead of the fair queue.
    booked: bool = False

    @property
    def id(self) -> uuid.UUID:
        return self.request.id

    @property
    def cards(self) -> float:
        """The share of a card the request takes, the unit usage is counted in."""
        return card_share(
            self.request.kind, self.request.slots_per_card, self.request.compute_percent
        )


def card_share(kind: str, slots_per_card: int | None, compute_percent: int) -> float:
    """How much of a card one session of a tier takes: 1 for exclusive, 1/n for a fraction 1/n,
    a MIG profile's compute share. Usage, entry penalties and queue ordering all count in it."""
    if kind == "exclusive":
        return 1.0
    if kind == "fraction":
        return 1.0 / max(slots_per_card or 1, 1)
    return max(compute_percent, 0) / 100.0


@dataclass(frozen=True)
class Tenants:
    """Which organization each group is in, and the weights fair share splits by: each
    organization's among organizations (`org_weight`, a super admin's), each group's within its
    organization (`queue_weight`, its organization's admins'). Unset weights are 1.

    Groups it does not place share one organization with no usage of its own, so a queue
    with no organizations given is one organization's queue."""

    org_of: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    org_weights: Mapping[uuid.UUID, float] = field(default_factory=dict)
    group_weights: Mapping[uuid.UUID, float] = field(default_factory=dict)

    def org(self, group: uuid.UUID) -> uuid.UUID | None:
        return self.org_of.get(group)

    def org_weight(self, org: uuid.UUID | None) -> float:
        found = self.org_weights.get(org, 1.0) if org is not None else 1.0
        return found if found > 0 else 1.0

    def group_weight(self, group: uuid.UUID) -> float:
        found = self.group_weights.get(group, 1.0)
        return found if found > 0 else 1.0


@dataclass(frozen=True)
class Usage:
    """Decayed recent GPU usage, in cards, per user, per group and per organization (the sum
    of its groups'), with the tenants that say which organization a group is in."""

    by_user: Mapping[uuid.UUID, float] = field(default_factory=dict)
    by_group: Mapping[uuid.UUID, float] = field(default_factory=dict)
    by_org: Mapping[uuid.UUID, float] = field(default_factory=dict)
    tenants: Tenants = field(default_factory=Tenants)


def by_org(by_group: Mapping[uuid.UUID, float], tenants: Tenants) -> dict[uuid.UUID, float]:
    """Each organization's usage: the sum of its groups' (a group of no organization counts in
    none)."""
    out: dict[uuid.UUID, float] = {}
    for group, used in by_group.items():
        org = tenants.org(group)
        if org is not None:
            out[org] = out.get(org, 0.0) + used
    return out


def usage_of(
    by_user: Mapping[uuid.UUID, float], by_group: Mapping[uuid.UUID, float], tenants: Tenants
) -> Usage:
    """The usage of users and groups, with their organizations' summed from the groups'."""
    return Usage(by_user, by_group, by_org(by_group, tenants), tenants)


def decay_alpha(interval: timedelta, half_life: timedelta) -> float:
    return 1.0 - math.pow(0.5, interval / half_life)


def _decayed(
    previous: Mapping[uuid.UUID, float], current: Mapping[uuid.UUID, float], alpha: float
) -> dict[uuid.UUID, float]:
    keys = set(previous) | set(current)
    return {k: (1 - alpha) * previous.get(k, 0.0) + alpha * current.get(k, 0.0) for k in keys}


def sample_usage(
    usage: Usage,
    current_by_user: Mapping[uuid.UUID, float],
    current_by_group: Mapping[uuid.UUID, float],
    settings: FairShareSettings,
) -> Usage:
    """One sampling step: fold the cards in use now into the decayed usage (an organization's
    decays as the sum of its groups' does)."""
    alpha = decay_alpha(settings.sampling_interval, settings.half_life)
    return Usage(
        _decayed(usage.by_user, current_by_user, alpha),
        _decayed(usage.by_group, current_by_group, alpha),
        _decayed(usage.by_org, by_org(current_by_group, usage.tenants), alpha),
        usage.tenants,
    )


def with_entry_penalty(usage: Usage, queued: QueuedRequest, settings: FairShareSettings) -> Usage:
    """Usage right after admitting `queued`: its entry penalty A * request added at once, to its
    user, its group and its group's organization."""
    penalty = decay_alpha(settings.sampling_interval, settings.half_life) * queued.cards
    by_user = dict(usage.by_user)
    by_group = dict(usage.by_group)
    orgs = dict(usage.by_org)
    by_user[queued.user_id] = by_user.get(queued.user_id, 0.0) + penalty
    by_group[queued.group_id] = by_group.get(queued.group_id, 0.0) + penalty
    org = usage.tenants.org(queued.group_id)
    if org is not None:
        orgs[org] = orgs.get(org, 0.0) + penalty
    return Usage(by_user, by_group, orgs, usage.tenants)


AheadReason = Literal["booking", "waited_too_long", "priority", "earlier"]
AHEAD_REASONS: tuple[AheadReason, ...] = ("booking", "waited_too_long", "priority", "earlier")


@dataclass(frozen=True)
class Priority:
    """A queued request's priority and its parts, as the admin queue view shows them: within
    its organization (`value`, from its user's and group's usage and its weight), and of the
    organization's turn it takes (`org_value`, from the organization's usage and weight and the
    wait that turn counts)."""

    request_id: uuid.UUID
    value: float
    waited: timedelta
    wait_bonus: float
    user_usage: float
    group_usage: float
    weight: float
    starving: bool
    org_id: uuid.UUID | None = None
    org_usage: float = 0.0
    org_weight: float = 1.0
    org_value: float = 0.0
    org_waited: timedelta = timedelta(0)


def _wait_bonus(waited: timedelta, settings: FairShareSettings) -> float:
    return waited / timedelta(hours=1) * settings.wait_bonus_per_hour


def _turn_value(
    org_waited: timedelta, org: uuid.UUID | None, usage: Usage, settings: FairShareSettings
) -> float:
    used = usage.by_org.get(org, 0.0) if org is not None else 0.0
    return _wait_bonus(org_waited, settings) - used / usage.tenants.org_weight(org)


def _value(
    queued: QueuedRequest, usage: Usage, now: datetime, settings: FairShareSettings
) -> float:
    """`priority_of(...).value`, alone: what dequeue re-reads after each admission."""
    waited = max(now - queued.enqueued_at, timedelta(0))
    used = usage.by_user.get(queued.user_id, 0.0) + usage.by_group.get(queued.group_id, 0.0)
    return _wait_bonus(waited, settings) - used / (queued.weight if queued.weight > 0 else 1.0)


def priority_of(
    queued: QueuedRequest, usage: Usage, now: datetime, settings: FairShareSettings
) -> Priority:
    """The request's priority as if it were its organization's only request (its own wait is
    its organization's turn's); `priorities` gives each its turn among its organization's."""
    waited = max(now - queued.enqueued_at, timedelta(0))
    wait_bonus = _wait_bonus(waited, settings)
    user_usage = usage.by_user.get(queued.user_id, 0.0)
    group_usage = usage.by_group.get(queued.group_id, 0.0)
    weight = queued.weight if queued.weight > 0 else 1.0
    org = usage.tenants.org(queued.group_id)
    return Priority(
        request_id=queued.id,
        value=wait_bonus - (user_usage + group_usage) / weight,
        waited=waited,
        wait_bonus=wait_bonus,
        user_usage=user_usage,
        group_usage=group_usage,
        weight=weight,
        starving=waited > settings.starvation_limit,
        org_id=org,
        org_usage=usage.by_org.get(org, 0.0) if org is not None else 0.0,
        org_weight=usage.tenants.org_weight(org),
        org_value=_turn_value(waited, org, usage, settings),
        org_waited=waited,
    )


# Booked first, then starving, then the organizations' turns by value, the longer turn wait and
# the organization; within one organization by value, then the longest waiting, then the id.
_OrderKey = tuple[bool, bool, float, timedelta, int, float, datetime, uuid.UUID]
# The part of the order each place of the key stands for (see `Ahead`).
_KEY_REASONS: tuple[AheadReason, ...] = (
    "booking",
    "waited_too_long",
    "priority",
    "earlier",
    "earlier",
    "earlier",
    "earlier",
    "earlier",
)
# Within one organization's line: value, then the longest waiting, then the id.
_LineKey = tuple[float, datetime, uuid.UUID]
# A line: one organization's requests of one class (booked, starving).
_Line = tuple[bool, bool, uuid.UUID | None]


def _org_rank(org: uuid.UUID | None) -> int:
    return -1 if org is None else org.int


def _line_key(p: Priority, q: QueuedRequest) -> _LineKey:
    return (-p.value, q.enqueued_at, q.id)


def _line_of(p: Priority, q: QueuedRequest) -> _Line:
    return (not q.booked, not p.starving, p.org_id)


def _order_key(p: Priority, q: QueuedRequest) -> _OrderKey:
    """Booked requests first, then starving ones, then their organizations' turns, then the
    organization's own order."""
    return (
        not q.booked,
        not p.starving,
        -p.org_value,
        -p.org_waited,
        _org_rank(p.org_id),
        *_line_key(p, q),
    )


def priorities(
    queued: Sequence[QueuedRequest], usage: Usage, now: datetime, settings: FairShareSettings
) -> list[Priority]:
    """Every queued request's priority, in the order dequeue walks them: each organization's
    requests of one class in its own order, the k-th taking its k-th turn, the one that counts
    the k-th longest wait among them."""
    lines: dict[_Line, list[tuple[Priority, QueuedRequest]]] = {}
    for q in queued:
        p = priority_of(q, usage, now, settings)
        lines.setdefault(_line_of(p, q), []).append((p, q))
    pairs: list[tuple[Priority, QueuedRequest]] = []
    for line in lines.values():
        line.sort(key=lambda pair: _line_key(*pair))
        waits = sorted((p.waited for p, _ in line), reverse=True)
        for (p, q), turn in zip(line, waits, strict=True):
            org_value = _turn_value(turn, p.org_id, usage, settings)
            pairs.append((replace(p, org_value=org_value, org_waited=turn), q))
    pairs.sort(key=lambda pair: _order_key(*pair))
    return [p for p, _ in pairs]


@dataclass(frozen=True)
class Ahead:
    """The requests ahead of one for the same GPU model, from how many groups, and how many
    are ahead for each reason: the first part of the dequeue order (`_order_key`) in which
    they come first. `booking`: within a booking of their group running now; `waited_too_long`:
    waiting past the starvation limit; `priority`: a higher priority value (less recent use for
    their weight, or a longer wait: of their organization, for a turn of another one, else of
    their user and group); `earlier`: the same priority, asked for earlier."""

    requests: int
    groups: int
    reasons: Mapping[AheadReason, int]


def _ahead_reason(ahead: _OrderKey, mine: _OrderKey) -> AheadReason:
    """The part of the order where the keys first differ (a request's own key is unique)."""
    return next(
        (_KEY_REASONS[i] for i, (a, b) in enumerate(zip(ahead, mine, strict=True)) if a != b),
        "earlier",
    )


def _relative(
    reasons: dict[AheadReason, int], last: _OrderKey, key: _OrderKey
) -> dict[AheadReason, int]:
    """What is ahead of a request of order `key`, by reason, from what was ahead of the request
    before it (`last`) and that request itself. A reason is where the keys first differ, so
    what differs later than where this one differs from the previous moves to that part."""
    step = _ahead_reason(last, key)
    rank = AHEAD_REASONS.index(step)
    moved = sum(n for r, n in reasons.items() if AHEAD_REASONS.index(r) > rank)
    found = {r: n for r, n in reasons.items() if AHEAD_REASONS.index(r) <= rank}
    found[step] = found.get(step, 0) + moved + 1
    return found


def why_ahead(
    queued: Sequence[QueuedRequest],
    ordered: Sequence[Priority],
    reach: Mapping[uuid.UUID, frozenset[int]] | None = None,
) -> dict[uuid.UUID, Ahead]:
    """For each request, what is ahead of it (`Ahead`), from `priorities`' order: the requests
    of its model before it that may take a card it may, those whose `reach` (which kinds of
    card each may use) meets its own; without `reach`, every one of its model.

    The requests are kept in classes of one model and one reach. Within a class each is
    compared with the previous one only, so counts carry over; a request adds up what each
    class that meets its reach has ahead of it, as if it came next there."""
    by_id = {q.id: q for q in queued}
    # (model, reach) -> the groups seen so far, what is ahead of the last, the last's key.
    classes: dict[
        tuple[str, frozenset[int]], tuple[dict[uuid.UUID, int], dict[AheadReason, int], _OrderKey]
    ] = {}
    out: dict[uuid.UUID, Ahead] = {}
    for p in ordered:
        q = by_id[p.request_id]
        key = _order_key(p, q)
        mine = frozenset({0}) if reach is None else reach.get(q.id, frozenset())
        reasons: dict[AheadReason, int] = {}
        groups: set[uuid.UUID] = set()
        for (model, theirs), (seen, before, last) in classes.items():
            if model != q.request.model or not theirs & mine:
                continue
            for r, n in _relative(before, last, key).items():
                reasons[r] = reasons.get(r, 0) + n
            groups |= seen.keys()
        out[q.id] = Ahead(sum(reasons.values()), len(groups), reasons)
        own = (q.request.model, mine)
        if own in classes:
            seen, before, last = classes[own]
            classes[own] = (
                {**seen, q.group_id: seen.get(q.group_id, 0) + 1},
                _relative(before, last, key),
                key,
            )
        else:
            classes[own] = ({q.group_id: 1}, {}, key)
    return out


_AHEAD_WORDS: dict[AheadReason, tuple[str, str]] = {
    "booking": ("is within its group's booking", "are within their groups' bookings"),
    "waited_too_long": ("has waited past the limit", "have waited past the limit"),
    "priority": (
        "has a higher priority (less recent use, or a longer wait)",
        "have a higher priority (less recent use, or a longer wait)",
    ),
    "earlier": (
        "has the same priority and asked earlier",
        "have the same priority and asked earlier",
    ),
}


def ahead_in_words(ahead: Ahead) -> str:
    """What `ahead` says, for the request's owner: "3 requests are ahead, from 2 groups: 1 is
    within its group's booking; 2 have a higher priority (less recent use, or a longer wait)."
    """
    if ahead.requests == 0:
        return "Nothing is ahead: it starts as soon as a card for it frees."
    found = [(r, n) for r in AHEAD_REASONS if (n := ahead.reasons.get(r, 0)) > 0]
    if ahead.requests == 1:
        return f"1 request is ahead: it {_AHEAD_WORDS[found[0][0]][0]}."
    groups = "1 group" if ahead.groups == 1 else f"{ahead.groups} groups"
    parts = "; ".join(f"{n} {_AHEAD_WORDS[r][0 if n == 1 else 1]}" for r, n in found)
    return f"{ahead.requests} requests are ahead, from {groups}: {parts}."


def waits_for_words(request: PlacementRequest, tier_name: str) -> str:
    """What a queued request waits for, for its owner: "a 1/4 slot of a shared A100-80GB
    card", "a whole A100-80GB card", "a MIG 3g.40gb instance of an A100-80GB card", and "on
    the cluster that holds its volumes" when it may start on that cluster only."""
    model = request.model
    article = "an" if model[:1].upper() in "AEIOU" else "a"
    if request.kind == "exclusive":
        words = f"a whole {model} card"
    elif request.kind == "mig":
        words = f"a MIG {request.mig_profile or tier_name} instance of {article} {model} card"
    else:
        words = f"a {tier_name} slot of a shared {model} card"
    if request.cluster_id is not None:
        words += ", on the cluster that holds its volumes"
    return words


@dataclass(frozen=True)
class DequeueResult:
    admitted: tuple[tuple[QueuedRequest, Placement], ...]
    unaffordable: tuple[uuid.UUID, ...]  # mark these `insufficient_credits` and tell the owner
    reserved: Mapping[uuid.UUID, uuid.UUID]  # card id -> request id, to keep for the next cycle
    usage: Usage  # with the entry penalties of what was admitted


def estimated_wait(position: int, typical: timedelta, slots: int) -> timedelta:
    """About how long the request at `position` (1: next) among those waiting for the same
    cards waits: `slots` sessions of its tier run at once, each lasting `typical`, so it starts
    after ceil(position / slots) of them have ended in turn. With no slot at all, one
    `typical` per position."""
    rounds = math.ceil(max(position, 1) / max(slots, 1))
    return typical * rounds


def _card_to_reserve(index: PlacementIndex, request: PlacementRequest) -> uuid.UUID | None:
    """The card that will fit a starving request soonest: for MIG a card with an instance of its
    profile; for a fraction the fullest card carved to its tier; otherwise, and for exclusive,
    the emptiest card of its model. Cards already reserved are not taken, nor cards the request
    may not use (of another cluster than its own, or on a node its isolation does not admit)."""
    held = index.reserved | index.booked
    if request.kind == "mig":
        mig_cards = [
            c
            for c in index.cards_of(request.model, MIG)
            if c.id not in held
            and within_reach(c, request)
            and any(i.profile == request.mig_profile for i in c.mig_instances)
        ]
        return min((c.id for c in mig_cards), default=None)
    cards = [
        c
        for c in index.cards_of(request.model, HAMI_CORE)
        if c.id not in held and within_reach(c, request)
    ]
    if request.kind == "fraction":
        same_tier = [c for c in cards if index.carved_tier(c.id) == request.tier]
        if same_tier:
            return min(same_tier, key=lambda c: (-index.allocations(c.id), c.id)).id
    emptiest = min(cards, key=lambda c: (index.allocations(c.id), c.id), default=None)
    return emptiest.id if emptiest is not None else None


def dequeue(
    snapshot: CapacitySnapshot,
    queued: Sequence[QueuedRequest],
    now: datetime,
    usage: Usage,
    can_afford: Callable[[QueuedRequest], bool],
    settings: FairShareSettings = FairShareSettings(),
) -> DequeueResult:
    """Walk the queue in `priorities`' order and place everything that fits.

    Priorities are re-read after each admission (the entry penalty lowers the same user's,
    group's and organization's later requests and turns); since they only fall within one
    cycle, a turn or a request popped with a stale priority is pushed back with its fresh one.
    """
    # A reservation is kept while its request waits and may still use the card (a node
    # dedicated since to another tenant is not its to hold).
    requests = {q.id: q.request for q in queued}
    cards = {c.id: c for c in snapshot.cards}
    kept = {
        card: req
        for card, req in snapshot.reserved.items()
        if req in requests and card in cards and within_reach(cards[card], requests[req])
    }
    index = PlacementIndex(CapacitySnapshot(snapshot.cards, kept, snapshot.booked))
    by_position = list(queued)
    # Each line (an organization's requests of one class) in its own order, the waits its turns
    # count (longest first) and how many turns it has had; then the lines by their next turn.
    lines: dict[_Line, list[tuple[_LineKey, int]]] = {}
    waits: dict[_Line, list[timedelta]] = {}
    for position, q in enumerate(by_position):
        p = priority_of(q, usage, now, settings)
        line = _line_of(p, q)
        lines.setdefault(line, []).append((_line_key(p, q), position))
        waits.setdefault(line, []).append(p.waited)
    for line, heap in lines.items():
        heapq.heapify(heap)
        waits[line].sort(reverse=True)
    turns = dict.fromkeys(lines, 0)

    def turn_key(line: _Line) -> tuple[bool, bool, float, timedelta, int]:
        waited = waits[line][turns[line]]
        org_value = _turn_value(waited, line[2], usage, settings)
        return (line[0], line[1], -org_value, -waited, _org_rank(line[2]))

    # A turn key names its line (class and organization), so lines are never compared.
    top = [(turn_key(line), line) for line in lines]
    heapq.heapify(top)
    admitted: list[tuple[QueuedRequest, Placement]] = []
    unaffordable: list[uuid.UUID] = []
    # Usage only grows within a cycle, so turn values and values only fall: an entry popped
    # with a stale key is pushed back with its fresh one.
    while top:
        key, line = heapq.heappop(top)
        fresh_turn = turn_key(line)
        if fresh_turn != key:
            heapq.heappush(top, (fresh_turn, line))
            continue
        heap = lines[line]
        while True:
            mine, position = heapq.heappop(heap)
            q = by_position[position]
            fresh = (-_value(q, usage, now, settings), q.enqueued_at, q.id)
            if fresh == mine:
                break
            heapq.heappush(heap, (fresh, position))
        turns[line] += 1
        placement = index.place(q.request)
        if isinstance(placement, Placement):
            if not can_afford(q):
                unaffordable.append(q.id)
                index.release_reservation(q.id)
            else:
                index.assume(placement)
                admitted.append((q, placement))
                usage = with_entry_penalty(usage, q, settings)
        elif (
            line[1] is False
            and len(index.reserved) < settings.max_reserved_cards
            and q.id not in index.reserved.values()
        ):
            card_id = _card_to_reserve(index, q.request)
            if card_id is not None:
                index.reserve(card_id, q.id)
        if heap:
            heapq.heappush(top, (turn_key(line), line))
    return DequeueResult(tuple(admitted), tuple(unaffordable), index.reserved, usage)


_CURVE_STEPS = 5000


@dataclass(frozen=True)
class UsePoint:
    """A moment of a group's (or user's) GPU use: the cards in use then, and the decayed
    usage the queue weighed then."""

    at: datetime
    in_use: float
    usage: float


def usage_curve(
    intervals: Sequence[tuple[datetime, datetime | None, float]],
    since: datetime,
    until: datetime,
    every: timedelta,
    settings: FairShareSettings,
) -> list[UsePoint]:
    """The use and decayed usage from `since` to `until`, a point each `every`, from the
    (start, end or None while running, cards) of each allocation, sampled as the worker samples
    (`sample_usage`, each `settings.sampling_interval`). Usage before `since` counts as none: start
    a few half-lives before the part to show (each half-life halves what is left out). The
    entry penalties added at admission are left out: they are gone within an interval."""
    step = settings.sampling_interval
    if until <= since or step <= timedelta(0) or every <= timedelta(0):
        return []
    # At most `_CURVE_STEPS` steps whatever the settings: a coarser step decays as much.
    step = max(step, (until - since) / _CURVE_STEPS)
    alpha = decay_alpha(step, settings.half_life)
    # The cards in use change only at the intervals' edges: walk the edges in time order.
    edges: list[tuple[datetime, float]] = []
    for start, end, cards in intervals:
        edges.append((start, cards))
        if end is not None:
            edges.append((end, -cards))
    edges.sort(key=lambda e: e[0])
    in_use, usage, edge = 0.0, 0.0, 0
    out: list[UsePoint] = []
    next_point = since
    at = since
    while at <= until:
        while edge < len(edges) and edges[edge][0] <= at:
            in_use += edges[edge][1]
            edge += 1
        in_use = max(in_use, 0.0)
        usage = (1 - alpha) * usage + alpha * in_use
        if at >= next_point:
            out.append(UsePoint(at, in_use, usage))
            next_point = at + every
        at += step
    return out
