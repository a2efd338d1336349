"""Preemption: which running sessions a queued request may pause, and on which card. Pure: no I/O.

Fair share is split at two levels: each organization has a share of the cards (`split_shares`:
by its `org_weight` among the organizations running or waiting), and each of its groups a
share of the organization's (by the group's weight among its groups running or waiting).
Usage is the cards running sessions hold (each session's `cards`, as `queue.card_share`
counts it), summed per group and per organization. A request is within its organization's
share when `org usage + request <= org share`, within its group's when
`group usage + request <= group share`.

A queued request has a claim when (a) it is within its organization's share while another
organization is above its own, or within its group's share while another group of its
organization is above its own (`fair_share`), (b) it has waited longer than its `max_wait`
(`waited_too_long`), (c) it has a higher priority than a session it could pause
(`priority`), or (d) it is `booked`: its group booked the capacity and holds less of it than
booked now, so it takes back what the booking lends (`booking`: a session of another group,
whatever its priority, but never one marked not preemptible, one within its minimum runtime,
or one itself `within_booking`, which no claim takes). A group admin's booking does not set
aside what the super admin set for the session: ahead of the booking's window (the claim's
`by`), a session is taken only if it can be told its own `kept_notice` and has run its minimum
runtime by the window's start; once the window runs, its pause waits for both
(`soonest_pause`).

Between organizations only organizations' usage and shares count, and within one only its
groups': how an organization splits its members into groups, and its groups' weights, change
no other organization's claims nor which of their sessions a claim may take.

Invariants of every `Preemption` this module returns (alone or after `assume`s on one index):
- the request does not fit as the snapshot stands (else `fits_now`), and once its victims are
  gone it fits on their one card: a hami-core card of its tier with a slot freed, a hami-core
  card emptied (exclusive, or carved to another tier), or a MIG instance of its profile freed;
- no victim is marked not preemptible or has run less than its `min_runtime` (a booking's
  claim ahead of its window: by its `by`); none but a booking's has a higher priority than the
  request;
- a request whose organization would be above its share takes no session of another
  organization within its own share; a request whose group would be above its share takes no
  session of another group of its organization within its own share (a swap within one group
  moves no usage between groups);
- each victim names the rule that allows it: `fair_share` (of another organization, the
  request's organization stays within its share and the victim's is above; of another group
  of its organization, the same of the two groups), else `waited_too_long`, else `priority`
  (lower priority);
- the victims are the fewest on their card; across cards, sets are compared worst victim first,
  a victim being better when idle, then of lower priority, then of the organization furthest
  above its share (usage / share, as the snapshot stands), then of the lower organization id,
  then of the group furthest above its share within it, then started most recently; a set that
  matches a smaller one victim for victim loses; session ids break the last ties, so the same
  snapshot and claims always give the same decisions;
- a card with a decision, or held for another request, takes no other decision; `assume`
  records the decision: its card is held for the request, its victims are gone and the groups'
  and organizations' usage moves, so the next claim's rules (not its preferences) see it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal, TypeVar

from gshare.capacity.placement import (
    MIG,
    CapacitySnapshot,
    CardSnapshot,
    Placement,
    PlacementIndex,
    PlacementRequest,
    slot_limit,
    within_reach,
)
from gshare.capacity.queue import QueuedRequest, Tenants

Priority = Literal["low", "normal", "high"]
PreemptionReason = Literal["fair_share", "waited_too_long", "priority", "booking"]
NoPreemptionReason = Literal["fits_now", "no_card_of_model", "no_claim", "no_eligible_victims"]

PRIORITIES: tuple[Priority, ...] = ("low", "normal", "high")
REASONS: tuple[PreemptionReason, ...] = ("fair_share", "waited_too_long", "priority", "booking")
# The lists a booked claim walks: every session, protected or not, of any priority.
_BOOKED = "booked"
_RANK = {name: rank for rank, name in enumerate(PRIORITIES)}
# Usage sums fractions such as 1/3 of a card; a share met to this much is met.
_EPSILON = 1e-9
K = TypeVar("K")


@dataclass(frozen=True)
class RunningSession:
    """A session holding a slot (hami-core) or a MIG instance (`slot` is its start)."""

    id: uuid.UUID
    card_id: uuid.UUID
    slot: int
    group_id: uuid.UUID
    cards: float
    started_at: datetime
    priority: Priority = "normal"
    idle: bool = False
    preemptible: bool = True
    min_runtime: timedelta = timedelta(0)
    # On capacity its group booked and is running now: no claim takes it, a booking's neither.
    within_booking: bool = False
    # The notice a booking's shorter one does not cut short (`PreemptionTerms.kept_notice`).
    kept_notice: timedelta = timedelta(0)


@dataclass(frozen=True)
class PreemptionSnapshot:
    """The cards, the sessions running on them, each group's fair share in cards (of its
    organization's), each group's organization and each organization's share. A group `orgs`
    does not name is in one organization with every other such group; an organization
    `org_shares` does not name has the sum of its groups' shares. A slot held by no session
    here (starting, lost, or already given notice) is never freed."""

    capacity: CapacitySnapshot
    sessions: tuple[RunningSession, ...]
    shares: Mapping[uuid.UUID, float]
    orgs: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    org_shares: Mapping[uuid.UUID | None, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    """A queued request's claim. `booked`: its group booked the capacity it asks for and holds
    less of it than booked now; it takes back what the booking lends to others. `by`: a booked
    claim ahead of the booking's window, whose victims are paused at its start."""

    queued: QueuedRequest
    priority: Priority = "normal"
    max_wait: timedelta | None = None  # None: waiting alone never claims
    booked: bool = False
    by: datetime | None = None

    @property
    def request(self) -> PlacementRequest:
        return self.queued.request


@dataclass(frozen=True)
class Victim:
    session_id: uuid.UUID
    card_id: uuid.UUID
    slot: int
    group_id: uuid.UUID
    reason: PreemptionReason


@dataclass(frozen=True)
class Preemption:
    request_id: uuid.UUID
    card_id: uuid.UUID
    victims: tuple[Victim, ...]  # by slot

    @property
    def reasons(self) -> tuple[PreemptionReason, ...]:
        found = {v.reason for v in self.victims}
        return tuple(r for r in REASONS if r in found)


@dataclass(frozen=True)
class NoPreemption:
    reason: NoPreemptionReason


def fair_shares(cards: float, weights: Mapping[K, float]) -> dict[K, float]:
    """Each one's fair share of `cards`, in proportion to its weight among those given (those
    running or waiting); a weight of zero or less counts as none."""
    total = sum(w for w in weights.values() if w > 0)
    if total <= 0:
        return dict.fromkeys(weights, 0.0)
    return {one: cards * max(w, 0.0) / total for one, w in weights.items()}


@dataclass(frozen=True)
class Shares:
    """Each organization's fair share of the cards, and each group's of its organization's."""

    orgs: dict[uuid.UUID | None, float]
    groups: dict[uuid.UUID, float]


def split_shares(cards: float, groups: Iterable[uuid.UUID], tenants: Tenants) -> Shares:
    """The cards split among the organizations of `groups` (those running or waiting) by their
    weights, then each organization's share among its `groups` by theirs."""
    members: dict[uuid.UUID | None, list[uuid.UUID]] = {}
    for group in sorted(set(groups)):
        members.setdefault(tenants.org(group), []).append(group)
    orgs = fair_shares(cards, {org: tenants.org_weight(org) for org in members})
    split: dict[uuid.UUID, float] = {}
    for org, found in members.items():
        split.update(fair_shares(orgs[org], {g: tenants.group_weight(g) for g in found}))
    return Shares(orgs, split)


# A victim's preference key, smaller is taken first: active after idle, priority, the
# organization's usage / share negated (furthest above first), the organization, the group's
# usage / share negated, start time negated (latest first), id. Between organizations only
# organizations' numbers count.
_Key = tuple[bool, int, float, int, float, float, uuid.UUID]
# A victim set's key: its victims' keys, worst first.
_SetKey = tuple[_Key, ...]


@dataclass(frozen=True)
class _Held:
    session: RunningSession
    key: _Key
    rank: int
    protected: bool  # not preemptible, or within its minimum runtime


@dataclass(frozen=True)
class _Candidate:
    key: _SetKey
    card_id: uuid.UUID
    victims: tuple[tuple[_Held, PreemptionReason], ...]


_Entry = tuple[_SetKey, uuid.UUID, int]  # lower bound, card, MIG start (0 elsewhere)
_Eligible = Callable[[_Held], PreemptionReason | None]


class PreemptionIndex:
    """A snapshot indexed once for many claims at one `now`: `select` answers, `assume` records
    a decision so the next `select` sees it.

    For each model and priority cap, cards are listed by a lower bound of their best victim
    set, computed with only the claim-independent rules (preemptible, minimum runtime, priority
    at most the cap): the list of cards that could be emptied, of cards carved to each tier
    (their single best session), and of each MIG profile's occupied instances. A claim walks its
    lists in bound order, checks each card with all its rules, and stops once the next bound is
    no better than the best set found; cards with a decision are dropped from the lists' heads.
    """

    def __init__(self, snapshot: PreemptionSnapshot, now: datetime) -> None:
        self._now = now
        self._placement = PlacementIndex(snapshot.capacity)
        self._cards: dict[uuid.UUID, CardSnapshot] = {
            c.id: c for c in snapshot.capacity.cards if c.usable
        }
        self._decided: set[uuid.UUID] = set()  # cards
        self._deciding: set[uuid.UUID] = set()  # requests
        self._taken: set[uuid.UUID] = set()
        self._shares: dict[uuid.UUID, float] = dict(snapshot.shares)
        self._orgs: dict[uuid.UUID, uuid.UUID] = dict(snapshot.orgs)
        self._org_shares: dict[uuid.UUID | None, float] = {}
        for group, share in snapshot.shares.items():
            org = self._orgs.get(group)
            self._org_shares[org] = self._org_shares.get(org, 0.0) + share
        self._org_shares.update(snapshot.org_shares)
        self._usage: dict[uuid.UUID, float] = {}
        self._org_usage: dict[uuid.UUID | None, float] = {}
        for s in snapshot.sessions:
            self._use(s.group_id, s.cards)
        self._holders: dict[uuid.UUID, dict[int, _Held]] = {}
        for s in snapshot.sessions:
            if s.card_id in self._cards:
                self._holders.setdefault(s.card_id, {})[s.slot] = self._held(s)
        self._lists: dict[tuple[str, ...], list[_Entry]] = {}
        self._heads: dict[tuple[str, ...], int] = {}
        for card in self._cards.values():
            self._list_card(card)
        for entries in self._lists.values():
            entries.sort()

    def _use(self, group: uuid.UUID, cards: float) -> None:
        """Count `cards` more (fewer, when negative) in use by `group` and its organization."""
        org = self._orgs.get(group)
        self._usage[group] = self._usage.get(group, 0.0) + cards
        self._org_usage[org] = self._org_usage.get(org, 0.0) + cards

    def _group_ratio(self, group: uuid.UUID) -> float:
        return _ratio(self._usage.get(group, 0.0), self._shares.get(group, 0.0))

    def _org_ratio(self, org: uuid.UUID | None) -> float:
        return _ratio(self._org_usage.get(org, 0.0), self._org_shares.get(org, 0.0))

    def _held(self, s: RunningSession) -> _Held:
        rank = _RANK[s.priority]
        org = self._orgs.get(s.group_id)
        key = (
            not s.idle,
            rank,
            -self._org_ratio(org),
            -1 if org is None else org.int,
            -self._group_ratio(s.group_id),
            -s.started_at.timestamp(),
            s.id,
        )
        protected = (
            not s.preemptible or self._now - s.started_at < s.min_runtime or s.within_booking
        )
        return _Held(s, key, rank, protected)

    def _list_card(self, card: CardSnapshot) -> None:
        holders = self._holders.get(card.id, {})
        caps: list[tuple[str, dict[int, _Held]]] = [
            (
                str(cap),
                {slot: h for slot, h in holders.items() if not h.protected and h.rank <= cap},
            )
            for cap in range(len(PRIORITIES))
        ]
        caps.append((_BOOKED, {slot: h for slot, h in holders.items() if _lendable(h.session)}))
        for cap_name, loose in caps:
            if card.pool == MIG:
                for instance in card.mig_instances:
                    held = loose.get(instance.start) if instance.occupied else None
                    if held is not None:
                        name = ("mig", card.model, instance.profile, cap_name)
                        self._add(name, ((held.key,), card.id, instance.start))
                continue
            slots = card.allocated_slots
            if not slots:
                continue
            keys = [loose[slot].key for slot in slots if slot in loose]
            if len(keys) == len(slots):
                self._add(("clear", card.model, cap_name), (_worst_first(keys), card.id, 0))
            if keys and card.carved_tier is not None:
                name = ("tier", card.model, card.carved_tier, cap_name)
                self._add(name, ((min(keys),), card.id, 0))

    def _add(self, name: tuple[str, ...], entry: _Entry) -> None:
        self._lists.setdefault(name, []).append(entry)

    def _group_over(self, group: uuid.UUID) -> bool:
        return self._usage.get(group, 0.0) > self._shares.get(group, 0.0) + _EPSILON

    def _org_over(self, org: uuid.UUID | None) -> bool:
        return self._org_usage.get(org, 0.0) > self._org_shares.get(org, 0.0) + _EPSILON

    def select(self, claim: Claim) -> Preemption | NoPreemption:
        request = claim.request
        placed = self._placement.place(request)
        if isinstance(placed, Placement):
            return NoPreemption("fits_now")
        if placed.reason in ("no_card_of_model", "isolation_unmet"):
            return NoPreemption("no_card_of_model")
        group = claim.queued.group_id
        if claim.booked:
            return self._booked(claim)
        rank = _RANK[claim.priority]
        waited = (
            claim.max_wait is not None and self._now - claim.queued.enqueued_at > claim.max_wait
        )
        org = self._orgs.get(group)
        cards = claim.queued.cards
        org_within = (
            self._org_usage.get(org, 0.0) + cards <= self._org_shares.get(org, 0.0) + _EPSILON
        )
        within = self._usage.get(group, 0.0) + cards <= self._shares.get(group, 0.0) + _EPSILON
        some_over = (org_within and any(self._org_over(o) for o in self._org_usage)) or (
            within and any(self._group_over(g) for g in self._usage if self._orgs.get(g) == org)
        )
        if not (waited or some_over or rank > 0):
            return NoPreemption("no_claim")

        def eligible(held: _Held) -> PreemptionReason | None:
            if held.protected or held.rank > rank or held.session.id in self._taken:
                return None
            theirs = held.session.group_id
            # Within one group a swap moves no usage between groups: only waiting and
            # priority decide. Between organizations only theirs count; within one, its groups'.
            if theirs != group:
                if self._orgs.get(theirs) != org:
                    mine, over = org_within, self._org_over(self._orgs.get(theirs))
                else:
                    mine, over = within, self._group_over(theirs)
                if mine and over:
                    return "fair_share"
                if not mine and not over:
                    return None  # never below its share for one above its own
            if waited:
                return "waited_too_long"
            return "priority" if held.rank < rank else None

        # Without waiting, a request above both its shares takes only lower priorities.
        cap = str(rank if waited or within or org_within else rank - 1)
        return self._decision(request, self._search(request, cap, eligible))

    def _booked(self, claim: Claim) -> Preemption | NoPreemption:
        """A booked claim takes back what the booking lends: a session of another group,
        whatever its priority (lent capacity is lent on that term), but not what the super
        admin set for it: a session marked not preemptible is never taken, one within its
        minimum runtime not yet, and ahead of the window (`by`) only one that can go by then."""
        group = claim.queued.group_id
        by = claim.by

        def eligible(held: _Held) -> PreemptionReason | None:
            s = held.session
            if s.group_id == group or not _lendable(s) or s.id in self._taken:
                return None
            if by is None:
                # The window runs: taken once its minimum runtime has run, and paused once its
                # own notice has passed too (`soonest_pause`).
                return "booking" if self._now - s.started_at >= s.min_runtime else None
            return "booking" if soonest_pause(s, self._now) <= by else None

        return self._decision(claim.request, self._search(claim.request, _BOOKED, eligible))

    def _decision(
        self, request: PlacementRequest, found: _Candidate | None
    ) -> Preemption | NoPreemption:
        if found is None:
            return NoPreemption("no_eligible_victims")
        victims = tuple(
            Victim(h.session.id, found.card_id, h.session.slot, h.session.group_id, reason)
            for h, reason in sorted(found.victims, key=lambda pair: pair[0].session.slot)
        )
        return Preemption(request.id, found.card_id, victims)

    def _search(
        self, request: PlacementRequest, cap: str, eligible: _Eligible
    ) -> _Candidate | None:
        walks: list[tuple[tuple[str, ...], Callable[[_Entry], _Candidate | None]]]
        if request.kind == "mig":
            name = ("mig", request.model, request.mig_profile or "", cap)
            walks = [(name, lambda e: self._instance(request, e, eligible))]
        elif request.kind == "exclusive":
            walks = [(("clear", request.model, cap), lambda e: self._clear(request, e, eligible))]
        else:
            walks = [
                (
                    ("tier", request.model, request.tier, cap),
                    lambda e: self._same_tier(request, e, eligible),
                ),
                (("clear", request.model, cap), lambda e: self._clear(request, e, eligible)),
            ]
        lists = [self._lists.get(name, []) for name, _ in walks]
        positions = [self._head(name) for name, _ in walks]
        best: _Candidate | None = None
        while True:
            heads = [(lists[i][at], i) for i, at in enumerate(positions) if at < len(lists[i])]
            if not heads:
                return best
            entry, i = min(heads)
            if best is not None and entry[0] >= best.key:
                return best  # every later bound is no better than the best set found
            positions[i] += 1
            if entry[1] not in self._decided:
                found = walks[i][1](entry)
                if found is not None and (best is None or found.key < best.key):
                    best = found

    def _head(self, name: tuple[str, ...]) -> int:
        """The first entry of a list whose card has no decision yet."""
        entries = self._lists.get(name, [])
        head = self._heads.get(name, 0)
        while head < len(entries) and entries[head][1] in self._decided:
            head += 1
        self._heads[name] = head
        return head

    def _reachable(self, card_id: uuid.UUID, request: PlacementRequest) -> CardSnapshot | None:
        card = self._cards[card_id]
        if self._placement.held_for_other(card_id, request):
            return None  # held for another request, or a booking the request is not within
        return card if within_reach(card, request) else None

    def _clear(
        self, request: PlacementRequest, entry: _Entry, eligible: _Eligible
    ) -> _Candidate | None:
        card = self._reachable(entry[1], request)
        if card is None or slot_limit(card, request) < 1:
            return None
        if request.kind == "fraction" and card.carved_tier == request.tier:
            return None  # freeing one slot there is the tier list's candidate, and better
        if self._placement.allocations(card.id) != len(card.allocated_slots):
            return None  # a slot `take` counted there since the snapshot: not to be emptied
        holders = self._holders[card.id]
        victims = []
        for slot in card.allocated_slots:
            reason = eligible(holders[slot])
            if reason is None:
                return None
            victims.append((holders[slot], reason))
        return _Candidate(entry[0], card.id, tuple(victims))

    def _same_tier(
        self, request: PlacementRequest, entry: _Entry, eligible: _Eligible
    ) -> _Candidate | None:
        card = self._reachable(entry[1], request)
        if card is None:
            return None
        limit = slot_limit(card, request)
        # Slots `take` counted since the snapshot are held too, by no session.
        needed = self._placement.allocations(card.id) - limit + 1
        if limit < 1 or needed < 1:
            return None
        ranked = sorted(
            (h.key, h, reason)
            for h in self._holders[card.id].values()
            if h.session.slot in card.allocated_slots and (reason := eligible(h)) is not None
        )
        if len(ranked) < needed:
            return None
        chosen = ranked[:needed]
        key = _worst_first([k for k, _, _ in chosen])
        return _Candidate(key, card.id, tuple((h, reason) for _, h, reason in chosen))

    def _instance(
        self, request: PlacementRequest, entry: _Entry, eligible: _Eligible
    ) -> _Candidate | None:
        card = self._reachable(entry[1], request)
        if card is None:
            return None
        held = self._holders[card.id][entry[2]]
        reason = eligible(held)
        if reason is None:
            return None
        return _Candidate(entry[0], card.id, ((held, reason),))

    def take(self, request: PlacementRequest) -> bool:
        """Count a request on free capacity as the snapshot stands, when it fits there: the
        next claims see its slot taken. False when it does not fit."""
        placed = self._placement.place(request)
        if not isinstance(placed, Placement):
            return False
        self._placement.assume(placed)
        return True

    def assume(self, claim: Claim, preemption: Preemption) -> None:
        """Record a decision as taken: its card is held for the request while its victims are
        paused, and the usage of the victims' groups and of the request's moves."""
        if preemption.request_id != claim.request.id:
            raise ValueError("the decision is another request's")
        if preemption.card_id in self._decided:
            raise ValueError("the card already has a decision")
        if preemption.request_id in self._deciding:
            raise ValueError("the request already has a decision")
        self._decided.add(preemption.card_id)
        self._deciding.add(preemption.request_id)
        self._placement.reserve(preemption.card_id, preemption.request_id)
        holders = self._holders.get(preemption.card_id, {})
        for victim in preemption.victims:
            self._taken.add(victim.session_id)
            self._use(victim.group_id, -holders[victim.slot].session.cards)
        self._use(claim.queued.group_id, claim.queued.cards)


def _lendable(session: RunningSession) -> bool:
    """Whether a booking may ever take the session back: one marked not preemptible, or on
    capacity its own group booked, is not lent."""
    return session.preemptible and not session.within_booking


def soonest_pause(session: RunningSession, now: datetime) -> datetime:
    """The soonest a booking's claim may pause the session: once its own notice, told `now`,
    has passed and its minimum runtime has run."""
    return max(now + session.kept_notice, session.started_at + session.min_runtime)


def _ratio(usage: float, share: float) -> float:
    if share <= 0:
        return float("inf") if usage > _EPSILON else 0.0
    return usage / share


def _worst_first(keys: Sequence[_Key]) -> _SetKey:
    return tuple(sorted(keys, reverse=True))


def select_victims(
    snapshot: PreemptionSnapshot, claim: Claim, now: datetime
) -> Preemption | NoPreemption:
    """One decision on a snapshot; for many, build a `PreemptionIndex` once and `assume`."""
    return PreemptionIndex(snapshot, now).select(claim)
