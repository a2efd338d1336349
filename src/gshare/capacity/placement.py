"""Placement: which card, slot or MIG instance a GPU request takes in a snapshot. Pure: no I/O.

Invariants of every placement this module returns (alone or after `assume`s on one index):
- only a healthy, present card of the requested model, in the pool the request needs;
- uniform carving: a hami-core card holding allocations holds allocations of one tier only;
  an empty card (whatever tier it was last carved to) may be carved again;
- a card never holds more allocations than its `split_count`, than the tier's slots per card,
  than its memory allows at the tier's VRAM, nor than 100 % of compute at the tier's share;
- exclusive takes an empty hami-core card, slot 0;
- a MIG tier takes a free instance of exactly its profile on a mig-pool card;
- a card reserved for one request takes no other request;
- a card takes only requests whose isolation its node admits (isolation.py): a dedicated card
  only its tenant's, a user-namespaced or sandboxed request only a node that offers that;
- a fraction prefers the fullest card already carved to its tier, then the empty card with the
  lowest id (bin packing keeps whole cards free); ties break by card id, so the same snapshot
  and requests always give the same placements.
"""

from __future__ import annotations

import heapq
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from gshare.capacity.isolation import PLAIN_NODE, SHARED_ISOLATION, Isolation, NodeTraits, admits

Pool = Literal["hami-core", "mig"]
RequestKind = Literal["fraction", "exclusive", "mig"]

HAMI_CORE: Pool = "hami-core"
MIG: Pool = "mig"


@dataclass(frozen=True)
class MigInstance:
    profile: str
    start: int
    occupied: bool = False


@dataclass(frozen=True)
class CardSnapshot:
    id: uuid.UUID
    cluster_id: uuid.UUID
    node: str
    model: str
    memory_mib: int
    split_count: int
    pool: Pool = HAMI_CORE
    healthy: bool = True
    missing: bool = False
    carved_tier: str | None = None
    allocated_slots: frozenset[int] = frozenset()
    mig_instances: tuple[MigInstance, ...] = ()
    traits: NodeTraits = PLAIN_NODE  # what the card's node offers, and whose it is

    @property
    def usable(self) -> bool:
        return self.healthy and not self.missing


@dataclass(frozen=True)
class PlacementRequest:
    """What a session asks for. `slots_per_card` is how many allocations of a fraction tier fit
    on one card (1 for exclusive); `mig_profile` names the MIG tier's profile."""

    id: uuid.UUID
    tier: str
    kind: RequestKind
    model: str
    vram_mib: int
    compute_percent: int
    slots_per_card: int = 1
    mig_profile: str | None = None
    # Only cards of this cluster (the one that holds the session's volumes); None: any.
    cluster_id: uuid.UUID | None = None
    # The running booking the request falls within: it may use the cards held for it.
    booking_id: uuid.UUID | None = None
    # Which nodes the session may run on (its level, and the tenants whose dedicated cards
    # it may use).
    isolation: Isolation = SHARED_ISOLATION


def within_reach(card: CardSnapshot, request: PlacementRequest) -> bool:
    """Whether the request may use the card at all: of its cluster, if it names one, and on a
    node its isolation admits."""
    if request.cluster_id is not None and card.cluster_id != request.cluster_id:
        return False
    return admits(card.traits, request.isolation)


def pool_of(request: PlacementRequest) -> Pool:
    """The pool of cards a request is placed in: MIG for a MIG tier, hami-core otherwise."""
    return MIG if request.kind == "mig" else HAMI_CORE


def kinds_of(cards: Iterable[CardSnapshot]) -> list[CardSnapshot]:
    """One card of each model, pool, cluster and node traits: all that decides which
    requests may be placed on a card at all."""
    found: dict[tuple[str, Pool, uuid.UUID, NodeTraits], CardSnapshot] = {}
    for card in cards:
        found.setdefault((card.model, card.pool, card.cluster_id, card.traits), card)
    return list(found.values())


def may_hold(card: CardSnapshot, request: PlacementRequest) -> bool:
    """Whether the card is one the request may be placed on: of its model and pool, and
    within its reach."""
    return (
        card.model == request.model
        and card.pool == pool_of(request)
        and within_reach(card, request)
    )


def competes(
    waiter: PlacementRequest, request: PlacementRequest, cards: Iterable[CardSnapshot]
) -> bool:
    """Whether a waiting request may take one of the cards that the request may: it then goes
    first, and counts ahead of it. One that may use only other cards (another tenant's
    dedicated ones, another cluster's, the other pool's) neither holds it back nor counts.
    `cards` may be `kinds_of` the cards: whom a card admits depends on nothing else."""
    return any(may_hold(c, request) and may_hold(c, waiter) for c in cards)


@dataclass(frozen=True)
class CapacitySnapshot:
    """Every card the scheduler may use, the cards held for starving requests (card id -> the
    request it is held for), and the cards freed for a booking, held for its members from when
    they free to the end of the booking's notice after its start (card id -> the booking)."""

    cards: tuple[CardSnapshot, ...]
    reserved: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    booked: Mapping[uuid.UUID, uuid.UUID] = field(default_factory=dict)
    # When each of the `booked` cards stops being held (known to the start forecast only).
    booked_until: Mapping[uuid.UUID, datetime] = field(default_factory=dict)


@dataclass(frozen=True)
class Placement:
    request_id: uuid.UUID
    card_id: uuid.UUID
    tier: str
    slot: int | None = None
    mig_profile: str | None = None
    mig_start: int | None = None


@dataclass(frozen=True)
class NoFit:
    reason: Literal["no_card_of_model", "no_capacity", "isolation_unmet"]


def slot_limit(card: CardSnapshot, request: PlacementRequest) -> int:
    """How many allocations of the request's tier a hami-core card may hold."""
    if request.kind == "exclusive":
        return 1 if card.split_count >= 1 and request.vram_mib <= card.memory_mib else 0
    limit = min(card.split_count, request.slots_per_card)
    if request.vram_mib > 0:
        limit = min(limit, card.memory_mib // request.vram_mib)
    if request.compute_percent > 0:
        limit = min(limit, 100 // request.compute_percent)
    return max(limit, 0)


def free_slots(snapshot: CapacitySnapshot, request: PlacementRequest) -> int:
    """How many sessions of the request's tier could start now, each on what is free as it
    stands: slots of cards carved to the tier or empty, or free instances of its MIG profile.
    Cards held for a starving request, or for a booking the request is not within, count for
    none."""
    total = 0
    for card in snapshot.cards:
        if card.model != request.model or not card.usable or card.id in snapshot.reserved:
            continue
        if not admits(card.traits, request.isolation):
            continue
        if snapshot.booked.get(card.id, request.booking_id) != request.booking_id:
            continue
        if request.kind == "mig":
            if card.pool == MIG:
                total += sum(
                    1
                    for i in card.mig_instances
                    if i.profile == request.mig_profile and not i.occupied
                )
        elif card.pool == HAMI_CORE:
            if card.allocated_slots and card.carved_tier != request.tier:
                continue
            total += max(slot_limit(card, request) - len(card.allocated_slots), 0)
    return total


@dataclass
class _CardState:
    card: CardSnapshot
    carved_tier: str | None
    slots: set[int]
    free_instances: set[tuple[str, int]]


class PlacementIndex:
    """A snapshot indexed once for many decisions: `place` answers, `assume` records a decision
    so the next `place` sees it, without rebuilding the index."""

    def __init__(self, snapshot: CapacitySnapshot) -> None:
        self._states: dict[uuid.UUID, _CardState] = {}
        self._reserved: dict[uuid.UUID, uuid.UUID] = dict(snapshot.reserved)
        self._booked: dict[uuid.UUID, uuid.UUID] = dict(snapshot.booked)
        self._reserved_by_request: dict[uuid.UUID, uuid.UUID] = {
            request_id: card_id for card_id, request_id in self._reserved.items()
        }
        self._models: set[tuple[str, Pool]] = set()
        # The distinct node traits of each model's cards and their clusters, to tell a request
        # its level is met nowhere (on its cluster, when it names one) from one that waits for room.
        self._traits: dict[tuple[str, Pool], set[tuple[uuid.UUID, NodeTraits]]] = {}
        # Empty hami-core cards of a model, by id; entries that stopped being empty are dropped
        # when met.
        self._empty: dict[str, list[uuid.UUID]] = {}
        # Carved hami-core cards per (model, tier), fullest first: (-allocations, card id).
        self._carved: dict[tuple[str, str], list[tuple[int, uuid.UUID]]] = {}
        # Free MIG instances per (model, profile): (card id, start).
        self._instances: dict[tuple[str, str], list[tuple[uuid.UUID, int]]] = {}
        for card in snapshot.cards:
            if not card.usable:
                continue
            self._models.add((card.model, card.pool))
            self._traits.setdefault((card.model, card.pool), set()).add(
                (card.cluster_id, card.traits)
            )
            free = {(i.profile, i.start) for i in card.mig_instances if not i.occupied}
            state = _CardState(card, card.carved_tier, set(card.allocated_slots), free)
            self._states[card.id] = state
            if card.pool == MIG:
                for profile, start in free:
                    self._instances.setdefault((card.model, profile), []).append((card.id, start))
            elif not state.slots:
                self._empty.setdefault(card.model, []).append(card.id)
            # Allocations without a recorded tier: placing more could mix tiers, so leave it.
            elif state.carved_tier is not None:
                key = (card.model, state.carved_tier)
                self._carved.setdefault(key, []).append((-len(state.slots), card.id))
        for empty in self._empty.values():
            heapq.heapify(empty)
        for carved in self._carved.values():
            heapq.heapify(carved)
        for instances in self._instances.values():
            heapq.heapify(instances)

    @property
    def reserved(self) -> dict[uuid.UUID, uuid.UUID]:
        return dict(self._reserved)

    @property
    def booked(self) -> dict[uuid.UUID, uuid.UUID]:
        return dict(self._booked)

    def card(self, card_id: uuid.UUID) -> CardSnapshot:
        return self._states[card_id].card

    def allocations(self, card_id: uuid.UUID) -> int:
        return len(self._states[card_id].slots)

    def carved_tier(self, card_id: uuid.UUID) -> str | None:
        state = self._states[card_id]
        return state.carved_tier if state.slots else None

    def reserve(self, card_id: uuid.UUID, request_id: uuid.UUID) -> None:
        self._reserved[card_id] = request_id
        self._reserved_by_request[request_id] = card_id

    def release_reservation(self, request_id: uuid.UUID) -> None:
        card_id = self._reserved_by_request.pop(request_id, None)
        if card_id is not None:
            self._reserved.pop(card_id, None)

    def held_for_other(self, card_id: uuid.UUID, request: PlacementRequest) -> bool:
        """Held for another request, or for a booking the request is not within."""
        holder = self._reserved.get(card_id)
        if holder is not None and holder != request.id:
            return True
        booking = self._booked.get(card_id)
        return booking is not None and booking != request.booking_id

    def _out_of_reach(self, card_id: uuid.UUID, request: PlacementRequest) -> bool:
        """Held for another request, or on a cluster or node the request cannot use: the card
        stays in the index for other requests."""
        card = self._states[card_id].card
        return not within_reach(card, request) or self.held_for_other(card_id, request)

    def fit_on(self, card_id: uuid.UUID, request: PlacementRequest) -> Placement | None:
        """The placement on this one card, if the request fits there now."""
        state = self._states.get(card_id)
        if state is None or state.card.model != request.model:
            return None
        if not within_reach(state.card, request):
            return None
        if request.kind == "mig":
            if state.card.pool != MIG:
                return None
            starts = sorted(s for p, s in state.free_instances if p == request.mig_profile)
            if not starts:
                return None
            return Placement(
                request.id, card_id, request.tier, None, request.mig_profile, starts[0]
            )
        if state.card.pool != HAMI_CORE:
            return None
        if state.slots and state.carved_tier != request.tier:
            return None
        limit = slot_limit(state.card, request)
        if len(state.slots) >= limit:
            return None
        slot = next(s for s in range(limit + len(state.slots)) if s not in state.slots)
        return Placement(request.id, card_id, request.tier, slot)

    def place(self, request: PlacementRequest) -> Placement | NoFit:
        own = self._reserved_by_request.get(request.id)
        if own is not None:
            placement = self.fit_on(own, request)
            if placement is not None:
                return placement
        if request.kind == "mig":
            found = self._first_instance(request)
        else:
            found = None
            if request.kind == "fraction":
                found = self._fullest_carved(request)
            if found is None:
                found = self._first_empty(request)
        if found is not None:
            return found
        pool = pool_of(request)
        if (request.model, pool) not in self._models:
            return NoFit("no_card_of_model")
        traits = [
            t
            for cluster, t in self._traits[(request.model, pool)]
            if request.cluster_id in (None, cluster)
        ]
        if traits and not any(admits(t, request.isolation) for t in traits):
            return NoFit("isolation_unmet")
        return NoFit("no_capacity")

    def _fullest_carved(self, request: PlacementRequest) -> Placement | None:
        heap = self._carved.get((request.model, request.tier))
        if not heap:
            return None
        skipped: list[tuple[int, uuid.UUID]] = []
        found = None
        while heap:
            negative_count, card_id = heap[0]
            state = self._states[card_id]
            if -negative_count != len(state.slots) or state.carved_tier != request.tier:
                heapq.heappop(heap)  # stale: a newer entry, or none, stands for this card
                continue
            if self._out_of_reach(card_id, request):
                skipped.append(heapq.heappop(heap))
                continue
            found = self.fit_on(card_id, request)
            if found is not None:
                break
            heapq.heappop(heap)  # full for this tier; only a release frees it, in a new snapshot
        for entry in skipped:
            heapq.heappush(heap, entry)
        return found

    def _first_empty(self, request: PlacementRequest) -> Placement | None:
        heap = self._empty.get(request.model)
        if not heap:
            return None
        skipped: list[uuid.UUID] = []
        found = None
        while heap:
            card_id = heap[0]
            if self._states[card_id].slots:
                heapq.heappop(heap)
                continue
            found = None if self._out_of_reach(card_id, request) else self.fit_on(card_id, request)
            if found is not None:
                break
            # Held for another request, or too small for this tier: keep it for other requests.
            skipped.append(heapq.heappop(heap))
        for card_id in skipped:
            heapq.heappush(heap, card_id)
        return found

    def _first_instance(self, request: PlacementRequest) -> Placement | None:
        heap = self._instances.get((request.model, request.mig_profile or ""))
        if not heap:
            return None
        skipped: list[tuple[uuid.UUID, int]] = []
        found = None
        while heap:
            card_id, start = heap[0]
            state = self._states[card_id]
            if (request.mig_profile, start) not in state.free_instances:
                heapq.heappop(heap)
                continue
            if self._out_of_reach(card_id, request):
                skipped.append(heapq.heappop(heap))
                continue
            found = Placement(request.id, card_id, request.tier, None, request.mig_profile, start)
            break
        for entry in skipped:
            heapq.heappush(heap, entry)
        return found

    def assume(self, placement: Placement) -> None:
        """Record a placement as taken, as admission will commit it."""
        state = self._states[placement.card_id]
        self.release_reservation(placement.request_id)
        if placement.mig_profile is not None and placement.mig_start is not None:
            instance = (placement.mig_profile, placement.mig_start)
            if instance not in state.free_instances:
                raise ValueError("the MIG instance is not free")
            state.free_instances.discard(instance)
            return
        if placement.slot is None or placement.slot in state.slots:
            raise ValueError("the slot is not free")
        if state.slots and state.carved_tier != placement.tier:
            raise ValueError("the card is carved to another tier")
        state.slots.add(placement.slot)
        state.carved_tier = placement.tier
        key = (state.card.model, placement.tier)
        heapq.heappush(self._carved.setdefault(key, []), (-len(state.slots), placement.card_id))

    def cards_of(self, model: str, pool: Pool) -> Iterable[CardSnapshot]:
        return (
            s.card for s in self._states.values() if s.card.model == model and s.card.pool == pool
        )


def place_request(snapshot: CapacitySnapshot, request: PlacementRequest) -> Placement | NoFit:
    """One decision on a snapshot; for many, build a `PlacementIndex` once and `assume`."""
    return PlacementIndex(snapshot).place(request)
