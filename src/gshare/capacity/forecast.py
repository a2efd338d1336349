"""Start forecasts: when each queued request will likely start, and by when almost surely.
Pure: no I/O.

The queue is simulated forward from the admission snapshot, many times over ("draws"). In each
draw every running session ends after a time drawn from the observed lengths of finished
sessions of its tier (its owner's own, where the owner has enough of them), conditioned on how
long it has already run; a session under a preemption or drain notice ends by its deadline at
the latest. Each time something ends, the queue's turn is played as `queue.dequeue` plays it:
the waiting requests in the queue's order (`queue.priorities`: bookings first, then requests
past the starvation limit, then priority), each placed where placement would put it (the
fullest card carved to its tier, else an empty card, or a free instance of its MIG profile), a
request past the starvation limit that does not fit holding a card for itself, and cards held
for a booking's members or a starving request taking no one else. A request that starts is
given a length drawn the same way. Across the draws each request's start times give the p50
("likely around") and the p90 ("almost surely before").

What the forecast cannot know, and the benchmark measures the cost of: requests that have not
arrived yet (a later request of a group with less recent use goes ahead), bookings whose
window has not started, and the slow change of usage while the forecast runs forward (the order
is the queue's order now; only the starvation limit, which moves requests at known times, is
played out).

Invariants: a request that fits now is forecast to start now; p50 <= p90; every draw places no
more than the cards hold; the same inputs and seed give the same forecast.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from gshare.capacity.placement import HAMI_CORE, CapacitySnapshot, CardSnapshot, slot_limit
from gshare.capacity.queue import FairShareSettings, QueuedRequest, Usage, priorities

# Draws per forecast: the p90 of 24 draws lies between the 21st and the 22nd start time.
DRAWS = 24
# How far forward a draw is played; a request not started by then is "beyond the horizon".
HORIZON = timedelta(days=7)
# Finished sessions per tier the forecast learns lengths from.
RECENT_LENGTHS = 200
# The owner's own lengths are used once they have this many of the tier.
OWN_HISTORY = 5
# With no history of a tier at all, sessions are taken to last this long on average.
DEFAULT_LENGTH = timedelta(hours=1)


@dataclass(frozen=True)
class RunningSession:
    """A session holding a card (or a MIG instance) now."""

    card_id: uuid.UUID
    tier: str  # the placement tier key, as `PlacementRequest.tier`
    user_id: uuid.UUID
    started_at: datetime
    mig_profile: str | None = None
    # Under a preemption or drain notice: paused at this time at the latest.
    ends_by: datetime | None = None


@dataclass(frozen=True)
class History:
    """Lengths, in seconds, of recently finished sessions: per tier, and per (owner, tier)."""

    by_tier: Mapping[str, Sequence[float]] = field(default_factory=dict)
    by_owner: Mapping[tuple[uuid.UUID, str], Sequence[float]] = field(default_factory=dict)

    def lengths(self, user_id: uuid.UUID, tier: str) -> Sequence[float]:
        own = self.by_owner.get((user_id, tier), ())
        return own if len(own) >= OWN_HISTORY else self.by_tier.get(tier, ())


@dataclass(frozen=True)
class Estimate:
    """When a request will likely start (p50) and almost surely have started by (p90); None:
    not within the horizon in that share of the draws."""

    likely: datetime | None
    surely: datetime | None


@dataclass(frozen=True)
class ForecastSettings:
    draws: int = DRAWS
    horizon: timedelta = HORIZON
    # The queue's interval: a freed card is taken at the queue's next turn.
    tick: timedelta = timedelta(seconds=15)
    seed: int = 0


def forecast(
    snapshot: CapacitySnapshot,
    running: Sequence[RunningSession],
    queued: Sequence[QueuedRequest],
    usage: Usage,
    now: datetime,
    history: History,
    fair: FairShareSettings = FairShareSettings(),
    settings: ForecastSettings = ForecastSettings(),
) -> dict[uuid.UUID, Estimate]:
    """Each queued request's `Estimate` (see the module's docstring)."""
    if not queued:
        return {}
    plan = _Plan(snapshot, running, queued, usage, now, history, fair, settings)
    rnd = random.Random(settings.seed)  # noqa: S311 (a simulation, not a secret)
    template = _State(plan)
    starts: list[list[float]] = [[] for _ in plan.waiters]
    for _ in range(settings.draws):
        for n, started in enumerate(_Draw(plan, template, rnd).run()):
            starts[n].append(started)
    out = {}
    for w, times in zip(plan.waiters, starts, strict=True):
        times.sort()
        out[w.request.id] = Estimate(plan.at(_quantile(times, 0.5)), plan.at(_quantile(times, 0.9)))
    return out


@dataclass(frozen=True)
class Outcome:
    """A request that started: the forecast's raw p50 and p90 waits when it was queued, and
    how long it waited; in seconds."""

    likely: float
    surely: float
    waited: float


# Outcomes needed before the forecast corrects itself, and how many recent ones it learns from.
MIN_OUTCOMES = 20
RECENT_OUTCOMES = 200


@dataclass(frozen=True)
class Correction:
    """How far off the raw forecast has been: the median of waited / p50 and the conformal
    0.9-quantile of waited / p90 over recent outcomes (each with one queue interval added on
    both sides, so that "starts now" counts). 1.0: no correction."""

    likely: float = 1.0
    surely: float = 1.0


def correction(outcomes: Sequence[Outcome], tick: timedelta) -> Correction:
    """What the simulation cannot know (requests not arrived yet that go ahead, bookings not
    started, usage moving) shows as a steady bias in its recent outcomes; this learns it. With
    n outcomes, the p90's factor is the ceil(0.9 (n + 1))-th smallest ratio, so that a new
    request is covered with probability at least 0.9 when outcomes are exchangeable."""
    recent = list(outcomes)[-RECENT_OUTCOMES:]
    if len(recent) < MIN_OUTCOMES:
        return Correction()
    pad = max(tick.total_seconds(), 1.0)
    likely = sorted((o.waited + pad) / (o.likely + pad) for o in recent if math.isfinite(o.likely))
    surely = sorted((o.waited + pad) / (o.surely + pad) for o in recent if math.isfinite(o.surely))
    if not likely or not surely:
        return Correction()
    rank = min(math.ceil(0.9 * (len(surely) + 1)), len(surely)) - 1
    return Correction(_quantile(likely, 0.5), surely[rank])


def corrected(
    estimates: Mapping[uuid.UUID, Estimate], fix: Correction, now: datetime, tick: timedelta
) -> dict[uuid.UUID, Estimate]:
    """The estimates with `fix` applied to their waits; a start "now" stays now."""
    pad = max(tick.total_seconds(), 1.0)

    def scaled(at: datetime | None, factor: float) -> datetime | None:
        if at is None:
            return None
        wait = (at - now).total_seconds()
        if wait <= 0:
            return at
        return now + timedelta(seconds=max((wait + pad) * factor - pad, 0.0))

    out = {}
    for request_id, e in estimates.items():
        likely, surely = scaled(e.likely, fix.likely), scaled(e.surely, fix.surely)
        if likely is not None and surely is not None and surely < likely:
            surely = likely
        out[request_id] = Estimate(likely, surely)
    return out


def _quantile(ordered: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, interpolated between the nearest two."""
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    if math.isinf(ordered[high]):
        return ordered[high] if position > low else ordered[low]
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


# ---- the plan: what every draw starts from ----------------------------------------------------

_Key = tuple[bool, bool, int]  # (not booked, not starving, rank by priority): smaller goes first


@dataclass
class _Waiter:
    n: int
    request: QueuedRequest
    booked: bool
    rank: int
    starves_at: float  # seconds from now
    lengths: Sequence[float]


class _Plan:
    """The snapshot turned into times in seconds from now, pools of cards and ordered waiters,
    computed once for all draws."""

    def __init__(
        self,
        snapshot: CapacitySnapshot,
        running: Sequence[RunningSession],
        queued: Sequence[QueuedRequest],
        usage: Usage,
        now: datetime,
        history: History,
        fair: FairShareSettings,
        settings: ForecastSettings,
    ) -> None:
        self.now = now
        self.horizon = settings.horizon.total_seconds()
        self.tick = max(settings.tick.total_seconds(), 1.0)
        self.max_reserved = fair.max_reserved_cards
        self.default = [DEFAULT_LENGTH.total_seconds()]
        # Cards are numbered: the draws index them by number, which hashes far faster.
        self.cards = [c for c in snapshot.cards if c.usable]
        self.numbers = {c.id: n for n, c in enumerate(self.cards)}
        self.reserved = {
            self.numbers[card]: req
            for card, req in snapshot.reserved.items()
            if card in self.numbers
        }
        self.booked = dict(snapshot.booked)
        self.specs = {q.request.tier: q.request for q in queued}
        limit = fair.starvation_limit.total_seconds()
        order = priorities(queued, usage, now, fair)
        by_id = {q.id: q for q in queued}
        self.waiters = []
        for rank, p in enumerate(order):
            q = by_id[p.request_id]
            starves = (q.enqueued_at - now).total_seconds() + limit
            lengths = history.lengths(q.user_id, q.request.tier) or self.default
            self.waiters.append(_Waiter(rank, q, q.booked, rank, starves, sorted(lengths)))
        self.starving_turns = sorted(
            {self.turn(w.starves_at) for w in self.waiters if w.starves_at > 0}
        )
        self.to_starve = sorted((w.starves_at, w.n) for w in self.waiters if w.starves_at > 0)
        # Each running session on a usable card (one on a draining or missing card frees
        # nothing anyone may use): its length table, where the lengths beyond what it has run
        # start in it and how many there are, how long it has run, and its notice's deadline.
        self.running: list[tuple[int, str | None]] = []  # card number, MIG profile
        self.sessions: list[tuple[Sequence[float], int, int, float, float]] = []
        tables: dict[tuple[uuid.UUID, str], list[float]] = {}
        for s in running:
            card = self.numbers.get(s.card_id)
            if card is None:
                continue
            table = tables.get((s.user_id, s.tier))
            if table is None:
                table = tables[(s.user_id, s.tier)] = sorted(
                    history.lengths(s.user_id, s.tier) or self.default
                )
            elapsed = max((now - s.started_at).total_seconds(), 0.0)
            ends_by = math.inf if s.ends_by is None else (s.ends_by - now).total_seconds()
            first = bisect.bisect_right(table, elapsed)
            self.running.append((card, s.mig_profile))
            self.sessions.append((table, first, len(table) - first, elapsed, max(ends_by, 0.0)))

    def at(self, seconds: float) -> datetime | None:
        return None if math.isinf(seconds) else self.now + timedelta(seconds=seconds)

    def turn(self, seconds: float) -> float:
        """The queue's first turn at or after `seconds`."""
        return math.ceil(seconds / self.tick - 1e-9) * self.tick


# ---- one draw ---------------------------------------------------------------------------------

_GENERAL = "general"
_PoolKey = tuple[str, uuid.UUID, str, object]  # model, cluster, pool kind, who may use it


class _Pool:
    """Cards of one model and cluster that the same requests may use: the general ones, or
    those held for one booking or one starving request; and the waiters that may use them."""

    def __init__(self) -> None:
        self.empty: list[int] = []  # a heap of card numbers; stale entries skipped when met
        # tier -> sessions on the card -> cards carved to the tier with room for one more
        self.room: dict[str, dict[int, set[int]]] = {}
        self.by_used: dict[int, set[int]] = {}  # every hami-core card, by its sessions
        self.carved: dict[str, set[int]] = {}  # hami-core cards carved to each tier
        self.instances: dict[str, int] = {}  # free MIG instances per profile
        self.mig_card: int | None = None  # one of its MIG cards: where an instance frees
        self.by_tier: dict[str, list[tuple[_Key, int]]] = {}  # waiters, a heap per tier
        self.any_tier: list[tuple[_Key, int]] = []  # hami-core waiters, for empty cards

    def copy(self) -> _Pool:
        out = _Pool()
        out.empty = list(self.empty)
        out.room = {t: {u: set(c) for u, c in r.items()} for t, r in self.room.items()}
        out.by_used = {u: set(c) for u, c in self.by_used.items()}
        out.carved = {t: set(c) for t, c in self.carved.items()}
        out.instances = dict(self.instances)
        out.mig_card = self.mig_card
        out.by_tier = {t: list(h) for t, h in self.by_tier.items()}
        out.any_tier = list(self.any_tier)
        return out


@dataclass
class _Card:
    n: int
    card: CardSnapshot
    pool: _PoolKey
    tier: str | None
    used: int
    limit: int


class _State:
    """Cards and pools as one draw changes them. A draw starts from a copy of the plan's
    state; a card's own state is copied when the draw first touches it."""

    def __init__(self, plan: _Plan, template: _State | None = None) -> None:
        self.plan = plan
        self.starving = [w.starves_at <= 0 for w in plan.waiters]
        self.started = [math.inf] * len(plan.waiters)
        self.reservations: dict[int, int] = {}  # waiter -> the card held for it
        self._template = template
        if template is None:
            self.pools: dict[_PoolKey, _Pool] = {}
            self.cards: dict[int, _Card] = {}
            self._build()
        else:
            self.pools = {k: p.copy() for k, p in template.pools.items()}
            self.cards = {}
            self.reservations = dict(template.reservations)

    def state(self, card_id: int) -> _Card:
        found = self.cards.get(card_id)
        if found is None:
            assert self._template is not None
            t = self._template.cards[card_id]
            found = self.cards[card_id] = _Card(t.n, t.card, t.pool, t.tier, t.used, t.limit)
        return found

    def pool_key(self, card: CardSnapshot, holder: object = None) -> _PoolKey:
        if holder is None:
            booking = self.plan.booked.get(card.id)
            holder = ("booking", booking) if booking is not None else _GENERAL
        key = (card.model, card.cluster_id, card.pool, holder)
        if key not in self.pools:
            pool = self.pools[key] = _Pool()
            if isinstance(holder, tuple) and holder[0] == "request":
                self.enter(pool, self.plan.waiters[holder[1]])  # for it alone
            else:
                for w in self.plan.waiters:
                    if self.may_use(w, key):
                        self.enter(pool, w)
        return key

    def may_use(self, w: _Waiter, key: _PoolKey) -> bool:
        r = w.request.request
        model, cluster, kind, holder = key
        if r.model != model or (r.cluster_id is not None and r.cluster_id != cluster):
            return False
        if (kind == HAMI_CORE) == (r.kind == "mig"):
            return False
        return holder in (_GENERAL, ("booking", r.booking_id), ("request", w.n))

    def key(self, w: _Waiter) -> _Key:
        return (not w.booked, not self.starving[w.n], w.rank)

    def enter(self, pool: _Pool, w: _Waiter) -> None:
        entry = (self.key(w), w.n)
        heapq.heappush(pool.by_tier.setdefault(w.request.request.tier, []), entry)
        if w.request.request.kind != "mig":
            heapq.heappush(pool.any_tier, entry)

    def _build(self) -> None:
        plan = self.plan
        for n, card in enumerate(plan.cards):
            key = self.pool_key(card)
            if card.pool == HAMI_CORE:
                tier = card.carved_tier if card.allocated_slots else None
                used = len(card.allocated_slots)
                state = _Card(n, card, key, tier, used, self.limit(card, tier))
                self.cards[n] = state
                self.attach(state)
            else:
                pool = self.pools[key]
                pool.mig_card = n if pool.mig_card is None else pool.mig_card
                for i in card.mig_instances:
                    if not i.occupied:
                        pool.instances[i.profile] = pool.instances.get(i.profile, 0) + 1
                self.cards[n] = _Card(n, card, key, None, 0, 0)
        for card_id, request_id in plan.reserved.items():
            holder = next((w for w in plan.waiters if w.request.id == request_id), None)
            if holder is not None and plan.cards[card_id].pool == HAMI_CORE:
                self.hold(card_id, holder)

    def limit(self, card: CardSnapshot, tier: str | None) -> int:
        spec = self.plan.specs.get(tier) if tier is not None else None
        # A tier no one waits for: its free slots serve no one, only its emptying does.
        return 0 if spec is None else slot_limit(card, spec)

    # Every change to a hami-core card is: detach, change, attach.

    def detach(self, state: _Card) -> None:
        pool = self.pools[state.pool]
        card_id = state.n
        pool.by_used.get(state.used, set()).discard(card_id)
        if state.tier is not None:
            pool.carved.get(state.tier, set()).discard(card_id)
            pool.room.get(state.tier, {}).get(state.used, set()).discard(card_id)

    def attach(self, state: _Card) -> None:
        pool = self.pools[state.pool]
        card_id = state.n
        pool.by_used.setdefault(state.used, set()).add(card_id)
        if state.used == 0:
            state.tier, state.limit = None, 0
            heapq.heappush(pool.empty, card_id)
            return
        if state.tier is not None:
            pool.carved.setdefault(state.tier, set()).add(card_id)
            if state.used < state.limit:
                pool.room.setdefault(state.tier, {}).setdefault(state.used, set()).add(card_id)

    def release(self, card_id: int, profile: str | None) -> None:
        state = self.state(card_id)
        if profile is not None:
            pool = self.pools[state.pool]
            pool.instances[profile] = pool.instances.get(profile, 0) + 1
            return
        self.detach(state)
        state.used = max(state.used - 1, 0)
        self.attach(state)

    def hold(self, card_id: int, w: _Waiter) -> None:
        """Hold a card for a starving request: it takes no one else's session from now."""
        state = self.state(card_id)
        self.detach(state)
        state.pool = self.pool_key(state.card, ("request", w.n))
        self.attach(state)
        self.reservations[w.n] = card_id

    def unhold(self, w: _Waiter) -> None:
        card_id = self.reservations.pop(w.n, None)
        if card_id is None:
            return
        state = self.state(card_id)
        self.detach(state)
        del self.pools[state.pool]  # held for this request alone, which no longer waits
        state.pool = self.pool_key(state.card)
        self.attach(state)


class _Draw:
    def __init__(self, plan: _Plan, template: _State, rnd: random.Random) -> None:
        self.plan = plan
        self.rnd = rnd
        self.s = _State(plan, template)
        self.waiting = len(plan.waiters)
        # Waiters by when they start to starve, and the starving ones by rank (started ones are
        # dropped from its front when met).
        self._next_to_starve = 0
        self._starving_ranks = [w.n for w in plan.waiters if w.starves_at <= 0]
        # (when, which): `which` below the running sessions' count is one of them; above, a
        # session the draw started (`_extra`).
        self._extra: list[tuple[int, str | None]] = []
        self.ends = self._draw_ends()

    def _draw_ends(self) -> list[tuple[float, int]]:
        plan, rnd = self.plan, self.rnd.random
        ends = [
            (min(table[first + int(rnd() * span)] - elapsed, ends_by), n)
            for n, (table, first, span, elapsed, ends_by) in enumerate(plan.sessions)
            if span
        ]
        for n, (table, _, span, elapsed, ends_by) in enumerate(plan.sessions):
            if not span:  # longer than any seen: as long again, on average
                left = max(elapsed, table[-1]) * self.rnd.expovariate(1.0)
                ends.append((min(left, ends_by), n))
        heapq.heapify(ends)
        return ends

    def _push_end(self, at: float, card_id: int, profile: str | None) -> None:
        self._extra.append((card_id, profile))
        heapq.heappush(self.ends, (at, len(self.plan.sessions) + len(self._extra) - 1))

    def _end(self, which: int) -> None:
        sessions = self.plan.running
        if which < len(sessions):
            self.s.release(*sessions[which])
        else:
            self.s.release(*self._extra[which - len(sessions)])

    # -- the queue's turn --

    def _head(self, heap: list[tuple[_Key, int]]) -> tuple[_Key, int] | None:
        started, waiters, key = self.s.started, self.plan.waiters, self.s.key
        while heap:
            k, n = heap[0]
            if started[n] != math.inf or k != key(waiters[n]):
                heapq.heappop(heap)
                continue
            return heap[0]
        return None

    def _empty_card(self, pool: _Pool, key: _PoolKey, w: _Waiter) -> int | None:
        while pool.empty:
            card_id = pool.empty[0]
            state = self.s.state(card_id)
            if state.used or state.pool != key:
                heapq.heappop(pool.empty)
                continue
            return card_id if slot_limit(state.card, w.request.request) > 0 else None
        return None

    def _best(self) -> tuple[_Key, int, _PoolKey] | None:
        """The first waiter, in the queue's order, that something free now fits; and where."""
        best: tuple[_Key, int, _PoolKey] | None = None
        waiters = self.plan.waiters
        for key, pool in self.s.pools.items():
            for tier, room in pool.room.items():
                head = self._head(pool.by_tier.get(tier, [])) if any(room.values()) else None
                if head is not None and (best is None or head[0] < best[0]):
                    best = (head[0], head[1], key)
            for profile, free in pool.instances.items():
                if free <= 0:
                    continue
                for heap in pool.by_tier.values():
                    head = self._head(heap)
                    if head is None or waiters[head[1]].request.request.mig_profile != profile:
                        continue
                    if best is None or head[0] < best[0]:
                        best = (head[0], head[1], key)
            if pool.empty and (head := self._head(pool.any_tier)):
                w = waiters[head[1]]
                if (best is None or head[0] < best[0]) and self._empty_card(
                    pool, key, w
                ) is not None:
                    best = (head[0], head[1], key)
        return best

    def _place(self, w: _Waiter, key: _PoolKey, at: float) -> None:
        r = w.request.request
        pool = self.s.pools[key]
        if r.kind == "mig":
            pool.instances[r.mig_profile or ""] -= 1
            assert pool.mig_card is not None
            card_id, profile = pool.mig_card, r.mig_profile
        else:
            profile = None
            room = pool.room.get(r.tier, {})
            fullest = max((used for used, cards in room.items() if cards), default=None)
            if fullest is not None:
                card_id = next(iter(room[fullest]))
                state = self.s.state(card_id)
                self.s.detach(state)
            else:
                found = self._empty_card(pool, key, w)
                assert found is not None
                card_id = found
                heapq.heappop(pool.empty)
                state = self.s.state(card_id)
                self.s.detach(state)
                state.tier, state.limit = r.tier, slot_limit(state.card, r)
            state.used += 1
            self.s.attach(state)
        self.s.started[w.n] = at
        self.waiting -= 1
        self.s.unhold(w)
        lengths = w.lengths
        self._push_end(at + lengths[int(self.rnd.random() * len(lengths))], card_id, profile)

    def _first_starving(self) -> _Waiter | None:
        """The first starving request in the queue's order that holds no card yet."""
        started = self.s.started
        ranks = self._starving_ranks
        while ranks and started[ranks[0]] != math.inf:
            ranks.pop(0)
        for n in ranks:
            if started[n] == math.inf and n not in self.s.reservations:
                return self.plan.waiters[n]
        return None

    def _card_to_hold(self, w: _Waiter) -> int | None:
        """As `queue._card_to_reserve`: the fullest card carved to a fraction's tier, else the
        emptiest card."""
        r = w.request.request
        if r.kind == "mig":
            return None  # an instance frees as its session ends; nothing to hold
        pools = [
            pool
            for key, pool in self.s.pools.items()
            if key[3] == _GENERAL and self.s.may_use(w, key)
        ]
        if r.kind == "fraction":
            for pool in pools:
                carved = pool.carved.get(r.tier)
                if carved:  # all full, or the request would have fitted
                    return next(iter(carved))
        for used in range(0, 1 + max((max(p.by_used, default=0) for p in pools), default=0)):
            for pool in pools:
                cards = pool.by_used.get(used)
                if cards:
                    return next(iter(cards))
        return None

    def _turn(self, at: float) -> None:
        plan, s = self.plan, self.s
        to_starve = plan.to_starve
        while self._next_to_starve < len(to_starve) and to_starve[self._next_to_starve][0] <= at:
            w = plan.waiters[to_starve[self._next_to_starve][1]]
            self._next_to_starve += 1
            if s.started[w.n] != math.inf:
                continue
            s.starving[w.n] = True
            bisect.insort(self._starving_ranks, w.n)
            for key, pool in s.pools.items():
                if s.may_use(w, key):
                    s.enter(pool, w)
        # As `dequeue` walks: in the queue's order, each request placed where it fits; the
        # first starving one that nothing fits holds a card before anyone after it is placed.
        while True:
            best = self._best()
            if len(s.reservations) < plan.max_reserved:
                starving = self._first_starving()
                if starving is not None and (best is None or s.key(starving) < best[0]):
                    card_id = self._card_to_hold(starving)
                    if card_id is not None:
                        s.hold(card_id, starving)
                        continue
            if best is None:
                break
            _, n, key = best
            self._place(plan.waiters[n], key, at)

    def run(self) -> list[float]:
        plan = self.plan
        starving_turns = plan.starving_turns
        next_starving = 0
        at = 0.0
        while at <= plan.horizon:
            self._turn(at)
            if not self.waiting:
                break
            # The next turn: when something ends, or when a request starts to starve.
            upcoming = math.inf
            if self.ends:
                upcoming = plan.turn(self.ends[0][0])
            while next_starving < len(starving_turns) and starving_turns[next_starving] <= at:
                next_starving += 1
            if next_starving < len(starving_turns):
                upcoming = min(upcoming, starving_turns[next_starving])
            if math.isinf(upcoming):
                break
            at = max(upcoming, at + plan.tick)
            while self.ends and self.ends[0][0] <= at:
                self._end(heapq.heappop(self.ends)[1])
        return self.s.started
